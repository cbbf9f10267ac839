#!/usr/bin/env python3
"""Tests of `leader probe` (the exec probe of deploy/k8s) against a real `leader serve`.

Usage: probe_test.py LEADER_BINARY [unittest args]. The sidecars use SQLite files in a temporary
directory; the not-ready case stops a private redis-server (port 17702, started and killed by
PID; skipped without redis-server). Exit 77 = skipped.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_test  # noqa: E402  (Sidecar, eventually)

REDIS_PORT = 17702
EX_USAGE, EX_UNAVAILABLE = 64, 69


def probe(*args, timeout=30):
    """(exit code, stdout, stderr) of `leader probe ARGS`."""
    p = subprocess.run([serve_test.LEADER, "probe", *args], capture_output=True, text=True,
                       timeout=timeout)
    # libmongoc's start-up notice when /dev/shm is short is not the probe's output.
    err = "".join(l for l in p.stderr.splitlines(True) if "mongoc: " not in l)
    return p.returncode, p.stdout, err


def address(sidecar):
    return sidecar.url[len("http://"):]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ProbeTest(serve_test.Base):
    def test_a_running_sidecar_is_alive_and_ready_with_exit_0_and_one_line(self):
        s = self.sidecar()
        code, out, err = probe("--listen", address(s))
        self.assertEqual(code, 0, err)
        self.assertEqual(out, "leader probe: %s/healthz: alive\n" % s.url)
        code, out, err = probe("--ready", "--listen", address(s))
        self.assertEqual(code, 0, err)
        self.assertEqual(out, "leader probe: %s/readyz: ready (store sqlite)\n" % s.url)

    def test_the_probes_need_no_token_when_the_api_needs_one(self):
        token = os.path.join(self.dir, "token")
        with open(token, "w") as f:
            f.write("0123456789abcdef0123456789abcdef\n")
        s = self.sidecar("--token-file", token)
        self.assertEqual(s.get("/v1/locks")[0], 401)
        self.assertEqual(probe("--listen", address(s))[0], 0)
        self.assertEqual(probe("--ready", "--listen", address(s))[0], 0)

    def test_a_stopped_sidecar_fails_with_69_and_says_nobody_answered(self):
        s = self.sidecar()
        where = address(s)
        self.assertEqual(s.stop(), 0)
        for args in (["--listen", where], ["--ready", "--listen", where]):
            code, out, err = probe(*args)
            self.assertEqual(code, EX_UNAVAILABLE, out + err)
            self.assertEqual(out, "")
            self.assertEqual(len(err.splitlines()), 1, err)
            self.assertIn("no answer", err)
            self.assertIn("is leader serve running there?", err)

    def test_a_listener_that_never_answers_fails_after_the_timeout(self):
        with socket.socket() as silent:
            silent.bind(("127.0.0.1", 0))
            silent.listen(4)  # connections complete in the backlog; nothing reads or answers
            t0 = time.monotonic()
            code, out, err = probe("--listen", "127.0.0.1:%d" % silent.getsockname()[1],
                                   "--timeout", "300ms")
            elapsed = time.monotonic() - t0
        self.assertEqual(code, EX_UNAVAILABLE, out + err)
        self.assertIn("no answer", err)
        self.assertLess(elapsed, 5.0)

    def test_bad_flags_are_usage_errors(self):
        for args, says in ((["--listen", "nowhere"], "expected HOST:PORT"),
                           (["--listen", "127.0.0.1:0"], "1..65535"),
                           (["--listen", "127.0.0.1:99999"], "1..65535"),
                           (["--timeout", "soon"], "--timeout"),
                           (["--bogus"], "--bogus"),
                           (["extra"], "extra")):
            code, out, err = probe(*args)
            self.assertEqual(code, EX_USAGE, (args, out, err))
            self.assertIn(says, err, args)
            self.assertIn("Usage: leader probe", err, args)

    def test_a_sidecar_whose_store_is_down_is_alive_but_not_ready(self):
        server = shutil.which("redis-server")
        if server is None:
            self.skipTest("redis-server not installed (Debian: redis-server)")
        redis = subprocess.Popen([server, "--port", str(REDIS_PORT), "--bind", "127.0.0.1",
                                  "--save", "", "--appendonly", "no", "--dir", self.dir],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def up():
                try:
                    socket.create_connection(("127.0.0.1", REDIS_PORT), timeout=1).close()
                    return True
                except OSError:
                    return False
            self.assertTrue(serve_test.eventually(up, 10))
            s = self.sidecar(store="redis://127.0.0.1:%d" % REDIS_PORT)
            self.assertEqual(probe("--ready", "--listen", address(s))[0], 0)
        finally:
            redis.send_signal(signal.SIGKILL)
            redis.wait()
        code, out, err = probe("--ready", "--listen", address(s))
        self.assertEqual(code, EX_UNAVAILABLE, out + err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("not ready (HTTP 503: unavailable", err)
        code, out, err = probe("--listen", address(s))
        self.assertEqual(code, 0, err)


if __name__ == "__main__":
    serve_test.LEADER = os.path.abspath(sys.argv.pop(1))
    p = subprocess.run([serve_test.LEADER, "probe", "--help"], capture_output=True)
    if p.returncode != 0:
        print("skip: this leader has no probe command (built without leader serve)")
        sys.exit(77)
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
