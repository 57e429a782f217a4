#!/usr/bin/env bash
# Unpacks the oneCCL C API for CPU buffers into .deps/oneccl/lib (ignored by
# git), for the xccl tests and benchmarks: the three files of the working
# CPU prefix in ../shared/reference/vendor-ccl.md, taken out of two PyPI
# wheels with `pip download --no-deps` (no pip install: oneccl-cpu 2022.2.0
# requires a libfabric>=2.6 no PyPI package provides; Debian's libfabric1
# from scripts/deps.sh serves instead). Quiet and instant when present.
#   libccl.so.1           oneccl-cpu 2022.2.0  (the C++ v1 API, CPU build)
#   libccl.so.2           oneccl 2022.2.0      (the onecclXxx C API)
#   libccl_legacy_cpu.so  oneccl 2022.2.0      (its CPU plugin)
# All three carry $ORIGIN RPATHs, so dlopen of the full path of libccl.so.2
# needs no LD_LIBRARY_PATH. Tests find it through FTC_CCL_LIBRARY, which
# CMake sets to <prefix>/lib/libccl.so.2 (cache variable FTC_CCL_PREFIX).
set -euo pipefail
cd "$(dirname "$0")/.."
version=2022.2.0
prefix=${FTC_CCL_PREFIX:-$PWD/.deps/oneccl}
files=(libccl.so.1 libccl.so.2 libccl_legacy_cpu.so)
stamp="$prefix/lib/.version"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
  ok=1
  for f in "${files[@]}"; do [[ -s "$prefix/lib/$f" ]] || ok=0; done
  [[ $ok -eq 1 ]] && exit 0
fi

python=/usr/bin/python3
[[ -x .venv/bin/python ]] && python=$PWD/.venv/bin/python
echo "ccl_deps: fetching oneccl-cpu and oneccl $version wheels (~100 MB, once)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for wheel in oneccl-cpu oneccl; do
  for attempt in 1 2 3 4; do
    if "$python" -m pip download -q --no-deps --only-binary=:all: \
         -d "$tmp/$wheel" "$wheel==$version" >"$tmp/pip.log" 2>&1; then
      break
    fi
    if [[ $attempt -eq 4 ]]; then
      cat "$tmp/pip.log" >&2
      echo "ccl_deps: could not download $wheel==$version" >&2
      exit 1
    fi
    echo "ccl_deps: pip download $wheel failed (attempt $attempt); retrying"
    sleep $((attempt * 10))
  done
done

# Take each file out of the wheel that must provide it (libccl.so.1 from
# the CPU build, the rest from the GPU build), into a fresh folder that
# replaces the old one only when all three are there.
mkdir -p "$tmp/lib"
"$python" - "$tmp" <<'EOF'
import glob, os, sys, zipfile
tmp = sys.argv[1]
want = {"oneccl-cpu": ["libccl.so.1"],
        "oneccl": ["libccl.so.2", "libccl_legacy_cpu.so"]}
for wheel, names in want.items():
    (path,) = glob.glob(os.path.join(tmp, wheel, "*.whl"))
    with zipfile.ZipFile(path) as z:
        for name in names:
            hits = [m for m in z.namelist()
                    if m.endswith("/lib/" + name)]
            if not hits:
                sys.exit(f"ccl_deps: {name} not in {os.path.basename(path)}")
            out = os.path.join(tmp, "lib", name)
            with z.open(sorted(hits, key=len)[0]) as src, \
                    open(out, "wb") as dst:
                dst.write(src.read())
            os.chmod(out, 0o755)
EOF
echo "$version" >"$tmp/lib/.version"
mkdir -p "$prefix"
rm -rf "$prefix/lib"
mv "$tmp/lib" "$prefix/lib"
echo "ccl_deps: oneCCL $version in $prefix/lib"
