#!/usr/bin/env python3
"""`leader serve`'s own series on /metrics: leader_build_info with the version, the process_*
series read from /proc/self, and HTTP request counters and latency by route (the lock name never
a label value) and code; the scrape passes `promtool check metrics`.

    serve_metrics_test.py LEADER_BINARY PROMTOOL
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

leader, promtool = sys.argv[1], sys.argv[2]


def request(port, method, path, body=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


with tempfile.TemporaryDirectory() as tmp:
    err = open(os.path.join(tmp, "serve.err"), "w+")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADER_")}
    serve = subprocess.Popen([leader, "serve", "--store", "sqlite://%s/l.db" % tmp, "--listen",
                              "127.0.0.1:0"], stderr=err, env=env)
    try:
        port = None
        for _ in range(100):
            err.seek(0)
            m = re.search(r"serving http://127\.0\.0\.1:(\d+)/", err.read())
            if m:
                port = int(m.group(1))
                break
            time.sleep(0.1)
        assert port, "leader serve did not start"
        assert request(port, "POST", "/v1/locks/secret-name/acquire", b"{}")[0] == 200
        assert request(port, "POST", "/v1/locks/secret-name/acquire", b"{}")[0] == 409
        assert request(port, "GET", "/healthz")[0] == 200
        assert request(port, "GET", "/nowhere")[0] == 404
        request(port, "GET", "/metrics")
        status, text = request(port, "GET", "/metrics")
        assert status == 200, status
    finally:
        serve.terminate()
        serve.wait(timeout=30)

expected = [
    r'^leader_build_info\{version="[^"]+"\} 1$',
    r"^process_cpu_seconds_total [0-9.e+-]+$",
    r"^process_resident_memory_bytes [1-9][0-9.e+]*$",
    r"^process_open_fds [1-9][0-9]*$",
    r"^process_max_fds [1-9][0-9.e+]*$",
    r"^process_start_time_seconds 1[0-9.e+]+$",
    r'^leader_http_requests_total\{code="200",method="POST",route="/v1/locks/\{lock\}/acquire"\} 1$',
    r'^leader_http_requests_total\{code="409",method="POST",route="/v1/locks/\{lock\}/acquire"\} 1$',
    r'^leader_http_requests_total\{code="200",method="GET",route="/healthz"\} 1$',
    r'^leader_http_requests_total\{code="404",method="GET",route="other"\} 1$',
    r'^leader_http_requests_total\{code="200",method="GET",route="/metrics"\} 1$',
    r'^leader_http_request_duration_seconds_count\{method="POST",route="/v1/locks/\{lock\}/acquire"\} 2$',
]
failures = [e for e in expected if not re.search(e, text, re.M)]
if "secret-name" in "\n".join(l for l in text.splitlines() if l.startswith("leader_http")):
    failures.append("a lock name became a label value of the HTTP series")
check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
if check.returncode != 0 or check.stdout.strip() or check.stderr.strip():
    failures.append("promtool check metrics: rc %d\n%s%s" % (check.returncode, check.stdout,
                                                              check.stderr))
if failures:
    print(text)
    sys.exit("FAIL:\n" + "\n".join(failures))
print("serve metrics: build, process and HTTP series present; promtool check metrics: ok")
