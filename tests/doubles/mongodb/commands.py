"""Commands of the MongoDB stand-in: each one mapped onto one in-memory mongomock client.

Every command runs under one global lock (mongomock's find-then-update is not atomic), with
`$$NOW` and `$currentDate` both taken from the shim's clock, read once per command. The reply
shapes follow the MongoDB manual and the server's write-command specification; FIDELITY.md names
the reference for each behaviour and lists what is not implemented.
"""

import datetime
import itertools
import os
import threading
import time

import bson
import mongomock
from mongomock import DuplicateKeyError, OperationFailure

MONGOMOCK_VERSION = mongomock.__version__
CLOSE = object()  # run() result: close the connection without a reply (a fault hook)

_ids = itertools.count(1)
_ids_lock = threading.Lock()
_lock = threading.Lock()  # one command at a time
_client = mongomock.MongoClient()
_clock_offset = datetime.timedelta(milliseconds=int(os.environ.get("LEADER_SHIM_CLOCK_OFFSET_MS",
                                                                   "0")))
_now = [None]  # the server time of the command being executed
_faults = []  # armed fault hooks (shimFault)
_last_write_concern = {}  # command name -> the writeConcern document it carried (or None)

# Fields every command may carry (OP_MSG.md "global command arguments"; libmongoc mongoc-cmd.c).
_GLOBAL_ARGS = {"$db", "lsid", "$clusterTime", "$readPreference", "apiVersion", "apiStrict",
                "apiDeprecationErrors", "writeConcern", "readConcern", "maxTimeMS", "comment"}
_CODE_NAMES = {2: "BadValue", 224: "QueryFeatureNotAllowed"}  # error_codes.yml
_WRITES = {"insert", "update", "delete", "findAndModify", "createIndexes", "drop", "dropDatabase"}


def next_id():
    with _ids_lock:
        return next(_ids)


def server_now():
    """The shim's clock: UTC wall time (+ LEADER_SHIM_CLOCK_OFFSET_MS), truncated to ms (BSON)."""
    t = datetime.datetime.utcnow() + _clock_offset
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


# mongomock reads the time of $currentDate and of its TTL sweep from mongomock.utcnow() (its
# documented patch point): the command's own time, so that $$NOW and $currentDate agree.
mongomock.utcnow = lambda: _now[0] or server_now()


def error(code, code_name, message, **extra):
    reply = {"ok": 0.0, "errmsg": message, "code": code, "codeName": code_name}
    reply.update(extra)
    return reply


class CommandError(Exception):
    def __init__(self, code, code_name, message):
        super().__init__(message)
        self.reply = error(code, code_name, message)


def bad_value(message):
    return CommandError(2, "BadValue", message)


def with_now(value, now):
    """Replaces every "$$NOW" with the command's time (mongomock knows no $$NOW)."""
    if isinstance(value, str):
        if value == "$$NOW":
            return now
        if value.startswith("$$CLUSTER_TIME"):
            raise CommandError(10071, "Location10071",
                               "$$CLUSTER_TIME is not available on a standalone (shim)")
        return value
    if isinstance(value, dict):
        return {k: with_now(v, now) for k, v in value.items()}
    if isinstance(value, list):
        return [with_now(v, now) for v in value]
    return value


def _constant(value, where):
    if isinstance(value, dict) and list(value) == ["$literal"]:
        return value["$literal"]
    if isinstance(value, str) and value.startswith("$"):
        raise bad_value("shim: %s: field paths in update pipelines are not implemented" % where)
    if isinstance(value, dict) and any(k.startswith("$") for k in value):
        raise bad_value("shim: %s: expressions in update pipelines are not implemented" % where)
    return value


def pipeline_update(pipeline):
    """An update pipeline of $set/$addFields/$unset stages with constant values (after $$NOW)
    as update operators; anything else is refused with BadValue rather than guessed."""
    sets, unsets = {}, set()
    for stage in pipeline:
        if not isinstance(stage, dict) or len(stage) != 1:
            raise bad_value("shim: each pipeline stage must be a document with one stage name")
        (name, spec), = stage.items()
        if name in ("$set", "$addFields"):
            for path, value in spec.items():
                sets[path] = _constant(value, name + " " + path)
                unsets.discard(path)
        elif name == "$unset":
            for path in [spec] if isinstance(spec, str) else spec:
                unsets.add(path)
                sets.pop(path, None)
        else:
            raise bad_value("shim: pipeline stage %s in an update is not implemented" % name)
    update = {}
    if sets:
        update["$set"] = sets
    if unsets:
        update["$unset"] = {p: "" for p in unsets}
    return update


