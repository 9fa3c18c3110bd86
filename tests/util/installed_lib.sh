#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
#
# libssemu as its users get it: install the library, its headers and its
# pkg-config file into a staging directory (make install DESTDIR=...), build
# examples/ssemu_pingpong.c with nothing but the flags pkg-config gives for
# the staged copy, and run it against the staged shared library: the data
# must come back intact, and the program must have loaded that library.

top=${TOP_BUILDDIR:-.}
src=${TOP_SRCDIR:-.}
cc=${CC:-cc}

if ! command -v pkg-config >/dev/null 2>&1; then
	echo "SKIP: pkg-config not found (Debian: apt-get install pkg-config)"
	exit 77
fi
stage=$(mktemp -d "${TMPDIR:-/tmp}/ssemu-install.XXXXXX") || exit 99
trap 'rm -rf "$stage"' EXIT

# The parent make's job server is not ours to use.
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$top" \
	install-libLTLIBRARIES install-ssemuincludeHEADERS \
	install-pkgconfigDATA DESTDIR="$stage" >"$stage.log" 2>&1; then
	echo "ERROR: staged install failed:"
	cat "$stage.log"
	rm -f "$stage.log"
	exit 99
fi
rm -f "$stage.log"

pc=$(find "$stage" -name ssemu.pc | head -n 1)
if [ -z "$pc" ]; then
	echo "FAIL: no ssemu.pc installed"
	exit 1
fi
pcdir=$(dirname "$pc")
libdir=$stage$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir ssemu)
for f in "$libdir/libssemu.so" \
	"$stage$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=includedir ssemu)/slingshot_emu/ssemu.h"; do
	if [ ! -e "$f" ]; then
		echo "FAIL: $f not installed"
		exit 1
	fi
done

flags=$(PKG_CONFIG_PATH=$pcdir PKG_CONFIG_SYSROOT_DIR=$stage \
	pkg-config --cflags --libs ssemu) || exit 1
echo "pkg-config --cflags --libs ssemu: $flags"
# shellcheck disable=SC2086
if ! $cc -Wall -Werror -o "$stage/ssemu_pingpong" \
	"$src/examples/ssemu_pingpong.c" $flags; then
	echo "FAIL: examples/ssemu_pingpong.c does not build against the installed copy"
	exit 1
fi

loaded=$(LD_LIBRARY_PATH=$libdir ldd "$stage/ssemu_pingpong" |
	sed -n 's/.*libssemu\.so[^ ]* => \([^ ]*\).*/\1/p')
case $loaded in
"$libdir"/*) ;;
*)	echo "FAIL: the program loads libssemu from '$loaded', not $libdir"
	exit 1 ;;
esac

out=$(LD_LIBRARY_PATH=$libdir "$stage/ssemu_pingpong") || {
	echo "FAIL: ssemu_pingpong failed"
	echo "$out"
	exit 1
}
echo "$out"
echo "$out" | grep -q "there and back, correct" || {
	echo "FAIL: no round trip reported"
	exit 1
}
echo "ok: built with pkg-config, ran against $loaded"
