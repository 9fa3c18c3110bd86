#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# `slingshot-emu report` from the outside: a simulated run saved with
# `sim --telemetry`, then its report as text (numbers agree with what sim
# says it sent), JSON, CSV files (the right columns, totals that agree with
# the text), and PNG plots made by gnuplot; a live shared fabric read as an
# observer; bad arguments (exit 2) and bad traces (exit 1) get a clear
# error.  Without gnuplot everything else is checked, --plot must say what
# is missing, and the test ends with 77 (skipped).

tool="${TOP_BUILDDIR:-.}/util/slingshot-emu"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

. "$(dirname "$0")/../util/cli_lib.sh"

# A simulated run: 16 endpoints, 2048 B messages, samples every 5 us.
"$tool" sim --preset switch --pattern uniform --load 0.4 --time 60 \
	--seed 5 --telemetry-interval 5 --telemetry "$tmp/run.trace" \
	--progress > "$tmp/sim.txt" 2> "$tmp/sim.err" ||
	{ echo "FAIL: sim --telemetry"; cat "$tmp/sim.err"; exit 1; }
check "sim --progress ends with 100%" grep -q "100.0% of the run" "$tmp/sim.err"
check "sim saved a trace" test -s "$tmp/run.trace"
received=$(sed -n 's/^messages: sent [0-9]*, received \([0-9]*\),.*/\1/p' "$tmp/sim.txt")
echo "sim: $received messages received"

"$tool" report "$tmp/run.trace" > "$tmp/rep.txt" 2> "$tmp/rep.err" ||
	{ echo "FAIL: report"; cat "$tmp/rep.err"; exit 1; }
cat "$tmp/rep.txt"
# the job 0 / BEST_EFFORT row: job class tx_msgs tx_bytes rx_msgs rx_bytes
set -- $(awk '$1 == "0" && $2 == "BEST_EFFORT" { print $3, $4, $5, $6 }' "$tmp/rep.txt")
check "report: one row for job 0, BEST_EFFORT" test $# -eq 4
check "report: rx_msgs = messages sim received ($3 vs $received)" \
	test "$3" = "$received"
check "report: tx_msgs = rx_msgs" test "$1" = "$3"
check "report: rx_bytes = 2048 x messages" test "$4" = "$((2048 * received))"
rx_bytes=$4
closed=$(sed -n 's/^samples: \([0-9]*\) closed of 5.000 us, \1 kept, 0 lost.*/\1/p' "$tmp/rep.txt")
check "report: samples of 5 us over the 60 us run, none lost ($closed)" \
	test "${closed:-0}" -ge 12 -a "${closed:-0}" -le 14

# JSON: the same numbers
"$tool" report --json "$tmp/run.trace" > "$tmp/rep.json"
check "report --json: rx_bytes" grep -q "\"rx_bytes\":$rx_bytes," "$tmp/rep.json"
if command -v python3 >/dev/null 2>&1; then
	check "report --json is valid JSON" python3 -c \
		"import json,sys; json.load(open(sys.argv[1]))" "$tmp/rep.json"
fi

# CSV files: headers, and totals that agree with the text
"$tool" report --csv "$tmp/csv" "$tmp/run.trace" > /dev/null ||
	{ echo "FAIL: report --csv"; fail=1; }
header() { check "$1 header" test "$(head -n 1 "$tmp/csv/$1")" = "$2"; }
header summary.csv "job,class,tx_msgs,tx_pkts,tx_bytes,rx_pkts,rx_bytes,rx_msgs,gbps,both_gbps,share_pct,alone_gbps,lat_mean_ns,lat_p50_ns,lat_p99_ns"
header bandwidth.csv "time_us,duration_us,job,class,rx_bytes,gbps"
header latency.csv "job,class,bin,lo_ns,hi_ns,count"
header classes.csv "class,name,drops,retries,throttles,marks,q_max,q_mean"
header queues.csv "time_us,duration_us,class,tx_bytes,drops,throttles,marks,q_max,q_mean"
header pairs.csv "src_port,dst_port,src_job,dst_job,msgs,lat_mean_ns,lat_p50_ns,lat_p99_ns"
header jobpairs.csv "src_job,dst_job,msgs,lat_mean_ns,lat_p50_ns,lat_p99_ns"
sum=$(awk -F, 'NR > 1 && $3 == "0" && $4 == "BEST_EFFORT" { s += $5 } END { print s }' "$tmp/csv/bandwidth.csv")
check "bandwidth.csv adds up to rx_bytes ($sum vs $rx_bytes)" test "$sum" = "$rx_bytes"
rows=$(awk -F, 'NR > 1' "$tmp/csv/bandwidth.csv" | wc -l)
# (an open sample shorter than half an interval joins the last closed one)
open_row=$(awk -v c="${closed:-0}" '/^model time:/ {
	print ($3 - 5 * c >= 2.5) ? 1 : 0 }' "$tmp/rep.txt")
check "bandwidth.csv: the closed samples and the open one ($rows rows)" \
	test "$rows" -eq $((closed + ${open_row:-1}))
