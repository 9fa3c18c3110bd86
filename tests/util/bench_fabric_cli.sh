#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# benchmarks/bench_fabric from the outside: its options parse, bad values
# get a clear message and exit status 2 (1 for an unknown preset), and the
# figures it prints agree with each other (hops > 0, events per hop > 1 and
# equal to events / hops, every message received, one message's or one
# read's packets and hops, the pages a message touches, the cache lines
# it moves where valgrind is installed).  Never its timings: the machine
# is shared.

bench="${TOP_BUILDDIR:-.}/benchmarks/bench_fabric"
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

. "$(dirname "$0")/../util/cli_lib.sh"

[ -x "$bench" ] || { echo "SKIP: $bench not built"; exit 77; }

# --- model: a short run on 2group, adaptive routing ---
m="$tmp/model.txt"
"$bench" model --preset 2group --load 0.2 --time 2 --warmup 1 \
	--routing adaptive > "$m" || { echo "FAIL: model run"; cat "$m"; exit 1; }
check "model: every line is 'key value'" \
	awk 'NF != 2 { exit 1 }' "$m"
check "model: routing is adaptive" test "$(val "$m" routing)" = adaptive
hops=$(val "$m" packet_hops)
events=$(val "$m" events)
check "model: packet-hops > 0 ($hops)" holds "$hops" 0 'a > 0'
check "model: events > packet-hops ($events > $hops)" \
	holds "$events" "$hops" 'a > b'
eph=$(val "$m" events_per_hop)
check "model: events_per_hop $eph = events / hops, > 1" \
	holds "$eph" "$hops" \
	"a > 1 && a - $events / $hops < 0.001 && $events / $hops - a < 0.001"
sent=$(val "$m" messages_sent)
check "model: messages sent ($sent) > 0 and all received" \
	holds "$sent" "$(val "$m" messages_received)" 'a > 0 && a == b'
# one thread: its CPU time is at most its wall time (to the clocks'
# agreement: the timed part is a few milliseconds, and on a virtual machine
# the CPU clock and the monotonic one may differ by a tick)
cpu_s=$(awk -v h="$hops" '$1 == "hops_per_cpu_s" && $2 > 0 { print h / $2 }' "$m")
wall_s=$(awk -v h="$hops" '$1 == "hops_per_wall_s" && $2 > 0 { print h / $2 }' "$m")
check "model: CPU seconds ($cpu_s) <= wall seconds ($wall_s)" \
	holds "${cpu_s:-0}" "${wall_s:-0}" 'a > 0 && a <= 1.01 * b + 0.001'
check "model: peak RSS reported" holds "$(val "$m" rss_peak_kib)" 0 'a > 0'
check "model: the baseline runs at the model's mean depth" \
	holds "$(val "$m" baseline_engine_pending)" \
	"$(val "$m" engine_pending_mean)" \
	'(b < 16 ? a == 16 : a - b <= 1 && b - a <= 1)'

"$bench" model --preset 2group --load 0.2 --time 1 --warmup 0 \
	--engine-pending 4096 > "$tmp/p.txt"
check "model: --engine-pending sets the baseline's depth" \
	test "$(val "$tmp/p.txt" baseline_engine_pending)" = 4096
check "model: routing defaults to the preset's (minimal)" \
	test "$(val "$tmp/p.txt" routing)" = minimal
"$bench" model --preset 2group --load 0.2 --time 1 --warmup 0 \
	--no-baseline > "$tmp/nb.txt"
check "model: --no-baseline runs no baseline" \
	sh -c "! grep -q '^baseline_' '$tmp/nb.txt'"
check "model: --no-baseline still measures" \
	holds "$(val "$tmp/nb.txt" packet_hops)" 0 'a > 0'

# --- one message: 64 KiB is 32 packets of 2 KiB, per packet ---
"$bench" model --preset 2group --message 64K --no-trains > "$tmp/far.txt" &&
"$bench" model --preset 2group --message 64K --dst 1 --no-trains \
	> "$tmp/near.txt" || { echo "FAIL: message runs"; fail=1; }
check "message: every line is 'key value'" \
	awk 'NF != 2 { exit 1 }' "$tmp/far.txt"
check "message: 64K is 32 packets" test "$(val "$tmp/far.txt" packets)" = 32
check "message: to the last port by default" \
	test "$(val "$tmp/far.txt" dst_port)" = 63
fe=$(val "$tmp/far.txt" events)
fh=$(val "$tmp/far.txt" packet_hops)
check "message: events ($fe) > hops ($fh) >= packets" \
	holds "$fe" "$fh" 'a > b && b >= 32'
check "message: events_per_packet = events / 32" \
	holds "$(val "$tmp/far.txt" events_per_packet)" "$fe / 32" \
	"a - $fe / 32 < 0.001 && $fe / 32 - a < 0.001"
