#!/usr/bin/python3
"""Failovers of Redis behind Sentinel while workers elect (issue 15, docs/faults.md):

    tests/faults/topology_redis.py --worker build/tests/faults/fault_worker --out DIR
                                   [--seconds 30] [--workers 4] [--lease-ms 1500] [--seed N]
                                   [--kinds failover,primary_kill,primary_pause,worker_kill]
                                   [--wait 1] [--base PORT]

Starts a private copy of scripts/redis-sentinel.sh (primary, replica, 3 Sentinels on ports from
--base, data under OUT/servers), and --workers fault_workers with the URI
redis-sentinel://<the 3 Sentinels>/leader-test (plus ?wait_replicas=1&wait_timeout=200ms with
--wait 1), then injects, every kind once per round in a random order:
  failover       SENTINEL FAILOVER (the replica is promoted, the old primary made its replica)
  primary_kill   kill -9 of the primary; once the Sentinels promoted the replica, the old primary
                 is restarted empty as a replica of the new one
  primary_pause  SIGSTOP of the primary for down-after + 2 s (the Sentinels promote the replica),
                 SIGCONT: the old primary serves as a stale primary until the Sentinels demote it
  worker_kill    kill -9 of the holder (a takeover that does not involve the servers)
Replication is asynchronous, so a failover can lose a grant or a renewal that the old primary
acknowledged: two holders can then overlap until the first one's local deadline. Each server
fault is logged as "L t0 t1" (t1 = the new primary serves and the old one no longer does), so
check.py counts overlaps and stop misses whose successor started in t0 .. t1 + lease as
"data-loss" ones (reported, the documented Redis behaviour), and "F kind t0 t1 port". The verdict
is check.py's, strict on what Redis behind Sentinel promises: 0 token reuse, 0 token order
errors, 0 fence violations, no unexplained overlap or stop miss outside the failover windows.
Added to result.json: failover.<kind> = {faults, kept, lost, takeover p50/p99 ms} and
"overlaps_in_failover" (the data-loss overlaps).
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import check
import faults

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
SCRIPT = os.path.join(REPO, "scripts", "redis-sentinel.sh")
KINDS = ["failover", "primary_kill", "primary_pause", "worker_kill"]
MASTER = "leader-test"
DOWN_AFTER_MS = 1000


class Sentinel:
    """A private copy of scripts/redis-sentinel.sh under OUT/servers."""

    def __init__(self, out, base):
        self.base = base
        self.root = os.path.join(out, "servers")
        self.env = dict(os.environ, LE_TEST_ROOT=self.root, LE_REDIS_SENTINEL_BASE=str(base),
                        LE_REDIS_SENTINEL_DOWN_AFTER_MS=str(DOWN_AFTER_MS))
        self.sentinels = [base + 10, base + 11, base + 12]

    def sh(self, *args, check_rc=True):
        r = subprocess.run([SCRIPT] + list(args), env=self.env, capture_output=True, text=True)
        if check_rc and r.returncode != 0:
            raise RuntimeError("redis-sentinel.sh %s: %s" % (" ".join(args), r.stderr.strip()))
        return r.stdout.strip()

    def cli(self, port, *args):
        r = subprocess.run(["redis-cli", "-p", str(port)] + list(args), capture_output=True,
                           text=True, timeout=3)
        return r.stdout.strip()

    def named_primary(self):
        """The primary's port as the Sentinels' majority names it, or None."""
        votes = {}
        for s in self.sentinels:
            try:
                out = self.cli(s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER).split()
            except subprocess.TimeoutExpired:
                continue
            if len(out) == 2 and out[1].isdigit():
                votes[int(out[1])] = votes.get(int(out[1]), 0) + 1
        best = max(votes.items(), key=lambda kv: kv[1], default=(None, 0))
        return best[0] if best[1] >= 2 else None

    def role(self, port):
        try:
            out = self.cli(port, "ROLE").split()
        except subprocess.TimeoutExpired:
            return None
        return out[0] if out else None

    def name(self, port):
        return "r0" if port == self.base else "r1"

    def pid(self, port):
        with open(os.path.join(self.root, "pids", "redis-sentinel-%d-%s.pid"
                               % (self.base, self.name(port)))) as f:
            return int(f.read())

    def other(self, port):
        return self.base + 1 if port == self.base else self.base

    def replica_linked(self, primary):
        """The primary reports one replica online (replication resumed after a failover)."""
        try:
            info = self.cli(primary, "INFO", "replication")
        except subprocess.TimeoutExpired:
            return False
        return "connected_slaves:1" in info and "state=online" in info


class SentinelRun(faults.Run):
    def __init__(self, a):
        super().__init__(a)
        self.network = True
        self.durable = True
        self.servers = Sentinel(a.out, a.base)
        self.lock = "faults-redis-sentinel-%d-%d" % (os.getpid(), int(time.time()))

    def uri(self):
        hosts = ",".join("127.0.0.1:%d" % p for p in self.servers.sentinels)
        uri = "redis-sentinel://%s/%s?connect_timeout=300ms&command_timeout=500ms" % (hosts,
                                                                                      MASTER)
        if self.a.wait:
            uri += "&wait_replicas=1&wait_timeout=200ms"
        return uri

    def spawn(self, i):
        left = max(1, (self.end - faults.now()) // 10**9)
        cmd = [self.a.worker, "--uri", self.uri(), "--lock", self.lock, "--dir", self.a.out,
               "--id", str(i), "--lease-ms", str(self.a.lease_ms), "--seconds", str(left),
               "--max-steps", str(self.a.max_steps)]
        with open(os.path.join(self.a.out, "w%d.log" % i), "a") as err:
            self.procs[i] = subprocess.Popen(cmd, stdout=err, stderr=err)

    def start(self):
        print("faults: " + self.servers.sh("start"), flush=True)
        for i in range(self.a.workers):
            self.spawn(i)

    def finish(self):
        super().finish()
        self.servers.sh("stop", check_rc=False)

    # ---- helpers -----------------------------------------------------------------------------
    def settle(self, old, give_up_s=15.0):
        """Waits until the Sentinels name a primary other than `old` that says ROLE master and
        `old` (if it runs) no longer does; the new primary's port, or None on time-out."""
        give_up = faults.now() + int(give_up_s * 1e9)
        while faults.now() < give_up:
            new = self.servers.named_primary()
            if new is not None and new != old and self.servers.role(new) == "master" and \
                    self.servers.role(old) != "master":
                return new
            self.sleep(0.05)
        print("faults: no failover away from %d within %.0f s" % (old, give_up_s), flush=True)
        return None

    def healthy(self, give_up_s=15.0):
        """Waits until the current primary has its replica online again (the next fault needs a
        replica to promote)."""
        give_up = faults.now() + int(give_up_s * 1e9)
        while faults.now() < give_up:
            p = self.servers.named_primary()
            if p is not None and self.servers.replica_linked(p):
                return
            self.sleep(0.1)

    def server_fault(self, kind, t0, old, new):
        t1 = faults.now()
        self.log("L", t0, t1)
        self.log("R", t0, t1)
        self.log("F", kind, t0, t1, old)
        self.healthy()

    # ---- faults ------------------------------------------------------------------------------
    def failover(self):
        self.holder()
        old = self.servers.named_primary()
        if old is None:
            return
        t0 = faults.now()
        self.servers.cli(self.servers.sentinels[self.rng.randrange(3)], "SENTINEL", "FAILOVER",
                         MASTER)
        new = self.settle(old)
        self.server_fault("failover", t0, old, new)

    def primary_kill(self):
        self.holder()
        old = self.servers.named_primary()
        if old is None:
            return
        t0 = faults.now()
        os.kill(self.servers.pid(old), signal.SIGKILL)
        new = self.settle(old)
        if new is not None:  # back empty, as a replica of the new primary (what Sentinel does)
            self.servers.sh("server-start", self.servers.name(old), str(new))
        self.server_fault("primary_kill", t0, old, new)

    def primary_pause(self):
        self.holder()
        old = self.servers.named_primary()
        if old is None:
            return
        pid = self.servers.pid(old)
        t0 = faults.now()
        os.kill(pid, signal.SIGSTOP)
        try:
            give_up = faults.now() + 15 * 10**9
            while faults.now() < give_up:  # paused until the Sentinels promoted the replica
                new = self.servers.named_primary()
                if new is not None and new != old:
                    break
                self.sleep(0.05)
            self.sleep(0.5)
        finally:
            os.kill(pid, signal.SIGCONT)
        new = self.settle(old)  # ... and demoted the old primary
        self.server_fault("primary_pause", t0, old, new)

    def worker_kill(self):
        self.kill_worker()

    def schedule(self):
        return [getattr(self, k) for k in self.a.kinds]


