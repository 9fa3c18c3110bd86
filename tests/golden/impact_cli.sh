#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# `slingshot-emu impact` from the outside: bad options give a clear message
# on stderr and exit status 2; the same seed gives byte-identical output;
# and each victim and aggressor pattern, on fabrics small enough to know
# the answer: a ping-pong through one switch takes one switch's latency
# each way; a bisection pair, or a ring victim fed by both neighbours,
# receives at the link's payload rate; with no aggressor the congested run
# is the alone run, so the impact is exactly 1; bisection aggressors fill
# their links; sharing the one link between two switches with them costs
# bandwidth victims bandwidth, and their impact is inverted (alone over
# congested) so it shows as > 1.

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
bad "unknown value 'pong'" --victim pong
bad "out of range" --victim-size 0
bad "out of range" --victim-window 0
bad "out of range" --victim-window 2000
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

. "$(dirname "$0")/../util/cli_lib.sh"

# the number after "FIELD " on the line starting with "KEY"
field() {	# field FILE KEY FIELD
	sed -n "s/^$2.* $3 \([0-9.]*\).*/\1/p" "$1"
}

between() {	# between VALUE LO HI
	awk -v v="$1" -v lo="$2" -v hi="$3" \
		'BEGIN { exit !(v != "" && v + 0 >= lo + 0 && v + 0 <= hi + 0) }'
}

imp() { "$tool" impact --time 20 "$@"; }

# Ping-pong pairs on one switch, alone: one hop each way.
imp --preset switch --victim pingpong --victim-frac 0.5 --aggressor none \
	> "$tmp/pp.txt" || { echo "FAIL: pingpong run"; exit 1; }
m=$(field "$tmp/pp.txt" alone: mean)
check "pingpong: 4 pairs" grep -q "pingpong on 8 endpoints (4 pairs), 8 B" \
	"$tmp/pp.txt"
check "pingpong through one switch: one-way mean $m ns in [300, 450]" \
	between "$m" 300 450
check "pingpong with no aggressor: impact 1" \
	grep -q '^congestion_impact: mean 1.000 p99 1.000$' "$tmp/pp.txt"
imp --preset switch --victim pingpong --victim-frac 0.5 --aggressor none \
	> "$tmp/pp2.txt"
check "pingpong: the same seed, the same output" cmp -s "$tmp/pp.txt" \
	"$tmp/pp2.txt"

# Bandwidth victims alone on one switch: a bisection pair's stream, or a
# ring victim's two neighbours' together, arrive at the link's payload
# rate, 200 Gb/s x 2048 / (2048 + 64) = 193.9 Gb/s, for every victim; with
# no aggressor the impact is 1.
for v in bisection ringbw; do
	imp --preset switch --victim $v --victim-frac 0.5 --aggressor none \
		> "$tmp/$v.txt" || { echo "FAIL: $v run"; exit 1; }
	m=$(field "$tmp/$v.txt" alone: mean)
	lo=$(field "$tmp/$v.txt" alone: min)
	check "$v alone: mean $m Gb/s in [185, 194]" between "$m" 185 194
	check "$v alone: every victim $lo Gb/s >= 185" between "$lo" 185 194
	check "$v with no aggressor: impact 1" \
		grep -q '^congestion_impact: mean 1.000 p99 1.000 ' "$tmp/$v.txt"
done

# Bisection aggressors on one switch fill their links.
imp --preset switch --victim ring --victim-frac 0.25 --aggressor bisection \
	> "$tmp/agg.txt" || { echo "FAIL: bisection aggressor run"; exit 1; }
v=$(sed -n 's/^aggressor_link_pct: \([0-9.]*\).*/\1/p' "$tmp/agg.txt")
check "bisection aggressors: $v % of their links >= 90" between "$v" 90 100
check "bisection aggressors: 12 of 12 send" \
	grep -q 'bisection on 12 endpoints (12 sending)' "$tmp/agg.txt"

# Two switches, one link between them: interleaved bisection victims and
# aggressors share it, and the victims lose bandwidth.
imp --preset 2switch --time 50 --victim bisection --victim-frac 0.25 \
	--allocation interleaved --aggressor bisection > "$tmp/share.txt" ||
	{ echo "FAIL: shared-link run"; exit 1; }
a=$(field "$tmp/share.txt" alone: mean)
c=$(field "$tmp/share.txt" congested: mean)
i=$(field "$tmp/share.txt" congestion_impact: mean)
check "shared link: victims $a -> $c Gb/s, impact $i > 1.1 and = alone/congested" \
	awk -v a="$a" -v c="$c" -v i="$i" \
	'BEGIN { exit !(c > 0 && a > c && i > 1.1 && (a / c - i) ^ 2 < 1e-4) }'

exit $fail
