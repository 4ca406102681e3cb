#!/usr/bin/env bash
# Every check of pplaunch that needs a GPU, in one call of at most 10 minutes on one H200:
# QUICK=1 fits in 4 minutes, the full run in 8. Every step runs under its own timeout and
# within the run's budget (BUDGET seconds: 225 with QUICK=1, else 465), so one hang costs
# one step, never the call.
#
# Build on any Linux machine with Go first (the GPU machine needs no Go):
#     make gpu-bin          # bin/pplaunch and bin/gpu/*.test, stripped; carry bin/ along
# then, from the repository root on the GPU machine (NVIDIA's pip wheels in the Python that
# `python3` runs, as in a PyTorch venv; pplaunch finds them through site-packages):
#     QUICK=1 bash bench/gpu/check.sh [OUTDIR]     # OUTDIR defaults to $OUT or /tmp/pplaunch-gpu
#
# OUTDIR gets two files: summary.md (versions, every PASS / FAIL / SKIP line with its figure
# or reason, the tables) and logs.tgz (every step's log, under 5 MiB); the work (checkpoints,
# metrics, caches) happens in a folder of its own outside OUTDIR, removed at the end
# (KEEP_WORK=1 keeps it). Every verdict line is printed again at the end. SKIP is a verdict
# of its own, never a PASS; the script exits 1 if any step FAILed.
#
# Knobs: ROUNDS (2) alternating rounds of the speed comparison beside PyTorch (skipped with
# QUICK=1; fp32, TF32 and bf16 rows, pplaunch's through bench step --precision); COMPILE=1
# adds a torch.compile graph for TF32 and one for bf16; TRAIN_ARGS adds train flags to every
# training run; NCCL_MAX (16M) the largest message of the NCCL rows on one GPU; DRY=1 is
# the dry run over the CPU emulator (`make gpu-dry`), which sets PPLAUNCH_CUDA_LIBS and
# SLOW=4 (every step's limit times four: the emulator is no GPU).
set -u
cd "$(dirname "$0")/../.."
REPO=$PWD
OUT=${1:-${OUT:-/tmp/pplaunch-gpu}}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BIN=${PPLAUNCH_BIN:-$REPO/bin}
B=$BIN/pplaunch
T=$BIN/gpu
QUICK=${QUICK:-0}
DRY=${DRY:-0}
ROUNDS=${ROUNDS:-2}
if [ "$QUICK" = 1 ]; then BUDGET=${BUDGET:-225}; else BUDGET=${BUDGET:-465}; fi
DEADLINE=$(($(date +%s) + BUDGET))
[ -x "$B" ] || {
	echo "no $B: run 'make gpu-bin' first and carry bin/"
	exit 2
}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pplaunch-gpu-work.XXXXXX")
case $WORK/ in "$OUT"/*)
	echo "the work folder $WORK lies inside OUTDIR $OUT: choose another OUTDIR or TMPDIR"
	exit 2
	;;
esac
mkdir -p "$WORK/logs" "$WORK/run"
: >"$WORK/verdicts"
RUN=$WORK/run
export XDG_CACHE_HOME=$WORK/cache # one kernel cache for every run; nothing left in $HOME
# shellcheck source=bench/gpu/lib.sh
. "$REPO/bench/gpu/lib.sh"

MPS_DIR=""
cleanup() {
	mps_stop
	[ "${KEEP_WORK:-0}" = 1 ] && echo "work kept in $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n== %s (%ss left)\n' "$*" "$(left)"; }

# mps_start: an MPS server of this run's own (pipe and log folders in WORK),
# so that several processes share the GPU; mps_stop ends it.
mps_start() {
	MPS_DIR=$WORK/mps
	mkdir -p "$MPS_DIR/pipe" "$MPS_DIR/log"
	export CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR/pipe CUDA_MPS_LOG_DIRECTORY=$MPS_DIR/log
	if timeout 20 "$MPS" -d >"$WORK/logs/mps-start.log" 2>&1; then
		echo "MPS server started ($MPS -d)"
		return 0
	fi
	verdict FAIL mps-start "$MPS -d: $(failreason "$WORK/logs/mps-start.log")"
	unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
	MPS_DIR=""
	return 1
}
mps_stop() {
	[ -n "$MPS_DIR" ] || return 0
	echo quit | timeout 20 "$MPS" >>"$WORK/logs/mps-stop.log" 2>&1 || echo "MPS did not quit (log mps-stop.log)"
	cp "$MPS_DIR"/log/*.log "$WORK/logs/" 2>/dev/null
	unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
	MPS_DIR=""
}

# ---------------------------------------------------------------- versions
say "versions"
nvsmi() { timeout 20 nvidia-smi "$@" 2>&1; }
site_tool() { # site_tool NAME: a file NAME under one of Python's site-packages
	timeout 20 python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null |
		while read -r d; do find "$d/nvidia" -name "$1" -type f -perm -u+x 2>/dev/null; done | head -n 1
}
GPUS=0 CMODE=unknown NCCLV="" MPS="" SAN=""
{
	echo "pplaunch $(git -C "$REPO" describe --always --dirty 2>/dev/null || echo '(no git)'); QUICK=$QUICK DRY=$DRY BUDGET=${BUDGET}s"
	echo "$(uname -sr), $(nproc) CPUs, $(date -u '+%Y-%m-%d %H:%M UTC')"
	if command -v nvidia-smi >/dev/null; then
		nvsmi --query-gpu=index,name,driver_version,memory.total,compute_cap,compute_mode --format=csv
	else
		echo "nvidia-smi: not found"
	fi
	timeout 60 python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))' 2>&1 | tail -n 1 | sed '/^torch /!s/^/torch: not importable: /'
	timeout 60 "$B" devices 2>&1
	MPS=$(command -v nvidia-cuda-mps-control || true)
	echo "nvidia-cuda-mps-control: ${MPS:-not found}"
	SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1 || true)
	[ -n "$SAN" ] || SAN=$(site_tool compute-sanitizer)
	if [ -n "$SAN" ]; then echo "compute-sanitizer: $SAN, $(timeout 20 "$SAN" --version 2>&1 | tail -n 1)"; else echo "compute-sanitizer: not found"; fi
	l=$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null | grep -E 'libcuda\.so' | head -n 2)
	echo "${l:-(libcuda.so not in the loader cache)}"
} >"$WORK/versions" 2>&1
MPS=$(sed -n 's/^nvidia-cuda-mps-control: \(\/.*\)$/\1/p' "$WORK/versions")
SAN=$(sed -n 's/^compute-sanitizer: \(\/[^,]*\),.*$/\1/p' "$WORK/versions")
GPUS=$(grep -cE '^GPU [0-9]+: ' "$WORK/versions")
CMODE=$(grep -E '^0, ' "$WORK/versions" | head -n 1 | awk -F', ' '{print $NF}')
if [ -z "$CMODE" ]; then # no nvidia-smi: what the runtime said
	CMODE=$(sed -n 's/^GPU 0: .*compute mode \([a-z-]*\)$/\1/p' "$WORK/versions")
	case $CMODE in exclusive-process) CMODE=Exclusive_Process ;; prohibited) CMODE=Prohibited ;; esac
fi
NCCLV=$(sed -n 's/^NCCL \([0-9.]*\) from .*/\1/p' "$WORK/versions")
if [ "$DRY" = 1 ]; then
	NCCLV=${DRY_NCCL:-2.28.9} # the emulator has no NCCL: plan as on the GPU machine, whose wheels pin this one
	echo "dry run over the CPU emulator: NCCL planned as version $NCCLV" >>"$WORK/versions"
