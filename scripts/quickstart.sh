#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# The first Quick start command: install missing packages, build
# slingshot-emu in the source tree, then run the main job (main_job below)
# so a new user sees the emulated fabric working.  Safe to rerun: it only
# regenerates, configures and rebuilds what is out of date.
#
# Environment: JOBS (default 2), CONFIGURE_FLAGS (extra ./configure flags).
set -euo pipefail

cd "$(dirname "$0")/.."
jobs=${JOBS:-2}

step() { echo "==> $*"; }

build() {
	step "dependencies"
	bash scripts/install-deps.sh

	if [ ! -x configure ] || [ configure.ac -nt configure ]; then
		step "autogen.sh"
		./autogen.sh >/dev/null 2>&1 || ./autogen.sh
	fi
	if [ ! -f Makefile ] || [ ! -f config.status ] ||
	   [ configure -nt config.status ]; then
		step "configure ${CONFIGURE_FLAGS:-}"
		# shellcheck disable=SC2086
		./configure -q ${CONFIGURE_FLAGS:-}
	fi
	step "make -j$jobs"
	make -j"$jobs"
}

# ---------------------------------------------------------------------------
# MAIN JOB: what Quick start shows once the build is done.  Edit this
# function (and only this function) to change the demonstration, e.g. to run
# an MPI program over the provider with FI_PROVIDER=slingshot_emu.
# ---------------------------------------------------------------------------
main_job() {
	# An unmodified MPI program over FI_PROVIDER=slingshot_emu on a
	# shared emulated fabric; slingshot-emu prints the mpirun command it
	# runs and, at the end, what the fabric saw.
	export FI_PROVIDER_PATH="$PWD/prov/.libs"
	if [ -x examples/mpi_demo ]; then
		step "main job: 4 MPI ranks over the slingshot_emu provider"
		./util/slingshot-emu mpirun --oversubscribe -np 4 \
			examples/mpi_demo
	else
		step "main job: Open MPI is missing; running the model alone"
		./util/slingshot-emu sim --preset switch
	fi
}
# ---------------------------------------------------------------------------

build
main_job
step "done; run 'bash scripts/check.sh' for the test suite"
