#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Run libfabric's conformance suite, fabtests, against the slingshot_emu
# provider of this tree's build, the way fabtests' own runfabtests.sh runs a
# provider: server and client on 127.0.0.1, the quick sets (unit, functional,
# short), the project's exclude file
# (test_configs/slingshot_emu/slingshot_emu.exclude).  Prints the number of
# tests passed, failed and not run, and the commands of the failures.
#
# The complex set (-t complex, or all) is fi_ubertest over the project's
# configuration, test_configs/slingshot_emu/slingshot_emu.test: the unit
# tests (data verified) of every message, tagged, RMA and atomic call the
# provider offers, and latency and bandwidth runs of sends.  It is one
# test to runfabtests.sh, about 15 minutes on a 2-core machine: each of
# its several thousand cases runs in a child of its own (runfabtests.sh
# -k; in one process fi_ubertest 1.17.0 keeps about 6 MB a case, its
# control buffers, and runs out of memory), and the timeout of a test
# process is 1800 s unless -T says otherwise.
#
# fabtests is not part of this tree and cannot be downloaded by CI; point the
# script at a copy:
#
#   FABTESTS_SRC=<dir>   a libfabric source tree (its fabtests/ is used), an
#                        extracted fabtests tree, or a libfabric git
#                        repository (bare or not; FABTESTS_REF, default
#                        v1.17.0, is archived from it).  It is copied and
#                        built under the work directory against the
#                        installed libfabric; the source is not modified.
#   FABTESTS_BIN=<dir>   an installed fabtests' bin directory (with
#                        runfabtests.sh and fi_rdm): no build.
#
# Without either the script exits 77.  It is a developer tool, not part of
# "make check".
#
# Options:
#   -t SETS     runfabtests.sh test sets (default "quick": unit functional
#               short)
#   -e REGEX    exclude more tests (runfabtests.sh -e; may be repeated)
#   -T SECONDS  timeout of each test process (default 120; 1800 with the
#               complex set)
#   -w DIR      work directory: fabtests build, install and run logs
#               (default ${TMPDIR:-/tmp}/sse-fabtests-<uid>)
#   -B DIR      the project's build directory (default: this source tree)
#   -h          this help
#
# Environment: LIBFABRIC_PREFIX (libfabric to build fabtests against; default
# pkg-config's libfabric prefix, else /usr), JOBS (make -j, default 2),
# FABTESTS_ISOLATE (1, the default: run the suite in private PID and mount
# namespaces with its own /dev/shm when unshare(1) allows it; 0: never).
# Variables FI_* of the caller's environment reach the tests (for example
# FI_LOG_LEVEL=warn, or FI_SLINGSHOT_EMU_PRESET=full); they are listed in the
# output.  Unset, the tests see the provider's default fabric.
#
# Nothing is left behind but the work directory: runfabtests.sh's own
# cleanup kills every process named fi_* that ps shows, so the suite runs in
# a PID namespace where ps shows only its own processes and a private tmpfs
# on /dev/shm; where that is not possible, ps is wrapped to show only the
# suite's session, the session's remaining processes are killed by pid at the
# end, and the fabric's shm segment, if the run created it and no process
# maps it any more, is removed.
#
# Exit status: 0 when no test failed, 1 when some did or the suite could not
# run, 77 when no fabtests is given.
set -uo pipefail

prog=fabtests.sh
top=$(cd "$(dirname "$0")/.." && pwd)
exclude_file=$top/test_configs/slingshot_emu/slingshot_emu.exclude
provider=slingshot_emu

die() {
	echo "$prog: $*" >&2
	exit 1
}

usage() {
	sed -n '/^# Run libfabric/,/^# run, 77/s/^# \{0,1\}//p' "$0"
	exit "${1:-0}"
}

# --- inner part: runs runfabtests.sh, possibly inside fresh namespaces ------

# The fabric the tests attach to: its shm segment's name in /dev/shm.
fabric_segment() {
	echo "${FI_SLINGSHOT_EMU_FABRIC:-ssemu-$(id -u)}"
}

# Whether any process maps /dev/shm/$1.
shm_mapped() {
	grep -qsF "/dev/shm/$1" /proc/[0-9]*/maps
}

# Pids of the processes of session $1, but not this shell.
session_pids() {
	ps -o pid= -s "$1" 2>/dev/null | awk -v me="$$" '$1 != me { print $1 }'
}