fi
PROCS=$(procs_plan "$CMODE" "$MPS")
NPLAN=$(nccl_plan "${NCCLV:-none}" "$GPUS" "$CMODE" "$MPS")
{
	echo "GPUs $GPUS, compute mode ${CMODE:-unknown}: several processes per GPU: $PROCS"
	echo "NCCL ${NCCLV:-not loaded}: several ranks per GPU: $NPLAN"
} >>"$WORK/versions"
cat "$WORK/versions"
FIGURE='^GPU 0: ' step devices 60 "$B" devices

# Steps that need several processes on the GPU: skipped, saying why, where the
# compute mode refuses them and no MPS server can share the GPU; run under an
# MPS server of their own where the compute mode needs one (compute-sanitizer
# and the other steps run without).
shared() { # shared NAME LIMIT CMD...
	case $PROCS in
	skip*)
		verdict SKIP "$1" "${PROCS#skip }"
		return 1
		;;
	mps)
		mps_start || return 1
		local rc=0
		step "$@" || rc=$?
		mps_stop
		return $rc
		;;
	esac
	step "$@"
}

# ---------------------------------------------------------------- backend ops
say "backend ops: CUDA against CPU on the same inputs (fp32 <= 1e-5 relative, TF32 <= 2e-3, bf16 one bf16 step more; same bits run to run)"
dryskip=()
[ "$DRY" = 1 ] && dryskip=(-test.skip 'Real') # the emulator stands in for the device; the real libraries' own tests are CI's
ops() { # ops NAME PKGDIR BINARY LIMIT ARGS...: a test binary in its package's folder, as go test runs it
	local name=$1 dir=$2 bin=$3 lim=$4
	shift 4
	step "$name" "$lim" env -C "$REPO/$dir" PPLAUNCH_TEST_DEVICE=cuda "$T/$bin" -test.v -test.count=1 "$@"
}
ops ops-cbits cbits cbits.test 90 "${dryskip[@]}"
ops ops-tensor models/tensor tensor.test 150 -test.run 'CUDA|Kernels|CheckBlock' "${dryskip[@]}"
ops ops-models models models.test 150 -test.run 'CUDA'
grep -hE 'max relative error' "$WORK"/logs/ops-*.log 2>/dev/null | sed 's/^[[:space:]]*/  /' | sort | tail -n 40 >"$RUN/errors.txt"
if [ -s "$RUN/errors.txt" ]; then
	{
		echo "ops: max relative error of each CUDA op against the CPU backend"
		cat "$RUN/errors.txt"
		echo
	} >>"$WORK/tables"
