#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# The Slingshot paper's Figure 14 with unmodified MPI jobs: two
# bisection-bandwidth jobs (study/bisect) share one link of a realtime
# fabric (study/fig14.cfg).  Job A starts alone, job B joins, A ends, B
# survives.  Run twice:
#
#   separate  A in class TC80 (80% minimum share), B in TC20 (20%)
#   same      A and B both in TC80
#
# Each job reports its own bandwidth (MPI_Wtime intervals); independently,
# the fabric's per-class port counters and per-NIC counters are sampled
# while the jobs run (slingshot-emu stat --json), and the fabric's
# telemetry per job and class is read at the end (slingshot-emu report,
# which also draws its own per-class bandwidth plot).  Prints a table,
# writes PNG plots (gnuplot) and the raw data to $STUDY_OUT (default
# study-out/fig14), and checks:
#
#   separate: A's share of the link while both run is 80 +- 5 %, by each
#             of the four measures; B, once alone, gets at least 90% of
#             what A got alone;
#   same:     50 +- 5 %, the same way.
#
# usage: study/fig14.sh [--quick] [--dilation D]
#   --quick     short phases (about 25 s in all; what "make check" runs)
#   --dilation  wall ns per model ns (default 2000)
# Exit status: 0 all checks passed, 1 a check failed, 77 Open MPI or the
# provider is missing.

# shellcheck source=study/lib.sh
. "$(dirname "$0")/lib.sh"

quick=0
DILATION=2000
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--dilation) DILATION=$2; shift ;;
	*) echo "usage: $0 [--quick] [--dilation D]" >&2; exit 2 ;;
	esac
	shift
done
if [ $quick = 1 ]; then
	lead=2; a_time=6; b_time=7; interval=0.5
else
	lead=5; a_time=25; b_time=25; interval=1
fi
study_check bisect
study_need_gnuplot
cfg=$TOP_SRCDIR/study/fig14.cfg
# Senders on switch 0 (ports 0, 1), receivers on switch 1 (16, 17): both
# jobs' bulk crosses switch 0's one local port.
ports_a=0,16
ports_b=1,17

# run CASE CLASS_A CLASS_B
run_case() {
	c=$1
	log "$c: A ($2) alone for ${lead} s, then B ($3) joins;" \
		"A runs ${a_time} s, B ${b_time} s (dilation $DILATION)"
	study_fabric "ssemu-study-fig14-$c-$$" "$cfg"
	study_sample "$STUDY_OUT/$c.samples" 0.25
	study_job 2 "$2" $ports_a "$STUDY_OUT/$c.A.out" bisect \
		--label A --time $a_time --interval $interval
	pa=$job_pid
	study_wait_line "$STUDY_OUT/$c.A.out" start
	sleep $lead
	study_job 2 "$3" $ports_b "$STUDY_OUT/$c.B.out" bisect \
		--label B --time $b_time --interval $interval
	pb=$job_pid
	study_wait $pa "$STUDY_OUT/$c.A.out" 2
	study_wait $pb "$STUDY_OUT/$c.B.out" 2
	sleep 0.5
	# the fabric's own telemetry: summary, CSV and plots
	"$SSEMU_TOOL" report --fabric "$FI_SLINGSHOT_EMU_FABRIC" \
		--csv "$STUDY_OUT/$c-report" --plot "$STUDY_OUT/$c-report" \
		>"$STUDY_OUT/$c.report.txt" 2>&1 ||
		fail "slingshot-emu report failed: $(cat "$STUDY_OUT/$c.report.txt")"
	cp "$STUDY_OUT/$c-report/bandwidth.png" \
		"$STUDY_OUT/fig14-$c-report.png"
	study_fabric_end >"$STUDY_OUT/$c.fabric.txt"
	study_port_bw "$STUDY_OUT/$c.samples" 0 2 >"$STUDY_OUT/$c.linkbw"
	lag=$(study_max_lag_us "$STUDY_OUT/$c.samples")
	eval "lag_$c=$lag"
}

# Average of the jobs' "bw" lines over [FROM, TO] (epoch seconds), each
# weighted by how much of its interval lies inside, in model Gb/s.
job_bw() {
	awk -v from="$2" -v to="$3" -v d="$DILATION" '
		$1 == "bw" {
			for (i = 2; i <= NF; i++) {
				split($i, kv, "=")
				v[kv[1]] = kv[2]
			}
			# the part of the interval inside [from, to]
			lo = v["epoch"] - v["dt"]; hi = v["epoch"]
			if (lo < from) lo = from
			if (hi > to) hi = to
			if (hi > lo) {
				s += v["gbps"] * (hi - lo); t += hi - lo
			}
		}
		END { printf "%.1f", (t > 0 ? s / t * d : -1) }' "$1"
}

