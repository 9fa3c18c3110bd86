#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# probe.c on 4 ranks over slingshot_emu (see run-mpi.sh and README.md).
exec "$(dirname "$0")/run-mpi.sh" 4 probe
