#!/usr/bin/env python3
"""PyTorch gloo reference for `pplaunch bench p2p` and `bench allreduce`, measured the
same way, to compare side by side:

    /usr/bin/python3 bench/p2p_torch.py      # Debian: apt-get install python3-torch

p2p (2 ranks): rank 0 sends `iters` messages to rank 1, which keeps two receives posted
and acknowledges the last (one-way bandwidth); for sizes up to 64 KiB, then up to 200
ping-pongs of the same size, half a round trip each (latency). all-reduce (4 ranks): float32 sum. Each is timed
`--reps` times and the median reported; iters is about 256 MiB worth (4 to 1000).
"""
import argparse, json, os, statistics, time

os.environ["OPENBLAS_NUM_THREADS"] = "1"
import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def iters_for(size):
    return min(1000, max(4, (256 << 20) // size))


def stream(rank, buf, other, iters):
    ack = torch.zeros(1, dtype=torch.uint8)
    if rank == 1:
        bufs = (buf, other)
        hs = [dist.irecv(bufs[0], 0), None]
        for i in range(iters):
            if i + 1 < iters:
                hs[(i + 1) % 2] = dist.irecv(bufs[(i + 1) % 2], 0)
            hs[i % 2].wait()
        dist.send(ack, 0)
        return 0.0
    t0 = time.perf_counter()
    for _ in range(iters):
        dist.send(buf, 1)
    dist.recv(ack, 1)
    return time.perf_counter() - t0


def ping_pong(rank, buf, iters):
    t0 = time.perf_counter()
    for _ in range(iters):
        if rank == 0:
            dist.send(buf, 1)
        dist.recv(buf, 1 - rank)
        if rank == 1:
            dist.send(buf, 0)
    return (time.perf_counter() - t0) / (2 * iters)


def p2p(rank, a):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=rank, world_size=2)
    for size in a.sizes:
        buf, other = torch.zeros(size, dtype=torch.uint8), torch.zeros(size, dtype=torch.uint8)
        iters = iters_for(size)
        stream(rank, buf, other, 1)  # warm-up
        if size <= 64 << 10:
            ping_pong(rank, buf, 1000)  # untimed, as bench p2p and bench/mpi do
        bw, lat = [], []
        for _ in range(a.reps):
            dist.barrier()
            d = stream(rank, buf, other, iters)
            bw.append(size * iters / d / 1e9 if rank == 0 else 0)
            if size <= 64 << 10:
                lat.append(ping_pong(rank, buf, min(iters, 200)) * 1e6)
        if rank == 0 and a.json:
            row = {"op": "p2p", "bytes": size, "iters": iters, "algbw_gbps": statistics.median(bw)}
            if lat:
                row["lat_us"] = statistics.median(lat)
            print(json.dumps(row), flush=True)
        elif rank == 0:
            l = f"{statistics.median(lat):9.1f}" if lat else f"{'-':>9}"
            print(f"{'p2p 2 ranks':>16} {size:>12} {iters:>6} {statistics.median(bw):>12.3f} {l}")
    dist.destroy_process_group()


def allreduce(rank, a):
    n = 4
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port + 1}", rank=rank, world_size=n)
    x = torch.full((a.allreduce_bytes // 4,), float(rank + 1))
    iters = iters_for(a.allreduce_bytes)
    dist.all_reduce(x)  # warm-up
    per = []
    for _ in range(a.reps):
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        per.append((time.perf_counter() - t0) / iters)
    if rank == 0 and a.json:
        s = statistics.median(per)
        alg = a.allreduce_bytes / s / 1e9
        print(json.dumps({"op": "allreduce", "bytes": a.allreduce_bytes, "iters": iters, "seconds": s,
                          "algbw_gbps": alg, "busbw_gbps": alg * 2 * (n - 1) / n}), flush=True)
    elif rank == 0:
        s = statistics.median(per)
        alg = a.allreduce_bytes / s / 1e9
        print(f"{'allreduce 4 ranks':>16} {a.allreduce_bytes:>12} {iters:>6} {alg:>12.3f} {'-':>9} "
              f"time {s * 1e3:.1f} ms, busbw {alg * 2 * (n - 1) / n:.3f} GB/s")
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", type=int, nargs="+", default=[8, 16 << 20, 256 << 20])
    p.add_argument("--allreduce-bytes", type=int, default=16 << 20)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--port", type=int, default=29527)
    p.add_argument("--json", action="store_true", help="one JSON object per size instead of the table")
    p.add_argument("--no-allreduce", action="store_true")
    a = p.parse_args()
    if a.json:
        mp.spawn(p2p, args=(a,), nprocs=2)
        if not a.no_allreduce:
            mp.spawn(allreduce, args=(a,), nprocs=4)
        raise SystemExit(0)
    print(f"torch {torch.__version__} gloo over loopback TCP, median of {a.reps}")
    print(f"{'':>16} {'size(B)':>12} {'iters':>6} {'algbw(GB/s)':>12} {'lat(us)':>9}")
    mp.spawn(p2p, args=(a,), nprocs=2)
    mp.spawn(allreduce, args=(a,), nprocs=4)
