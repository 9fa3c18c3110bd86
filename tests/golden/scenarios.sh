#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Golden tests of the congestion scenarios: every scenarios/NAME.cfg is run
# with `slingshot-emu impact --scenario` (fixed seed, model time only) and
# its output must be byte-identical to tests/golden/NAME.out.  After an
# intended change of the model, regenerate the expected files with
#   SSEMU_GOLDEN_UPDATE=1 tests/golden/scenarios.sh
# and review the diff (docs/impact.md quotes the numbers).

top_src="${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
tool="${TOP_BUILDDIR:-.}/util/slingshot-emu"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
count=0

for cfg in "$top_src"/scenarios/*.cfg; do
	name=$(basename "$cfg" .cfg)
	want="$top_src/tests/golden/$name.out"
	count=$((count + 1))
	if ! "$tool" impact --scenario "$cfg" > "$tmp/$name.out" \
		2> "$tmp/$name.err"; then
		echo "FAIL: $name: the run failed:"
		cat "$tmp/$name.err"
		fail=1
		continue
	fi
	if [ -n "$SSEMU_GOLDEN_UPDATE" ]; then
		cp "$tmp/$name.out" "$want"
		echo "updated $want"
		continue
	fi
	if [ ! -f "$want" ]; then
		echo "FAIL: $name: no expected output $want"
		fail=1
		continue
	fi
	if ! cmp -s "$want" "$tmp/$name.out"; then
		echo "FAIL: $name: output differs from $want:"
		diff -u "$want" "$tmp/$name.out"
		fail=1
	else
		echo "ok: $name ($(sed -n 's/^congestion_impact: //p' "$want"))"
	fi
	# The calibration target the scenario claims ("# check: mean <= 1.3"),
	# so that regenerating the expected output cannot hide a regression.
	sed -n 's/^# check: //p' "$cfg" | while read -r field op bound; do
		case $field in
		mean|p99)
			v=$(sed -n "s/^congestion_impact: .*$field \([0-9.]*\).*/\1/p" \
				"$tmp/$name.out") ;;
		*)	v=$(sed -n "s/^$field: \([0-9.]*\).*/\1/p" \
				"$tmp/$name.out") ;;
		esac
		if ! awk -v v="$v" -v b="$bound" -v op="$op" 'BEGIN {
			if (v == "") exit 1
			if (op == "<=") exit !(v + 0 <= b + 0)
			if (op == ">=") exit !(v + 0 >= b + 0)
			exit 1 }'; then
			echo "FAIL: $name: $field ${v:-?} is not $op $bound"
			exit 1
		fi
		echo "ok: $name: $field $v $op $bound"
	done || fail=1
done
# Every expected file belongs to a scenario.
for want in "$top_src"/tests/golden/*.out; do
	[ -f "$want" ] || continue
	name=$(basename "$want" .out)
	if [ ! -f "$top_src/scenarios/$name.cfg" ]; then
		echo "FAIL: $want has no scenarios/$name.cfg"
		fail=1
	fi
done
if [ "$count" -eq 0 ]; then
	echo "FAIL: no scenarios in $top_src/scenarios"
	fail=1
fi
exit $fail
