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
