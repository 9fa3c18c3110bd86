#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# onesided.c, MPI_Win_dynamic windows, on 4 ranks with osc rdma over btl ofi (the provider's RMA and atomics)
SSEMU_MPI_OSC=rdma exec "$(dirname "$0")/run-mpi.sh" 4 onesided -w dynamic
