#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The message and tagged tests again with FI_SLINGSHOT_EMU_RNDV_READ=0:
# every rendezvous then pushes its data after the CTS, the protocol the
# read rendezvous falls back to (their idle-sender tests check that the
# data then waits for the sender).

dir="${TOP_BUILDDIR:-.}/tests/prov"
FI_SLINGSHOT_EMU_RNDV_READ=0
export FI_SLINGSHOT_EMU_RNDV_READ
status=0
for t in test_msg test_tagged; do
	if [ ! -x "$dir/$t" ]; then
		echo "ERROR: $dir/$t not built"
		exit 99
	fi
	"$dir/$t" || status=$?
done
exit $status
