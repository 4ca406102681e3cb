#!/usr/bin/env bash
# Every check of pplaunch that needs a GPU, in one call (aim: under 8 minutes on one H200).
#
# Build on any Linux machine with Go first (the GPU machine needs no Go):
#     make gpu-bin          # bin/pplaunch and bin/gpu/*.test, stripped
# then, from the repository root on the GPU machine (NVIDIA's pip wheels in the Python that
# `python3` runs, as in a PyTorch venv; pplaunch finds them through site-packages):
#     bash bench/gpu/check.sh [OUTDIR]        # OUTDIR defaults to $OUT or /tmp/pplaunch-gpu
# Every check prints PASS or FAIL with its reason; the script exits 1 if any failed.
# ROUNDS (default 2) sets the alternating rounds of the speed comparison; QUICK=1 skips it.
# TRAIN_ARGS adds train flags to every training run (e.g. a smaller model for a dry run over
# the CPU emulator: PPLAUNCH_CUDA_LIBS=<cudaemu dir> TRAIN_ARGS="--width 32 --seq 16" QUICK=1).
set -u
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-/tmp/pplaunch-gpu}}
mkdir -p "$out"
B=$PWD/bin/pplaunch
T=$PWD/bin/gpu
rounds=${ROUNDS:-2}
failed=0
say() { printf '\n== %s\n' "$*"; }
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failed=1; }
run() { # run NAME CMD...: the command's output goes to $out/NAME.log, its tail to the console
	local name=$1
	shift
	local rc=0
	"$@" >"$out/$name.log" 2>&1 || rc=$?
	if [ $rc = 0 ]; then
		tail -n 3 "$out/$name.log"
		pass "$name"
	else
		tail -n 25 "$out/$name.log"
		fail "$name (exit $rc, log $out/$name.log)"
	fi
}
[ -x "$B" ] || { echo "no $B: run 'make gpu-bin' first and carry bin/"; exit 2; }

say "versions"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || fail "nvidia-smi"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' || true
ldconfig -p | grep -E 'libcuda\.so' || echo "(libcuda.so not in the loader cache)"
run devices "$B" devices
cat "$out/devices.log"

say "backend ops: CUDA against CPU on the same inputs (fp32 ≤ 1e-5 relative, TF32 ≤ 2e-3; same bits run to run)"
export PPLAUNCH_TEST_DEVICE=cuda
intest() { (cd "$1" && shift && "$@"); } # a test binary runs in its package's directory, as go test does
run ops-cbits intest cbits "$T/cbits.test" -test.v -test.count=1
run ops-tensor intest models/tensor "$T/tensor.test" -test.v -test.count=1 -test.run 'CUDA|Kernels'
run ops-models intest models "$T/models.test" -test.v -test.count=1 -test.run 'CUDA'
grep -hE 'max relative error' "$out"/ops-*.log | sort -t' ' -k1,1 | awk '{print "  " $0}' | tail -n 40
unset PPLAUNCH_TEST_DEVICE

say "training: CUDA against CPU, run to run, and pipelines against one process"
train() { # train NAME NPROC DEVICE [flags...]
	local name=$1 n=$2 dev=$3
	shift 3
	run "train-$name" "$B" --nproc "$n" train --device "$dev" --steps 20 --eval-every 0 \
		--checkpoint-dir "$out/ck-$name" --metrics "$out/m-$name.jsonl" ${TRAIN_ARGS:-} "$@"
}
train cpu 1 cpu
train cuda 1 cuda
train cuda-again 1 cuda
train cuda-1f1b 4 cuda --schedule 1f1b
train cuda-zbh1 4 cuda --schedule zb-h1
python3 - "$out" <<'EOF' && pass "losses cuda vs cpu within 1e-4" || fail "losses cuda vs cpu"
import json, sys
d = sys.argv[1]
load = lambda n: [json.loads(l)["loss"] for l in open(f"{d}/m-{n}.jsonl")]
cpu, cuda = load("cpu"), load("cuda")
worst = max(abs(a - b) for a, b in zip(cpu, cuda))
print(f"  {len(cpu)} steps, largest |loss_cuda - loss_cpu| = {worst:.3g}; last loss cpu {cpu[-1]:.6f} cuda {cuda[-1]:.6f}")
sys.exit(0 if len(cpu) == len(cuda) == 20 and worst <= 1e-4 else 1)
EOF
for other in cuda-again cuda-1f1b cuda-zbh1; do
	run "same-bits-$other" "$B" checkpoint compare "$out/ck-$other" "$out/ck-cuda"
done

if [ "${QUICK:-0}" != 1 ]; then
	say "speed: GPT-2 124M shape (12 layers, width 768, 12 heads, seq 1024), pplaunch beside PyTorch, $rounds alternating rounds"
	shape=(--batch 8)
	for vocab in 256 50304; do
		for prec in fp32 tf32; do
			tf=()
			[ $prec = tf32 ] && tf=(--tf32)
			for r in $(seq "$rounds"); do
				"$B" bench step --device cuda --model gpt2 "${shape[@]}" --vocab $vocab "${tf[@]}" --steps 10 --warmup 3 --json \
					>>"$out/speed-pplaunch-$vocab-$prec.jsonl" 2>>"$out/speed.log" || fail "bench step vocab $vocab $prec"
				python3 bench/gpu/step_torch_gpu.py "${shape[@]}" --vocab $vocab "${tf[@]}" --json \
					>>"$out/speed-eager-$vocab-$prec.jsonl" 2>>"$out/speed.log" || fail "torch eager vocab $vocab $prec"
				python3 bench/gpu/step_torch_gpu.py "${shape[@]}" --vocab $vocab "${tf[@]}" --compile --json \
					>>"$out/speed-compile-$vocab-$prec.jsonl" 2>>"$out/speed.log" || fail "torch.compile vocab $vocab $prec"
			done
		done
	done
	python3 bench/gpu/speed_table.py "$out" || fail "speed table"
