#!/usr/bin/env python3
"""A Consul HTTP API double for the `consul://` store's tests (Python 3 standard library only).

    consul_double.py --port 18500 [--pid-file F] [--acl-token T] [--ttl-multiplier 2]
                     [--session-ttl-min 10s] [--node NAME] [--agent NAME ...]

Each --agent adds the client agent of another node, on a port of its own over the same state
(printed as "AGENT <name> <port>" after "PORT <n>"): sessions created through it belong to its
node, so a test can deregister one node (PUT /v1/catalog/deregister, PUT /v1/agent/leave on that
agent) while a contender on another node carries on.

Implements sessions, KV (acquire/release/cas/recurse/blocking), /v1/txn KV operations, ACL token
checks, /v1/status/leader, /v1/agent/self, /v1/agent/leave and /v1/catalog/(de)register, as
described in FIDELITY.md (with the reference for
every behaviour). An outage is made from outside with SIGSTOP/SIGCONT of this process.
"""

import argparse
import base64
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from state import (MAX_VALUE_SIZE, ApiError, State, parse_go_duration,  # noqa: E402
                   public_entry, public_session)
from txn import run_txn  # noqa: E402

DEFAULT_WAIT, MAX_WAIT = 300.0, 600.0  # blocking queries: default 5 min, capped at 10 (ref §3)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as Consul's Go HTTP server
    disable_nagle_algorithm = True  # one segment per reply: no delayed-ACK stalls
    server_version = "consul-double"

    def log_message(self, fmt, *args):  # quiet; errors still go to stderr via send_error paths
        pass

    def do_GET(self):
        self._dispatch("GET")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_POST(self):
        self._dispatch("POST")

    def do_DELETE(self):
        self._dispatch("DELETE")

    # ---- plumbing ----
    def _dispatch(self, method):
        url = urlsplit(self.path)
        self.q = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length) if length else b""
        path = unquote(url.path)
        try:
            if path != "/v1/status/leader":
                self._check_token()
            route = ROUTES.get((method, path))
            if route:
                return route(self)
            for (m, prefix), fn in PREFIX_ROUTES:
                if m == method and path.startswith(prefix):
                    return fn(self, path[len(prefix):])
            if any(path.startswith(p) for (_, p), _ in PREFIX_ROUTES) or any(
                    p == path for (_, p) in ROUTES):
                raise ApiError(405, "method %s not allowed" % method)
            raise ApiError(404, "404 page not found")
        except ApiError as e:
            self._send(e.status, e.text.encode(), "text/plain; charset=utf-8")
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its deadline)
            self.close_connection = True
        except Exception as e:  # a bug of the double: answer like an RPC error, keep serving
            self._send(500, ("double internal error: %r" % e).encode(), "text/plain")
            raise

    def _check_token(self):
        want = self.server.acl_token
        if not want:
            return
        got = self.headers.get("X-Consul-Token") or ""
        auth = self.headers.get("Authorization") or ""
        if not got and auth.startswith("Bearer "):
            got = auth[len("Bearer "):]
        got = got or self.q.get("token", "")
        if not got:
            raise ApiError(403, "Permission denied: anonymous token lacks permission")
        if got != want:
            raise ApiError(403, "ACL not found")

    def _send(self, status, payload, ctype="application/json", headers=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, obj, status=200, headers=None):
        self._send(status, json.dumps(obj).encode(), "application/json", headers)

    def _meta(self, index):
        return {"X-Consul-Index": str(index), "X-Consul-KnownLeader": "true",
                "X-Consul-LastContact": "0"}

    def _block(self, current_index):
        """Blocking query (ref §3): waits while `current_index()` <= ?index, up to ?wait."""
        st = self.server.state
        if "index" not in self.q:
            return
        try:
            want = int(self.q["index"])
        except ValueError:
            raise ApiError(400, "Invalid index")
        wait = DEFAULT_WAIT
        if self.q.get("wait"):
            try:
                wait = parse_go_duration(self.q["wait"])
            except ValueError:
                raise ApiError(400, "Invalid wait time")
        wait = min(max(wait, 0.0), MAX_WAIT)
        end = time.monotonic() + wait
        while want > 0 and current_index() <= want:
            left = end - time.monotonic()
            if left <= 0:
                break
            st.cond.wait(left)

    @property
    def st(self):
        return self.server.state

    # ---- sessions ----
    def session_create(self):
        try:
            body = json.loads(self.body or b"{}")
            if not isinstance(body, dict):
                raise ValueError()
        except ValueError:
            raise ApiError(400, "Request decode failed: invalid JSON")
        with self.st.cond:
            sid = self.st.create_session(body, self.server.node)
        self._json({"ID": sid})

    def session_destroy(self, sid):
        if not sid:
            raise ApiError(400, "Missing session")
        with self.st.cond:
            self.st.destroy_session(sid)
        self._json(True)

    def session_renew(self, sid):
        with self.st.cond:
            s = self.st.renew_session(sid)
        self._json([s])

    def session_info(self, sid):
        with self.st.cond:
            self._block(lambda: self.st.index)
            s = self.st.sessions.get(sid)
            self._json([public_session(s)] if s else [], headers=self._meta(self.st.index))

    def session_list(self):
        with self.st.cond:
            self._block(lambda: self.st.index)
            out = [public_session(s) for s in self.st.sessions.values()]
            self._json(out, headers=self._meta(self.st.index))

    # ---- KV ----
    def kv_get(self, key):
        if "consistent" in self.q and "stale" in self.q:
            raise ApiError(400, "Cannot specify ?stale with ?consistent, conflicting semantics.")
        recurse = "recurse" in self.q or "keys" in self.q
        with self.st.cond:
            index_of = (lambda: self.st.prefix_index(key)) if recurse else (
                lambda: self.st.key_index(key))
            self._block(index_of)
            meta = self._meta(index_of())
            if recurse:
                entries = [self.st.kv[k] for k in sorted(self.st.kv) if k.startswith(key)]
            else:
                entries = [self.st.kv[key]] if key in self.st.kv else []
            listed = [public_entry(e) for e in entries]
            raw = entries[0]["Value"] if entries else b""
        if not entries:
            return self._send(404, b"", "text/plain", meta)
        if "keys" in self.q:
            return self._json([e["Key"] for e in listed], headers=meta)
        if "raw" in self.q and not recurse:
            return self._send(200, raw, "text/plain", meta)
        self._json(listed, headers=meta)

    def kv_put(self, key):
        if not key:
            raise ApiError(400, "Missing key name")
        modes = [m for m in ("cas", "acquire", "release") if m in self.q]
        if len(modes) > 1:
            raise ApiError(400, "Conflicting flags: " + urlsplit(self.path).query)
        if len(self.body) > MAX_VALUE_SIZE:
            raise ApiError(413, "Value exceeds %d byte limit" % MAX_VALUE_SIZE)
        try:
            flags = int(self.q.get("flags") or 0)
            cas = int(self.q["cas"]) if "cas" in self.q else None
        except ValueError:
            raise ApiError(400, "Invalid flags or cas")
        with self.st.cond:
            idx = self.st.next_index
            if "acquire" in self.q:
                ok = self.st.acquire(key, self.q["acquire"], self.body, flags, idx)
            elif "release" in self.q:
                ok = self.st.release(key, self.q["release"], self.body, flags, idx)
            else:
                ok = self.st.put(key, self.body, flags, cas, idx)
        self._json(ok)

    def kv_delete(self, key):
        recurse = "recurse" in self.q
        if recurse and "cas" in self.q:
            raise ApiError(400, "Conflicting flags: cas with recurse")
        try:
            cas = int(self.q["cas"]) if "cas" in self.q else None
        except ValueError:
            raise ApiError(400, "Invalid cas index")
        with self.st.cond:
            ok = self.st.delete(key, recurse, cas, self.st.next_index)
        self._json(ok)

    def txn(self):
        try:
            ops = json.loads(self.body or b"[]")
        except ValueError:
            raise ApiError(400, "Failed to parse body: invalid JSON")
        with self.st.cond:
            status, body = run_txn(self.st, ops)
        self._json(body, status)

    # ---- status / agent ----
    def status_leader(self):
        self._json("127.0.0.1:8300")

    def agent_self(self):
        self._json({"Config": {"NodeName": self.server.node, "Datacenter": "dc1"},
                    "Member": {"Name": self.server.node}})

    def agent_leave(self):
        # A graceful leave: the servers deregister the node, which invalidates its sessions.
        with self.st.cond:
            self.st.deregister(self.server.node)
        self._send(200, b"")

    # ---- catalog (node registration) ----
    def _catalog_body(self):
        try:
            body = json.loads(self.body or b"{}")
        except ValueError:
            raise ApiError(400, "Request decode failed: invalid JSON")
        if not isinstance(body, dict) or not body.get("Node"):
            raise ApiError(400, "Must provide node")
        return body

    def catalog_register(self):
        body = self._catalog_body()
        check = body.get("Check") or {}
        checks = {check["CheckID"]: check.get("Status", "critical")} if check.get("CheckID") else {}
        with self.st.cond:
            self.st.register_node(body["Node"], checks)
        self._json(True)

    def catalog_deregister(self):
        body = self._catalog_body()
        with self.st.cond:
            self.st.deregister(body["Node"], body.get("CheckID") or None)
        self._json(True)


