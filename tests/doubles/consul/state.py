"""The state of the Consul HTTP API double: sessions, KV entries, lock-delays, one Raft-like index.

Every rule here cites its source in FIDELITY.md (section numbers of
/work/shared/reference/consul-lock.md, "ref §N", and Consul's api-docs pages). Python 3 standard
library only. All methods are called with `State.cond` held unless noted.
"""

import base64
import re
import threading
import time
import uuid

MAX_LOCK_DELAY = 60.0  # seconds; ref §1 (MaxLockDelay)
SESSION_TTL_MAX = 86400.0  # ref §1 (SessionTTLMax = 24h)
MAX_VALUE_SIZE = 512 * 1024  # ref §2 (kv_max_value_size)

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_go_duration(text):
    """Seconds of a Go duration string ("15s", "1500ms", "1m30s", "0"); ValueError if malformed."""
    text = text.strip()
    if text in ("0", ""):
        return 0.0
    sign = 1.0
    if text[0] in "+-":
        sign = -1.0 if text[0] == "-" else 1.0
        text = text[1:]
    pos, total = 0, 0.0
    while pos < len(text):
        m = _PART.match(text, pos)
        if not m:
            raise ValueError("invalid duration " + text)
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0:
        raise ValueError("invalid duration " + text)
    return sign * total


