#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# bottom.c on 2 ranks over slingshot_emu (see run-mpi.sh and README.md).
exec "$(dirname "$0")/run-mpi.sh" 2 bottom