check "message: delivered, then acknowledged" \
	holds "$(val "$tmp/far.txt" delivery_ns)" \
	"$(val "$tmp/far.txt" completion_ns)" 'a > 0 && b > a'
check "message: a port on the same switch is fewer hops and events" \
	holds "$(val "$tmp/near.txt" packet_hops)" "$fh" \
	"a < b && $(val "$tmp/near.txt" events) < $fe"
check "message: the same message, the same events" \
	sh -c "\"$bench\" model --preset 2group --message 64K --no-trains |
		grep -qx 'events $fe'"
# the message alone in the fabric: after its first packet, the rest and
# its acknowledgements go as one packet train, with the same hops and
# times as per packet
"$bench" model --preset 2group --message 64K > "$tmp/fart.txt" ||
	{ echo "FAIL: message run with trains"; fail=1; }
check "message: one train, a handful of events ($(val "$tmp/fart.txt" events))" \
	holds "$(val "$tmp/fart.txt" trains)" "$(val "$tmp/fart.txt" events)" \
	'a == 1 && b < 10'
check "message per packet: no train" test "$(val "$tmp/far.txt" trains)" = 0
check "message: the same hops, delivery and completion with trains" \
	sh -c "[ \"\$(grep -E '^(packet_hops|train_hops|delivery_ns|completion_ns) ' '$tmp/fart.txt')\" = \
		\"\$(grep -E '^(packet_hops|train_hops|delivery_ns|completion_ns) ' '$tmp/far.txt')\" ]"

# --- one read: 64 KiB of the last endpoint's memory, 32 result packets
# back on the reverse path, no acknowledgements for them ---
"$bench" model --preset 2group --message 64K --read > "$tmp/rd.txt" ||
	{ echo "FAIL: read run"; fail=1; }
check "read: every line is 'key value'" awk 'NF != 2 { exit 1 }' "$tmp/rd.txt"
check "read: says it is a read, and a send says it is a send" \
	sh -c "grep -qx 'operation read' '$tmp/rd.txt' &&
		grep -qx 'operation send' '$tmp/far.txt'"
check "read: complete, with no delivery of its own" \
	sh -c "! grep -q '^delivery_ns' '$tmp/rd.txt' &&
		awk '\$1 == \"completion_ns\" && \$2 > 0 { ok = 1 }
			END { exit !ok }' '$tmp/rd.txt'"
rh=$(val "$tmp/rd.txt" packet_hops)
check "read: at least its 32 results' hops, fewer than the send's ($rh)" \
	holds "$rh" "$fh" 'a >= 32 && a < b'
# the read alone in the fabric: its results go as one packet train; per
# packet (--no-trains) the same hops and completion, events by the packet
"$bench" model --preset 2group --message 64K --read --no-trains \
	> "$tmp/rdp.txt" || { echo "FAIL: read run per packet"; fail=1; }
check "read: one train, a handful of events ($(val "$tmp/rd.txt" events))" \
	holds "$(val "$tmp/rd.txt" trains)" "$(val "$tmp/rd.txt" events)" \
	'a == 1 && b < 10'
check "read per packet: no train, an event or more a result hop" \
	holds "$(val "$tmp/rdp.txt" trains)" "$(val "$tmp/rdp.txt" events)" \
	"a == 0 && b >= $rh"
check "read: the same hops and completion with trains and per packet" \
	sh -c "[ \"\$(grep -E '^(packet_hops|completion_ns) ' '$tmp/rd.txt')\" = \
		\"\$(grep -E '^(packet_hops|completion_ns) ' '$tmp/rdp.txt')\" ]"
"$bench" model --read > "$tmp/rd0.txt" 2> "$tmp/rd0.err"
check "read: only with --message (exit 2)" test $? -eq 2
check "read: only with --message says so" grep -q -- "--read: only with" \
	"$tmp/rd0.err"

# --- callgrind: without valgrind, a message and no figure ---
PATH=/nonexistent "$bench" model --preset 2group --load 0.2 --time 1 \
	--warmup 0 --no-baseline --callgrind > "$tmp/cg0.txt" 2> "$tmp/cg0.err"
check "callgrind: no valgrind is not a failure" test $? -eq 0
check "callgrind: no valgrind says so" grep -q "valgrind is not installed" \
	"$tmp/cg0.err"
check "callgrind: no valgrind, no instruction figure" \
	sh -c "! grep -q '^instructions_per_hop' '$tmp/cg0.txt'"
