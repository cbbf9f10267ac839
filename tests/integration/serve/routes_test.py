#!/usr/bin/env python3
"""Resign, own lease, watch and per-client tokens of `leader serve` (the real binary, SQLite files
and a private redis-server on port 17702 started and killed by PID).

Usage: routes_test.py LEADER_BINARY [unittest args]. The store is the judge of who holds a lock:
`leader status` (another process) reads it. Exit 77 = skipped.
"""
import http.client
import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_test  # noqa: E402
from serve_test import Base, eventually, leader_status  # noqa: E402


class EventStream:
    """A GET of a Server-Sent Events route, read on a thread: (status, events as (name, data))."""

    def __init__(self, url, path, headers=None):
        host, port = url[len("http://"):].split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.conn.request("GET", path, headers=headers or {})
        self.res = self.conn.getresponse()
        self.status = self.res.status
        self.events = queue.Queue()
        self.ended = threading.Event()
        if self.status == 200:
            threading.Thread(target=self.read, daemon=True).start()
        else:
            self.body = json.loads(self.res.read().decode())
            self.ended.set()

    def read(self):
        name, data = None, None
        try:
            for raw in self.res:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data = json.loads(line[6:])
                elif line == "" and name:
                    self.events.put((name, data))
                    name, data = None, None
        except Exception:  # noqa: BLE001  the stream was closed under the reader
            pass
        self.ended.set()

    def next(self, timeout=15):
        return self.events.get(timeout=timeout)

    def close(self):
        if self.conn.sock:
            self.conn.sock.shutdown(2)
        self.res.close()
        self.conn.close()


class RoutesTest(Base):
    def test_resign_hands_the_campaign_to_the_standby(self):
        a = self.sidecar("--node-id", "a", "--campaign", "camp", "--campaign-ttl", "4s")
        self.assertTrue(eventually(lambda: a.get("/v1/leader/camp")[1]["leader"]))
        b = self.sidecar("--node-id", "b", "--campaign", "camp", "--campaign-ttl", "4s")
        token = a.get("/v1/leader/camp")[1]["fencing_token"]
        status, reply = a.post("/v1/leader/camp/resign", {"x": 1})
        self.assertEqual((status, reply["error"]), (400, "unknown_field"), reply)
        self.assertEqual(a.post("/v1/leader/camp/resign"),
                         (200, {"resigned": True, "lock": "camp", "fencing_token": token}))
        self.assertFalse(a.get("/v1/leader/camp")[1]["leader"])
        status, reply = a.post("/v1/leader/camp/resign")
        self.assertEqual((status, reply["error"]), (409, "not_leader"), reply)
        status, reply = a.post("/v1/leader/other/resign")
        self.assertEqual((status, reply["error"]), (404, "not_campaigning"), reply)
        # The standby takes over long before a's hold-off (the lease time) would let a back in.
        started = time.monotonic()
        self.assertTrue(eventually(lambda: b.get("/v1/leader/camp")[1]["leader"], 10))
        self.assertLess(time.monotonic() - started, 4.0)
        code, seen = leader_status(self.store, "camp")
        self.assertEqual((code, seen["holders"][0]["node_id"]), (0, "b"), seen)
        self.assertGreater(seen["holders"][0]["fencing_token"], token)
        self.assertFalse(a.get("/v1/leader/camp")[1]["leader"])
        status, reply = b.post("/v1/leader/camp/resign")
        self.assertEqual(status, 200, reply)
        self.assertEqual(a.stop(), 0)
        self.assertEqual(b.stop(), 0)

    def test_own_lease_by_its_id_only(self):
        s = self.sidecar("-v")
        status, lease = s.post("/v1/locks/job/acquire", {"ttl": "20s", "node_id": "c1"})
        self.assertEqual(status, 200, lease)
        lid = lease["lease_id"]
        status, seen = s.get("/v1/leases/" + lid)
        self.assertEqual(status, 200, seen)
        self.assertNotIn("lease_id", seen)
        self.assertEqual((seen["lock"], seen["node_id"], seen["fencing_token"]),
                         ("job", "c1", lease["fencing_token"]))
        off_by_one = lid[:-1] + ("0" if lid[-1] != "0" else "1")
        for wrong in (off_by_one, lid[:16], lid.upper(), lid + "0", "x"):
            status, reply = s.get("/v1/leases/" + wrong)
            self.assertEqual((status, reply["error"]), (404, "unknown_lease"), (wrong, reply))
        _, short = s.post("/v1/locks/short/acquire", {"ttl": "1s"})
        self.assertTrue(eventually(lambda: s.get("/v1/leases/" + short["lease_id"])[0] == 404, 5))
        self.assertEqual(s.post("/v1/locks/job/release", {"lease_id": lid})[0], 200)
        status, reply = s.get("/v1/leases/" + lid)
        self.assertEqual((status, reply["error"]), (404, "unknown_lease"))
        self.assertEqual(s.stop(), 0)
        log = s.stderr()
        self.assertIn("GET /v1/leases/{id} -> 200", log)
        for secret in (lid, short["lease_id"], off_by_one):
            self.assertNotIn(secret, log)

    def test_watch_streams_each_change_of_the_holders(self):
        s = self.sidecar("--threads", "3")
        w = EventStream(s.url, "/v1/locks/job/watch")
        self.assertEqual(w.status, 200)
        self.assertEqual(w.res.getheader("Content-Type"), "text/event-stream")
        self.assertEqual(w.next(), ("holders", {"lock": "job", "held": False, "holders": []}))
        # --threads 3 leaves one waiting request: a second watch is refused.
        other = EventStream(s.url, "/v1/locks/job/watch")
        self.assertEqual((other.status, other.body["error"]), (429, "too_many_waits"))
        _, lease = s.post("/v1/locks/job/acquire", {"ttl": "20s", "node_id": "c1"})
        name, data = w.next()
        self.assertEqual((name, data["held"], data["holders"][0]["node_id"],
                          data["holders"][0]["fencing_token"]),
                         ("holders", True, "c1", lease["fencing_token"]))
        self.assertEqual(s.post("/v1/locks/job/release", {"lease_id": lease["lease_id"]})[0], 200)
        self.assertEqual(w.next(), ("holders", {"lock": "job", "held": False, "holders": []}))
        # Another process takes the lock: the stream reports the store, not only the sidecar.
        run = subprocess_run_holding(self.store, "job", "judge")
        try:
            name, data = w.next()
            self.assertEqual((data["held"], data["holders"][0]["node_id"]), (True, "judge"))
        finally:
            run.send_signal(signal.SIGTERM)
            run.wait(timeout=30)
        self.assertEqual(w.next(), ("holders", {"lock": "job", "held": False, "holders": []}))
        self.assertRaises(queue.Empty, w.next, 1.5)  # an event per change only
        # The client leaves: its worker and wait slot are freed.
        w.close()

        status, reply = s.get("/v1/locks/_bad/watch")
        self.assertEqual((status, reply["error"]), (400, "invalid_lock_name"))
        streams = []

        def accepted():
            again = EventStream(s.url, "/v1/locks/job/watch")
            if again.status == 200:
                streams.append(again)
            return bool(streams)
        self.assertTrue(eventually(accepted, 10))
        # A stream still open when the sidecar stops ends, and the sidecar exits cleanly.
        last = streams[0]
        self.assertEqual(last.next()[0], "holders")
        started = time.monotonic()
        self.assertEqual(s.stop(), 0)
        self.assertTrue(last.ended.wait(10))
        self.assertLess(time.monotonic() - started, 10)


