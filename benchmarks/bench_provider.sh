#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The provider against libfabric's shm provider, with the same tool in the
# same run: fi_pingpong (libfabric-bin) over FI_EP_RDM, client and server on
# this machine.  Reports 8-byte round-trip latency and 1 MiB bandwidth for
# both and the ratios (goals: latency <= 1.5x shm, bandwidth >= 0.5x shm).
# slingshot_emu runs in virtual clock mode on its own shared fabric.
#
# usage: benchmarks/bench_provider.sh [ITERATIONS_8B] [ITERATIONS_1M] [REPEATS]
#
# On a shared machine the numbers swing with other load.  BENCH_PIN=1 runs
# the server on CPU 0 and the client on CPU 1 (taskset), BENCH_RT=1 also at
# SCHED_FIFO priority 10 (chrt; needs the privilege; the runs are short, and
# the kernel's real-time throttling leaves other tasks 5% meanwhile): the
# same for both providers, so the ratios stay fair.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
iters_small=${1:-20000}
iters_big=${2:-500}
repeats=${3:-3}
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
export FI_SLINGSHOT_EMU_FABRIC=ssemu-bench-$$

# run PROVIDER SIZE ITERS -> prints "usec_per_xfer MB_per_s"
run() {
	local prov=$1 size=$2 iters=$3 out
	timeout 130 ${srv_pre[@]+"${srv_pre[@]}"} fi_pingpong -p "$prov" \
		-e rdm -B "$port" -I "$iters" \
		-S "$size" >/dev/null 2>&1 &
	local srv=$!
	sleep 0.3
	out=$(timeout 120 ${cli_pre[@]+"${cli_pre[@]}"} fi_pingpong -p "$prov" \
		-e rdm -P "$port" \
		-I "$iters" -S "$size" 127.0.0.1 2>&1 | tail -n 1)
	timeout 10 tail --pid="$srv" -f /dev/null || kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null || true
	port=$((port + 1))
	# bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
	echo "$out" | awk '{ print $7, $6 }'
}

# best of $repeats: the machine is shared and noisy
best() {
	local prov=$1 size=$2 iters=$3 field=$4 b="" v i
	for ((i = 0; i < repeats; i++)); do
		v=$(run "$prov" "$size" "$iters" | awk -v f="$field" '{ print $f }')
		if [ -z "$b" ]; then
			b=$v
		elif [ "$field" = 1 ]; then
			b=$(awk -v a="$b" -v c="$v" 'BEGIN { print (c < a) ? c : a }')
		else
			b=$(awk -v a="$b" -v c="$v" 'BEGIN { print (c > a) ? c : a }')
		fi
	done
	echo "$b"
}

shm_lat=$(best shm 8 "$iters_small" 1)
sse_lat=$(best slingshot_emu 8 "$iters_small" 1)
shm_bw=$(best shm 1048576 "$iters_big" 2)
sse_bw=$(best slingshot_emu 1048576 "$iters_big" 2)

printf '%-34s %14s %14s %8s %s\n' "measure (best of $repeats)" shm slingshot_emu ratio goal
printf '%-34s %14s %14s %8s %s\n' "8 B round trip / 2, usec" "$shm_lat" "$sse_lat" \
	"$(awk -v a="$sse_lat" -v b="$shm_lat" 'BEGIN { printf "%.2f", a / b }')" "<= 1.5"
printf '%-34s %14s %14s %8s %s\n' "1 MiB bandwidth, MB/s" "$shm_bw" "$sse_bw" \
	"$(awk -v a="$sse_bw" -v b="$shm_bw" 'BEGIN { printf "%.2f", a / b }')" ">= 0.5"