fi

# ---------------------------------------------------------------- training
say "training: CUDA against CPU, run to run, and pipelines against one process"
STEPS=${TRAIN_STEPS:-20}
[ "$QUICK" = 1 ] && STEPS=${TRAIN_STEPS:-10}
train() { # train NAME NPROC DEVICE [flags...]
	local name=$1 n=$2 dev=$3
	shift 3
	local runner=step
	[ "$n" -gt 1 ] && [ "$dev" = cuda ] && runner=shared
	# shellcheck disable=SC2086
	FIGURE='step +[0-9]+.*loss' $runner "train-$name" 120 "$B" --nproc "$n" train --device "$dev" --steps "$STEPS" --eval-every 0 \
		--checkpoint-dir "$RUN/ck-$name" --metrics "$RUN/m-$name.jsonl" ${TRAIN_ARGS:-} "$@"
}
train cpu 1 cpu && cpu_ok=1 || cpu_ok=0
train cuda 1 cuda && cuda_ok=1 || cuda_ok=0
train cuda-again 1 cuda && again_ok=1 || again_ok=0
train cuda-1f1b 4 cuda --schedule 1f1b && f1b_ok=1 || f1b_ok=0
train cuda-zbh1 4 cuda --schedule zb-h1 && zbh1_ok=1 || zbh1_ok=0
if [ $cpu_ok = 1 ] && [ $cuda_ok = 1 ]; then
	gap=$(loss_gap "$RUN/m-cpu.jsonl" "$RUN/m-cuda.jsonl")
	read -r n worst lastc lastg <<<"$gap"
	if [ "$n" = "$STEPS" ] && awk -v w="$worst" 'BEGIN{exit !(w <= 1e-4)}'; then
		verdict PASS losses-cuda-vs-cpu "$n steps, largest |loss_cuda - loss_cpu| = $worst (bound 1e-4); last loss cpu $lastc cuda $lastg"
	else
		verdict FAIL losses-cuda-vs-cpu "$n of $STEPS steps compared, largest |loss_cuda - loss_cpu| = $worst (bound 1e-4)"
	fi
