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
  L t0 t1          ... and it lost data in the restart (own Redis with RDB or AOF everysec): the
                   leases it held may be gone, so a takeover in t0 .. t1 + lease is explained
  T pid t          worker sent SIGTERM (campaign scenario: it steps down, releasing the lease)
  G pid t          worker sent SIGUSR1 (campaign scenario: Campaign::resign())
  C pid t offset   worker 0's clock set to offset: its wall clock (libfaketime, seconds) or, in
                   clock-mono, the library's steady clock (fault_worker --clock-file, ms)
  M pid            worker whose steady clock is stepped (reported apart, never a verdict)

Partitions are made by proxy.py (bytes held in the proxy, delivered after the heal) or, with
--partition nft, by nftables drop rules in the worker's own network namespace (netns.sh). Server
crashes of Redis with persistence (--redis-persist rdb|aof) and of DynamoDB (dynalite --path) hit a
private server (own_servers.py); the shared servers are only paused or gracefully restarted.
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

from own_servers import OwnDynalite, OwnRedis

HERE = os.path.dirname(os.path.abspath(__file__))
FAKETIME = (glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1") +
            ["/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"])[0]  # Debian: libfaketime
SERVERS = {"redis": "redis", "postgres": "postgres", "mysql": "mariadb", "etcd": "etcd",
           "zookeeper": "zookeeper", "k8s": "k8s", "consul": "consul"}
DURABLE = {"postgres", "mysql", "etcd", "zookeeper", "dynamodb"}  # keep leases and counters
SCENARIOS = ["mixed", "clock-wall", "clock-mono", "restart", "restart-rdb", "restart-aof", "group",
             "extend", "netns", "campaign"]
MIXED = ("mixed", "group", "extend", "netns")  # every fault kind; they differ in the workers/partition
# Namespaces <NETNS>-<i>, host side 10.<NETNS_NET>.<i>.1, namespace side 10.<NETNS_NET>.<i>.2;
# named after this process so that concurrent runs do not share them.
NETNS = "lf%02d" % (os.getpid() % 100)
NETNS_NET = str(100 + os.getpid() % 100)


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
        "dynamodb": "dynamodb://test:test@%s?tls=false&table=leader_faults" % hostport,
        "k8s": "k8s://%s?tls=false&namespace=faults" % hostport,
        "consul": "consul://%s?prefix=leader-faults&session_ttl_min=100ms" % hostport,
        "mongodb": "mongodb://%s/leader_faults" % hostport,
    }[store]


