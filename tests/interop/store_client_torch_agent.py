"""A real PyTorch TCPStore for the store client interop tests.

Starts a TCPStore server (is_master=True, wait_for_workers=False) on
127.0.0.1, prints "PORT <n>", then runs commands read from stdin, one JSON
object per line, on a separate PyTorch *client* TCPStore connected to that
server, and answers each with one JSON line. EOF on stdin (or "exit") ends
it. Values travel as hex.

usage: python store_client_torch_agent.py [--legacy] [--port P]
  --legacy  torch 2.x: the legacy server (use_libuv=False) instead of libuv
  --port P  listen on P instead of an ephemeral port
"""
import argparse
import datetime
import json
import sys

import torch
import torch.distributed as dist

TIMEOUT = datetime.timedelta(seconds=60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--legacy", action="store_true")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    kw = {"wait_for_workers": False}
    if args.legacy:
        kw["use_libuv"] = False
    server = dist.TCPStore("127.0.0.1", args.port, None, True, TIMEOUT, **kw)
    client = dist.TCPStore("127.0.0.1", server.port, None, False, TIMEOUT,
                           wait_for_workers=False)
    print("PORT %d %s" % (server.port, torch.__version__), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "exit":
            break
        try:
            reply = {"ok": True, "result": run(client, cmd)}
        except Exception as e:  # the test asserts on the error text
            reply = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        print(json.dumps(reply), flush=True)


def run(client, cmd):
    op = cmd["op"]
    store = client
    if cmd.get("prefix"):
        store = dist.PrefixStore(cmd["prefix"], client)
    key = cmd.get("key")
    value = bytes.fromhex(cmd.get("value", ""))
    if "timeout_ms" in cmd:
        store.set_timeout(datetime.timedelta(milliseconds=cmd["timeout_ms"]))
    if op == "set":
        store.set(key, value)
        return None
    if op == "get":
        return store.get(key).hex()
    if op == "add":
        return store.add(key, cmd["delta"])
    if op == "wait":
        store.wait(cmd["keys"])
        return None
    if op == "check":
        return store.check(cmd["keys"])
    if op == "delete":
        return store.delete_key(key)
    if op == "num_keys":
        return store.num_keys()
    if op == "compare_set":
        return store.compare_set(key, bytes.fromhex(cmd["expected"]),
                                 value).hex()
    if op == "append":
        store.append(key, value)
        return None
    if op == "multi_get":
        return [v.hex() for v in store.multi_get(cmd["keys"])]
    if op == "queue_pop":
        return store.queue_pop(key, block=False).hex()
    raise ValueError("unknown op " + op)


if __name__ == "__main__":
    main()
