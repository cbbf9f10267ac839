#!/usr/bin/env python3
"""A Kubernetes API double: coordination.k8s.io/v1 Leases only, in memory.

Written from the API reference notes in /work/shared/reference/kubernetes-lease.md (section
numbers below, "ref 3.2" etc.); FIDELITY.md lists what it implements and what it does not.
Python 3 standard library only.

  k8s_double.py --port 16443 (0: any free port) [--host 127.0.0.1] [--token T ...] [--token-file F]
                [--forbidden-token T ...] [--tls-cert C --tls-key K [--client-ca CA]]
                [--pid-file P] [--watch-history N]

Watch (`GET .../leases?watch=true`): newline-delimited JSON events {"type", "object"} from the
given resourceVersion on, with labelSelector / fieldSelector and timeoutSeconds; the last N
changes are kept (--watch-history, default 1000) and a watch from an older resourceVersion gets
one ERROR event with a 410 Expired Status (FIDELITY.md, "Watch").

Auth: with no --token/--token-file every request is accepted; otherwise a request needs
`Authorization: Bearer <t>` with t in --token or in a line of --token-file (re-read on every
request, so tests can rotate it): 401 Unauthorized otherwise; a --forbidden-token is
authenticated but gets 403 Forbidden for every lease request. With --client-ca (TLS only) a
client may present a certificate signed by that CA instead (x509 client-certificate
authentication; the TLS handshake fails for a certificate the CA did not sign).

Fault hooks (tests only; never part of the Kubernetes API): POST /_double/faults with a JSON
object {"fail_next": [503, 500, ...]} answers the next requests with those codes (a Status
body) without applying them; {"lose_next": n} applies the next n lease writes and then closes
the connection without a reply (an outcome-unknown write); {"delay_ms": d} delays every reply by
d ms; {} clears them. GET /_double/healthz answers 200. SIGSTOP of the process makes every request
hang (the outage the contract suite uses). Prints "READY <port>" once it listens.
"""

import argparse
import collections
import datetime
import json
import os
import re
import select
import socket
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

GROUP = "coordination.k8s.io"
API_VERSION = GROUP + "/v1"
PREFIX = "/apis/" + API_VERSION + "/namespaces/"
DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_SUBDOMAIN = re.compile(r"^" + DNS_LABEL + r"(\." + DNS_LABEL + r")*$")
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
INT32_MAX = 2**31 - 1


class ApiError(Exception):
    """An error reply: HTTP code, reason and message, as a Status body (ref 3)."""

    def __init__(self, code, reason, message, name=None, kind="leases", causes=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.name, self.kind, self.causes = name, kind, causes


def status_body(code, reason, message, name=None, kind="leases", causes=None, success=False):
    """A meta/v1 Status (ref 3, "Status body shape")."""
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Success" if success else "Failure"}
    if message:
        body["message"] = message
    if reason:
        body["reason"] = reason
    details = {}
    if name is not None:
        details["name"] = name
    if name is not None or causes:
        details["group"] = GROUP
        details["kind"] = kind
    if causes:
        details["causes"] = causes
    if details:
        body["details"] = details
    body["code"] = code
    return body


def not_found(name):
    return ApiError(404, "NotFound", 'leases.coordination.k8s.io "%s" not found' % name, name)


def conflict(name, why=None):
    message = why or ("the object has been modified; please apply your changes to the latest "
                      "version and try again")
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on leases.coordination.k8s.io '
                    '"%s": %s' % (name, message), name)


