#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# slingshot-emu service and run --vni from the outside: the configuration
# file's services and the default one listed; add, list and rm by the
# owner; bad values refused with a clear error; `run --vni` hands the job
# SLINGSHOT_VNIS/SLINGSHOT_SVC_IDS/SLINGSHOT_DEVICES under a service made
# for it (listed while the job runs); bad --vni/--service values refused;
# run --share-group creates the fabric 0660 with that group (as root),
# and refuses a group that does not exist.

tool="${TOP_BUILDDIR:-.}/util/slingshot-emu"
tmp=$(mktemp -d) || exit 99
fabric="ssemu-test-service-$$"
trap 'rm -rf "$tmp"; rm -f "/dev/shm/$fabric"' EXIT
fail=0

. "$(dirname "$0")/../util/cli_lib.sh"

cat >"$tmp/fabric.cfg" <<CFG
preset = "switch";
services = ( { id = 7; vnis = [70, 71]; tclasses = ["BULK_DATA"]; max_eps = 2; } );
CFG
FI_SLINGSHOT_EMU_CONFIG="$tmp/fabric.cfg"
FI_SLINGSHOT_EMU_FABRIC=$fabric
export FI_SLINGSHOT_EMU_CONFIG FI_SLINGSHOT_EMU_FABRIC

# The job: what it sees of its fabric and its variables, while the tool
# holds the fabric.
cat >"$tmp/job.sh" <<JOB
#!/bin/sh
t="$tool"
f="$fabric"
env | grep '^SLINGSHOT_' | sort >"$tmp/env"
"\$t" service list --fabric "\$f" >"$tmp/list1" 2>&1 || exit 11
"\$t" service add --id 9 --vni 90 --uid 12345 --fabric "\$f" || exit 12
"\$t" service add --id 9 --vni 91 --fabric "\$f" 2>"$tmp/dup" && exit 13
"\$t" service add --id 10 --vni 0 --fabric "\$f" 2>"$tmp/vni0" && exit 14
"\$t" service add --id 10 --vni 5 --tc NOPE --fabric "\$f" 2>"$tmp/tc" && exit 15
"\$t" service add --vni 5 --fabric "\$f" 2>"$tmp/noid" && exit 16
"\$t" service list --fabric "\$f" >"$tmp/list2" 2>&1 || exit 17
"\$t" service rm 9 --fabric "\$f" || exit 18
"\$t" service rm 9 --fabric "\$f" 2>"$tmp/rm2" && exit 19
"\$t" service list --fabric "\$f" >"$tmp/list3" 2>&1 || exit 20
exit 0
JOB
chmod +x "$tmp/job.sh"
"$tool" run --vni 42 -- "$tmp/job.sh" >"$tmp/run.out" 2>&1
rc=$?
check "run --vni: the job passed (status $rc)" test $rc = 0
check "run --vni: a service made for the job" \
	grep -q '^slingshot-emu: service 1000 for VNI 42' "$tmp/run.out"
check "run --vni: SLINGSHOT_* set for the job" test "$(cat "$tmp/env")" = \
"SLINGSHOT_DEVICES=sse0
SLINGSHOT_SVC_IDS=1000
SLINGSHOT_VNIS=42"
check "list: the default, the file's and the job's service" \
	test "$(grep -c '^  [0-9]' "$tmp/list1")" = 3
check "list: the file's service" \
	grep -q '^  7      70,71           BULK_DATA$' "$tmp/list1"
check "list: its limit" grep -q 'users any, endpoints 0 of 2' "$tmp/list1"
check "list: the job's service belongs to this user" sh -c \
	"grep -A1 '^  1000   42 ' '$tmp/list1' | grep -q 'users $(id -u),'"
check "add: listed with its user" grep -q 'users 12345,' "$tmp/list2"
check "add: a taken id refused" grep -q 'a service has that id' "$tmp/dup"
check "add: VNI 0 refused" grep -q 'out of range' "$tmp/vni0"
check "add: an unknown class refused" grep -q "no class 'NOPE'" "$tmp/tc"
check "add: an id is needed" grep -q 'are needed' "$tmp/noid"
check "rm: gone" sh -c "! grep -q '^  9 ' '$tmp/list3'"
check "rm: twice refused" grep -q 'no such service' "$tmp/rm2"

"$tool" run --vni 0 -- true 2>"$tmp/e1"
check "run --vni 0 refused" test $? = 2
"$tool" run --vni x -- true 2>"$tmp/e2"
check "run --vni x refused" test $? = 2
"$tool" run --service 3 -- true 2>"$tmp/e3"
check "run --service without --vni refused" grep -q 'needs --vni' "$tmp/e3"
"$tool" run --vni 2>"$tmp/e4"
check "run --vni without a value refused" test $? = 2
"$tool" service list --fabric "nonexistent-$$" 2>"$tmp/e5"
check "list: no such fabric" test $? = 1
"$tool" service frob 2>"$tmp/e6"
check "an unknown subcommand refused" test $? = 2

# --share-group: bad groups refused; as root, the fabric it creates is
# 0660 with that group while the job runs, and the job sees it so
"$tool" run --share-group no-such-group-$$ -- true 2>"$tmp/e7"
check "run --share-group: an unknown group refused" test $? = 2
check "run --share-group: the group named" \
	grep -q "no group named \"no-such-group-$$\"" "$tmp/e7"
"$tool" run --share-group 2>"$tmp/e8"
check "run --share-group without a value refused" test $? = 2
if [ "$(id -u)" = 0 ]; then
	FI_SLINGSHOT_EMU_FABRIC="$fabric-g" "$tool" run --share-group 64999 \
		-- stat -c '%a %g' "/dev/shm/$fabric-g" >"$tmp/g.out" 2>&1
	check "run --share-group: mode 660, group 64999" \
		grep -q '^660 64999$' "$tmp/g.out"
	check "run --share-group: removed after the job" \
		test ! -e "/dev/shm/$fabric-g"
	# status, from inside the job, shows the mode and the group
	FI_SLINGSHOT_EMU_FABRIC="$fabric-g" "$tool" run --share-group 64999 \
		-- sh -c '"$0" status --fabric "$1"; "$0" status --json \
		--fabric "$1"' "$tool" "$fabric-g" >"$tmp/gs.out" 2>&1
	check "status: segment mode 0660, group 64999, shared" \
		grep -q 'segment mode 0660.*group 64999.*shared across users' \
		"$tmp/gs.out"
	check "status --json: segment mode and group" \
		grep -q '"segment_mode":"0660","segment_gid":64999,"shared_across_users":true' \
		"$tmp/gs.out"
else
	echo "SKIP: run --share-group on a real group needs root"
fi

[ $fail = 0 ] && echo "PASS: service_cli"
exit $fail
