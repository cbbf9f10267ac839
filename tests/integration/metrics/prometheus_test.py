#!/usr/bin/env python3
"""Debian's real Prometheus scrapes a library process (metrics_exporter: elections on SQLite) and,
with --serve, the `leader serve` sidecar (a campaign and an API lease on SQLite); the expected
leader series of both are read back through Prometheus's HTTP query API (/api/v1/query).

  prometheus_test.py <metrics_exporter> [--serve <leader binary>] [extra target host:port ...]

Ports (this suite's range 17600-17699): Prometheus 17690, the exporter 17691, leader serve 17692.
Prometheus, the exporter and the sidecar are private to this test (data under a fresh /tmp
directory), started and stopped by PID.
Exit 0 on success, 1 on a failed check, 77 (ctest SKIP) when no prometheus binary is installed.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

PROMETHEUS_PORT = 17690
EXPORTER_PORT = 17691
SERVE_PORT = 17692
DEADLINE_S = 25

# (PromQL, what it shows): each must return at least one sample with a value > 0.
EXPECTED = [
    ('up{job="leader-lib"}', "Prometheus scraped the library process"),
    ('leader_elections_total{job="leader-lib",lock="metrics-it",result="elected"}',
     "elections by result"),
    ('leader_election_skips_total{job="leader-lib",lock="metrics-it",reason="contention"}',
     "skips by reason"),
    ('leader_store_request_duration_seconds_count{job="leader-lib",store="sqlite",'
     'operation="acquire"}', "acquire latency histogram of the sqlite store"),
    ('leader_store_request_duration_seconds_bucket{job="leader-lib",store="sqlite",'
     'operation="release",le="+Inf"}', "release latency histogram buckets"),
    ('leader_leases_ended_total{job="leader-lib",outcome="completed"}', "leases ended by outcome"),
    ('leader_fencing_token{job="leader-lib",lock="metrics-it"}', "fencing token gauge"),
    ('leader_lease_hold_duration_seconds_count{job="leader-lib"}', "hold duration histogram"),
]
# The sidecar's series (job leader-serve): its campaign for "serve-it" and the API lease "api-it".
SERVE_EXPECTED = [
    ('up{job="leader-serve"}', "Prometheus scraped leader serve"),
    ('leader_elections_total{job="leader-serve",lock="serve-it",result="elected"}',
     "leader serve: campaign elections"),
    ('leader_elections_total{job="leader-serve",lock="api-it",result="elected"}',
     "leader serve: API lease acquisitions"),
    ('leader_leases_held{job="leader-serve",lock="serve-it"}', "leader serve: held gauge"),
    ('leader_fencing_token{job="leader-serve",lock="serve-it"}', "leader serve: token gauge"),
    ('leader_store_request_duration_seconds_count{job="leader-serve",store="sqlite",'
     'operation="renew"}', "leader serve: renew latency of the instrumented store"),
]
# Series that must exist (value may be 0).
PRESENT = [
    ('leader_leases_held{job="leader-lib",lock="metrics-it"}', "held leases gauge"),
    ('leader_event_drops_total{job="leader-lib",subscriber="metrics"}', "event drops"),
]


def query(expr):
    url = "http://127.0.0.1:%d/api/v1/query?%s" % (
        PROMETHEUS_PORT, urllib.parse.urlencode({"query": expr}))
    with urllib.request.urlopen(url, timeout=2) as reply:
        body = json.load(reply)
    if body.get("status") != "success":
        raise RuntimeError("query %s: %s" % (expr, body))
    return body["data"]["result"]


def wait_port(port, proc, name):
    import socket
    until = time.monotonic() + 10
    while time.monotonic() < until:
        if proc.poll() is not None:
            raise RuntimeError("%s exited with %s before listening" % (name, proc.returncode))
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("%s did not listen on %d within 10 s" % (name, port))


def stop(proc):
    if proc and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    exporter_bin = sys.argv[1]
    extra_targets = sys.argv[2:]
    leader_bin = None
    if extra_targets[:1] == ["--serve"]:
        leader_bin, extra_targets = extra_targets[1], extra_targets[2:]
    expected = EXPECTED + (SERVE_EXPECTED if leader_bin else [])
    prometheus = shutil.which("prometheus")
    if not prometheus:
        print("SKIP: no prometheus binary (apt-get install prometheus)")
        return 77
    work = tempfile.mkdtemp(prefix="leader-metrics-it-")
    exporter = prom = serve = None
    try:
        targets = ['"127.0.0.1:%d"' % EXPORTER_PORT]
        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n"
                    "  - job_name: leader-lib\n    static_configs:\n"
                    "      - targets: [%s]\n" % ", ".join(targets))
            if leader_bin:
                f.write("  - job_name: leader-serve\n    static_configs:\n"
                        "      - targets: [\"127.0.0.1:%d\"]\n" % SERVE_PORT)
            if extra_targets:
                f.write("  - job_name: leader-extra\n    static_configs:\n"
                        "      - targets: [%s]\n" % ", ".join('"%s"' % t for t in extra_targets))
        exporter = subprocess.Popen(
            [exporter_bin, "sqlite://%s/leader.db" % work, str(EXPORTER_PORT), "40"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "exporter.log"), "w"))
        wait_port(EXPORTER_PORT, exporter, "metrics_exporter")
        if leader_bin:
            env = {k: v for k, v in os.environ.items() if not k.startswith("LEADER_")}
            serve = subprocess.Popen(
                [leader_bin, "serve", "--store", "sqlite://%s/serve.db" % work,
                 "--listen", "127.0.0.1:%d" % SERVE_PORT, "--campaign", "serve-it",
                 "--campaign-ttl", "3s", "--node-id", "metrics-it"],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w"),
                env=env)
            wait_port(SERVE_PORT, serve, "leader serve")
            req = urllib.request.Request(
                "http://127.0.0.1:%d/v1/locks/api-it/acquire" % SERVE_PORT,
                data=json.dumps({"ttl": "30s"}).encode(), method="POST")
            with urllib.request.urlopen(req, timeout=10) as reply:
                if reply.status != 200:
                    raise RuntimeError("leader serve acquire: HTTP %d" % reply.status)
        prom = subprocess.Popen(
            [prometheus, "--config.file=" + config, "--storage.tsdb.path=" + work + "/data",
             "--web.listen-address=127.0.0.1:%d" % PROMETHEUS_PORT],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "prometheus.log"), "w"),
            cwd=work)
        wait_port(PROMETHEUS_PORT, prom, "prometheus")

        until = time.monotonic() + DEADLINE_S
        missing = expected + PRESENT
        while missing and time.monotonic() < until:
            still = []
            for expr, what in missing:
                try:
                    result = query(expr)
                except (urllib.error.URLError, RuntimeError, OSError):
                    still.append((expr, what))
                    continue
                needs_positive = (expr, what) in expected
                if not result or (needs_positive and
                                  not any(float(r["value"][1]) > 0 for r in result)):
                    still.append((expr, what))
            missing = still
            if missing:
                time.sleep(0.5)
        if missing:
            for expr, what in missing:
                print("FAIL: %s: no sample for %s" % (what, expr))
            with open(os.path.join(work, "prometheus.log")) as f:
                print("prometheus.log tail:\n" + "".join(f.readlines()[-10:]))
            return 1
        for expr, what in expected + PRESENT:
            print("ok: %s: %s = %s" % (what, expr, query(expr)[0]["value"][1]))
        return 0
    finally:
        stop(prom)
        stop(serve)
        stop(exporter)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
