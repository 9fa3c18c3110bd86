#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# passive.c on 2 ranks with osc rdma
SSEMU_MPI_OSC=rdma exec "$(dirname "$0")/run-mpi.sh" 2 passive
