#!/usr/bin/python3
"""Failover faults of the clustered stores (issue 15, docs/faults.md); run through run.sh:

    tests/faults/run.sh --topology etcd-cluster|zookeeper-ensemble [--seconds 35] [--workers 4]
                        [--lease-ms 1500] [--seed N] [--kinds k1,k2,...]

Starts a private 3-member cluster (scripts/cluster-servers.sh with its own ports, data under OUT),
one blackholing proxy (proxy.py) per member with a port per worker, and --workers fault_workers
whose URI names the three members (each worker through its own proxy ports, the list rotated so
that the workers start on different members). Then injects, every kind once per round in a
random order (faults.py's Run and check.py do the rest):
Terms last up to --max-steps 160 steps of 50 ms (8 s), longer than a fault, so that a holder
either keeps its lease through the fault or loses it to the fault.
  member_kill        kill -9 of a random member, restarted 1-2 s later (data kept)
  member_pause       SIGSTOP of a random member for 1.3-2.5 leases (the workers keep every member)
  leader_stop        the cluster's leader member stopped (SIGTERM), restarted 1-2 s later
  leader_kill        the same with kill -9
  holder_member_pause the holder is cut off (proxy) from all members but one, that member is
                     SIGSTOPped for 1.3-2.5 leases, then both are undone
  minority_holder    the holder's side is the minority: one member cut off its peers (nft drop on
                     its peer connections, the member runs as its own uid) and from every other
                     worker, the holder reaching only that member, for 1.5-2.5 leases
  minority_other     the same with the holder on the majority side (cut off from the isolated
                     member, one other worker on the minority side)
  worker_kill        kill -9 of the holder (a takeover that does not involve the cluster)
Events: faults.py's (K for worker_kill) plus "F kind t0 t1 member" for each cluster fault, and
"L t0 t1" when an etcd member paused was the leader: etcd 3.4.23 (Debian 12) has bug 15247, fixed
upstream by PR 16822: a leader that resumes revokes every lease its own clock saw expire, also
those the new leader kept alive, so the server itself can drop a live holder's lease; check.py
reports overlaps and stop misses that start then apart ("data loss"), as for a Redis crash. The
verdict is check.py's, strict: 0 overlaps (other than paused holders: none are paused here),
0 fence violations, 0 token reuse, 0 stop misses, and a run with takeovers and every kind asked.
Added to result.json: failover.<kind> = {"faults", "kept" (the holder at the fault kept its lease
through it), "ended" (its action ended by itself meanwhile), "lost" (stopped, lost or killed),
"no_holder", "takeover_ms" (fault start to the next term's start, for the lost ones)}.
Partitions need root and nftables (as netns.sh): without them those kinds are left out and said.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import check
import faults

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CLUSTER = os.path.join(REPO, "scripts", "cluster-servers.sh")
KINDS = ["member_kill", "member_pause", "leader_stop", "leader_kill", "holder_member_pause", "minority_holder",
         "minority_other", "worker_kill"]
PARTITIONS = ("minority_holder", "minority_other")
STORE = {"etcd-cluster": "etcd", "zookeeper-ensemble": "zookeeper"}


def nft_ok():
    if os.getuid() != 0 or not shutil.which("nft") or not shutil.which("setpriv"):
        return False
    t = "lfcchk%d" % os.getpid()
    ok = subprocess.run(["nft", "add", "table", "inet", t], capture_output=True).returncode == 0
    subprocess.run(["nft", "delete", "table", "inet", t], capture_output=True)
    return ok


class Cluster:
    """A private copy of a scripts/cluster-servers.sh cluster under OUT/servers."""

    def __init__(self, topology, out, base, uid_base):
        self.topology, self.base = topology, base
        self.env = dict(os.environ, LE_TEST_ROOT=os.path.join(out, "servers"),
                        LE_ETCD_CLUSTER_BASE=str(base), LE_ZK_ENSEMBLE_BASE=str(base + 20))
        if uid_base:
            self.env["LE_CLUSTER_UID_BASE"] = str(uid_base)
        self.uid_base = uid_base

    def sh(self, *args, check_rc=True):
        r = subprocess.run([CLUSTER] + list(args), env=self.env, capture_output=True, text=True)
        if check_rc and r.returncode != 0:
            raise RuntimeError("cluster-servers.sh %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout.strip()

    def start(self):
        print("faults: " + self.sh("start", self.topology), flush=True)

    def stop(self):
        self.sh("stop", self.topology, check_rc=False)

    def ports(self):
        return [int(p) for p in self.sh("ports", self.topology).split()]

    def peer_ports(self, i):
        """The ports member i (1..3) listens on for its peers."""
        if self.topology == "etcd-cluster":
            return [self.base + 2 * (i - 1) + 1]
        zb = self.base + 20
        return [zb + 100 + i - 1, zb + 110 + i - 1]

    def leader(self):
        give_up = time.monotonic() + 5
        while time.monotonic() < give_up:
            out = self.sh("leader", self.topology, check_rc=False)
            if out:
                return int(out)
            time.sleep(0.1)
        return None

    def pid(self, i):
        with open(os.path.join(self.env["LE_TEST_ROOT"], "pids",
                               "%s-%d.pid" % (self.topology, i))) as f:
            return int(f.read())


class TopologyRun(faults.Run):
    def __init__(self, a):
        super().__init__(a)
        self.network = True
        self.durable = True
        self.cluster = Cluster(a.topology, a.out, a.base, a.uid_base)
        self.proxies = []  # per member: (Popen, control file, [port per worker])
        self.table = "lfc%d" % os.getpid()
        self.mark = 0x1500
        self.lock = "faults-%s-%d-%d" % (a.topology, os.getpid(), int(time.time()))

    # ---- set-up ------------------------------------------------------------------------------
    def spawn(self, i):
        left = max(1, (self.end - faults.now()) // 10**9)
        ports = [p[2][i] for p in self.proxies]
        k = i % len(ports)
        hosts = ",".join("127.0.0.1:%d" % p for p in ports[k:] + ports[:k])
        uri = ("etcd://%s?prefix=/leader-faults" % hosts if self.a.store == "etcd"
               else "zk://%s?root=/leader-faults" % hosts)
        cmd = [self.a.worker, "--uri", uri, "--lock", self.lock, "--dir", self.a.out,
               "--id", str(i), "--lease-ms", str(self.a.lease_ms), "--seconds", str(left),
               "--max-steps", str(self.a.max_steps)]
        with open(os.path.join(self.a.out, "w%d.log" % i), "a") as err:
            self.procs[i] = subprocess.Popen(cmd, stdout=err, stderr=err)

    def start(self):
        self.cluster.start()
        if self.a.uid_base:
            subprocess.run(["nft", "-f", "-"], check=True, text=True, input=(
                "table inet %s {\n chain out { type filter hook output priority 0; "
                "policy accept; }\n}\n" % self.table))
        for m, port in enumerate(self.cluster.ports()):
            control = os.path.join(self.a.out, "blackhole-m%d" % (m + 1))
            p = subprocess.Popen([sys.executable, os.path.join(HERE, "proxy.py"), "--target",
                                  "127.0.0.1:%d" % port, "--count", str(self.a.workers),
                                  "--control", control], stdout=subprocess.PIPE)
            line = p.stdout.readline().decode().split()
            if len(line) != 2 or line[0] != "ports":
                raise RuntimeError("proxy.py did not start")
            self.proxies.append((p, control, [int(x) for x in line[1].split(",")]))
        for i in range(self.a.workers):
            self.spawn(i)

    def finish(self):
        self.heal()
        super().finish()
        for p, _, _ in self.proxies:
            p.terminate()
            p.wait()
        if self.a.uid_base:
            subprocess.run(["nft", "delete", "table", "inet", self.table], capture_output=True)
        if os.environ.get("LEADER_FAULTS_KEEP_CLUSTER") != "1":  # kept to look at: stop by hand
            self.cluster.stop()

    # ---- helpers -----------------------------------------------------------------------------
    def cut(self, pairs):
        """Blackholes the proxy ports of (worker, member) pairs (member 1..3)."""
        by_member = {}
        for w, m in pairs:
            by_member.setdefault(m, []).append(self.proxies[m - 1][2][w])
        for m, (_, control, _) in enumerate(self.proxies, 1):
            with open(control, "w") as f:
                f.write("".join("%d\n" % p for p in by_member.get(m, [])))

    def isolate(self, m):
        """nft: member m's peer connections (both ways) are dropped."""
        self.mark += 1
        others = [p for j in (1, 2, 3) if j != m for p in self.cluster.peer_ports(j)]
        mine = self.cluster.peer_ports(m)
        s = lambda ps: "{ %s }" % ", ".join(map(str, ps))  # noqa: E731
        rules = ["meta skuid %d tcp dport %s ct mark set 0x%x" % (self.a.uid_base + m, s(others),
                                                                 self.mark),
                 "tcp dport %s ct mark set 0x%x" % (s(mine), self.mark),
                 "tcp sport %s ct mark set 0x%x" % (s(mine), self.mark),
                 "ct mark 0x%x drop" % self.mark]
        for r in rules:
            subprocess.run(["nft", "add", "rule", "inet", self.table, "out"] + r.split(),
                           check=True)

    def heal(self):
        self.cut([])
        if self.a.uid_base:
            subprocess.run(["nft", "flush", "chain", "inet", self.table, "out"],
                           capture_output=True)

    def fault(self, kind, t0, member):
        self.log("F", kind, t0, faults.now(), member)

    def restart(self, m):
        self.sleep(self.rng.uniform(1.0, 2.0))
        self.cluster.sh("member-start", self.a.topology, str(m))

    # ---- faults ------------------------------------------------------------------------------
    def member_kill(self):
        self.holder()
        m = self.rng.randint(1, 3)
        t0 = faults.now()
        self.cluster.sh("member-stop", self.a.topology, str(m), "KILL")
        self.restart(m)
        self.fault("member_kill", t0, m)

    def leader_stop(self, sig="TERM", kind="leader_stop"):
        self.holder()
        m = self.cluster.leader()
        if m is None:
            print("faults: %s: no leader found" % kind)
            return
        t0 = faults.now()
        self.cluster.sh("member-stop", self.a.topology, str(m), sig)
        self.restart(m)
        self.fault(kind, t0, m)

    def leader_kill(self):
        self.leader_stop("KILL", "leader_kill")

    def member_pause(self):
        """SIGSTOP of a random member (the holder's own in a third of the cases): its clients'
        calls hang; the store must move them to a healthy member before the local deadline."""
        self.holder()
        m = self.rng.randint(1, 3)
        pid = self.cluster.pid(m)
        leader = self.a.store == "etcd" and self.cluster.leader() == m
        t0 = faults.now()
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(self.lease_s(self.rng.uniform(1.3, 2.5)))
        finally:
            os.kill(pid, signal.SIGCONT)
        self.fault("member_pause", t0, m)
        if leader:  # etcd bug 15247 (fixed by etcd PR 16822, after Debian's 3.4.23): on resume
            # the old leader revokes the leases its own clock saw expire, live ones included
            self.log("L", t0, faults.now())

    def holder_member_pause(self):
        i, _ = self.holder()
        m = self.rng.randint(1, 3)
        t0 = faults.now()
        self.cut([(i, j) for j in (1, 2, 3) if j != m])
        pid = self.cluster.pid(m)
        leader = self.a.store == "etcd" and self.cluster.leader() == m
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(self.lease_s(self.rng.uniform(1.3, 2.5)))
        finally:
            os.kill(pid, signal.SIGCONT)
            self.cut([])
        self.fault("holder_member_pause", t0, m)
        if leader:  # as in member_pause
            self.log("L", t0, faults.now())

    def minority(self, holder_side):
        i, _ = self.holder()
        m = self.rng.randint(1, 3)
        others = [w for w in range(self.a.workers) if w != i]
        minority = [i] if holder_side else [self.rng.choice(others)]
        t0 = faults.now()
        self.cut([(w, j) for w in range(self.a.workers) for j in (1, 2, 3)
                  if (w in minority) != (j == m)])
        self.isolate(m)
        try:
            self.sleep(self.lease_s(self.rng.uniform(1.5, 2.5)))
        finally:
            self.heal()
        self.fault("minority_holder" if holder_side else "minority_other", t0, m)

    def minority_holder(self):
        self.minority(True)

    def minority_other(self):
        self.minority(False)

    def worker_kill(self):
        self.kill_worker()

    def schedule(self):
        return [getattr(self, k) for k in self.a.kinds]