def has_expr(query):
    if isinstance(query, dict):
        return any(k == "$expr" or has_expr(v) for k, v in query.items())
    if isinstance(query, list):
        return any(has_expr(v) for v in query)
    return False


def refuse_expr_upsert(query):
    """The server refuses $expr in the query of an upsert (code 224; MongoDB JIRA DOCS-14158,
    SERVER-59704); mongomock would accept it."""
    if has_expr(query):
        raise OperationFailure("$expr is not allowed in the query predicate for an upsert",
                               code=224)


def is_operator_update(update):
    return bool(update) and all(k.startswith("$") for k in update)


def check_write_concern(name, cmd):
    wc = cmd.get("writeConcern")
    _last_write_concern[name] = wc
    if wc is None:
        return
    w = wc.get("w", 1)
    if isinstance(w, bool) or not isinstance(w, (int, str)) or (isinstance(w, int) and w < 0):
        raise CommandError(9, "FailedToParse", "w has to be a non-negative number or a string")
    if "wtimeout" in wc and (isinstance(wc["wtimeout"], bool) or
                             not isinstance(wc["wtimeout"], (int, float))):
        raise CommandError(9, "FailedToParse", "wtimeout must be a number")


def dup_key_message(coll, err):
    return "E11000 duplicate key error collection: %s.%s (%s)" % (coll.database.name, coll.name,
                                                                  err)


def cursor_reply(coll, docs):
    ns = "%s.%s" % (coll.database.name, coll.name)
    return {"cursor": {"firstBatch": docs, "id": bson.Int64(0), "ns": ns}, "ok": 1.0}


# ---- handlers: (cmd, db, conn_id) -> reply ------------------------------------------------


def cmd_hello(cmd, db, conn_id):
    return {"helloOk": True, "ismaster": True, "isWritablePrimary": True,
            "maxBsonObjectSize": 16777216, "maxMessageSizeBytes": 48000000,
            "maxWriteBatchSize": 100000, "localTime": _now[0], "connectionId": conn_id,
            "minWireVersion": 0, "maxWireVersion": 13, "readOnly": False, "ok": 1.0}


def cmd_build_info(cmd, db, conn_id):
    version = mongomock.SERVER_VERSION
    parts = [int(p) for p in version.split(".")[:3]] + [0]
    return {"version": version, "versionArray": parts, "gitVersion": "mongomock-" +
            MONGOMOCK_VERSION, "maxBsonObjectSize": 16777216, "ok": 1.0}


def cmd_find(cmd, db, conn_id):
    coll = db[cmd["find"]]
    cur = coll.find(with_now(cmd.get("filter") or {}, _now[0]), cmd.get("projection"))
    if cmd.get("sort"):
        cur = cur.sort(list(cmd["sort"].items()))
    if cmd.get("skip"):
        cur = cur.skip(int(cmd["skip"]))
    if cmd.get("limit"):
        cur = cur.limit(abs(int(cmd["limit"])))
    return cursor_reply(coll, list(cur))


def cmd_aggregate(cmd, db, conn_id):
    coll = db[cmd["aggregate"]]
    return cursor_reply(coll, list(coll.aggregate(with_now(cmd["pipeline"], _now[0]))))


def cmd_insert(cmd, db, conn_id):
    coll, n, errors = db[cmd["insert"]], 0, []
    for i, doc in enumerate(cmd.get("documents", [])):
        try:
            coll.insert_one(doc)
            n += 1
        except DuplicateKeyError as e:
            errors.append({"index": i, "code": 11000, "errmsg": dup_key_message(coll, e)})
            if cmd.get("ordered", True):
                break
    reply = {"n": n, "ok": 1.0}
    if errors:
        reply["writeErrors"] = errors
    return reply


def _update_one_item(coll, item):
    query, update = with_now(item["q"], _now[0]), with_now(item["u"], _now[0])
    if isinstance(update, list):
        update = pipeline_update(update)
    upsert, multi = bool(item.get("upsert")), bool(item.get("multi"))
    if upsert:
        refuse_expr_upsert(query)
    if is_operator_update(update):
        fn = coll.update_many if multi else coll.update_one
        return fn(query, update, upsert=upsert)
    if multi:
        raise bad_value("multi update is not supported for replacement-style update")
    return coll.replace_one(query, update, upsert=upsert)


