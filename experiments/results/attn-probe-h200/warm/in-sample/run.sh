#!/bin/bash
# session 9, call 5: the warm-up A/B in sample. On one instance: LLaDA-8B profiled with the default
# warm-up (A) and with --warm-ms 150 (B), the fidelity matrix's 8 LLaDA-8B runs replayed (evaluated
# with A here, with B afterwards from the recorded steps), and the two ops-h200 workloads replayed
# with --ops. Every process shares the GEMM cache of the shipped calibrations.
export PATH=$PATH:/usr/local/cuda/bin
export LD_LIBRARY_PATH=$PWD/deps/root/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
SECONDS=0
o=$OUT/c5; mkdir -p $o/calA $o/calB
b=./build/gpu/tessera
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv > $o/gpu.txt
make -j16 DEPS=deps/root BUILD=build/gpu > $o/build.txt 2>&1; echo "build rc $? ${SECONDS}s"
cp experiments/results/fidelity-h200/gemm-algos.db /tmp/algos.db
export TESSERA_GEMM_CACHE=/tmp/algos.db
timeout 160 $b engine profile --model llada-8b --db /tmp/pA.db --reps 2 | tail -1
$b calib import /tmp/pA.db --gpu h200 --out $o/calA/calib-llada-8b.csv | tail -1; echo "A ${SECONDS}s"
timeout 190 $b engine profile --model llada-8b --db /tmp/pB.db --reps 2 --warm-ms 150 | tail -1
$b calib import /tmp/pB.db --gpu h200 --out $o/calB/calib-llada-8b.csv | tail -1; echo "B ${SECONDS}s"
cp /tmp/algos.db $o/calA/gemm-algos.db
timeout 170 env CALIB_DIR=$o/calA SCRATCH=/tmp/scr bash experiments/fidelity.sh $o/fidA llada-8b > $o/fidA.log 2>&1
echo "fidelity rc $? ${SECONDS}s"
for w in def long; do
  L=""; [ $w = long ] && L="--lengths lognormal:7.5,0.5,5.0,0.6"
  $b sim --requests 16 --rps 4 --gen-len 128 $L --db $o/ops-$w.db --quiet --no-progress > /dev/null
  timeout 60 $b engine replay --db $o/ops-$w.db --ops > $o/ops-$w.log 2>&1; echo "ops $w rc $? ${SECONDS}s"
done
awk -F, '$5=="calibrated"{print $2,$3,$4,$8,$9,$10}' $o/fidA/fidelity.csv
