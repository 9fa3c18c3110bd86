#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Modelled jobs on a realtime fabric follow the dilated wall clock while
# the real job computes: `slingshot-emu run` runs the engine for them, so
# a job that only sleeps still sees model time pass and the modelled job
# deliver (dilation 20000: 1 s of wall time is 50 us of model time).  A
# fabric the host cannot keep up with (dilation 1: a 48-rank all-to-all in
# real time) says so in `status`, with a dilation that would keep up.
# Only lower bounds and the presence of the note are checked: the wall
# clock of a shared host gives no more.

tool="${TOP_BUILDDIR:-.}/util/slingshot-emu"
tmp=$(mktemp -d) || exit 99
fabric="ssemu-test-rtmj-$$"
trap 'rm -rf "$tmp"; rm -f "/dev/shm/$fabric"' EXIT
fail=0

. "$(dirname "$0")/../util/cli_lib.sh"

cat >"$tmp/fabric.cfg" <<CFG
preset = "2group";
clock = "realtime";
resources = { max_nics = 64; max_eps = 64; };
modelled_jobs = ( { name = "a2a"; endpoints = 48; pattern = "alltoall";
                    size = 65536; inflight = 4; } );
CFG
FI_SLINGSHOT_EMU_CONFIG="$tmp/fabric.cfg"
FI_SLINGSHOT_EMU_FABRIC=$fabric
FI_SLINGSHOT_EMU_CLOCK=realtime
export FI_SLINGSHOT_EMU_CONFIG FI_SLINGSHOT_EMU_FABRIC FI_SLINGSHOT_EMU_CLOCK

# the job: sleep, then look at the fabric
job="sleep 1; \"$tool\" status --fabric $fabric"

FI_SLINGSHOT_EMU_DILATION=20000 "$tool" run -- sh -c "$job" \
	>"$tmp/slow.out" 2>&1
cat "$tmp/slow.out"
us=$(sed -n 's/^  model time \([0-9.]*\) us.*/\1/p' "$tmp/slow.out" | head -1)
del=$(awk '$1 == "a2a" { print $4; exit }' "$tmp/slow.out")
check "model time passed while the job slept (${us:-none} us >= 20)" \
	awk "BEGIN { exit !(${us:-0} >= 20) }"
check "the modelled job delivered while the job slept (${del:-none})" \
	test "${del:-0}" -gt 0
check "no lag note at dilation 20000" \
	sh -c "! grep -q 'not keeping up' '$tmp/slow.out'"

FI_SLINGSHOT_EMU_DILATION=1 "$tool" run -- sh -c "$job" \
	>"$tmp/fast.out" 2>&1
cat "$tmp/fast.out"
check "status says the host is not keeping up at dilation 1" \
	grep -q 'not keeping up: .* a dilation of about [0-9]* would keep up' \
	"$tmp/fast.out"

exit $fail
