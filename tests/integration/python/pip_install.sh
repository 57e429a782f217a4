#!/bin/sh
# `pip install .` of the repository into a fresh venv, as a newcomer does
# (PyPI reachable for the build backend), then checks the installed
# package: an abi3 extension that stands alone (libftc inside, only
# PyInit__ftc exported), has its subpackages, and works (a store round
# trip).
# usage: pip_install.sh SOURCE_DIR WORK_DIR
set -eu
src=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install --quiet --disable-pip-version-check \
  --cache-dir "$work/pip-cache" "$src"
so=$(ls "$work"/venv/lib/python3*/site-packages/ftc/_ftc.abi3.so)
if ldd "$so" | grep -q 'libftc\.so'; then
  echo "FAIL: $so links libftc.so"; exit 1
fi
exported=$(nm -D --defined-only "$so" | awk '$2 == "T" {print $3}')
if [ "$exported" != "PyInit__ftc" ]; then
  echo "FAIL: $so exports: $exported"; exit 1
fi
# the subpackages too (ftc.torchft needs torch, absent here: files only)
for f in torchft/__init__.py torchft/checkpointing/pg_transport.py; do
  if [ ! -f "$(dirname "$so")/$f" ]; then
    echo "FAIL: ftc/$f not installed"; exit 1
  fi
done
cd "$work" # not the source tree: the installed package is imported
"$py" - <<'PY'
import ftc
with ftc.StoreServer("127.0.0.1", 0) as srv, \
        ftc.Store("127.0.0.1", srv.port) as s:
    s.set("k", b"v")
    assert s.get("k") == b"v"
    assert s.add("n", 2) == 2
print("PASS: ftc", ftc.version(), "installed by pip from", ftc.__file__)
PY
