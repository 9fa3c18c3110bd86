#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# slingshot-emu from the outside: the same seed gives byte-identical output
# (report and per-message CSV), another seed another one; the single-switch
# calibration (mean switch latency 350 +- 15 ns, p99 under 400 ns); and bad
# input gets a clear error and a non-zero exit, never a crash.

tool="${TOP_BUILDDIR:-.}/util/slingshot-emu"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

. "$(dirname "$0")/../util/cli_lib.sh"

run() { "$tool" sim --preset 2group --pattern uniform --load 0.3 --time 5 "$@"; }

run --seed 7 --csv "$tmp/a.csv" > "$tmp/a.txt" || { echo "FAIL: sim run"; exit 1; }
run --seed 7 --csv "$tmp/b.csv" > "$tmp/b.txt"
run --seed 8 > "$tmp/c.txt"
check "same seed, same report" cmp -s "$tmp/a.txt" "$tmp/b.txt"
check "same seed, same CSV" cmp -s "$tmp/a.csv" "$tmp/b.csv"
check "another seed, another report" sh -c "! cmp -s '$tmp/a.txt' '$tmp/c.txt'"
check "CSV has a header and one line per message" \
	test "$(head -n 1 "$tmp/a.csv")" = "src,dst,bytes,post_ps,recv_ps,latency_ns"
sent=$(sed -n 's/^messages: sent \([0-9]*\),.*/\1/p' "$tmp/a.txt")
check "CSV lines = messages sent ($sent)" \
	test "$(($(wc -l < "$tmp/a.csv") - 1))" = "$sent"

# --speed adds one line, the run's cost, and changes nothing else: its
# packet-hops are the report's hops, its rates positive; without it no
# such line (the report stays byte-identical from run to run).
run --seed 7 --speed > "$tmp/speed.txt"
check "--speed: the report before its line is the same" \
	sh -c "grep -v '^speed: ' '$tmp/speed.txt' | cmp -s - '$tmp/a.txt'"
check "no speed line without --speed" sh -c "! grep -q '^speed: ' '$tmp/a.txt'"
hops=$(sed -n 's/^switch_latency_ns: hops \([0-9]*\) .*/\1/p' "$tmp/speed.txt")
set -- $(sed -n 's/^speed: setup \([0-9.]*\) s CPU, [0-9.]* s wall; run \([0-9.]*\) s CPU, [0-9.]* s wall; \([0-9]*\) packet-hops, \([0-9]*\) a CPU second ([0-9]* a wall second); peak RSS \([0-9]*\) MiB; in the run, system CPU \([0-9.]*\) s and \([0-9]*\) page faults$/\1 \2 \3 \4 \5 \6 \7/p' "$tmp/speed.txt")
check "--speed: one well-formed line (got '$*')" test $# -eq 7
check "--speed: its packet-hops ($3) are the report's hops ($hops)" \
	test "${3:-x}" = "$hops"
check "--speed: a positive rate (${4:-?} a CPU second) and RSS (${5:-?} MiB)" \
	awk -v r="$4" -v m="$5" 'BEGIN { exit !(r > 0 && m > 0) }'
check "--speed: the run's system CPU (${6:-?} s) within its CPU (${2:-?} s)" \
	awk -v s="$6" -v c="$2" 'BEGIN { exit !(s >= 0 && s <= c + 0.01) }'

# Calibration: one light flow through one switch.
"$tool" sim --preset switch --pattern pingpong --size 8 --messages 2000 \
	> "$tmp/sw.txt"
set -- $(sed -n 's/^switch_latency_ns: hops [0-9]* mean \([0-9.]*\) p50 [0-9]* p99 \([0-9]*\).*/\1 \2/p' "$tmp/sw.txt")
echo "single switch: mean $1 ns, p99 $2 ns"
check "mean switch latency 350 +- 15 ns (got $1)" \
	awk -v m="$1" 'BEGIN { exit !(m >= 335 && m <= 365) }'
check "p99 switch latency under 400 ns (got $2)" test "$2" -lt 400

# Bad input: a clear message on stderr, exit status 2 (usage) or 1.
bad() {	# bad EXPECTED_TEXT ARGS...
	want=$1
	shift
	"$tool" "$@" > "$tmp/out" 2> "$tmp/err"
	st=$?
	if [ $st -eq 0 ] || [ $st -gt 2 ] || ! grep -q -- "$want" "$tmp/err"; then
		echo "FAIL: '$*' exited $st, stderr: $(cat "$tmp/err")"
		fail=1
	fi
}
bad "unknown preset" sim --preset nosuch
bad "not a non-negative integer" sim --size -5
bad "out of range" sim --load 2
# the message lists every pattern the option takes
bad "unknown pattern 'zigzag' (uniform, permutation, incast, pingpong, groups, alltoall, none)" \
	sim --pattern zigzag
