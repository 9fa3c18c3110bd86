#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Two jobs, one fabric, two VNIs: two concurrent mpiruns (2 ranks each)
# share FI_SLINGSHOT_EMU_FABRIC, job A on VNI 10 (service 2), job B on VNI
# 11 (service 3), handed to them as Slurm does (SLINGSHOT_VNIS,
# SLINGSHOT_SVC_IDS, SLINGSHOT_DEVICES); the services come from the fabric
# configuration file.  While both run, a crafted process with job B's VNI
# inserts the address of job A's rank 0 and sends: the send must fail with
# FI_ENOTCONN, and `slingshot-emu stat --json` must show the drop at job
# A's NIC and for job A.  Both jobs must pass.
# Exit status: 0 pass, 1 fail, 77 skip, 99 error.

dir=$(dirname "$0")
TOP_BUILDDIR=${TOP_BUILDDIR:-.}
tool="$TOP_BUILDDIR/util/slingshot-emu"
intruder="$TOP_BUILDDIR/tests/prov/vni_intruder"
fabric="ssemu-test-two-jobs-vni-$$"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ssemu-two-jobs-vni.XXXXXX") || exit 99
go="$tmp/go"
cfg="$tmp/fabric.cfg"
trap 'rm -rf "$tmp"; rm -f "/dev/shm/$fabric"' EXIT

. "$dir/two-jobs-lib.sh"

fail() {
	echo "--- job A:"; cat "$tmp/a.log"
	echo "--- job B:"; cat "$tmp/b.log"
	echo "FAIL: two-jobs-vni: $*"
	exit 1
}

if [ ! -x "$tool" ] || [ ! -x "$intruder" ]; then
	echo "ERROR: two-jobs-vni: $tool or $intruder is not built"
	exit 99
fi
cat >"$cfg" <<CFG
preset = "${FI_SLINGSHOT_EMU_PRESET:-switch}";
services = (
  { id = 2; vnis = [10]; },
  { id = 3; vnis = [11]; }
);
CFG

FI_SLINGSHOT_EMU_CONFIG=$cfg
SSEMU_MPI_FABRIC=$fabric
common="${SSEMU_MPI_ARGS:-} -x FI_SLINGSHOT_EMU_CONFIG=$cfg -x FI_SLINGSHOT_EMU_PLACEMENT=linear -x SSEMU_JOBS_GO=$go -x SLINGSHOT_DEVICES=sse0"
export FI_SLINGSHOT_EMU_CONFIG SSEMU_MPI_FABRIC
SSEMU_MPI_ARGS="$common -x SLINGSHOT_VNIS=10 -x SLINGSHOT_SVC_IDS=2" \
	"$dir/run-mpi.sh" 2 jobs >"$tmp/a.log" 2>&1 &
pid1=$!
SSEMU_MPI_ARGS="$common -x SLINGSHOT_VNIS=11 -x SLINGSHOT_SVC_IDS=3" \
	"$dir/run-mpi.sh" 2 jobs >"$tmp/b.log" 2>&1 &
pid2=$!

two_jobs_watch "$fabric" "$tmp/status" $pid1 $pid2
irc=none
if [ $seen = 1 ]; then
	# job A: the job of the NICs whose processes have SLINGSHOT_VNIS=10;
	# find it from a rank's environment
	nics=$(two_jobs_nics "$tmp/status")
	aport= ajob=
	for p in $(echo "$nics" | cut -d' ' -f2); do
		if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
		   grep -qx 'SLINGSHOT_VNIS=10'; then
			line=$(echo "$nics" | awk -v p="$p" '$2 == p && $4 == 0')
			[ -n "$line" ] || continue
			aport=$(echo "$line" | cut -d' ' -f1)
			ajob=$(echo "$line" | cut -d' ' -f3)
		fi
	done
	if [ -n "$aport" ]; then
		FI_PROVIDER=slingshot_emu FI_SLINGSHOT_EMU_STORE=shm \
		FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$TOP_BUILDDIR/prov/.libs} \
		FI_SLINGSHOT_EMU_FABRIC=$fabric SLINGSHOT_VNIS=11 \
		SLINGSHOT_SVC_IDS=3 SLINGSHOT_DEVICES=sse0 \
			"$intruder" "$aport" >"$tmp/intruder" 2>&1
		irc=$?
		"$tool" stat --json --fabric "$fabric" >"$tmp/stat" 2>&1
		"$tool" stat --fabric "$fabric" >"$tmp/stat.txt" 2>&1
	fi
fi
two_jobs_wait "$go" $pid1 "$tmp/a.log" $pid2 "$tmp/b.log"
[ -n "$aport" ] || fail "no rank 0 with SLINGSHOT_VNIS=10 among: $nics"
cat "$tmp/intruder"
[ "$irc" = 0 ] || fail "the crafted process's send was not refused (status $irc)"
drops=$(grep -o "\"port\":$aport,\"pid\":[0-9-]*,\"job\":[0-9]*,[^}]*\"vni_drops\":[0-9]*" \
	"$tmp/stat" | sed 's/.*"vni_drops"://')
[ -n "$drops" ] && [ "$drops" -ge 1 ] ||
	fail "job A's NIC at port $aport shows no VNI drop: $(cat "$tmp/stat")"
grep -q "\"vni_drops\":\[{\"job\":$ajob,\"drops\":[1-9]" "$tmp/stat" ||
	fail "no VNI drop counted for job $ajob: $(cat "$tmp/stat")"
grep -Eq "^  NIC at port $aport \(job $ajob\): [1-9][0-9]* packets dropped for their VNI" \
	"$tmp/stat.txt" || fail "stat's text shows no drop at port $aport: $(cat "$tmp/stat.txt")"
# each job's traffic went on its own VNI, none on the default one
for v in 10 11; do
	grep -Eq "\"vni\":$v,\"pkts\":[0-9]{3,}" "$tmp/stat" ||
		fail "the switch saw little or no traffic on VNI $v: $(cat "$tmp/stat")"
done
! grep -q '"vni":1,' "$tmp/stat" ||
	fail "traffic on the default VNI: $(cat "$tmp/stat")"
grep -h 'PASS' "$tmp/a.log" "$tmp/b.log"
echo "PASS: two-jobs-vni: VNI 10 and VNI 11 jobs on one fabric, each" \
	"working; a send from VNI 11 to job A refused, $drops packet(s) dropped" \
	"at port $aport"
exit 0
