#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The provider against libfabric's shm provider, with the same tools in the
# same run, the two taking turns (shm, slingshot_emu, shm, ...) so that a
# change in the machine's load hits both:
#
#  1. fi_pingpong (libfabric-bin) over FI_EP_RDM, client and server on this
#     machine: 8-byte round trip / 2 and 1 MiB bandwidth, best and median
#     of REPEATS runs each, and the ratios (goals: latency <= 1.5x shm,
#     bandwidth >= 0.5x shm); and, with no goal, a 16 KiB round trip / 2
#     (the provider's largest eager message: 8 packets, their CRCs, a
#     send's packet train).  slingshot_emu runs in virtual clock mode on
#     a shared fabric of its own.
#  2. The model's share: one more slingshot_emu run of each size with
#     FI_SLINGSHOT_EMU_MODEL_STATS=1 (each process prints the engine runs
#     it made and their wall time when its domain closes): per transfer
#     (one way of the ping-pong), the emulator's messages, the engine's
#     events, the wall time in the model, and what is left of the one-way
#     time outside the model (the provider, the application, the hand-off
#     between the processes).
#  2a. One process: fi_local_pingpong.c (built here) ping-pongs 8 bytes
#     between two endpoints of one process, over shm and slingshot_emu
#     in turn, and bench_fabric latency gives the emulator's floor: a
#     message's cost with no core crossed, beside what two processes pay.
#  3. Oversubscribed: bench_pairs.c (built here with mpicc) on 8 ranks on
#     the machine's cores, every rank ping-ponging 8 bytes with its
#     partner, in turn over libfabric's shm and over slingshot_emu, both
#     through Open MPI's OFI MTL (pml cm, mtl ofi: the same MPI layers,
#     only the provider differs; ofi_local_comm.c lets the MTL take shm),
#     and over Open MPI's own shared memory (pml ob1, btl vader) as a
#     second reference: one-way latency, mean over the pairs, best and
#     median of REPEATS; twice, with Open MPI yielding the CPU when idle
#     and with it spinning.  Skipped without Open MPI.  Then what a context
#     switch costs on this machine now (perf bench sched pipe on one CPU),
#     the price these runs are made of.
#
# usage: benchmarks/bench_provider.sh [ITERATIONS_8B] [ITERATIONS_1M]
#                                     [REPEATS] [ITERATIONS_PAIRS]
#
# On a shared machine the numbers swing with other load.  BENCH_PIN=1 runs
# the fi_pingpong server on CPU 0 and the client on CPU 1 (taskset),
# BENCH_RT=1 also at SCHED_FIFO priority 10 (chrt; needs the privilege;
# the runs are short, and the kernel's real-time throttling leaves other
# tasks 5% meanwhile): the same for both providers, so the ratios stay
# fair.  BENCH_NP sets the ranks of part 3 (default 8).
#
# BENCH_SHM_DIR=DIR puts slingshot_emu's fabrics in DIR (SSEMU_SHM_DIR)
# instead of /dev/shm; BENCH_HUGE=1 mounts a tmpfs with huge=advise for
# them (needs root; unmounted at the end), where the library backs a
# fabric's tables with 2 MiB pages.  Neither touches shm's segments.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
iters_small=${1:-20000}
iters_big=${2:-500}
repeats=${3:-3}
iters_pairs=${4:-2000}
np=${BENCH_NP:-8}
port=$((20000 + $$ % 20000))

if ! command -v fi_pingpong >/dev/null; then
	echo "bench_provider: fi_pingpong not found (apt-get install libfabric-bin)" >&2
	exit 77
fi
srv_pre=() cli_pre=()
if [ "${BENCH_PIN:-0}" = 1 ] || [ "${BENCH_RT:-0}" = 1 ]; then
	srv_pre=(taskset -c 0) cli_pre=(taskset -c 1)
fi
if [ "${BENCH_RT:-0}" = 1 ]; then
	srv_pre+=(chrt -f 10) cli_pre+=(chrt -f 10)
