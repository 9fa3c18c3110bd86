#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# The short version of study/lammps-incast.sh that "make check" runs
# (docs/study.md); skips (77) without LAMMPS (Debian package lammps).
exec "${TOP_SRCDIR:-.}/study/lammps-incast.sh" --quick
