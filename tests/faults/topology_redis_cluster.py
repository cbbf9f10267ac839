#!/usr/bin/python3
"""Failovers of a Redis Cluster with replicas while workers elect (issue 15, docs/faults.md):

    tests/faults/topology_redis_cluster.py --worker build/tests/faults/fault_worker --out DIR
                                   [--seconds 30] [--workers 4] [--lease-ms 1500] [--seed N]
                                   [--kinds failover,primary_kill,primary_pause,worker_kill]
                                   [--wait 1] [--base PORT] [--group N]

Starts a private Redis Cluster under OUT/servers: 3 primaries + 1 replica each (6 nodes on ports
--base .. --base+5, cluster bus +1000, `redis-cli --cluster create --cluster-replicas 1`,
cluster-node-timeout 1000 ms, no persistence), and --workers fault_workers with the URI
redis-cluster://<the 6 nodes> (plus ?wait_replicas=1&wait_timeout=200ms with --wait 1), then
injects, every kind once per round in a random order, on the primary that owns the lock's slot:
  failover       CLUSTER FAILOVER on its replica (manual failover: the replica catches up first)
  primary_kill   kill -9 of the primary; once its replica is promoted, the old primary is
                 restarted empty and joins as a replica of the new one (CLUSTER REPLICATE)
  primary_pause  SIGSTOP of the primary until its replica is promoted (+0.5 s), SIGCONT: the old
                 primary learns it was demoted from the cluster bus and answers MOVED
  worker_kill    kill -9 of the holder (a takeover that does not involve the servers)
Replication is asynchronous, so a failover can lose a grant or a renewal (the documented Redis
behaviour). Events and the verdict as in topology_redis.py (Sentinel): check.py strict on token
reuse / order and the fence; overlaps and stop misses whose successor started in a failover
window t0 .. t1 + lease are reported as data-loss ones. --group N: the workers (N + 3 unless
--workers is given) run an N-slot group elector (every slot key in the lock's hash slot).
"""

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import check
import faults
import topology_redis as tr

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = tr.KINDS
NODE_TIMEOUT_MS = 1000
PREFIX = "leader:"
# cluster bus port = port + 1000 (the default + 10000 falls into the ephemeral range from 32768,
# where an outgoing connection can hold it: a node then failed to start)
BUS_OFFSET = 1000
LIBC = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    """The node gets SIGKILL when this script dies (even by SIGKILL): nothing is left behind."""
    LIBC.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG


