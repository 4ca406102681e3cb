"""The GPT-2 block of pplaunch's models, in PyTorch, shared by the reference scripts
bench/step_torch.py and bench/pipeline_torch.py. Import it after setting
OPENBLAS_NUM_THREADS: OpenBLAS reads it when torch loads.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, D, H, T):
        super().__init__()
        self.D, self.H, self.T = D, H, T
        self.ln_1, self.ln_2 = nn.LayerNorm(D, eps=1e-5), nn.LayerNorm(D, eps=1e-5)
        self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.c_fc, self.mlp_proj = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, x):
        B, T, D, H = x.shape[0], self.T, self.D, self.H
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = [t.view(B, T, H, D // H).transpose(1, 2) for t in (q, k, v)]
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // H))
        s = s.masked_fill(~self.mask, float("-inf"))
        y = (F.softmax(s, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, D)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
