#!/bin/sh
# Regenerate the build system.  Run from the top of the source tree.
set -e
if [ ! -f configure.ac ] || [ ! -d emu ]; then
	echo "autogen.sh: run me from the top of the slingshot-emu tree" >&2
	exit 1
fi
autoreconf -ivf
