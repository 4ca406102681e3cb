#!/usr/bin/env python3
"""PyTorch on the GPU beside `pplaunch bench step --device cuda`: the same GPT-2 step
(forward, backward, AdamW) on one GPU, eager or torch.compile, fp32 or TF32, with the
same model shape and batch, so the two can be run in alternating rounds.

    python3 bench/gpu/step_torch_gpu.py --layers 12 --width 768 --heads 12 --seq 1024 \
        --vocab 50304 --batch 8 [--compile] [--tf32] [--json]

MFU counts 6·N·tokens plus the attention products (12·L·T·D per token, as llm.c and
nanoGPT do) against the peak given by --peak-tflops (H200 dense: 67 fp32 without tensor
cores, 494.7 TF32 with them; override for other GPUs).
"""
import argparse, json, math, statistics, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, __file__.rsplit("/", 2)[0])  # bench/, for torch_gpt
from torch_gpt import Block  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--layers", type=int, default=12)
p.add_argument("--width", type=int, default=768)
p.add_argument("--heads", type=int, default=12)
p.add_argument("--seq", type=int, default=1024)
p.add_argument("--vocab", type=int, default=50304)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--compile", action="store_true")
p.add_argument("--tf32", action="store_true")
p.add_argument("--peak-tflops", type=float, default=0)
p.add_argument("--json", action="store_true")
a = p.parse_args()

if not torch.cuda.is_available():
    sys.exit("step_torch_gpu.py: torch sees no CUDA device")
torch.backends.cuda.matmul.allow_tf32 = a.tf32
torch.backends.cudnn.allow_tf32 = a.tf32
torch.manual_seed(1)
dev = torch.device("cuda")
V, D, H, T, L = a.vocab, a.width, a.heads, a.seq, a.layers


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
        self.h = nn.ModuleList(Block(D, H, T) for _ in range(L))
        self.ln_f = nn.LayerNorm(D, eps=1e-5)
        self.lm_head = nn.Linear(D, V, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as pplaunch's GPT

    def forward(self, idx, tgt):
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, V), tgt.view(-1))


m = GPT().to(dev)
params = sum(t.numel() for t in m.parameters())
opt = torch.optim.AdamW(m.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
step_fn = torch.compile(m) if a.compile else m
idx = torch.randint(0, V, (a.batch, T), device=dev)
tgt = torch.randint(0, V, (a.batch, T), device=dev)
times = []
for i in range(a.warmup + a.steps):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    loss = step_fn(idx, tgt)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    if i >= a.warmup:
        times.append(time.perf_counter() - t0)
s = statistics.median(times)
tokens = a.batch * T
flops = 6 * params * tokens + 12 * L * T * D * tokens
peak = a.peak_tflops or (494.7 if a.tf32 else 67.0)
rep = {
    "impl": "torch" + (".compile" if a.compile else " eager"), "torch": torch.__version__,
    "gpu": torch.cuda.get_device_name(), "precision": "tf32" if a.tf32 else "fp32",
    "params": params, "batch": a.batch, "seq": T, "vocab": V, "step_ms": s * 1e3,
    "tokens_per_s": tokens / s, "tflops": flops / s / 1e12, "mfu": flops / s / 1e12 / peak,
    "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30, "last_loss": loss.item(),
}
if a.json:
    print(json.dumps(rep))
else:
    print(f"{rep['impl']} {rep['precision']} on {rep['gpu']}: {rep['step_ms']:.1f} ms/step, "
          f"{rep['tokens_per_s']:.0f} tokens/s, {rep['tflops']:.1f} TFLOP/s, MFU {100 * rep['mfu']:.1f}%, "
          f"peak {rep['peak_mem_gib']:.1f} GiB")
