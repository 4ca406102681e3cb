#!/usr/bin/env python3
"""The speed table of bench/gpu/check.sh: pplaunch's `bench step --device cuda` beside
PyTorch eager and torch.compile, from the JSON lines the rounds appended to OUTDIR.

    python3 bench/gpu/speed_table.py OUTDIR [--peak-fp32 67] [--peak-tf32 494.7] [--peak-bf16 989.4]

Each cell is the median over rounds of each round's median step. MFU counts
6·params + 12·layers·seq·width FLOPs per token (llm.c's and nanoGPT's count) against
the peak (H200 dense: 67 TFLOP/s fp32, 494.7 TF32, 989.4 bf16; override for other GPUs).
"""
import argparse, glob, json, os, statistics

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--peak-fp32", type=float, default=67.0)
p.add_argument("--peak-tf32", type=float, default=494.7)
p.add_argument("--peak-bf16", type=float, default=989.4)
a = p.parse_args()


def rows(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def flops_per_token(params, layers, seq, width):
    return 6 * params + 12 * layers * seq * width


table = {}
for path in sorted(glob.glob(os.path.join(a.out, "speed-*.jsonl"))):
    _, impl, vocab, prec = os.path.basename(path)[: -len(".jsonl")].split("-")
    rs = rows(path)
    if not rs:
        continue
    tps = statistics.median(r["tokens_per_s"] for r in rs)
    if impl == "pplaunch":
        m = rs[0]["model"]
        fpt = flops_per_token(rs[0]["params"], m["layers"], m["seq"], m["width"])
    else:
        fpt = None  # the torch script reports its own MFU with the same count
    peak = {"tf32": a.peak_tf32, "bf16": a.peak_bf16}.get(prec, a.peak_fp32)
    mfu = statistics.median(r["mfu"] for r in rs) if fpt is None else tps * fpt / 1e12 / peak
    table[(vocab, prec, impl)] = (tps, mfu, len(rs))

print(f"{'vocab':>6} {'prec':>5} {'impl':>9} {'tokens/s':>10} {'MFU':>6} {'rounds':>6}  vs eager  vs compile")
for vocab in ("256", "50304"):
    for prec in ("fp32", "tf32", "bf16"):
        for impl in ("pplaunch", "eager", "compile"):
            if (vocab, prec, impl) not in table:
                continue
            tps, mfu, n = table[(vocab, prec, impl)]
            vs = ""
            if impl == "pplaunch":
                for ref in ("eager", "compile"):
                    r = table.get((vocab, prec, ref))
                    vs += f"  {tps / r[0]:8.2f}x" if r else "         -"
            print(f"{vocab:>6} {prec:>5} {impl:>9} {tps:10.0f} {100 * mfu:5.1f}% {n:6d}{vs}")