fi
export FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$top/prov/.libs}
fabric=ssemu-bench-$$
export FI_SLINGSHOT_EMU_FABRIC=$fabric
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_provider.XXXXXX")
huge=
cleanup() {
	rm -f "${SSEMU_SHM_DIR:-/dev/shm}/$fabric" \
		"${SSEMU_SHM_DIR:-/dev/shm}/$fabric"-mpi*
	if [ -n "$huge" ]; then
		umount "$huge" || echo "bench_provider: umount $huge failed" >&2
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
if [ "${BENCH_HUGE:-0}" = 1 ]; then
	mkdir "$tmp/huge"
	if ! mount -t tmpfs -o huge=advise,mode=1777 tmpfs "$tmp/huge"; then
		echo "bench_provider: BENCH_HUGE=1: cannot mount a tmpfs" \
			"with huge=advise (root only)" >&2
		exit 1
	fi
	huge=$tmp/huge
	BENCH_SHM_DIR=$huge
fi
if [ -n "${BENCH_SHM_DIR:-}" ]; then
	export SSEMU_SHM_DIR=$BENCH_SHM_DIR
fi
shm_dir=${SSEMU_SHM_DIR:-/dev/shm}
# (the file system the directory is on, and its huge= option: the last of
# the mounts there is the one in use)
echo "slingshot_emu's fabrics in $shm_dir ($(findmnt -no FSTYPE,OPTIONS \
	--target "$shm_dir" 2>/dev/null | tail -n 1 |
	grep -o '^[a-z0-9]*\|huge=[a-z_]*' | paste -sd' ' || echo '?'))"
# (the CRC-32C path this CPU offers the library, by the features it
# checks: folded on 512-bit registers, or the crc32 instruction's three
# streams; the 16 KiB row moves with it)
if grep -qw vpclmulqdq /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo &&
	grep -qw avx512f /proc/cpuinfo && grep -qw pclmulqdq /proc/cpuinfo; then
	echo "CRC-32C: folded (VPCLMULQDQ, AVX-512)"
elif grep -qw sse4_2 /proc/cpuinfo; then
	echo "CRC-32C: the crc32 instruction, three streams (no VPCLMULQDQ)"
else
	echo "CRC: zlib's CRC-32 (no SSE4.2)"
fi

# run PROVIDER SIZE ITERS: "usec_per_xfer MB_per_s" in $tmp/res (not on
# stdout: a subshell would lose the next port), the processes' stderr in
# $tmp/srv.err and $tmp/cli.err
run() {
	local prov=$1 size=$2 iters=$3 out
	timeout 130 ${srv_pre[@]+"${srv_pre[@]}"} fi_pingpong -p "$prov" \
		-e rdm -B "$port" -I "$iters" \
		-S "$size" >/dev/null 2>"$tmp/srv.err" &
	local srv=$!
	sleep 0.3
	out=$(timeout 120 ${cli_pre[@]+"${cli_pre[@]}"} fi_pingpong -p "$prov" \
		-e rdm -P "$port" \
		-I "$iters" -S "$size" 127.0.0.1 2>"$tmp/cli.err" | tail -n 1)
	timeout 10 tail --pid="$srv" -f /dev/null || kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null || true
	port=$((port + 1))
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	echo "$out" | awk '{ print $7, $6 }' >"$tmp/res"
}
# field N of the last run's result
res() { cut -d' ' -f"$1" "$tmp/res"; }

# best VALUES... (smallest with LOW=1, else largest), median VALUES...
best() {
	printf '%s\n' "$@" | sort -g | if [ "$low" = 1 ]; then head -n 1;
		else tail -n 1; fi
}
median() {
	printf '%s\n' "$@" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2];
			else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }

# row LABEL LOW GOAL SHM_VALUES... -- SSE_VALUES...
row() {
	local label=$1 goal=$3 shm=() sse=() side=shm v sb sm eb em
	low=$2
	shift 3
	for v in "$@"; do
		if [ "$v" = -- ]; then side=sse; continue; fi
		if [ $side = shm ]; then shm+=("$v"); else sse+=("$v"); fi
	done
	sb=$(best "${shm[@]}") sm=$(median "${shm[@]}")
	eb=$(best "${sse[@]}") em=$(median "${sse[@]}")
	printf '%-34s %9s %9s %9s %9s %6s %6s  %s\n' "$label" "$sb" "$sm" \
		"$eb" "$em" "$(ratio "$eb" "$sb")" "$(ratio "$em" "$sm")" "$goal"
}

# header OTHER: the two column pairs and the ratio (slingshot_emu / OTHER)
header() {
	printf '%-34s %19s %19s %13s\n' "" "$1" slingshot_emu ratio
	printf '%-34s %9s %9s %9s %9s %6s %6s  %s\n' measure best median \
		best median best median goal
}

