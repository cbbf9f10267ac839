#!/usr/bin/env python3
"""docs/openapi.yaml against the real `leader serve`.

Usage: openapi_test.py LEADER_BINARY. Starts sidecars on SQLite files, calls every route of the
description (each status that is cheap to provoke: 200, 400, 401, 404, 409, 413, 429) and
validates each reply against the route's schema for that status and content type. Fails too when
a route the server registers (tools/leader/serve_*.cpp) or docs/serve.md lists is missing from
the file, or a route of the file was never called. Exit 77 = skipped (no PyYAML).
"""
import json
import os
import re
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
import routes_test  # noqa: E402  (EventStream)
import serve_test  # noqa: E402  (Sidecar, http, Base)

try:
    import yaml
except ImportError:
    yaml = None

SPEC_PATH = os.path.join(ROOT, "docs", "openapi.yaml")


def read(path):
    with open(path) as f:
        return f.read()


class SchemaError(AssertionError):
    pass


def resolve(spec, node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        node = spec
        for part in ref[2:].split("/"):
            node = node[part]
    return node


def validate(spec, schema, value, where="$"):
    """The subset of JSON Schema (OpenAPI 3.0) docs/openapi.yaml uses; raises SchemaError."""
    schema = resolve(spec, schema)
    known = {"type", "properties", "required", "additionalProperties", "items", "enum", "minimum",
             "maximum", "pattern", "oneOf", "allOf", "format", "description", "x-events"}
    unknown = set(schema) - known
    if unknown:
        raise SchemaError("%s: the validator does not know %s" % (where, sorted(unknown)))
    for sub in schema.get("allOf", []):
        validate(spec, sub, value, where)
    if "oneOf" in schema:
        passed = 0
        for sub in schema["oneOf"]:
            try:
                validate(spec, sub, value, where)
                passed += 1
            except SchemaError:
                pass
        if passed != 1:
            raise SchemaError("%s: %r matches %d of oneOf" % (where, value, passed))
    t = schema.get("type")
    checks = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
              "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
              "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)}
    if t is not None and not checks[t](value):
        raise SchemaError("%s: %r is not of type %s" % (where, value, t))
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError("%s: %r is not one of %r" % (where, value, schema["enum"]))
    if "minimum" in schema and value < schema["minimum"]:
        raise SchemaError("%s: %r < minimum %r" % (where, value, schema["minimum"]))
    if "maximum" in schema and value > schema["maximum"]:
        raise SchemaError("%s: %r > maximum %r" % (where, value, schema["maximum"]))
    if "pattern" in schema and not re.search(schema["pattern"], value):
        raise SchemaError("%s: %r does not match %s" % (where, value, schema["pattern"]))
    if schema.get("format") == "date-time" and not re.match(
            r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$", value):
        raise SchemaError("%s: %r is not a date-time" % (where, value))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                raise SchemaError("%s: required %r missing in %r" % (where, name, value))
        for name, v in value.items():
            if name in props:
                validate(spec, props[name], v, where + "." + name)
            elif schema.get("additionalProperties", True) is False:
                raise SchemaError("%s: property %r is not in the schema" % (where, name))
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            validate(spec, schema["items"], v, "%s[%d]" % (where, i))


def template(path):
    """A path with its parameters as {}: /v1/locks/{name} and the code's ([^/]+) alike."""
    return re.sub(r"\{[^}]+\}|\(\[\^/\]\+\)", "{}", path)


def code_routes():
    """(METHOD, template) of every route registered in tools/leader/serve_*.cpp."""
    routes = set()
    tools = os.path.join(ROOT, "tools", "leader")
    for f in sorted(os.listdir(tools)):
        if f.startswith("serve_") and f.endswith(".cpp"):
            text = read(os.path.join(tools, f))
            for m in re.finditer(r'svr\.(Get|Post|Put|Delete|Patch)\(\s*(?:R"\((.*?)\)"|"([^"]*)")',
                                 text, re.S):
                routes.add((m.group(1).upper(), template(m.group(2) or m.group(3))))
    return routes


def doc_routes():
    """(METHOD, template) of every route in docs/serve.md's route table."""
    text = read(os.path.join(ROOT, "docs", "serve.md"))
    return {(m.group(1), template(m.group(2)))
            for m in re.finditer(r"^\| `(GET|POST|PUT|DELETE) (/[^`?\s]*)[^`]*` \|", text, re.M)}


class OpenApiTest(serve_test.Base):
    @classmethod
    def setUpClass(cls):
        if yaml is None:
            raise unittest.SkipTest("PyYAML (python3-yaml) is not installed")
        with open(SPEC_PATH) as f:
            cls.spec = yaml.safe_load(f)
        cls.called = set()

    def operation(self, method, path):
        for p, item in self.spec["paths"].items():
            if template(p) == template(path) and method.lower() in item:
                return p, item[method.lower()]
        self.fail("%s %s is not in docs/openapi.yaml" % (method, path))

    def check(self, method, spec_path, url_path, status, body, headers=None):
        """Validates a reply `(status, body)` of `method url_path` against route `spec_path`."""
        p, op = self.operation(method, spec_path)
        self.called.add((method, template(p)))
        responses = op["responses"]
        self.assertIn(str(status), responses,
                      "%s %s answered %d, not described: %r" % (method, url_path, status, body))
        response = resolve(self.spec, responses[str(status)])
        content = response.get("content", {})
        if isinstance(body, (dict, list)):
            self.assertIn("application/json", content, (method, p, status))
            try:
                validate(self.spec, content["application/json"]["schema"], body)
            except SchemaError as e:
                self.fail("%s %s -> %d: %s" % (method, url_path, status, e))
        else:
            self.assertTrue(any(not c.endswith("json") for c in content),
                            "%s %s -> %d: not JSON: %r" % (method, url_path, status, body[:200]))
        return body

    def call(self, s, method, spec_path, url_path=None, body=None, expect=None, **kw):
        url_path = url_path or spec_path
        status, reply = serve_test.http(method, s.url + url_path, body, **kw)
        if expect is not None:
            self.assertEqual(status, expect, (method, url_path, reply))
        self.check(method, spec_path, url_path, status, reply)
        return reply

    def test_every_route_matches_the_description(self):
        s = self.sidecar("--node-id", "side-1", "--campaign", "camp", "--campaign-ttl", "5s",
                         "--lock", "listed")
        g, c = "GET", "POST"
        self.call(s, g, "/healthz", expect=200)
        self.call(s, g, "/readyz", expect=200)
        self.call(s, g, "/metrics")
        self.call(s, g, "/", expect=200)
        self.assertTrue(serve_test.eventually(
            lambda: serve_test.http("GET", s.url + "/v1/leader/camp")[1]["leader"]))
        self.call(s, g, "/v1/leader/{name}", "/v1/leader/camp", expect=200)
        self.call(s, g, "/v1/leader/{name}", "/v1/leader/camp?wait=1s&version=0", expect=200)
        self.call(s, g, "/v1/leader/{name}", "/v1/leader/camp?wait=bad", expect=400)
        self.call(s, g, "/v1/leader/{name}", "/v1/leader/other", expect=404)
        self.call(s, g, "/v1/leader/{name}", "/v1/leader/_bad", expect=400)

        acq = "/v1/locks/{name}/acquire"
        lease = self.call(s, c, acq, "/v1/locks/job/acquire", {"ttl": "20s"}, expect=200)
        self.call(s, c, acq, "/v1/locks/job/acquire", {"ttl": "20s"}, expect=409)
        self.call(s, c, acq, "/v1/locks/job/acquire", {"tll": "20s"}, expect=400)
        self.call(s, c, acq, "/v1/locks/_bad/acquire", {}, expect=400)
        self.call(s, c, acq, "/v1/locks/job/acquire", raw=b'{"node_id":"' + b"x" * 20000 + b'"}',
                  expect=413)
        self.call(s, c, acq, "/v1/locks/pool/acquire", {"slots": 2, "node_id": "a"}, expect=200)
        group = self.call(s, g, "/v1/locks/{name}", "/v1/locks/pool", expect=200)
        self.assertEqual((group["slots"], group["available"]), (2, 1), group)
        self.call(s, g, "/v1/locks/{name}", "/v1/locks/job", expect=200)
        self.call(s, g, "/v1/locks/{name}", "/v1/locks/_bad", expect=400)
        self.call(s, g, "/v1/locks", expect=200)
        self.call(s, g, "/v1/leases", expect=200)

        ren = "/v1/locks/{name}/renew"
        self.call(s, c, ren, "/v1/locks/job/renew", {"lease_id": lease["lease_id"], "ttl": 25},
                  expect=200)
        self.call(s, c, ren, "/v1/locks/job/renew", {"lease_id": "0" * 32}, expect=404)
        self.call(s, c, ren, "/v1/locks/job/renew", {}, expect=400)
        short = self.call(s, c, acq, "/v1/locks/short/acquire", {"ttl": "1s"}, expect=200)
        time.sleep(1.0)
        status, reply = serve_test.http("POST", s.url + "/v1/locks/short/renew",
                                        {"lease_id": short["lease_id"]})
        self.assertIn(status, (404, 409), reply)
        self.check(c, ren, "/v1/locks/short/renew", status, reply)

        rel = "/v1/locks/{name}/release"
        self.call(s, c, rel, "/v1/locks/job/release", {"lease_id": lease["lease_id"]}, expect=200)
        self.call(s, c, rel, "/v1/locks/job/release", {"lease_id": lease["lease_id"]}, expect=404)
        self.call(s, c, rel, "/v1/locks/job/release", {"lease_id": 5}, expect=400)
        self.call(s, g, "/v1/history", expect=200)

        status, reply = s.get("/v1/no-such-route")
        self.assertEqual(status, 404)
        validate(self.spec, {"$ref": "#/components/schemas/Error"}, reply)

        # The caller's own lease by its id.
        lease = self.call(s, c, acq, "/v1/locks/mine/acquire", {"ttl": "20s"}, expect=200)
        self.call(s, g, "/v1/leases/{id}", "/v1/leases/" + lease["lease_id"], expect=200)
        self.call(s, g, "/v1/leases/{id}", "/v1/leases/" + "0" * 32, expect=404)

        # Resign: 200, then 409 (no longer leading), 404 (not campaigned), 400 (unknown field).
        res = "/v1/leader/{name}/resign"
        self.call(s, c, res, "/v1/leader/camp/resign", expect=200)
        self.call(s, c, res, "/v1/leader/camp/resign", expect=409)
        self.call(s, c, res, "/v1/leader/other/resign", expect=404)
        self.call(s, c, res, "/v1/leader/camp/resign", {"now": True}, expect=400)

        # The watch stream: each event's data against the schema named for the event.
        watch = "/v1/locks/{name}/watch"
        self.call(s, g, watch, "/v1/locks/_bad/watch", expect=400)
        stream = routes_test.EventStream(s.url, "/v1/locks/mine/watch")
        try:
            self.assertEqual(stream.status, 200)
            _, op = self.operation(g, watch)
            self.called.add((g, template(watch)))
            content = resolve(self.spec, op["responses"]["200"])["content"]
            self.assertEqual(stream.res.getheader("Content-Type"), "text/event-stream")
            events = content["text/event-stream"]["x-events"]
            self.call(s, c, "/v1/locks/{name}/release", "/v1/locks/mine/release",
                      {"lease_id": lease["lease_id"]}, expect=200)
            for _ in range(2):
                name, data = stream.next()
                self.assertIn(name, events)
                validate(self.spec, events[name], data)
        finally:
            stream.close()
        self.assertEqual(s.stop(), 0)
        described = {(m.upper(), template(p)) for p, item in self.spec["paths"].items()
                     for m in item if m in ("get", "post", "put", "delete", "patch")}
        self.assertEqual(sorted(described - self.called), [], "routes never called")

    def test_bearer_token_and_too_many_waits(self):
        token = os.path.join(self.dir, "token")
        with open(token, "w") as f:
            f.write("0123456789abcdef0123456789abcdef\n")
        s = self.sidecar("--token-file", token, "--campaign", "camp", "--threads", "3")
        self.call(s, "GET", "/v1/locks", expect=401)
        self.call(s, "GET", "/healthz", expect=200)
        auth = {"Authorization": "Bearer 0123456789abcdef0123456789abcdef"}
        self.call(s, "GET", "/v1/leases", headers=auth, expect=200)
        # --threads 3 leaves one waiting request: while a watch holds it, a long-poll and a second
        # watch are refused at once.
        held = routes_test.EventStream(s.url, "/v1/locks/camp/watch", headers=auth)
        try:
            self.assertEqual(held.status, 200)
            self.call(s, "GET", "/v1/leader/{name}", "/v1/leader/camp?wait=5s", headers=auth,
                      expect=429)
            self.call(s, "GET", "/v1/locks/{name}/watch", "/v1/locks/camp/watch", headers=auth,
                      expect=429)
        finally:
            held.close()
        self.assertEqual(s.stop(), 0)

    def test_routes_of_the_server_and_the_docs_are_described(self):
        described = {(m.upper(), template(p)) for p, item in self.spec["paths"].items()
                     for m in item if m in ("get", "post", "put", "delete", "patch")}
        served = code_routes()
        self.assertGreaterEqual(len(served), 12, served)
        self.assertEqual(sorted(served - described), [], "served but not in docs/openapi.yaml")
        self.assertEqual(sorted(doc_routes() - described), [], "in docs/serve.md, not in the file")
        self.assertEqual(sorted(described - served), [], "described but not served")


if __name__ == "__main__":
    serve_test.LEADER = sys.argv.pop(1)
    result = unittest.main(exit=False, verbosity=2).result
    if not result.wasSuccessful():
        sys.exit(1)
    sys.exit(77 if result.skipped and result.testsRun == len(result.skipped) else 0)