WATCH_REDIS_PORT = 17702


class WatchedStoreTest(Base):
    """The watch stream over a store that watches (a private redis-server, started by PID)."""

    def setUp(self):
        super().setUp()
        if not shutil.which("redis-server"):
            self.skipTest("redis-server not installed")
        if "redis" not in subprocess.run([serve_test.LEADER, "--version"], capture_output=True,
                                         text=True).stdout:
            self.skipTest("leader built without the redis store")
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(WATCH_REDIS_PORT), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir], stdout=subprocess.DEVNULL)

        def up():
            try:
                socket.create_connection(("127.0.0.1", WATCH_REDIS_PORT), timeout=1).close()
                return True
            except OSError:
                return False
        self.assertTrue(eventually(up))

    def tearDown(self):
        if self.redis.poll() is None:
            self.redis.kill()
            self.redis.wait()
        super().tearDown()

    def test_changes_arrive_without_the_poll_interval(self):
        s = self.sidecar(store="redis://127.0.0.1:%d" % WATCH_REDIS_PORT)
        w = EventStream(s.url, "/v1/locks/job/watch")
        self.assertEqual(w.status, 200)
        self.assertFalse(w.next()[1]["held"])
        delays = []
        for _ in range(4):
            started = time.monotonic()
            _, lease = s.post("/v1/locks/job/acquire", {"ttl": "20s"})
            self.assertTrue(w.next()[1]["held"])
            delays.append(time.monotonic() - started)
            started = time.monotonic()
            s.post("/v1/locks/job/release", {"lease_id": lease["lease_id"]})
            self.assertFalse(w.next()[1]["held"])
            delays.append(time.monotonic() - started)
        # Polled, a change waits up to 1 s (0.5 s on average) for the next read.
        self.assertLess(max(delays), 0.5, delays)
        w.close()
        self.assertEqual(s.stop(), 0)


ALICE = "alice-0123456789abcdef"
BOB = "bob-0123456789abcdef0"