# Average counter bandwidth of CLASS on the shared link in [FROM, TO].
link_bw() {
	awk -v cls="$2" -v from="$3" -v to="$4" '
		$3 == cls && $1 >= from && $1 <= to { s += $4; n++ }
		END { printf "%.1f", (n > 0 ? s / n : -1) }' "$1"
}

# Column COL of job JOB's row in a report's summary.csv.
rep() {
	awk -F, -v j="$2" -v c="$3" '$1 == j { print $c; exit }' \
		"$1/summary.csv"
}

# Phase boundaries from the jobs' own lines, with a margin for the
# start-up and ramp of each job.  Four measures of each phase: the jobs'
# own numbers, the link's per-class counters (separate classes only: one
# class cannot tell the jobs apart), the receiving NICs' counters, and the
# fabric's telemetry per job and class (`slingshot-emu report`, which
# finds the phases by itself: "both" where both jobs received, "alone"
# the rest of each job's span).
analyse() {
	c=$1; ca=$2; cb=$3
	a0=$(field "$STUDY_OUT/$c.A.out" start epoch)
	b0=$(field "$STUDY_OUT/$c.B.out" start epoch)
	a1=$(field "$STUDY_OUT/$c.A.out" end epoch)
	b1=$(field "$STUDY_OUT/$c.B.out" end epoch)
	m=$(calc "$interval * 1.5")
	alone0=$(calc "$a0 + $m"); alone1=$b0
	both0=$(calc "$b0 + $m"); both1=$(calc "$a1 - $m")
	surv0=$(calc "$a1 + $m"); surv1=$(calc "$b1 - 0.3")
	f=$STUDY_OUT/$c.linkbw
	n=$STUDY_OUT/$c.nicbw
	study_nic_bw "$STUDY_OUT/$c.samples" >"$n"
	r=$STUDY_OUT/$c-report
	ja=$(awk -F, '$1 == 0 && $2 == 16 { print $3 }' "$r/pairs.csv")
	jb=$(awk -F, '$1 == 1 && $2 == 17 { print $3 }' "$r/pairs.csv")
	[ -n "$ja" ] && [ -n "$jb" ] ||
		fail "$c: slingshot-emu report has no traffic from port 0 or 1" \
			"($r/pairs.csv)"
	for src in job link nic report; do
		case $src in
		job)
			x1=$(job_bw "$STUDY_OUT/$c.A.out" $alone0 $alone1)
			x2=$(job_bw "$STUDY_OUT/$c.A.out" $both0 $both1)
			x3=$(job_bw "$STUDY_OUT/$c.B.out" $both0 $both1)
			x4=$(job_bw "$STUDY_OUT/$c.B.out" $surv0 $surv1) ;;
		link)
			[ "$ca" = "$cb" ] && continue
			x1=$(link_bw "$f" "$ca" $alone0 $alone1)
			x2=$(link_bw "$f" "$ca" $both0 $both1)
			x3=$(link_bw "$f" "$cb" $both0 $both1)
			x4=$(link_bw "$f" "$cb" $surv0 $surv1) ;;
		nic)
			x1=$(link_bw "$n" port16 $alone0 $alone1)
			x2=$(link_bw "$n" port16 $both0 $both1)
			x3=$(link_bw "$n" port17 $both0 $both1)
			x4=$(link_bw "$n" port17 $surv0 $surv1) ;;
		report)
			# both_gbps and alone_gbps of each job's series
			x1=$(rep "$r" "$ja" 12); x2=$(rep "$r" "$ja" 10)
			x3=$(rep "$r" "$jb" 10); x4=$(rep "$r" "$jb" 12) ;;
		esac
		share=$(calc "100 * $x2 / ($x2 + $x3)")
		surv=$(calc "100 * $x4 / $x1")
		eval "share_${c}_$src=$share surv_${c}_$src=$surv"
		fmt='%-9s %-6s %-6s %-6s | %8.1f %8.1f %8.1f %8.1f | %7.1f %7.1f\n'
		# shellcheck disable=SC2059 # the format is the one above
		printf "$fmt" "$c" "$ca" "$cb" "$src" "$x1" "$x2" "$x3" "$x4" \
			"$share" "$surv" >>"$STUDY_OUT/table.txt"
	done
	# the plot: counters per class (lines), jobs' own numbers (points),
	# on one time axis (wall seconds since A started)
	awk -v t0="$a0" -v cls="$ca" '$3 == cls { print $1 - t0, $4 }' \
		"$f" >"$STUDY_OUT/$c.link.A"
	awk -v t0="$a0" -v cls="$cb" '$3 == cls { print $1 - t0, $4 }' \
		"$f" >"$STUDY_OUT/$c.link.B"
	for j in A B; do
		awk -v t0="$a0" -v d="$DILATION" '$1 == "bw" {
			for (i = 2; i <= NF; i++) {
				split($i, kv, "="); v[kv[1]] = kv[2]
			}
			print v["epoch"] - v["dt"] / 2 - t0, v["gbps"] * d
		}' "$STUDY_OUT/$c.$j.out" >"$STUDY_OUT/$c.job.$j"
	done
	la="'$STUDY_OUT/$c.link.A' using 1:2 with lines lw 2"
	lb="'$STUDY_OUT/$c.link.B' using 1:2 with lines lw 2"
	if [ "$ca" = "$cb" ]; then
		lines="$la title 'link, class $ca (both jobs)'"
	else
		lines="$la title 'link, class $ca', $lb title 'link, class $cb'"
	fi
	gnuplot <<-EOF || fail "gnuplot failed on $c"
	set terminal pngcairo size 900,500 noenhanced
	set output '$STUDY_OUT/fig14-$c.png'
	set title 'Two bisection jobs on one link: $c ($ca / $cb), \
dilation $DILATION'
	set xlabel 'wall seconds since job A started'
	set ylabel 'Gb/s (model time)'
	set yrange [0:*]
	set key outside bottom center horizontal
	set grid
	plot $lines, \
	     '$STUDY_OUT/$c.job.A' using 1:2 with points pt 7 \
		title 'job A (its MPI_Wtime)', \
	     '$STUDY_OUT/$c.job.B' using 1:2 with points pt 5 \
		title 'job B (its MPI_Wtime)'
	EOF
}

