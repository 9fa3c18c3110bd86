#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# onesided.c, MPI_Win_allocate windows, on 4 ranks with osc pt2pt (Open MPI 4.1.4's osc rdma crashes on allocate windows)
SSEMU_MPI_OSC=pt2pt exec "$(dirname "$0")/run-mpi.sh" 4 onesided -w allocate
