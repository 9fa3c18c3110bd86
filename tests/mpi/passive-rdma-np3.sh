#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# passive.c on 3 ranks with osc rdma: the target sleeps outside MPI while the others lock, put, get and fetch-add on it
SSEMU_MPI_OSC=rdma exec "$(dirname "$0")/run-mpi.sh" 3 passive