rm -f "$STUDY_OUT/table.txt"
start=$(date +%s)
run_case separate TC80 TC20
run_case same TC80 TC80
analyse separate TC80 TC20
analyse same TC80 TC80

echo
echo "Figure 14: two bisection jobs over one shared link, in model Gb/s."
echo "job: the jobs' own numbers (bytes per MPI_Wtime interval x dilation"
echo "$DILATION); link: switch 0's port to switch 1, wire bytes per class; nic:"
echo "payload received by each job's receiving NIC (both from counters"
echo "sampled every 0.25 s); report: the fabric's telemetry per job and"
echo "class (slingshot-emu report).  A %: A's share while both run; surv %:"
echo "B alone after A ended, as a percentage of A alone before B started."
printf '%-9s %-6s %-6s %-6s | %8s %8s %8s %8s | %7s %7s\n' \
	case A B from "A alone" "A both" "B both" "B surv" "A %" "surv %"
cat "$STUDY_OUT/table.txt"
echo "paper: separate classes 80% / 20% while both run, the survivor gets"
echo "all of it; same class 50% / 50%"
# shellcheck disable=SC2154 # lag_* are set by eval in run_case
echo "max lag: separate ${lag_separate} us, same ${lag_same} us (model time)"
echo "plots: $STUDY_OUT/fig14-separate.png $STUDY_OUT/fig14-same.png"
echo "       $STUDY_OUT/fig14-separate-report.png" \
	"$STUDY_OUT/fig14-same-report.png (slingshot-emu report)"
echo "time: $(($(date +%s) - start)) s"

# The study needs the fabric, not the host, to be the bottleneck: job A
# alone must fill the link (193.9 Gb/s of payload at 200 Gb/s with 64-byte
# headers per 2 KiB packet).  If the host could not keep up, the shares
# below say nothing about the fabric.
x=$(awk '$1 == "separate" && $4 == "link" { print $6 }' "$STUDY_OUT/table.txt")
if ! check "$x >= 170"; then
	skip "host too busy: job A alone moved only $x Gb/s over the link" \
		"(200 Gb/s); rerun with a larger --dilation"
fi

bad=0
assert() {
	if check "$2"; then
		echo "ok: $1"
	else
		echo "NOT MET: $1"
		bad=1
	fi
}
# shellcheck disable=SC2154 # x, y are set by eval
for src in job link nic report; do
	eval "x=\$share_separate_$src y=\$surv_separate_$src"
	assert "separate classes ($src): A's share $x% is 80 +- 5" \
		"$x >= 75 && $x <= 85"
	assert "separate classes ($src): survivor B gets $y% (>= 90)" \
		"$y >= 90"
	[ $src = link ] && continue
	eval "x=\$share_same_$src y=\$surv_same_$src"
	assert "same class ($src): A's share $x% is 50 +- 5" \
		"$x >= 45 && $x <= 55"
	assert "same class ($src): survivor B gets $y% (>= 90)" "$y >= 90"
done
# The jobs' own windows: none shorter than half an interval (the short
# window at the end of a stream is joined to the one before it), so no
# point of the plot is a rate over a sliver of time.
short=$(cat "$STUDY_OUT"/*.A.out "$STUDY_OUT"/*.B.out | awk -v iv=$interval '
	$1 == "bw" { for (i = 2; i <= NF; i++) { split($i, kv, "=")
			 if (kv[1] == "dt" && kv[2] < iv / 2) n++ } }
	END { print n + 0 }')
assert "jobs' windows of at least half an interval ($short shorter)" \
	"$short == 0"
[ $bad = 0 ] || fail "Figure 14 targets not met (data in $STUDY_OUT)"
echo "PASS: fig14"
