#!/usr/bin/python3
"""Fault-suite orchestrator (docs/faults.md); run through tests/faults/run.sh.

Starts --workers fault_worker processes on one lock of one store (through proxy.py for network
stores), injects faults on a random schedule, restarts killed workers, undoes every fault, then
runs check.py on the ledger. Every event is logged to OUT/events with CLOCK_MONOTONIC times:
  P pid t0 t1      worker paused (SIGSTOP .. SIGCONT)
  K pid t          worker killed (SIGKILL)
  N pid t0 t1      worker partitioned from the server (proxy blackhole)
  S t0 t1          server paused (all its processes SIGSTOPped)
  R t0 t1          server restarted
  C pid t offset   worker 0's clock set to offset: its wall clock (libfaketime, seconds) or, in
                   clock-mono, the library's steady clock (fault_worker --clock-file, ms)
  M pid            worker whose steady clock is stepped (reported apart, never a verdict)
"""

import argparse
import glob
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FAKETIME = (glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") +
            ["/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"])[0]  # Debian: libfaketime
SERVERS = {"redis": "redis", "postgres": "postgres", "mysql": "mariadb", "etcd": "etcd",
           "zookeeper": "zookeeper"}
DURABLE = {"postgres", "mysql", "etcd", "zookeeper"}  # keep leases and counters across restarts


def now():
    return time.monotonic_ns()


def store_uri(store, out, port):
    env = os.environ.get
    if store == "sqlite":
        return env("LEADER_FAULTS_SQLITE_URI", "sqlite://" + os.path.join(out, "leader.db"))
    hostport = "127.0.0.1:%d" % port
    return {
        "redis": "redis://%s" % hostport,
        "postgres": "postgresql://postgres@%s/leader_test?table_prefix=faults_" % hostport,
        "mysql": "mysql://root@%s/leader_test?table_prefix=faults_" % hostport,
        "etcd": "etcd://%s?prefix=/leader-faults" % hostport,
        "zookeeper": "zk://%s?root=/leader-faults" % hostport,
    }[store]


def target(store):
    env = os.environ.get
    return {
        "redis": env("LEADER_FAULTS_REDIS", "127.0.0.1:16379"),
        "postgres": env("LEADER_FAULTS_POSTGRES", "127.0.0.1:15432"),
        "mysql": env("LEADER_FAULTS_MYSQL", "127.0.0.1:13306"),
        "etcd": env("LEADER_FAULTS_ETCD", "127.0.0.1:12379"),
        "zookeeper": env("LEADER_FAULTS_ZOOKEEPER", "127.0.0.1:12181"),
    }[store]


