#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The push rendezvous (FI_SLINGSHOT_EMU_RNDV_READ=0), the protocol the read
# rendezvous falls back to: test_msg and test_tagged again (their
# idle-sender tests check that the data then waits for the sender),
# test_fault (bad buffers of pushed data), and
# fi_pingpong (if installed) between a process set to 0 and one left at
# the default, so that read offers are answered with a CTS and pushed.

dir="${TOP_BUILDDIR:-.}/tests/prov"
: "${FI_PROVIDER_PATH:=${TOP_BUILDDIR:-.}/prov/.libs}"
export FI_PROVIDER_PATH
status=0
for t in test_msg test_tagged test_fault; do
	if [ ! -x "$dir/$t" ]; then
		echo "ERROR: $dir/$t not built"
		exit 99
	fi
	FI_SLINGSHOT_EMU_RNDV_READ=0 "$dir/$t" || status=$?
done

if ! command -v fi_pingpong >/dev/null 2>&1; then
	echo "fi_pingpong not found: mixed settings not run"
	exit $status
fi
FI_SLINGSHOT_EMU_FABRIC="sset-rndvpush-$$"
export FI_SLINGSHOT_EMU_FABRIC
unset FI_PROVIDER
port=$((40000 + ($$ + 7) % 20000))
out=${TMPDIR:-/tmp}/sse-rndvpush-$$
FI_SLINGSHOT_EMU_RNDV_READ=0 timeout 120 fi_pingpong -p slingshot_emu \
	-e rdm -m tagged -I 20 -c -B "$port" >"$out.server" 2>&1 &
server=$!
sleep 1
timeout 120 fi_pingpong -p slingshot_emu -e rdm -m tagged -I 20 -c \
	-P "$port" 127.0.0.1 >"$out.client" 2>&1
crc=$?
wait "$server"
src=$?
echo "== fi_pingpong, server RNDV_READ=0, client default: client $crc, server $src"
grep -v '^libfabric:' "$out.client"
if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ]; then
	echo "FAIL: mixed rendezvous settings"
	cat "$out.server"
	status=1
fi
rm -f "$out.server" "$out.client"
exit $status
