# SPDX-License-Identifier: BSD-2-Clause
#
# Shared part of the study scripts (study/fig14.sh, fig13.sh, incast.sh),
# sourced, not run.  It finds the build, checks that Open MPI and the
# provider are there (exit 77 with a message when not), and runs jobs on a
# shared realtime fabric:
#
#   study_fabric NAME CONFIG   create and hold fabric NAME (realtime clock,
#                              dilation $DILATION) until study_fabric_end
#   study_job NP CLASS PORTS OUT PROGRAM [ARGS...]
#                              run an MPI job in the background on the held
#                              fabric: class CLASS, rank i on the i-th port
#                              of the comma-separated PORTS (an explicit
#                              placement map); output to OUT; sets $job_pid.
#                              PROGRAM is a study program (study/PROGRAM)
#                              or, given as an absolute path, any program
#                              (an unmodified application such as lmp)
#   study_wait PID OUT NP      wait for a job, fail unless it succeeded and
#                              all NP ranks used slingshot_emu
#   study_sample OUT INTERVAL  sample the fabric's counters (stat --json)
#                              and its lag (status --json) into OUT
#   study_fabric_end           stop sampling, let go of the fabric, print
#                              what it saw
#
# Environment: TOP_BUILDDIR, TOP_SRCDIR (default: the tree holding this
# file), FI_PROVIDER_PATH (default: $TOP_BUILDDIR/prov/.libs), MPIRUN,
# STUDY_OUT (directory for outputs and plots; default study-out/<script>),
# DILATION (wall ns per model ns), STUDY_MPI_ARGS (extra mpirun args).

study_name=$(basename "$0" .sh)
here=$(cd "$(dirname "$0")" && pwd)
TOP_SRCDIR=${TOP_SRCDIR:-$(cd "$here/.." && pwd)}
TOP_BUILDDIR=${TOP_BUILDDIR:-$TOP_SRCDIR}

skip() {
	echo "SKIP: $study_name: $*"
	exit 77
}

fail() {
	echo "FAIL: $study_name: $*"
	exit 1
}

log() {
	echo "[$(date +%T)] $*"
}

# --- what the study needs ---------------------------------------------------
study_check() {
	if [ "${HAVE_MPI-1}" = 0 ]; then
		skip "Open MPI not found (configure found no mpicc/mpirun)"
	fi
	MPIRUN=${MPIRUN:-$(command -v mpirun)}
	if [ -z "$MPIRUN" ] || [ ! -x "$MPIRUN" ]; then
		skip "mpirun not found (install openmpi-bin)"
	fi
	FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$TOP_BUILDDIR/prov/.libs}
	export FI_PROVIDER_PATH
	if [ ! -f "$FI_PROVIDER_PATH/libslingshot_emu-fi.so" ]; then
		skip "slingshot_emu provider not built:" \
			"no $FI_PROVIDER_PATH/libslingshot_emu-fi.so"
	fi
	if command -v fi_info >/dev/null &&
	   ! FI_PROVIDER=slingshot_emu fi_info -p slingshot_emu -t FI_EP_RDM \
		2>&1 | grep -q '^provider: slingshot_emu'; then
		skip "fi_info does not list slingshot_emu from $FI_PROVIDER_PATH"
	fi
	SSEMU_TOOL=$TOP_BUILDDIR/util/slingshot-emu
	[ -x "$SSEMU_TOOL" ] || skip "$SSEMU_TOOL is not built"
	for p in "$@"; do
		case $p in
		/*) [ -x "$p" ] || skip "$p is not installed"; continue ;;
		esac
		[ -x "$TOP_BUILDDIR/study/$p" ] ||
			skip "$TOP_BUILDDIR/study/$p is not built (needs" \
				"Open MPI at configure time, then make)"
	done
	STUDY_OUT=${STUDY_OUT:-$TOP_BUILDDIR/study-out/$study_name}
	mkdir -p "$STUDY_OUT" || fail "cannot create $STUDY_OUT"
	# One study at a time on this host ("make -j2 check" would start two):
	# each needs what CPU there is to keep its realtime fabric on time.
	if command -v flock >/dev/null 2>&1; then
		mkdir -p "$TOP_BUILDDIR/study-out" &&
			exec 9>"$TOP_BUILDDIR/study-out/.lock" && flock -w 900 9 ||
			fail "cannot lock $TOP_BUILDDIR/study-out/.lock"
	fi
	study_tmp=$(mktemp -d "${TMPDIR:-/tmp}/ssemu-$study_name.XXXXXX") ||
		fail "mktemp failed"
	study_pids=
	study_fabric_name=
	trap study_cleanup EXIT
	trap 'exit 130' INT TERM
}

# gnuplot makes the plots; without it the study cannot produce its output.
study_need_gnuplot() {
	command -v gnuplot >/dev/null 2>&1 ||
		fail "gnuplot not found: the plots need it" \
			"(Debian: apt-get install gnuplot-nox)"
}

# Kill what we started (by pid, and the ranks of our jobs by our unique
# fabric name), drop our fabric if it was left behind.
study_cleanup() {
	set +e
	for p in $study_pids; do
		kill "$p" 2>/dev/null
	done
	if [ -n "$study_fabric_name" ]; then
		for env in /proc/[0-9]*/environ; do
			if grep -qs "FI_SLINGSHOT_EMU_FABRIC=$study_fabric_name" \
				"$env"; then
				p=${env#/proc/}
				kill -9 "${p%/environ}" 2>/dev/null
			fi
		done
		[ -n "$study_holder" ] && touch "$study_tmp/release"
		sleep 0.3
		"$SSEMU_TOOL" clean --fabric "$study_fabric_name" >/dev/null \
			2>&1
	fi
	rm -rf "$study_tmp"
}