class Run:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        self.events = open(os.path.join(a.out, "events"), "a", buffering=1)
        self.end = now() + a.seconds * 10**9
        self.network = a.store != "sqlite"
        self.ports = [0] * a.workers  # the proxy's listen ports, one per worker
        self.procs = [None] * a.workers
        self.clock_files = {}
        self.lock = "faults-%s-%d-%d" % (a.store, os.getpid(), int(time.time()))
        self.proxy = None
        self.counts = {}

    def log(self, *fields):
        self.events.write(" ".join(str(f) for f in fields) + "\n")

    def count(self, kind):
        self.counts[kind] = self.counts.get(kind, 0) + 1

    # ---- workers -------------------------------------------------------------------------
    def fake_clock(self, i):
        """Worker 0 runs under libfaketime, its wall clock only (DONT_FAKE_MONOTONIC)."""
        if i != 0 or not self.wall_jumps():
            return None
        f = os.path.join(self.a.out, "clock0")
        if not os.path.exists(f):
            with open(f, "w") as fh:
                fh.write("+0\n")
        self.clock_files[i] = f
        return dict(os.environ, LD_PRELOAD=FAKETIME, FAKETIME_TIMESTAMP_FILE=f,
                    FAKETIME_NO_CACHE="1", DONT_FAKE_MONOTONIC="1")

    def stepped_clock(self, i):
        """Worker 0 of clock-mono steps the library's steady clock (fault_worker --clock-file)."""
        if i != 0 or self.a.scenario != "clock-mono":
            return []
        f = os.path.join(self.a.out, "clock0")
        if not os.path.exists(f):
            with open(f, "w") as fh:
                fh.write("0\n")
        self.clock_files[i] = f
        return ["--clock-file", f, "--max-steps", "120"]

    def wall_jumps(self):
        """Wall-clock jumps are harmless for server stores; SQLite expires by the wall clock."""
        return self.a.scenario == "clock-wall" or (self.a.scenario == "mixed" and self.network)

    def spawn(self, i):
        left = max(1, (self.end - now()) // 10**9)
        uri = store_uri(self.a.store, self.a.out, self.ports[i])
        cmd = [self.a.worker, "--uri", uri, "--lock", self.lock, "--dir", self.a.out,
               "--id", str(i), "--lease-ms", str(self.a.lease_ms), "--seconds", str(left)]
        cmd += self.stepped_clock(i)
        with open(os.path.join(self.a.out, "w%d.log" % i), "a") as err:
            p = subprocess.Popen(cmd, env=self.fake_clock(i), stdout=err, stderr=err)
        if i == 0 and self.a.scenario == "clock-mono":
            self.log("M", p.pid)
        self.procs[i] = p

    def supervise(self):
        for i, p in enumerate(self.procs):
            if p is not None and p.poll() is not None and now() < self.end - 2 * 10**9:
                self.spawn(i)

    def holders(self):
        held = []
        for i, p in enumerate(self.procs):
            try:
                with open(os.path.join(self.a.out, "w%d.state" % i)) as f:
                    kind, _, pid = f.read().split()
                if kind == "HOLD" and int(pid) == p.pid and p.poll() is None:
                    held.append(i)
            except (OSError, ValueError):
                pass
        return held

    def holder(self):
        """(index, pid) of a worker that holds the lease (waiting up to 3 s for one), or of a
        random worker."""
        give_up = now() + 3 * 10**9
        while not self.holders() and now() < give_up:
            self.sleep(0.02)
        held = self.holders()
        i = self.rng.choice(held) if held else self.rng.randrange(len(self.procs))
        return i, self.procs[i].pid

    def sleep(self, secs):
        stop = now() + int(secs * 1e9)
        while now() < stop:
            self.supervise()
            time.sleep(0.05)

    # ---- faults --------------------------------------------------------------------------
    def lease_s(self, factor):
        return self.a.lease_ms / 1000.0 * factor

    def pause_worker(self):
        _, pid = self.holder()
        t0 = now()
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(self.lease_s(self.rng.uniform(1.3, 2.5)))
        finally:
            os.kill(pid, signal.SIGCONT)
        self.log("P", pid, t0, now())

    def kill_worker(self):
        i, pid = self.holder()
        self.log("K", pid, now())
        os.kill(pid, signal.SIGKILL)
        self.procs[i].wait()
        self.spawn(i)

    def partition_worker(self):
        i, pid = self.holder()
        control = os.path.join(self.a.out, "blackhole")
        t0 = now()
        with open(control, "w") as f:
            f.write("%d\n" % self.ports[i])
        try:
            self.sleep(self.lease_s(self.rng.uniform(1.5, 2.5)))
        finally:
            open(control, "w").close()
        self.log("N", pid, t0, now())

    def server(self, *args):
        script = os.path.join(HERE, "server_fault.sh")
        t0 = now()
        r = subprocess.run([script] + list(args), stdout=subprocess.DEVNULL, check=False)
        if r.returncode != 0:
            print("faults: server_fault.sh %s failed (%d)" % (" ".join(args), r.returncode))
        return t0

    def pause_server(self):
        self.holder()  # strike while someone holds the lease
        if self.a.store == "sqlite":  # the sqlite "server" is the file: hold its write lock
            t0 = now()
            hold_sqlite(os.path.join(self.a.out, "leader.db"), 2.0)
        else:
            t0 = self.server("pause", SERVERS[self.a.store], "2")
        self.log("S", t0, now())

    def restart_server(self):
        self.holder()
        t0 = self.server("restart", SERVERS[self.a.store])
        self.log("R", t0, now())

    def jump_clock(self):
        f = self.clock_files.get(0)
        if not f or self.procs[0].poll() is not None:
            return
        if self.a.scenario == "clock-mono":  # step while it holds: that is when it matters
            give_up = now() + 4 * 10**9
            while 0 not in self.holders() and now() < give_up:
                self.sleep(0.05)
        if self.a.scenario != "clock-mono":
            offset = self.rng.choice(["+3600", "-3600", "+86400", "-86400", "+0"])
        else:  # the case the library does not defend against: its steady clock steps back (ms)
            offset = self.rng.choice(["-3000", "-5000", "-10000"])
        self.set_clock(f, offset)
        if self.a.scenario == "clock-mono":  # keep the step while it works, then undo it
            self.sleep(3.0)
            self.set_clock(f, "0")

    def set_clock(self, f, offset):
        with open(f, "w") as fh:
            fh.write(offset + "\n")
        self.log("C", self.procs[0].pid, now(), offset)

    def schedule(self):
        s, st = self.a.scenario, self.a.store
        if s in ("clock-mono", "clock-wall"):
            return [self.jump_clock]
        if s == "restart":
            return [self.restart_server]
        faults = [self.pause_worker, self.kill_worker]
        if self.wall_jumps():
            faults.append(self.jump_clock)
        if self.network:
            faults.append(self.partition_worker)
        if self.a.server_faults:
            faults.append(self.pause_server)
            if st in DURABLE:
                faults.append(self.restart_server)
        return faults

    # ---- the run -------------------------------------------------------------------------
    def start(self):
        if self.network:
            cmd = [sys.executable, os.path.join(HERE, "proxy.py"), "--target",
                   target(self.a.store), "--count", str(self.a.workers),
                   "--control", os.path.join(self.a.out, "blackhole")]
            self.proxy = subprocess.Popen(cmd, stdout=subprocess.PIPE)
            line = self.proxy.stdout.readline().decode().split()
            if len(line) != 2 or line[0] != "ports":
                raise RuntimeError("proxy.py did not start")
            self.ports = [int(p) for p in line[1].split(",")]
        for i in range(self.a.workers):
            self.spawn(i)

    def inject(self):
        faults = self.schedule()
        server_faults, deck = 0, []
        self.sleep(2.0)
        while now() < self.end - 4 * 10**9:
            if server_faults >= self.a.max_server_faults:
                faults = [f for f in faults if f not in (self.pause_server, self.restart_server)]
            if not faults:
                self.sleep(0.5)
                continue
            if not deck:  # every kind once per round, in a random order
                deck = self.rng.sample(faults, len(faults))
            fault = deck.pop()
            if fault not in faults:
                continue
            if fault in (self.pause_server, self.restart_server):
                server_faults += 1
            self.count(fault.__name__)
            fault()
            self.sleep(self.rng.uniform(0.5, 1.5))

    def finish(self):
        for f in self.clock_files.values():
            with open(f, "w") as fh:
                fh.write("0\n" if self.a.scenario == "clock-mono" else "+0\n")
        for p in filter(None, self.procs):
            try:
                p.wait(timeout=max(1, (self.end - now()) / 1e9 + 15))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.proxy:
            self.proxy.terminate()
            self.proxy.wait()
        with open(os.path.join(self.a.out, "faults"), "w") as f:
            for k, v in sorted(self.counts.items()):
                f.write("%s %d\n" % (k, v))


def hold_sqlite(path, secs):
    import sqlite3
    db = sqlite3.connect(path, timeout=5, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    time.sleep(secs)
    db.execute("COMMIT")
    db.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=int, default=25)
    ap.add_argument("--scenario", default="mixed", choices=["mixed", "clock-wall", "clock-mono", "restart"])
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--lease-ms", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-server-faults", type=int, default=2)
    ap.add_argument("--no-server-faults", dest="server_faults", action="store_false")
    a = ap.parse_args()
    if a.seed is None:
        a.seed = int(time.time())
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    print("faults: store=%s scenario=%s seconds=%d workers=%d lease=%dms seed=%d out=%s"
          % (a.store, a.scenario, a.seconds, a.workers, a.lease_ms, a.seed, a.out), flush=True)
    if a.store != "sqlite":
        host, port = target(a.store).rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
        except OSError as e:
            print("faults: %s server %s:%s unreachable (%s): start it with "
                  "scripts/test-servers.sh start" % (a.store, host, port, e))
            return 2
    run = Run(a)
    try:
        run.start()
        run.inject()
    finally:
        run.finish()
    strict = (a.scenario == "mixed" or (a.scenario == "restart" and a.store in DURABLE)
              or (a.scenario == "clock-wall" and a.store != "sqlite"))
    check = [sys.executable, os.path.join(HERE, "check.py"), "--dir", a.out,
             "--lease-ms", str(a.lease_ms), "--label", "%s/%s" % (a.store, a.scenario)]
    if not strict:
        check.append("--report-only")
    return subprocess.call(check)


if __name__ == "__main__":
    sys.exit(main())
