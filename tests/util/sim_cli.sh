#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# slingshot-emu from the outside: the same seed gives byte-identical output
# (report and per-message CSV), another seed another one; the single-switch
# calibration (mean switch latency 350 +- 15 ns, p99 under 400 ns); and bad
# input gets a clear error and a non-zero exit, never a crash.

tool="${TOP_BUILDDIR:-.}/util/slingshot-emu"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

check() {	# check DESCRIPTION COMMAND...: the command must succeed
	desc=$1
	shift
	if ! "$@"; then
		echo "FAIL: $desc"
		fail=1
	fi
}

run() { "$tool" sim --preset 2group --pattern uniform --load 0.3 --time 5 "$@"; }

run --seed 7 --csv "$tmp/a.csv" > "$tmp/a.txt" || { echo "FAIL: sim run"; exit 1; }
run --seed 7 --csv "$tmp/b.csv" > "$tmp/b.txt"
run --seed 8 > "$tmp/c.txt"
check "same seed, same report" cmp -s "$tmp/a.txt" "$tmp/b.txt"
check "same seed, same CSV" cmp -s "$tmp/a.csv" "$tmp/b.csv"
check "another seed, another report" sh -c "! cmp -s '$tmp/a.txt' '$tmp/c.txt'"
check "CSV has a header and one line per message" \
	test "$(head -n 1 "$tmp/a.csv")" = "src,dst,bytes,post_ps,recv_ps,latency_ns"
sent=$(sed -n 's/^messages: sent \([0-9]*\),.*/\1/p' "$tmp/a.txt")
check "CSV lines = messages sent ($sent)" \
	test "$(($(wc -l < "$tmp/a.csv") - 1))" = "$sent"

# Calibration: one light flow through one switch.
"$tool" sim --preset switch --pattern pingpong --size 8 --messages 2000 \
	> "$tmp/sw.txt"
set -- $(sed -n 's/^switch_latency_ns: hops [0-9]* mean \([0-9.]*\) p50 [0-9]* p99 \([0-9]*\).*/\1 \2/p' "$tmp/sw.txt")
echo "single switch: mean $1 ns, p99 $2 ns"
check "mean switch latency 350 +- 15 ns (got $1)" \
	awk -v m="$1" 'BEGIN { exit !(m >= 335 && m <= 365) }'
check "p99 switch latency under 400 ns (got $2)" test "$2" -lt 400

# Bad input: a clear message on stderr, exit status 2 (usage) or 1.
bad() {	# bad EXPECTED_TEXT ARGS...
	want=$1
	shift
	"$tool" "$@" > "$tmp/out" 2> "$tmp/err"
	st=$?
	if [ $st -eq 0 ] || [ $st -gt 2 ] || ! grep -q -- "$want" "$tmp/err"; then
		echo "FAIL: '$*' exited $st, stderr: $(cat "$tmp/err")"
		fail=1
	fi
}
bad "unknown preset" sim --preset nosuch
bad "not a non-negative integer" sim --size -5
bad "out of range" sim --load 2
bad "unknown pattern" sim --pattern zigzag
bad "unexpected argument" sim extra
bad "unknown command" frobnicate
bad "cannot read" sim --config /nonexistent/fabric.cfg
printf 'topology = { groups = 2; nonsense = 1; };\n' > "$tmp/bad.cfg"
bad "bad.cfg:1: nonsense: unknown key" sim --config "$tmp/bad.cfg"
bad "no fabric named" stat --fabric ssemu-no-such-fabric-$$

[ $fail -eq 0 ] && echo "PASS: sim is deterministic, calibrated, and refuses bad input"
exit $fail