inner() {
	local sid rc shim real_ps seg before stop_pids private_shm=0

	cd "$SSE_FT_RUNDIR" || exit 1
	if [ "${SSE_FT_NS:-0}" = 1 ]; then
		if mount -t tmpfs -o mode=1777 sse-fabtests-shm /dev/shm \
			2>/dev/null; then
			private_shm=1
		else
			echo "$prog: cannot mount a private /dev/shm;" \
			     "sharing the host's" >&2
		fi
	fi
	seg=$(fabric_segment)
	before=0
	if [ -e "/dev/shm/$seg" ]; then
		before=1
		echo "$prog: warning: fabric $seg exists already: the tests" \
		     "share it with the processes using it" >&2
	fi

	if [ "${SSE_FT_NS:-0}" = 1 ]; then
		# PID 1 of the namespace: every process of the suite dies with it.
		"$SSE_FT_BIN/runfabtests.sh" "$@"
		rc=$?
	else
		# runfabtests.sh kills "ps -eo comm,pid | grep ^fi_": let that ps
		# see only the suite's own session.
		shim=$SSE_FT_RUNDIR/shim
		mkdir -p "$shim"
		real_ps=$(command -v ps)
		cat >"$shim/ps" <<-EOF
		#!/bin/sh
		sid=\$($real_ps -o sid= -p \$\$)
		[ "\$*" = "-eo comm,pid" ] && exec $real_ps -o comm,pid -s \$sid
		exec $real_ps "\$@"
		EOF
		chmod +x "$shim/ps"
		# shellcheck disable=SC2016 # expanded by the inner bash
		PATH=$shim:$PATH setsid -w bash -c \
			'echo $$ >sid; exec "$0" "$@"' \
			"$SSE_FT_BIN/runfabtests.sh" "$@" &
		wait $!
		rc=$?
		sid=$(cat sid 2>/dev/null)
		if [ -n "$sid" ]; then
			stop_pids=$(session_pids "$sid")
			# shellcheck disable=SC2086 # a list of pids
			[ -n "$stop_pids" ] && kill -9 $stop_pids 2>/dev/null
		fi
	fi

	# A test killed in the middle leaves its fabric behind.
	if [ "$private_shm" = 0 ] && [ "$before" = 0 ] &&
	   [ -e "/dev/shm/$seg" ]; then
		sleep 1
		if ! shm_mapped "$seg"; then
			echo "$prog: removing /dev/shm/$seg left by the suite" >&2
			rm -f "/dev/shm/$seg"
		fi
	fi
	return "$rc"
}

if [ "${SSE_FT_INNER:-0}" = 1 ]; then
	inner "$@"
	exit $?
fi

# --- outer part --------------------------------------------------------------

sets=quick
timeout=
workdir=${TMPDIR:-/tmp}/sse-fabtests-$(id -u)
builddir=$top
extra_excl=()

while getopts "t:e:T:w:B:h" opt; do
	case $opt in
	t) sets=$OPTARG ;;
	e) extra_excl+=(-e "$OPTARG") ;;
	T) timeout=$OPTARG ;;
	w) workdir=$OPTARG ;;
	B) builddir=$OPTARG ;;
	h) usage 0 ;;
	*) usage 1 >&2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 0 ] || usage 1 >&2

if [ -z "${FABTESTS_SRC:-}" ] && [ -z "${FABTESTS_BIN:-}" ]; then
	echo "$prog: SKIP: no fabtests given.  Set FABTESTS_SRC to a libfabric" \
	     "source tree (or an extracted fabtests tree, or a libfabric git" \
	     "repository), or FABTESTS_BIN to the bin directory of an" \
	     "installed fabtests; fabtests 1.17.0 is what the exclude file" \
	     "is written for."
	exit 77
fi

builddir=$(cd "$builddir" 2>/dev/null && pwd) ||
	die "no build directory $builddir"
prov_dir=$builddir/prov/.libs
[ -f "$prov_dir/libslingshot_emu-fi.so" ] ||
	die "$prov_dir/libslingshot_emu-fi.so is missing: build the project" \
	    "first (./autogen.sh && ./configure && make)"
[ -f "$exclude_file" ] || die "$exclude_file is missing"
for tool in python3 getopt timeout setsid; do
	command -v "$tool" >/dev/null ||
		die "runfabtests.sh needs $tool, which is not installed"
done
complex_cfg=$top/test_configs/slingshot_emu/slingshot_emu.test
complex_opts=()
case " ${sets//,/ } " in
*" complex "* | *" all "*)
	[ -f "$complex_cfg" ] || die "$complex_cfg is missing"
	complex_opts=(-u "$complex_cfg" -k)
	[ -n "$timeout" ] || timeout=1800
	;;
