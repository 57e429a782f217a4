"""The lighthouse's Prometheus metrics read by a real Prometheus text
parser (prometheus_client's), after a replica group was lost and came
back: every family parses, and the operator's figures are there (the
failure by cause, both recovery times, the step rate); after a live
`ftc run` with a kill, each replica group's own figures (incarnations,
failures, heals and their bytes, bytes served) add up, and every metric
the Grafana dashboard in docs/ queries is served.

Needs FTC_CLI (the ftc binary), FTC_TRAIN_DDP (the C trainer) and
prometheus_client."""
import json
import os
import re
import socket
import subprocess
import threading
import unittest
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

CALL_S = 30


DASHBOARD = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs",
                         "grafana", "ftc-dashboard.json")


class Lighthouse:
    def __init__(self, min_replicas=2, heartbeat_timeout_ms=600000):
        self.proc = subprocess.Popen(
            [os.environ["FTC_CLI"], "lighthouse", "--bind", "127.0.0.1:0",
             "--min-replicas", str(min_replicas),
             "--heartbeat-timeout-ms", str(heartbeat_timeout_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in self.proc.stdout:
            m = re.search(r"serving on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                return
        raise RuntimeError("the lighthouse did not start")

    def call(self, method, path, body=None):
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", method=method,
            data=None if body is None else json.dumps(body).encode())
        with urllib.request.urlopen(req, timeout=CALL_S) as r:
            text = r.read().decode()
            return json.loads(text) if text.startswith("{") else text

    def join(self, replica_id, step):
        return self.call("POST", "/v1/jobs/default/quorum",
                         {"member": {"replica_id": replica_id, "step": step},
                          "timeout_ms": CALL_S * 1000})

    def joins(self, members):
        """Joins each (id, step) on its own thread, in order: each is
        waiting before the next asks. Returns the answers."""
        out, threads = {}, []
        for rid, step in members:
            t = threading.Thread(
                target=lambda r=rid, s=step: out.__setitem__(r, self.join(r, s)))
            t.start()
            threads.append(t)
            if len(threads) < len(members):
                self.wait_participant(rid)
        for t in threads:
            t.join(CALL_S)
        return out

    def status(self, job="default"):
        return self.call("GET", f"/v1/jobs/{job}/status")

    def participants(self):
        """The ids waiting for a quorum (none while the job does not exist:
        its first join creates it)."""
        try:
            return [p["replica_id"] for p in self.status()["participants"]]
        except urllib.error.HTTPError as e:
            if e.code != 404:
                raise
            return []

    def wait_participant(self, rid):
        for _ in range(CALL_S * 100):
            if rid in self.participants():
                return
            threading.Event().wait(0.01)
        raise AssertionError(f"{rid} never waited")

    def close(self):
        self.proc.terminate()
        self.proc.wait(CALL_S)
        self.proc.stdout.close()


def parse(text):
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(families, family, suffix="", **labels):
    """The values of family+suffix whose labels include labels."""
    return [s.value for s in families[family].samples
            if s.name == family + suffix
            and all(s.labels.get(k) == v for k, v in labels.items())]


def dashboard_metrics():
    """The ftc_ metric names the Grafana dashboard's queries use (ftc_job
    is the label)."""
    with open(DASHBOARD) as f:
        board = json.load(f)
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    exprs += [v["query"]["query"] if isinstance(v["query"], dict)
              else v["query"] for v in board["templating"]["list"]
              if v["type"] == "query"]
    return exprs, {m for e in exprs for m in re.findall(r"\bftc_(?!job\b)\w+", e)}


class Metrics(unittest.TestCase):
    def test_families_after_a_failure(self):
        lh = Lighthouse()
        self.addCleanup(lh.close)
        lh.joins([("a:1", 5), ("b:1", 5)])
        lh.call("PUT", "/v1/jobs/default", {"min_replicas": 1})
        # b asks again and its connection drops while it waits: lost.
        s = socket.create_connection(("127.0.0.1", lh.port), timeout=CALL_S)
        body = json.dumps({"member": {"replica_id": "b:1", "step": 5},
                           "timeout_ms": CALL_S * 1000}).encode()
        s.sendall(b"POST /v1/jobs/default/quorum HTTP/1.1\r\n"
                  b"Host: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() +
                  b"\r\n\r\n" + body)
        lh.wait_participant("b:1")
        s.close()
        for _ in range(CALL_S * 100):
            if lh.status()["summary"]["last_failure"] is not None:
                break
            threading.Event().wait(0.01)
        # a retries step 5 alone, then commits it; b's next incarnation
        # joins and is level with a.
        lh.join("a:1", 5)
        lh.join("a:1", 6)
        lh.joins([("b:2", 7), ("a:1", 7)])
        failure = lh.status()["summary"]["last_failure"]
        self.assertEqual(failure["replica_id"], "b:1")
        self.assertIsNotNone(failure["survivors_ms"])
        self.assertIsNotNone(failure["back_ms"])

        text = lh.call("GET", "/metrics")
        families = parse(text)
        for name in ["ftc_lighthouse_quorums", "ftc_lighthouse_members",
                     "ftc_lighthouse_max_step", "ftc_lighthouse_member_lost",
                     "ftc_lighthouse_join_wait_seconds",
                     "ftc_lighthouse_recovery_seconds",
                     "ftc_lighthouse_steps_per_second",
                     "ftc_lighthouse_request_seconds",
                     "ftc_lighthouse_http_requests"]:
            self.assertIn(name, families, f"no {name} in:\n{text}")

        def sample(family, suffix, **labels):
            found = samples(families, family, suffix, **labels)
            self.assertEqual(len(found), 1, f"{family}{suffix} {labels}")
            return found[0]

        self.assertEqual(sample("ftc_lighthouse_member_lost", "_total",
                                ftc_job="default", cause="disconnect"), 1)
        self.assertEqual(families["ftc_lighthouse_recovery_seconds"].type,
                         "histogram")
        for kind in ["survivors", "back"]:
            self.assertEqual(sample("ftc_lighthouse_recovery_seconds",
                                    "_count", ftc_job="default", kind=kind), 1)
            self.assertEqual(sample("ftc_lighthouse_recovery_seconds",
                                    "_bucket", ftc_job="default", kind=kind,
                                    le="+Inf"), 1)
        self.assertEqual(sample("ftc_lighthouse_max_step", "",
                                ftc_job="default"), 7)
        # every answered request is timed: the status reads and the joins
        # a quorum answered on arrival (short), the joins that waited: a's
        # first (for b) and b:2's (for a), at least
        self.assertGreater(sample("ftc_lighthouse_request_seconds", "_count",
                                  kind="short"), 3)
        waited = sample("ftc_lighthouse_request_seconds", "_count",
                        kind="join")
        self.assertGreaterEqual(waited, 2)
        self.assertEqual(sample("ftc_lighthouse_request_seconds", "_bucket",
                                kind="join", le="+Inf"), waited)

    def test_replica_groups_of_a_live_run(self):
        """Two replica groups of train_ddp under `ftc run`, one killed at
        step 30: the victim's group counts two incarnations, one failure
        by disconnect and the heal that brought it back; the other group
        served at least the bytes the victim received."""
        lh = Lighthouse(min_replicas=1, heartbeat_timeout_ms=5000)
        self.addCleanup(lh.close)
        run = subprocess.run(
            [os.environ["FTC_CLI"], "run", "--lighthouse",
             f"127.0.0.1:{lh.port}", "--job", "live", "--replicas", "2",
             "--kill-at-steps", "30", "--seed", "3", "--quiet", "--",
             os.environ["FTC_TRAIN_DDP"], "--steps", "150",
             "--step-sleep-ms", "5"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=CALL_S * 3)
        self.assertEqual(run.returncode, 0, run.stdout)
        status = lh.status("live")
        failures = status["history"]["failures"]
        self.assertEqual(len(failures), 1, status["history"])
        victim = failures[0]["replica_id"].split(":")[0]
        groups = {r["group"]: r for r in status["replicas"]}
        self.assertEqual(len(groups), 2, status["replicas"])
        other = next(g for g in groups if g != victim)

        text = lh.call("GET", "/metrics")
        families = parse(text)

        def of(family, group, suffix="", **labels):
            found = [v for s in families[family].samples
                     if s.name == family + suffix
                     and s.labels["ftc_job"] == "live"
                     and s.labels["replica"] == group
                     and all(s.labels.get(k) == v for k, v in labels.items())
                     for v in [s.value]]
            self.assertEqual(len(found), 1, f"{family}{suffix} {group}")
            return found[0]

        self.assertEqual(of("ftc_lighthouse_replica_incarnations", victim,
                            "_total"), 2)
        self.assertEqual(of("ftc_lighthouse_replica_incarnations", other,
                            "_total"), 1)
        for cause, n in [("disconnect", 1), ("heartbeat", 0), ("kill", 0)]:
            self.assertEqual(of("ftc_lighthouse_replica_failures", victim,
                                "_total", cause=cause), n, cause)
            self.assertEqual(of("ftc_lighthouse_replica_failures", other,
                                "_total", cause=cause), 0, cause)
        heals = of("ftc_lighthouse_replica_heals", victim, "_total")
        healed = of("ftc_lighthouse_replica_heal_bytes", victim, "_total")
        self.assertGreaterEqual(heals, 1)
        self.assertGreater(healed, 0)
        self.assertGreater(of("ftc_lighthouse_replica_heal_seconds", victim,
                              "_total"), 0)
        self.assertGreaterEqual(
            of("ftc_lighthouse_replica_served_bytes", other, "_total"), healed)
        for g in (victim, other):
            self.assertEqual(of("ftc_lighthouse_replica_healing_bytes", g), 0)
            self.assertGreaterEqual(of("ftc_lighthouse_replica_step", g), 100)
        # the status JSON says the same
        self.assertEqual(groups[victim]["heals"], heals)
        self.assertEqual(groups[victim]["heal_bytes"], healed)
        self.assertEqual(groups[victim]["failures"]["disconnect"], 1)

        # every metric the Grafana dashboard queries is served
        exprs, names = dashboard_metrics()
        self.assertGreater(len(exprs), 10)
        self.assertGreater(len(names), 15)
        served = {s.name for f in families.values() for s in f.samples}
        for name in sorted(names):
            self.assertIn(name, served, f"the dashboard's {name} is not served")
        for e in exprs:
            self.assertNotRegex(e, r"\bjob=", "the ftc job's label is ftc_job")


if __name__ == "__main__":
    unittest.main()