fi

say "NCCL: version, a 1-rank communicator, 2 and 4 ranks sharing the GPU (experimental in NCCL 2.30+)"
"$B" devices 2>&1 | grep -i nccl || true
run nccl-1rank intest collective "$T/collective.test" -test.v -test.count=1 -test.run 'RealNCCLOneRank'
NCCL_MULTI_RANK_GPU_ENABLE=1 run nccl-shared intest collective "$T/collective.test" -test.v -test.count=1 -test.run 'RealNCCLShared'
grep -hE -- '--- (SKIP|FAIL)|refuses|NCCL 2' "$out"/nccl-*.log | sed 's/^/  /' || true
export NCCL_MULTI_RANK_GPU_ENABLE=1
nmax=${NCCL_MAX:-64M} # largest message of the NCCL rows
for n in 2 4; do
	for what in p2p allreduce; do
		[ $what = p2p ] && [ $n = 4 ] && continue
		run "nccl-bench-$what-$n" "$B" --nproc $n --no-tag bench $what --backend nccl --min 8 --max "$nmax" --reps 3
		grep -vE '^\[|^pplaunch' "$out/nccl-bench-$what-$n.log" | sed 's/^/  /'
	done
done
for r in $(seq "$rounds"); do # PyTorch NCCL on the same GPU, same sizes, alternating with ours
	NCCL_MULTI_RANK_GPU_ENABLE=1 python3 bench/gpu/p2p_torch_gpu.py --max "$nmax" >>"$out/nccl-torch.log" 2>&1 || fail "torch nccl round $r (log $out/nccl-torch.log)"
	"$B" --nproc 2 --no-tag bench p2p --backend nccl --min 8 --max "$nmax" --reps 1 --json >>"$out/nccl-ours-p2p.jsonl" 2>>"$out/nccl-ours.log" || fail "ours p2p round $r"
	"$B" --nproc 2 --no-tag bench allreduce --backend nccl --min 8 --max "$nmax" --reps 1 --json >>"$out/nccl-ours-allreduce.jsonl" 2>>"$out/nccl-ours.log" || fail "ours allreduce round $r"
done
tail -n 40 "$out/nccl-torch.log" | sed 's/^/  torch: /'
# The same run over NCCL (device tensors; host messages over TCP) and over TCP (staged
# through host memory) must end with the same bits; interleaved also compares every
# rank's transfer shapes before every step (--check-transfers).
for sched in 1f1b interleaved; do
	check=""
	[ $sched = interleaved ] && check=--check-transfers
	for be in tcp nccl; do
		run "nccl-train-$sched-$be" "$B" --nproc 2 train --device cuda --backend $be --schedule $sched --steps 5 --eval-every 0 \
			$check --checkpoint-dir "$out/ck-nccl-$sched-$be"
	done
	if grep -q 'device tensors over nccl' "$out/nccl-train-$sched-nccl.log"; then pass "nccl-start-line-$sched"; else fail "nccl-start-line-$sched (no 'device tensors over nccl' in $out/nccl-train-$sched-nccl.log)"; fi
	run "nccl-same-bits-$sched" "$B" checkpoint compare "$out/ck-nccl-$sched-nccl" "$out/ck-nccl-$sched-tcp"
done
# A rank killed at step 3 (its peer is then mid-transfer): the job ends within the deadline
# (--timeout 20s; 120 s is the script's limit) and the summary names rank 1.
PPLAUNCH_TEST_KILL=1:3 timeout 120 "$B" --nproc 2 train --device cuda --backend nccl --steps 10 --eval-every 0 --timeout 20s \
	>"$out/nccl-kill.log" 2>&1
code=$?
tail -n 8 "$out/nccl-kill.log"
if [ $code != 0 ] && [ $code != 124 ] && grep -q 'rank 1' "$out/nccl-kill.log"; then pass "nccl-kill (exit $code, rank 1 named)"; else fail "nccl-kill (exit $code, log $out/nccl-kill.log)"; fi
unset NCCL_MULTI_RANK_GPU_ENABLE

say "bench scaling on the GPU: 1 and 2 ranks (sharing it), device memory in the peak column"
run scaling-cuda "$B" bench scaling --nproc 1,2 --steps 3 --warmup-steps 1 --csv "$out/scaling-cuda.csv" \
	--svg "$out/scaling-cuda.svg" -- --device cuda ${TRAIN_ARGS:-}
if [ -f "$out/scaling-cuda.csv" ] && [ "$(tail -n +2 "$out/scaling-cuda.csv" | grep -c ',device$')" = 2 ]; then
	pass "scaling-cuda-peaks (both rows report device memory)"
else
	fail "scaling-cuda-peaks (want 2 rows ending in ,device in $out/scaling-cuda.csv)"
fi

say "done"
[ $failed = 0 ] && echo "all GPU checks passed" || echo "some GPU checks FAILED"
exit $failed
