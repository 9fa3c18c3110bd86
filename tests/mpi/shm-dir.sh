#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# A job on a fabric in SSEMU_SHM_DIR: 2 ranks (jobs.c) whose fabric is a
# file in a directory of the test's own instead of /dev/shm.  While the
# job runs, `slingshot-emu status --json`, looking in the same directory,
# must show both ranks' NICs, the file must be there and nothing of that
# name in /dev/shm; then the job must pass (run-mpi.sh checks it) and the
# directory must be empty (the last process out removed the file).
# Exit status: 0 pass, 1 fail, 77 skip, 99 error.

dir=$(dirname "$0")
TOP_BUILDDIR=${TOP_BUILDDIR:-.}
tool="$TOP_BUILDDIR/util/slingshot-emu"
fabric="ssemu-test-shm-dir-$$"
base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
shmdir=$(mktemp -d "$base/ssemu-shm-dir.XXXXXX") || exit 99
go=$(mktemp -u "${TMPDIR:-/tmp}/ssemu-shm-dir-go.XXXXXX") || exit 99
log=$(mktemp "${TMPDIR:-/tmp}/ssemu-shm-dir.XXXXXX") || exit 99
status=$(mktemp "${TMPDIR:-/tmp}/ssemu-shm-dir-st.XXXXXX") || exit 99
trap 'rm -f "$go" "$log" "$status" "$shmdir/$fabric"; rmdir "$shmdir" 2>/dev/null' EXIT

fail() {
	echo "--- job:"; cat "$log"
	echo "FAIL: shm-dir: $*"
	exit 1
}

if [ ! -x "$tool" ]; then
	echo "ERROR: shm-dir: $tool is not built"
	exit 99
fi
if [ -e "/dev/shm/$fabric" ]; then
	echo "ERROR: shm-dir: /dev/shm/$fabric exists already"
	exit 99
fi

SSEMU_SHM_DIR=$shmdir
SSEMU_MPI_FABRIC=$fabric
SSEMU_MPI_ARGS="${SSEMU_MPI_ARGS:-} -x SSEMU_JOBS_GO=$go"
export SSEMU_SHM_DIR SSEMU_MPI_FABRIC SSEMU_MPI_ARGS
"$dir/run-mpi.sh" 2 jobs >"$log" 2>&1 &
pid=$!

seen=0
in_dir=0
in_shm=0
i=0
while [ $i -lt 1200 ]; do
	if "$tool" status --json --fabric "$fabric" >"$status" 2>/dev/null &&
	   [ "$(grep -o '"port":' "$status" | wc -l)" -eq 2 ]; then
		seen=1
		[ -f "$shmdir/$fabric" ] && in_dir=1
		[ -e "/dev/shm/$fabric" ] && in_shm=1
		break
	fi
	kill -0 $pid 2>/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
touch "$go"
wait $pid
rc=$?
[ $rc -ne 77 ] || { grep -h '^SKIP' "$log" | head -1; exit 77; }
[ $rc -eq 0 ] || fail "the job failed (status $rc)"
[ $seen = 1 ] || fail "slingshot-emu status (SSEMU_SHM_DIR=$shmdir) never showed the job's 2 NICs"
[ $in_dir = 1 ] || fail "no $shmdir/$fabric while the job ran"
[ $in_shm = 0 ] || fail "/dev/shm/$fabric existed while the job ran"
[ -z "$(ls -A "$shmdir")" ] ||
	fail "left in $shmdir after the job: $(ls -A "$shmdir")"
grep -h 'PASS' "$log"
echo "PASS: shm-dir: a 2-rank job on a fabric in SSEMU_SHM_DIR, removed at the end"