if command -v valgrind > /dev/null 2>&1; then
	"$bench" model --preset 2group --load 0.2 --time 1 --warmup 0 \
		--no-baseline --callgrind --callgrind-time 1 > "$tmp/cg.txt"
	ir=$(val "$tmp/cg.txt" callgrind_instructions)
	cgh=$(val "$tmp/cg.txt" callgrind_packet_hops)
	check "callgrind: instructions per hop = $ir / $cgh, > 100" \
		holds "$(val "$tmp/cg.txt" instructions_per_hop)" "$ir / $cgh" \
		"a > 100 && a - $ir / $cgh < 0.1 && $ir / $cgh - a < 0.1"
else
	echo "skip: valgrind not installed, the callgrind run is not tested"
fi

# --- pages: what 8-byte messages touch of a shared fabric ---
pg="$tmp/pages.txt"
SSEMU_SHM_DIR= "$bench" pages --messages 3 > "$pg" ||
	{ echo "FAIL: pages run"; cat "$pg"; fail=1; }
check "pages: every line is 'key value'" awk 'NF != 2 { exit 1 }' "$pg"
pt=$(val "$pg" pages_touched)
# (a message touches some tens of pages: a trace that counted every page
# of the fabric, or none, is broken)
check "pages: some pages touched ($pt), a small share of the fabric's" \
	holds "$pt" "$(val "$pg" fabric_pages)" 'a >= 8 && a < 200 && a < b'
check "pages: pages_per_message = touched / 3" \
	holds "$(val "$pg" pages_per_message)" "$pt / 3" \
	"a - $pt / 3 < 0.01 && $pt / 3 - a < 0.01"
check "pages: the engine's, the header's and the telemetry's among them" \
	sh -c "awk '\$1 == \"pages_engine\" && \$2 > 0 { e = 1 }
		\$1 == \"pages_header\" && \$2 > 0 { h = 1 }
		\$1 == \"pages_tel\" && \$2 > 0 { t = 1 }
		END { exit !(e && h && t) }' '$pg'"
check "pages: the sections account for every page touched" \
	sh -c "awk '/^pages_/ && \$1 != \"pages_touched\" &&
		\$1 != \"pages_per_message\" { n += \$2 }
		END { exit !(n >= $pt) }' '$pg'"
check "pages: no fabric left behind" \
	sh -c "! ls /dev/shm | grep -q '^bench-pages-'"

# adds_up FILE PREFIX TOTAL: FILE's PREFIX_<section> values sum to TOTAL
# (PREFIX_per_message not among them), to the figures' rounding
adds_up() {
	awk -v p="$2_" -v t="$3" 'index($1, p) == 1 && $1 != p "per_message" {
		n += $2 } END { exit !(n - t < 0.05 && t - n < 0.05) }' "$1"
}

# --- lines: the cache lines a message moves between two processes ---
if command -v valgrind > /dev/null 2>&1; then
	ln="$tmp/lines.txt"
	SSEMU_SHM_DIR= "$bench" lines --messages 20 > "$ln" ||
		{ echo "FAIL: lines run"; cat "$ln"; fail=1; }
	check "lines: every line is 'key value'" \
		awk 'NF != 2 { exit 1 }' "$ln"
	lt=$(val "$ln" transfers_per_message)
	lu=$(val "$ln" upgrades_per_message)
	# (a message moves some lines, tens at most: a count of none, or
	# of every line the run touches, is broken)
	check "lines: some lines move a message ($lt, $lu)" \
		holds "$lt" "$lu" 'a > 1 && a < 100 && b > 0 && b < 100'
	check "lines: the sections' transfers add up to the total" \
		adds_up "$ln" transfers "$lt"
	tt=$(val "$ln" touched_per_message)
	check "lines: a message touches more lines ($tt) than it moves ($lt)" \
		holds "$tt" "$lt" 'a > b && a < 1000'
	check "lines: the sections' touched lines add up to the total" \
		adds_up "$ln" touched "$tt"
	cl=$(val "$ln" code_lines_per_message)
	cp=$(val "$ln" code_pages_per_message)
	check "lines: a message's code on more lines ($cl) than pages ($cp), some" \
		holds "$cl" "$cp" 'b >= 1 && a > b && a <= 64 * b'
	check "lines: the process's own lines a message counted" \
		holds "$(val "$ln" own_lines_per_message)" 0 'a > 0'
	check "lines: the rings and the message slots among them" \
		sh -c "awk '\$1 == \"transfers_rings\" && \$2 > 0 { r = 1 }
			\$1 == \"transfers_msgs\" && \$2 > 0 { m = 1 }
			END { exit !(r && m) }' '$ln'"
	check "lines: no fabric left behind" \
		sh -c "! ls /dev/shm | grep -q '^bench-lines-'"
else
	echo "skip: lines: valgrind is not installed"
fi

# --- latency: the floor warm and cold, and what --evict changes ---
lat="$tmp/lat.txt"
"$bench" latency --iters 200 --evict 1 > "$lat" ||
	{ echo "FAIL: latency run"; cat "$lat"; fail=1; }
