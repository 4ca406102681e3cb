#!/usr/bin/env python3
"""PyTorch on the GPU beside `pplaunch bench step --device cuda`: the same GPT-2 step
(forward, backward, AdamW) on one GPU, eager or torch.compile, fp32, TF32 or bf16, with
the same model shape and batch, so the two can be run in alternating rounds.

    python3 bench/gpu/step_torch_gpu.py --layers 12 --width 768 --heads 12 --seq 1024 \
        --vocab 50304 --batch 8 [--compile] [--tf32 | --bf16] [--json]

--bf16 is PyTorch's mixed precision as a user would run it: fp32 parameters, gradients
and AdamW state, the forward under torch.autocast(bfloat16), and the attention through
F.scaled_dot_product_attention (causal: the fused kernels), not the materialised
softmax of the fp32 rows.

MFU counts 6·N·tokens plus the attention products (12·L·T·D per token, as llm.c and
nanoGPT do) against the peak given by --peak-tflops (H200 dense: 67 fp32 without tensor
cores, 494.7 TF32 with them, 989.4 bf16; override for other GPUs).
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
p.add_argument("--bf16", action="store_true")
p.add_argument("--peak-tflops", type=float, default=0)
p.add_argument("--json", action="store_true")
a = p.parse_args()

if a.tf32 and a.bf16:
    sys.exit("step_torch_gpu.py: --tf32 and --bf16 are two precisions: give one")
if not torch.cuda.is_available():
    sys.exit("step_torch_gpu.py: torch sees no CUDA device")
torch.backends.cuda.matmul.allow_tf32 = a.tf32
torch.backends.cudnn.allow_tf32 = a.tf32
torch.manual_seed(1)
dev = torch.device("cuda")
V, D, H, T, L = a.vocab, a.width, a.heads, a.seq, a.layers


class SDPABlock(Block):
    """Block with the attention through scaled_dot_product_attention (the same parameters)."""

    def forward(self, x):
        B, T, D, H = x.shape[0], self.T, self.D, self.H
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = [t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v)]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).contiguous().view(B, T, D)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(T, D)
        blk = SDPABlock if a.bf16 else Block
        self.h = nn.ModuleList(blk(D, H, T) for _ in range(L))
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
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.bf16):
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
peak = a.peak_tflops or (989.4 if a.bf16 else 494.7 if a.tf32 else 67.0)
rep = {
    "impl": "torch" + (".compile" if a.compile else " eager"), "torch": torch.__version__,
    "gpu": torch.cuda.get_device_name(), "precision": "bf16" if a.bf16 else "tf32" if a.tf32 else "fp32",
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