ROUTES = {
    ("PUT", "/v1/session/create"): Handler.session_create,
    ("GET", "/v1/session/list"): Handler.session_list,
    ("PUT", "/v1/txn"): Handler.txn,
    ("GET", "/v1/status/leader"): Handler.status_leader,
    ("GET", "/v1/agent/self"): Handler.agent_self,
    ("PUT", "/v1/agent/leave"): Handler.agent_leave,
    ("PUT", "/v1/catalog/register"): Handler.catalog_register,
    ("PUT", "/v1/catalog/deregister"): Handler.catalog_deregister,
}
PREFIX_ROUTES = [
    (("PUT", "/v1/session/destroy/"), Handler.session_destroy),
    (("PUT", "/v1/session/renew/"), Handler.session_renew),
    (("GET", "/v1/session/info/"), Handler.session_info),
    (("GET", "/v1/kv/"), Handler.kv_get),
    (("PUT", "/v1/kv/"), Handler.kv_put),
    (("DELETE", "/v1/kv/"), Handler.kv_delete),
]


def expiry_loop(state):
    while True:
        time.sleep(0.005)
        with state.cond:
            state.expire_due()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=18500)
    p.add_argument("--pid-file")
    p.add_argument("--acl-token", default=os.environ.get("CONSUL_DOUBLE_ACL_TOKEN", ""))
    p.add_argument("--ttl-multiplier", type=float, default=2.0,
                   help="a session is invalidated this many TTLs after its last renew (Consul: 2)")
    p.add_argument("--session-ttl-min", default="10s", help="Consul's session_ttl_min (10s)")
    p.add_argument("--node", default="consul-double")
    p.add_argument("--agent", action="append", default=[],
                   help="the agent of another node, on a free port of its own (repeatable)")
    a = p.parse_args()
    state = State(a.ttl_multiplier, parse_go_duration(a.session_ttl_min), a.node)

    def serve(port, node):
        srv = ThreadingHTTPServer((a.host, port), Handler)
        srv.daemon_threads = True
        srv.state = state
        srv.acl_token = a.acl_token
        srv.node = node
        return srv

    server = serve(a.port, a.node)
    print("PORT %d" % server.server_address[1], flush=True)  # --port 0: the port picked
    for name in a.agent:
        with state.cond:
            state.register_node(name, {"serfHealth": "passing"})
        extra = serve(0, name)
        print("AGENT %s %d" % (name, extra.server_address[1]), flush=True)
        threading.Thread(target=extra.serve_forever, daemon=True).start()
    if a.pid_file:
        with open(a.pid_file, "w") as f:
            f.write(str(os.getpid()))
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    threading.Thread(target=expiry_loop, args=(state,), daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