def invalid(name, field, reason, detail, kind="Lease"):
    """422 Invalid with one cause (ref 3.2, 3.9)."""
    cause = {"reason": reason, "message": detail, "field": field}
    message = '%s.coordination.k8s.io "%s" is invalid: %s: %s' % (kind, name, field, detail)
    return ApiError(422, "Invalid", message, name, kind, [cause])


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """Leases by (namespace, name); one lock; resourceVersion is one increasing counter."""

    def __init__(self, history=1000):
        self.mu = threading.Lock()
        self.changed = threading.Condition(self.mu)  # notified on every change (watchers)
        self.objects = {}
        self.revision = 1000
        # Watch history: (revision, namespace, old object or None, new object or None), oldest
        # first; `compacted` is the newest revision whose change is no longer kept.
        self.history = collections.deque()
        self.history_size = max(1, history)
        self.compacted = self.revision

    def next_rv(self):
        self.revision += 1
        return str(self.revision)

    def record(self, ns, old, new):
        """Keeps one change for watchers (under mu) and wakes them."""
        self.history.append((self.revision, ns, old, new))
        while len(self.history) > self.history_size:
            self.compacted = self.history.popleft()[0]
        self.changed.notify_all()

    def get(self, ns, name):
        with self.mu:
            obj = self.objects.get((ns, name))
            if obj is None:
                raise not_found(name)
            return obj

    def list(self, ns, selector, fields=()):
        with self.mu:
            items = [o for (n, _), o in sorted(self.objects.items()) if n == ns]
            # Items carry no kind/apiVersion, as the real server sends them
            # (kubernetes/kubernetes issues 3030 and 63676).
            items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                     for o in items if matches(o, selector) and fields_match(o, fields)]
            return {"apiVersion": API_VERSION, "kind": "LeaseList",
                    "metadata": {"resourceVersion": str(self.revision)}, "items": items}

    def create(self, ns, body):
        name = body.get("metadata", {}).get("name", "")
        with self.mu:
            if (ns, name) in self.objects:  # ref 3.7
                raise ApiError(409, "AlreadyExists",
                               'leases.coordination.k8s.io "%s" already exists' % name, name)
            obj = self.stamp_new(ns, body)
            self.objects[(ns, name)] = obj
            self.record(ns, None, obj)
            return obj

    def stamp_new(self, ns, body):
        meta = dict(body.get("metadata", {}))
        meta.pop("resourceVersion", None)
        meta.update({"namespace": ns, "uid": str(uuid.uuid4()), "resourceVersion": self.next_rv(),
                     "creationTimestamp": now_rfc3339()})
        return {"apiVersion": API_VERSION, "kind": "Lease", "metadata": meta,
                "spec": body.get("spec", {})}

    def update(self, ns, name, body):
        """PUT (ref 3.1-3.6); returns (object, created)."""
        meta = body.get("metadata", {})
        with self.mu:
            cur = self.objects.get((ns, name))
            if cur is None:  # create on update, unless a uid precondition fails (ref 3.5)
                if meta.get("uid"):
                    raise conflict(name, "Precondition failed: UID in precondition: %s, UID in "
                                   "object meta: " % meta["uid"])
                obj = self.stamp_new(ns, body)
                self.objects[(ns, name)] = obj
                self.record(ns, None, obj)
                return obj, True
            rv = meta.get("resourceVersion")
            if not rv:  # ref 3.2
                raise invalid(name, "metadata.resourceVersion", "FieldValueInvalid",
                              "Invalid value: 0x0: must be specified for an update", "leases")
            if meta.get("uid") and meta["uid"] != cur["metadata"]["uid"]:  # ref 3.4
                raise conflict(name, "Precondition failed: UID in precondition: %s, UID in "
                               "object meta: %s" % (meta["uid"], cur["metadata"]["uid"]))
            if rv != cur["metadata"]["resourceVersion"]:  # ref 3.3
                raise conflict(name)
            new_meta = dict(cur["metadata"])
            for key in ("labels", "annotations"):
                if key in meta:
                    new_meta[key] = meta[key]
                else:
                    new_meta.pop(key, None)
            new = {"apiVersion": API_VERSION, "kind": "Lease", "metadata": new_meta,
                   "spec": body.get("spec", {})}
            if canonical(new) == canonical(cur):  # ref 3.6: no write, same resourceVersion
                return cur, False
            new_meta["resourceVersion"] = self.next_rv()
            self.objects[(ns, name)] = new
            self.record(ns, cur, new)
            return new, False

    def delete(self, ns, name, options):
        pre = (options or {}).get("preconditions") or {}
        with self.mu:
            cur = self.objects.get((ns, name))
            if cur is None:
                raise not_found(name)
            if pre.get("uid") and pre["uid"] != cur["metadata"]["uid"]:  # ref 3.10
                raise conflict(name, "Precondition failed: UID in precondition: %s, UID in "
                               "object meta: %s" % (pre["uid"], cur["metadata"]["uid"]))
            if pre.get("resourceVersion") and \
                    pre["resourceVersion"] != cur["metadata"]["resourceVersion"]:
                raise conflict(name, "Precondition failed: ResourceVersion in precondition: %s, "
                               "ResourceVersion in object meta: %s"
                               % (pre["resourceVersion"], cur["metadata"]["resourceVersion"]))
            del self.objects[(ns, name)]
            self.revision += 1
            self.record(ns, cur, None)
            return cur


    def watch_start(self, ns, since, accept):
        """Where a watch starts (under mu): (synthetic ADDED events, revision to follow from),
        or None when `since` is older than the kept history (410). `since` None: the current
        objects as ADDED events first ("Get State and Start at Most Recent")."""
        if since is None:
            added = [("ADDED", o) for (n, _), o in sorted(self.objects.items())
                     if n == ns and accept(o)]
            return added, self.revision
        if since < self.compacted:
            return None
        return [], since

    def watch_events(self, ns, since, accept):
        """The events of changes after `since` in `ns` that `accept` selects (under mu), or None
        when some of them are no longer kept."""
        if since < self.compacted:
            return None
        out = []
        for revision, n, old, new in self.history:
            if revision <= since or n != ns:
                continue
            event = watch_event(revision, old, new, accept)
            if event:
                out.append(event)
        return out


