#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The model's prefetches are in the code the compiler made.  A helper
# whose only effect is __builtin_prefetch looks to GCC like a function
# without side effects, and every call to it is dropped unless it is
# inlined first (SSEMU_PREFETCH_FN): the build succeeds, the results are
# the same, and the model runs slower on a large fabric.  So: every source
# of the model that asks for lines has prefetch instructions in its
# object, and the event dispatch of the provider's library asks for the
# next event's lines.

top="${TOP_BUILDDIR:-.}"
src="${srcdir:-.}"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

. "$(dirname "$0")/../util/cli_lib.sh"

command -v objdump > /dev/null ||
	{ echo "SKIP: objdump (binutils) is not installed"; exit 77; }

# prefetches FILE [FUNCTION]: prefetch instructions in FILE, or in
# FUNCTION of it
prefetches() {
	objdump -d --no-show-raw-insn "$1" > "$tmp/dis" 2> /dev/null ||
		{ echo 0; return; }
	if [ -n "$2" ]; then
		awk -v f="<$2>:" '$2 == f { on = 1; next } on && /^$/ { exit }
			on && /prefetch/ { n++ } END { print n + 0 }' "$tmp/dis"
	else
		grep -c prefetch "$tmp/dis"
	fi
}

n=0
for c in $(grep -l __builtin_prefetch "$src"/emu/*.c); do
	b=$(basename "$c" .c)
	o="$top/emu/.libs/emu_libssemu_la-$b.o"
	[ -f "$o" ] || o="$top/emu/emu_libssemu_la-$b.o"
	[ -f "$o" ] || { echo "SKIP: $o not built"; exit 77; }
	check "$b.c's prefetches are in its object" \
		holds "$(prefetches "$o")" 0 'a > 0'
	n=$((n + 1))
done
check "the model has sources that prefetch ($n)" holds "$n" 0 'a >= 3'

# (a file's count alone would pass with one of its helpers dropped: the
# switch's packet arrival asks for the lines upstream and downstream)
o="$top/emu/.libs/emu_libssemu_la-ssemu_switch.o"
[ -f "$o" ] || o="$top/emu/emu_libssemu_la-ssemu_switch.o"
check "a packet's ready asks for the ports upstream and downstream" \
	holds "$(prefetches "$o" sw_ready)" 0 'a >= 2'

so="$top/prov/.libs/libslingshot_emu-fi.so"
[ -f "$so" ] || { echo "SKIP: $so not built"; exit 77; }
check "the provider's event dispatch asks for the next event's lines" \
	holds "$(prefetches "$so" ssemu_model_dispatch)" 0 'a >= 3'

exit $fail
