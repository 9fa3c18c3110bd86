# SPDX-License-Identifier: BSD-2-Clause
#
# Shared by the two-job tests (sourced, not run): two_jobs_watch waits
# until `slingshot-emu status` shows both jobs' NICs, two_jobs_wait lets
# the jobs finish, two_jobs_nics lists the NICs status saw.  The caller
# sets $tool, and a fail() that prints its logs and exits 1.

# two_jobs_watch FABRIC STATUS PID1 PID2: poll `status --json` into STATUS
# until it shows 4 NICs (seen=1), or a job ended, or 2 minutes passed
# (seen=0).
two_jobs_watch() {
	seen=0
	_i=0
	while [ $_i -lt 1200 ]; do
		if "$tool" status --json --fabric "$1" >"$2" 2>/dev/null &&
		   [ "$(grep -o '"port":' "$2" | wc -l)" -eq 4 ]; then
			seen=1
			return
		fi
		if ! kill -0 "$3" 2>/dev/null || ! kill -0 "$4" 2>/dev/null; then
			return
		fi
		sleep 0.1
		_i=$((_i + 1))
	done
}

# two_jobs_wait GO PID1 LOG1 PID2 LOG2: let the jobs go on to their end;
# exit 77 if one skipped, fail unless both passed and both were seen.
two_jobs_wait() {
	touch "$1"
	wait "$2"
	_rc1=$?
	wait "$4"
	_rc2=$?
	if [ $_rc1 -eq 77 ] || [ $_rc2 -eq 77 ]; then
		grep -h '^SKIP' "$3" "$5" | head -1
		exit 77
	fi
	[ $_rc1 -eq 0 ] || fail "the first job failed (status $_rc1)"
	[ $_rc2 -eq 0 ] || fail "the second job failed (status $_rc2)"
	[ $seen = 1 ] ||
		fail "slingshot-emu status never showed both jobs' 4 NICs"
}

# two_jobs_nics STATUS: a "port pid job rank" line per NIC of STATUS.
two_jobs_nics() {
	grep -o '"port":[0-9]*,"pid":[0-9-]*,"job":[0-9]*,"rank":[0-9-]*' \
		"$1" | sed 's/"port":\([0-9]*\),"pid":\([0-9-]*\),"job":\([0-9]*\),"rank":\([0-9-]*\)/\1 \2 \3 \4/'
}
