#!/usr/bin/env bash
# Installs the Debian packages ftc needs to build, test and benchmark, only
# when something is missing (quiet otherwise). Safe to run repeatedly.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config clang libclang-rt-14-dev
  clang-format
  libuv1-dev libmicrohttpd-dev libcurl4-openssl-dev libjansson-dev
  libxxhash-dev libsodium-dev libcmocka-dev
  libgnutls28-dev  # TLS of the healing client's chunk connections
  openssl          # test certificates (TLS tests)
  libjs-chart.js  # the dashboard's plots (embedded at build time)
  chromium        # the dashboard's test in a real browser
  libze1 libze-dev
  python3 python3-dev python3-venv python3-torch nodejs
  curl procps
  iproute2  # test hosts in network namespaces (scripts/testhosts.sh)
  etcd-server  # the highly available lighthouse's tests and demo
  libfabric1  # oneCCL's transport (xccl; scripts/ccl_deps.sh)
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "deps: installing ${missing[*]}"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# Another apt process may hold the lock for a while on a fresh machine.
for attempt in 1 2 3 4 5 6; do
  if $sudo apt-get update -qq && \
     $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" \
       >/tmp/ftc-apt.log 2>&1; then
    exit 0
  fi
  echo "deps: apt-get failed (attempt $attempt), see /tmp/ftc-apt.log; retrying"
  sleep $((attempt * 10))
done
echo "deps: could not install ${missing[*]}" >&2
exit 1