def cmd_update(cmd, db, conn_id):
    coll, n, modified, upserted, errors = db[cmd["update"]], 0, 0, [], []
    for i, item in enumerate(cmd.get("updates", [])):
        try:
            result = _update_one_item(coll, item)
        except (DuplicateKeyError, OperationFailure) as e:
            code = 11000 if isinstance(e, DuplicateKeyError) else (e.code or 2)
            msg = dup_key_message(coll, e) if code == 11000 else str(e)
            errors.append({"index": i, "code": code, "errmsg": msg})
            if cmd.get("ordered", True):
                break
            continue
        if result.upserted_id is not None:
            n += 1
            upserted.append({"index": i, "_id": result.upserted_id})
        else:
            n += result.matched_count
            modified += result.modified_count
    reply = {"n": n, "nModified": modified, "ok": 1.0}
    if upserted:
        reply["upserted"] = upserted
    if errors:
        reply["writeErrors"] = errors
    return reply


def cmd_delete(cmd, db, conn_id):
    coll, n = db[cmd["delete"]], 0
    for item in cmd.get("deletes", []):
        query = with_now(item["q"], _now[0])
        result = coll.delete_one(query) if item.get("limit", 0) == 1 else coll.delete_many(query)
        n += result.deleted_count
    return {"n": n, "ok": 1.0}


def cmd_find_and_modify(cmd, db, conn_id):
    """findAndModify as the server answers it (findAndModify.txt; find_and_modify.cpp
    buildResponse): lastErrorObject {n, updatedExisting, upserted}, value pre- or post-image."""
    coll = db[cmd["findAndModify"]]
    query = with_now(cmd.get("query") or {}, _now[0])
    sort = list(cmd["sort"].items()) if cmd.get("sort") else None
    fields = cmd.get("fields")
    if cmd.get("upsert"):
        refuse_expr_upsert(query)
    found = coll.find_one(query, sort=sort)
    if cmd.get("remove"):
        if found is not None:
            coll.delete_one({"_id": found["_id"]})
        value = coll_project(found, fields)
        return {"lastErrorObject": {"n": 1 if found else 0}, "value": value, "ok": 1.0}
    update = with_now(cmd.get("update"), _now[0])
    if update is None:
        raise CommandError(9, "FailedToParse", "Either an update or remove=true must be specified")
    if isinstance(update, list):
        update = pipeline_update(update)
    apply = coll.update_one if is_operator_update(update) else coll.replace_one
    if found is not None:
        apply({"_id": found["_id"]}, update)
        after = coll.find_one({"_id": found["_id"]}, fields)
        value = after if cmd.get("new") else coll_project(found, fields)
        return {"lastErrorObject": {"n": 1, "updatedExisting": True}, "value": value, "ok": 1.0}
    if not cmd.get("upsert"):
        return {"lastErrorObject": {"n": 0, "updatedExisting": False}, "value": None, "ok": 1.0}
    result = apply(query, update, upsert=True)
    value = coll.find_one({"_id": result.upserted_id}, fields) if cmd.get("new") else None
    return {"lastErrorObject": {"n": 1, "updatedExisting": False,
                                "upserted": result.upserted_id}, "value": value, "ok": 1.0}


def coll_project(doc, fields):
    if doc is None or not fields:
        return doc
    include = {k for k, v in fields.items() if v}
    return {k: v for k, v in doc.items() if k in include or (k == "_id" and
                                                             fields.get("_id", 1))}


def cmd_create_indexes(cmd, db, conn_id):
    coll = db[cmd["createIndexes"]]
    existed = cmd["createIndexes"] in db.list_collection_names()
    before = len(coll.index_information()) if existed else 1
    for spec in cmd.get("indexes", []):
        options = {k: spec[k] for k in ("name", "unique", "sparse", "expireAfterSeconds",
                                        "partialFilterExpression") if k in spec}
        coll.create_index(list(spec["key"].items()), **options)
    return {"createdCollectionAutomatically": not existed, "numIndexesBefore": before,
            "numIndexesAfter": len(coll.index_information()), "ok": 1.0}


def cmd_list_indexes(cmd, db, conn_id):
    coll = db[cmd["listIndexes"]]
    if cmd["listIndexes"] not in db.list_collection_names():
        raise CommandError(26, "NamespaceNotFound", "ns does not exist: %s.%s" % (db.name,
                                                                                coll.name))
    return cursor_reply(coll, [dict(i) for i in coll.list_indexes()])


def cmd_drop(cmd, db, conn_id):
    db[cmd["drop"]].drop()
    return {"ns": "%s.%s" % (db.name, cmd["drop"]), "ok": 1.0}


def cmd_drop_database(cmd, db, conn_id):
    _client.drop_database(db.name)
    return {"dropped": db.name, "ok": 1.0}


def cmd_ok(cmd, db, conn_id):
    return {"ok": 1.0}


def cmd_auth(cmd, db, conn_id):
    raise CommandError(18, "AuthenticationFailed", "Authentication failed.")


