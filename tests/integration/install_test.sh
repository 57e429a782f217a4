#!/bin/sh
# Installs the build into a scratch prefix, moves the prefix (pkg-config's
# file must be relocatable), then builds against it with pkg-config alone:
# the README's ft_minimal, and a probe linked shared and static and run.
# The static probe takes its dependencies' shared libraries (a full
# static closure of libcurl is not installed on Debian).
# Usage: install_test.sh BUILD_DIR SOURCE_DIR CC WORK_DIR
set -eu
build=$1 src=$2 cc=$3 work=$4

rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/staged" >/dev/null
mv "$work/staged" "$work/prefix"
pc=$(find "$work/prefix" -name ftc.pc)
[ -n "$pc" ] || { echo "install_test: no ftc.pc installed"; exit 1; }
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc")
libdir=$(pkg-config --variable=libdir ftc)
case "$libdir" in
"$work/prefix"/*) ;;
*) echo "install_test: libdir $libdir is not under the moved prefix"; exit 1 ;;
esac
[ -x "$work/prefix/bin/ftc" ] || { echo "install_test: no ftc binary"; exit 1; }

compile() { "$cc" -std=c11 -Wall -Wextra -Werror "$@"; }
# pkg-config's output is a word list: unquoted on purpose below.
# shellcheck disable=SC2046
compile "$src/examples/ft_minimal.c" $(pkg-config --cflags --libs ftc) \
  -o "$work/ft_minimal"
# shellcheck disable=SC2046
compile "$src/tests/integration/install_probe.c" \
  $(pkg-config --cflags --libs ftc) -o "$work/probe_shared"
# shellcheck disable=SC2046
compile "$src/tests/integration/install_probe.c" \
  $(pkg-config --cflags ftc) "$libdir/libftc.a" \
  $(pkg-config --libs $(pkg-config --print-requires-private ftc)) \
  -lpthread -lm -o "$work/probe_static"

LD_LIBRARY_PATH=$libdir "$work/probe_shared"
if ldd "$work/probe_static" | grep -q libftc; then
  echo "install_test: the static probe loads libftc.so"
  exit 1
fi
"$work/probe_static"
echo "install_test: ok"