check "latency: every line is 'key value'" awk 'NF != 2 { exit 1 }' "$lat"
check "latency: the cold floor's walk and messages" \
	sh -c "grep -qx 'evict_mib 1' '$lat' && grep -qx 'cold_messages 200' '$lat'"
fl=$(val "$lat" floor_oneway_ns)
cf=$(val "$lat" floor_cold_oneway_ns)
# (to the printed figures' rounding: the ratio to 0.01, each time to 1 ns)
check "latency: ratio_cold_floor = $cf / $fl" \
	holds "$(val "$lat" ratio_cold_floor)" "$cf" \
	"$fl > 0 && b > 0 && (r = b / $fl) && (e = a - r) < (t = 0.006 + r * (0.6 / b + 0.6 / $fl)) && -e < t"
check "latency: the cold ring baseline measured" \
	holds "$(val "$lat" ring_cold_oneway_ns)" 0 'a > 0'
"$bench" latency --iters 50 --evict 0 > "$tmp/lat0.txt"
check "latency: --evict 0 runs no cold floor" \
	sh -c "! grep -q 'cold' '$tmp/lat0.txt' && grep -q '^floor_oneway_ns' '$tmp/lat0.txt'"

# --- switched: processes taking turns on one CPU, the figures' arithmetic ---
sw="$tmp/sw.txt"
"$bench" switched --procs 2 --iters 300 > "$sw" ||
	{ echo "FAIL: switched run"; cat "$sw"; fail=1; }
check "switched: every line is 'key value'" awk 'NF != 2 { exit 1 }' "$sw"
check "switched: the processes and messages asked for" \
	sh -c "grep -qx 'procs 2' '$sw' && grep -qx 'iters 300' '$sw'"
ry=$(val "$sw" round_yields_ns)
rm_=$(val "$sw" round_messages_ns)
so=$(val "$sw" switched_oneway_ns)
sf=$(val "$sw" floor_oneway_ns)
check "switched: rounds and the floor measured ($ry, $rm_, $sf)" \
	holds "$ry" "$rm_" "a > 0 && b > 0 && $sf > 0"
# (to the printed figures' rounding: each to 1 ns)
check "switched: switched_oneway_ns $so = ($rm_ - $ry) / 2" \
	holds "$so" "$rm_" "(e = a - (b - $ry) / 2) <= 1 && -e <= 1"
check "switched: ratio_switched_floor = $so / $sf" \
	holds "$(val "$sw" ratio_switched_floor)" "$so" \
	"(r = b / $sf) && (e = a - r) < (t = 0.006 + (r < 0 ? -r : r) * (0.6 / (b < 0 ? -b : b) + 0.6 / $sf)) && -e < t"

# --- bad input: a clear message on stderr, exit status 2 (1: preset) ---
bad() {	# bad EXPECTED_TEXT ARGS...: refused with exit status 2
	want=$1
	shift
	refused 2 "$want" "$bench" "$@"
}
bad "unknown routing 'zigzag' (minimal, adaptive, ugal, adaptive-nb)" \
	model --routing zigzag
bad "out of range (0, 1]" model --load 0
bad "out of range (0, 1]" model --load 1.5
bad "'abc' is not a number" model --load abc
bad "'-1' is not a non-negative integer" model --size -1
bad "out of range \[0, 65536\]" model --size 70000
bad "out of range \[1, 16777216\]" model --message 0
bad "out of range \[1, 16777216\]" model --message 17M
bad "'1X' is not a non-negative integer" model --message 1X
bad "out of range" model --time 0
bad "is not a number" model --warmup ''
bad "unknown mode 'fast' (model, latency, pages, lines, switched, all)" fast
bad "--messages: only with the pages and lines modes" latency --messages 2
bad "out of range \[1, 1000\]" pages --messages 1001
bad "unexpected argument 'more'" model more
bad "unknown option --frobnicate" model --frobnicate
bad "option --load needs a value" model --load
bad "--message: only with the model mode" latency --message 1M
bad "--message: only with the model mode" all --message 1M
bad "--routing: only with the model mode" latency --routing ugal
bad "--dst: only with --message" model --dst 3
bad "is not another endpoint of preset 2group (1..63)" \
	model --preset 2group --message 1K --dst 64
refused 1 "unknown preset 'nosuch'" "$bench" model --preset nosuch
bad "out of range \[0, 4096\]" latency --evict 5000
bad "--evict: only with the latency mode" model --evict 4
bad "out of range \[2, 64\]" switched --procs 1
bad "out of range \[2, 64\]" switched --procs 65
bad "--procs: only with the switched mode" latency --procs 4
bad "the switched mode takes --procs and --iters alone" switched --evict 1

[ $fail -eq 0 ] && echo "PASS: bench_fabric parses, refuses bad input, and its figures agree"
exit $fail
