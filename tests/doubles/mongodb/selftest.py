#!/usr/bin/python3
"""Self-test of the MongoDB stand-in with an independent client: Debian's pymongo 3.11.

Starts a private shim on a free port, checks the reply shapes and errors FIDELITY.md promises
(as pymongo, a driver written against real servers, parses them), and stops it.
Usage: /usr/bin/python3 tests/doubles/mongodb/selftest.py
"""

import datetime
import os
import socket
import subprocess
import sys
import time

import pymongo
from pymongo.errors import AutoReconnect, DuplicateKeyError, OperationFailure
from pymongo.collection import ReturnDocument

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_shim(port):
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, "shim.py"), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 20
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("shim did not start")


def check(name, condition):
    if not condition:
        raise AssertionError(name)
    print("ok  " + name)


def expect_code(name, code, call):
    try:
        call()
    except OperationFailure as e:
        check("%s (code %s)" % (name, e.code), e.code == code)
        return
    raise AssertionError(name + ": no error")


def run(client):
    db = client.selftest
    check("ping", client.admin.command("ping")["ok"] == 1)
    hello = client.admin.command("isMaster")
    check("hello: standalone primary without sessions",
          hello["ismaster"] and "setName" not in hello and
          "logicalSessionTimeoutMinutes" not in hello and hello["maxWireVersion"] == 13)
    coll = db.c
    coll.insert_one({"_id": "a", "n": 1})
    try:
        coll.insert_one({"_id": "a"})
        raise AssertionError("no duplicate key")
    except DuplicateKeyError as e:
        check("insert of an existing _id: DuplicateKeyError 11000", e.code == 11000)
    r = coll.update_one({"_id": "b"}, {"$set": {"n": 2}}, upsert=True)
    check("update upsert: upserted_id from upserted[{index,_id}]", r.upserted_id == "b")
    check("find_one_and_update without a match: None",
          coll.find_one_and_update({"_id": "zz"}, {"$set": {"x": 1}}) is None)
    doc = coll.find_one_and_update({"_id": "c"}, {"$inc": {"n": 1}}, upsert=True,
                                   return_document=ReturnDocument.AFTER)
    check("find_one_and_update upsert + AFTER: the new document", doc == {"_id": "c", "n": 1})
    raw = db.command("findAndModify", "c", query={"_id": "d"}, update={"$set": {"n": 4}},
                     upsert=True)
    check("findAndModify insert: lastErrorObject {n:1, updatedExisting:false, upserted}",
          raw["lastErrorObject"] == {"n": 1, "updatedExisting": False, "upserted": "d"} and
          raw["value"] is None)
    raw = db.command("findAndModify", "c", query={"_id": "d"}, update={"$set": {"n": 5}})
    check("findAndModify update: updatedExisting, pre-image",
          raw["lastErrorObject"] == {"n": 1, "updatedExisting": True} and raw["value"]["n"] == 4)
    expect_code("findAndModify upsert colliding on _id", 11000, lambda: db.command(
        "findAndModify", "c", query={"_id": "d", "n": 99}, update={"$set": {"m": 1}},
        upsert=True))
    raw = db.command("update", "c", updates=[{"q": {"_id": "d", "n": 99}, "u": {"$set": {"m": 1}},
                                              "upsert": True}])
    check("update upsert colliding on _id: ok 1 with writeErrors[0].code 11000",
          raw["ok"] == 1 and raw["writeErrors"][0]["code"] == 11000)
    expect_code("findAndModify upsert with $expr in the query: QueryFeatureNotAllowed", 224,
                lambda: db.command("findAndModify", "c", query={"_id": "e", "$expr": {
                    "$eq": [1, 1]}}, update={"$set": {"m": 1}}, upsert=True))
    raw = db.command("update", "c", updates=[{"q": {"$and": [{"$expr": {"$eq": [1, 1]}}]},
                                              "u": {"$set": {"m": 1}}, "upsert": True}])
    check("update upsert with $expr in the query: writeErrors[0].code 224",
          raw["writeErrors"][0]["code"] == 224)
    coll.update_one({"_id": "t"}, {"$currentDate": {"at": True}}, upsert=True)
    at = coll.find_one({"_id": "t"})["at"]
    check("$currentDate: a datetime with millisecond precision",
          isinstance(at, datetime.datetime) and at.microsecond % 1000 == 0)
    live = {"_id": "t", "$expr": {"$gt": ["$at", {"$subtract": ["$$NOW", 60000]}]}}
    gone = {"_id": "t", "$expr": {"$lte": ["$at", {"$subtract": ["$$NOW", 60000]}]}}
    check("$$NOW in $expr with $subtract: server time",
          coll.find_one(live) is not None and coll.find_one(gone) is None)
    coll.update_one({"_id": "p"}, [{"$set": {"k": 1, "when": "$$NOW"}}], upsert=True)
    check("constant pipeline update with $$NOW", coll.find_one({"_id": "p"})["k"] == 1)
    expect_code("pipeline update with a field path: BadValue", 2,
                lambda: coll.update_one({"_id": "p"}, [{"$set": {"k": "$other"}}]))
    expect_code("unknown command: CommandNotFound", 59, lambda: db.command("frobnicate"))
    u = db.u
    u.create_index([("g", 1), ("n", 1)], unique=True)
    u.insert_one({"g": 1, "n": 1})
    try:
        u.insert_one({"g": 1, "n": 1})
        raise AssertionError("unique index not enforced")
    except DuplicateKeyError as e:
        check("unique secondary index: 11000", e.code == 11000)
    client.admin.command("shimFault", action="closeAfterApply", commands=["update"])
    try:
        coll.update_one({"_id": "lost"}, {"$set": {"v": 1}}, upsert=True)
        raise AssertionError("reply not dropped")
    except AutoReconnect:
        pass
    check("closeAfterApply: no reply, the write applied", coll.find_one({"_id": "lost"}) is not None)
    client.admin.command("shimFault", action="closeBeforeApply", commands=["update"])
    try:
        coll.update_one({"_id": "never"}, {"$set": {"v": 1}}, upsert=True)
    except AutoReconnect:
        pass
    check("closeBeforeApply: nothing applied", coll.find_one({"_id": "never"}) is None)


def main():
    port = free_port()
    proc = start_shim(port)
    try:
        client = pymongo.MongoClient("mongodb://127.0.0.1:%d/?retryWrites=false" % port,
                                     serverSelectionTimeoutMS=5000)
        run(client)
        client.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print("selftest passed")


if __name__ == "__main__":
    main()