def watch_event(revision, old, new, accept):
    """One change as a watch event for a selector (`accept`): an object that starts matching is
    ADDED, one that stops matching (or is deleted) DELETED with its last state at the change's
    resourceVersion, one that keeps matching MODIFIED; None when neither state matches."""
    was, now = old is not None and accept(old), new is not None and accept(new)
    if now:
        return ("MODIFIED" if was else "ADDED"), new
    if was:
        gone = json.loads(json.dumps(old))
        gone["metadata"]["resourceVersion"] = str(revision)
        return "DELETED", gone
    return None


def expired_status(since, oldest):
    """The Status of a watch from a resourceVersion older than the kept history."""
    return status_body(410, "Expired", "too old resource version: %d (%d)" % (since, oldest))


def canonical(obj):
    meta = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    return json.dumps({"metadata": meta, "spec": obj["spec"]}, sort_keys=True)


def matches(obj, selector):
    labels = obj["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector)


def is_watch(query):
    """?watch= as the apiserver parses booleans (Go strconv.ParseBool's true forms)."""
    return query.get("watch", ["false"])[0] in ("1", "t", "T", "true", "TRUE", "True")


def fields_match(obj, fields):
    meta = obj["metadata"]
    return all(meta.get(k) == v for k, v in fields)


def parse_fields(text):
    """Field selectors of Leases: metadata.name and metadata.namespace, k=v or k==v."""
    out = []
    for term in filter(None, (text or "").split(",")):
        m = re.match(r"^([^=!]+)==?([^=]*)$", term)
        if not m:
            raise bad_request('invalid field selector "%s": this double supports only k=v' % term)
        key = m.group(1).strip()
        if key not in ("metadata.name", "metadata.namespace"):
            raise bad_request('field label not supported: %s' % key)
        out.append((key.split(".", 1)[1], m.group(2).strip()))
    return out


def parse_selector(text):
    """Equality-based label selectors only: k=v, k==v, comma-separated."""
    out = []
    for term in filter(None, (text or "").split(",")):
        m = re.match(r"^([^=!]+)==?([^=]*)$", term)
        if not m:
            raise bad_request('unable to parse requirement: found "%s", this double supports '
                              'only k=v selectors' % term)
        out.append((m.group(1).strip(), m.group(2).strip()))
    return out


def validate(name, body):
    """Body shape (400) and Lease validation (422), ref 3.9."""
    if not isinstance(body, dict):
        raise bad_request("the body is not a JSON object")
    if body.get("apiVersion", API_VERSION) != API_VERSION or body.get("kind", "Lease") != "Lease":
        raise bad_request("the API version in the data (%s) does not match the expected API "
                          "version (%s)" % (body.get("apiVersion"), API_VERSION))
    meta = body.get("metadata")
    if not isinstance(meta, dict):
        raise invalid(name, "metadata.name", "FieldValueRequired", "Required value: name or "
                      "generateName is required")
    if not name or len(name) > 253 or not DNS_SUBDOMAIN.match(name):
        raise invalid(name, "metadata.name", "FieldValueInvalid", "Invalid value: \"%s\": a "
                      "lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                      "characters, '-' or '.', and must start and end with an alphanumeric "
                      "character" % name)
    validate_meta_maps(name, meta)
    spec = body.get("spec", {})
    if not isinstance(spec, dict):
        raise bad_request("spec: expected an object")
    validate_spec(name, spec)


def validate_meta_maps(name, meta):
    for key in ("labels", "annotations"):
        values = meta.get(key) or {}
        if not isinstance(values, dict):
            raise bad_request("metadata.%s: expected a map of strings" % key)
        for k, v in values.items():
            prefix, _, short = k.rpartition("/")
            ok = QUALIFIED_NAME.match(short) and len(short) <= 63 and \
                (not prefix or (DNS_SUBDOMAIN.match(prefix) and len(prefix) <= 253))
            if not ok:
                raise invalid(name, "metadata.%s" % key, "FieldValueInvalid",
                              "Invalid value: \"%s\": name part must consist of alphanumeric "
                              "characters, '-', '_' or '.'" % k)
            if not isinstance(v, str):
                raise bad_request("metadata.%s[%s]: expected a string" % (key, k))
            if key == "labels" and (len(v) > 63 or not LABEL_VALUE.match(v)):
                raise invalid(name, "metadata.labels", "FieldValueInvalid",
                              "Invalid value: \"%s\": a valid label must be an empty string or "
                              "consist of alphanumeric characters, '-', '_' or '.'" % v)
        if key == "annotations" and len(json.dumps(values)) > 256 * 1024:
            raise invalid(name, "metadata.annotations", "FieldValueTooLong",
                          "Too long: must have at most 262144 bytes")


def validate_spec(name, spec):
    for field in ("leaseDurationSeconds", "leaseTransitions"):
        v = spec.get(field)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or
                              not -2**31 <= v <= INT32_MAX):
            raise bad_request("spec.%s: expected an int32, got %s" % (field, json.dumps(v)))
    for field in ("acquireTime", "renewTime"):  # decoding failure: 400 (MicroTime layout)
        v = spec.get(field)
        if v is not None and (not isinstance(v, str) or not MICRO_TIME.match(v)):
            raise bad_request("spec.%s: parsing time %s: not a MicroTime" % (field, json.dumps(v)))
    for field in ("holderIdentity", "strategy", "preferredHolder"):
        v = spec.get(field)
        if v is not None and not isinstance(v, str):
            raise bad_request("spec.%s: expected a string" % field)
    d = spec.get("leaseDurationSeconds")
    if d is not None and d <= 0:
        raise invalid(name, "spec.leaseDurationSeconds", "FieldValueInvalid",
                      "Invalid value: %d: must be greater than 0" % d)
    t = spec.get("leaseTransitions")
    if t is not None and t < 0:
        raise invalid(name, "spec.leaseTransitions", "FieldValueInvalid",
                      "Invalid value: %d: must be greater than or equal to 0" % t)
    if spec.get("preferredHolder") and not spec.get("strategy"):
        raise invalid(name, "spec.preferredHolder", "FieldValueForbidden",
                      "Forbidden: preferredHolder can only be set when strategy is set")


