"""torch_dllm_serve.py: dLLM-Serve's PyTorch runtime, as the harness times it (torch_profile.py
--runtime dllm-serve). What chosen-ox/dLLM-Serve runs in a step of LLaDA-8B, rebuilt over random
bf16 weights:

- the layer (dllmserve/models/llada.py over nano-vLLM's layers, dllmserve/layers): separate Q, K and
  V projections and separate gate and up projections (five GEMMs where the anchor's layer has two),
  RMSNorm and RoPE each one torch.compile'd function (RoPE reading a cos/sin table by position),
  SiLU and the gate-up product eager, the residual adds eager; no CUDA graphs (every example and the
  server pass enforce_eager=True);
- the attention of a diffusion batch (dllmserve/layers/attention.py, _mixed_sparse_dense_attention):
  a Python loop over the sequences in every layer gathers each one's queries, keys and values by
  index (a Reuse step first loads its cached K/V into freshly zeroed tensors and appends the block's),
  the lists are concatenated, their lengths copied to the GPU, one varlen attention runs (flash-attn's
  where it is installed, SDPA over the equal-length batch otherwise), and the output is scattered back
  a sequence at a time; a Refresh that caches (cache state 1) also selects the K/V to keep
  (select_seq);
- the step's inputs (dllmserve/engine/model_runner.py, _run_diffusion): each sequence's tokens and
  slot mapping copied to the GPU, and Python's max over the GPU's cumulative lengths (one read-back
  an element);
- the logits (_reconstruct_and_sample_optimized_v2, the default log_optimize_level 2): a float32
  buffer of max_logprobs rows zeroed and replaced, the block rows' logits in chunks, a bf16 softmax and
  its max; then a loop over the sequences that copies each one's tokens to the GPU, masks, reads the
  masked count back (.item()), takes the top-k and reads the tokens back (.tolist()). Temperature 0,
  as the repository's examples and server run it (no Gumbel noise).
"""
import time

import torch
import torch.nn.functional as F
from torch_model import DT, w

DEV = "cuda"
MASK_ID = 126336  # LLaDA's mask token
MAX_LOGPROBS = 1024  # dLLM-Serve's Config.max_logprobs: the float32 buffer it zeroes every step
SEL_RATIO, SEL_POOL = 0.5, 3  # its retention ratio and max-pool kernel (dLLM-Serve's Table 3)


def _rms(x, weight):
    y = x.float()
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-5)
    return y.to(x.dtype) * weight


def _rotate(x, cos, sin):
    x1, x2 = torch.chunk(x.float(), 2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)


