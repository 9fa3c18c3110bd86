#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The timeline from the outside: `bench_fabric latency --timeline PREFIX`
# leaves a file for each of its two processes, `bench_timeline` follows
# nearly every message of the ping-pong through them and its figures agree
# with each other (every group's messages add up, no segment is negative
# or longer than its total); bad files, and bad arguments, get a clear
# message and exit status 2.  Never the timings themselves: the machine is
# shared.

bench="${TOP_BUILDDIR:-.}/benchmarks/bench_fabric"
tl="${TOP_BUILDDIR:-.}/benchmarks/bench_timeline"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

. "$(dirname "$0")/../util/cli_lib.sh"

[ -x "$bench" ] && [ -x "$tl" ] || {
	echo "SKIP: $bench or $tl not built"; exit 77; }

iters=2000
"$bench" latency --iters $iters --timeline "$tmp/tl" > "$tmp/lat.txt" ||
	{ echo "FAIL: latency run"; cat "$tmp/lat.txt"; exit 1; }
n=$(ls "$tmp"/tl.* 2>/dev/null | wc -l)
check "latency --timeline: a file for each of the two processes ($n)" \
	test "$n" -eq 2
o="$tmp/out.txt"
"$tl" "$tmp"/tl.* > "$o" 2> "$tmp/err" ||
	{ echo "FAIL: bench_timeline"; cat "$o" "$tmp/err"; exit 1; }
check "bench_timeline: every line is 'key value'" \
	awk 'NF != 2 { exit 1 }' "$o"
msgs=$(val "$o" messages)
# 2 * iters messages, less those cut off at the start and the end
check "bench_timeline: nearly every message followed ($msgs of $((2 * iters)))" \
	holds "$msgs" $((2 * iters)) 'a >= 0.95 * b && a <= b'
sum=0
for g in runner_sender runner_receiver runner_other; do
	m=$(val "$o" ${g}_messages)
	[ -n "$m" ] || continue
	sum=$((sum + m))
	total=$(val "$o" ${g}_total_ns)
	for s in post to_run drain model deliver; do
		v=$(val "$o" ${g}_${s}_ns)
		check "$g: $s ($v ns) in [0, total $total]" \
			holds "${v:--1}" "$total" 'a >= 0 && a <= b'
	done
	check "$g: total ($total ns) > 0" holds "$total" 0 'a > 0'
done
check "the groups' messages add up ($sum = $msgs)" test "$sum" = "$msgs"
check "turnaround reported" holds "$(val "$o" turnaround_ns)" 0 'a >= 0'

# bad input
bad() { refused 2 "$@"; }	# bad EXPECTED_TEXT PROGRAM ARGS...
: > "$tmp/empty"
one=$(ls "$tmp"/tl.* | head -n 1)
head -c 1000 "$one" > "$tmp/cut"
head -c 40 "$one" > "$tmp/hdr"
printf 'SSEMUTL0xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' > "$tmp/magic"
bad "give 1 to 64 timeline files" "$tl"
bad "No such file" "$tl" "$tmp/nosuch"
bad "not a timeline file" "$tl" "$tmp/empty"
bad "not a timeline file" "$tl" "$tmp/magic"
bad "cut short or damaged" "$tl" "$tmp/cut"
bad "cut short or damaged" "$tl" "$tmp/hdr"
bad "give a path prefix" "$bench" latency --timeline ''
bad "only with the latency mode" "$bench" model --timeline "$tmp/x"

# a prefix nobody can write to loses the files, not the run
"$bench" latency --iters 200 --timeline /nonexistent-ssemu-dir/tl \
	> "$tmp/lat2.txt" 2> "$tmp/err2"
check "an unwritable prefix: the run still succeeds" test $? -eq 0
check "... and says why there is no file" \
	grep -q "SSEMU_TIMELINE: cannot write" "$tmp/err2"

[ $fail -eq 0 ] && echo "PASS: the timeline is written, read and checked"
exit $fail