# --- the fabric -------------------------------------------------------------
study_fabric() {
	study_fabric_name=$1
	FI_SLINGSHOT_EMU_FABRIC=$1
	FI_SLINGSHOT_EMU_CONFIG=$2
	FI_SLINGSHOT_EMU_CLOCK=realtime
	FI_SLINGSHOT_EMU_DILATION=$DILATION
	export FI_SLINGSHOT_EMU_FABRIC FI_SLINGSHOT_EMU_CONFIG \
		FI_SLINGSHOT_EMU_CLOCK FI_SLINGSHOT_EMU_DILATION
	unset FI_SLINGSHOT_EMU_PRESET FI_SLINGSHOT_EMU_TCLASS \
		FI_SLINGSHOT_EMU_PORT FI_SLINGSHOT_EMU_PLACEMENT
	rm -f "$study_tmp/release"
	# The holder creates the fabric and keeps it (and its counters)
	# between and after the jobs; it lets go when the release file
	# appears, and prints what the fabric saw.
	"$SSEMU_TOOL" run -- sh -c "while [ ! -e '$study_tmp/release' ]; do
		sleep 0.1; done" >"$study_tmp/holder.out" 2>&1 &
	study_holder=$!
	study_pids="$study_pids $study_holder"
	_i=0
	while ! "$SSEMU_TOOL" status --fabric "$1" >/dev/null 2>&1; do
		_i=$((_i + 1))
		[ $_i -lt 100 ] || fail "fabric $1 did not appear"
		kill -0 "$study_holder" 2>/dev/null ||
			fail "cannot create fabric $1: $(cat "$study_tmp/holder.out")"
		sleep 0.05
	done
	study_samplers=
}

study_fabric_end() {
	for p in $study_samplers; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	study_samplers=
	touch "$study_tmp/release"
	wait "$study_holder"
	# A job stopped at its cap may still be dying when the holder lets
	# go, so the last one out was not the last: remove the segment once
	# nobody uses it (clean leaves a fabric in use alone).
	_i=0
	while [ -e "/dev/shm/$study_fabric_name" ] && [ $_i -lt 50 ]; do
		"$SSEMU_TOOL" clean --fabric "$study_fabric_name" \
			>/dev/null 2>&1
		[ -e "/dev/shm/$study_fabric_name" ] || break
		sleep 0.1
		_i=$((_i + 1))
	done
	study_holder=
	study_fabric_name=
	cat "$study_tmp/holder.out"
}

