#!/usr/bin/env bash
# shellcheck disable=SC2015 # CHECK && ok || bad WHAT: ok and bad always succeed, so one of them runs
# spec_test.sh: speculative decoding with a diffusion drafter (policy dflash, sim/docs/policies.md) as a
# user meets it: a decoder named is refused; the drafter's forward priced beside the target's verify,
# each drafter layer adding the same seconds to every per-layer op, the shared embedding and LM head
# once a cycle; every draft matching, the cycles, the drafter's rows and logit rows counted by hand.
# Usage: spec_test.sh PATH/TO/tessera    Prints "spec: N passed, M failed".
set -u
bin=${1:?usage: spec_test.sh PATH/TO/tessera}
TEST=spec
source "$(dirname "$0")/lib_cli.sh"

# DFlash: a cycle a step, its commits its own (a decoder named is refused); the drafter's forward priced
# beside the target's verify: each drafter layer adds the same seconds to every per-layer op (a layer of
# the target's shape over the same block), the shared embedding and LM head run once a cycle whatever
# the layers, and the schedule is the same
expect 2 "sim dflash with a decoder" -- "$bin" sim --policy dflash --decode threshold:2.5 --requests 2
contains "sim dflash with a decoder" "policy dflash draws its steps' commits itself"
for l in 1 2 3; do
    expect 0 "sim dflash, $l drafter layers" -- "$bin" sim --model llada-8b --policy dflash --dflash-layers "$l" \
        --dflash-accept 4 --requests 3 --rps 100 --scheduler static --max-batch 1 --lengths fixed:100,64 --gen-len 64 \
        --no-progress --json
    cp "$tmp/out" "$tmp/dflash-$l.json"
done
python3 - "$tmp"/dflash-{1,2,3}.json <<'PY' && ok || bad "sim dflash: the drafter's ops not linear in its layers, or its LM head not once a cycle"
import json, sys
d = [json.load(open(f)) for f in sys.argv[1:]]
assert d[0]["num_steps"] == d[1]["num_steps"] == d[2]["num_steps"] and d[0]["tokens_decoded"] == 192
for op in ("embed", "lm_head", "sample"):
    assert d[0]["op_seconds"][op] == d[1]["op_seconds"][op] == d[2]["op_seconds"][op], op
for op in ("qkv", "attention", "gate_up", "down", "o_proj", "host"):
    a, b, c = (x["op_seconds"][op] for x in d)
    assert b > a and abs((c - a) - 2 * (b - a)) < 1e-9 * c, op
PY
# every draft matching (--dflash-accept 16, the block): 3 requests of 64 positions, a prefill and 4 cycles
# each; the drafter ran each cycle's block of 16 rows with the 15 masks' logits
expect 0 "sim dflash, every draft matching" -- "$bin" sim --model llada-8b --policy dflash --dflash-accept 16 \
    --requests 3 --rps 100 --scheduler static --max-batch 1 --lengths fixed:100,64 --gen-len 64 --no-progress --json
got=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["num_steps"], d["drafter_rows"], d["drafter_logit_rows"])' "$tmp/out")
[ "$got" = "15 192 180" ] && ok || bad "sim dflash: 3 x (1 + 4) steps, 12 x 16 drafter rows, 12 x 15 logit rows (got $got)"

finish
