"""A real PyTorch 2.x TCPStore client exercising every op it has against
the ftc store at 127.0.0.1:$FTC_STORE_PORT (tests/interop, run by
store_server_interop_test). Exits 0 only if every value is as expected."""
import datetime
import os
import sys
import threading

import torch
import torch.distributed as dist

assert torch.__version__.startswith("2."), torch.__version__
PORT = int(os.environ["FTC_STORE_PORT"])
T = datetime.timedelta


def client(world_size=None, timeout=T(seconds=30)):
    return dist.TCPStore("127.0.0.1", PORT, world_size, False, timeout)


s = client(world_size=1)  # adds 1 to the raw key "init/"
assert s.has_extended_api()
s.set("k", "v1")
assert s.get("k") == b"v1"
assert s.add("counter", 5) == 5
assert s.add("counter", -7) == -2
assert s.get("counter") == b"-2"
assert s.compare_set("cs", "x", "y") == b"x"
assert s.compare_set("cs", "", "first") == b"first"
assert s.compare_set("cs", "first", "second") == b"second"
assert s.compare_set("cs", "first", "third") == b"second"
assert s.check(["k", "counter"]) is True
assert s.check(["k", "missing"]) is False
s.wait(["k", "cs"])
s.wait(["k"], T(seconds=5))
assert s.num_keys() == 4, s.num_keys()  # init/ k counter cs
assert s.delete_key("k") is True
assert s.delete_key("k") is False
s.append("ap", "ab")
s.append("ap", "cd")
assert s.get("ap") == b"abcd"
s.multi_set(["m1", "m2"], ["x", "yy"])
assert s.multi_get(["m2", "ap", "m1"]) == [b"yy", b"abcd", b"x"]
assert sorted(s.list_keys()) == ["ap", "counter", "cs", "m1", "m2"], \
    s.list_keys()

# A wait that times out is cancelled in-protocol: the client stays usable.
t0 = datetime.datetime.now()
try:
    s.wait(["never"], T(milliseconds=300))
    sys.exit("wait on a missing key did not time out")
except dist.DistStoreError as e:
    assert "timeout" in str(e).lower(), e
assert datetime.datetime.now() - t0 < T(seconds=20)
s.set("after", "still in step")
assert s.get("after") == b"still in step"

# A wait released by another client.
other = client()
result = {}


def waiter():
    w = client()
    w.wait(["late"], T(seconds=30))
    result["late"] = w.get("late")


th = threading.Thread(target=waiter)
th.start()
other.set("late", "arrived")
th.join(60)
assert result.get("late") == b"arrived", result

# Big values both ways.
big = os.urandom(5 << 20)
other.set("big", big)
assert s.get("big") == big
assert s.multi_get(["big", "ap"]) == [big, b"abcd"]

# Queues: FIFO, length, empty pop, blocking pop woken by a push.
assert s.queue_len("q") == 0
s.queue_push("q", "one")
s.queue_push("q", "two")
assert s.queue_len("q") == 2
assert s.check(["q"]) is True  # a non-empty queue is present
assert s.queue_pop("q") == b"one"
assert s.queue_pop("q", False) == b"two"
try:
    s.queue_pop("q", False)
    sys.exit("pop of an empty queue did not fail")
except dist.QueueEmptyError:
    pass
popped = {}


def popper():
    popped["v"] = client().queue_pop("q2")


th = threading.Thread(target=popper)
th.start()
other.queue_push("q2", "pushed")
th.join(60)
assert popped.get("v") == b"pushed", popped

# Barrier: two clients meet; one alone times out and stays usable.
done = []


def arrive():
    client().barrier("bar", 2, T(seconds=30))
    done.append(1)


th = threading.Thread(target=arrive)
th.start()
s.barrier("bar", 2, T(seconds=30))
th.join(60)
assert done == [1]
try:
    s.barrier("lonely", 2, T(milliseconds=300))
    sys.exit("a barrier of one did not time out")
except dist.DistStoreError:
    pass
assert s.get("after") == b"still in step"

# ADD on text closes that client's connection only.
s.set("text", "abc")
try:
    client().add("text", 1)
    sys.exit("add on text did not fail")
except (RuntimeError, dist.DistError):
    pass
assert s.get("text") == b"abc"
print("torch", torch.__version__, "client: every op ok")
