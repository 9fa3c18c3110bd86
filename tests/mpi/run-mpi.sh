#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Driver of the MPI integration tests: runs one test program on NP ranks
# with Open MPI's cm PML and ofi MTL forced onto the slingshot_emu provider,
# on a fabric of its own, and fails unless every rank's MTL really picked
# slingshot_emu.  Exit status: 0 pass, 1 fail, 77 skip, 99 usage/build error.
#
# usage: run-mpi.sh NP PROGRAM [ARGS...]
#
# Environment ("make check" sets the first four; the defaults suit a run by
# hand from the top of the build tree):
#   TOP_BUILDDIR       build tree holding tests/mpi/PROGRAM (default: .)
#   FI_PROVIDER_PATH   directory of libslingshot_emu-fi.so
#                      (default: $TOP_BUILDDIR/prov/.libs)
#   MPIRUN, MPICC      Open MPI launcher and compiler (default: from PATH)
#   HAVE_MPI           0 when configure found no Open MPI (then SKIP)
#   SSEMU_MPI_TIMEOUT  seconds before the job is killed (default: 300)
#   SSEMU_MPI_ARGS     extra mpirun arguments, e.g. "-x FI_LOG_LEVEL=warn"
#   SSEMU_MPI_SELFTEST=1  run on ob1 + vader shared memory instead, to check
#                      the test programs themselves without the provider
#   SSEMU_MPI_REQUIRE_PROVIDER=1  a missing or unloadable provider is a
#                      failure, not a skip
#   SSEMU_SHM_DIR      the directory of the fabric's segment (passed to
#                      the ranks; default /dev/shm)
#   SSEMU_MPI_FABRIC   run on this fabric instead of one of its own, to share
#                      it with another job (two-jobs.sh); the caller then
#                      owns the segment and removes it
#   SSEMU_MPI_OSC      one-sided component: unset (Open MPI's choice, no
#                      ucx), "pt2pt" (one-sided over the MTL's messages) or
#                      "rdma" (osc rdma over btl ofi, i.e. the provider's
#                      RMA and atomics; the run fails unless at least
#                      NP-1 ranks report RMA they initiated through
#                      slingshot_emu)

if [ $# -lt 2 ]; then
	echo "usage: $0 NP PROGRAM [ARGS...]" >&2
	exit 99
fi
np=$1
prog=$2
shift 2
name="$prog-np$np${SSEMU_MPI_OSC:+-$SSEMU_MPI_OSC}"

skip() {
	echo "SKIP: $name: $*"
	exit 77
}

fail() {
	echo "FAIL: $name: $*"
	exit 1
}

# A missing provider skips, unless the caller insists on it.
skip_provider() {
	if [ "${SSEMU_MPI_REQUIRE_PROVIDER:-0}" = 1 ]; then
		fail "$* (SSEMU_MPI_REQUIRE_PROVIDER=1)"
	fi
	skip "$*"
}

# --- Open MPI and the test program ------------------------------------------
if [ "${HAVE_MPI-1}" = 0 ]; then
	skip "Open MPI not found (configure found no mpicc/mpirun)"
fi
MPIRUN=${MPIRUN:-$(command -v mpirun)}
MPICC=${MPICC:-$(command -v mpicc)}
if [ -z "$MPIRUN" ] || [ ! -x "$MPIRUN" ] || [ -z "$MPICC" ]; then
	skip "Open MPI not found (need mpicc and mpirun)"
fi
TOP_BUILDDIR=${TOP_BUILDDIR:-.}
bin="$TOP_BUILDDIR/tests/mpi/$prog"
if [ ! -x "$bin" ]; then
	echo "ERROR: $name: $bin is not built (run 'make check')"
	exit 99
fi

# --- transport -----------------------------------------------------------
fabric=${SSEMU_MPI_FABRIC:-ssemu-test-$name-$$}
if [ "${SSEMU_MPI_SELFTEST:-0}" = 1 ]; then
	echo "NOTE: $name: SSEMU_MPI_SELFTEST=1: ob1/vader, not slingshot_emu"
	transport="--mca pml ob1 --mca btl self,vader -x SSEMU_MPI_SELFTEST=1"
else
	FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$TOP_BUILDDIR/prov/.libs}
	export FI_PROVIDER_PATH
	lib="$FI_PROVIDER_PATH/libslingshot_emu-fi.so"
	if [ ! -f "$lib" ]; then
		skip_provider "slingshot_emu provider not built: no $lib"
	fi
	fi_info=$(command -v fi_info)
	if [ -z "$fi_info" ]; then
		echo "NOTE: $name: no fi_info, cannot pre-check the provider"
	elif ! FI_PROVIDER=slingshot_emu "$fi_info" -p slingshot_emu \
			-t FI_EP_RDM 2>&1 | grep -q '^provider: slingshot_emu'; then
		echo "fi_info -p slingshot_emu with FI_PROVIDER_PATH=$FI_PROVIDER_PATH:"
		FI_PROVIDER=slingshot_emu FI_LOG_LEVEL=warn "$fi_info" \
			-p slingshot_emu -t FI_EP_RDM 2>&1 | sed 's/^/  /'
		echo "unresolved symbols (ldd -r; libfabric drops such a provider silently):"
		ldd -r "$lib" 2>&1 | grep -i undefined | sed 's/^/  /'
		skip_provider "fi_info does not list an FI_EP_RDM slingshot_emu" \
			"endpoint from $lib"
	fi
	# pml cm + mtl ofi abort MPI_Init when the MTL cannot open a provider
	# (checked: FI_PROVIDER=nonexistent fails with "PML cm cannot be
	# selected"); FI_PROVIDER leaves libfabric nothing but slingshot_emu,
	# and mtl_ofi_verbose makes each rank print the provider it chose.
	# One-sided: osc rdma takes btl ofi (the provider's RMA) for
	# MPI_Win_create and dynamic windows; each endpoint then logs the RMA
	# it initiated when it closes (FI_LOG_SUBSYS=ep_ctrl, info level).
	case "${SSEMU_MPI_OSC:-}" in
	"") osc="--mca btl self --mca osc ^ucx" ;;
	pt2pt) osc="--mca btl self --mca osc pt2pt" ;;
	rdma) osc="--mca btl self,ofi --mca osc rdma -x FI_LOG_LEVEL=info
		-x FI_LOG_PROV=slingshot_emu -x FI_LOG_SUBSYS=ep_ctrl" ;;
	*) echo "ERROR: $name: SSEMU_MPI_OSC=$SSEMU_MPI_OSC (pt2pt or rdma)"
	   exit 99 ;;
	esac
	transport="--mca pml cm --mca mtl ofi $osc
		--mca mtl_ofi_provider_include slingshot_emu
		--mca mtl_ofi_verbose 1
		-x FI_PROVIDER=slingshot_emu -x FI_PROVIDER_PATH
		-x FI_SLINGSHOT_EMU_FABRIC=$fabric
		${SSEMU_SHM_DIR:+-x SSEMU_SHM_DIR}"
