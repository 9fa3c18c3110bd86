#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# Explicit placement for the study jobs: mpirun runs this wrapper, which
# attaches each rank's NIC to the fabric port listed for its rank, then
# execs the program.  usage (as mpirun's program):
#
#   mpirun ... study/place.sh PORTS PROGRAM [ARGS...]
#
# PORTS is a comma-separated list, one fabric port per rank in rank order
# (e.g. "0,16": rank 0 on port 0, rank 1 on port 16).  The rank comes from
# the launcher (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID);
# the provider honours FI_SLINGSHOT_EMU_PORT.
if [ $# -lt 2 ]; then
	echo "usage: $0 PORTS PROGRAM [ARGS...]" >&2
	exit 2
fi
ports=$1
shift
rank=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-${SLURM_PROCID:-}}}}
if [ -z "$rank" ]; then
	echo "$0: no rank in the environment (not run by a launcher?)" >&2
	exit 2
fi
port=$(echo "$ports" | cut -d, -f$((rank + 1)))
if [ -z "$port" ]; then
	echo "$0: rank $rank has no port in '$ports'" >&2
	exit 2
fi
FI_SLINGSHOT_EMU_PORT=$port
export FI_SLINGSHOT_EMU_PORT
exec "$@"