class Cluster:
    """6 private cluster nodes under OUT/servers."""

    def __init__(self, out, base):
        self.base = base
        self.root = os.path.join(out, "servers")
        self.ports = [base + i for i in range(6)]
        self.procs = {}

    def cli(self, port, *args, timeout=3):
        try:
            r = subprocess.run(["redis-cli", "-p", str(port)] + list(args), capture_output=True,
                               text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return ""
        return r.stdout.strip()

    def server(self, port, fresh=True):
        d = os.path.join(self.root, "n%d" % port)
        if fresh:
            shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d, exist_ok=True)
        log = open(os.path.join(self.root, "n%d.log" % port), "a")
        self.procs[port] = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--cluster-enabled",
             "yes", "--cluster-port", str(port + BUS_OFFSET),
             "--cluster-config-file", os.path.join(d, "nodes.conf"),
             "--cluster-node-timeout", str(NODE_TIMEOUT_MS), "--save", "", "--appendonly", "no",
             "--repl-diskless-sync-delay", "0", "--dir", d, "--daemonize", "no"],
            stdout=log, stderr=log,
            preexec_fn=die_with_parent)

    def wait_ping(self, port, give_up_s=10):
        end = time.monotonic() + give_up_s
        while time.monotonic() < end:
            if self.cli(port, "PING") == "PONG":
                return True
            time.sleep(0.05)
        return False

    def start(self):
        t0 = time.monotonic()
        os.makedirs(self.root, exist_ok=True)
        for p in self.ports:
            self.server(p)
        for p in self.ports:
            if not self.wait_ping(p) or self.procs[p].poll() is not None:
                raise RuntimeError("redis cluster node %d did not start (port taken?)" % p)
        r = subprocess.run(["redis-cli", "--cluster", "create"] +
                           ["127.0.0.1:%d" % p for p in self.ports] +
                           ["--cluster-replicas", "1", "--cluster-yes"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("redis-cli --cluster create: " + r.stdout[-500:] + r.stderr)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            if all("cluster_state:ok" in self.cli(p, "CLUSTER", "INFO") for p in self.ports) \
                    and all(self.replica_linked(m) for m in self.masters()):
                return "redis-cluster (3 primaries + 3 replicas, ports %d-%d) ready in %.1f s" % (
                    self.ports[0], self.ports[-1], time.monotonic() - t0)
            time.sleep(0.1)
        raise RuntimeError("redis cluster not ready in 30 s")

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                    p.kill()
                except OSError:
                    pass
                p.wait()

    def nodes(self, port):
        """CLUSTER NODES of `port`: [(id, port, flags, master_id, slots-text)]."""
        out = []
        for line in self.cli(port, "CLUSTER", "NODES", timeout=1).splitlines():
            f = line.split()
            if len(f) < 8:
                continue
            out.append((f[0], int(f[1].split("@")[0].split(":")[-1]), f[2].split(","), f[3],
                        f[8:]))
        return out

    def masters(self):
        seen = set()
        for p in self.ports:
            for _, port, flags, _, slots in self.nodes(p):
                if "master" in flags and "fail" not in flags and slots:
                    seen.add(port)
            if seen:
                break
        return sorted(seen)

    def role(self, port):
        out = self.cli(port, "ROLE", timeout=1).split()
        return out[0] if out else None

    def owner(self, slot, ask=None):
        """The port of the node that `ask` (else any live node) names as the slot's master."""
        for p in ([ask] if ask else self.ports):
            for _, port, flags, _, slots in self.nodes(p):
                if "master" not in flags or "fail" in flags or "fail?" in flags:
                    continue
                for s in slots:
                    if s.startswith("["):
                        continue
                    lo, _, hi = s.partition("-")
                    if int(lo) <= slot <= int(hi or lo):
                        return port
        return None

    def replica_of(self, master):
        ids = {port: nid for nid, port, _, _, _ in self.nodes(master)}
        mid = ids.get(master)
        for nid, port, flags, m, _ in self.nodes(master):
            if m == mid and "slave" in flags and "fail" not in flags:
                return port
        return None

    def replica_linked(self, primary):
        info = self.cli(primary, "INFO", "replication", timeout=1)
        return "connected_slaves:1" in info and "state=online" in info


class ClusterRun(tr.SentinelRun):
    def __init__(self, a):
        faults.Run.__init__(self, a)
        self.network = True
        self.durable = True
        self.servers = Cluster(a.out, a.base)
        self.lock = "faults-redis-cluster-%d-%d" % (os.getpid(), int(time.time()))
        self.slot = None

    def uri(self):
        hosts = ",".join("127.0.0.1:%d" % p for p in self.servers.ports)
        uri = "redis-cluster://%s?connect_timeout=300ms&command_timeout=500ms" % hosts
        if self.a.wait:
            uri += "&wait_replicas=1&wait_timeout=200ms"
        return uri

    def spawn(self, i):
        left = max(1, (self.end - faults.now()) // 10**9)
        cmd = [self.a.worker, "--uri", self.uri(), "--lock", self.lock, "--dir", self.a.out,
               "--id", str(i), "--lease-ms", str(self.a.lease_ms), "--seconds", str(left),
               "--max-steps", str(self.a.max_steps)]
        if self.a.group:
            cmd += ["--group", str(self.a.group)]
        with open(os.path.join(self.a.out, "w%d.log" % i), "a") as err:
            self.procs[i] = subprocess.Popen(cmd, stdout=err, stderr=err)

    def start(self):
        print("faults: " + self.servers.start(), flush=True)
        self.slot = int(self.servers.cli(self.servers.ports[0], "CLUSTER", "KEYSLOT",
                                         PREFIX + self.lock))
        print("faults: lock %s in slot %d, owner %s" % (self.lock, self.slot,
                                                        self.servers.owner(self.slot)), flush=True)
        for i in range(self.a.workers):
            self.spawn(i)

    def finish(self):
        faults.Run.finish(self)
        self.servers.stop()

    def settle(self, old, give_up_s=15.0):
        """Waits until every live node names a slot owner other than `old`, that one says ROLE
        master and `old` (if it answers) no longer does; the new owner's port, or None."""
        give_up = faults.now() + int(give_up_s * 1e9)
        while faults.now() < give_up:
            new = self.servers.owner(self.slot)
            if new is not None and new != old and self.servers.role(new) == "master" and \
                    self.servers.role(old) != "master":
                live = [p for p in self.servers.ports if p != old and self.servers.role(p)]
                if all(self.servers.owner(self.slot, ask=p) == new for p in live):
                    return new
            self.sleep(0.05)
        print("faults: no failover away from %d within %.0f s" % (old, give_up_s), flush=True)
        return None

    def healthy(self, give_up_s=20.0):
        give_up = faults.now() + int(give_up_s * 1e9)
        while faults.now() < give_up:
            p = self.servers.owner(self.slot)
            if p is not None and self.servers.replica_linked(p):
                return
            self.sleep(0.1)

    def server_fault(self, kind, t0, old, new, t1=None):
        t1 = t1 or faults.now()
        self.log("L", t0, t1)
        self.log("R", t0, t1)
        self.log("F", kind, t0, t1, old)
        self.healthy()

    def failover(self):
        self.holder()
        old = self.servers.owner(self.slot)
        rep = self.servers.replica_of(old) if old else None
        if rep is None:
            return
        t0 = faults.now()
        self.servers.cli(rep, "CLUSTER", "FAILOVER")
        new = self.settle(old)
        self.server_fault("failover", t0, old, new)

    def primary_kill(self):
        self.holder()
        old = self.servers.owner(self.slot)
        if old is None or self.servers.replica_of(old) is None:
            return
        t0 = faults.now()
        self.servers.procs[old].kill()
        self.servers.procs[old].wait()
        new = self.settle(old)
        t1 = faults.now()  # the new owner serves: the end of the failover window
        if new is not None:  # back empty: a new node id, joins as the new owner's replica
            self.servers.server(old, fresh=True)
            self.servers.wait_ping(old)
            self.servers.cli(old, "CLUSTER", "MEET", "127.0.0.1", str(new),
                             str(new + BUS_OFFSET))
            nid = [n for n, p, _, _, _ in self.servers.nodes(new) if p == new]
            give_up = faults.now() + 10 * 10**9
            said = ""
            while nid and faults.now() < give_up:
                said = self.servers.cli(old, "CLUSTER", "REPLICATE", nid[0])
                if said == "OK":
                    break
                self.sleep(0.2)
            if said != "OK":
                print("faults: CLUSTER REPLICATE on the restarted %d: %s" % (old, said), flush=True)
            # the killed node's old id stays in the others' tables as failed: forget it
            for p in self.servers.ports:
                for n, port, flags, _, _ in self.servers.nodes(p):
                    if port == old and ("fail" in flags or "noaddr" in flags) and p != old:
                        self.servers.cli(p, "CLUSTER", "FORGET", n)
        self.server_fault("primary_kill", t0, old, new, t1)

    def primary_pause(self):
        self.holder()
        old = self.servers.owner(self.slot)
        if old is None or self.servers.replica_of(old) is None:
            return
        proc = self.servers.procs[old]
        t0 = faults.now()
        proc.send_signal(signal.SIGSTOP)
        try:
            give_up = faults.now() + 15 * 10**9
            while faults.now() < give_up:  # paused until its replica is promoted
                new = self.servers.owner(self.slot)
                if new is not None and new != old:
                    break
                self.sleep(0.05)
            self.sleep(0.5)
        finally:
            proc.send_signal(signal.SIGCONT)
        new = self.settle(old)
        self.server_fault("primary_pause", t0, old, new)


def free_base():
    """A base whose 6 ports and their bus ports bind now (runs at the same time, e.g. a soak and
    the ctest pair, would otherwise share a pid-derived base: a node then failed to bind and the
    other run's node answered in its place)."""
    import socket
    first = (os.getpid() % 40) * 10
    for k in range(40):
        base = 25000 + (first + 10 * k) % 400
        try:
            socks = []
            for port in range(base, base + 6):
                for q in (port, port + BUS_OFFSET):
                    so = socket.socket()
                    socks.append(so)
                    so.bind(("127.0.0.1", q))
            return base
        except OSError:
            continue
        finally:
            for so in socks:
                so.close()
    raise RuntimeError("no free ports in 25000-25405 (+1000)")


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGHUP, lambda *_: sys.exit(129))
    if not any(x.startswith("--base") for x in sys.argv):
        sys.argv += ["--base", str(free_base())]
    group = 0
    if "--group" in sys.argv:
        i = sys.argv.index("--group")
        group = int(sys.argv[i + 1])
        del sys.argv[i:i + 2]
        if "--workers" not in sys.argv:
            sys.argv += ["--workers", str(group + 3)]
    a = tr.options()
    a.group = group
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    label = "redis-cluster%s%s" % ("+wait" if a.wait else "", "+group%d" % group if group else "")
    print("faults: topology=%s seconds=%d workers=%d lease=%dms seed=%d base=%d kinds=%s out=%s"
          % (label, a.seconds, a.workers, a.lease_ms, a.seed, a.base, ",".join(a.kinds), a.out),
          flush=True)
    run = ClusterRun(a)
    t_start = time.monotonic()
    try:
        run.start()
        run.inject()
    finally:
        run.finish()
    need = ["faults", "takeovers"] + a.kinds + (["concurrent_holders"] if group >= 2 else [])
    rc = subprocess.call([sys.executable, os.path.join(HERE, "check.py"), "--dir", a.out,
                          "--lease-ms", str(a.lease_ms), "--label", label, "--group", str(group),
                          "--min-terms", str(a.min_terms), "--require", ",".join(need)])
    tr.report(a, label, t_start)
    return rc


if __name__ == "__main__":
    sys.exit(main())
