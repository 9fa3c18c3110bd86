#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two users, one fabric: as root, a fabric created to be shared with a
# group (slingshot-emu run --share-group) and a service for each of two
# unprivileged users of that group, user A on VNI 10 (service 2), user B
# on VNI 20 (service 3), added with `slingshot-emu service add --uid`.
# One MPI job (2 ranks) of each user runs at the same time, each under
# its own mpirun started as that user (runuser), each checking its data.
# While both run, a crafted process of user B inserts the address of
# user A's rank 0 and sends on B's VNI: the send must fail with
# FI_ENOTCONN and `slingshot-emu stat` must show the drop at A's NIC and
# for A's job; the same process under A's service must be refused
# (FI_EACCES).  Status must show the segment shared (mode 0660, the
# group) and the NICs of both uids, and each VNI must carry traffic.
#
# The users (ssemu-ua, ssemu-ub) and the group (ssemu-share) are created
# when absent and kept for the next run: system accounts without a home
# or a login shell.
# Exit status: 0 pass, 1 fail, 77 skip, 99 error.

dir=$(cd "$(dirname "$0")" && pwd)
TOP_BUILDDIR=${TOP_BUILDDIR:-.}
TOP_BUILDDIR=$(cd "$TOP_BUILDDIR" && pwd)
FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$TOP_BUILDDIR/prov/.libs}
tool="$TOP_BUILDDIR/util/slingshot-emu"
user_a=ssemu-ua
user_b=ssemu-ub
group=ssemu-share

skip() {
	echo "SKIP: two-users: $*"
	exit 77
}

# --- what the test needs -------------------------------------------------
[ "${HAVE_MPI-1}" != 0 ] || skip "Open MPI not found (configure found no mpicc/mpirun)"
[ "$(id -u)" = 0 ] ||
	skip "needs root (it creates users and a group and runs a job as each)"
for t in useradd groupadd usermod runuser getent; do
	command -v "$t" >/dev/null 2>&1 || skip "no $t(8) on this system"
done
for f in "$tool" "$TOP_BUILDDIR/tests/prov/vni_intruder" \
	 "$TOP_BUILDDIR/tests/mpi/jobs"; do
	if [ ! -x "$f" ]; then
		echo "ERROR: two-users: $f is not built"
		exit 99
	fi
done
[ -f "$FI_PROVIDER_PATH/libslingshot_emu-fi.so" ] ||
	skip "slingshot_emu provider not built: no $FI_PROVIDER_PATH/libslingshot_emu-fi.so"

# The group and the users, made once and reused.
if ! getent group "$group" >/dev/null; then
	groupadd -r "$group" 2>/dev/null || getent group "$group" >/dev/null ||
		skip "groupadd $group failed (cannot add groups here)"
fi
for u in $user_a $user_b; do
	if ! id -u "$u" >/dev/null 2>&1; then
		useradd -r -M -d /nonexistent -s /usr/sbin/nologin \
			-G "$group" "$u" 2>/dev/null || id -u "$u" >/dev/null 2>&1 ||
			skip "useradd $u failed (cannot add users here)"
	fi
	if ! id -nG "$u" | tr ' ' '\n' | grep -qx "$group"; then
		usermod -a -G "$group" "$u" ||
			skip "usermod -a -G $group $u failed"
	fi
done
uid_a=$(id -u $user_a)
uid_b=$(id -u $user_b)
gid=$(getent group "$group" | cut -d: -f3)

fabric="ssemu-test-two-users-$$"
# (in /tmp, not $TMPDIR: the users must reach it, and root's TMPDIR may
# be root's alone)
tmp=$(mktemp -d /tmp/ssemu-two-users.XXXXXX) || exit 99
holder=
cleanup() {
	if [ -n "$holder" ]; then
		touch "$tmp/stop"
		wait "$holder"
	fi
	rm -rf "$tmp"
	rm -f "/dev/shm/$fabric"
}
trap cleanup EXIT
# the users read the configuration and the go file here, and each writes
# in its own directory (its HOME and TMPDIR: Open MPI's session files)
chmod 0755 "$tmp"
for u in $user_a $user_b; do
	mkdir "$tmp/$u" && chown "$u" "$tmp/$u" && chmod 0700 "$tmp/$u" ||
		exit 99
done
go="$tmp/go"
cfg="$tmp/fabric.cfg"
echo "preset = \"${FI_SLINGSHOT_EMU_PRESET:-switch}\";" >"$cfg"
chmod 0644 "$cfg"

# as_user USER CMD...: CMD as USER, with its groups, HOME and TMPDIR.
as_user() {
	_u=$1
	shift
	runuser -u "$_u" -- env HOME="$tmp/$_u" TMPDIR="$tmp/$_u" "$@"
}

