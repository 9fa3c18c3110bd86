#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The model's speed against BookSim2 in the same invocation: packet-hops per
# CPU second of BookSim2's 1,056-node Dragonfly (dragonflynew, k = 4: 4
# hosts and 4 global links per router, 8 routers a group, 33 groups), UGAL
# routing, uniform traffic at 0.5 flits per node per cycle, 10-flit
# packets, and of `bench_fabric model --preset shandy --routing ugal` at
# 0.5 and 0.2 offered load.  The runs alternate (BookSim2, ours at 0.5,
# ours at 0.2), BENCH_ROUNDS times, and the table gives each run, then
# the median of each and the ratio ours / BookSim2.
#
#   benchmarks/bench_booksim.sh [BOOKSIM]
#
# BOOKSIM (argument or environment): the built BookSim2 binary
# (src/booksim of https://github.com/booksim/booksim2); without it the
# script exits 77.  Environment: BENCH_FABRIC (default: bench_fabric next
# to this script), BENCH_ROUNDS (3), BOOKSIM_SAMPLE_PERIOD (cycles per
# BookSim2 sample period, 400), BENCH_TIME (bench_fabric --time, model us,
# 60), BENCH_KEEP=DIR (keep BookSim2's config, output and stats there).
#
# BookSim2's packet-hops: its stats file's hop histogram counts, exactly,
# the packets generated in the measured periods (all of them delivered by
# the drain before it exits) and their router traversals.  The one warm-up
# period generates packets at the same rate (its sources are unbounded
# queues fed by a Bernoulli process), so the run's packet-hops are the
# measured ones times (warm-up + measured periods) / measured periods.
# Its CPU time is the whole process's (user + system), setup and drain
# included; ours is bench_fabric's `cpu_s` (the timed part and its drain).

set -u

BOOKSIM=${1:-${BOOKSIM:-}}
if [ -z "$BOOKSIM" ] || [ ! -x "$BOOKSIM" ]; then
	echo "bench_booksim: no BookSim2 binary (set BOOKSIM=/path/to/booksim" \
	     "or pass it as the first argument); skipped" >&2
	exit 77
fi
if [ ! -x /usr/bin/time ]; then
	echo "bench_booksim: /usr/bin/time (GNU time) is needed for the CPU" \
	     "time of BookSim2; skipped" >&2
	exit 77
fi
BENCH_FABRIC=${BENCH_FABRIC:-$(dirname "$0")/bench_fabric}
if [ ! -x "$BENCH_FABRIC" ]; then
	echo "bench_booksim: $BENCH_FABRIC not built (run make)" >&2
	exit 1
fi
ROUNDS=${BENCH_ROUNDS:-3}
PERIOD=${BOOKSIM_SAMPLE_PERIOD:-400}
OURS_TIME=${BENCH_TIME:-60}
for v in "$ROUNDS" "$PERIOD" "$OURS_TIME"; do
	case $v in
	''|*[!0-9]*|0)
		echo "bench_booksim: BENCH_ROUNDS, BOOKSIM_SAMPLE_PERIOD and" \
		     "BENCH_TIME take positive integers (got '$v')" >&2
		exit 2 ;;
	esac
done

WARMUP_PERIODS=1
MEASURED_PERIODS=3
NODES=1056

