#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The short version of study/fig13.sh that "make check" runs (docs/study.md).
exec "${TOP_SRCDIR:-.}/study/fig13.sh" --quick
