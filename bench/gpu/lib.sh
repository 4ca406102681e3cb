# The verdicts, steps, time budget and summary of bench/gpu/check.sh, sourced
# by it (and by check_test.go, which tests each function here).
#
# The caller sets WORK (a work folder outside OUT, with WORK/logs), OUT (the
# results folder) and DEADLINE (the epoch second by which the run must have
# written its summary). Every verdict is one line, "PASS|FAIL|SKIP name: detail",
# kept in WORK/verdicts; SKIP is a verdict of its own, never counted as PASS.

RESERVE=${RESERVE:-15} # seconds kept back for the summary and the archive of logs

# verdict KIND NAME DETAIL...: records and prints one verdict line.
verdict() {
	local kind=$1 name=$2
	shift 2
	case $kind in
	PASS | FAIL | SKIP) ;;
	*)
		set -- "verdict of unknown kind '$kind'" "$@"
		kind=FAIL
		;;
	esac
	local line="$kind $name"
	[ $# -gt 0 ] && line="$line: $*"
	printf '%s\n' "$line" >>"$WORK/verdicts"
	printf '%s\n' "$line"
}

# left: seconds until DEADLINE.
left() { echo $((DEADLINE - $(date +%s))); }

# budget LIMIT: LIMIT (times SLOW, for a slow stand-in such as the CPU
# emulator), or less where the run's deadline (less RESERVE) comes first; 0
# when fewer than 10 seconds would remain.
budget() {
	local l=$(($(left) - RESERVE)) want=$(($1 * ${SLOW:-1}))
	[ "$l" -lt 10 ] && l=0
	[ "$want" -lt "$l" ] && l=$want
	echo "$l"
}

# testcounts LOG: "passed skipped failed" top-level Go tests in a -test.v log.
testcounts() {
	local p s f
	p=$(grep -c '^--- PASS: ' "$1")
	s=$(grep -c '^--- SKIP: ' "$1")
	f=$(grep -c '^--- FAIL: ' "$1")
	echo "$p $s $f"
}

# testmsg KIND LOG: for the first top-level test of that result (SKIP or
# FAIL) in a -test.v log, the last message it logged before its result line
# (go test prints a test's messages first), without the file:line prefix.
testmsg() {
	awk -v kind="$1" '
		/^=== RUN / { msg = "" }
		/_test\.go:[0-9]+: / { m = $0; sub(/^[ \t]*[^ ]*_test\.go:[0-9]+: /, "", m); msg = m }
		$0 ~ "^--- " kind ": " { print $3 (msg != "" ? ": " msg : ""); exit }
	' "$2" | cut -c1-240
}

# skipreason LOG: the reason the first skipped top-level test gave.
skipreason() { testmsg SKIP "$1" | sed 's/^[^:]*: //'; }

# failreason LOG: a line that says what went wrong: the first failed test
# and its last message, else the last line that looks like an error.
failreason() {
	local r
	r=$(testmsg FAIL "$1")
	[ -n "$r" ] || r=$(grep -E -- 'panic:|[Ee]rror|refuse|pplaunch: |FAIL' "$1" | grep -v '^FAIL$' | tail -n 1 | cut -c1-240)
	[ -n "$r" ] || r=$(grep -v '^[[:space:]]*$' "$1" | tail -n 1 | cut -c1-240)
	printf '%s' "$r"
}

# judge NAME RC LOG LIMIT SECONDS [FIGURE]: the verdict of a finished step.
# A Go test log passes with its counts, or is a SKIP when every test skipped;
# FIGURE (an extended regular expression) picks the log's last matching line
# as the figure of a passing step.
judge() {
	local name=$1 rc=$2 log=$3 limit=$4 secs=$5 figure=${6:-}
	local base
	base=$(basename "$log")
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		tail -n 15 "$log" | sed 's/^/  | /'
		verdict FAIL "$name" "timed out after ${limit}s (log $base)"
		return 1
	fi
	if [ "$rc" != 0 ]; then
		tail -n 15 "$log" | sed 's/^/  | /'
		verdict FAIL "$name" "exit $rc after ${secs}s: $(failreason "$log") (log $base)"
		return 1
	fi
	if grep -qE '^(=== RUN|--- (PASS|SKIP|FAIL)|testing: warning: no tests to run)' "$log"; then
		local p s f
		read -r p s f < <(testcounts "$log")
		if [ "$p" = 0 ] && [ "$s" -gt 0 ]; then
			verdict SKIP "$name" "all $s test(s) skipped: $(skipreason "$log")"
			return 0
		fi
		if [ "$p" = 0 ]; then
			verdict SKIP "$name" "no test ran (log $base)"
			return 0
		fi
		local fig="$p passed"
		[ "$s" -gt 0 ] && fig="$fig, $s skipped ($(grep '^--- SKIP: ' "$log" | awk '{print $3}' | paste -sd, -))"
		verdict PASS "$name" "$fig in ${secs}s"
		return 0
	fi
	local fig="${secs}s"
	if [ -n "$figure" ]; then
		local m
		m=$(grep -E -- "$figure" "$log" | tail -n 1 | sed 's/^[[:space:]]*//' | cut -c1-200)
		[ -n "$m" ] && fig="$m; $fig"
	fi
	verdict PASS "$name" "$fig"
}

