#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Summarise the last "make check" of a build tree: for every test in TESTS,
# print its result and cmocka's summary lines (the whole log tail for a test
# that failed), then a line "failed: NAME..." if any did, and end with exactly
# one line "N passed, N failed, N skipped".
# PASS and XFAIL count as passed; FAIL, XPASS, ERROR and a test with no result
# (not built, not run) count as failed.  Exit status 1 if anything failed.
#
# usage: scripts/test-summary.sh [--list] [BUILDDIR]
#   --list  only print this tree's test log paths, one per line
# TESTS_OVERRIDE (environment): summarise only these tests (a run of
# "make check TESTS=...", as scripts/sanitize.sh makes).
set -uo pipefail
set -f	# word lists below are never globbed

list_only=0
if [ "${1:-}" = --list ]; then
	list_only=1
	shift
fi
builddir=${1:-.}
cd "$builddir" || exit 1

# The test logs, from the marker line of "make print-test-logs".  Every word
# is checked to be a relative path to a *.log inside the tree: callers delete
# these files, so nothing else may ever come out of here.
test_logs() {
	local out w
	out=$(make -s --no-print-directory print-test-logs \
		${TESTS_OVERRIDE:+"TESTS=$TESTS_OVERRIDE"} 2>/dev/null) || return 1
	out=$(printf '%s\n' "$out" | sed -n 's/^SSEMU_TEST_LOGS://p' | tail -n 1)
	for w in $out; do
		case $w in
		/*|-*|*..*) continue ;;
		*.log) ;;
		*) continue ;;
		esac
		printf '%s\n' "$w" | grep -qE '^[A-Za-z0-9_./+-]+$' || continue
		printf '%s\n' "$w"
	done
}

if ! logs=$(test_logs); then
	[ "$list_only" -eq 1 ] && exit 1
	echo "test-summary: no usable Makefile in $(pwd)"
	echo "0 passed, 1 failed, 0 skipped"
	exit 1
fi
if [ "$list_only" -eq 1 ]; then
	[ -n "$logs" ] && printf '%s\n' "$logs"
	exit 0
fi

# The cmocka lines worth keeping from a passing log.  The harness sends
# stdout and stderr to one file, so a summary may share a line with another.
cmocka_summary() {
	grep -oE '\[==========\] [0-9]+ test\(s\) run\.|\[  (PASSED|FAILED|SKIPPED) +\] [^[]*' "$1" |
		sed 's/[[:space:]]*$//'
}

pass=0 fail=0 skip=0 failed=
for log in $logs; do
	trs=${log%.log}.trs
	name=${log%.log}
	if [ ! -f "$trs" ]; then
		echo "--- $name: NOT RUN (not built, or make check stopped early)"
		fail=$((fail + 1))
		failed="$failed $name"
		continue
	fi
	results=$(sed -n 's/^:test-result: *\([A-Z]*\).*/\1/p' "$trs")
	[ -n "$results" ] || results=ERROR
	p=0 f=0 s=0
	for r in $results; do
		case $r in
		PASS|XFAIL) p=$((p + 1)) ;;
		SKIP) s=$((s + 1)) ;;
		*) f=$((f + 1)) ;;
		esac
	done
	pass=$((pass + p)) fail=$((fail + f)) skip=$((skip + s))
	echo "--- $name: $(echo $results | tr ' ' ',')"
	if [ "$f" -gt 0 ]; then
		failed="$failed $name"
		echo "    (last 200 lines of $log)"
		tail -n 200 "$log" | sed 's/^/    | /'
	elif [ -f "$log" ]; then
		summary=$(cmocka_summary "$log")
		if [ -n "$summary" ]; then
			echo "$summary" | sed 's/^/    /'
		elif [ "$s" -gt 0 ] || [ -s "$log" ]; then
			tail -n 3 "$log" | sed 's/^/    | /'
		fi
	fi
done

# Named once more just above the count, so that a reader of only the
# output's tail still learns which tests failed.
[ -z "$failed" ] || echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
