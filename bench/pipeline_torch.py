#!/usr/bin/env python3
"""PyTorch reference for `go test -bench TrainTwoRanks ./bench/`: the bench-step GPT
cut over two processes and pipelined by hand over gloo, to compare side by side.

    OPENBLAS_CORETYPE=SKYLAKEX /usr/bin/python3 bench/pipeline_torch.py   # apt-get install python3-torch

Rank 0 holds the embeddings and the first half of the blocks, rank 1 the rest, the
final LayerNorm, the head and the loss. Activations go forward and their gradients
back with isend/irecv (receives posted before they are needed); gradients accumulate
over the micro-batches, are clipped by the global norm (1.0, as `pplaunch train`),
then AdamW steps. One thread per rank: OPENBLAS_NUM_THREADS is set before torch loads
(torch.set_num_threads alone leaves OpenBLAS on every core). OPENBLAS_CORETYPE as for
bench/step_torch.py: without it OpenBLAS may pick its slow Prescott kernels on a VM.
"""
import argparse, os, time

os.environ["OPENBLAS_NUM_THREADS"] = "1"  # read when OpenBLAS loads, with torch
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch_gpt import Block

V = 256


class First(nn.Module):  # stage 0: embeddings + first half of the blocks
    def __init__(self, a):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, a.width), nn.Embedding(a.seq, a.width)
        self.h = nn.ModuleList(Block(a.width, a.heads, a.seq) for _ in range(a.layers // 2))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        return x


class Last(nn.Module):  # stage 1: second half + final LayerNorm + head + loss
    def __init__(self, a):
        super().__init__()
        self.h = nn.ModuleList(Block(a.width, a.heads, a.seq) for _ in range(a.layers - a.layers // 2))
        self.ln_f = nn.LayerNorm(a.width, eps=1e-5)
        self.lm_head = nn.Linear(a.width, V, bias=False)

    def forward(self, x, tgt):
        for b in self.h:
            x = b(x)
        return F.cross_entropy(self.lm_head(self.ln_f(x)).view(-1, V), tgt.view(-1))


def order(schedule, rank, M):
    """The rank's actions, ("F", mb) or ("B", mb); 1F1B with P=2 warms up with P-1-rank forwards."""
    if schedule == "gpipe":
        return [("F", m) for m in range(M)] + [("B", m) for m in range(M)]
    warm = 1 - rank
    acts = [("F", m) for m in range(warm)]
    for m in range(M - warm):
        acts += [("F", m + warm), ("B", m)]
    return acts + [("B", m) for m in range(M - warm, M)]


def step(rank, model, opt, acts, idx, tgt, shape):
    M = len(idx)
    ACT, GRAD = 0, M  # gloo tags: activation of mb m is m, its gradient M+m
    sends, outs = [], {}
    if rank == 0:
        grads = [torch.empty(shape) for _ in range(M)]
        recvs = [dist.irecv(grads[m], 1, tag=GRAD + m) for m in range(M)]
    else:
        ins = [torch.empty(shape, requires_grad=True) for _ in range(M)]
        recvs = [dist.irecv(ins[m].data, 0, tag=ACT + m) for m in range(M)]
    for kind, m in acts:
        if rank == 0 and kind == "F":
            outs[m] = model(idx[m])
            y = outs[m].detach()
            sends.append((y, dist.isend(y, 1, tag=ACT + m)))  # y lives until sent
        elif rank == 0:
            recvs[m].wait()
            outs.pop(m).backward(grads[m])
        elif kind == "F":
            recvs[m].wait()
            outs[m] = model(ins[m], tgt[m]) / M
        else:
            outs.pop(m).backward()
            g = ins[m].grad
            sends.append((g, dist.isend(g, 0, tag=GRAD + m)))
    for _, s in sends:
        s.wait()
    sq = torch.stack([p.grad.pow(2).sum() for p in model.parameters()]).sum().reshape(1)
    dist.all_reduce(sq)  # global gradient norm over both stages
    clip = min(1.0, 1.0 / (sq.sqrt().item() + 1e-6))
    for p in model.parameters():
        p.grad.mul_(clip)
    opt.step()
    opt.zero_grad(set_to_none=True)


def worker(rank, a):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{a.port}", rank=rank, world_size=2)
    rows = []
    for M in a.microbatches:
        for schedule in ("gpipe", "1f1b"):
            torch.manual_seed(1)  # both ranks draw the same batch
            mbs = a.batch // M
            idx = torch.randint(0, V, (a.batch, a.seq)).split(mbs)
            tgt = torch.randint(0, V, (a.batch, a.seq)).split(mbs)
            model = First(a) if rank == 0 else Last(a)
            opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
            acts = order(schedule, rank, M)
            wall, cpu = [], []
            dist.barrier()
            for _ in range(a.steps):
                t0, c0 = time.perf_counter(), time.process_time()
                step(rank, model, opt, acts, idx, tgt, (mbs, a.seq, a.width))
                wall.append(time.perf_counter() - t0)
                cpu.append(time.process_time() - c0)
            # steps 2..N, as the Go benchmark; the slower rank's wall time, both ranks' CPU
            t = torch.tensor([sum(wall[1:]), min(wall[1:]), sum(cpu[1:])], dtype=torch.float64)
            w, c = t.clone(), t.clone()
            dist.all_reduce(w, op=dist.ReduceOp.MAX)
            dist.all_reduce(c)
            n = a.steps - 1
            rows.append((schedule, M, w[0] / n * 1e3, w[1] * 1e3, c[2] / n * 1e3))
    if rank == 0:
        print(f"torch {torch.__version__}, gloo, 2 ranks x 1 thread, {a.steps} steps (the first left out)")
        print(f"{'run':>22} {'micro-batches':>14} {'step ms':>8} {'best step ms':>13} {'CPU ms/step':>12} {'tokens/s':>9}")
        for s, M, ms, best, cpu_ms in rows:
            print(f"{'torch 2 ranks ' + s:>22} {M:>14} {ms:>8.1f} {best:>13.1f} {cpu_ms:>12.1f} {a.batch * a.seq / ms * 1e3:>9.0f}")
        print("step ms: mean of steps 2..N (slower rank); best: the fastest; CPU: both ranks together")
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--microbatches", type=int, nargs="+", default=[4, 8])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--port", type=int, default=29517)
    mp.spawn(worker, args=(p.parse_args(),), nprocs=2)
