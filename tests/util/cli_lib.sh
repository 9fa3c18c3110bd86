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

# refused STATUS EXPECTED_TEXT COMMAND...: the command must exit with
# STATUS and say EXPECTED_TEXT on stderr (its output in $tmp/out and
# $tmp/err)
refused() {
	want_st=$1
	want=$2
	shift 2
	"$@" > "$tmp/out" 2> "$tmp/err"
	st=$?
	if [ $st -ne "$want_st" ] || ! grep -q -- "$want" "$tmp/err"; then
		echo "FAIL: '$*' exited $st (want $want_st), stderr: $(cat "$tmp/err")"
		fail=1
	else
		echo "ok: refused: $*"
	fi
}

# val FILE KEY: the value of KEY in a file of "key value" lines
val() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }
# holds A B CONDITION: the awk CONDITION on a and b is true
holds() { awk -v a="$1" -v b="$2" "BEGIN { exit !($3) }"; }