TMP=$(mktemp -d "${TMPDIR:-/tmp}/bench_booksim.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# The dragonfly example of BookSim2 (src/examples/dragonflyconfig) with
# UGAL (three VCs), 0.5 flits/node/cycle and a fixed length: throughput
# mode, one warm-up period, then exactly three measured ones (the
# convergence tests are off, so the run neither stops early nor goes on).
CFG=$TMP/dragonfly_ugal.cfg
cat > "$CFG" <<EOF
topology = dragonflynew;
k = 4;
n = 1;
routing_function = ugal;
num_vcs = 3;
vc_buf_size = 256;
wait_for_tail_credit = 0;
vc_allocator = separable_input_first;
sw_allocator = separable_input_first;
alloc_iters = 1;
credit_delay = 2;
routing_delay = 0;
vc_alloc_delay = 1;
sw_alloc_delay = 1;
st_final_delay = 1;
input_speedup = 1;
output_speedup = 1;
internal_speedup = 2.0;
priority = none;
traffic = uniform;
injection_process = bernoulli;
injection_rate = 0.5;
injection_rate_uses_flits = 1;
packet_size = 10;
sim_type = throughput;
warmup_periods = $WARMUP_PERIODS;
sample_period = $PERIOD;
max_samples = $((WARMUP_PERIODS + MEASURED_PERIODS));
warmup_thres = -1.0;
acc_warmup_thres = -1.0;
stopping_thres = -1.0;
acc_stopping_thres = -1.0;
sim_count = 1;
seed = 1;
stats_out = $TMP/booksim.stats;
EOF

# One BookSim2 run; prints "packet_hops cpu_s cycles packets_measured".
run_booksim()
{
	rm -f "$TMP/booksim.stats"
	/usr/bin/time -f '%U %S' -o "$TMP/booksim.time" \
		"$BOOKSIM" "$CFG" > "$TMP/booksim.out" 2>&1
	# BookSim2 exits 255 when the simulation completes; check its output.
	if ! grep -q '^Time taken is' "$TMP/booksim.out" ||
	   ! grep -q '^hops(1,:)' "$TMP/booksim.stats" 2>/dev/null; then
		echo "bench_booksim: BookSim2 did not complete; its output:" >&2
		tail -20 "$TMP/booksim.out" >&2
		exit 1
	fi
	if [ -n "${BENCH_KEEP:-}" ]; then
		mkdir -p "$BENCH_KEEP" &&
		cp "$CFG" "$TMP/booksim.out" "$TMP/booksim.stats" "$BENCH_KEEP/"
	fi
	awk -v w="$WARMUP_PERIODS" -v m="$MEASURED_PERIODS" \
	    -v tf="$TMP/booksim.time" -v of="$TMP/booksim.out" '
	/^hops\(1,:\)/ {
		# hops(1,:) = [ n0 n1 n2 ... ];  bin i: packets of i hops
		i = 0
		for (f = 1; f <= NF; f++) {
			if ($f ~ /^[0-9]+$/) {
				pk += $f
				hops += i * $f
				i++
			}
		}
	}
	END {
		# GNU time adds a line before its own when the status is
		# not 0: the figures are on the last line.
		while ((getline l < tf) > 0)
			t = l
		split(t, c, " ")
		cpu = c[1] + c[2]
		while ((getline l < of) > 0)
			if (l ~ /^Time taken is/) { split(l, x, " "); cyc = x[4] }
		ph = hops * (w + m) / m
		printf "%.0f %.2f %d %d\n", ph, cpu, cyc, pk
	}' "$TMP/booksim.stats"
}

# One bench_fabric run; prints "packet_hops cpu_s load_sent".
run_ours()
{
	"$BENCH_FABRIC" model --preset shandy --routing ugal --load "$1" \
		--time "$OURS_TIME" --no-baseline > "$TMP/ours.out" || {
		echo "bench_booksim: bench_fabric failed" >&2
		exit 1
	}
	awk '$1 == "packet_hops" { h = $2 } $1 == "cpu_s" { c = $2 }
	     $1 == "load_sent" { s = $2 }
	     END { print h, c, s }' "$TMP/ours.out"
}

RES=$TMP/results
: > "$RES"
printf '%-5s %-36s %12s %8s %14s  %s\n' round run packet_hops cpu_s \
	hops_per_cpu_s note
for r in $(seq 1 "$ROUNDS"); do
	read -r ph cpu cyc pk <<< "$(run_booksim)" || exit 1
	rate=$(awk -v h="$ph" -v c="$cpu" 'BEGIN { printf "%.0f", (c > 0 ? h / c : 0) }')
	printf '%-5s %-36s %12s %8s %14s  %s\n' "$r" \
		"booksim2 dragonfly-1056 ugal 0.5" "$ph" "$cpu" "$rate" \
		"$cyc cycles, $pk packets measured"
	echo "booksim $rate" >> "$RES"
	for load in 0.5 0.2; do
		read -r ph cpu sent <<< "$(run_ours "$load")" || exit 1
		rate=$(awk -v h="$ph" -v c="$cpu" 'BEGIN { printf "%.0f", (c > 0 ? h / c : 0) }')
		printf '%-5s %-36s %12s %8s %14s  %s\n' "$r" \
			"ours shandy-1024 ugal $load" "$ph" "$cpu" "$rate" \
			"load_sent $sent"
		echo "ours$load $rate" >> "$RES"
	done
done

echo
echo "median packet-hops per CPU second (range), ratio ours / BookSim2:"
awk '
function median(k,   n, i, j, t, a) {
	n = cnt[k]
	for (i = 1; i <= n; i++) a[i] = v[k, i]
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	lo[k] = a[1]; hi[k] = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ cnt[$1]++; v[$1, cnt[$1]] = $2 }
END {
	b = median("booksim")
	printf "%-36s %12.0f (%.0f-%.0f)\n", "booksim2 dragonfly-1056 ugal 0.5", \
		b, lo["booksim"], hi["booksim"]
	split("ours0.5 ours0.2", ks, " ")
	for (i = 1; i <= 2; i++) {
		m = median(ks[i])
		printf "%-36s %12.0f (%.0f-%.0f)  ratio %.1f\n", \
			"ours shandy-1024 ugal " substr(ks[i], 5), m, \
			lo[ks[i]], hi[ks[i]], (b > 0 ? m / b : 0)
	}
}' "$RES"
