#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# coll.c on 3 ranks over slingshot_emu (see run-mpi.sh and README.md).
exec "$(dirname "$0")/run-mpi.sh" 3 coll
