"""torch_model.py: the dLLM layer the PyTorch harnesses run (torch_profile.py times it op by op,
torch_lmax.py measures its memory eager and compiled, written whole over these parts): the PyTorch
anchor's layer with random bf16 weights. RMSNorm in fp32, the fused QKV projection (with Qwen2's bias), Qwen3's per-head RMSNorm of
the queries and keys, RoPE, the K/V heads repeated to the query heads before SDPA as the Hugging Face
modules do, SwiGLU.
A mixture of experts (Shape's experts > 0, LLaDA-MoE-7B's form: a softmax router, no shared expert)
runs its FFN as a grouped MoE, as a serving framework does (vLLM's fused MoE, which a port of the
model onto it takes): the router's softmax in fp32 and its top k, renormalised; the copies sorted by
expert and counted (route); then the copies gathered, the experts' gate|up and down as two grouped
GEMMs (torch._grouped_mm), SwiGLU, the copies weighted and added back per token (experts).
"""
import torch
import torch.nn.functional as F

DT = torch.bfloat16


def w(*s):
    """Random bf16 weights of shape s on the GPU."""
    return torch.randn(*s, device="cuda", dtype=DT) * 0.02


class Shape:
    """A model's layer dimensions, and the RoPE frequencies they give."""

    def __init__(self, hidden, heads, kv_heads, head_dim, ffn, qkv_bias=False, qk_norm=False, experts=0, top_k=0,
                 expert_ffn=0):
        self.D, self.H, self.KVH, self.HD, self.FF = hidden, heads, kv_heads, head_dim, ffn
        self.qkv_bias, self.qk_norm = qkv_bias, qk_norm
        self.E, self.K, self.FE = experts, top_k, expert_ffn  # experts, experts a token, an expert's width
        self.inv = 1.0 / (500000 ** (torch.arange(0, head_dim // 2, device="cuda", dtype=torch.float32) / (head_dim // 2)))


def rms(x, weight=None):
    y = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)).to(DT)
    return y if weight is None else y * weight


def rope(x, pos, inv):
    half = x.shape[-1] // 2
    ang = pos[:, None].float() * inv[None, :]
    c, s = ang.cos().to(DT)[:, None, :], ang.sin().to(DT)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x1 * s + x2 * c], -1)


def new_layer(s):
    """One layer's weights (a mixture's experts as the Linear layers hold them, [E, out, in])."""
    l = dict(qkv=w((s.H + 2 * s.KVH) * s.HD, s.D), o=w(s.D, s.H * s.HD))
    if s.E:
        l.update(router=w(s.E, s.D), egu=w(s.E, 2 * s.FE, s.D), edown=w(s.E, s.D, s.FE))
    else:
        l.update(gu=w(2 * s.FF, s.D), down=w(s.D, s.FF))
    if s.qkv_bias:
        l["qkv_b"] = w((s.H + 2 * s.KVH) * s.HD)
    if s.qk_norm:
        l["qn"], l["kn"] = 1 + w(s.HD), 1 + w(s.HD)
    return l


def route(s, l, h):
    """The router over h [N, D]: the fp32 softmax's top k, renormalised; the copies in expert order
    (order), their tokens (tok), their weights (wts, in copy order) and the experts' ends (offs)."""
    p = torch.softmax(h @ l["router"].T, -1, dtype=torch.float32)
    wts, sel = p.topk(s.K, -1)
    wts = wts / wts.sum(-1, keepdim=True)
    flat = sel.reshape(-1)
    order = flat.argsort(stable=True)
    counts = torch.zeros(s.E, dtype=torch.int32, device=h.device).index_add_(
        0, flat, torch.ones_like(flat, dtype=torch.int32))
    return dict(order=order, tok=order // s.K, wts=wts.reshape(-1)[order, None], offs=counts.cumsum(0, dtype=torch.int32))


def experts(l, h, r):
    """The routed copies of h [N, D] through their experts, weighted and added back per token."""
    g, u = torch._grouped_mm(h[r["tok"]], l["egu"].transpose(-2, -1), offs=r["offs"]).chunk(2, -1)
    y = torch._grouped_mm(F.silu(g) * u, l["edown"].transpose(-2, -1), offs=r["offs"])
    return torch.zeros_like(h).index_add_(0, r["tok"], y * r["wts"].to(y.dtype))


def moe(s, l, h):
    """The grouped MoE over h [N, D]."""
    return experts(l, h, route(s, l, h))


def layer_ops(s, l, x, pos, cache=None):
    """Layer l over x ([B, T, D], positions pos, cached K/V (k, v) or None) as (name, thunk) pairs
    run in order; the thunks share state through `st`, whose "x" holds the layer's output."""
    st = {"x": x}
    B, T, _ = x.shape
    H, KVH, HD = s.H, s.KVH, s.HD

    def norm1(): st["h"] = rms(st["x"])
    def qkv():
        y = st["h"] @ l["qkv"].T
        if "qkv_b" in l:
            y = y + l["qkv_b"]
        st["q"], st["k"], st["v"] = y.split([H * HD, KVH * HD, KVH * HD], -1)
    def rope_():
        q, k = st["q"].view(B, T, H, HD), st["k"].view(B, T, KVH, HD)
        if "qn" in l:  # Qwen3: each head's query and key RMS-normed before the rotation
            q, k = rms(q, l["qn"]), rms(k, l["kn"])
        st["q"] = rope(q, pos, s.inv).transpose(1, 2)
        st["k"] = rope(k, pos, s.inv).transpose(1, 2)
        st["v"] = st["v"].view(B, T, KVH, HD).transpose(1, 2)
    def attn():
        k, v = st["k"], st["v"]
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
        if KVH != H:  # the Hugging Face modules' repeat_kv
            k, v = k.repeat_interleave(H // KVH, 1), v.repeat_interleave(H // KVH, 1)
        st["o"] = F.scaled_dot_product_attention(st["q"], k, v, is_causal=False)
    def oproj(): st["x"] = st["x"] + st["o"].transpose(1, 2).reshape(B, T, H * HD) @ l["o"].T
    def norm2(): st["h"] = rms(st["x"])
    def gate_up(): st["g"], st["u"] = (st["h"] @ l["gu"].T).chunk(2, -1)
    def act(): st["a"] = F.silu(st["g"]) * st["u"]
    def down(): st["x"] = st["x"] + st["a"] @ l["down"].T
    def router(): st["r"] = route(s, l, st["h"].reshape(B * T, -1))
    def experts_(): st["x"] = st["x"] + experts(l, st["h"].reshape(B * T, -1), st["r"]).view(B, T, -1)

    ffn = [("router", router), ("experts", experts_)] if s.E else [("gate_up", gate_up), ("act", act), ("down", down)]
    return st, [("norm", norm1), ("qkv", qkv), ("rope", rope_), ("attention", attn), ("o_proj", oproj),
                ("norm", norm2)] + ffn

