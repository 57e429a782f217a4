"""A real PyTorch 2.x TCPStore client, which cannot authenticate, against
an ftc store that has a token and opens the prefix "torch/"
(store_server_interop_test): it uses keys under the prefix, sees no key
outside it, and the first request that names a key outside closes its
connection. Exits 0 only if all of that held."""
import datetime
import os

import torch
import torch.distributed as dist

assert torch.__version__.startswith("2."), torch.__version__
PORT = int(os.environ["FTC_STORE_PORT"])

s = dist.TCPStore("127.0.0.1", PORT, None, False, datetime.timedelta(seconds=30))
p = dist.PrefixStore("torch", s)
p.set("a", "1")
assert p.get("a") == b"1"
assert p.add("n", 2) == 2
assert p.compare_set("a", "1", "2") == b"2"
assert s.check(["torch/a", "torch/n"]) is True
# The server holds "secret/addr" too (set by the test with the token):
# this client counts only its own keys.
assert s.num_keys() == 2, s.num_keys()
try:
    s.get("secret/addr")
except (RuntimeError, dist.DistError) as e:
    print("refused as expected:", type(e).__name__)
else:
    raise SystemExit("a key outside the open prefix was served")
print("torch", torch.__version__, "open prefix ok")
