#!/usr/bin/env python3
"""Checks the Kubernetes API double with an independent client: Debian's python3-kubernetes
(the official Python client, generated from the Kubernetes OpenAPI spec). It deserializes the
double's Lease, LeaseList and Status bodies into its typed models (MicroTime included) and
raises ApiException with the status codes the reference gives (FIDELITY.md).

  selftest.py                      start a private double on a free port and check it
  selftest.py --read PORT NS NAME  print the Lease NAME as the client's typed model sees it (used
                                   by tests/integration/k8s to read the store's own objects)

Exit 0 when every check passed; prints "N passed, N failed".
"""

import json
import os
import subprocess
import sys

try:
    from kubernetes import client
    from kubernetes.client.rest import ApiException
except ImportError:  # the package is in scripts/install-deps.sh
    print("python3-kubernetes is not installed: skipped")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))


def api(port, token=None):
    cfg = client.Configuration()
    cfg.host = "http://127.0.0.1:%d" % port
    if token:
        cfg.api_key = {"authorization": "Bearer " + token}
    return client.CoordinationV1Api(client.ApiClient(cfg))


def start(args):
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "k8s_double.py"), "--port", "0"]
                         + args, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("READY "), line
    return p, int(line.split()[1])


def status_of(e):
    return e.status, json.loads(e.body).get("reason")


def checks(port):
    c = api(port)
    ns = "selftest"
    lease = client.V1Lease(metadata=client.V1ObjectMeta(name="job-a"),
                           spec=client.V1LeaseSpec(holder_identity="pod-1",
                                                   lease_duration_seconds=15,
                                                   lease_transitions=0))
    created = c.create_namespaced_lease(ns, lease)
    yield "create returns the typed Lease", created.spec.holder_identity == "pod-1" and \
        created.metadata.resource_version and created.metadata.uid
    created.spec.renew_time = __import__("datetime").datetime.now(
        __import__("datetime").timezone.utc)
    updated = c.replace_namespaced_lease("job-a", ns, created)
    yield "replace keeps microseconds of renewTime", \
        updated.spec.renew_time.microsecond == created.spec.renew_time.microsecond
    yield "replace gives a new resourceVersion", \
        updated.metadata.resource_version != created.metadata.resource_version
    try:
        c.replace_namespaced_lease("job-a", ns, created)  # the stale resourceVersion
        yield "stale replace is 409 Conflict", False
    except ApiException as e:
        yield "stale replace is 409 Conflict", status_of(e) == (409, "Conflict")
    try:
        c.create_namespaced_lease(ns, lease)
        yield "second create is 409 AlreadyExists", False
    except ApiException as e:
        yield "second create is 409 AlreadyExists", status_of(e) == (409, "AlreadyExists")
    try:
        c.read_namespaced_lease("missing", ns)
        yield "missing is 404 NotFound", False
    except ApiException as e:
        yield "missing is 404 NotFound", status_of(e) == (404, "NotFound")
    bad = client.V1Lease(metadata=client.V1ObjectMeta(name="job-b"),
                         spec=client.V1LeaseSpec(lease_duration_seconds=0))
    try:
        c.create_namespaced_lease(ns, bad)
        yield "leaseDurationSeconds 0 is 422 Invalid", False
    except ApiException as e:
        body = json.loads(e.body)
        yield "leaseDurationSeconds 0 is 422 Invalid", status_of(e) == (422, "Invalid") and \
            body["details"]["causes"][0]["field"] == "spec.leaseDurationSeconds"
    labelled = client.V1Lease(metadata=client.V1ObjectMeta(name="job-c", labels={"app": "x"}),
                              spec=client.V1LeaseSpec())
    c.create_namespaced_lease(ns, labelled)
    listed = c.list_namespaced_lease(ns, label_selector="app=x")
    yield "list with a label selector", [i.metadata.name for i in listed.items] == ["job-c"]
    status = c.delete_namespaced_lease("job-c", ns)
    yield "delete returns a Success Status", status.status == "Success"