# The build tree must be readable by the users (each directory on the
# way searchable); a tree they cannot reach (a private home, a 0700 work
# directory) is copied for them to a directory of the test's, mode 0755.
bin=$TOP_BUILDDIR
prov=$FI_PROVIDER_PATH
runmpi="$dir/run-mpi.sh"
reach() {
	as_user "$1" sh -c 'test -x "$1" && test -x "$2" && test -r "$3" &&
		test -r "$4"' sh "$bin/tests/mpi/jobs" \
		"$bin/tests/prov/vni_intruder" "$prov/libslingshot_emu-fi.so" \
		"$runmpi"
}
if ! reach $user_a; then
	echo "NOTE: two-users: $user_a cannot read $TOP_BUILDDIR: copying" \
		"the job's programs and the provider to $tmp/build"
	bin="$tmp/build"
	prov="$bin/prov"
	runmpi="$bin/run-mpi.sh"
	mkdir -p "$bin/tests/mpi" "$bin/tests/prov" "$prov" &&
	cp "$TOP_BUILDDIR/tests/mpi/jobs" "$bin/tests/mpi/" &&
	cp "$TOP_BUILDDIR/tests/prov/vni_intruder" "$bin/tests/prov/" &&
	cp "$FI_PROVIDER_PATH/libslingshot_emu-fi.so" "$prov/" &&
	cp "$dir/run-mpi.sh" "$bin/" &&
	chmod -R a+rX "$bin" || exit 99
	reach $user_a || skip "$user_a cannot reach $tmp/build either"
fi

fail() {
	echo "--- fabric holder:"; cat "$tmp/holder.log"
	echo "--- job of $user_a:"; cat "$tmp/a.log"
	echo "--- job of $user_b:"; cat "$tmp/b.log"
	echo "FAIL: two-users: $*"
	exit 1
}
: >"$tmp/a.log"
: >"$tmp/b.log"

# --- the fabric: root creates it for the group and holds it ----------------
FI_SLINGSHOT_EMU_FABRIC=$fabric FI_SLINGSHOT_EMU_CONFIG=$cfg \
	"$tool" run --share-group "$group" -- \
	sh -c 'while [ ! -e "$1" ]; do sleep 0.1; done' sh "$tmp/stop" \
	>"$tmp/holder.log" 2>&1 &
holder=$!
i=0
until "$tool" status --json --fabric "$fabric" >"$tmp/status0" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 100 ] && kill -0 $holder 2>/dev/null ||
		fail "slingshot-emu run --share-group $group made no fabric"
	sleep 0.1
done
grep -q "\"segment_mode\":\"0660\",\"segment_gid\":$gid,\"shared_across_users\":true" \
	"$tmp/status0" || fail "the segment is not shared with $group: $(cat "$tmp/status0")"
"$tool" service add --id 2 --vni 10 --uid "$uid_a" --fabric "$fabric" &&
"$tool" service add --id 3 --vni 20 --uid "$uid_b" --fabric "$fabric" ||
	fail "slingshot-emu service add failed"

# --- one job per user, at the same time ------------------------------------
common="-x FI_SLINGSHOT_EMU_CONFIG=$cfg -x FI_SLINGSHOT_EMU_PLACEMENT=linear -x SSEMU_JOBS_GO=$go -x SLINGSHOT_DEVICES=sse0"
job() {
	as_user "$1" TOP_BUILDDIR="$bin" FI_PROVIDER_PATH="$prov" \
		SSEMU_MPI_FABRIC="$fabric" FI_SLINGSHOT_EMU_CONFIG="$cfg" \
		SSEMU_MPI_TIMEOUT="${SSEMU_MPI_TIMEOUT:-120}" \
		SSEMU_MPI_ARGS="${SSEMU_MPI_ARGS:-} $common -x SLINGSHOT_VNIS=$2 -x SLINGSHOT_SVC_IDS=$3" \
		sh "$runmpi" 2 jobs
}
job $user_a 10 2 >"$tmp/a.log" 2>&1 &
pid1=$!
job $user_b 20 3 >"$tmp/b.log" 2>&1 &
pid2=$!