# Sample the fabric every INTERVAL s into OUT: one line per sample,
# "<epoch seconds> <lag ps> <the stat --json object>", so that counters
# (model time) can be put next to the jobs' output (wall time).
study_sample() {
	(
		while :; do
			lag=$("$SSEMU_TOOL" status --json --fabric \
				"$FI_SLINGSHOT_EMU_FABRIC" 2>/dev/null |
				sed -n 's/.*"lag_ps":\([0-9]*\).*/\1/p')
			st=$("$SSEMU_TOOL" stat --json --fabric \
				"$FI_SLINGSHOT_EMU_FABRIC" 2>/dev/null)
			[ -n "$st" ] && echo "$(date +%s.%N) ${lag:-0} $st"
			sleep "$2"
		done
	) >"$1" &
	study_samplers="$study_samplers $!"
	study_pids="$study_pids $!"
}

# Largest lag seen in a study_sample file, in model microseconds.
study_max_lag_us() {
	awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { printf "%.1f", m / 1e6 }' \
		"$1"
}

# Per-class bandwidth out of one switch port from a study_sample file:
# "<epoch> <model us> <class> <Gb/s in model time>" per sample and class
# (wire bytes, headers included, over model time between samples).
study_port_bw() {
	awk -v sw="$2" -v kind="$3" '
	{
		epoch = $1
		if (!match($0, /"model_time_ps":[0-9]+/))
			next
		t = substr($0, RSTART + 16, RLENGTH - 16) + 0
		pat = "\"switch\":" sw ",\"port\":[0-9]+,\"kind\":" kind ","
		if (!match($0, pat))
			next
		rest = substr($0, RSTART)
		rest = substr(rest, 1, index(rest, "]}"))
		n = 0
		while (match(rest, /"class":"[^"]*","pkts":[0-9]+,"bytes":[0-9]+/)) {
			m = substr(rest, RSTART, RLENGTH)
			rest = substr(rest, RSTART + RLENGTH)
			split(m, f, /[":,]+/)
			cls = f[3]; b = f[7] + 0
			if (have && t > pt)
				printf "%.3f %.3f %s %.3f\n", epoch, t / 1e6, cls,
					(b - pb[cls]) * 8e3 / (t - pt)
			pb[cls] = b
		}
		if (t > pt || !have) { pt = t; have = 1 }
	}' "$1"
}

# Per-NIC receive bandwidth from a study_sample file: "<epoch> <model us>
# port<P> <Gb/s in model time>" per sample and attached NIC (payload bytes).
study_nic_bw() {
	awk '
	{
		epoch = $1
		if (!match($0, /"model_time_ps":[0-9]+/))
			next
		t = substr($0, RSTART + 16, RLENGTH - 16) + 0
		rest = $0
		nic = "\\{\"port\":[0-9]+,\"pid\":[0-9-]+,\"job\":[0-9]+," \
			"[^}]*\"rx_bytes\":[0-9]+"
		while (match(rest, nic)) {
			m = substr(rest, RSTART, RLENGTH)
			rest = substr(rest, RSTART + RLENGTH)
			match(m, /"port":[0-9]+/)
			p = substr(m, RSTART + 7, RLENGTH - 7)
			match(m, /"rx_bytes":[0-9]+/)
			b = substr(m, RSTART + 11, RLENGTH - 11) + 0
			if ((p in pt) && t > pt[p])
				printf "%.3f %.3f port%s %.3f\n", epoch, t / 1e6, p,
					(b - pb[p]) * 8e3 / (t - pt[p])
			pb[p] = b; pt[p] = t
		}
	}' "$1"
}

# Job ids (the launcher's, as the fabric records them) of the NICs seen on
# PORT in a study_sample file, in order of first appearance, one per line.
study_jobs_on_port() {
	grep -o "{\"port\":$2,\"pid\":[0-9-]*,\"job\":[0-9]*" "$1" |
		sed 's/.*"job"://' | awk '!seen[$1]++'
}

# The fabric's telemetry (slingshot-emu report) of the held fabric:
# summary in OUT.txt, CSV files in OUT/.
study_report() {
	"$SSEMU_TOOL" report --fabric "$FI_SLINGSHOT_EMU_FABRIC" \
		--csv "$1" >"$1.txt" 2>&1 ||
		fail "slingshot-emu report failed: $(cat "$1.txt")"
}

# Mean model-time message latency (ns) between the NICs of job JOB, from
# a report's jobpairs.csv.
study_job_lat_ns() {
	awk -F, -v j="$2" '$1 == j && $2 == j { print $4; exit }' \
		"$1/jobpairs.csv"
}

# --- jobs -------------------------------------------------------------------
study_job() {
	_np=$1
	_class=$2
	_out=$4
	case $5 in
	/*) _prog=$5 ;;
	*) _prog=$TOP_BUILDDIR/study/$5 ;;
	esac
	# FI_SLINGSHOT_EMU_PLACEMENT=map:FILE, lines "rank port"
	_map=$study_tmp/job$$.$_np.$(date +%s%N).map
	echo "$3" | tr , '\n' | awk 'NF { print NR - 1, $1 }' >"$_map"
	shift 5
	# shellcheck disable=SC2086 # STUDY_MPI_ARGS is a list of words
	timeout -k 5 "${STUDY_TIMEOUT:-600}" "$MPIRUN" --allow-run-as-root \
		--oversubscribe -np "$_np" \
		--mca pml cm --mca mtl ofi --mca btl self --mca osc ^ucx \
		--mca mtl_ofi_provider_include slingshot_emu \
		--mca mtl_ofi_verbose 1 \
		-x FI_PROVIDER=slingshot_emu -x FI_PROVIDER_PATH \
		-x FI_SLINGSHOT_EMU_FABRIC -x FI_SLINGSHOT_EMU_CONFIG \
		-x FI_SLINGSHOT_EMU_CLOCK -x FI_SLINGSHOT_EMU_DILATION \
		-x FI_SLINGSHOT_EMU_TCLASS="$_class" \
		-x FI_SLINGSHOT_EMU_PLACEMENT="map:$_map" ${STUDY_MPI_ARGS:-} \
		"$_prog" "$@" >"$_out" 2>&1 &
	job_pid=$!
	study_pids="$study_pids $job_pid"
}

study_wait() {
	wait "$1"
	_rc=$?
	if [ $_rc -ne 0 ]; then
		sed 's/^/  | /' "$2"
		fail "job $2 exited with status $_rc"
	fi
	study_used_emu "$2" "$3"
}

# Fail unless all NP ranks of the job whose output is OUT used
# slingshot_emu: study_used_emu OUT NP
study_used_emu() {
	_n=$(grep -c 'mtl:ofi:prov: slingshot_emu$' "$1")
	if [ "$_n" -ne "$2" ]; then
		sed 's/^/  | /' "$1"
		fail "$_n of $2 ranks of $1 used slingshot_emu"
	fi
}

# Wait until a job printed a line starting with WORD (its "running" line).
study_wait_line() {
	_i=0
	while ! grep -q "^$2 " "$1" 2>/dev/null; do
		_i=$((_i + 1))
		if [ $_i -gt 1200 ]; then
			cat "$1"
			fail "no '$2' line from $1 after 60 s"
		fi
		sleep 0.05
	done
}

# Value of key K in the first line of FILE whose first word is REC and
# that contains every further pattern.
field() {
	awk -v rec="$2" -v key="$3" -v pat="${4:-}" '
		$1 == rec && (pat == "" || index($0, pat)) {
			for (i = 2; i <= NF; i++)
				if (index($i, key "=") == 1) {
					print substr($i, length(key) + 2)
					exit
				}
		}' "$1"
}

# awk arithmetic, for the shell
calc() {
	awk "BEGIN { printf \"%.3f\", $* }"
}

# is the awk condition true?  (exit status)
check() {
	awk "BEGIN { exit !($*) }"
}
