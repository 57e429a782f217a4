#!/bin/sh
# FT-DDP on the xccl backend trains exactly as on tcp: `ftc run` with 3
# replica groups x 2 ranks (min_replicas 3, so every step has the same
# participants) trains the example model once on each backend; every
# replica group must finish, and the parameters' checksum of every group
# on xccl must equal the tcp run's (the example's reductions are exact
# enough that oneCCL's order gives the same bits; if that ever changes,
# compare the losses within a tolerance instead and say so).
# Usage: train_test.sh FTC_CLI TRAIN_DDP
set -eu
ftc=$1 trainer=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for backend in tcp xccl; do
  if ! "$ftc" run --replicas 3 --ranks 2 --min-replicas 3 -- \
       "$trainer" --backend "$backend" --steps 60 >"$out/$backend" 2>&1; then
    grep -v CCL_WARN "$out/$backend" | tail -30
    echo "FAIL: ftc run on $backend"
    exit 1
  fi
  # The summary's replica rows: name, status, restarts, steps, loss, checksum.
  awk '$1 ~ /^replica_[0-9]+$/ && $2 == "finished" { print $6 }' \
      "$out/$backend" >"$out/$backend.sums"
  if [ "$(wc -l <"$out/$backend.sums")" -ne 3 ]; then
    grep -v CCL_WARN "$out/$backend" | tail -30
    echo "FAIL: $backend: not every replica group finished"
    exit 1
  fi
done
if [ "$(sort -u "$out/tcp.sums" "$out/xccl.sums" | wc -l)" -ne 1 ]; then
  echo "tcp: $(tr '\n' ' ' <"$out/tcp.sums") xccl: $(tr '\n' ' ' <"$out/xccl.sums")"
  echo "FAIL: the checksums differ"
  exit 1
fi
echo "PASS: 3 groups on xccl and on tcp, checksum $(head -1 "$out/tcp.sums")"