else
	verdict SKIP losses-cuda-vs-cpu "train-cpu or train-cuda did not pass"
fi
for other in again:$again_ok 1f1b:$f1b_ok zbh1:$zbh1_ok; do
	name=cuda-${other%:*}
	if [ $cuda_ok = 1 ] && [ "${other#*:}" = 1 ]; then
		FIGURE='tensors: ' step "same-bits-$name" 60 "$B" checkpoint compare "$RUN/ck-$name" "$RUN/ck-cuda"
	else
		verdict SKIP "same-bits-$name" "train-cuda or train-$name did not pass"
	fi
done
# bf16: 4 ranks staging bfloat16 activations through pinned host buffers give one bf16 process's bits.
train cuda-bf16 1 cuda --precision bf16 && bf16_ok=1 || bf16_ok=0
train cuda-bf16-1f1b 4 cuda --schedule 1f1b --precision bf16 && bf16_1f1b_ok=1 || bf16_1f1b_ok=0
if [ $bf16_ok = 1 ] && [ $bf16_1f1b_ok = 1 ]; then
	FIGURE='tensors: ' step same-bits-cuda-bf16-1f1b 60 "$B" checkpoint compare "$RUN/ck-cuda-bf16-1f1b" "$RUN/ck-cuda-bf16"
else
	verdict SKIP same-bits-cuda-bf16-1f1b "train-cuda-bf16 or train-cuda-bf16-1f1b did not pass"
fi

# ---------------------------------------------------------------- NCCL
say "NCCL: version ${NCCLV:-none}, one rank, --backend auto, several ranks on one GPU ($NPLAN)"
NCCL_ROWS=(nccl-shared nccl-bench-p2p-2 nccl-bench-allreduce-2 nccl-torch-p2p nccl-train-1f1b-tcp nccl-train-1f1b-nccl nccl-same-bits-1f1b nccl-kill)
if [ "$DRY" = 1 ]; then
	verdict SKIP nccl-1rank "dry run: the emulator has no NCCL"
else
	ops nccl-1rank collective collective.test 90 -test.run 'RealNCCLOneRank'
fi
# --backend auto on two ranks of this GPU says which backend it takes and why.
FIGURE='pplaunch: backend ' step nccl-auto 60 "$B" --nproc 2 --no-tag bench p2p --backend auto --max 64 --iters 2 --reps 1 --no-ceiling
if [ "$DRY" != 1 ] && [ "$GPUS" = 1 ] && [ -n "$NCCLV" ] && [ "$(ncclcode "$NCCLV")" -lt 23000 ] &&
	! grep -q "NCCL $NCCLV refuses two ranks on one GPU" "$WORK/logs/nccl-auto.log"; then
	verdict FAIL nccl-auto-reason "--backend auto did not say that NCCL $NCCLV refuses two ranks on one GPU (log nccl-auto.log)"
fi
case $NPLAN in
skip*)
	for r in "${NCCL_ROWS[@]}"; do verdict SKIP "$r" "${NPLAN#skip }"; done
	;;
