#!/usr/bin/env bash
# Creates .venv with a current PyTorch 2.x from PyPI for the interop tests
# and benchmarks (Debian's python3-torch provides 1.13 to /usr/bin/python3),
# and the other packages the tests need (numpy; prometheus_client, whose
# parser reads the lighthouse's metrics; expecttest, which PyTorch's own
# distributed test suite imports; torchft-nightly, whose wheel ships the
# process-group tests run against ftc, and parameterized, which they
# import). A venv that already imports the pinned torch only gets what it
# lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
req=tests/interop/requirements.txt
want=$(sed -n 's/^torch==//p' "$req")
if [[ -x .venv/bin/python ]] &&
   .venv/bin/python -c "import torch,sys; sys.exit(torch.__version__.split('+')[0] != '$want')" 2>/dev/null; then
  if .venv/bin/python -c "import numpy, prometheus_client, expecttest, parameterized, torchft.process_group_test" 2>/dev/null; then
    exit 0
  fi
  echo "pydeps: adding the test packages torch's venv lacks"
  exec .venv/bin/pip install -q -r "$req"
fi
echo "pydeps: installing torch $want into .venv (several GB, once)"
rm -rf .venv
/usr/bin/python3 -m venv .venv
for attempt in 1 2 3; do
  if .venv/bin/pip install -q -r "$req"; then
    exit 0
  fi
  echo "pydeps: pip failed (attempt $attempt); retrying"
  sleep $((attempt * 10))
done
exit 1