# run NAME LIMIT CMD...: runs CMD under its own timeout (LIMIT seconds, or
# what the run's budget leaves), its output in WORK/logs/NAME.log, and sets
# RC, LOG, LIM and SECS for the caller's verdict; returns 1, with a SKIP
# verdict, when the budget leaves no time for it.
run() {
	local name=$1
	LIM=$(budget "$2")
	shift 2
	LOG=$WORK/logs/$name.log RC=0 SECS=0
	if [ "$LIM" = 0 ]; then
		verdict SKIP "$name" "no time left in the run's budget (${BUDGET:-?}s)"
		return 1
	fi
	local t0
	t0=$(date +%s)
	timeout -k 10 "$LIM" "$@" >"$LOG" 2>&1 </dev/null || RC=$?
	SECS=$(($(date +%s) - t0))
}

# step NAME LIMIT CMD...: run, then judge; FIGURE may name a pattern (see
# judge). Returns the verdict's status, so that a later step can depend on it.
step() {
	run "$@" || return 1
	judge "$1" "$RC" "$LOG" "$LIM" "$SECS" "${FIGURE:-}"
}

# sanitizer_verdict NAME RC LOG LIMIT SECONDS: compute-sanitizer's verdict.
# With its "ERROR SUMMARY" it ran: errors FAIL with the first one, test
# failures under it FAIL, else PASS; without it the tool was refused
# (permissions, an unsupported device or driver): SKIP with its own message.
sanitizer_verdict() {
	local name=$1 rc=$2 log=$3 limit=$4 secs=$5 base n
	base=$(basename "$log")
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		verdict FAIL "$name" "timed out after ${limit}s (log $base)"
		return 1
	fi
	n=$(sed -n 's/^========= ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -n 1)
	if [ -z "$n" ]; then
		local why
		why=$(grep -m 1 -E '^========= .*([Ee]rror|not supported|[Uu]nable|[Pp]ermission)' "$log" | sed 's/^========= //' | cut -c1-240)
		[ -n "$why" ] || why=$(grep -v '^[[:space:]]*$' "$log" | head -n 1 | cut -c1-240)
		verdict SKIP "$name" "refused: ${why:-no output} (exit $rc)"
		return 0
	fi
	if [ "$n" != 0 ]; then
		verdict FAIL "$name" "$n error(s); first: $(grep -m 1 -E '^========= +(Invalid|Race|Barrier|Uninitialized|Error|Program hit|.*hazard)' "$log" | sed 's/^========= *//' | cut -c1-200) (log $base)"
		return 1
	fi
	if [ "$rc" != 0 ]; then
		verdict FAIL "$name" "0 errors, but the tests failed under the tool (exit $rc): $(failreason "$log") (log $base)"
		return 1
	fi
	local p s f
	read -r p s f < <(testcounts "$log")
	verdict PASS "$name" "0 errors over $p test(s) in ${secs}s"
}

# kill_verdict NAME RC LOG LIMIT: a job with a rank killed must end by itself,
# non-zero, within the limit, and name the killed rank (1).
kill_verdict() {
	local name=$1 rc=$2 log=$3 limit=$4
	case $rc in
	124 | 137) verdict FAIL "$name" "the job did not end within ${limit}s after rank 1 was killed (log $(basename "$log"))" ;;
	0) verdict FAIL "$name" "exit 0: the killed rank went unnoticed (log $(basename "$log"))" ;;
	*)
		if grep -q 'rank 1' "$log"; then
			verdict PASS "$name" "exit $rc, rank 1 named: $(grep 'rank 1' "$log" | head -n 1 | sed 's/^[[:space:]]*//' | cut -c1-160)"
		else
			verdict FAIL "$name" "exit $rc without naming rank 1 (log $(basename "$log"))"
		fi
		;;
	esac
}

# loss_gap A B: "steps largest_gap last_a last_b" of two metrics files (JSON
# lines with a "loss" field), over the steps both have.
loss_gap() {
	paste -d' ' <(grep -o '"loss":[^,}]*' "$1" | cut -d: -f2) <(grep -o '"loss":[^,}]*' "$2" | cut -d: -f2) |
		awk 'NF == 2 { n++; d = $1 - $2; if (d < 0) d = -d; if (d > w) w = d; a = $1; b = $2 }
			END { printf "%d %.3g %s %s\n", n, w + 0, (n ? a : "-"), (n ? b : "-") }'
}