# --- 1. fi_pingpong, alternating -------------------------------------------
shm_lat=() sse_lat=() shm_bw=() sse_bw=() shm_eag=() sse_eag=()
iters_eager=$(((iters_small + 3) / 4))
for ((i = 0; i < repeats; i++)); do
	run shm 8 "$iters_small"
	shm_lat+=("$(res 1)")
	run slingshot_emu 8 "$iters_small"
	sse_lat+=("$(res 1)")
	run shm 16384 "$iters_eager"
	shm_eag+=("$(res 1)")
	run slingshot_emu 16384 "$iters_eager"
	sse_eag+=("$(res 1)")
	run shm 1048576 "$iters_big"
	shm_bw+=("$(res 2)")
	run slingshot_emu 1048576 "$iters_big"
	sse_bw+=("$(res 2)")
done

echo "fi_pingpong, $repeats runs of each, alternating ($(date -u +%F), $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"
header shm
row "8 B round trip / 2, usec" 1 "<= 1.5" "${shm_lat[@]}" -- "${sse_lat[@]}"
row "1 MiB bandwidth, MB/s" 0 ">= 0.5" "${shm_bw[@]}" -- "${sse_bw[@]}"
row "16 KiB round trip / 2, usec" 1 "-" "${shm_eag[@]}" -- "${sse_eag[@]}"

# --- 2. the model's share ----------------------------------------------------
# model SIZE ITERS -> "usec_per_xfer msgs_per_xfer events_per_xfer
# model_usec_per_xfer": a transfer is one way of a ping-pong (ITERS round
# trips: 2 ITERS transfers), an emulator message one message slot (a
# rendezvous is an RTS, the reads and their results, a FIN)
model() {
	local t
	FI_SLINGSHOT_EMU_MODEL_STATS=1 run slingshot_emu "$1" "$2"
	t=$(res 1)
	cat "$tmp/srv.err" "$tmp/cli.err" | awk -v t="$t" -v x=$((2 * $2)) '
		/slingshot_emu model_stats:/ {
			for (i = 3; i <= NF; i++) {
				split($i, kv, "="); v[kv[1]] = kv[2]
			}
			ns += v["model_ns"]; rx += v["rx_msgs"]
			if (v["fabric_events"] > ev) ev = v["fabric_events"]
		}
		END {
			if (!rx) { print t, "?", "?", "?"; exit }
			printf "%s %.1f %.1f %.3f\n", t, rx / x, ev / x,
				ns / x / 1000
		}'
}
echo
echo "the model's share (one slingshot_emu run each, FI_SLINGSHOT_EMU_MODEL_STATS=1)"
printf '%-10s %10s %10s %12s %12s %12s\n' size "usec/xfer" "msgs/xfer" \
	"events/xfer" "model usec" "rest usec"
for s in 8 16384 1048576; do
	case $s in
	8) n=$iters_small ;;
	16384) n=$iters_eager ;;
	*) n=$iters_big ;;
	esac
	model "$s" "$n" >"$tmp/model"
	read -r t x e m <"$tmp/model"
	printf '%-10s %10s %10s %12s %12s %12s\n' "$s B" "$t" "$x" "$e" "$m" \
		"$(awk -v t="$t" -v m="$m" 'BEGIN { printf "%.3f", t - m }')"
done

# --- 2a. one process: no core crossed --------------------------------------
# The same 8-byte ping-pong between two endpoints of one process
# (fi_local_pingpong.c, built here), shm and slingshot_emu alternating, so
# nothing crosses between cores: each provider's own work a message (and
# slingshot_emu's model's); then the emulator's floor, the same in one
# process through the emulator's calls alone (bench_fabric latency).
# Two processes' time less the first is what the crossing costs.
echo
# lp PROVIDER: one run's usec per transfer ("?" if it failed)
lp() {
	${cli_pre[@]+"${cli_pre[@]}"} timeout 120 "$tmp/fi_local_pingpong" \
		"$1" 8 "$iters_small" 2>>"$tmp/lp.err" |
		awk '{ print $2 } END { if (!NR) print "?" }'
}
if cc -O2 -o "$tmp/fi_local_pingpong" \
	"$top/benchmarks/fi_local_pingpong.c" -lfabric 2>"$tmp/cc2.err"; then
	lp_shm=() lp_sse=()
	for ((i = 0; i < repeats; i++)); do
		lp_shm+=("$(lp shm)")
		lp_sse+=("$(lp slingshot_emu)")
	done
	echo "one process (fi_local_pingpong: two endpoints, one thread), $repeats runs of each, alternating"
	header shm
	row "8 B one-way, usec" 1 "-" "${lp_shm[@]}" -- "${lp_sse[@]}"
	if [ -x "$top/benchmarks/bench_fabric" ]; then
		floor=$(${cli_pre[@]+"${cli_pre[@]}"} \
			"$top/benchmarks/bench_fabric" latency \
			--iters "$iters_small" --evict 0 |
			awk '$1 == "floor_oneway_ns" { printf "%.3f", $2 / 1000 }')
		echo "the emulator's floor (bench_fabric latency: one process, the emulator's calls alone, a private store): $floor usec"
	fi
