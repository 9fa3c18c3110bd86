#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# `slingshot-emu impact` from the outside: bad options give a clear message
# on stderr and exit status 2; the same seed gives byte-identical output.

tool="${TOP_BUILDDIR:-.}/util/slingshot-emu"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

bad() {	# bad EXPECTED_TEXT ARGS...: exit 2 and the text on stderr
	want=$1
	shift
	"$tool" impact "$@" > "$tmp/out" 2> "$tmp/err"
	st=$?
	if [ $st -ne 2 ] || ! grep -q -- "$want" "$tmp/err"; then
		echo "FAIL: 'impact $*' exited $st, stderr: $(cat "$tmp/err")"
		fail=1
	else
		echo "ok: impact $* -> $(head -n 1 "$tmp/err")"
	fi
}
bad "unknown value 'zigzag'" --victim zigzag
bad "unknown value 'flood'" --aggressor flood
bad "unknown value 'diagonal'" --allocation diagonal
bad "out of range" --victim-frac 1.5
bad "not a non-negative integer" --agg-size -5
bad "out of range" --agg-size 999999999
bad "unknown preset" --preset nosuch
bad "unexpected argument" stray
bad "the fabric has" --preset switch --endpoints 64
bad "traffic class 7" --preset switch --time 1 --tclass-victim 7
bad "out of range" --agg-ppn 0
bad "out of range" --agg-ppn 65
printf 'preset = "switch";\n' > "$tmp/noline.cfg"
bad "no '# impact:' line" --scenario "$tmp/noline.cfg"
bad "No such file" --scenario "$tmp/missing.cfg"
printf '# impact: --victim ring --preset malbec\npreset = "switch";\n' \
	> "$tmp/preset.cfg"
bad "not allowed in a scenario line" --scenario "$tmp/preset.cfg"

# Determinism: same seed, same bytes; text and JSON agree on the impact.
run() { "$tool" impact --preset switch --time 5 --aggressor alltoall "$@"; }
run --seed 3 > "$tmp/a.txt" || { echo "FAIL: impact run"; exit 1; }
run --seed 3 > "$tmp/b.txt"
if ! cmp -s "$tmp/a.txt" "$tmp/b.txt"; then
	echo "FAIL: same seed, different output"
	fail=1
fi
run --seed 3 --json > "$tmp/a.json"
m=$(sed -n 's/^congestion_impact: mean \([0-9.]*\) .*/\1/p' "$tmp/a.txt")
if ! grep -q "\"impact\": {\"mean\": $m," "$tmp/a.json"; then
	echo "FAIL: JSON impact differs from the text one ($m)"
	cat "$tmp/a.json"
	fail=1
fi
# Pairwise all-to-all: every rank goes through its steps in turn (a message
# out of turn fails the run), over the fabric and, for ranks on one node,
# beside it.
for ppn in 1 3; do
	if ! "$tool" impact --preset switch --time 20 --aggressor pairwise \
		--agg-ppn $ppn --agg-size 4096 > "$tmp/pw.txt" 2> "$tmp/pw.err"
	then
		echo "FAIL: pairwise, $ppn per node: $(cat "$tmp/pw.err")"
		fail=1
		continue
	fi
	n=$(sed -n 's/^aggressor_bandwidth: .*(\([0-9]*\) messages)/\1/p' \
		"$tmp/pw.txt")
	if [ "${n:-0}" -lt 100 ]; then
		echo "FAIL: pairwise, $ppn per node: ${n:-no} messages"
		cat "$tmp/pw.txt"
		fail=1
	else
		echo "ok: pairwise, $ppn per node: $n messages in 20 us"
	fi
done
exit $fail