*)
	[ "$NPLAN" = mps ] && mps_start
	export NCCL_MULTI_RANK_GPU_ENABLE=1
	nmax=${NCCL_MAX:-16M}
	ops nccl-shared collective collective.test 120 -test.run 'RealNCCLShared'
	for what in p2p allreduce; do
		FIGURE='^ *[0-9]+ ' step "nccl-bench-$what-2" 90 "$B" --nproc 2 --no-tag bench $what --backend nccl --min 8 --max "$nmax" --iters 20 --reps 3
	done
	if timeout 60 python3 -c 'import torch' 2>/dev/null; then
		FIGURE='^ *[0-9]+ ' step nccl-torch-p2p 120 python3 bench/gpu/p2p_torch_gpu.py --max "$nmax" --reps 3
	else
		verdict SKIP nccl-torch-p2p "torch is not importable by python3"
	fi
	# The same run over NCCL (device tensors; host messages over TCP) and over TCP (staged
	# through host memory) must end with the same bits.
	step nccl-train-1f1b-tcp 120 "$B" --nproc 2 train --device cuda --backend tcp --schedule 1f1b --steps 5 --eval-every 0 \
		--checkpoint-dir "$RUN/ck-nccl-tcp" ${TRAIN_ARGS:-} && t_ok=1 || t_ok=0
	FIGURE='device tensors over nccl' step nccl-train-1f1b-nccl 120 "$B" --nproc 2 train --device cuda --backend nccl --schedule 1f1b \
		--steps 5 --eval-every 0 --check-transfers --checkpoint-dir "$RUN/ck-nccl-nccl" ${TRAIN_ARGS:-} && n_ok=1 || n_ok=0
	if [ $n_ok = 1 ] && ! grep -q 'device tensors over nccl' "$WORK/logs/nccl-train-1f1b-nccl.log"; then
		verdict FAIL nccl-start-line "no 'device tensors over nccl' in nccl-train-1f1b-nccl.log"
	fi
	if [ $t_ok = 1 ] && [ $n_ok = 1 ]; then
		FIGURE='tensors: ' step nccl-same-bits-1f1b 60 "$B" checkpoint compare "$RUN/ck-nccl-nccl" "$RUN/ck-nccl-tcp"
	else
		verdict SKIP nccl-same-bits-1f1b "a training run over tcp or nccl did not pass"
	fi
	# A rank killed at step 3 (its peer is then mid-transfer): the job ends within its
	# deadline (--timeout 20s) and the summary names rank 1; it must exit non-zero.
	run nccl-kill 90 env PPLAUNCH_TEST_KILL=1:3 "$B" --nproc 2 train --device cuda --backend nccl --steps 10 --eval-every 0 \
		--timeout 20s ${TRAIN_ARGS:-} && kill_verdict nccl-kill "$RC" "$LOG" "$LIM"
	unset NCCL_MULTI_RANK_GPU_ENABLE
	mps_stop
	;;
esac

# ---------------------------------------------------------------- scaling
say "bench scaling on the GPU: 1 and 2 ranks sharing it, device memory in the peak column"
if shared scaling-cuda 120 "$B" bench scaling --nproc 1,2 --steps "${SCALE_STEPS:-3}" --warmup-steps 1 --csv "$RUN/scaling.csv" -- --device cuda ${TRAIN_ARGS:-}; then
	rows=$(tail -n +2 "$RUN/scaling.csv" 2>/dev/null | grep -c ',device$')
	if [ "$rows" = 2 ]; then verdict PASS scaling-cuda-peaks "both rows report device memory"; else verdict FAIL scaling-cuda-peaks "$rows of 2 rows end in ,device in scaling.csv"; fi
	{
		echo "bench scaling --device cuda (scaling.csv)"
		cat "$RUN/scaling.csv"
		echo
	} >>"$WORK/tables"
fi

# ---------------------------------------------------------------- compute-sanitizer
say "compute-sanitizer over the CUDA op tests"
SANTESTS='^TestCUDA(MatMulAndLinear|LayerNorm|GeluAddScaleCopy|Attention|FlashAttention|EmbedAndCrossEntropy|MemoryAndOptimizers|GeluExact|CrossEntropyMasksPadding|MultiTensor)$'
SANLIM=75
if [ "$QUICK" = 1 ]; then
	SANTESTS='^TestCUDA(LayerNorm|Attention|FlashAttention|EmbedAndCrossEntropy|MemoryAndOptimizers)$'
	SANLIM=45