esac
[ -n "$timeout" ] || timeout=120
mkdir -p "$workdir" || die "cannot create $workdir"
workdir=$(cd "$workdir" && pwd)

# Build fabtests from FABTESTS_SRC into $workdir/install, unless the same
# source was built there already.
build_fabtests() {
	local src=$1 ref=${FABTESTS_REF:-v1.17.0} prefix version stamp log
	local gitdir=""

	src=$(cd "$src" 2>/dev/null && pwd) || die "no directory $src"
	if [ -f "$src/fabtests/configure.ac" ]; then
		src=$src/fabtests
	elif [ ! -f "$src/configure.ac" ]; then
		if git --git-dir="$src" rev-parse --git-dir >/dev/null 2>&1; then
			gitdir=$src
		elif git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
			gitdir=$(git -C "$src" rev-parse --absolute-git-dir)
		else
			die "$src is neither a libfabric tree, a fabtests" \
			    "tree nor a git repository"
		fi
	fi

	prefix=${LIBFABRIC_PREFIX:-$(pkg-config --variable=prefix libfabric \
		2>/dev/null)}
	prefix=${prefix:-/usr}
	[ -f "$prefix/include/rdma/fabric.h" ] ||
		die "no libfabric headers in $prefix/include (set" \
		    "LIBFABRIC_PREFIX; Debian: apt-get install libfabric-dev)"
	for tool in autoreconf automake libtoolize make cc; do
		command -v "$tool" >/dev/null ||
			die "building fabtests needs $tool (Debian: apt-get" \
			    "install autoconf automake libtool make gcc)"
	done

	if [ -n "$gitdir" ]; then
		stamp="git $gitdir $(git --git-dir="$gitdir" rev-parse \
			"$ref^{commit}" 2>/dev/null) $prefix"
	else
		stamp="dir $src $(find "$src" -newer "$src/configure.ac" \
			-name '*.[ch]' 2>/dev/null | wc -l) $prefix"
	fi
	if [ -x "$workdir/install/bin/runfabtests.sh" ] &&
	   [ "$(cat "$workdir/stamp" 2>/dev/null)" = "$stamp" ]; then
		echo "$prog: fabtests already built in $workdir/install"
		return 0
	fi

	rm -rf "$workdir/src" "$workdir/install" "$workdir/stamp"
	mkdir -p "$workdir/src"
	if [ -n "$gitdir" ]; then
		echo "$prog: fabtests from $gitdir at $ref"
		git --git-dir="$gitdir" archive "$ref" fabtests |
			tar -x -C "$workdir/src" ||
			die "cannot archive fabtests at $ref from $gitdir"
		if ! { mv "$workdir/src/fabtests" "$workdir/src.tmp" &&
		       rmdir "$workdir/src" &&
		       mv "$workdir/src.tmp" "$workdir/src"; }; then
			die "cannot unpack fabtests in $workdir"
		fi
	else
		echo "$prog: fabtests from $src"
		cp -a "$src/." "$workdir/src" || die "cannot copy $src"
	fi
	version=$(sed -n 's/^AC_INIT(\[fabtests\], *\[\([^]]*\)\].*/\1/p' \
		"$workdir/src/configure.ac")
	case $version in
	1.17.*) ;;
	*) echo "$prog: warning: fabtests $version; the exclude file is" \
		"written for 1.17.0" >&2 ;;
	esac
	log=$workdir/build.log
	echo "$prog: building fabtests $version against $prefix (log: $log)"
	(
		set -e
		cd "$workdir/src"
		# A copy of a tree configured in place: start from its sources.
		[ ! -f Makefile ] || make distclean >/dev/null 2>&1 || true
		[ -x configure ] || ./autogen.sh
		./configure --with-libfabric="$prefix" \
			--prefix="$workdir/install"
		make -j"${JOBS:-2}"
		make install
	) >"$log" 2>&1 || {
		tail -n 30 "$log" >&2
		die "building fabtests failed; see $log"
	}
	echo "$stamp" >"$workdir/stamp"
}

if [ -n "${FABTESTS_BIN:-}" ]; then
	bin=$(cd "$FABTESTS_BIN" 2>/dev/null && pwd) ||
		die "no directory $FABTESTS_BIN"
else
	build_fabtests "$FABTESTS_SRC"
	bin=$workdir/install/bin
