#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The short version of study/incast.sh that "make check" runs (docs/study.md).
exec "${TOP_SRCDIR:-.}/study/incast.sh" --quick
