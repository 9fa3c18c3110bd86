#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# A job on a fabric in SSEMU_SHM_DIR: 2 ranks (jobs.c) whose fabric is a
# file in a directory of the test's own instead of /dev/shm.  While the
# job runs, `slingshot-emu status --json`, looking in the same directory,
# must show both ranks' NICs, the file must be there and nothing of that
# name in /dev/shm; then the job must pass (run-mpi.sh checks it) and the
# directory must be empty (the last process out removed the file).  As
# root, where a tmpfs with huge=advise can be mounted on the directory, it
# is, and a rank must map some of the fabric with 2 MiB pages (the library
# asks for them: ssemu_store.c, advise_huge); elsewhere that part is
# skipped with a note.
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
huge=0
cleanup() {
	rm -f "$go" "$log" "$status" "$shmdir/$fabric"
	[ $huge = 0 ] || umount "$shmdir"
	rmdir "$shmdir" 2>/dev/null
}
trap cleanup EXIT
if [ "$(id -u)" = 0 ] &&
   mount -t tmpfs -o huge=advise,mode=0700 tmpfs "$shmdir" 2>/dev/null; then
	huge=1
else
	echo "NOTE: shm-dir: no tmpfs with huge=advise mounted (root only):" \
		"its huge pages are not checked"
fi

# The fabric's memory a process maps with 2 MiB pages, in KiB.
pmd_kib() {
	awk -v f="$shmdir/$fabric" '
		/^[0-9a-f]+-[0-9a-f]+ / { m = index($0, f) > 0; next }
		m && $1 == "ShmemPmdMapped:" { s += $2 }
		END { print s + 0 }' "/proc/$1/smaps" 2>/dev/null || echo 0
}

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
pmd=0
i=0
while [ $i -lt 1200 ]; do
	if "$tool" status --json --fabric "$fabric" >"$status" 2>/dev/null &&
	   [ "$(grep -o '"port":' "$status" | wc -l)" -eq 2 ]; then
		seen=1
		[ -f "$shmdir/$fabric" ] && in_dir=1
		[ -e "/dev/shm/$fabric" ] && in_shm=1
		for rank_pid in $(grep -o '"pid":[0-9]*' "$status" | cut -d: -f2); do
			k=$(pmd_kib "$rank_pid")
			[ "$k" -gt "$pmd" ] && pmd=$k
		done
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
if [ $huge = 1 ]; then
	[ "$pmd" -gt 0 ] ||
		fail "no rank maps any of the fabric with 2 MiB pages on a huge=advise tmpfs"
	echo "huge pages: a rank maps $pmd KiB of the fabric with 2 MiB pages"
fi
grep -h 'PASS' "$log"
echo "PASS: shm-dir: a 2-rank job on a fabric in SSEMU_SHM_DIR, removed at the end"
