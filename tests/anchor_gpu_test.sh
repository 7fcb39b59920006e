#!/usr/bin/env bash
# anchor_gpu_test.sh: engine_bench --anchor on the GPU (make check-gpu). An anchor output of two
# shapes: 1 x 128 (all three steps run) and 2 x 8,192 (its Refreshes exceed a bench step's 8,192
# tokens and are skipped, said on the table; its Reuse of 2 x 32 over 8,160 cached keys runs). Each
# step that ran is in the JSON once with a time and a floor, the anchor's time beside it, and the
# engine's workspace equal to the simulator's estimate; the speed-up's geometric mean is over the
# four steps that ran.
# Usage: anchor_gpu_test.sh PATH/TO/tessera
set -u
bin=${1:?usage: anchor_gpu_test.sh PATH/TO/tessera}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/anchor.jsonl" <<'EOF'
{"B": 1, "T": 128, "masked": 64, "refresh_all_logits_ms": 30, "refresh_masked_logits_ms": 29, "reuse_block32_ms": 28}
progress line of the anchor script
{"B": 2, "T": 8192, "masked": 4096, "refresh_all_logits_ms": 600, "refresh_masked_logits_ms": 590, "reuse_block32_ms": 35}
{"gemm_8192_bf16_tflops": 770.0}
{"copy_TBps": 4.2}
EOF
"$(dirname "$bin")/engine_bench" --only anchor --anchor "$tmp/anchor.jsonl" --json "$tmp/out.jsonl" --reps 3 --warm-s 0.2 \
    >"$tmp/out.txt" 2>&1 || { echo "anchor: engine_bench --anchor failed"; cat "$tmp/out.txt"; exit 1; }
fails=0
for want in "its ceilings: GEMM 770\.0 TFLOP/s, copy 4\.20 TB/s" \
            "^2 x 8192 \(4096\) +refresh all +skipped: 2 x 8192 tokens, more than the 8192 a bench step holds" \
            "^2 x 8192 \(4096\) +refresh masked +skipped: 2 x 8192 tokens" "geometric mean [0-9.]+ x over 4 steps"; do
    grep -qE -- "$want" "$tmp/out.txt" || { echo "anchor: the table lacks /$want/"; fails=1; }
done
python3 - "$tmp/out.jsonl" <<'PY' || fails=1
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"anchor_step"' in l]
want = {(1, 128, "refresh all"): 30, (1, 128, "refresh masked"): 29, (1, 128, "reuse"): 28, (2, 8192, "reuse"): 35}
got = {(r["B"], r["T"], r["anchor_step"]): r for r in rows}
bad = []
if sorted(got) != sorted(want) or len(rows) != len(want):
    bad.append(f"steps {sorted(got)}, want {sorted(want)}")
for k, r in got.items():
    if not (r["ms"] > 0 and r["floor_ms"] > 0 and r.get("torch_ms") == want.get(k)):
        bad.append(f"{k}: ms {r['ms']}, floor {r['floor_ms']}, torch_ms {r.get('torch_ms')}")
    if r["workspace_bytes"] != r["sim_act_bytes"]:
        bad.append(f"{k}: workspace {r['workspace_bytes']} against the simulator's {r['sim_act_bytes']}")
    if not 0 < r["attention_ms"] < r["eager_ms"]:
        bad.append(f"{k}: attention {r['attention_ms']} ms of an eager {r['eager_ms']} ms")
r = got.get((2, 8192, "reuse"))
if r and (r["q"], r["kv"], r["logit_rows"]) != (32, 8160, 32):
    bad.append(f"2 x 8192 reuse ran as q {r['q']} over {r['kv']}, {r['logit_rows']} logits")
for b in bad:
    print("anchor:", b)
sys.exit(1 if bad else 0)
PY
[ $fails -eq 0 ] || { cat "$tmp/out.txt"; exit 1; }
echo "anchor: engine_bench --anchor ran the anchor's steps that fit and skipped the rest; ok"