def select_seq(q, k, v, score_rows, per_head, ck, cv, slot0, capturing, wait=None):
    """dLLM-Serve's selection in one sequence (dllmserve/layers/attention.py: _select_important_kv,
    one kept set for all heads, or _select_important_head_kv, one a K/V head): the block's mean query
    (its last score_rows rows) scores the other rows' keys, the scores max-pooled, the top SEL_RATIO
    kept, their K/V written to the cache (ck, cv) from slot slot0. q, k, v: [T, heads, head dim].
    The other rows come from a mask over the positions, whose nonzero waits for the GPU (wait, where
    given, is called first); capturing (a CUDA graph) takes the same rows without it. Returns how many
    rows it kept."""
    T, H, HD = q.shape
    KVH = k.shape[1]
    G = H // KVH
    block = torch.arange(T - score_rows, T, device=DEV)
    if capturing:
        others = torch.arange(0, T - score_rows, device=DEV)
    else:
        every = torch.arange(0, T, device=DEV)
        mask = ~torch.isin(every, block)
        if wait:
            wait()
        others = every[mask]
    q_block, k_c, v_c = q[block], k[others], v[others]
    n = k_c.shape[0]
    keep = min(max(1, int(n * SEL_RATIO)), n)
    if per_head:
        q_avg = q_block.mean(dim=0)
        k_perm, v_perm = k_c.permute(1, 0, 2), v_c.permute(1, 0, 2)
        if G == 1:
            scores = torch.einsum("hd,hkd->hk", q_avg, k_perm) / HD ** 0.5
        else:
            scores = torch.einsum("hgd,hkd->hgk", q_avg.view(KVH, G, HD), k_perm).max(dim=1).values / HD ** 0.5
        scores = F.max_pool1d(scores.unsqueeze(1), SEL_POOL, 1, SEL_POOL // 2).squeeze(1)[..., :n]
        idx = torch.topk(scores, keep, dim=1).indices.unsqueeze(-1).expand(-1, -1, HD)
        k_s = torch.gather(k_perm, 1, idx).transpose(0, 1).contiguous()
        v_s = torch.gather(v_perm, 1, idx).transpose(0, 1).contiguous()
    else:
        q_avg = q_block.mean(dim=0, keepdim=True)
        k_e = k_c.repeat_interleave(G, dim=1) if G > 1 else k_c
        scores = torch.einsum("qhd,khd->qk", q_avg, k_e).squeeze(0) / HD ** 0.5
        scores = F.max_pool1d(scores[None, None], SEL_POOL, 1, SEL_POOL // 2)[0, 0, :n]
        idx = torch.topk(scores, keep, dim=0).indices
        k_s, v_s = k_c[idx], v_c[idx]
    slots = torch.arange(slot0, slot0 + keep, device=DEV)
    ck.index_copy_(0, slots, k_s)
    cv.index_copy_(0, slots, v_s)
    return keep


class Runtime:
    """dLLM-Serve's layer, attention, inputs and logits over one shape (torch_model.Shape) and
    vocabulary, its steps of `segs` sequences of `q` rows over `kv` cached tokens each."""

    def __init__(self, shape, vocab, max_pos=32768):
        if shape.qk_norm:
            raise SystemExit("torch_dllm_serve: dLLM-Serve runs LLaDA and Dream, neither with a per-head Q/K norm")
        self.s, self.V = shape, vocab
        HD = shape.HD
        freqs = torch.outer(torch.arange(max_pos, dtype=torch.float32, device=DEV), shape.inv)  # the anchor's RoPE
        self.cos_sin = torch.cat((freqs.cos(), freqs.sin()), -1)

        def rope(positions, q, k):
            cos, sin = self.cos_sin[positions].chunk(2, dim=-1)
            cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
            n = positions.size(0)
            qr = _rotate(q.view(n, -1, HD), cos, sin).view(q.shape)
            kr = _rotate(k.view(n, -1, HD), cos, sin).view(k.shape)
            return qr, kr

        self.rms = torch.compile(_rms)
        self.rope = torch.compile(rope)
        try:
            from flash_attn import flash_attn_varlen_func
            self.varlen = flash_attn_varlen_func
        except ImportError:
            self.varlen = None
        self.attention_kernel = "flash-attn varlen" if self.varlen else "SDPA (flash-attn not installed)"
        self.tokens = [MASK_ID] * max_pos
        self.capturing = False
        self.meta = None
        self.blocked = 0.0  # seconds the host waited for the GPU at read-backs (wait)

    def wait(self):
        """A read-back or a pageable copy: the host waits here for the GPU's queue to drain. That
        wait is summed apart, so the step's wall time less it is the host's own work (torch_profile's
        host_ms)."""
        t = time.perf_counter()
        torch.cuda.synchronize()
        self.blocked += time.perf_counter() - t

    def h2d(self, values, dtype):
        """A Python list on the GPU as torch.tensor(values, device="cuda") puts it there: a copy from
        pageable memory, which PyTorch follows with a stream synchronisation (wait)."""
        self.wait()
        return torch.tensor(values, dtype=dtype, device=DEV)

    def new_layer(self):
        s = self.s
        l = dict(q=w(s.H * s.HD, s.D), k=w(s.KVH * s.HD, s.D), v=w(s.KVH * s.HD, s.D), o=w(s.D, s.H * s.HD),
                 gate=w(s.FF, s.D), up=w(s.FF, s.D), down=w(s.D, s.FF),
                 n1=torch.ones(s.D, device=DEV, dtype=DT), n2=torch.ones(s.D, device=DEV, dtype=DT))
        if s.qkv_bias:
            l["qb"], l["kb"], l["vb"] = w(s.H * s.HD), w(s.KVH * s.HD), w(s.KVH * s.HD)
        return l

    def setup(self, segs, q, kv, score_rows=0):
        """A step's shape; its device-side inputs built once (the profile's op timings and CUDA
        graphs use these; step() builds them again on the host as dLLM-Serve does)."""
        self.meta = (segs, q, kv, score_rows)
        self.slots = [torch.arange(b * kv, (b + 1) * kv, device=DEV) for b in range(segs)] if kv else []
        self.cu_q = torch.arange(0, (segs + 1) * q, q, device=DEV, dtype=torch.int32)
        self.cu_k = torch.arange(0, (segs + 1) * (kv + q), kv + q, device=DEV, dtype=torch.int32)
        self.tok = torch.full((kv + q,), MASK_ID, device=DEV, dtype=torch.int64)

    def inputs(self, emb):
        """The step's inputs as _run_diffusion builds them, a sequence at a time, and the embedding."""
        segs, q, kv, _ = self.meta
        n = kv + q
        k_cu = torch.zeros(segs + 1, dtype=torch.int32, device=DEV)
        k_len = torch.zeros(segs, dtype=torch.int32, device=DEV)
        ids, pos, slots = [], [], []
        for i in range(segs):
            t = self.h2d(self.tokens[:n], torch.int64)
            if kv:  # Reuse: the block's tokens alone, and where the cached K/V sit
                blk = torch.arange(kv, n, dtype=torch.int64, device=DEV)
                k_len[i] = q
                ids.append(t[blk])
                pos.append(blk)
                slots.append(self.h2d(list(range(i * kv, (i + 1) * kv)), torch.int64))
            else:
                k_len[i] = n
                ids.append(t)
                pos.append(torch.arange(0, n, dtype=torch.int64, device=DEV))
        k_cu[1:] = torch.cumsum(k_len, dim=0)
        ids, pos = torch.cat(ids), torch.cat(pos)
        tables = torch.tensor([[i] for i in range(segs)], dtype=torch.int32).pin_memory().to(DEV, non_blocking=True)
        self.wait()
        max(k_cu)  # Python's max over a GPU tensor: each element read back
        del tables
        if kv:
            self.slots = slots
        return emb[ids], pos

    def layer_ops(self, l, x, pos, cache, select=None):
        """Layer l over x ([tokens, D]) as (name, thunk) pairs; cache: the pool's (K, V) [slots,
        K/V heads, head dim] or None; select: (per_head, K, V) where this Refresh caches."""
        st = {"x": x}

        def norm1(): st["h"] = self.rms(st["x"], l["n1"])
        def qkv():
            h = st["h"]
            st["q"], st["k"], st["v"] = (F.linear(h, l[n], l.get(n + "b")) for n in ("q", "k", "v"))
        def rope_(): st["q"], st["k"] = self.rope(pos, st["q"], st["k"])
        def attn(): st["o"] = self.attention(st, cache)
        def kv_select(): self.select_all(st, select)
        def oproj(): st["x"] = st["x"] + F.linear(st["o"], l["o"])
        def norm2(): st["h"] = self.rms(st["x"], l["n2"])
        def gate_up(): st["g"], st["u"] = F.linear(st["h"], l["gate"]), F.linear(st["h"], l["up"])
        def act(): st["a"] = F.silu(st["g"]) * st["u"]
        def down(): st["x"] = st["x"] + F.linear(st["a"], l["down"])

        ops = [("norm", norm1), ("qkv", qkv), ("rope", rope_), ("attention", attn), ("o_proj", oproj),
               ("norm", norm2), ("gate_up", gate_up), ("act", act), ("down", down)]
        if select is not None:  # its code selects inside the attention's loop; timed as an op of its own
            ops.insert(4, ("kv_select", kv_select))
        return st, ops

    def heads(self, st):
        """The layer's Q, K and V as [tokens, heads, head dim]."""
        s = self.s
        return st["q"].view(-1, s.H, s.HD), st["k"].view(-1, s.KVH, s.HD), st["v"].view(-1, s.KVH, s.HD)

    def select_all(self, st, select):
        """A caching Refresh's selection in every sequence (select_seq)."""
        segs, T, _, score_rows = self.meta
        per_head, sk, sv = select
        q, k, v = self.heads(st)
        for b in range(segs):
            r = slice(b * T, (b + 1) * T)
            select_seq(q[r], k[r], v[r], score_rows, per_head, sk, sv, b * T, self.capturing, self.wait)

    def attention(self, st, cache):
        segs, T, kv, _ = self.meta
        H, KVH, HD = self.s.H, self.s.KVH, self.s.HD
        q, k, v = self.heads(st)
        Qs, Ks, Vs, where = [], [], [], []
        for b in range(segs):
            rows = torch.arange(b * T, (b + 1) * T, dtype=torch.int64, device=DEV)
            if kv:  # the cached K/V loaded into fresh tensors, the block's appended
                ck = torch.zeros(kv, KVH, HD, device=DEV, dtype=DT)
                cv = torch.zeros(kv, KVH, HD, device=DEV, dtype=DT)
                torch.index_select(cache[0], 0, self.slots[b], out=ck)
                torch.index_select(cache[1], 0, self.slots[b], out=cv)
                Ks.append(torch.cat([ck, k[rows]], dim=0))
                Vs.append(torch.cat([cv, v[rows]], dim=0))
            else:
                Ks.append(k[rows])
                Vs.append(v[rows])
            Qs.append(q[rows])
            where.append(rows)
        Q, K, V = (torch.cat(t, dim=0).contiguous() for t in (Qs, Ks, Vs))
        lq, lk = [t.size(0) for t in Qs], [t.size(0) for t in Ks]
        if self.capturing:  # a pageable copy cannot be captured: the same lengths, built before
            cu_q, cu_k = self.cu_q, self.cu_k
        else:
            cu_q = torch.zeros(segs + 1, dtype=torch.int32, device=DEV)
            cu_k = torch.zeros(segs + 1, dtype=torch.int32, device=DEV)
            cu_q[1:] = torch.cumsum(self.h2d(lq, torch.int32), dim=0)
            cu_k[1:] = torch.cumsum(self.h2d(lk, torch.int32), dim=0)
        out = torch.zeros_like(q)
        if self.varlen:
            a = self.varlen(Q, K, V, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k, max_seqlen_q=max(lq),
                            max_seqlen_k=max(lk), softmax_scale=HD ** -0.5, causal=False)
        else:  # every sequence of the step has the same lengths: one batched SDPA
            a = F.scaled_dot_product_attention(Q.view(segs, lq[0], H, HD).transpose(1, 2),
                                               K.view(segs, lk[0], KVH, HD).transpose(1, 2),
                                               V.view(segs, lk[0], KVH, HD).transpose(1, 2),
                                               enable_gqa=H != KVH).transpose(1, 2).reshape(-1, H, HD)
        off = 0
        for rows, n in zip(where, lq):
            out[rows] = a[off : off + n]
            off += n
        return out.view(-1, H * HD)

    def head_ops(self, h, lm, R, chunk):
        """The logits of each sequence's last R rows and the unmasking, as (name, thunk) pairs: the
        LM head over chunks of at most `chunk` rows, each chunk's softmax and max, then the loop over
        the sequences."""
        segs, T, kv, _ = self.meta
        st = {"x0": [], "p": []}
        per = max(1, chunk // R)  # sequences a chunk holds

        def prep():
            st["buf"] = torch.zeros((MAX_LOGPROBS, self.V), device=DEV)  # zeroed, then replaced
            st["lens"] = torch.zeros(segs, dtype=torch.int32, device=DEV)
            st["cu"] = torch.zeros(segs + 1, dtype=torch.int32, device=DEV)
            st["idx"] = []
            for b in range(segs):
                idx = torch.arange(kv + T - R, kv + T, dtype=torch.int64, device=DEV)
                if not kv and not self.capturing:  # a Refresh reads its block's bounds back
                    self.wait()
                    idx[0].item(), idx[-1].item()
                st["lens"][b].fill_(R)  # a fill kernel, as its setitem of a Python int
                st["idx"].append(idx)

        def lm_chunk(b0):
            def f():
                if b0 == 0:
                    prep()
                rows = [h[b * T + T - R : (b + 1) * T] for b in range(b0, min(segs, b0 + per))]
                st["lg"] = torch.cat(rows, dim=0) @ lm.T
                st["cu"][1:] = torch.cumsum(st["lens"], dim=0)
            return f

        def sample_chunk():
            p, x0 = torch.max(F.softmax(st.pop("lg"), dim=-1), dim=-1)
            st["p"].append(p)
            st["x0"].append(x0)

        def unmask():
            st["cu"][1:] = torch.cumsum(st["lens"], dim=0)
            x0, p = torch.cat(st["x0"]), torch.cat(st["p"])
            for b in range(segs):
                idx = st["idx"][b]
                if self.capturing:
                    tok = self.tok.clone()
                else:
                    tok = self.h2d(self.tokens[: kv + T], torch.int64)
                masked = tok[idx] == MASK_ID
                conf = torch.where(masked, p[b * R : (b + 1) * R], -float("inf"))
                if not self.capturing:  # the masked count read back; one token a step unmasked
                    self.wait()
                    masked.sum().item()
                top = torch.topk(conf, k=1).indices
                tok[idx[top]] = x0[b * R : (b + 1) * R][top]
                if not self.capturing:
                    self.wait()
                    tok.tolist()

        ops = []
        for b0 in range(0, segs, per):
            ops += [("lm_head", lm_chunk(b0)), ("sample", sample_chunk)]
        ops.append(("sample", unmask))
        return ops
