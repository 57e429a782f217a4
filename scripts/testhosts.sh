#!/usr/bin/env bash
# Test hosts: network namespaces on one bridge, each a "host" with its own
# address, so a test can see what a real network does to ftc (a host cut
# off, a pair of hosts that cannot reach each other) on one machine.
# Needs root and iproute2. Addresses exist only inside the namespaces; the
# bridge in the root namespace has none, so nothing reaches the machine's
# own networks. netem (delay, loss) is not in this kernel, nor are tc's
# classful qdiscs: a cut pair is made by pointing each side's neighbour
# entry for the other at a MAC address nobody has, so frames leave and
# vanish, as on a partitioned network (no error, no reset).
#
#   testhosts.sh up NAME N        hosts NAME-h0 .. NAME-h<N-1>, 10.77.0.<i+1>
#   testhosts.sh addr NAME I      prints host I's address
#   testhosts.sh exec NAME I CMD  runs CMD in host I
#   testhosts.sh cut NAME I       host I's link down (it keeps running)
#   testhosts.sh restore NAME I   its link up again
#   testhosts.sh crash NAME I     host I dies: its link down and kill -9
#                                 of every process inside
#   testhosts.sh split NAME I J   I and J cannot reach each other
#   testhosts.sh join NAME I J    they can again
#   testhosts.sh down NAME        removes everything of NAME, also after a
#                                 failed run, and kills what still runs
#                                 inside; succeeds when nothing was there
#   testhosts.sh left NAME        lists what of NAME exists (empty: none)
# NAME: 1-6 letters or digits (interface names are at most 15 bytes).
set -euo pipefail

die() {
  echo "testhosts: $*" >&2
  exit 2
}

[[ $# -ge 2 ]] || die "usage: testhosts.sh up|addr|exec|cut|restore|crash|split|join|down|left NAME ..."
cmd=$1
name=$2
shift 2
[[ $name =~ ^[a-z0-9]{1,6}$ ]] || die "NAME must be 1-6 lowercase letters or digits: '$name'"
bridge="ft${name}br"
nowhere="02:00:00:00:00:01" # a locally administered MAC no host has

ns() { echo "ft${name}-h$1"; }
outer() { echo "ft${name}o$1"; } # the veth end on the bridge
addr() { echo "10.77.0.$(($1 + 1))"; }
host_index() {
  [[ $1 =~ ^[0-9]+$ ]] || die "bad host index '$1'"
  ip netns list | grep -q "^$(ns "$1")\b" || die "no host $1 in '$name'"
}

up() {
  local n=$1 i
  [[ $n =~ ^[0-9]+$ && $n -ge 1 && $n -le 200 ]] || die "N must be 1-200"
  [[ -z $(left) ]] || die "'$name' exists already (testhosts.sh down $name)"
  ip link add "$bridge" type bridge
  ip link set "$bridge" up
  for ((i = 0; i < n; i++)); do
    ip netns add "$(ns $i)"
    ip link add "$(outer $i)" type veth peer name "ft${name}i$i"
    ip link set "ft${name}i$i" netns "$(ns $i)"
    ip -n "$(ns $i)" link set "ft${name}i$i" name eth0
    ip -n "$(ns $i)" addr add "$(addr $i)/24" dev eth0
    ip -n "$(ns $i)" link set lo up
    ip -n "$(ns $i)" link set eth0 up
    ip link set "$(outer $i)" master "$bridge"
    ip link set "$(outer $i)" up
  done
}

kill_inside() {
  local p
  for p in $(ip netns pids "$1" 2>/dev/null || true); do
    kill -9 "$p" 2>/dev/null || true
  done
}

down() {
  local n p
  for n in $(ip netns list | awk '{print $1}' | grep "^ft${name}-h[0-9]*$" || true); do
    # Processes started inside would keep the namespace's sockets alive.
    kill_inside "$n"
    ip netns del "$n"
  done
  for n in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 |
    grep -E "^ft${name}(br|o[0-9]+)$" || true); do
    ip link del "$n" 2>/dev/null || true
  done
}

left() {
  {
    ip netns list | awk '{print $1}' | grep "^ft${name}-h[0-9]*$" || true
    ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 |
      grep -E "^ft${name}(br|o[0-9]+)$" || true
  }
}

neighbour() { # $1 add|del, hosts $2 and $3
  local a=$2 b=$3
  if [[ $1 == add ]]; then
    ip -n "$(ns $a)" neigh replace "$(addr $b)" lladdr "$nowhere" dev eth0 nud permanent
    ip -n "$(ns $b)" neigh replace "$(addr $a)" lladdr "$nowhere" dev eth0 nud permanent
  else
    ip -n "$(ns $a)" neigh del "$(addr $b)" dev eth0 2>/dev/null || true
    ip -n "$(ns $b)" neigh del "$(addr $a)" dev eth0 2>/dev/null || true
  fi
}

case $cmd in
up) up "${1:?N}" ;;
addr)
  host_index "${1:?I}"
  addr "$1"
  ;;
exec)
  host_index "${1:?I}"
  i=$1
  shift
  exec ip netns exec "$(ns $i)" "$@"
  ;;
cut)
  host_index "${1:?I}"
  ip -n "$(ns $1)" link set eth0 down
  ;;
restore)
  host_index "${1:?I}"
  ip -n "$(ns $1)" link set eth0 up
  ;;
crash)
  host_index "${1:?I}"
  ip -n "$(ns $1)" link set eth0 down
  kill_inside "$(ns $1)"
  ;;
split | join)
  host_index "${1:?I}"
  host_index "${2:?J}"
  [[ $1 != "$2" ]] || die "a host cannot be split from itself"
  neighbour "$([[ $cmd == split ]] && echo add || echo del)" "$1" "$2"
  ;;
down) down ;;
left) left ;;
*) die "unknown command '$cmd'" ;;
esac
