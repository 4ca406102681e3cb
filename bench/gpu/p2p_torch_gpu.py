#!/usr/bin/env python3
"""PyTorch's torch.distributed NCCL beside `pplaunch bench p2p|allreduce --backend nccl`, on the
same GPU(s) and sizes, measured the same way (bench/gpu/check.sh alternates rounds of both):

    NCCL_MULTI_RANK_GPU_ENABLE=1 python3 bench/gpu/p2p_torch_gpu.py [--ranks 2] [--min 8] [--max 256M]

p2p: rank 0 sends `iters` messages of device memory to rank 1, which receives them in order and
acknowledges the last (one-way bandwidth); all-reduce: float32 sum over all ranks. Ranks share
GPU 0 when there is only one (NCCL 2.30+ with NCCL_MULTI_RANK_GPU_ENABLE=1). Each size is timed
`--reps` times after one warm-up, the median reported, iters about 256 MiB worth (4 to 1000).
Rows are nccl-tests' columns: size, count, iters, time(us), algbw, busbw, #wrong.
"""
import argparse, os, statistics, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def size_arg(s):
    s = s.strip().upper().removesuffix("IB").removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
    return int(s.rstrip("KMG")) * mult


def iters_for(size):
    return min(1000, max(4, (256 << 20) // max(size, 1)))


def sizes(lo, hi):
    s = max(lo, 1)
    while s <= hi:
        yield s
        s *= 2


def p2p(rank, size, iters, reps, dev):
    buf = (torch.arange(size, dtype=torch.int64, device=dev) * 7 + 3).to(torch.uint8) if rank == 0 else torch.zeros(size, dtype=torch.uint8, device=dev)
    want = (torch.arange(size, dtype=torch.int64, device=dev) * 7 + 3).to(torch.uint8)
    ack = torch.zeros(1, device=dev)

    def run(n):
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        if rank == 0:
            for _ in range(n):
                dist.send(buf, 1)
            dist.recv(ack, 1)
        else:
            for _ in range(n):
                dist.recv(buf, 0)
            dist.send(ack, 0)
        torch.cuda.synchronize(dev)
        return time.perf_counter() - t0

    run(1)
    times = [run(iters) for _ in range(reps)]
    wrong = torch.tensor([0.0 if rank == 0 else float((buf != want).sum().item())], device=dev)
    dist.all_reduce(wrong)
    return statistics.median(times) / iters, int(wrong.item())


def allreduce(rank, n, size, iters, reps, dev):
    count = size // 4
    i = torch.arange(count, device=dev)
    x = ((rank + 1) * (i % 7 + 1) + 1).to(torch.float32)
    dist.all_reduce(x)
    tri = n * (n + 1) / 2
    wrong = torch.tensor([float((x != tri * (i % 7 + 1) + n).sum().item())], device=dev)
    dist.all_reduce(wrong)
    times = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize(dev)
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        torch.cuda.synchronize(dev)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) / iters, int(wrong.item())


def worker(rank, n, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=n, device_id=dev)
    head = "%12s %10s %6s %10s %12s %12s %7s" % ("size", "count", "iters", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "#wrong")
    if rank == 0:
        print(f"# torch {torch.__version__} nccl {torch.cuda.nccl.version()} p2p: rank 0 -> rank 1 of {n}, device memory, median of {args.reps}\n#\n#{head[1:]}", flush=True)
    for s in sizes(args.min, args.max):
        t, w = p2p(rank, s, iters_for(s), args.reps, dev) if rank <= 1 else (1.0, 0)
        if rank == 0:
            print("%12d %10d %6d %10.2f %12.3f %12.3f %7d" % (s, s, iters_for(s), t * 1e6, s / t / 1e9, s / t / 1e9, w), flush=True)
        dist.barrier()
    if rank == 0:
        print(f"# torch allreduce: float32 sum over {n} ranks, device memory, median of {args.reps}\n#\n#{head[1:]}", flush=True)
    for s in sizes(max(args.min, 4), args.max):
        s -= s % 4
        t, w = allreduce(rank, n, s, iters_for(s), args.reps, dev)
        if rank == 0:
            alg = s / t / 1e9
            print("%12d %10d %6d %10.2f %12.3f %12.3f %7d" % (s, s // 4, iters_for(s), t * 1e6, alg, alg * 2 * (n - 1) / n, w), flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--min", type=size_arg, default=8)
    p.add_argument("--max", type=size_arg, default=256 << 20)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--port", type=int, default=29517)
    args = p.parse_args()
    mp.spawn(worker, args=(args.ranks, args), nprocs=args.ranks, join=True)


if __name__ == "__main__":
    main()
