#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Build slingshot-emu from a clean or existing tree and run its tests: the
# second Quick start command, and what CI runs (.ci/run).  Installs missing
# packages, regenerates and configures only when needed (--enable-werror),
# builds with make -j2, runs "make check", prints each test's cmocka summary
# (failing logs in full), reports POSIX shm segments the tests left behind,
# then runs the sanitizer builds ("make check-asan", "make check-tsan"),
# each with its own counts, and ends with one line "N passed, N failed,
# N skipped" summing all of them.  Exits non-zero if anything failed.
#
# Environment: JOBS (default 2), CONFIGURE_FLAGS (added to --enable-werror),
# SANITIZE=no (skip the sanitizer builds).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
top=$(pwd)
jobs=${JOBS:-2}
logdir=$top/.check-logs
mkdir -p "$logdir"
start=$(date +%s)

step() { echo "==> $*"; }

# Run a noisy command with its output in a log; show the tail if it fails.
quiet() {
	local name=$1
	shift
	if ! "$@" >"$logdir/$name.log" 2>&1; then
		echo "check: '$*' failed; last 40 lines of .check-logs/$name.log:"
		tail -n 40 "$logdir/$name.log"
		return 1
	fi
}

# The final line is the contract: print it whatever happened.
give_up() {
	echo "check: $1"
	echo "check: $(( $(date +%s) - start )) s"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
}

shm_list() {
	ls -1 /dev/shm 2>/dev/null | grep '^ssemu' || true
}

step "dependencies"
# --study: LAMMPS too, so that "make check" runs study/lammps-incast.sh
bash scripts/install-deps.sh --study || give_up "missing packages (see above)"

if [ ! -x configure ] || [ configure.ac -nt configure ]; then
	step "autogen.sh"
	quiet autogen ./autogen.sh || give_up "autogen.sh failed"
fi

if [ ! -f Makefile ] || [ ! -f config.status ] ||
   [ configure -nt config.status ] ||
   ! ./config.status --config 2>/dev/null | grep -q -- '--enable-werror'; then
	step "configure --enable-werror ${CONFIGURE_FLAGS:-}"
	# shellcheck disable=SC2086
	quiet configure ./configure --enable-werror ${CONFIGURE_FLAGS:-} ||
		give_up "configure failed"
fi

# Forget the previous run's results so a test that is not rebuilt cannot
# report a stale PASS.
# (test-summary.sh --list yields only relative *.log paths inside the tree.)
set -f
for log in $(bash scripts/test-summary.sh --list . 2>/dev/null); do
	for f in "$log" "${log%.log}.trs"; do
		if [ -f "$f" ]; then
			rm -f -- "$f"
		fi
	done
done
set +f

step "make -j$jobs"
if ! make -j"$jobs" --no-print-directory; then
	echo "check: the build failed"
	bash scripts/test-summary.sh .
	exit 1
fi

step "make -j$jobs check"
shm_before=$(shm_list)
# Build the test programs first, so that a compile error is not mistaken for
# a failing test; then run the suite.
if ! make -j"$jobs" --no-print-directory build-checks; then
	echo "check: building the tests failed"
	bash scripts/test-summary.sh .
	exit 1
fi
make -j"$jobs" check >"$logdir/make-check.log" 2>&1
check_rc=$?

step "results"
summary=$(bash scripts/test-summary.sh .)
sum_rc=$?
echo "$summary" | sed '$d'

echo "check: main suite: $(echo "$summary" | tail -n 1)"
echo "check: main suite $(( $(date +%s) - start )) s"

# The counts of the main suite, then of each sanitizer run.
read -r pass fail skip < <(echo "$summary" | tail -n 1 |
	awk '{ print $1, $3, $5 }')
rc=$sum_rc
if [ "$check_rc" -ne 0 ] && [ "$sum_rc" -eq 0 ]; then
	# make check failed although no test did (the harness itself?)
	echo "check: make check failed; last 20 lines of .check-logs/make-check.log:"
	tail -n 20 "$logdir/make-check.log"
	fail=$((fail + 1))
	rc=1
fi

# The sanitizer builds (scripts/sanitize.sh): ASan+UBSan on the unit and
# provider tests, TSan on the threaded ones.  SANITIZE=no leaves them out.
if [ "${SANITIZE:-yes}" != no ]; then
	for mode in asan tsan; do
		step "make check-$mode"
		t0=$(date +%s)
		make --no-print-directory check-"$mode" >"$logdir/check-$mode.log" 2>&1
		cat "$logdir/check-$mode.log"
		last=$(grep -E "^$mode: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$" \
			"$logdir/check-$mode.log" | tail -n 1)
		if [ -z "$last" ]; then
			echo "check: make check-$mode gave no result line"
			fail=$((fail + 1))
			rc=1
		else
			read -r p f k < <(echo "$last" | awk '{ print $2, $4, $6 }')
			pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + k))
			[ "$f" -eq 0 ] || rc=1
		fi
		echo "check: check-$mode $(( $(date +%s) - t0 )) s"
	done
fi

leftover=$(comm -13 <(echo "$shm_before" | sort) <(shm_list | sort) | grep . || true)
if [ -n "$leftover" ]; then
	echo "check: WARNING: new ssemu* POSIX shm segments in /dev/shm after the run"
	echo "check: (left by the tests, or by other processes meanwhile; not removed):"
	echo "$leftover" | sed 's/^/    /'
fi
old=$(echo "$shm_before" | grep -c . || true)
if [ "$old" -gt 0 ]; then
	echo "check: note: $old ssemu* segment(s) were already in /dev/shm before the run"
fi
# Output is often read from its tail: repeat the failing main-suite tests'
# names and the ends of their logs just above the final lines.
failed=$(echo "$summary" | sed -n 's/^failed: *//p')
for name in $failed; do
	echo "check: FAILED $name; last 30 lines of $name.log:"
	tail -n 30 "$name.log" 2>/dev/null | sed 's/^/    | /'
done
echo "check: $(( $(date +%s) - start )) s"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$rc" -eq 0 ]
