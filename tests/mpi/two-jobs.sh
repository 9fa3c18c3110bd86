#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two jobs, one fabric: two concurrent mpiruns (2 ranks each, linear
# placement) name the same FI_SLINGSHOT_EMU_FABRIC.  While both run,
# `slingshot-emu status --json` must show 4 NICs of two distinct jobs on
# 4 distinct ports, each job's ranks 0 and 1 on consecutive ports; then
# both jobs must pass (run-mpi.sh checks each) and the segment must be
# gone (the last process out removes it).
# Exit status: 0 pass, 1 fail, 77 skip, 99 error.

dir=$(dirname "$0")
TOP_BUILDDIR=${TOP_BUILDDIR:-.}
tool="$TOP_BUILDDIR/util/slingshot-emu"
fabric="ssemu-test-two-jobs-$$"
go=$(mktemp -u "${TMPDIR:-/tmp}/ssemu-two-jobs-go.XXXXXX") || exit 99
log1=$(mktemp "${TMPDIR:-/tmp}/ssemu-two-jobs-1.XXXXXX") || exit 99
log2=$(mktemp "${TMPDIR:-/tmp}/ssemu-two-jobs-2.XXXXXX") || exit 99
status=$(mktemp "${TMPDIR:-/tmp}/ssemu-two-jobs-st.XXXXXX") || exit 99
trap 'rm -f "$go" "$log1" "$log2" "$status"; rm -f "/dev/shm/$fabric"' EXIT

. "$dir/two-jobs-lib.sh"

fail() {
	echo "--- job 1:"; cat "$log1"
	echo "--- job 2:"; cat "$log2"
	echo "FAIL: two-jobs: $*"
	exit 1
}

if [ ! -x "$tool" ]; then
	echo "ERROR: two-jobs: $tool is not built"
	exit 99
fi

SSEMU_MPI_FABRIC=$fabric
SSEMU_MPI_ARGS="${SSEMU_MPI_ARGS:-} -x FI_SLINGSHOT_EMU_PLACEMENT=linear -x SSEMU_JOBS_GO=$go"
export SSEMU_MPI_FABRIC SSEMU_MPI_ARGS
"$dir/run-mpi.sh" 2 jobs >"$log1" 2>&1 &
pid1=$!
"$dir/run-mpi.sh" 2 jobs >"$log2" 2>&1 &
pid2=$!

# Watch the fabric until both jobs are on it (or one of them ended).
two_jobs_watch "$fabric" "$status" $pid1 $pid2
two_jobs_wait "$go" $pid1 "$log1" $pid2 "$log2"

# "port":P,"pid":X,"job":J,"rank":R per NIC -> "P J R" lines
nics=$(two_jobs_nics "$status" | cut -d' ' -f1,3,4)
echo "NICs while both jobs ran (port job rank):"
echo "$nics" | sed 's/^/  /'
[ "$(echo "$nics" | wc -l)" -eq 4 ] || fail "expected 4 NICs"
[ "$(echo "$nics" | cut -d' ' -f1 | sort -u | wc -l)" -eq 4 ] ||
	fail "two NICs share a port"
jobs=$(echo "$nics" | cut -d' ' -f2 | sort -u)
[ "$(echo "$jobs" | wc -l)" -eq 2 ] || fail "expected two distinct jobs"
for j in $jobs; do
	[ "$j" != 0 ] || fail "a NIC carries no job id"
	p0=$(echo "$nics" | awk -v j="$j" '$2 == j && $3 == 0 { print $1 }')
	p1=$(echo "$nics" | awk -v j="$j" '$2 == j && $3 == 1 { print $1 }')
	[ -n "$p0" ] && [ -n "$p1" ] || fail "job $j: ranks 0 and 1 not both seen"
	[ $((p1 - p0)) -eq 1 ] ||
		fail "job $j: linear placement put ranks 0 and 1 on ports $p0 and $p1"
done
# the jobs' reservations: two linear jobs of 2 ranks, 2 ports each
njobs=$(grep -o '"job":[0-9]*,"ranks":2,"placement":"linear","nics":2,"ports_reserved":2' \
	"$status" | wc -l)
[ "$njobs" -eq 2 ] || fail "status does not list two linear jobs of 2 ranks: $(cat "$status")"
grep -h 'PASS' "$log1" "$log2"
if [ -e "/dev/shm/$fabric" ]; then
	fail "fabric segment $fabric left behind by the last process"
fi
echo "PASS: two-jobs: 2 jobs x 2 ranks on one fabric, 4 distinct ports"
exit 0
