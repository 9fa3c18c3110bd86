#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# LOG_COMPILER of "make check": runs one test under the suite's lock.
# Ordinary tests share it (make -j2 runs two at a time, as before); the
# studies (tests/study/*) take it alone, because each runs MPI jobs on a
# realtime fabric and measures wall-clock time: a unit test or another MPI
# test on the other core changes what they measure (on a 2-core machine a
# study's incast ran 2.8x slower *with* congestion control than without
# when it shared the CPU).  Without flock(1) the test just runs.
lock=${TOP_BUILDDIR:-.}/.test-lock
case "$1" in
*tests/study/*) mode=-x ;;
*) mode=-s ;;
esac
if command -v flock >/dev/null 2>&1; then
	exec flock "$mode" "$lock" "$@"
fi
exec "$@"
