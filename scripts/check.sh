#!/usr/bin/env bash
# The whole test suite (`make check`): dependencies, style, the normal build
# and its tests, then the same tests under ASan+UBSan, the threaded tests
# under TSan, and short fuzz runs. Stops at the first failing stage.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
t0=$SECONDS
stage() { printf '\n== %s (%ds)\n' "$*" $((SECONDS - t0)); }

stage "dependencies"
scripts/deps.sh
scripts/pydeps.sh
scripts/ccl_deps.sh

stage "style"
scripts/lint.sh

stage "build"
scripts/build.sh build
stage "tests"
ctest --test-dir build -j"$jobs" --output-on-failure --no-tests=error \
  -LE fuzz

stage "build with ASan+UBSan"
scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug \
  -DFTC_SANITIZE=address,undefined
stage "tests under ASan+UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
FTC_TEST_TIMEOUT_MULTIPLIER=3 \
  ctest --test-dir build-asan -j"$jobs" --output-on-failure --no-tests=error \
  -LE 'fuzz|nosan'

stage "build with TSan"
scripts/build.sh build-tsan -DCMAKE_BUILD_TYPE=Debug -DFTC_SANITIZE=thread
stage "threaded tests under TSan"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
FTC_TEST_TIMEOUT_MULTIPLIER=5 \
  ctest --test-dir build-tsan -j"$jobs" --output-on-failure --no-tests=ignore \
  -L threaded -LE nosan

stage "build fuzzers (clang libFuzzer)"
CC=clang scripts/build.sh build-fuzz -DCMAKE_BUILD_TYPE=Debug -DFTC_FUZZ=ON \
  -DFTC_SANITIZE=address,undefined
stage "fuzz runs"
ctest --test-dir build-fuzz -j"$jobs" --output-on-failure --no-tests=ignore \
  -L fuzz

stage "all passed"
