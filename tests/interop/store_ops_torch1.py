"""A real PyTorch 1.13 TCPStore client exercising every op it has against
the ftc store at 127.0.0.1:$FTC_STORE_PORT (tests/interop, run by
store_server_interop_test). Exits 0 only if every value is as expected.
1.13's Python TCPStore has no check(); its get() is WAIT + GET."""
import datetime
import os
import sys

import torch
import torch.distributed as dist

assert torch.__version__.startswith("1.13"), torch.__version__
PORT = int(os.environ["FTC_STORE_PORT"])
T = datetime.timedelta


def client(world_size=None, timeout=T(seconds=30)):
    return dist.TCPStore("127.0.0.1", PORT, world_size, False, timeout)


# world_size set: the client adds 1 to the raw key "init/" on creation.
s = client(world_size=1)
s.set("k", "v1")
assert s.get("k") == b"v1"
s.set("k", b"\x00binary\xff")
assert s.get("k") == b"\x00binary\xff"
assert s.add("counter", 5) == 5
assert s.add("counter", -7) == -2
assert s.get("counter") == b"-2"
# compare_set: the four cases
assert s.compare_set("cs", "x", "y") == b"x"  # missing, expected set
assert s.compare_set("cs", "", "first") == b"first"  # missing, expected ""
assert s.compare_set("cs", "first", "second") == b"second"  # equal
assert s.compare_set("cs", "first", "third") == b"second"  # different
# num_keys counts every key, init/ included: init/ k counter cs
assert s.num_keys() == 4, s.num_keys()
s.wait(["k", "counter"])
s.wait(["k"], T(seconds=5))
assert s.delete_key("k") is True
assert s.delete_key("k") is False
assert s.num_keys() == 3

# A second client sees the first one's keys, and a wait released by it.
other = client()
assert other.get("cs") == b"second"
big = os.urandom(3 << 20)
other.set("big", big)
assert s.get("big") == big

# A wait that times out (on its own client: after a timed-out wait a 1.13
# client's connection is out of step, as with PyTorch's own server).
waiter = client(timeout=T(seconds=30))
t0 = datetime.datetime.now()
try:
    waiter.wait(["never"], T(milliseconds=300))
    sys.exit("wait on a missing key did not time out")
except RuntimeError as e:
    assert "timeout" in str(e).lower() or "timed out" in str(e).lower(), e
assert datetime.datetime.now() - t0 < T(seconds=20)

# ADD on text closes that client's connection (as PyTorch's server does).
s.set("text", "abc")
bad = client()
try:
    bad.add("text", 1)
    sys.exit("add on text did not fail")
except RuntimeError:
    pass
assert s.get("text") == b"abc"
print("torch 1.13 client: every op ok")
