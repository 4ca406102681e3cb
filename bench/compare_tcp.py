#!/usr/bin/env python3
"""Side-by-side TCP comparison: pplaunch, PyTorch's gloo and Open MPI (pml ob1, btl tcp).

Runs, in alternating rounds on the same machine, the three measurements that
measure the same thing the same way:

    ./bin/pplaunch --nproc 2 bench p2p --json          (and --nproc 4 bench allreduce)
    /usr/bin/python3 bench/p2p_torch.py --json          (gloo; Debian: python3-torch)
    bench/mpi/mpi_p2p.sh tcp ... --json                     (Open MPI; openmpi-bin libopenmpi-dev)

p2p: rank 0 streams about 256 MiB worth of messages to rank 1, which keeps two
receives posted (one-way algbw); sizes up to 64 KiB also get half a ping-pong
(latency). all-reduce: float32 sum on 4 ranks. Each tool reports the median of
its repetitions per round; this script prints, per size, the median over the
rounds and how many rounds each rival beat pplaunch. A tool that is missing is
skipped with the reason.

    /usr/bin/python3 bench/compare_tcp.py --rounds 3 --sizes 8 4K 64K 1M 16M 256M
"""
import argparse, json, os, shutil, statistics, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    s = s.upper().removesuffix("IB").removesuffix("B")
    return int(s[:-1]) * mult[s[-1]] if s[-1] in mult else int(s)


def run_json(cmd, env=None):
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed with exit code {out.returncode}:\n{out.stderr[-2000:]}")
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]


def ours(sizes, ar_bytes):
    rows = []
    for s in sizes:  # one size per run, like the others: each gets a fresh warm-up
        rows += [dict(r, op="p2p") for r in run_json(
            ["./bin/pplaunch", "--no-tag", "--nproc", "2", "bench", "p2p", "--no-ceiling",
             "--min", str(s), "--max", str(s), "--json"])]
    rows += [dict(r, op="allreduce") for r in run_json(
        ["./bin/pplaunch", "--no-tag", "--nproc", "4", "bench", "allreduce", "--no-ceiling",
         "--min", str(ar_bytes), "--max", str(ar_bytes), "--json"])]
    return rows


def gloo(sizes, ar_bytes):
    env = dict(os.environ, OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE", "SKYLAKEX"))
    return run_json(["/usr/bin/python3", "bench/p2p_torch.py", "--json", "--allreduce-bytes", str(ar_bytes),
                     "--sizes", *map(str, sizes)], env)


def ompi(sizes, ar_bytes):
    rows = []
    for s in sizes:
        rows += run_json(["bash", "bench/mpi/mpi_p2p.sh", "tcp", "p2p", "--min", str(s), "--max", str(s), "--json"])
    rows += run_json(["bash", "bench/mpi/mpi_p2p.sh", "tcp", "allreduce", "--allreduce-bytes", str(ar_bytes), "--json"])
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sizes", nargs="+", default=["8", "4K", "64K", "1M", "16M", "256M"])
    p.add_argument("--allreduce-bytes", default="16M")
    a = p.parse_args()
    sizes = [parse_size(s) for s in a.sizes]
    ar = parse_size(a.allreduce_bytes)
    tools = {"pplaunch": ours}
    if not os.path.exists(os.path.join(ROOT, "bin/pplaunch")):
        sys.exit("bin/pplaunch is missing: run `make build` first")
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"], capture_output=True).returncode == 0:
        tools["gloo"] = gloo
    else:
        print("# gloo skipped: /usr/bin/python3 cannot import torch (apt-get install python3-torch)")
    if shutil.which("mpicc") and shutil.which("mpirun"):
        tools["ompi-tcp"] = ompi
    else:
        print("# Open MPI skipped: no mpicc/mpirun (apt-get install openmpi-bin libopenmpi-dev)")
    # results[tool][(op, bytes)] = list over rounds of (algbw, latency)
    results = {t: {} for t in tools}
    for r in range(a.rounds):
        for name, f in tools.items():
            for row in f(sizes, ar):
                key = (row["op"], row["bytes"])
                val = row.get("seconds") if row["op"] == "allreduce" else row["algbw_gbps"]
                results[name].setdefault(key, []).append((val, row.get("lat_us")))
            print(f"# round {r + 1}: {name} done", file=sys.stderr, flush=True)
    names = list(tools)
    print(f"p2p one-way GB/s (higher is better) and 8 B-64 KiB half round trip µs (lower is better), "
          f"median of {a.rounds} alternating rounds; (k/{a.rounds}): rounds in which the rival beat pplaunch")
    print("| size | " + " | ".join(f"{n} GB/s" for n in names) + " | " + " | ".join(f"{n} µs" for n in names) + " |")
    print("|---" * (1 + 2 * len(names)) + "|")
    for s in sizes:
        key = ("p2p", s)
        bw, lat = [], []
        base = results["pplaunch"].get(key, [])
        for n in names:
            v = results[n].get(key, [])
            if not v:
                bw.append("-"), lat.append("-")
                continue
            b = statistics.median(x for x, _ in v)
            wins = sum(1 for (x, _), (y, _) in zip(v, base) if x > y)
            bw.append(f"{b:.3g}" + (f" ({wins}/{len(v)})" if n != "pplaunch" else ""))
            ls = [l for _, l in v if l is not None]
            if ls:
                wins = sum(1 for (_, x), (_, y) in zip(v, base) if x is not None and y is not None and x < y)
                lat.append(f"{statistics.median(ls):.1f}" + (f" ({wins}/{len(v)})" if n != "pplaunch" else ""))
            else:
                lat.append("-")
        print(f"| {s} | " + " | ".join(bw) + " | " + " | ".join(lat) + " |")
    key = ("allreduce", ar)
    cells = []
    base = results["pplaunch"].get(key, [])
    for n in names:
        v = results[n].get(key, [])
        if v:
            wins = sum(1 for (x, _), (y, _) in zip(v, base) if x < y)
            cells.append(f"{n} {statistics.median(x for x, _ in v) * 1e3:.1f} ms"
                         + (f" ({wins}/{len(v)})" if n != "pplaunch" else ""))
    print(f"\nall-reduce float32 sum of {ar} bytes on 4 ranks, median time (lower is better): " + ", ".join(cells))


if __name__ == "__main__":
    main()
