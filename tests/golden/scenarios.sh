#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Golden tests of the calibration scenarios: every scenarios/NAME.cfg is run
# with the tool its first options line names (`# impact:`, `# share:` or
# `# sim:`, as `slingshot-emu TOOL --scenario`; fixed seed, model time
# only), its output must be byte-identical to tests/golden/NAME.out, and
# the targets it states must hold:
#   # check: KEY OP BOUND       the number after "KEY: " in the output
#   # check: KEY.FIELD OP BOUND the number after "FIELD " on the KEY line
# with OP <= or >=.  After an intended change of the model, regenerate the
# expected files with
#   SSEMU_GOLDEN_UPDATE=1 tests/golden/scenarios.sh
# and review the diff (docs/impact.md quotes the numbers); the checks still
# apply.

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
	cmd=$(sed -n 's/^# \(impact\|share\|sim\): .*/\1/p' "$cfg" | head -n 1)
	if [ -z "$cmd" ]; then
		echo "FAIL: $name: no '# impact:', '# share:' or '# sim:' line"
		fail=1
		continue
	fi
	if ! "$tool" "$cmd" --scenario "$cfg" > "$tmp/$name.out" \
		2> "$tmp/$name.err"; then
		echo "FAIL: $name: the run failed:"
		cat "$tmp/$name.err"
		fail=1
		continue
	fi
	if [ -n "$SSEMU_GOLDEN_UPDATE" ]; then
		cp "$tmp/$name.out" "$want"
		echo "updated $want"
	elif [ ! -f "$want" ]; then
		echo "FAIL: $name: no expected output $want"
		fail=1
	elif ! cmp -s "$want" "$tmp/$name.out"; then
		echo "FAIL: $name: output differs from $want:"
		diff -u "$want" "$tmp/$name.out"
		fail=1
	else
		echo "ok: $name"
	fi
	# The calibration targets the scenario claims, so that regenerating
	# the expected output cannot hide a regression.
	sed -n 's/^# check: //p' "$cfg" | while read -r field op bound; do
		case $field in
		*.*)	key=${field%%.*}
			sub=${field#*.}
			v=$(sed -n "s/^$key:.* $sub \([0-9.]*\).*/\1/p" \
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
