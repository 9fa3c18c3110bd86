#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
#
# Install the Debian packages slingshot-emu needs to build and test, and only
# those that are missing: does nothing (no apt-get at all) when everything is
# present.  Non-interactive; as a normal user it uses sudo when available,
# otherwise it prints the exact command to run.
#
# usage: scripts/install-deps.sh [--study]
#   --study (or STUDY=1): also the unmodified application the studies run,
#           LAMMPS (study/lammps-incast.sh; package lammps, /usr/bin/lmp)
set -euo pipefail

PACKAGES=(
	build-essential autoconf automake libtool pkg-config
	libfabric-dev libfabric-bin
	libopenmpi-dev openmpi-bin
	libcmocka-dev rdma-core libconfig-dev zlib1g-dev
	gnuplot-nox
)
STUDY_PACKAGES=(lammps)

study=${STUDY:-0}
for a in "$@"; do
	case $a in
	--study) study=1 ;;
	*) echo "usage: $0 [--study]" >&2; exit 2 ;;
	esac
done
if [ "$study" = 1 ]; then
	PACKAGES+=("${STUDY_PACKAGES[@]}")
fi

say() { echo "install-deps: $*"; }

if ! command -v dpkg-query >/dev/null 2>&1; then
	say "dpkg-query not found: this script supports Debian/Ubuntu only."
	say "install the equivalents of: ${PACKAGES[*]}"
	exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	if [ "$status" != "install ok installed" ]; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	say "all ${#PACKAGES[@]} packages present, nothing to do"
	exit 0
fi

say "missing: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
	SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	SUDO=(sudo -n)
elif command -v sudo >/dev/null 2>&1 && [ -t 0 ]; then
	SUDO=(sudo)
else
	say "not root and no usable sudo; please run:"
	echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
say "running apt-get update"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
say "installing: ${missing[*]}"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
	"${missing[@]}" </dev/null
say "installed ${#missing[@]} package(s): ${missing[*]}"