class Faults:
    def __init__(self):
        self.mu = threading.Lock()
        self.fail_next = []
        self.lose_next = 0
        self.delay_ms = 0

    def set(self, spec):
        with self.mu:
            self.fail_next = list(spec.get("fail_next", []))
            self.lose_next = int(spec.get("lose_next", 0))
            self.delay_ms = int(spec.get("delay_ms", 0))

    def take_failure(self):
        with self.mu:
            return self.fail_next.pop(0) if self.fail_next else None

    def take_loss(self):
        with self.mu:
            if self.lose_next > 0:
                self.lose_next -= 1
                return True
            return False


REASONS = {429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
           504: "Timeout"}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "k8s-double/1"
    disable_nagle_algorithm = True  # TCP_NODELAY: headers and body are separate writes

    def log_message(self, fmt, *args):  # quiet unless K8S_DOUBLE_LOG is set
        if os.environ.get("K8S_DOUBLE_LOG"):
            sys.stderr.write("%s %s\n" % (self.address_string(), fmt % args))

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def reply(self, code, body, headers=()):
        delay = self.server.faults.delay_ms
        if delay:
            time.sleep(delay / 1000.0)
        data = json.dumps(body, separators=(",", ":")).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        raw = self.raw_body
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError as e:
            raise bad_request("couldn't get version/kind; json parse error: %s" % e)

    def dispatch(self, method):
        url = urlsplit(self.path)
        n = int(self.headers.get("Content-Length") or 0)
        self.raw_body = self.rfile.read(n) if n else b""  # always consumed: keep-alive framing
        try:
            if url.path.startswith("/_double/"):
                return self.admin(method, url.path)
            self.authorize(url.path)
            failure = self.server.faults.take_failure()
            if failure:
                headers = [("Retry-After", "1")] if failure == 429 else []
                return self.reply(failure, status_body(failure, REASONS.get(failure, "Unknown"),
                                                       "injected by the double"), headers)
            routed = self.route(method, url)
            if routed is None:  # a watch: its reply was streamed
                return None
            code, body = routed
            if method != "GET" and self.server.faults.take_loss():
                self.close_connection = True
                self.connection.shutdown(2)  # applied, but the reply is lost
                return None
            return self.reply(code, body)
        except ApiError as e:
            return self.reply(e.code, status_body(e.code, e.reason, e.message, e.name, e.kind,
                                                  e.causes))

    def watch(self, ns, labels, fields, query):
        """A list-watch: 200, then one chunk per event ({"type", "object"} and a newline) until
        timeoutSeconds passed or the client went away; returns None (the reply is written)."""
        rv = query.get("resourceVersion", [""])[0]
        if rv not in ("", "0") and not rv.isdigit():
            raise bad_request('invalid resource version "%s"' % rv)
        timeout = query.get("timeoutSeconds", ["1800"])[0]
        if not timeout.isdigit():
            raise bad_request("timeoutSeconds: not a number: %s" % timeout)
        end = time.monotonic() + int(timeout)
        since = None if rv in ("", "0") else int(rv)
        store = self.server.store

        def accept(obj):
            return matches(obj, labels) and fields_match(obj, fields)

        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        # The double ends the connection with the stream: say so, or a client's pool reuses it
        # for its next request and reads no reply (urllib3: RemoteDisconnected under load).
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        with store.mu:
            start = store.watch_start(ns, since, accept)
            oldest = store.compacted
        try:
            if start is None:
                self.send_event("ERROR", expired_status(since, oldest))
                return self.end_chunks()
            events, since = start
            for kind, obj in events:
                self.send_event(kind, obj)
            while time.monotonic() < end:
                with store.mu:
                    while store.revision == since and time.monotonic() < end:
                        store.changed.wait(min(1.0, max(0.0, end - time.monotonic())))
                        if self.peer_closed():
                            return None
                    events = store.watch_events(ns, since, accept)
                    since, oldest = store.revision, store.compacted
                if events is None:  # this watcher fell behind the kept history
                    self.send_event("ERROR", expired_status(since, oldest))
                    break
                for kind, obj in events:
                    self.send_event(kind, obj)
            return self.end_chunks()
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            return None  # the client went away

    def send_event(self, kind, obj):
        obj = {"kind": "Status" if kind == "ERROR" else "Lease",
               "apiVersion": "v1" if kind == "ERROR" else API_VERSION} | obj
        data = json.dumps({"type": kind, "object": obj}, separators=(",", ":")).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")

    def peer_closed(self):
        """True when the client closed its end (plain sockets; a TLS peer is found on write)."""
        sock = self.connection
        if isinstance(sock, ssl.SSLSocket):
            return False
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def authorize(self, path):
        tokens = set(self.server.tokens)
        if self.server.token_file:
            try:
                with open(self.server.token_file) as f:
                    tokens |= {line.strip() for line in f if line.strip()}
            except OSError:
                pass
        forbidden = set(self.server.forbidden_tokens)
        if not tokens and not forbidden:
            return
        if isinstance(self.connection, ssl.SSLSocket) and self.connection.getpeercert():
            return  # a client certificate the --client-ca verified in the handshake
        auth = self.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        if token in forbidden:
            raise ApiError(403, "Forbidden", 'leases.coordination.k8s.io is forbidden: User '
                           '"system:serviceaccount:test:forbidden" cannot access resource '
                           '"leases" in API group "coordination.k8s.io"', None)
        if token not in tokens:
            raise ApiError(401, "Unauthorized", "Unauthorized")

    def admin(self, method, path):
        if path == "/_double/healthz":
            return self.reply(200, {"ok": True})
        if path == "/_double/faults" and method == "POST":
            self.server.faults.set(self.read_body() or {})
            return self.reply(200, {"ok": True})
        raise ApiError(404, "NotFound", "no such admin endpoint")

    def route(self, method, url):
        if not url.path.startswith(PREFIX):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        parts = url.path[len(PREFIX):].split("/")
        if len(parts) not in (2, 3) or parts[1] != "leases" or not parts[0]:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns, name = parts[0], parts[2] if len(parts) == 3 else None
        query = parse_qs(url.query)
        store = self.server.store
        if name is None:
            if method == "GET":
                labels = parse_selector(query.get("labelSelector", [""])[0])
                fields = parse_fields(query.get("fieldSelector", [""])[0])
                if is_watch(query):
                    return self.watch(ns, labels, fields, query)
                return 200, store.list(ns, labels, fields)
            if method == "POST":
                body = self.read_body()
                name = ((body or {}).get("metadata") or {}).get("name", "") \
                    if isinstance(body, dict) else ""
                validate(name, body)
                if body["metadata"].get("resourceVersion"):  # ref 3.7
                    raise bad_request("resourceVersion should not be set on objects to be "
                                      "created")
                return 201, store.create(ns, body)
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method on "
                           "the requested resource")
        if method == "GET":
            if is_watch(query):
                raise bad_request("watch of one Lease by its path is not implemented by this "
                                  "double: list-watch with fieldSelector=metadata.name=%s" % name)
            return 200, store.get(ns, name)
        if method == "PUT":
            body = self.read_body()
            validate(name, body)
            meta = body["metadata"]
            if meta.get("name") != name:
                raise bad_request("the name of the object (%s) does not match the name on the "
                                  "URL (%s)" % (meta.get("name"), name))
            if meta.get("namespace", ns) != ns:
                raise bad_request("the namespace of the provided object does not match the "
                                  "namespace sent on the request")
            obj, created = store.update(ns, name, body)
            return (201 if created else 200), obj
        if method == "DELETE":
            obj = store.delete(ns, name, self.read_body())
            return 200, status_body(200, None, None, name, "leases", success=True) | {
                "details": {"name": name, "group": GROUP, "kind": "leases",
                            "uid": obj["metadata"]["uid"]}}
        if method == "PATCH":
            raise ApiError(415, "UnsupportedMediaType", "PATCH is not implemented by this double")
        raise ApiError(405, "MethodNotAllowed", "method not allowed")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=16443)
    p.add_argument("--token", action="append", default=[])
    p.add_argument("--token-file")
    p.add_argument("--forbidden-token", action="append", default=[])
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--client-ca", help="CA of accepted client certificates (with --tls-cert)")
    p.add_argument("--pid-file")
    p.add_argument("--watch-history", type=int, default=1000,
                   help="changes kept for watches; older resourceVersions get 410")
    a = p.parse_args()
    server = ThreadingHTTPServer((a.host, a.port), Handler)
    server.daemon_threads = True
    server.store, server.faults = Store(a.watch_history), Faults()
    server.tokens, server.token_file = a.token, a.token_file
    server.forbidden_tokens = a.forbidden_token
    if a.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls_cert, a.tls_key)
        if a.client_ca:
            ctx.load_verify_locations(a.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    if a.pid_file:
        with open(a.pid_file, "w") as f:
            f.write("%d\n" % os.getpid())
    print("READY %d" % server.server_address[1], flush=True)  # --port 0: the port chosen
    server.serve_forever()


if __name__ == "__main__":
    main()