def failover(leases, events, lease_ns):
    """kind -> {faults, kept, lost, takeover_ms[]} from the F events (see the module's doc)."""
    out = {}
    for e in events:
        if e[0] != "F":
            continue
        kind, t0, t1 = e[1], int(e[2]), int(e[3])
        f = out.setdefault(kind, {"faults": 0, "kept": 0, "ended": 0, "lost": 0, "no_holder": 0,
                                  "takeover_ms": []})
        f["faults"] += 1
        held = [x for x in leases if x["start"] <= t0 < x["eff_end"]]
        if not held:
            f["no_holder"] += 1
            continue
        h = held[0]
        if h["eff_end"] > t1:
            f["kept"] += 1  # held through the fault
            continue
        if h["eff_end"] == h.get("end") and h.get("why") == "done":
            f["ended"] += 1  # its action ended by itself meanwhile (released)
            continue
        f["lost"] += 1
        nxt = [x["start"] for x in leases if x["start"] > t0 and x["token"] > h["token"]]
        if nxt:
            f["takeover_ms"].append(round((min(nxt) - t0) / 1e6, 1))
    for f in out.values():
        t = sorted(f["takeover_ms"])
        f["takeover_p50_ms"] = t[len(t) // 2] if t else None
        f["takeover_p99_ms"] = t[min(len(t) - 1, int(len(t) * 0.99))] if t else None
    return out


def options():
    ap = argparse.ArgumentParser()
    ap.add_argument("--topology", required=True, choices=sorted(STORE))
    ap.add_argument("--worker", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=int, default=35)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--lease-ms", type=int, default=1500)
    ap.add_argument("--max-steps", type=int, default=160)  # terms of 8 s outlive a fault
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--base", type=int, default=None, help="first port of the private cluster")
    ap.add_argument("--min-terms", type=int, default=2)
    ap.add_argument("--soak", action="store_true", help="chunks until --soak-seconds passed")
    ap.add_argument("--soak-seconds", type=int, default=600)
    ap.add_argument("--soak-terms", type=int, default=0,
                    help="with --soak: stop once this many terms were judged (0: time only)")
    ap.add_argument("--chunk-seconds", type=int, default=120)
    a = ap.parse_args()
    a.store = STORE[a.topology]
    a.kinds = [k for k in a.kinds.split(",") if k]
    bad = [k for k in a.kinds if k not in KINDS]
    if bad:
        ap.error("unknown kinds %s (known: %s)" % (bad, ", ".join(KINDS)))
    a.seed = int(time.time()) if a.seed is None else a.seed
    a.base = a.base or int(os.environ.get("LEADER_FAULTS_CLUSTER_BASE", 0)) or \
        23000 + (os.getpid() % 40) * 200
    a.uid_base = 47000 + (os.getpid() % 40) * 10 if nft_ok() else 0
    if not a.uid_base and any(k in PARTITIONS for k in a.kinds):
        print("faults: no partitions of members here (they need root, nftables and setpriv)")
        a.kinds = [k for k in a.kinds if k not in PARTITIONS]
    # what faults.Run reads
    a.scenario, a.redis_persist, a.group, a.extend, a.partition = "mixed", "none", 0, False, "proxy"
    a.server_faults, a.max_server_faults = False, 0
    return a


def soak(a):
    """Chunks of --chunk-seconds (every kind, fresh cluster each) until --soak-seconds have
    passed or --soak-terms were judged; sums the verdict's counts and pools the takeover times. Writes OUT/soak.json."""
    sums = ["terms", "writes", "fence_violations", "token_reuse", "token_order", "stop_misses",
            "overlaps", "overlaps_paused", "overlaps_unexplained", "resource_order_unexplained",
            "takeovers", "overlaps_data_loss", "stop_misses_data_loss"]
    total = {k: 0 for k in sums}
    total.update(topology=a.topology, chunks=0, failed=0, faults={}, failover={})
    t0 = time.monotonic()
    k = 0
    while time.monotonic() - t0 < a.soak_seconds and \
            not (a.soak_terms and total["terms"] >= a.soak_terms):
        out = os.path.join(a.out, "chunk-%d" % k)
        cmd = [sys.executable, os.path.abspath(__file__), "--topology", a.topology, "--worker",
               a.worker, "--out", out, "--seconds", str(a.chunk_seconds), "--workers",
               str(a.workers), "--lease-ms", str(a.lease_ms), "--seed", str(a.seed + k),
               "--max-steps", str(a.max_steps), "--kinds", ",".join(a.kinds)]
        rc = subprocess.call(cmd)
        try:
            with open(os.path.join(out, "result.json")) as f:
                r = json.load(f)
        except OSError:
            r = {"faults": {}, "failover": {}}
            rc = rc or 1
        for key in sums:
            total[key] += r.get(key, 0)
        for kind, n in r["faults"].items():
            total["faults"][kind] = total["faults"].get(kind, 0) + n
        for kind, f in r["failover"].items():
            t = total["failover"].setdefault(kind, {"faults": 0, "kept": 0, "ended": 0,
                                                    "lost": 0, "no_holder": 0,
                                                    "takeover_ms": []})
            for key in ("faults", "kept", "ended", "lost", "no_holder"):
                t[key] += f.get(key, 0)
            t["takeover_ms"] += f["takeover_ms"]
        total["chunks"] += 1
        total["failed"] += rc != 0
        k += 1
        print("soak %s: chunk %d rc %d, %d terms so far" % (a.topology, k, rc, total["terms"]),
              flush=True)
    for t in total["failover"].values():
        ms = sorted(t["takeover_ms"])
        t["takeover_p50_ms"] = ms[len(ms) // 2] if ms else None
        t["takeover_p99_ms"] = ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else None
    total["seconds"] = round(time.monotonic() - t0)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "soak.json"), "w") as f:
        json.dump(total, f, indent=1, sort_keys=True)
    print(soak_table(total))
    return 1 if total["failed"] else 0