bad "unexpected argument" sim extra
bad "unknown command" frobnicate
bad "cannot read" sim --config /nonexistent/fabric.cfg
printf 'topology = { groups = 2; nonsense = 1; };\n' > "$tmp/bad.cfg"
bad "bad.cfg:1: nonsense: unknown key" sim --config "$tmp/bad.cfg"
bad "no fabric named" stat --fabric ssemu-no-such-fabric-$$
bad "unknown routing algorithm 'bogus'" sim --versus-routing bogus
bad "out of range" sim --sources 0
bad "sim: --sources 65: 64 endpoints take part, 64 of them can send with --pattern uniform" \
	sim --preset 2group --sources 65 --time 1
bad "sim: --sources 64: 64 endpoints take part, 63 of them can send with --pattern incast" \
	sim --preset 2group --pattern incast --sources 64 --time 1
printf 'preset = "switch";\n' > "$tmp/noline.cfg"
bad "no '# sim:' line" sim --scenario "$tmp/noline.cfg"
printf '# sim: --preset malbec\npreset = "switch";\n' > "$tmp/preset.cfg"
bad "not allowed in a scenario line" sim --scenario "$tmp/preset.cfg"
bad "No such file" share --scenario "$tmp/missing.cfg"
bad "not a multiple of 4" share --endpoints 6
bad "traffic class 5" share --tclass-b 5
bad "out of range" share --window 0
bad "unexpected argument" share extra

# A scenario line's options, then the command line's (which win).
printf '# sim: --pattern pingpong --size 8 --messages 50\npreset = "switch";\n' \
	> "$tmp/pp.cfg"
"$tool" sim --scenario "$tmp/pp.cfg" --messages 20 > "$tmp/pp.txt"
check "scenario options apply, the command line overrides them" \
	grep -q "^messages: sent 20, received 20" "$tmp/pp.txt"

# --versus-routing: the second run's throughput and the ratio.
"$tool" sim --preset 2group --pattern groups --load 1.0 --size 4096 \
	--time 10 --routing adaptive --versus-routing minimal > "$tmp/vs.txt"
check "versus run reported" grep -q "^versus: routing minimal, throughput" \
	"$tmp/vs.txt"
g1=$(sed -n 's/^throughput: \([0-9.]*\) .*/\1/p' "$tmp/vs.txt")
g2=$(sed -n 's/^versus: .*throughput \([0-9.]*\) .*/\1/p' "$tmp/vs.txt")
r=$(sed -n 's/^throughput_ratio: \([0-9.]*\)/\1/p' "$tmp/vs.txt")
check "ratio $r = $g1 / $g2" awk -v a="$g1" -v b="$g2" -v r="$r" \
	'BEGIN { exit !(b > 0 && (a / b - r) < 0.001 && (r - a / b) < 0.001) }'

# share: job B stops, its messages drain, A gets the link back; JSON and
# text agree.
"$tool" share --time 20 --survivor 20 > "$tmp/sh.txt" &&
"$tool" share --time 20 --survivor 20 --json > "$tmp/sh.json"
sa=$(sed -n 's/^share_a_pct: //p' "$tmp/sh.txt")
check "share: text and JSON agree ($sa)" \
	grep -q "\"share_a_pct\": $sa," "$tmp/sh.json"
check "share: B delivers nothing once drained" \
	grep -q "^survivor: A [0-9.]* Gb/s, B 0.000 Gb/s" "$tmp/sh.txt"

# Reports A and B the same but for the model's line (its count of events
# and whether group windows ran).
same_but_model() {	# A B
	grep -v '^model:' "$1" > "$1.m" && grep -v '^model:' "$2" > "$2.m" &&
		cmp -s "$1.m" "$2.m"
}

# More NICs than the dense tables allowed: 8,192 endpoints of the full
# preset attach and run; more than the store takes are refused by name.
"$tool" sim --preset full --endpoints 8192 --time 1 > "$tmp/full.txt" 2>&1
check "full preset, 8192 endpoints: runs" \
	grep -q "endpoints used" "$tmp/full.txt"
