"""allreduce_bench.py: NCCL all-reduce times of bf16 buffers, the sizes a tensor-parallel step's
all-reduces take (a step's T tokens x hidden x 2 bytes), through torch.distributed.

    torchrun --nproc_per_node N engine/bench/allreduce_bench.py OUT.csv

Writes OUT.csv (rank 0): tp,bytes,us_median,us_p10,us_p90,busbw_GBps — the median over 50 timed
calls after 10 warm-up calls, each timed with CUDA events around one all_reduce; busbw is NCCL's
bus bandwidth convention, 2 (N - 1) / N x bytes / time.
"""
import os
import sys

import torch
import torch.distributed as dist


def main():
    out = sys.argv[1]
    dist.init_process_group("nccl")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    rows = []
    size = 4096
    while size <= 512 << 20:
        x = torch.ones(size // 2, dtype=torch.bfloat16, device="cuda")
        for _ in range(10):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        times = []
        for _ in range(50):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            dist.all_reduce(x)
            b.record()
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b) * 1e3)
        times.sort()
        med = times[len(times) // 2]
        rows.append((n, size, med, times[5], times[44], 2 * (n - 1) / n * size / (med * 1e-6) / 1e9))
        size *= 2
    if rank == 0:
        with open(out, "w") as f:
            f.write("tp,bytes,us_median,us_p10,us_p90,busbw_GBps\n")
            for r in rows:
                f.write("%d,%d,%.2f,%.2f,%.2f,%.1f\n" % r)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