def watch_checks():
    """A watch read by the client's own watch.Watch, which splits the stream into lines and
    deserializes each event's object into V1Lease (or raises ApiException for an ERROR)."""
    from kubernetes import watch
    p, port = start(["--watch-history", "4"])
    try:
        c = api(port)
        ns = "watch"
        c.create_namespaced_lease(ns, client.V1Lease(
            metadata=client.V1ObjectMeta(name="w-a", labels={"lock": "a"}),
            spec=client.V1LeaseSpec(holder_identity="pod-1", lease_duration_seconds=15)))
        listed = c.list_namespaced_lease(ns, label_selector="lock=a")
        rv = listed.metadata.resource_version
        current = listed.items[0]
        current.spec.holder_identity = "pod-2"
        c.replace_namespaced_lease("w-a", ns, current)
        c.create_namespaced_lease(ns, client.V1Lease(metadata=client.V1ObjectMeta(name="w-b"),
                                                     spec=client.V1LeaseSpec()))
        c.delete_namespaced_lease("w-a", ns)
        w = watch.Watch()
        seen = [(e["type"], e["object"].metadata.name, e["object"].spec.holder_identity)
                for e in w.stream(c.list_namespaced_lease, ns, label_selector="lock=a",
                                  resource_version=rv, timeout_seconds=1)]
        yield "a label-selected watch from a list's resourceVersion gives MODIFIED, DELETED", \
            seen == [("MODIFIED", "w-a", "pod-2"), ("DELETED", "w-a", "pod-2")]
        seen = [(e["type"], e["object"].metadata.name)
                for e in watch.Watch().stream(c.list_namespaced_lease, ns,
                                              field_selector="metadata.name=w-b",
                                              timeout_seconds=1)]
        yield "a fieldSelector watch without resourceVersion starts with ADDED", \
            seen == [("ADDED", "w-b")]
        types = [e["type"] for e in watch.Watch().stream(
            c.list_namespaced_lease, ns, resource_version=rv, timeout_seconds=1)]
        yield "an unselected watch sees every change after the resourceVersion", \
            types == ["MODIFIED", "ADDED", "DELETED"]
        for i in range(5):  # more changes than the double keeps (--watch-history 4)
            c.create_namespaced_lease(ns, client.V1Lease(
                metadata=client.V1ObjectMeta(name="w-c%d" % i), spec=client.V1LeaseSpec()))
        try:
            list(watch.Watch().stream(c.list_namespaced_lease, ns, resource_version=rv,
                                      timeout_seconds=1))
            yield "a watch from a compacted resourceVersion raises 410", False
        except ApiException as e:
            yield "a watch from a compacted resourceVersion raises 410", e.status == 410
    finally:
        p.kill()


def auth_checks():
    p, port = start(["--token", "good", "--forbidden-token", "rbac"])
    try:
        for token, want in ((None, 401), ("wrong", 401), ("rbac", 403)):
            try:
                api(port, token).read_namespaced_lease("x", "ns")
                yield "token %s is %d" % (token, want), False
            except ApiException as e:
                yield "token %s is %d" % (token, want), e.status == want
        try:
            api(port, "good").read_namespaced_lease("x", "ns")
        except ApiException as e:
            yield "a good token reaches the API (404)", e.status == 404
    finally:
        p.kill()


def read(port, ns, name):
    lease = api(port).read_namespaced_lease(name, ns)
    s = lease.spec
    print(json.dumps({"holderIdentity": s.holder_identity,
                      "leaseDurationSeconds": s.lease_duration_seconds,
                      "leaseTransitions": s.lease_transitions,
                      "acquireMicroseconds": s.acquire_time.microsecond,
                      "renewTzUtc": s.renew_time.utcoffset().total_seconds() == 0,
                      "annotations": lease.metadata.annotations}))


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--read":
        read(int(sys.argv[2]), sys.argv[3], sys.argv[4])
        return 0
    p, port = start([])
    passed = failed = 0
    try:
        for name, ok in list(checks(port)) + list(watch_checks()) + list(auth_checks()):
            print(("ok     " if ok else "FAILED ") + name)
            passed, failed = passed + bool(ok), failed + (not ok)
    finally:
        p.kill()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