else
	echo "one process: fi_local_pingpong.c did not build ($(head -n 1 "$tmp/cc2.err"))"
fi

# --- 2b. where an 8-byte transfer's time goes --------------------------------
# the emulator's points on each message's path, from both processes
# (SSEMU_TIMELINE, emu/ssemu_timeline.h; bench_timeline's keys are in
# benchmarks/README.md)
timeline=$top/benchmarks/bench_timeline
echo
if [ -x "$timeline" ]; then
	echo "where an 8 B transfer's time goes (one slingshot_emu run, SSEMU_TIMELINE; medians, ns)"
	SSEMU_TIMELINE=$tmp/tl run slingshot_emu 8 "$iters_small"
	if "$timeline" "$tmp"/tl.* >"$tmp/tl.txt"; then
		awk '{ v[$1] = $2 }
		END {
			printf "%-16s %8s %6s %6s %6s %6s %7s %6s\n", "engine run by",
				"messages", "post", "to_run", "drain", "model",
				"deliver", "total"
			n = split("sender receiver other", g, " ")
			for (i = 1; i <= n; i++) {
				k = "runner_" g[i]
				if (!((k "_messages") in v))
					continue
				printf "%-16s %8s %6s %6s %6s %6s %7s %6s\n",
					"the " g[i], v[k "_messages"],
					v[k "_post_ns"], v[k "_to_run_ns"],
					v[k "_drain_ns"], v[k "_model_ns"],
					v[k "_deliver_ns"], v[k "_total_ns"]
			}
			printf "turnaround at the receiver (provider and fi_pingpong) %s ns\n",
				v["turnaround_ns"]
		}' "$tmp/tl.txt"
	else
		echo "timeline: no message followed (see above)"
	fi
else
	echo "timeline: skipped ($timeline not built)"
fi

# --- 3. oversubscribed: bench_pairs on $np ranks ---------------------------
if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
	echo
	echo "oversubscribed: skipped (no mpicc/mpirun)"
	exit 0
fi
mpicc -O2 -o "$tmp/bench_pairs" "$top/benchmarks/bench_pairs.c"
# (Open MPI's OFI MTL asks for FI_REMOTE_COMM, which shm has not: see
# ofi_local_comm.c)
ofi_shm=1
cc -shared -fPIC -O2 -o "$tmp/ofi_local_comm.so" \
	"$top/benchmarks/ofi_local_comm.c" -ldl -lfabric 2>"$tmp/cc.err" ||
	ofi_shm=0
