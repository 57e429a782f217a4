#!/usr/bin/env bash
# Barrier latency, side by side in one run: PyTorch's store-based barrier on
# PyTorch's own TCPStore server (torch 1.13 add+wait; torch 2.x add+wait and
# its _StoreCollectives.barrier) against ftc's control barrier on the ftc
# store (ftc bench control --op barrier). REPEAT passes are interleaved
# (every implementation once per pass, then the next pass), so load from
# other jobs on the machine hits all of them alike; each cell is the median
# p50 over the passes, and the ratio ours/theirs uses those medians
# (< 1 means ftc is faster).
#   bench/control_vs_torch.sh [RANKS] [REPEAT] [MODES]
#   (defaults: 4,16,64  3  threads,procs)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-4,16,64}
repeat=${2:-3}
modes=${3:-threads,procs}
ftc=build/tools/ftc/ftc
[[ -x $ftc ]] || { echo "build first: make build" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for pass in $(seq 1 "$repeat"); do
  echo "# pass $pass of $repeat ($(uptime | sed 's/.*load/load/'))"
  for mode in ${modes//,/ }; do
    /usr/bin/python3 bench/torch_barrier.py --ranks "$ranks" --mode "$mode" \
      --impl addwait | tee -a "$out"
    .venv/bin/python bench/torch_barrier.py --ranks "$ranks" --mode "$mode" \
      --impl addwait | tee -a "$out"
    .venv/bin/python bench/torch_barrier.py --ranks "$ranks" --mode "$mode" \
      --impl c10d | tee -a "$out"
    flag=""
    [[ $mode == procs ]] && flag=--procs
    $ftc bench control --op barrier --ranks "$ranks" $flag --json |
      sed 's/}$/,"impl":"ftc"}/' | tee -a "$out"
  done
done

python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
impls = sorted({r["impl"] for r in rows if r["impl"] != "ftc"})

def p50s(impl, mode, k):
    return [r["p50_us"] for r in rows
            if r["impl"] == impl and r["mode"] == mode and r["ranks"] == k]

print("\nbarrier p50 latency: median over passes [min..max], and ftc / torch"
      " (lower is better)")
print(f"{'mode':8} {'ranks':>5}  {'ftc us':>22}  " +
      "  ".join(f"{i:>34}" for i in impls))
for mode in ("threads", "procs"):
    for k in sorted({r["ranks"] for r in rows}):
        ours = p50s("ftc", mode, k)
        if not ours:
            continue
        m = statistics.median(ours)
        cells = []
        for impl in impls:
            t = p50s(impl, mode, k)
            if not t:
                cells.append(" " * 34)
                continue
            tm = statistics.median(t)
            cells.append(f"{tm:>8.0f} [{min(t):.0f}..{max(t):.0f}] x{m / tm:.2f}"
                         .rjust(34))
        span = f"{m:.0f} [{min(ours):.0f}..{max(ours):.0f}]"
        print(f"{mode:8} {k:>5}  {span:>22}  " + "  ".join(cells))
print(f"(passes: {max(len(p50s('ftc', r['mode'], r['ranks'])) for r in rows)})")
PY
