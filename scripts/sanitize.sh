#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# "make check-asan" and "make check-tsan": build the tree once more with a
# sanitizer and run the given tests there.
#
#   asan  -fsanitize=address,undefined: any report (an address error, a
#         leak, undefined behaviour) ends the test with a failure.  The
#         model is built with -DSSEMU_DEBUG too: it checks its invariants
#         as it runs (emu/ssemu_invariant.h), and a broken one fails the
#         fabric and so the test.
#   tsan  -fsanitize=thread: any data race ends the test with exit code 66.
#
# The build lives in BUILDDIR/_asan (or _tsan): src/ is a copy of the
# distributed sources ("make distdir", so a configured source tree does not
# get in the way of the separate build), build/ a VPATH build of it that is
# reused from one run to the next (distdir keeps the files' times, so only
# what changed is rebuilt).  The test programs themselves are
# instrumented, so the sanitizer's runtime is loaded before libfabric
# dlopen()s the instrumented provider: no LD_PRELOAD.  libfabric and the
# system libraries are not instrumented; what they do wrong is suppressed
# by scripts/sanitizers/*.supp, each line with its reason.
#
# Prints every test's result and ends with one line
# "<mode>: N passed, N failed, N skipped"; exit status 1 if anything
# failed.  A machine whose compiler cannot build or run a sanitized program
# skips the mode (all its tests counted as skipped, with the reason).
#
# usage: scripts/sanitize.sh asan|tsan TEST...
# Environment: TOP_BUILDDIR (default .), JOBS (default 2),
# SANITIZE_CFLAGS (added to the mode's compiler flags).
set -uo pipefail

mode=${1:-}
shift || true
case $mode in
asan)
	san="-fsanitize=address,undefined -fno-sanitize-recover=all -DSSEMU_DEBUG"
	;;
tsan)
	san="-fsanitize=thread"
	;;
*)
	echo "usage: $0 asan|tsan TEST..." >&2
	exit 2
	;;
esac
tests="$*"
ntests=$#
srcdir=$(cd "$(dirname "$0")/.." && pwd)
top=$(cd "${TOP_BUILDDIR:-.}" && pwd)
jobs=${JOBS:-2}
dir=$top/_$mode
supp=$srcdir/scripts/sanitizers
start=$(date +%s)

skip_all() {
	echo "$mode: SKIP: $1"
	echo "$mode: $(( $(date +%s) - start )) s"
	echo "$mode: 0 passed, 0 failed, $ntests skipped"
	exit 0
}

fail_all() {
	echo "$mode: $1"
	[ -f "$2" ] && tail -n 40 "$2" | sed 's/^/    | /'
	echo "$mode: $(( $(date +%s) - start )) s"
	echo "$mode: 0 passed, $ntests failed, 0 skipped"
	exit 1
}

mkdir -p "$dir/build" || fail_all "cannot create $dir" /dev/null
log=$dir/sanitize.log
: >"$log"

# Can this machine build and run a sanitized program at all?  (Older
# ThreadSanitizer runtimes, gcc 12's among them, refuse to start under a
# kernel with vm.mmap_rnd_bits above 28; then the tests run with address
# space randomisation off, which they do not depend on.)
cat >"$dir/probe.c" <<'EOF'
#include <pthread.h>
static int x;
static void *run(void *a) { __atomic_add_fetch(&x, 1, __ATOMIC_RELAXED); return a; }
int main(void) { pthread_t t; pthread_create(&t, 0, run, 0); pthread_join(t, 0); return x != 1; }
EOF
${CC:-cc} $san -pthread -o "$dir/probe" "$dir/probe.c" >>"$log" 2>&1 ||
	skip_all "${CC:-cc} cannot build with $san (see $log)"
wrap=
if ! "$dir/probe" >>"$log" 2>&1; then
	if command -v setarch >/dev/null &&
	   setarch "$(uname -m)" -R "$dir/probe" >>"$log" 2>&1; then
		wrap="setarch $(uname -m) -R"
		echo "$mode: running with address space randomisation off (the runtime refuses this kernel's)"
	else
		skip_all "a program built with $san does not run here (see $log)"
	fi
fi

# Sources, then configure (once) and build what the tests need.
(cd "$top" && make -s --no-print-directory distdir distdir="$dir/src") \
	>>"$log" 2>&1 || fail_all "make distdir failed" "$log"
cd "$dir/build" || exit 1
if [ ! -f config.status ] || [ ../src/configure -nt config.status ]; then
	echo "$mode: configure (CFLAGS=-O1 -g $san)"
	# (no --enable-werror: the main build holds the code to that; at
	# -O1 with instrumentation gcc warns of things it cannot see)
	../src/configure \
		CFLAGS="-O1 -g -fno-omit-frame-pointer $san ${SANITIZE_CFLAGS:-}" \
		LDFLAGS="$san" >>"$log" 2>&1 ||
		fail_all "configure failed" "$log"
fi
progs=
for t in $tests; do
	case $t in
	*.sh) ;;
	*) progs="$progs $t" ;;
	esac
done
# shellcheck disable=SC2086
make -j"$jobs" --no-print-directory emu/libssemu.la \
	prov/libslingshot_emu-fi.la $progs >>"$log" 2>&1 ||
	fail_all "the build failed" "$log"

# Any report fails the test.  allocator_may_return_null: malloc returns
# NULL for an impossible size, as the C library does (the bad-argument
# tests ask for some), instead of the runtime aborting.
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:allocator_may_return_null=1:detect_stack_use_after_return=0:strict_string_checks=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$supp/tsan.supp"
# the test harness runs each test through LOG_COMPILER (the suite lock)
set -f
for t in $tests; do
	rm -f "$t.log" "$t.trs"
done
set +f
# shellcheck disable=SC2086
$wrap make -j"$jobs" --no-print-directory check-TESTS TESTS="$tests" \
	>>"$log" 2>&1
TESTS_OVERRIDE="$tests" bash "$srcdir/scripts/test-summary.sh" . |
	sed "\$s/^/$mode: /"
rc=${PIPESTATUS[0]}
echo "$mode: $(( $(date +%s) - start )) s"
exit "$rc"