check "bandwidth.csv: 5 us apart" awk -F, 'NR == 3 { exit !($1 == "5.000") }' "$tmp/csv/bandwidth.csv"
# A run whose open sample is shorter than half an interval: it is joined to
# the last closed one (one row, longer than an interval), not plotted as a
# sliver whose rate is a spike; no byte is lost or counted twice.
"$tool" sim --preset switch --pattern uniform --load 0.4 --time 54 \
	--seed 5 --telemetry-interval 5 --telemetry "$tmp/short.trace" \
	> /dev/null 2>&1 || { echo "FAIL: sim --time 54"; fail=1; }
"$tool" report --csv "$tmp/short" "$tmp/short.trace" > "$tmp/short.txt" ||
	{ echo "FAIL: report --csv of the short run"; fail=1; }
closed=$(sed -n 's/^samples: \([0-9]*\) closed of.*/\1/p' "$tmp/short.txt")
rows=$(awk -F, 'NR > 1' "$tmp/short/bandwidth.csv" | wc -l)
check "short open sample: one row per closed sample ($rows rows, $closed closed)" \
	test "$rows" -eq "${closed:-0}"
check "short open sample: no row under half an interval" \
	awk -F, 'NR > 1 && $2 < 2.5 { bad = 1 } END { exit bad }' "$tmp/short/bandwidth.csv"
check "short open sample: the last row spans more than an interval" \
	awk -F, 'END { exit !($2 > 5 && $2 < 7.5) }' "$tmp/short/bandwidth.csv"
want=$(awk '$1 == "0" && $2 == "BEST_EFFORT" { print $6 }' "$tmp/short.txt")
sum=$(awk -F, 'NR > 1 { s += $5 } END { print s }' "$tmp/short/bandwidth.csv")
check "short open sample: bandwidth.csv adds up to rx_bytes ($sum vs $want)" \
	test "$sum" = "$want"
sum=$(awk -F, 'NR > 1 { s += $6 } END { print s }' "$tmp/csv/latency.csv")
check "latency.csv counts every message ($sum vs $received)" test "$sum" = "$received"
sum=$(awk -F, 'NR > 1 { s += $5 } END { print s }' "$tmp/csv/pairs.csv")
check "pairs.csv counts every message ($sum vs $received)" test "$sum" = "$received"
sum=$(awk -F, 'NR > 1 { s += $3 } END { print s }' "$tmp/csv/jobpairs.csv")
check "jobpairs.csv counts every message ($sum vs $received)" test "$sum" = "$received"
gbps=$(awk -F, 'NR == 2 { print $9 }' "$tmp/csv/summary.csv")
check "summary.csv bandwidth = the text's ($gbps)" \
	awk -v g="$gbps" '$1 == "0" && $2 == "BEST_EFFORT" { ok = ($7 == g) } END { exit !ok }' "$tmp/rep.txt"

# Figure 14 in miniature (tests/util/tel_fig14.c): job 1 in an 80% class
# from 0 to 200 us, job 2 in a 20% class from 50 to 400 us, one bottleneck.
share() {	# share REPORT JOB: "share% alone_gbps" of that job's row
	awk -v j="$2" '$1 == j { print $9, $10 }' "$1"
}
fig14="${TOP_BUILDDIR:-.}/tests/util/tel_fig14"
if "$fig14" "$tmp/f14.trace" && "$fig14" --same-class "$tmp/f14s.trace"; then
	"$tool" report "$tmp/f14.trace" > "$tmp/f14.txt"
	"$tool" report "$tmp/f14s.trace" > "$tmp/f14s.txt"
	set -- $(share "$tmp/f14.txt" 1) $(share "$tmp/f14.txt" 2)
	echo "figure 14, separate classes: shares $1% / $3% while both run, survivor $4 Gb/s"
	check "80/20 classes: job 1 gets 80 +- 5% while both run ($1)" \
		awk -v s="$1" 'BEGIN { exit !(s >= 75 && s <= 85) }'
	check "80/20 classes: job 2 gets 20 +- 5% ($3)" \
		awk -v s="$3" 'BEGIN { exit !(s >= 15 && s <= 25) }'
	check "the survivor gets >= 90% of the 200 Gb/s link ($4)" \
		awk -v g="$4" 'BEGIN { exit !(g >= 180) }'
	set -- $(share "$tmp/f14s.txt" 1) $(share "$tmp/f14s.txt" 2)
	echo "figure 14, one class: shares $1% / $3% while both run"
	check "one class: 50 +- 5% each ($1, $3)" \
		awk -v a="$1" -v b="$3" 'BEGIN { exit !(a >= 45 && a <= 55 && b >= 45 && b <= 55) }'
else
	echo "FAIL: tel_fig14"
	fail=1
fi