fi

# --- run -----------------------------------------------------------------
timeout=${SSEMU_MPI_TIMEOUT:-300}
log=$(mktemp "${TMPDIR:-/tmp}/ssemu-mpi-$name.XXXXXX") || exit 99
trap 'rm -f "$log"' EXIT
cmd="$MPIRUN --allow-run-as-root --oversubscribe -np $np $transport
	${SSEMU_MPI_ARGS:-} $bin $*"
# shellcheck disable=SC2086 # one line, whitespace collapsed
echo "RUN: $name:" $cmd
start=$(date +%s)
# shellcheck disable=SC2086 # word splitting of $cmd is intended
timeout -k 10 "$timeout" $cmd >"$log" 2>&1
rc=$?
secs=$(($(date +%s) - start))

# The ranks of a killed job may outlive mpirun: end the processes that
# carry this run's unique fabric name, and only those.
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	for env in /proc/[0-9]*/environ; do
		if grep -qs "FI_SLINGSHOT_EMU_FABRIC=$fabric" "$env"; then
			pid=${env#/proc/}
			kill -9 "${pid%/environ}" 2>/dev/null
		fi
	done
fi

# A job that failed or was killed leaves its shared fabric segment behind;
# the name is unique to this run and its processes are gone, so drop it
# (a shared one is its owner's to drop: another job may be on it).
if [ -z "${SSEMU_MPI_FABRIC:-}" ]; then
	rm -f "${SSEMU_SHM_DIR:-/dev/shm}/$fabric"
fi

# On success the MTL's per-rank verbose lines (and the provider's
# endpoint log lines) are summarised, not shown.
mtl_lines='mtl_ofi_component.c:[0-9]*: '
prov_lines='^libfabric:.*:slingshot_emu:ep_ctrl:'
if [ $rc -eq 0 ]; then
	grep -v "$mtl_lines" "$log" | grep -v "$prov_lines"
else
	cat "$log"
fi

if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	fail "timed out after $timeout s (SSEMU_MPI_TIMEOUT); job killed"
elif [ $rc -ne 0 ]; then
	fail "mpirun exited with status $rc after $secs s"
fi
if [ "${SSEMU_MPI_SELFTEST:-0}" != 1 ]; then
	chosen=$(grep -c 'mtl:ofi:prov: slingshot_emu$' "$log")
	other=$(grep 'mtl:ofi:prov: ' "$log" | grep -v 'mtl:ofi:prov: slingshot_emu$')
	if [ "$chosen" -ne "$np" ] || [ -n "$other" ]; then
		grep "$mtl_lines" "$log"
		fail "$chosen of $np ranks report 'mtl:ofi:prov: slingshot_emu'" \
			"${other:+; others used: $other}"
	fi
	echo "MTL: all $np ranks used provider slingshot_emu"
fi
if [ "${SSEMU_MPI_OSC:-}" = rdma ] && [ "${SSEMU_MPI_SELFTEST:-0}" != 1 ]; then
	rma=$(grep -c "$prov_lines.*RMA initiated: " "$log")
	if [ "$rma" -lt $((np - 1)) ] || [ "$rma" -lt 1 ]; then
		grep "$prov_lines" "$log"
		fail "only $rma of $np ranks initiated RMA through" \
			"slingshot_emu: one-sided traffic did not take btl ofi"
	fi
	grep "$prov_lines.*RMA initiated: " "$log" | sed 's/.*<info> /RMA: /'
	echo "RMA: $rma ranks put one-sided traffic through btl ofi and slingshot_emu"
fi
echo "PASS: $name ($secs s)"
exit 0
