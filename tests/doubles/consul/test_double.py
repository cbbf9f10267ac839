#!/usr/bin/env python3
"""Self-test of the Consul HTTP API double against the behaviours FIDELITY.md lists (stdlib only).

    python3 tests/doubles/consul/test_double.py
"""

import base64
import json
import os
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
LOCK_FLAG = 3304740253564472344


class Double:
    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "consul_double.py"),
                                      "--port", "0"] + list(args),
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.base = "http://127.0.0.1:%d" % int(line.split()[1])

    def stop(self):
        self.proc.terminate()
        self.proc.wait()

    def call(self, method, path, body=None, headers=None):
        data = body if isinstance(body, bytes) else (
            json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def json(self, method, path, body=None):
        status, raw, _ = self.call(method, path, body)
        assert status == 200, (status, raw)
        return json.loads(raw)

    def session(self, **body):
        return self.json("PUT", "/v1/session/create", body)["ID"]


class DoubleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Double("--ttl-multiplier", "1", "--session-ttl-min", "100ms")

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_missing_key_is_404_with_index_headers(self):
        status, body, headers = self.d.call("GET", "/v1/kv/absent/key")
        self.assertEqual((status, body), (404, b""))
        self.assertGreaterEqual(int(headers["X-Consul-Index"]), 1)

    def test_acquire_is_reentrant_and_counts_lock_index(self):
        d, s = self.d, self.d.session(TTL="10s", LockDelay="0s")
        self.assertTrue(d.json("PUT", "/v1/kv/t1?acquire=%s&flags=%d" % (s, LOCK_FLAG), b"v"))
        self.assertTrue(d.json("PUT", "/v1/kv/t1?acquire=%s&flags=%d" % (s, LOCK_FLAG), b"v"))
        e = d.json("GET", "/v1/kv/t1")[0]
        self.assertEqual((e["LockIndex"], e["Session"], e["Flags"]), (1, s, LOCK_FLAG))
        self.assertEqual(base64.b64decode(e["Value"]), b"v")
        other = d.session(TTL="10s")
        self.assertFalse(d.json("PUT", "/v1/kv/t1?acquire=" + other, b""))
        self.assertTrue(d.json("PUT", "/v1/kv/t1", b"plain"))  # keeps the holder
        self.assertEqual(d.json("GET", "/v1/kv/t1")[0]["Session"], s)
        self.assertTrue(d.json("PUT", "/v1/kv/t1?release=" + s, b""))
        self.assertTrue(d.json("PUT", "/v1/kv/t1?acquire=" + other, b""))
        self.assertEqual(d.json("GET", "/v1/kv/t1")[0]["LockIndex"], 2)

    def test_errors(self):
        d = self.d
        self.assertEqual(d.call("PUT", "/v1/kv/x?cas=0&acquire=a", b"")[0], 400)
        self.assertEqual(d.call("PUT", "/v1/kv/x?acquire=nope", b"")[0], 500)
        self.assertEqual(d.call("PUT", "/v1/session/renew/nope")[0], 404)
        self.assertEqual(d.call("PUT", "/v1/session/create", {"TTL": "1ms"})[0], 500)
        self.assertEqual(d.call("PUT", "/v1/session/create", {"Behavior": "x"})[0], 500)
        self.assertEqual(d.call("PUT", "/v1/kv/big", b"x" * (512 * 1024 + 1))[0], 413)
        self.assertEqual(d.json("GET", "/v1/session/info/nope"), [])
        self.assertTrue(d.json("PUT", "/v1/session/destroy/nope"))

    def test_cas_and_delete_cas(self):
        d = self.d
        self.assertTrue(d.json("PUT", "/v1/kv/c1?cas=0", b"a"))
        self.assertFalse(d.json("PUT", "/v1/kv/c1?cas=0", b"b"))
        idx = d.json("GET", "/v1/kv/c1")[0]["ModifyIndex"]
        self.assertTrue(d.json("PUT", "/v1/kv/c1?cas=%d" % idx, b"b"))
        self.assertFalse(d.json("DELETE", "/v1/kv/c1?cas=%d" % idx))
        self.assertTrue(d.json("DELETE", "/v1/kv/never?cas=5"))

    def test_ttl_invalidation_releases_and_starts_lock_delay(self):
        d = self.d
        s = d.session(TTL="200ms", LockDelay="400ms")
        self.assertTrue(d.json("PUT", "/v1/kv/ttl1?acquire=" + s, b""))
        time.sleep(0.3)
        e = d.json("GET", "/v1/kv/ttl1")[0]
        self.assertNotIn("Session", e)
        self.assertEqual(d.json("GET", "/v1/session/info/" + s), [])
        other = d.session(TTL="10s")
        self.assertFalse(d.json("PUT", "/v1/kv/ttl1?acquire=" + other, b""))
        txn = [{"KV": {"Verb": "lock", "Key": "ttl1", "Session": other}}]
        status, raw, _ = d.call("PUT", "/v1/txn", txn)
        self.assertEqual(status, 409)
        self.assertIn("lock delay", raw.decode())
        time.sleep(0.4)
        self.assertTrue(d.json("PUT", "/v1/kv/ttl1?acquire=" + other, b""))

    def test_behavior_delete_and_release_without_lock_delay(self):
        d = self.d
        s = d.session(TTL="10s", Behavior="delete", LockDelay="10s")
        self.assertTrue(d.json("PUT", "/v1/kv/del1?acquire=" + s, b""))
        d.json("PUT", "/v1/session/destroy/" + s)
        self.assertEqual(d.call("GET", "/v1/kv/del1")[0], 404)
        s2 = d.session(TTL="10s", LockDelay="10s")
        self.assertTrue(d.json("PUT", "/v1/kv/rel1?acquire=" + s2, b""))
        self.assertTrue(d.json("PUT", "/v1/kv/rel1?release=" + s2, b""))
        d.json("PUT", "/v1/session/destroy/" + s2)
        self.assertTrue(d.json("PUT", "/v1/kv/rel1?acquire=" + d.session(TTL="10s"), b""))

    def test_txn_is_all_or_nothing_with_one_index(self):
        d = self.d
        s = d.session(TTL="10s")
        ok = [{"KV": {"Verb": "cas", "Key": "tx/f", "Index": 0, "Value": "MQ=="}},
              {"KV": {"Verb": "lock", "Key": "tx/k", "Session": s}}]
        body = d.json("PUT", "/v1/txn", ok)
        self.assertEqual(body["Results"][0]["KV"]["ModifyIndex"],
                         body["Results"][1]["KV"]["ModifyIndex"])
        bad = [{"KV": {"Verb": "set", "Key": "tx/new", "Value": "MQ=="}},
               {"KV": {"Verb": "cas", "Key": "tx/f", "Index": 0, "Value": "Mg=="}}]
        status, raw, _ = d.call("PUT", "/v1/txn", bad)
        self.assertEqual(status, 409)
        self.assertEqual(json.loads(raw)["Errors"][0]["OpIndex"], 1)
        self.assertEqual(d.call("GET", "/v1/kv/tx/new")[0], 404)

    def test_blocking_read_returns_on_change(self):
        d = self.d
        d.json("PUT", "/v1/kv/blk", b"1")
        idx = d.json("GET", "/v1/kv/blk")[0]["ModifyIndex"]
        t0 = time.monotonic()
        status, _, _ = d.call("GET", "/v1/kv/blk?index=%d&wait=200ms" % idx)
        self.assertEqual(status, 200)
        self.assertGreaterEqual(time.monotonic() - t0, 0.15)  # nothing changed: waited
        self.assertEqual(d.call("GET", "/v1/kv/blk?index=1&wait=bad")[0], 400)


class AclTest(unittest.TestCase):
    def test_token_required(self):
        d = Double("--acl-token", "s3cret")
        try:
            self.assertEqual(d.call("GET", "/v1/kv/a")[0], 403)
            self.assertEqual(d.call("GET", "/v1/kv/a", headers={"X-Consul-Token": "x"})[0], 403)
            self.assertEqual(d.call("GET", "/v1/kv/a", headers={"X-Consul-Token": "s3cret"})[0],
                             404)
            self.assertEqual(d.call("GET", "/v1/status/leader")[0], 200)
        finally:
            d.stop()


class NodeTest(unittest.TestCase):
    """Node deregistration and node checks (FIDELITY.md, "Nodes, checks and session invalidation")."""

    def setUp(self):
        self.d = Double("--ttl-multiplier", "1", "--session-ttl-min", "100ms", "--agent", "node-b")
        line = self.d.proc.stdout.readline().split()
        self.assertEqual(line[:2], ["AGENT", "node-b"])
        self.b = Double.__new__(Double)
        self.b.proc, self.b.base = None, "http://127.0.0.1:%d" % int(line[2])

    def tearDown(self):
        self.d.stop()

    def test_deregistering_a_node_invalidates_its_sessions_with_their_lock_delay(self):
        d, b = self.d, self.b
        self.assertEqual(b.json("GET", "/v1/agent/self")["Config"]["NodeName"], "node-b")
        a_sid = d.session(TTL="10s", LockDelay="500ms", NodeChecks=[])
        b_sid = b.session(TTL="10s", LockDelay="0s", NodeChecks=[])
        self.assertEqual(d.json("GET", "/v1/session/info/" + b_sid)[0]["Node"], "node-b")
        self.assertTrue(d.json("PUT", "/v1/kv/n1?acquire=" + a_sid, b""))
        # No checks at all do not help: a deregistered node loses every session of its own.
        self.assertTrue(d.json("PUT", "/v1/catalog/deregister", {"Node": "consul-double"}))
        self.assertEqual(d.json("GET", "/v1/session/info/" + a_sid), [])
        self.assertNotIn("Session", d.json("GET", "/v1/kv/n1")[0])
        self.assertEqual(len(d.json("GET", "/v1/session/info/" + b_sid)), 1)
        self.assertFalse(b.json("PUT", "/v1/kv/n1?acquire=" + b_sid, b""))  # lock-delay
        time.sleep(0.6)
        self.assertTrue(b.json("PUT", "/v1/kv/n1?acquire=" + b_sid, b""))
        self.assertEqual(d.call("PUT", "/v1/session/create", {"TTL": "10s"})[0], 500)  # no node

    def test_agent_leave_deregisters_the_agents_node(self):
        d, b = self.d, self.b
        sid = b.session(TTL="10s", NodeChecks=[])
        self.assertEqual(b.call("PUT", "/v1/agent/leave")[0], 200)
        self.assertEqual(d.json("GET", "/v1/session/info/" + sid), [])

    def test_a_critical_or_deregistered_check_invalidates_only_sessions_tied_to_it(self):
        d = self.d
        default = d.session(TTL="10s")  # serfHealth
        self.assertEqual(d.json("GET", "/v1/session/info/" + default)[0]["NodeChecks"],
                         ["serfHealth"])
        none = d.session(TTL="10s", Checks=[], NodeChecks=[])
        self.assertEqual(d.json("GET", "/v1/session/info/" + none)[0]["NodeChecks"], [])
        self.assertTrue(d.json("PUT", "/v1/catalog/register", {
            "Node": "consul-double", "Check": {"CheckID": "serfHealth", "Status": "critical"}}))
        self.assertEqual(d.json("GET", "/v1/session/info/" + default), [])
        self.assertEqual(len(d.json("GET", "/v1/session/info/" + none)), 1)
        self.assertEqual(d.call("PUT", "/v1/session/create", {"TTL": "10s"})[0], 500)
        self.assertTrue(d.json("PUT", "/v1/catalog/register", {
            "Node": "consul-double", "Check": {"CheckID": "serfHealth", "Status": "passing"}}))
        tied = d.session(TTL="10s")
        self.assertTrue(d.json("PUT", "/v1/catalog/deregister",
                               {"Node": "consul-double", "CheckID": "serfHealth"}))
        self.assertEqual(d.json("GET", "/v1/session/info/" + tied), [])
        self.assertEqual(len(d.json("GET", "/v1/session/info/" + none)), 1)


if __name__ == "__main__":
    unittest.main()
