#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# coll.c on 8 ranks over slingshot_emu (see run-mpi.sh and README.md); at
# most 16384 elements per reduction: 8 busy-polling ranks share 2 cores.
exec "$(dirname "$0")/run-mpi.sh" 8 coll -c 16384
