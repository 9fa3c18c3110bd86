#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# fi_pingpong (libfabric-bin) between two processes over slingshot_emu:
# RDM endpoints, untagged and tagged, and DGRAM endpoints, every default
# size with data checks (-c).  fi_pingpong exchanges addresses over its own TCP control socket,
# so this also checks that fi_getname / fi_av_insert / hints->dest_addr
# work for a generic libfabric application.  Skips (77) without
# fi_pingpong.

if ! command -v fi_pingpong >/dev/null 2>&1; then
	echo "SKIP: fi_pingpong not found (Debian: apt-get install libfabric-bin)"
	exit 77
fi

: "${FI_PROVIDER_PATH:=${TOP_BUILDDIR:-.}/prov/.libs}"
if [ ! -f "$FI_PROVIDER_PATH/libslingshot_emu-fi.so" ]; then
	echo "ERROR: no libslingshot_emu-fi.so in $FI_PROVIDER_PATH"
	exit 99
fi
export FI_PROVIDER_PATH
FI_SLINGSHOT_EMU_FABRIC="sset-pp-$$"
export FI_SLINGSHOT_EMU_FABRIC
unset FI_PROVIDER

port=$((40000 + $$ % 20000))
out=${TMPDIR:-/tmp}/sse-pingpong-$$
status=0

for run in rdm:msg rdm:tagged dgram:msg; do
	ep=${run%:*}
	mode=${run#*:}
	port=$((port + 1))
	timeout 120 fi_pingpong -p slingshot_emu -e "$ep" -m "$mode" -I 100 \
		-c -B "$port" >"$out.server" 2>&1 &
	server=$!
	sleep 1
	timeout 120 fi_pingpong -p slingshot_emu -e "$ep" -m "$mode" -I 100 \
		-c -P "$port" 127.0.0.1 >"$out.client" 2>&1
	crc=$?
	wait "$server"
	src=$?
	echo "== fi_pingpong -e $ep -m $mode -c: client $crc, server $src"
	grep -v '^libfabric:' "$out.client"
	if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ]; then
		echo "FAIL: fi_pingpong -e $ep -m $mode"
		echo "-- server output:"
		cat "$out.server"
		status=1
	fi
done
rm -f "$out.server" "$out.client"
exit $status