. "$dir/two-jobs-lib.sh"
# (the fabric holder has no NIC: the jobs' four are the only ones)
two_jobs_watch "$fabric" "$tmp/status" $pid1 $pid2
irc=none
arc=none
aport=
ajob=
if [ $seen = 1 ]; then
	# user A's rank 0, by the uid status gives each NIC
	line=$(grep -o "\"port\":[0-9]*,\"pid\":[0-9-]*,\"job\":[0-9]*,\"rank\":0,\"endpoints\":[0-9]*,\"alive\":true,\"uid\":$uid_a}" \
		"$tmp/status" | head -1)
	aport=$(echo "$line" | sed -n 's/^"port":\([0-9]*\),.*/\1/p')
	ajob=$(echo "$line" | sed -n 's/.*"job":\([0-9]*\),.*/\1/p')
	intrude() {
		as_user $user_b FI_PROVIDER=slingshot_emu \
			FI_SLINGSHOT_EMU_STORE=shm FI_PROVIDER_PATH="$prov" \
			FI_SLINGSHOT_EMU_CONFIG="$cfg" \
			FI_SLINGSHOT_EMU_FABRIC="$fabric" SLINGSHOT_VNIS=$1 \
			SLINGSHOT_SVC_IDS=$2 SLINGSHOT_DEVICES=sse0 \
			"$bin/tests/prov/vni_intruder" "$aport"
	}
	if [ -n "$aport" ]; then
		# user B on its own VNI: reaches A's NIC, refused there
		intrude 20 3 >"$tmp/intruder" 2>&1
		irc=$?
		# user B under A's service: refused at fi_domain
		intrude 10 2 >"$tmp/intruder2" 2>&1
		arc=$?
		"$tool" stat --json --fabric "$fabric" >"$tmp/stat" 2>&1
		"$tool" stat --fabric "$fabric" >"$tmp/stat.txt" 2>&1
		"$tool" service list --fabric "$fabric" >"$tmp/services" 2>&1
	fi
fi
two_jobs_wait "$go" $pid1 "$tmp/a.log" $pid2 "$tmp/b.log"
touch "$tmp/stop"
wait $holder
hrc=$?
holder=

# --- what the fabric saw ---------------------------------------------------
[ -n "$aport" ] || fail "no rank 0 of uid $uid_a in: $(cat "$tmp/status")"
for u in $uid_a $uid_b; do
	n=$(grep -o "\"alive\":true,\"uid\":$u}" "$tmp/status" | wc -l)
	[ "$n" -eq 2 ] || fail "status shows $n NICs of uid $u, not 2: $(cat "$tmp/status")"
done
grep -q "\"shared_across_users\":true" "$tmp/status" ||
	fail "status does not show the fabric shared: $(cat "$tmp/status")"
cat "$tmp/intruder"
[ "$irc" = 0 ] || fail "user B's send to user A's rank 0 was not refused with FI_ENOTCONN (status $irc)"
grep -q 'Permission denied' "$tmp/intruder2" && [ "$arc" = 99 ] ||
	fail "user B under user A's service was not refused (status $arc): $(cat "$tmp/intruder2")"
drops=$(grep -o "\"port\":$aport,\"pid\":[0-9-]*,\"job\":[0-9]*,[^}]*\"vni_drops\":[0-9]*" \
	"$tmp/stat" | sed 's/.*"vni_drops"://')
[ -n "$drops" ] && [ "$drops" -ge 1 ] ||
	fail "user A's NIC at port $aport shows no VNI drop: $(cat "$tmp/stat")"
grep -q "\"vni_drops\":\[{\"job\":$ajob,\"drops\":[1-9]" "$tmp/stat" ||
	fail "no VNI drop counted for job $ajob: $(cat "$tmp/stat")"
grep -Eq "^  NIC at port $aport \(job $ajob\): [1-9][0-9]* packets dropped for their VNI" \
	"$tmp/stat.txt" || fail "stat's text shows no drop at port $aport: $(cat "$tmp/stat.txt")"
for v in 10 20; do
	grep -Eq "\"vni\":$v,\"pkts\":[0-9]{3,}" "$tmp/stat" ||
		fail "the switch saw little or no traffic on VNI $v: $(cat "$tmp/stat")"
done
! grep -q '"vni":1,' "$tmp/stat" ||
	fail "traffic on the default VNI: $(cat "$tmp/stat")"
# each service held its user's two endpoints, and only that user's
for s in "2 10 $uid_a" "3 20 $uid_b"; do
	set -- $s
	awk -v id=$1 -v vni=$2 '$1 == id && $2 == vni { getline; print; exit }' \
		"$tmp/services" | grep -q "^ *users $3, endpoints 2$" ||
		fail "service $1 does not show uid $3's 2 endpoints: $(cat "$tmp/services")"
done
# the report of the fabric's holder counts the drop for job A
[ "$hrc" = 0 ] || fail "slingshot-emu run exited with status $hrc"
grep -Eq "^  job $ajob: [1-9][0-9]* packets dropped for their VNI" \
	"$tmp/holder.log" || fail "the fabric's report shows no drop for job $ajob"
grep -q "^jobs: PASS" "$tmp/a.log" && grep -q "^jobs: PASS" "$tmp/b.log" ||
	fail "a job did not report its data checked"
grep -h 'PASS' "$tmp/a.log" "$tmp/b.log"
echo "PASS: two-users: uid $uid_a on VNI 10 and uid $uid_b on VNI 20, one" \
	"MPI job each on fabric shared with group $group, both working; uid" \
	"$uid_b's send to uid $uid_a's rank 0 refused, $drops packet(s)" \
	"dropped at port $aport"
exit 0