def parse_lock_delay(raw):
    """LockDelay as a duration string or a number of ns; below 1000 ns it means seconds (ref §1)."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        ns = float(raw)
    elif isinstance(raw, str):
        ns = parse_go_duration(raw) * 1e9
    else:
        raise ValueError("invalid LockDelay")
    if ns < 1000:
        ns *= 1e9
    return ns / 1e9


class ApiError(Exception):
    """An HTTP error answer: status and a plain-text body (ref §5)."""

    def __init__(self, status, text):
        super().__init__(text)
        self.status = status
        self.text = text


class State:
    """Sessions, KV and the shared index of one single-server "cluster"."""

    def __init__(self, ttl_multiplier=2.0, session_ttl_min=10.0, node="consul-double"):
        self.cond = threading.Condition()
        self.index = 10  # one global index, starts > 1 (ref §7)
        self.sessions = {}
        self.kv = {}
        self.tombstones = {}  # key -> index of its delete, so blocking reads see deletes
        self.lock_delay = {}  # key -> monotonic instant until which ?acquire answers false
        self.ttl_multiplier = ttl_multiplier
        self.session_ttl_min = session_ttl_min
        self.node = node
        # Registered nodes and their node checks (check id -> status). An agent's node carries
        # serfHealth, the check a session gets by default (ref §1 Create).
        self.nodes = {}
        self.register_node(node, {"serfHealth": "passing"})

    def next_index(self):
        self.index += 1
        self.cond.notify_all()
        return self.index

    # ---- nodes and node checks (FIDELITY.md, "Nodes, checks and session invalidation") ----
    def register_node(self, node, checks=None):
        """Registers `node` (again), adding or updating `checks` (id -> status); a check that is
        critical invalidates every session tied to it."""
        known = self.nodes.setdefault(node, {})
        for check, status in (checks or {}).items():
            known[check] = status
            if status == "critical":
                self._invalidate_where(lambda s: s["Node"] == node and check in s["NodeChecks"])

    def deregister(self, node, check=None):
        """Catalog deregistration: of the whole node (every session of the node is invalidated),
        or of one node check (the sessions tied to it are). False when the node is unknown."""
        if node not in self.nodes:
            return False
        if check is None:
            del self.nodes[node]
            self._invalidate_where(lambda s: s["Node"] == node)
        elif check in self.nodes[node]:
            del self.nodes[node][check]
            self._invalidate_where(lambda s: s["Node"] == node and check in s["NodeChecks"])
        return True

    def _invalidate_where(self, pred):
        for sid in [i for i, s in self.sessions.items() if pred(s)]:
            self.invalidate(sid)

    # ---- sessions (ref §1) ----
    def create_session(self, body, agent_node=None):
        ttl_text = body.get("TTL", "") or ""
        try:
            ttl = parse_go_duration(ttl_text) if ttl_text else 0.0
        except ValueError:
            raise ApiError(500, "Invalid Session TTL '%s': parse error" % ttl_text)
        if ttl != 0 and not (self.session_ttl_min <= ttl <= SESSION_TTL_MAX):
            raise ApiError(500, "Invalid Session TTL '%s', must be between [%gs=%gs]"
                           % (ttl_text, self.session_ttl_min, SESSION_TTL_MAX))
        behavior = body.get("Behavior", "release") or "release"
        if behavior not in ("release", "delete"):
            raise ApiError(500, "Invalid Behavior setting '%s'" % behavior)
        try:
            delay = parse_lock_delay(body.get("LockDelay", "15s"))
        except ValueError:
            raise ApiError(400, "Request decode failed: invalid LockDelay")
        node = body.get("Node") or agent_node or self.node
        if node not in self.nodes:
            raise ApiError(500, "Missing node registration")
        # Default: the node's serfHealth. Sending Checks or NodeChecks at all (even []) replaces
        # the default (ref §1 Create; session.mdx: Checks deprecated for NodeChecks in 1.7).
        if "Checks" in body or "NodeChecks" in body:
            checks = list(body.get("Checks") or []) + list(body.get("NodeChecks") or [])
        else:
            checks = ["serfHealth"]
        for check in checks:
            if check not in self.nodes[node]:
                raise ApiError(500, "Missing check '%s' registration" % check)
            if self.nodes[node][check] == "critical":
                raise ApiError(500, "Check '%s' is in critical state" % check)
        idx = self.next_index()
        sid = str(uuid.uuid4())
        self.sessions[sid] = {
            "ID": sid, "Name": body.get("Name", ""), "Node": node,
            "LockDelay": int(round(delay * 1e9)), "Behavior": behavior, "TTL": ttl_text,
            "NodeChecks": checks,
            "ServiceChecks": body.get("ServiceChecks"), "CreateIndex": idx, "ModifyIndex": idx,
            "_ttl": ttl, "_deadline": self._timer(ttl),
        }
        return sid

    def _timer(self, ttl):
        # The server arms TTL x multiplier (2 in Consul) from the moment it handles create/renew.
        return None if ttl == 0 else time.monotonic() + ttl * self.ttl_multiplier

    def renew_session(self, sid):
        s = self.sessions.get(sid)
        if s is None:
            raise ApiError(404, "Session id '%s' not found" % sid)
        s["_deadline"] = self._timer(s["_ttl"])
        return public_session(s)

    def destroy_session(self, sid):
        if sid in self.sessions:
            self.invalidate(sid)

    def invalidate(self, sid):
        """Deletes a session; its keys are released or deleted and get its lock-delay (ref §1)."""
        s = self.sessions.pop(sid)
        idx = self.next_index()
        delay = min(s["LockDelay"] / 1e9, MAX_LOCK_DELAY)
        for key in [k for k, e in self.kv.items() if e.get("Session") == sid]:
            if s["Behavior"] == "delete":
                del self.kv[key]
                self.tombstones[key] = idx
            else:
                e = self.kv[key]
                del e["Session"]
                e["ModifyIndex"] = idx
            if delay > 0:
                self.lock_delay[key] = time.monotonic() + delay

    def expire_due(self):
        now = time.monotonic()
        for sid in [i for i, s in self.sessions.items()
                    if s["_deadline"] is not None and s["_deadline"] <= now]:
            self.invalidate(sid)

    # ---- KV (ref §2) ----
    def key_index(self, key):
        e = self.kv.get(key)
        if e is not None:
            return e["ModifyIndex"]
        return max(self.tombstones.get(key, 1), 1)

    def prefix_index(self, prefix):
        idx = [e["ModifyIndex"] for k, e in self.kv.items() if k.startswith(prefix)]
        idx += [i for k, i in self.tombstones.items() if k.startswith(prefix)]
        return max(idx + [1])

    def in_lock_delay(self, key):
        until = self.lock_delay.get(key)
        return until is not None and until > time.monotonic()

    def acquire(self, key, sid, value, flags, idx_fn):
        """?acquire / txn lock: True, False (held or lock-delay); ApiError on a bad session."""
        if self.in_lock_delay(key):
            return False
        if not sid:
            raise ApiError(500, "missing session")
        if sid not in self.sessions:
            raise ApiError(500, 'invalid session "%s"' % sid)
        e = self.kv.get(key)
        if e is not None and e.get("Session") and e["Session"] != sid:
            return False
        if e is not None and e.get("Session") == sid:  # re-entrant: LockIndex unchanged
            self._write(key, e["LockIndex"], value, flags, sid, idx_fn)
            return True
        self._write(key, (e["LockIndex"] if e else 0) + 1, value, flags, sid, idx_fn)
        return True

    def release(self, key, sid, value, flags, idx_fn):
        e = self.kv.get(key)
        if e is None or e.get("Session") != sid:
            return False
        self._write(key, e["LockIndex"], value, flags, None, idx_fn)
        return True

    def put(self, key, value, flags, cas, idx_fn):
        """Plain PUT (keeps the holder) or ?cas=N (0: only if absent)."""
        e = self.kv.get(key)
        if cas is not None:
            if (cas == 0 and e is not None) or (cas != 0 and (e is None or e["ModifyIndex"] != cas)):
                return False
        holder = e.get("Session") if e else None
        self._write(key, e["LockIndex"] if e else 0, value, flags, holder, idx_fn)
        return True

    def _write(self, key, lock_index, value, flags, session, idx_fn):
        e = self.kv.get(key)
        new = {"LockIndex": lock_index, "Key": key, "Flags": flags, "Value": value}
        if session:
            new["Session"] = session
        if e is not None and all(e.get(f) == new.get(f) for f in
                                 ("LockIndex", "Key", "Flags", "Value", "Session")):
            return  # a no-op write does not move ModifyIndex (ref §2)
        idx = idx_fn()
        new["CreateIndex"] = e["CreateIndex"] if e else idx
        new["ModifyIndex"] = idx
        self.kv[key] = new

    def delete(self, key, recurse, cas, idx_fn):
        if cas is not None:
            e = self.kv.get(key)
            if e is None:
                return True  # DELETE ?cas on a missing key answers true (ref §2)
            if e["ModifyIndex"] != cas:
                return False
        keys = [k for k in self.kv if k.startswith(key)] if recurse else [key]
        keys = [k for k in keys if k in self.kv]
        if keys:
            idx = idx_fn()
            for k in keys:
                del self.kv[k]
                self.tombstones[k] = idx
        return True


def public_session(s):
    return {k: v for k, v in s.items() if not k.startswith("_")}


def public_entry(e, with_value=True):
    out = {"LockIndex": e["LockIndex"], "Key": e["Key"], "Flags": e["Flags"],
           "Value": base64.b64encode(e["Value"]).decode() if (with_value and e["Value"]) else None,
           "CreateIndex": e["CreateIndex"], "ModifyIndex": e["ModifyIndex"]}
    if e.get("Session"):
        out["Session"] = e["Session"]
    return out
