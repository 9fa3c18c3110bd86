#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The man page documents exactly the parameters the provider defines:
# compare the FI_SLINGSHOT_EMU_* names fi_info -g lists with those in the
# RUNTIME PARAMETERS section of man/fi_slingshot_emu.7.md.

if ! command -v fi_info >/dev/null 2>&1; then
	echo "SKIP: fi_info not found (Debian: apt-get install libfabric-bin)"
	exit 77
fi
: "${FI_PROVIDER_PATH:=${TOP_BUILDDIR:-.}/prov/.libs}"
export FI_PROVIDER_PATH
md="${TOP_SRCDIR:-.}/man/fi_slingshot_emu.7.md"

defined=$(fi_info -g SLINGSHOT_EMU 2>/dev/null |
	sed -n 's/^# \(FI_SLINGSHOT_EMU_[A-Z_]*\):.*/\1/p' | sort)
documented=$(sed -n '/^# RUNTIME PARAMETERS/,/^# [A-Z]/p' "$md" |
	sed -n 's/^\*\(FI_SLINGSHOT_EMU_[A-Z_]*\)\*$/\1/p' | sort)

if [ -z "$defined" ]; then
	echo "ERROR: fi_info -g SLINGSHOT_EMU lists nothing (provider not loaded?)"
	exit 99
fi
if [ "$defined" != "$documented" ]; then
	echo "FAIL: parameters defined and documented differ"
	echo "defined:";    echo "$defined"
	echo "documented:"; echo "$documented"
	exit 1
fi
echo "$(echo "$defined" | wc -l) parameters, all documented"
