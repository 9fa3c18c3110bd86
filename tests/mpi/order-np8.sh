#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# order.c on 8 ranks over slingshot_emu (see run-mpi.sh and README.md).
exec "$(dirname "$0")/run-mpi.sh" 8 order
