#!/bin/sh
# Open MPI reference for `pplaunch bench p2p` / `bench allreduce` and
# bench/p2p_torch.py: builds bench/mpi/mpi_p2p.c with mpicc and runs it under
# mpirun, p2p on 2 ranks then allreduce on 4 (see mpi_p2p.c for the method).
#
#   bench/mpi/mpi_p2p.sh tcp|sm [p2p|allreduce] [FLAGS...]
#
#   tcp  btl tcp,self on loopback (lo), pml ob1: MPI over TCP, like our TCP backend and gloo
#   sm   btl vader,self, pml ob1: shared memory, for reference
#
# FLAGS go to mpi_p2p (--min, --max, --allreduce-bytes, --reps, --json); e.g.
#   bench/mpi/mpi_p2p.sh tcp --min 8 --max 256M
#   bench/mpi/mpi_p2p.sh sm p2p --min 16M --max 16M --json
# The binary is built in $OUT if set (and kept there), otherwise in a temporary
# directory removed on exit. Needs Open MPI: apt-get install openmpi-bin libopenmpi-dev
set -eu

usage() {
	echo "usage: $0 tcp|sm [p2p|allreduce] [--min SIZE] [--max SIZE] [--allreduce-bytes SIZE] [--reps N] [--json]" >&2
	exit 2
}

[ $# -ge 1 ] || usage
mode=$1
shift
# pml ob1 in both modes: the btl choice below only applies under ob1, and
# Debian's Open MPI also ships a ucx pml (its /etc/openmpi/openmpi-mca-params.conf
# excludes it; naming ob1 does not rely on that file). --bind-to none: the Go and PyTorch ranks are
# not pinned either.
case $mode in
tcp) mca="--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include lo"
	label="tcp (btl tcp,self on lo, pml ob1)" ;;
sm) mca="--mca pml ob1 --mca btl vader,self"
	label="sm (btl vader,self, pml ob1)" ;;
*) echo "$0: unknown mode '$mode': want tcp or sm" >&2; usage ;;
esac

ops="p2p allreduce"
case ${1:-} in
p2p | allreduce) ops=$1; shift ;;
esac

for tool in mpicc mpirun; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "$0: $tool not found; install Open MPI: apt-get install openmpi-bin libopenmpi-dev" >&2
		exit 127
	fi
done

src=$(cd "$(dirname "$0")" && pwd)/mpi_p2p.c
if [ -n "${OUT:-}" ]; then
	dir=$OUT
	mkdir -p "$dir"
else
	dir=$(mktemp -d)
	trap 'rm -rf "$dir"' EXIT
fi
mpicc -O2 -Wall -Wextra -o "$dir/mpi_p2p" "$src"

for op in $ops; do
	np=2
	[ "$op" = allreduce ] && np=4
	# shellcheck disable=SC2086 # $mca is a list of flags
	mpirun --allow-run-as-root --oversubscribe --bind-to none -np $np $mca \
		"$dir/mpi_p2p" --op "$op" --transport "$label" "$@"
done