def failover_figures(leases, events):
    """kind -> {faults, kept, lost, no_holder, takeover_ms[], p50, p99} from the F events: a
    holder at the fault's start kept its lease through the fault, or lost it; for a lost one the
    time from the fault's start to the next term's start."""
    out = {}
    for e in events:
        if e[0] != "F":
            continue
        kind, t0, t1 = e[1], int(e[2]), int(e[3])
        f = out.setdefault(kind, {"faults": 0, "kept": 0, "lost": 0, "no_holder": 0,
                                  "takeover_ms": []})
        f["faults"] += 1
        held = [x for x in leases if x["start"] <= t0 < x["eff_end"]]
        if not held:
            f["no_holder"] += 1
            continue
        h = held[0]
        if h["eff_end"] > t1 or (h["eff_end"] == h.get("end") and h.get("why") == "done"):
            f["kept"] += 1
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
    ap.add_argument("--worker", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--lease-ms", type=int, default=1500)
    ap.add_argument("--max-steps", type=int, default=60)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--wait", type=int, default=0, help="1: ?wait_replicas=1 (WAIT per grant)")
    ap.add_argument("--base", type=int, default=None, help="first port of the private servers")
    ap.add_argument("--min-terms", type=int, default=2)
    a = ap.parse_args()
    a.kinds = [k for k in a.kinds.split(",") if k]
    bad = [k for k in a.kinds if k not in KINDS]
    if bad:
        ap.error("unknown kinds %s (known: %s)" % (bad, ", ".join(KINDS)))
    a.seed = int(time.time()) if a.seed is None else a.seed
    a.base = a.base or 24000 + (os.getpid() % 40) * 20
    # what faults.Run reads
    a.store, a.scenario, a.redis_persist, a.group, a.extend = "redis", "mixed", "none", 0, False
    a.partition, a.server_faults, a.max_server_faults = "proxy", False, 0
    return a


def report(a, label, t_start):
    """Adds the failover figures (per fault kind) to check.py's result.json and prints them with
    the verdict counts; shared by topology_redis_cluster.py."""
    leases, writes, events, _ = check.load(a.out)
    check.analyse(leases, writes, events, a.lease_ms * 10**6)
    path = os.path.join(a.out, "result.json")
    with open(path) as f:
        r = json.load(f)
    r["failover"] = failover_figures(leases, events)
    r["overlaps_in_failover"] = r.get("overlaps_data_loss", 0)
    r["topology"] = label
    r["wall_s"] = round(time.monotonic() - t_start, 1)
    with open(path, "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)
    for kind, f in sorted(r["failover"].items()):
        print("failover %s %s: %d faults, holder kept the lease %d, lost %d, no holder %d, "
              "takeover p50 %s ms p99 %s ms" % (label, kind, f["faults"], f["kept"], f["lost"],
                                                f["no_holder"], f["takeover_p50_ms"],
                                                f["takeover_p99_ms"]))
    print("faults: %s terms %d, overlaps in failover windows %d (stop misses %d), fence "
          "violations %d, token reuse %d, order %d; wall time %.1f s"
          % (label, r["terms"], r["overlaps_in_failover"], r.get("stop_misses_data_loss", 0),
             r["fence_violations"], r["token_reuse"], r["token_order"], r["wall_s"]))


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    a = options()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    label = "redis-sentinel%s" % ("+wait" if a.wait else "")
    print("faults: topology=%s seconds=%d workers=%d lease=%dms seed=%d base=%d kinds=%s out=%s"
          % (label, a.seconds, a.workers, a.lease_ms, a.seed, a.base, ",".join(a.kinds), a.out),
          flush=True)
    run = SentinelRun(a)
    t_start = time.monotonic()
    try:
        run.start()
        run.inject()
    finally:
        run.finish()
    need = ["faults", "takeovers"] + a.kinds
    rc = subprocess.call([sys.executable, os.path.join(HERE, "check.py"), "--dir", a.out,
                          "--lease-ms", str(a.lease_ms), "--label", label,
                          "--min-terms", str(a.min_terms), "--require", ",".join(need)])
    report(a, label, t_start)
    return rc


if __name__ == "__main__":
    sys.exit(main())