check "full preset, 8192 endpoints: delivers" \
	grep -Eq "^messages: sent [1-9][0-9]*, received [1-9]" "$tmp/full.txt"
bad "out of range" sim --preset full --endpoints 1048577
check "full preset, 8192 endpoints: the engine's usual order" \
	grep -q "^model: .*, train hops [0-9]*$" "$tmp/full.txt"
# ... a Dragonfly group at a time by themselves where 32,768 endpoints or
# more take part, the report the one of the engine's usual order
for o in "" --no-group-windows; do
	"$tool" sim --preset full --endpoints 32768 --time 0.5 --load 0.05 $o \
		> "$tmp/full32k$o.txt" 2>&1
done
check "full preset, 32768 endpoints: group windows by themselves" \
	grep -q "^model: .*, group windows$" "$tmp/full32k.txt"
check "full preset, 32768 endpoints: the same report in the usual order" \
	same_but_model "$tmp/full32k.txt" "$tmp/full32k--no-group-windows.txt"
check "full preset, 32768 endpoints: messages, no group windows asked off" \
	sh -c "grep -Eq '^messages: sent [1-9]' '$tmp/full32k.txt' &&
	       ! grep -q 'group windows' '$tmp/full32k--no-group-windows.txt'"
bad "not both" sim --preset 2group --group-windows --no-group-windows

# --group-windows: the model's events a window at a time, each window a
# Dragonfly group after another, give the same results: modelled jobs
# (uniform, all-to-all with congestion control and adaptive routing, an
# incast) both ways, their reports the same but for the model's line (its
# count of events may differ by a look an output takes or not, as a credit
# over a global link finds the group beyond it earlier or later in its
# window); no more events than in the usual order (a credit into another
# group joins its output's ring, as any credit does, with no event).
events_of() {	# REPORT: the model's count of events
	sed -n 's/^model: .*, events \([0-9]*\),.*/\1/p' "$1"
}
gw_cfg() {	# NAME PRESET ENDPOINTS PATTERN SIZE ROUTING
	cat > "$tmp/gw-$1.cfg" <<EOF
preset = "$2";
routing = "$6";
resources = { max_nics = $3; max_eps = $3; };
modelled_jobs = ( { name = "j"; endpoints = $3; placement = "linear";
  pattern = "$4"; size = $5; load = 0.5; } );
EOF
}
gw_cfg u shandy 1024 uniform 2048 minimal
gw_cfg a shandy 1024 alltoall 65536 adaptive
gw_cfg i 2group 64 incast 8192 minimal
for x in u a i; do
	"$tool" sim --config "$tmp/gw-$x.cfg" --time 20 > "$tmp/gw-$x.one"
	"$tool" sim --config "$tmp/gw-$x.cfg" --time 20 --group-windows \
		> "$tmp/gw-$x.win"
	check "--group-windows, $x: the same report" \
		same_but_model "$tmp/gw-$x.one" "$tmp/gw-$x.win"
	check "--group-windows, $x: no more events than the usual order" \
		test "$(events_of "$tmp/gw-$x.win")" -le \
		"$(events_of "$tmp/gw-$x.one")"
	check "--group-windows, $x: messages delivered" \
		grep -Eq "^j +[0-9]+ [a-z]+ +[A-Z_]+ +[0-9]+ +[1-9][0-9]* " \
		"$tmp/gw-$x.win"
done
# The sim's own open-loop sources, which post each window's messages for
# their times before the engine runs it: the same reports both ways too
# (uniform with adaptive routing; an all-to-all with UGAL; an incast whose
# sources, four message slots each, wait for slots to free).
cat > "$tmp/gw-slots.cfg" <<EOF
preset = "2group";
resources = { msgs_per_ep = 4; };
EOF
gw_own() {	# NAME SIM-OPTIONS...
	n=$1
	shift
	"$tool" sim "$@" > "$tmp/gwo-$n.one"
	"$tool" sim "$@" --group-windows > "$tmp/gwo-$n.win"
	check "--group-windows, own sources $n: the same report" \
		same_but_model "$tmp/gwo-$n.one" "$tmp/gwo-$n.win"
	check "--group-windows, own sources $n: messages received" \
		grep -Eq "^messages: sent [1-9][0-9]*, received [1-9]" \
		"$tmp/gwo-$n.win"
}
gw_own u --preset shandy --load 0.5 --time 10 --routing adaptive
gw_own a --preset shandy --pattern alltoall --size 65536 --load 0.8 \
	--time 10 --routing ugal
