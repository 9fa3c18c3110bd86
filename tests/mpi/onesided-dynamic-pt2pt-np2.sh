#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# onesided.c, MPI_Win_dynamic windows, on 2 ranks with osc pt2pt (over the MTL's messages)
SSEMU_MPI_OSC=pt2pt exec "$(dirname "$0")/run-mpi.sh" 2 onesided -w dynamic
