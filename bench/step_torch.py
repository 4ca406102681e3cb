#!/usr/bin/env python3
"""PyTorch reference for `pplaunch bench step`: the same GPT-2 step (forward,
backward, AdamW) in one process, to compare side by side on one machine.

    python3 bench/step_torch.py --threads 1      # Debian: apt-get install python3-torch

OpenBLAS gets the same thread count as torch (OPENBLAS_NUM_THREADS; otherwise
it would use every core whatever torch.set_num_threads says). Where OpenBLAS
does not recognise the CPU (some hypervisors) it runs its slow Prescott
kernels; pplaunch then picks the kernels itself, and for a like-for-like run
set the same for torch, e.g. OPENBLAS_CORETYPE=SKYLAKEX.
"""
import argparse, os, statistics, time

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=4)
p.add_argument("--width", type=int, default=256)
p.add_argument("--heads", type=int, default=4)
p.add_argument("--seq", type=int, default=128)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--threads", type=int, default=1)
p.add_argument("--steps", type=int, default=7)
a = p.parse_args()
os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)  # read when OpenBLAS loads, with torch
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch_gpt import Block
torch.set_num_threads(a.threads)
torch.manual_seed(1)
V, D, H, T, L = 256, a.width, a.heads, a.seq, a.layers


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
        self.h = nn.ModuleList(Block(D, H, T) for _ in range(L))
        self.ln_f = nn.LayerNorm(D, eps=1e-5)
        self.lm_head = nn.Linear(D, V, bias=False)

    def forward(self, idx, tgt):
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.h:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, V), tgt.view(-1))


m = GPT()
opt = torch.optim.AdamW(m.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
idx = torch.randint(0, V, (a.batch, T))
tgt = torch.randint(0, V, (a.batch, T))
times = []
for i in range(a.steps + 1):
    t0 = time.perf_counter()
    loss = m(idx, tgt)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if i > 0:
        times.append(time.perf_counter() - t0)
ms = statistics.median(times) * 1e3
print(f"torch {torch.__version__} threads {a.threads}: step {ms:.1f} ms (median of {a.steps}), "
      f"{a.batch * T / ms * 1e3:.0f} tokens/s")
