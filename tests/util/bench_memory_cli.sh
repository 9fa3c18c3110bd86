#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# bench_memory from the outside: a short walk prints every key with a
# sane value, more walkers than one share the loads between them, and bad
# arguments get a clear message and exit status 2.  Never the timings
# themselves beyond being positive: the machine is shared.

bm="${TOP_BUILDDIR:-.}/benchmarks/bench_memory"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

. "$(dirname "$0")/../util/cli_lib.sh"

[ -x "$bm" ] || { echo "SKIP: $bm not built"; exit 77; }

o="$tmp/out"
"$bm" --size 4 --loads 200000 > "$o" ||
	{ echo "FAIL: bench_memory --size 4"; cat "$o"; exit 1; }
check "every line is 'key value'" awk 'NF != 2 { exit 1 }' "$o"
for k in size_mib chains huge_pages loads ns_per_load ns_per_chain_load; do
	check "key $k reported" test -n "$(val "$o" $k)"
done
check "one walker: 4 MiB, 200000 loads, huge pages" \
	test "$(val "$o" size_mib) $(val "$o" chains) $(val "$o" loads) $(val "$o" huge_pages)" = "4 1 200000 1"
check "a load takes some time" holds "$(val "$o" ns_per_load)" 0 'a > 0'
check "one walker: ns a load is ns a walker's load" \
	test "$(val "$o" ns_per_load)" = "$(val "$o" ns_per_chain_load)"

"$bm" --size 4 --chains 3 --loads 100000 --small-pages > "$o" ||
	{ echo "FAIL: bench_memory --chains 3"; cat "$o"; exit 1; }
check "three walkers: the loads a whole number of rounds (99999)" \
	test "$(val "$o" loads)" = 99999
check "small pages reported" test "$(val "$o" huge_pages)" = 0
check "three walkers: a walker waits for three loads' time" \
	holds "$(val "$o" ns_per_chain_load)" "$(val "$o" ns_per_load)" \
	'a > 2.9 * b && a < 3.1 * b'

bad() {	# bad EXPECTED_TEXT ARGS...
	want=$1
	shift
	refused 2 "$want" "$bm" "$@"
}
bad "bad argument '0'" --size 0
bad "bad argument '65537'" --size 65537
bad "bad argument 'x'" --size x
bad "bad argument '-1'" --chains -1
bad "bad argument '33'" --chains 33
bad "bad argument '999'" --loads 999
bad "bad argument '--bogus'" --bogus
bad "bad argument '--size'" --size

[ $fail -eq 0 ] && echo "PASS: bench_memory reports and refuses as it should"
exit $fail
