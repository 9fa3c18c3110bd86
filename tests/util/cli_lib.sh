# SPDX-License-Identifier: BSD-2-Clause
#
# Shared by the command-line tests (sourced, not run): each sets $fail to
# 0 first and exits with it.

check() {	# check DESCRIPTION COMMAND...: the command must succeed
	desc=$1
	shift
	if ! "$@"; then
		echo "FAIL: $desc"
		fail=1
	else
		echo "ok: $desc"
	fi
}