fi
for tool in memcheck racecheck synccheck initcheck; do
	if [ -z "$SAN" ]; then
		verdict SKIP "sanitizer-$tool" "compute-sanitizer not found (PATH, /usr/local/cuda*/bin, Python's site-packages)"
		continue
	fi
	extra=()
	[ $tool = memcheck ] && extra=(--leak-check no)
	run "sanitizer-$tool" "$SANLIM" env -C "$REPO/models/tensor" PPLAUNCH_TEST_DEVICE=cuda "$SAN" --tool $tool "${extra[@]}" --error-exitcode 99 \
		"$T/tensor.test" -test.v -test.count=1 -test.run "$SANTESTS" &&
		sanitizer_verdict "sanitizer-$tool" "$RC" "$LOG" "$LIM" "$SECS"
done

# ---------------------------------------------------------------- speed
say "speed: GPT-2 124M shape (12 layers, width 768, 12 heads, seq 1024, vocab 50304, batch 8), pplaunch beside PyTorch eager"
if [ "$QUICK" = 1 ]; then
	verdict SKIP speed "QUICK=1 leaves the speed comparison out"
elif [ "$DRY" = 1 ]; then
	verdict SKIP speed "dry run: no GPU to time"
elif ! timeout 60 python3 -c 'import torch' 2>/dev/null; then
	verdict SKIP speed "torch is not importable by python3: no PyTorch to compare with"
else
	shape=(--batch 8 --vocab 50304 --steps 6 --warmup 2)
	# pplaunch at --precision fp32|tf32|bf16 beside PyTorch eager (TF32 matmuls; bf16 autocast and SDPA).
	for r in $(seq "$ROUNDS"); do
		for prec in fp32 tf32 bf16; do
			tf=()
			[ $prec != fp32 ] && tf=(--$prec)
			FIGURE='tokens_per_s' step "speed-pplaunch-$prec-$r" 90 "$B" bench step --device cuda --model gpt2 "${shape[@]}" --precision $prec --json &&
				grep -E '^\{' "$WORK/logs/speed-pplaunch-$prec-$r.log" | tail -n 1 >>"$RUN/speed-pplaunch-50304-$prec.jsonl"
			FIGURE='tokens_per_s' step "speed-eager-$prec-$r" 90 python3 bench/gpu/step_torch_gpu.py "${shape[@]}" "${tf[@]}" --json &&
				grep -E '^\{' "$WORK/logs/speed-eager-$prec-$r.log" | tail -n 1 >>"$RUN/speed-eager-50304-$prec.jsonl"
		done
	done
	# The roofline per kernel family beside the measured step (bench step --explain).
	for prec in tf32 bf16; do
		if step speed-explain-$prec 90 "$B" bench step --device cuda --model gpt2 "${shape[@]}" --precision $prec --explain; then
			{
				echo "roofline of the $prec step against the measured one (bench step --explain --precision $prec)"
				cat "$WORK/logs/speed-explain-$prec.log"
				echo
			} >>"$WORK/tables"
		fi
	done
	if [ "${COMPILE:-0}" = 1 ]; then # one graph each: compiling takes about a minute
		for prec in tf32 bf16; do
			step speed-compile-$prec 180 python3 bench/gpu/step_torch_gpu.py "${shape[@]}" --$prec --compile --json &&
				grep -E '^\{' "$WORK/logs/speed-compile-$prec.log" | tail -n 1 >>"$RUN/speed-compile-50304-$prec.jsonl"
		done
	fi
	if step speed-table 30 python3 bench/gpu/speed_table.py "$RUN"; then
		{
			echo "speed (median over rounds of each round's median step; bench/gpu/speed_table.py)"
			cat "$WORK/logs/speed-table.log"
			echo
		} >>"$WORK/tables"
	fi
fi

say "summary"
if [ "$DRY" = 1 ]; then title="pplaunch GPU check: dry run over the CPU emulator"; else title="pplaunch GPU check"; fi
summary "$title"