fi
for f in runfabtests.sh fi_rdm fi_getinfo_test; do
	[ -x "$bin/$f" ] || die "$bin/$f is missing: not a fabtests bin" \
				"directory"
done

rundir=$(mktemp -d "$workdir/run.$(date -u +%Y%m%d-%H%M%S).XXXX") ||
	die "cannot create a run directory in $workdir"
log=$rundir/runfabtests.log

# Private PID and mount namespaces, as root or in a user namespace.
ns=()
if [ "${FABTESTS_ISOLATE:-1}" != 0 ] && command -v unshare >/dev/null; then
	if unshare -m -p -f --mount-proc true 2>/dev/null; then
		ns=(unshare -m -p -f --mount-proc)
	elif unshare -r -m -p -f --mount-proc true 2>/dev/null; then
		ns=(unshare -r -m -p -f --mount-proc)
	fi
fi

echo "$prog: provider $provider from $prov_dir"
echo "$prog: fabtests from $bin, sets: $sets, exclude file: $exclude_file"
env_fi=$(env | grep '^FI_' | grep -v '^FI_PROVIDER_PATH=' | sort |
	paste -sd ' ')
echo "$prog: FI_* environment: ${env_fi:-(none: the default fabric)}"
if [ ${#ns[@]} -gt 0 ]; then
	echo "$prog: isolated: ${ns[*]}, private /dev/shm"
else
	echo "$prog: not isolated (shared /dev/shm, ps limited to the session)"
fi
echo "$prog: running (log: $log)"

start=$(date +%s)
SSE_FT_INNER=1 SSE_FT_NS=$([ ${#ns[@]} -gt 0 ] && echo 1 || echo 0) \
SSE_FT_RUNDIR=$rundir SSE_FT_BIN=$bin FI_PROVIDER_PATH=$prov_dir \
PATH=$bin:$PATH \
	"${ns[@]}" "$0" -vvv -T "$timeout" -p "$bin" -f "$exclude_file" \
	"${extra_excl[@]}" ${complex_opts[@]+"${complex_opts[@]}"} \
	-t "$sets" -s 127.0.0.1 -c 127.0.0.1 "$provider" \
	>"$log" 2>&1
elapsed=$(( $(date +%s) - start ))

# runfabtests.sh -v prints YAML: "- name: <test>", "  result: <result>", and
# the commands and outputs of each test.
results=$rundir/results.txt
# Each record ends at the next one or at the closing border.
awk '
	function flush() {
		if (name != "")
			print res "\t" name "\t" scmd "\t" ccmd
		name = ""
	}
	/^- name: / { flush(); name = $0; sub(/^- name: +/, "", name);
		      sub(/ -p "slingshot_emu"$/, "", name);
		      res = ""; scmd = ""; ccmd = "" }
	/^  result: / { res = $2 }
	/^  server_cmd: / { scmd = $0; sub(/^  server_cmd: /, "", scmd) }
	/^  client_cmd: / { ccmd = $0; sub(/^  client_cmd: /, "", ccmd) }
	/^# -+$/ { flush() }
	END { flush() }
' "$log" >"$results"

count() {
	awk -F'\t' -v r="$1" '$1 == r { n++ } END { print n + 0 }' "$results"
}
npass=$(count Pass)
nfail=$(count Fail)
nnotrun=$(count Notrun)
nexcl=$(count Excluded)
total=$(wc -l <"$results")

echo
echo "fabtests $sets against $provider: $npass passed, $nfail failed," \
     "$((nnotrun + nexcl)) not run ($nexcl excluded, $nnotrun returning" \
     "-FI_ENODATA or -FI_ENOSYS) of $total, in $elapsed s"
if [ "$nfail" -gt 0 ]; then
	echo "Failed:"
	awk -F'\t' '$1 == "Fail" {
		print "  " $2
		if ($3 != "") print "    server: " $3
		if ($4 != "") print "    client: " $4
	}' "$results"
fi
if [ "$nnotrun" -gt 0 ]; then
	echo "Not run (the provider returned -FI_ENODATA or -FI_ENOSYS):"
	awk -F'\t' '$1 == "Notrun" { print "  " $2 }' "$results"
fi
echo "Outputs of every test: $log"

if [ "$total" -eq 0 ]; then
	echo "$prog: runfabtests.sh ran no test; the end of its output:" >&2
	tail -n 20 "$log" >&2
	exit 1
fi
[ "$nfail" -eq 0 ]