def soak_table(t):
    lines = ["%s: %d terms, %d takeovers, %d fence violations, %d token reuse / %d order, "
             "%d stop misses, %d overlaps (%d of paused holders, %d unexplained; %d overlaps and "
             "%d stop misses after an etcd leader's pause, bug 15247), %d chunks (%d failed), %d s"
             % (t["topology"], t["terms"], t["takeovers"], t["fence_violations"],
                t["token_reuse"], t["token_order"], t["stop_misses"], t["overlaps"],
                t["overlaps_paused"], t["overlaps_unexplained"] + t["resource_order_unexplained"],
                t["overlaps_data_loss"], t["stop_misses_data_loss"], t["chunks"], t["failed"],
                t["seconds"]),
             "", "| fault | injected | holder kept its lease | released meanwhile | lost | "
             "no holder | takeover p50 ms | takeover p99 ms |", "|---|---|---|---|---|---|---|---|"]
    for kind in KINDS:
        f = t["failover"].get(kind)
        if f:
            lines.append("| %s | %d | %d | %d | %d | %d | %s | %s |" % (
                kind, f["faults"], f["kept"], f["ended"], f["lost"], f["no_holder"],
                f["takeover_p50_ms"], f["takeover_p99_ms"]))
    return "\n".join(lines)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    a = options()
    if a.soak:
        return soak(a)
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    print("faults: topology=%s seconds=%d workers=%d lease=%dms seed=%d base=%d kinds=%s out=%s"
          % (a.topology, a.seconds, a.workers, a.lease_ms, a.seed, a.base, ",".join(a.kinds),
             a.out), flush=True)
    run = TopologyRun(a)
    t_start = time.monotonic()
    try:
        run.start()
        run.inject()
    finally:
        run.finish()
    need = ["faults", "takeovers"] + a.kinds
    rc = subprocess.call([sys.executable, os.path.join(HERE, "check.py"), "--dir", a.out,
                          "--lease-ms", str(a.lease_ms), "--label", a.topology,
                          "--min-terms", str(a.min_terms), "--require", ",".join(need)])
    leases, writes, events, _ = check.load(a.out)
    check.analyse(leases, writes, events, a.lease_ms * 10**6)
    path = os.path.join(a.out, "result.json")
    with open(path) as f:
        r = json.load(f)
    r["failover"] = failover(leases, events, a.lease_ms * 10**6)
    r["topology"] = a.topology
    r["wall_s"] = round(time.monotonic() - t_start, 1)
    with open(path, "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)
    for kind, f in sorted(r["failover"].items()):
        print("failover %s %s: %d faults, the holder kept its lease %d, released it %d, lost it "
              "%d, no holder %d, takeover p50 %s ms p99 %s ms"
              % (a.topology, kind, f["faults"], f["kept"], f["ended"], f["lost"], f["no_holder"],
                 f["takeover_p50_ms"], f["takeover_p99_ms"]))
    print("faults: %s wall time %.1f s" % (a.topology, r["wall_s"]))
    return rc


if __name__ == "__main__":
    sys.exit(main())
