#!/usr/bin/env bash
# Barrier latency, side by side in one run: PyTorch's store-based barrier on
# PyTorch's own TCPStore server (torch 1.13 add+wait; torch 2.x add+wait and
# its _StoreCollectives.barrier) against ftc's control barrier on the ftc
# store. Prints every measurement and the ratio ours/theirs at each rank
# count (< 1 means ftc is faster).
#   bench/control_vs_torch.sh [RANKS]      (default 4,16,64)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-4,16,64}
ftc=build/tools/ftc/ftc
[[ -x $ftc ]] || { echo "build first: make build" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for mode in threads procs; do
  /usr/bin/python3 bench/torch_barrier.py --ranks "$ranks" --mode $mode \
    --impl addwait | tee -a "$out"
  .venv/bin/python bench/torch_barrier.py --ranks "$ranks" --mode $mode \
    --impl addwait | tee -a "$out"
  .venv/bin/python bench/torch_barrier.py --ranks "$ranks" --mode $mode \
    --impl c10d | tee -a "$out"
  flag=""
  [[ $mode == procs ]] && flag=--procs
  $ftc bench control --op barrier --ranks "$ranks" $flag --json |
    sed 's/}$/,"impl":"ftc"}/' | tee -a "$out"
done

python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("\nbarrier p50 latency, ratio ftc / torch (lower is better):")
print(f"{'mode':8} {'ranks':>5}  {'ftc us':>8}  " + "  ".join(
    f"{i:>28}" for i in sorted({r['impl'] for r in rows if r['impl'] != 'ftc'})))
for mode in ("threads", "procs"):
    for k in sorted({r["ranks"] for r in rows}):
        ours = [r for r in rows if r["impl"] == "ftc" and r["mode"] == mode
                and r["ranks"] == k]
        if not ours:
            continue
        cells = []
        for impl in sorted({r["impl"] for r in rows if r["impl"] != "ftc"}):
            t = [r for r in rows if r["impl"] == impl and r["mode"] == mode
                 and r["ranks"] == k]
            cells.append(f"{t[0]['p50_us']:>10.0f} us  x{ours[0]['p50_us'] / t[0]['p50_us']:.2f}"
                         .rjust(28) if t else " " * 28)
        print(f"{mode:8} {k:>5}  {ours[0]['p50_us']:>8.0f}  " + "  ".join(cells))
PY