def cmd_get_more(cmd, db, conn_id):
    raise CommandError(43, "CursorNotFound", "cursor id %s not found" % cmd.get("getMore"))


def cmd_shim_fault(cmd, db, conn_id):
    """Test hook (not MongoDB): arms a fault for the next `times` matching commands."""
    if cmd.get("action") == "clear":
        _faults.clear()
        return {"ok": 1.0}
    if cmd.get("action") not in ("closeBeforeApply", "closeAfterApply", "error",
                                 "writeConcernError", "delay"):
        raise bad_value("shimFault: unknown action %r" % cmd.get("action"))
    _faults.append({"action": cmd["action"], "commands": list(cmd.get("commands") or []),
                    "times": int(cmd.get("times", 1)), "code": int(cmd.get("code", 10107)),
                    "ms": int(cmd.get("ms", 0))})
    return {"ok": 1.0}


def cmd_shim_last_write_concern(cmd, db, conn_id):
    """Test hook (not MongoDB): the writeConcern the last command of each kind carried."""
    return {"writeConcern": {k: v for k, v in _last_write_concern.items()}, "ok": 1.0}


HANDLERS = {
    "hello": cmd_hello, "isMaster": cmd_hello, "ismaster": cmd_hello, "ping": cmd_ok,
    "buildInfo": cmd_build_info, "buildinfo": cmd_build_info, "endSessions": cmd_ok,
    "killCursors": cmd_ok, "getMore": cmd_get_more, "find": cmd_find,
    "aggregate": cmd_aggregate, "insert": cmd_insert, "update": cmd_update,
    "delete": cmd_delete, "findAndModify": cmd_find_and_modify,
    "findandmodify": cmd_find_and_modify, "createIndexes": cmd_create_indexes,
    "listIndexes": cmd_list_indexes, "drop": cmd_drop, "dropDatabase": cmd_drop_database,
    "saslStart": cmd_auth, "saslContinue": cmd_auth, "authenticate": cmd_auth,
    "shimFault": cmd_shim_fault, "shimLastWriteConcern": cmd_shim_last_write_concern,
}
_NO_FAULTS = {"hello", "isMaster", "ismaster", "shimFault", "shimLastWriteConcern"}


def take_fault(name):
    if name in _NO_FAULTS:
        return None
    for f in _faults:
        if not f["commands"] or name in f["commands"]:
            f["times"] -= 1
            if f["times"] <= 0:
                _faults.remove(f)
            return f
    return None


def execute(name, cmd, conn_id):
    if "txnNumber" in cmd or "startTransaction" in cmd or "autocommit" in cmd:
        raise CommandError(20, "IllegalOperation", "Transaction numbers are only allowed on a "
                           "replica set member or mongos")
    if name in _WRITES:
        check_write_concern(name, cmd)
    db = _client[cmd.get("$db", "test")]
    try:
        return HANDLERS[name](cmd, db, conn_id)
    except DuplicateKeyError as e:
        coll = cmd.get(name) if isinstance(cmd.get(name), str) else "?"
        return error(11000, "DuplicateKey", dup_key_message(db[coll], e))
    except OperationFailure as e:
        return error(e.code or 2, _CODE_NAMES.get(e.code or 2, "Location%d" % e.code), str(e))
    except (KeyError, TypeError, ValueError, AssertionError) as e:
        return error(2, "BadValue", "shim/mongomock: %s: %r" % (type(e).__name__, e))
    except NotImplementedError as e:
        return error(238, "NotImplemented", "mongomock: %s" % e)


def run(cmd, conn_id):
    """Runs one command; returns the reply document, or CLOSE to drop the connection."""
    if not cmd:
        return error(9, "FailedToParse", "empty command")
    name = next(iter(cmd))
    if name not in HANDLERS:
        return error(59, "CommandNotFound", "no such command: '%s'" % name)
    fault = take_fault(name)
    if fault and fault["action"] == "closeBeforeApply":
        return CLOSE
    if fault and fault["action"] == "error":
        return error(fault["code"], "ShimInjected", "injected by shimFault")
    with _lock:
        _now[0] = server_now()
        try:
            reply = execute(name, cmd, conn_id)
        except CommandError as e:
            reply = e.reply
        finally:
            _now[0] = None
    if fault and fault["action"] == "closeAfterApply":
        return CLOSE
    if fault and fault["action"] == "writeConcernError":
        reply["writeConcernError"] = {"code": 64, "codeName": "WriteConcernFailed",
                                      "errmsg": "waiting for replication timed out",
                                      "errInfo": {"wtimeout": True}}
    if fault and fault["action"] == "delay":
        time.sleep(fault["ms"] / 1000.0)
    return reply