class ClientsTest(Base):
    def clients_file(self, text):
        path = os.path.join(self.dir, "clients")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_a_lease_belongs_to_the_client_that_took_it(self):
        anon_token = os.path.join(self.dir, "token")
        with open(anon_token, "w") as f:
            f.write("anon-0123456789abcdef\n")
        clients = self.clients_file("# name token\nalice %s\n\nbob %s\n" % (ALICE, BOB))
        s = self.sidecar("-v", "--clients-file", clients, "--token-file", anon_token)
        alice = {"Authorization": "Bearer " + ALICE}
        bob = {"Authorization": "Bearer " + BOB}
        anon = {"Authorization": "Bearer anon-0123456789abcdef"}
        self.assertEqual(s.get("/healthz")[0], 200)
        self.assertEqual(s.get("/v1/locks")[0], 401)
        self.assertEqual(s.get("/v1/locks", headers={"Authorization": "Bearer " + ALICE[:-1]})[0],
                         401)
        status, lease = s.post("/v1/locks/job/acquire", {"ttl": "20s"}, headers=alice)
        self.assertEqual(status, 200, lease)
        self.assertEqual(lease["node_id"], "alice")
        code, seen = leader_status(self.store, "job")
        self.assertEqual((code, seen["holders"][0]["node_id"]), (0, "alice"), seen)
        lid = lease["lease_id"]
        for other in (bob, anon):
            status, reply = s.post("/v1/locks/job/renew", {"lease_id": lid}, headers=other)
            self.assertEqual((status, reply["error"]), (404, "unknown_lease"), reply)
            status, reply = s.post("/v1/locks/job/release", {"lease_id": lid}, headers=other)
            self.assertEqual((status, reply["error"]), (404, "unknown_lease"), reply)
            status, reply = s.get("/v1/leases/" + lid, headers=other)
            self.assertEqual((status, reply["error"]), (404, "unknown_lease"), reply)
        status, reply = s.post("/v1/locks/job/acquire", {}, headers=bob)
        self.assertEqual((status, reply["error"]), (409, "held_elsewhere"), reply)
        self.assertIn("alice", reply["reason"])
        self.assertEqual(s.get("/v1/leases/" + lid, headers=alice)[0], 200)
        self.assertEqual(s.post("/v1/locks/job/renew", {"lease_id": lid}, headers=alice)[0], 200)
        code, seen = leader_status(self.store, "job")
        self.assertEqual(seen["holders"][0]["fencing_token"], lease["fencing_token"])
        # The --token-file token still works, as an anonymous client of its own.
        status, mine = s.post("/v1/locks/anon/acquire", {}, headers=anon)
        self.assertEqual(status, 200, mine)
        self.assertEqual(s.post("/v1/locks/anon/release", {"lease_id": mine["lease_id"]},
                                headers=alice)[0], 404)
        self.assertEqual(s.post("/v1/locks/anon/release", {"lease_id": mine["lease_id"]},
                                headers=anon)[0], 200)
        self.assertEqual(s.post("/v1/locks/job/release", {"lease_id": lid}, headers=alice)[0], 200)
        self.assertTrue(eventually(lambda: any(
            r["lock"] == "job" and r["node_id"] == "alice"
            for r in s.get("/v1/history", headers=bob)[1]["records"])))
        self.assertEqual(s.stop(), 0)
        log = s.stderr()
        self.assertIn("POST /v1/locks/job/acquire -> 200 (client alice)", log)
        self.assertIn("POST /v1/locks/job/renew -> 404 (client bob)", log)
        for secret in (lid, mine["lease_id"], ALICE, BOB):
            self.assertNotIn(secret, log)

    def test_bad_clients_files_are_usage_errors(self):
        for text, says in (("alice %s\nbob %s\n" % (ALICE, ALICE), "token of another client"),
                           ("alice %s\nalice %s\n" % (ALICE, BOB), "repeated"),
                           ("alice short\n", "at least 16"),
                           ("_alice %s\n" % ALICE, "must match"),
                           ("alice\n", "NAME TOKEN"),
                           ("# nobody\n", "no client")):
            p = subprocess.run([serve_test.LEADER, "serve", "--store", self.store, "--listen",
                                "127.0.0.1:0", "--clients-file", self.clients_file(text)],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 64, (text, p.stderr))
            self.assertIn(says, p.stderr)
            self.assertNotIn(ALICE, p.stderr)


def subprocess_run_holding(store, lock, node):
    """`leader run` holding `lock` until SIGTERM."""
    p = subprocess.Popen([serve_test.LEADER, "run", "--store", store, "--lock", lock, "--ttl", "10s",
                          "--node-id", node, "--", "sleep", "60"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return p


if __name__ == "__main__":
    serve_test.LEADER = sys.argv.pop(1)
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.skipped and result.testsRun == len(result.skipped) else 0)