# Open MPI's MPI_Wait either yields the CPU when a poll finds nothing
# (mpi_yield_when_idle: its default when it knows the node has fewer cores
# than ranks) or spins (its default when the slots it was given cover the
# ranks: a hostfile's slots, or a container whose CPU quota hwloc does not
# see).  Both are run, with the setting explicit and no binding (what
# Open MPI does on an oversubscribed node); the provider yields on its own
# now and then (SSE_IDLE_YIELD) whatever the setting.
ofi=(--mca pml cm --mca mtl ofi --mca btl self --mca osc ^ucx)
# pairs TRANSPORT YIELD -> "mean one-way usec, CPU usec a message, context
# switches a message" (empty if the run failed)
pairs() {
	local out
	local mpi=(mpirun --allow-run-as-root --oversubscribe -np "$np"
		--bind-to none --mca mpi_yield_when_idle "$2")
	case $1 in
	vader)
		out=$(timeout 300 "${mpi[@]}" --mca pml ob1 \
			--mca btl self,vader "$tmp/bench_pairs" \
			"$iters_pairs" 8) ;;
	shm)
		out=$(timeout 300 "${mpi[@]}" "${ofi[@]}" \
			--mca mtl_ofi_provider_include shm \
			-x LD_PRELOAD="$tmp/ofi_local_comm.so" -x FI_PROVIDER=shm \
			"$tmp/bench_pairs" "$iters_pairs" 8) ;;
	*)
		out=$(timeout 300 "${mpi[@]}" "${ofi[@]}" \
			--mca mtl_ofi_provider_include slingshot_emu \
			-x FI_PROVIDER=slingshot_emu -x FI_PROVIDER_PATH \
			-x FI_SLINGSHOT_EMU_FABRIC="$fabric-mpi$2-$i" \
			${SSEMU_SHM_DIR:+-x SSEMU_SHM_DIR} \
			"$tmp/bench_pairs" "$iters_pairs" 8) ;;
	esac
	echo "$out" | sed -n 's/.*mean_usec=\([0-9.]*\).*cpu_usec_per_msg=\([0-9.]*\) switches_per_msg=\([0-9.]*\).*/\1 \2 \3/p'
}
# FIELD "mean cpu switches"... -> that field of each (1 latency, 2 CPU usec
# a message, 3 context switches a message)
field() {
	local k=$1 v
	shift
	for v in "$@"; do
		echo "$v" | cut -d' ' -f"$k"
	done
}
for y in 1 0; do
	ofi_p=() sse_p=() vader_p=()
	for ((i = 0; i < repeats; i++)); do
		if [ "$ofi_shm" = 1 ]; then
			v=$(pairs shm "$y" || true)
			[ -n "$v" ] && ofi_p+=("$v")
		fi
		v=$(pairs slingshot_emu "$y")
		[ -n "$v" ] && sse_p+=("$v")
		v=$(pairs vader "$y")
		[ -n "$v" ] && vader_p+=("$v")
	done
	mapfile -t sse_l < <(field 1 ${sse_p[@]+"${sse_p[@]}"})
	echo
	if [ "$y" = 1 ]; then
		how="Open MPI yields when idle (mpi_yield_when_idle 1)"
	else
		how="Open MPI spins when idle (mpi_yield_when_idle 0)"
	fi
	echo "oversubscribed: $np ranks on $(nproc) cores, pairs ping-ponging 8 B, $iters_pairs iterations, $repeats runs, alternating; $how"
	# (where ranks take turns on the cores, a message costs its
	# transport's work and the switches it takes: CPU time over the
	# timed loop, all ranks, a message sent)
	if [ "${#ofi_p[@]}" -gt 0 ]; then
		header "shm (cm, mtl ofi)"
		row "8 B one-way, mean of pairs, usec" 1 "<= 1" \
			$(field 1 "${ofi_p[@]}") -- "${sse_l[@]}"
		row "CPU a message, usec" 1 "-" \
			$(field 2 "${ofi_p[@]}") -- \
			$(field 2 ${sse_p[@]+"${sse_p[@]}"})
		row "context switches a message" 1 "-" \
			$(field 3 "${ofi_p[@]}") -- \
			$(field 3 ${sse_p[@]+"${sse_p[@]}"})
	else
		echo "(shm over Open MPI's OFI MTL: not run, ofi_local_comm.c did not build or shm did not start)"
	fi
	header "ob1+vader"
	row "8 B one-way, mean of pairs, usec" 1 "lower" \
		$(field 1 ${vader_p[@]+"${vader_p[@]}"}) -- "${sse_l[@]}"
done
# What a context switch costs on this machine now: the oversubscribed runs
# are made of them, and a hypervisor's price for one moves from sitting to
# sitting (two processes on one CPU passing a byte through pipes, perf's
# sched pipe benchmark: two switches and two pipe calls a round trip).
echo
if command -v perf >/dev/null &&
	cs=$(taskset -c 0 perf bench sched pipe -l 100000 2>/dev/null |
		awk '/usecs\/op/ { print $1 }') && [ -n "$cs" ]; then
	echo "context switches on this machine: $cs usec a pipe round trip on one CPU (two switches; perf bench sched pipe)"
else
	echo "context switches on this machine: not measured (perf bench sched pipe did not run)"
fi