gw_own i --config "$tmp/gw-slots.cfg" --pattern incast --load 0.9 --time 20
bad "--group-windows: the traffic must come from open-loop sources" \
	sim --preset 2group --pattern pingpong --group-windows
bad "--group-windows: the traffic must come from open-loop sources" \
	sim --preset 2group --pattern none --time 1 --group-windows
bad "--group-windows: --time must be a whole number of windows" \
	sim --config "$tmp/gw-i.cfg" --time 0.05 --group-windows
# Telemetry: the same series and tables both ways (every event before a
# window's end comes before every event at it, so a sample closes once;
# the NIC pairs a window first brings take the table's room in the order
# of their first deliveries, whichever group runs first).
gw_tel() {	# NAME SIM-OPTIONS...
	n=$1
	shift
	for m in one win; do
		o=
		[ $m = win ] && o=--group-windows
		"$tool" sim "$@" $o --telemetry-interval 1 \
			--telemetry "$tmp/gwt-$n.$m.trace" > /dev/null &&
		mkdir -p "$tmp/gwt-$n.$m" &&
		"$tool" report "$tmp/gwt-$n.$m.trace" --csv "$tmp/gwt-$n.$m" \
			> /dev/null || fail=1
	done
	for f in summary bandwidth latency classes queues jobpairs pairs; do
		check "--group-windows, telemetry $n: the same $f.csv" \
			cmp -s "$tmp/gwt-$n.one/$f.csv" "$tmp/gwt-$n.win/$f.csv"
	done
	check "--group-windows, telemetry $n: a series of samples" \
		test "$(wc -l < "$tmp/gwt-$n.win/bandwidth.csv")" -ge 10
}
cat > "$tmp/gw-2j.cfg" <<EOF
preset = "shandy";
resources = { max_nics = 1024; max_eps = 1024; };
modelled_jobs = (
  { name = "a"; endpoints = 512; placement = "random"; pattern = "uniform";
    size = 4096; load = 0.4; },
  { name = "b"; endpoints = 256; placement = "random";
    pattern = "alltoall"; size = 16384; inflight = 4;
    tclass = "BULK_DATA"; } );
EOF
gw_tel jobs --config "$tmp/gw-2j.cfg" --time 20
gw_tel own --preset shandy --load 0.5 --time 20 --routing adaptive
bad "the telemetry interval must be a whole number of windows" \
	sim --config "$tmp/gw-i.cfg" --time 1 --group-windows \
	--telemetry-interval 0.05
bad "--group-windows: the run is bounded by --time" \
	sim --config "$tmp/gw-i.cfg" --time 1 --messages 10 --group-windows

# Open-loop sources post what they offer up to --time and no more, however
# far a saturated fabric runs the clock on while they wait for slots: twice
# the time, about twice the messages (Poisson arrivals: within 5%).
sat() {
	"$tool" sim --preset 2group --load 1 --time "$1" |
		sed -n 's/^messages: sent \([0-9]*\),.*/\1/p'
}
s10=$(sat 10)
s20=$(sat 20)
check "saturated: 20 us offer twice 10 us's messages ($s20, $s10)" \
	test "$((s20 * 100))" -ge "$((s10 * 190))" -a \
	     "$((s20 * 100))" -le "$((s10 * 210))"

# Throughput is over the window from the earliest arrival to the latest,
# whatever order the endpoints' events are read in: on 1,024 endpoints at
# full load for 0.2 us, no receiving endpoint gets more than its 200 Gb/s
# link, and the window lies within the model time the run reached.
"$tool" sim --preset shandy --load 1 --time 0.2 > "$tmp/win.txt"
set -- $(sed -n 's/^throughput: [0-9.]* Gb\/s delivered over \([0-9.]*\) us (\([0-9.]*\) Gb\/s per .*/\1 \2/p' "$tmp/win.txt") \
	$(sed -n 's/^model: time \([0-9.]*\) us.*/\1/p' "$tmp/win.txt")
check "throughput window ${1:-?} us within model time ${3:-?} us" \
	awk -v w="$1" -v t="$3" 'BEGIN { exit !(w != "" && w > 0 && w <= t) }'
check "per receiving endpoint ${2:-?} Gb/s <= the 200 Gb/s edge link" \
	awk -v g="$2" 'BEGIN { exit !(g != "" && g > 0 && g <= 200) }'

[ $fail -eq 0 ] && echo "PASS: sim is deterministic, calibrated, and refuses bad input"
exit $fail
