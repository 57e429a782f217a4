#!/bin/sh
# Installs the build into a scratch prefix, moves the prefix (pkg-config's
# file and the CMake package must be relocatable), then builds against it
# with pkg-config alone, and again with CMake's find_package(ftc) alone:
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

# The CMake package: a consumer that knows only the moved prefix.
consume() {
  cmake -S "$src/tests/integration/install/consumer" -B "$work/consumer" \
    -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_C_COMPILER="$cc" \
    -DFTC_SOURCE_DIR="$src" -DFTC_WANT_VERSION="$1"
}
if consume 99 >"$work/consumer.log" 2>&1; then
  echo "install_test: find_package(ftc 99) accepted version $(pkg-config --modversion ftc)"
  exit 1
fi
rm -rf "$work/consumer"
consume 0.1 >"$work/consumer.log" 2>&1 || {
  cat "$work/consumer.log"
  exit 1
}
cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 || {
  cat "$work/consumer.log"
  exit 1
}
# ft_minimal and the shared probe find the moved libftc by their RPATH.
ldd "$work/consumer/ft_minimal" | grep -q "$work/prefix/.*libftc.so" || {
  echo "install_test: the CMake-built ft_minimal does not load the moved libftc"
  ldd "$work/consumer/ft_minimal"
  exit 1
}
"$work/consumer/probe_shared"
if ldd "$work/consumer/probe_static" | grep -q libftc; then
  echo "install_test: the CMake static probe loads libftc.so"
  exit 1
fi
"$work/consumer/probe_static"
echo "install_test: ok"
