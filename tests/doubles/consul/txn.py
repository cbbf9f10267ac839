"""PUT /v1/txn for the Consul double: KV operations applied atomically (Consul api-docs "Transaction
- HTTP API", txn.mdx). Every write of one transaction takes the same index (one Raft entry); any
failure rolls everything back and answers 409 with Errors [{OpIndex, What}]."""

import base64
import copy

from state import ApiError, public_entry

KV_VERBS = {"set", "cas", "lock", "unlock", "get", "get-or-empty", "get-tree", "check-index",
            "check-session", "check-not-exists", "delete", "delete-tree", "delete-cas"}
MAX_OPS = 128


class _OpFailed(Exception):
    pass


def _decode_value(op):
    raw = op.get("Value") or ""
    try:
        return base64.b64decode(raw, validate=True)
    except ValueError:
        raise ApiError(400, "Failed to decode KV value: illegal base64 data")


def _apply(state, op, idx_fn, results):
    verb, key = op.get("Verb"), op.get("Key", "")
    flags, index, sid = int(op.get("Flags") or 0), int(op.get("Index") or 0), op.get("Session") or ""
    e = state.kv.get(key)
    if verb == "set":
        state.put(key, _decode_value(op), flags, None, idx_fn)
    elif verb == "cas":
        if not state.put(key, _decode_value(op), flags, index, idx_fn):
            raise _OpFailed("failed to set key \"%s\", index is stale" % key)
    elif verb == "lock":
        try:
            ok = state.acquire(key, sid, _decode_value(op), flags, idx_fn)
        except ApiError as err:
            raise _OpFailed(err.text)
        if not ok:
            raise _OpFailed("failed to lock key \"%s\", lock is already held" % key)
    elif verb == "unlock":
        if not state.release(key, sid, _decode_value(op), flags, idx_fn):
            raise _OpFailed("failed to unlock key \"%s\", lock isn't held, or is held by another "
                            "session" % key)
    elif verb in ("get", "get-or-empty"):
        if e is None and verb == "get":
            raise _OpFailed("key \"%s\" doesn't exist" % key)
        results.append({"KV": public_entry(e)} if e else {"KV": None})
        return
    elif verb == "get-tree":
        for k in sorted(k for k in state.kv if k.startswith(key)):
            results.append({"KV": public_entry(state.kv[k])})
        return
    elif verb == "check-index":
        if e is None or e["ModifyIndex"] != index:
            raise _OpFailed("current modify index %s != %d" % (e and e["ModifyIndex"], index))
        return
    elif verb == "check-session":
        if e is None or e.get("Session") != sid:
            raise _OpFailed("failed session check for key \"%s\"" % key)
        return
    elif verb == "check-not-exists":
        if e is not None:
            raise _OpFailed("key \"%s\" exists" % key)
        return
    elif verb in ("delete", "delete-tree"):
        state.delete(key, verb == "delete-tree", None, idx_fn)
        return
    elif verb == "delete-cas":
        if not state.delete(key, False, index, idx_fn):
            raise _OpFailed("failed to delete key \"%s\", index is stale" % key)
        return
    if verb in ("set", "cas", "lock", "unlock"):
        results.append({"KV": public_entry(state.kv[key], with_value=False)})


def run_txn(state, ops):
    """Applies `ops`; returns (status, body)."""
    if not isinstance(ops, list):
        raise ApiError(400, "Failed to parse body: expected an array")
    if len(ops) > MAX_OPS:
        raise ApiError(413, "Transaction contains too many operations (%d > %d)"
                       % (len(ops), MAX_OPS))
    errors = []
    for i, op in enumerate(ops):  # pre-check, as the server's preCheck: lock-delay, sessions
        kv = op.get("KV") if isinstance(op, dict) else None
        if not isinstance(kv, dict) or kv.get("Verb") not in KV_VERBS:
            raise ApiError(400, "Failed to parse body: unsupported operation at %d" % i)
        if kv["Verb"] == "lock" and state.in_lock_delay(kv.get("Key", "")):
            errors.append({"OpIndex": i,
                           "What": "failed to lock key \"%s\" due to lock delay" % kv.get("Key", "")})
    if errors:
        return 409, {"Results": None, "Errors": errors}
    saved = (copy.deepcopy(state.kv), dict(state.tombstones), state.index)
    shared = []

    def idx_fn():
        if not shared:
            shared.append(state.index + 1)
        return shared[0]

    results = []
    for i, op in enumerate(ops):
        try:
            _apply(state, op["KV"], idx_fn, results)
        except _OpFailed as failed:
            state.kv, state.tombstones, state.index = saved
            return 409, {"Results": None, "Errors": [{"OpIndex": i, "What": str(failed)}]}
        except Exception:
            state.kv, state.tombstones, state.index = saved
            raise
    if shared:
        state.index = shared[0]
        state.cond.notify_all()
    return 200, {"Results": results or None, "Errors": None}