# counts: "P F S", the verdicts of each kind so far.
counts() {
	local p f s
	p=$(grep -c '^PASS ' "$WORK/verdicts" 2>/dev/null)
	f=$(grep -c '^FAIL ' "$WORK/verdicts" 2>/dev/null)
	s=$(grep -c '^SKIP ' "$WORK/verdicts" 2>/dev/null)
	echo "${p:-0} ${f:-0} ${s:-0}"
}

# pack_logs: OUT/logs.tgz holds WORK/logs only, each log cut to its last
# LOGCUT bytes (halved until the archive is under 5 MiB).
pack_logs() {
	local cut=${LOGCUT:-1048576} tmp="$WORK/packed"
	while :; do
		rm -rf "$tmp"
		mkdir -p "$tmp/logs"
		local f
		for f in "$WORK"/logs/*; do
			[ -f "$f" ] && tail -c "$cut" "$f" >"$tmp/logs/$(basename "$f")"
		done
		tar -C "$tmp" -czf "$OUT/logs.tgz" logs
		[ "$(stat -c %s "$OUT/logs.tgz")" -lt $((5 << 20)) ] && break
		[ "$cut" -le 4096 ] && break
		cut=$((cut / 2))
	done
	rm -rf "$tmp"
}

# summary TITLE: writes OUT/summary.md (title, WORK/versions, every verdict,
# WORK/tables if any) and OUT/logs.tgz, prints every verdict again, and
# returns 1 if any verdict is FAIL.
summary() {
	local p f s
	read -r p f s < <(counts)
	{
		echo "# $1"
		echo
		echo "$p PASS, $f FAIL, $s SKIP ($(date -u '+%Y-%m-%d %H:%M UTC'))."
		echo
		echo "## Versions"
		echo
		echo '```text'
		cat "$WORK/versions" 2>/dev/null
		echo '```'
		echo
		echo "## Verdicts"
		echo
		echo '```text'
		cat "$WORK/verdicts" 2>/dev/null
		echo '```'
		if [ -s "$WORK/tables" ]; then
			echo
			echo "## Tables"
			echo
			echo '```text'
			cat "$WORK/tables"
			echo '```'
		fi
	} >"$OUT/summary.md"
	pack_logs
	printf '\n== every verdict (%s PASS, %s FAIL, %s SKIP; summary in %s, logs in %s)\n' "$p" "$f" "$s" "$OUT/summary.md" "$OUT/logs.tgz"
	cat "$WORK/verdicts" 2>/dev/null
	if [ "$f" != 0 ]; then
		echo "some GPU checks FAILED"
		return 1
	fi
	echo "no check failed ($s skipped)"
}

# ncclcode VERSION: 2.28.9 as 22809 (NCCL_VERSION's code); 0 for no version.
ncclcode() {
	local IFS=.
	# shellcheck disable=SC2086
	set -- $1
	[ $# = 3 ] || {
		echo 0
		return
	}
	echo $(($1 * 10000 + $2 * 100 + $3))
}

# procs_plan COMPUTE_MODE MPS: whether several processes may share the GPU:
# "ok", "mps" (only through an MPS server, MPS being nvidia-cuda-mps-control's
# path or empty) or "skip REASON".
procs_plan() {
	case $1 in
	Exclusive_Process)
		if [ -n "$2" ]; then echo mps; else echo "skip compute mode Exclusive_Process: one process at a time on the GPU, and no nvidia-cuda-mps-control to share it"; fi
		;;
	Prohibited) echo "skip compute mode Prohibited: no process may use the GPU" ;;
	*) echo ok ;;
	esac
}

# nccl_plan VERSION GPUS COMPUTE_MODE MPS: whether NCCL may put several ranks
# on one GPU here: "ok", "mps" (start MPS first: from NCCL 2.30 where it is
# installed) or "skip REASON" naming the version or the compute mode.
nccl_plan() {
	local code
	code=$(ncclcode "$1")
	if [ "$code" = 0 ]; then
		echo "skip NCCL not loaded (see pplaunch devices)"
		return
	fi
	if [ "$2" -ge 2 ]; then
		echo ok
		return
	fi
	if [ "$code" -lt 23000 ]; then
		echo "skip NCCL $1 is below 2.30: one rank per GPU (several ranks on one GPU need NCCL 2.30+ and NCCL_MULTI_RANK_GPU_ENABLE=1)"
		return
	fi
	local p
	p=$(procs_plan "$3" "$4")
	case $p in
	skip*) echo "$p" ;;
	*) if [ -n "$4" ]; then echo mps; else echo ok; fi ;;
	esac
}