def target(store):
    env = os.environ.get
    return {
        "redis": env("LEADER_FAULTS_REDIS", "127.0.0.1:16379"),
        "postgres": env("LEADER_FAULTS_POSTGRES", "127.0.0.1:15432"),
        "mysql": env("LEADER_FAULTS_MYSQL", "127.0.0.1:13306"),
        "etcd": env("LEADER_FAULTS_ETCD", "127.0.0.1:12379"),
        "zookeeper": env("LEADER_FAULTS_ZOOKEEPER", "127.0.0.1:12181"),
        "k8s": env("LEADER_FAULTS_K8S", "127.0.0.1:16443"),  # the API double (in memory)
        "consul": env("LEADER_FAULTS_CONSUL", "127.0.0.1:18500"),  # the API double (in memory)
        "mongodb": env("LEADER_FAULTS_MONGODB", "127.0.0.1:17017"),  # mongomock behind the shim
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
        self.observer = None  # campaign: a fault_worker --observe 1 polling inspect()
        self.own = None  # a private server (own_servers.py) for crash-restart faults
        if a.store == "dynamodb":
            self.own = OwnDynalite(a.out)
        elif a.store == "redis" and a.redis_persist != "none":
            self.own = OwnRedis(a.out, a.redis_persist)
        self.durable = a.store in DURABLE or self.own is not None

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
        return self.a.scenario == "clock-wall" or (self.a.scenario in MIXED and self.network)

    def spawn(self, i):
        left = max(1, (self.end - now()) // 10**9)
        uri = store_uri(self.a.store, self.a.out, self.ports[i])
        cmd = [self.a.worker, "--uri", uri, "--lock", self.lock, "--dir", self.a.out,
               "--id", str(i), "--lease-ms", str(self.a.lease_ms), "--seconds", str(left)]
        cmd += ["--max-steps", str(self.a.max_steps)] + self.stepped_clock(i)
        if self.a.group:
            cmd += ["--group", str(self.a.group)]
        if self.a.extend:
            cmd += ["--extend", "1"]
        if self.a.scenario == "campaign":  # hot standby: leader::Campaign, retry every 100 ms
            cmd += ["--campaign", "1", "--wait-ms", "0", "--retry-ms", "100"]
        if self.a.partition == "nft":
            uri = uri.replace("127.0.0.1", "10.%s.%d.1" % (NETNS_NET, i))
            cmd = ["ip", "netns", "exec", "%s-%d" % (NETNS, i)] + cmd
            cmd[cmd.index("--uri") + 1] = uri
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

    def term_worker(self):
        """SIGTERM to the holder: a campaign steps down (releases) and the worker exits."""
        i, pid = self.holder()
        p = self.procs[i]
        self.log("T", pid, now())
        os.kill(pid, signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if self.procs[i] is p:
            self.spawn(i)

    def resign_worker(self):
        """SIGUSR1 to the holder: its campaign resigns and stays a standby."""
        _, pid = self.holder()
        self.log("G", pid, now())
        os.kill(pid, signal.SIGUSR1)

    def extended_holder(self):
        """(index, pid) of a holder whose last ctx.extend() asked more than the lease and whose
        next scheduled renewal (lease/3 later) has just gone out: the moment when a renewal that
        shortened the server's lease would leave a longer local deadline (waits up to 5 s)."""
        lease = self.a.lease_ms * 10**6
        give_up = now() + 5 * 10**9
        while now() < give_up:
            held = {self.procs[i].pid: i for i in self.holders()}
            with open(os.path.join(self.a.out, "ledger"), "rb") as f:
                f.seek(max(0, os.path.getsize(f.name) - 65536))
                tail = f.read().decode(errors="replace").splitlines()
            last = {}
            for p in (line.split() for line in tail):
                if len(p) == 7 and p[0] == "X" and int(p[2]) in held:
                    last[int(p[2])] = (int(p[4]), int(p[5]), int(p[6]))
            for pid, (t1, ttl_ms, ok) in last.items():
                age = now() - t1
                if ok == 1 and ttl_ms > self.a.lease_ms and lease // 3 + 10**8 < age < lease // 2:
                    return held[pid], pid
            self.sleep(0.02)
        return self.holder()

    def partition_worker(self):
        i, pid = self.extended_holder() if self.a.extend else self.holder()
        control = os.path.join(self.a.out, "blackhole")
        netns = os.path.join(HERE, "netns.sh")
        t0 = now()
        if self.a.partition == "nft":  # drop every packet between its namespace and the host
            subprocess.run([netns, "drop", NETNS, str(i), NETNS_NET], check=True)
        else:
            with open(control, "w") as f:
                f.write("%d\n" % self.ports[i])
        try:
            self.sleep(self.lease_s(self.rng.uniform(1.5, 2.5)))
        finally:
            if self.a.partition == "nft":
                subprocess.run([netns, "heal", NETNS, str(i)], check=True)
            else:
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
        elif self.own:
            t0 = now()
            os.kill(self.own.proc.pid, signal.SIGSTOP)
            try:
                time.sleep(2.0)
            finally:
                os.kill(self.own.proc.pid, signal.SIGCONT)
        else:
            t0 = self.server("pause", SERVERS[self.a.store], "2")
        self.log("S", t0, now())

    def restart_server(self):
        self.holder()
        if self.own:  # kill -9 of a private server with the data loss of its persistence
            t0 = now()
            self.own.crash_restart(self.rng, self.sleep)
            if isinstance(self.own, OwnRedis):
                self.log("L", t0, now())
        else:
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
        if s.startswith("restart"):
            return [self.restart_server]
        if s == "campaign":  # the leader crashes, freezes, is cut off, steps down
            faults = [self.kill_worker, self.pause_worker, self.term_worker, self.resign_worker]
            return faults + ([self.partition_worker] if self.network else [])
        if s == "extend":  # renewals must fail for a wrong extended deadline to show
            faults = [self.partition_worker, self.partition_worker, self.pause_worker,
                      self.kill_worker]
            return faults + ([self.pause_server] if self.a.server_faults else [])
        faults = [self.pause_worker, self.kill_worker]
        if self.wall_jumps():
            faults.append(self.jump_clock)
        if self.network:
            faults.append(self.partition_worker)
        if self.a.server_faults:
            faults.append(self.pause_server)
            if self.durable:
                faults.append(self.restart_server)
        return faults

    # ---- the run -------------------------------------------------------------------------
    def start(self):
        if self.own:
            self.own.start()
        if self.a.partition == "nft":
            netns = os.path.join(HERE, "netns.sh")
            subprocess.run([netns, "down", NETNS, NETNS_NET, "16"], check=False)  # stale run
            subprocess.run([netns, "up", NETNS, NETNS_NET, str(self.a.workers)], check=True)
        if self.network:
            cmd = [sys.executable, os.path.join(HERE, "proxy.py"), "--target",
                   self.own.address if self.own else target(self.a.store),
                   "--count", str(self.a.workers),
                   "--control", os.path.join(self.a.out, "blackhole")]
            if self.a.partition == "nft":
                cmd += ["--listen", ",".join("10.%s.%d.1" % (NETNS_NET, i)
                                             for i in range(self.a.workers))]
            self.proxy = subprocess.Popen(cmd, stdout=subprocess.PIPE)
            line = self.proxy.stdout.readline().decode().split()
            if len(line) != 2 or line[0] != "ports":
                raise RuntimeError("proxy.py did not start")
            self.ports = [int(p) for p in line[1].split(",")]
        for i in range(self.a.workers):
            self.spawn(i)
        if self.a.scenario == "campaign":  # the store's view, straight to the server
            uri = store_uri(self.a.store, self.a.out, 0)
            if self.network:
                real = self.own.address if self.own else target(self.a.store)
                uri = uri.replace("127.0.0.1:0", real)
            cmd = [self.a.worker, "--uri", uri, "--lock", self.lock, "--dir", self.a.out,
                   "--observe", "1", "--seconds", str(self.a.seconds + 2)]
            with open(os.path.join(self.a.out, "observer.log"), "a") as err:
                self.observer = subprocess.Popen(cmd, stdout=err, stderr=err)

    def inject(self):
        faults = self.schedule()
        server_faults, deck = 0, []
        self.sleep(2.0)
        while now() < self.end - 4 * 10**9:
            if server_faults >= self.a.max_server_faults and not self.own:
                faults = [f for f in faults if f not in (self.pause_server, self.restart_server)]
            if not faults:
                self.sleep(0.5)
                continue
            if not deck:  # every kind once per round, in a random order
                deck = self.rng.sample(faults, len(faults))
                if self.a.scenario in ("netns", "extend") and not self.counts:
                    deck.sort(key=lambda f: f == self.partition_worker)  # partitions first
                if self.a.scenario == "campaign" and not self.counts:
                    # the kinds the verdict needs (kill, SIGTERM, resign) first: a 16 s run has
                    # room for about 4 of the 5 kinds, and a missing one would make it vacuous
                    deck.sort(key=lambda f: f in (self.kill_worker, self.term_worker,
                                                  self.resign_worker))
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
        if self.observer:
            self.observer.terminate()
            self.observer.wait()
        if self.proxy:
            self.proxy.terminate()
            self.proxy.wait()
        if self.own:
            self.own.stop()
        if self.a.partition == "nft":
            subprocess.run([os.path.join(HERE, "netns.sh"), "down", NETNS, NETNS_NET,
                            str(self.a.workers)], check=False)
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


SKIP = 77  # ctest SKIP_RETURN_CODE: the machine cannot run this scenario (no root, no nft)


def options():
    ap = argparse.ArgumentParser()
    ap.add_argument("--store", required=True)
    ap.add_argument("--worker", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=int, default=25)
    ap.add_argument("--scenario", default="mixed", choices=SCENARIOS)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--lease-ms", type=int, default=1500)
    ap.add_argument("--max-steps", type=int, default=60)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-server-faults", type=int, default=2)
    ap.add_argument("--no-server-faults", dest="server_faults", action="store_false")
    ap.add_argument("--group", type=int, default=0, help="N-slot group elector (max_leaders N)")
    ap.add_argument("--extend", action="store_true", help="workers call ctx.extend()")
    ap.add_argument("--partition", choices=["proxy", "nft"], default="proxy")
    ap.add_argument("--redis-persist", choices=["none", "rdb", "aof"], default="none")
    ap.add_argument("--min-terms", type=int, default=2)
    a = ap.parse_args()
    if a.scenario == "group":
        a.group = a.group or 2
    elif a.scenario == "extend":
        a.extend = True
        a.max_steps = max(a.max_steps, 120)  # actions that outlive a partition
    elif a.scenario == "netns":
        a.partition = "nft"
    elif a.scenario == "campaign":
        a.server_faults = False
        a.workers = a.workers or 3
    elif a.scenario in ("restart-rdb", "restart-aof"):
        if a.store != "redis":
            ap.error("--scenario %s is for --store redis" % a.scenario)
        a.redis_persist = a.scenario[len("restart-"):]
        a.max_steps = min(a.max_steps, 10)  # many terms between the snapshot and the crash
    if a.workers is None:
        a.workers = a.group + 3 if a.group else 4
    if a.seed is None:
        a.seed = int(time.time())
    return a


def requirements(a, run):
    """What must have happened for the verdict not to be vacuous (check.py --require)."""
    need = ["faults", "takeovers"]
    if a.scenario.startswith("restart"):
        need.append("restart_server")
    if a.partition == "nft" or a.scenario == "netns":
        need.append("partition_worker")
    if a.extend:
        need.append("extends")
    if a.group >= 2:
        need.append("concurrent_holders")
    if a.scenario == "campaign":
        need += ["kill_worker", "term_worker", "resign_worker", "observations"]
    return need


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run finish() on ctest's timeout
    a = options()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    print("faults: store=%s scenario=%s seconds=%d workers=%d lease=%dms group=%d extend=%s "
          "partition=%s redis-persist=%s seed=%d out=%s"
          % (a.store, a.scenario, a.seconds, a.workers, a.lease_ms, a.group, a.extend,
             a.partition, a.redis_persist, a.seed, a.out), flush=True)
    if a.partition == "nft":
        r = subprocess.run([os.path.join(HERE, "netns.sh"), "check"], check=False)
        if r.returncode != 0:
            print("faults: SKIPPED: nft partitions need root, iproute2 and nftables")
            return SKIP
    run = Run(a)
    if a.store not in ("sqlite", "memory") and run.own is None:
        host, port = target(a.store).rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
        except OSError as e:
            print("faults: %s server %s:%s unreachable (%s): start it with "
                  "scripts/test-servers.sh start" % (a.store, host, port, e))
            return 2
    try:
        run.start()
        run.inject()
    finally:
        run.finish()
    strict = (a.scenario in MIXED or a.scenario == "campaign" or (a.scenario.startswith("restart") and run.durable)
              or (a.scenario == "clock-wall" and a.store != "sqlite"))
    check = [sys.executable, os.path.join(HERE, "check.py"), "--dir", a.out,
             "--lease-ms", str(a.lease_ms), "--label", "%s/%s" % (a.store, a.scenario),
             "--group", str(a.group), "--min-terms", str(a.min_terms),
             "--require", ",".join(requirements(a, run))]
    if a.scenario == "campaign":  # bounds: lease + 1 s after a crash; 1 s after a step-down
        # etcd frees a crashed or paused holder's key only when its lessor revokes the expired
        # lease (whole-second ttls, expiry checked every 500 ms, revokes batched): the CI dry run
        # of 937c24d, under the full suite's load, saw 2.5 s and 4.0 s takeovers there (liveness
        # only: the strict safety verdict is unchanged).
        slack = 4000 if a.store == "etcd" else 1000
        check += ["--takeover-bound-ms", str(a.lease_ms + slack), "--handover-bound-ms", "1000"]
    if not strict:
        check.append("--report-only")
    return subprocess.call(check)


if __name__ == "__main__":
    sys.exit(main())