# Bad arguments: exit 2 and a clear message; bad traces: exit 1.
bad() {	# bad STATUS EXPECTED_TEXT ARGS...
	want_st=$1
	want=$2
	shift 2
	"$tool" "$@" > "$tmp/out" 2> "$tmp/err"
	st=$?
	if [ $st -ne "$want_st" ] || ! grep -q -- "$want" "$tmp/err"; then
		echo "FAIL: '$*' exited $st (want $want_st), stderr: $(cat "$tmp/err")"
		fail=1
	fi
}
bad 2 "name either a fabric" report
bad 2 "not both" report --fabric x "$tmp/run.trace"
bad 2 "unexpected argument" report "$tmp/run.trace" extra
bad 2 "unrecognized option" report --frobnicate "$tmp/run.trace"
bad 2 "out of range" sim --telemetry-interval 5000000
bad 1 "No such file" report "$tmp/missing.trace"
printf 'not a trace\n' > "$tmp/text.trace"
bad 1 "bad magic" report "$tmp/text.trace"
head -c 1000 "$tmp/run.trace" > "$tmp/short.trace"
bad 1 "truncated" report "$tmp/short.trace"
bad 1 "no fabric named" report --fabric ssemu-no-such-fabric-$$
bad 1 "telemetry interval" sim --telemetry-interval 0.01

# A live shared fabric, held by `run`, read as an observer; with
# fi_pingpong, with traffic on it.
FI_SLINGSHOT_EMU_FABRIC="ssemu-report-$$"
export FI_SLINGSHOT_EMU_FABRIC
"$tool" run -- "$tool" report --fabric "$FI_SLINGSHOT_EMU_FABRIC" \
	--save "$tmp/live.trace" > "$tmp/live.txt" 2>&1
check "report --fabric on a live fabric" grep -q "^telemetry: fabric ssemu-report-$$" "$tmp/live.txt"
check "report --save of a live fabric reads back" \
	"$tool" report "$tmp/live.trace" > /dev/null
if command -v fi_pingpong >/dev/null 2>&1 &&
   [ -f "${TOP_BUILDDIR:-.}/prov/.libs/libslingshot_emu-fi.so" ]; then
	FI_PROVIDER_PATH="${TOP_BUILDDIR:-.}/prov/.libs"
	export FI_PROVIDER_PATH
	# fi_pingpong meets over TCP: a port somebody else holds (or a slow
	# start under load) fails the run, so up to three tries
	for try in 1 2 3; do
		port=$((20000 + ($$ * 7 + try * 1013) % 20000))
		rm -rf "$tmp/live"
		cat > "$tmp/pp.sh" <<EOF
timeout 60 fi_pingpong -p slingshot_emu -e rdm -I 50 -S 4096 -B $port >/dev/null 2>&1 &
sleep 2
timeout 60 fi_pingpong -p slingshot_emu -e rdm -I 50 -S 4096 -P $port 127.0.0.1 >/dev/null 2>&1
wait
exec "$tool" report --fabric "$FI_SLINGSHOT_EMU_FABRIC" --csv "$tmp/live"
EOF
		"$tool" run -- sh "$tmp/pp.sh" > "$tmp/pp.txt" 2>&1
		msgs=$(awk -F, 'NR > 1 { s += $8 } END { print s + 0 }' "$tmp/live/summary.csv" 2>/dev/null)
		[ "${msgs:-0}" -ge 100 ] && break
		echo "note: fi_pingpong try $try counted ${msgs:-0} messages"
	done
	check "live fabric with fi_pingpong: messages counted ($msgs)" \
		test "${msgs:-0}" -ge 100
else
	echo "note: no fi_pingpong or provider: live traffic not checked"
fi
rm -f /dev/shm/ssemu-report-$$

# Plots: PNG files (magic 89 50 4e 47 0d 0a 1a 0a), or a clear refusal.
png() { [ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }
PATH=/nonexistent "$tool" report --plot "$tmp/noplot" "$tmp/run.trace" \
	> /dev/null 2> "$tmp/err"
st=$?
check "--plot without gnuplot: exit 1 and says so" \
	sh -c "[ $st -eq 1 ] && grep -q 'needs gnuplot' '$tmp/err'"
if ! command -v gnuplot >/dev/null 2>&1; then
	[ $fail -ne 0 ] && exit 1
	echo "SKIP: gnuplot not found (Debian: apt-get install gnuplot-nox): plots not checked"
	exit 77
fi
"$tool" report --plot "$tmp/plot" "$tmp/run.trace" > /dev/null ||
	{ echo "FAIL: report --plot"; fail=1; }
for f in bandwidth latency; do
	check "$f.png is a PNG" png "$tmp/plot/$f.png"
	check "$f.gp and $f.dat kept" test -s "$tmp/plot/$f.gp" -a -s "$tmp/plot/$f.dat"
done
"$tool" report --plot "$tmp/f14plot" "$tmp/f14.trace" > /dev/null &&
	check "figure 14 plot is a PNG" png "$tmp/f14plot/bandwidth.png"
check "figure 14 plot has both series" grep -q 'job 2, TC20' "$tmp/f14plot/bandwidth.gp"

[ $fail -eq 0 ] && echo "PASS: report reads traces and fabrics, writes CSV and plots, refuses bad input"
exit $fail
