#!/usr/bin/python3
"""Failover of PostgreSQL primary + streaming standby (issue 15, docs/faults.md "PostgreSQL
failover").

    tests/faults/topology_postgres.py --worker W --out DIR --commit async|sync [--seconds 25]
        [--failovers N] [--interval-s 7] [--lag-ms-max 2000] [--workers 4] [--lease-ms 1500]
        [--seed N]
    ctest -R faults.postgres-standby (one failover each); the long form: tests/faults/run.sh --soak
    --stores "postgres-standby-async postgres-standby-sync" (soak.py), or --soak here

A private pair (scripts/pg-standby.sh with LE_PG_HA_DIR=/tmp/leader-faults-pg-XXXX, removed at
the end, its logs copied to OUT/pg-logs; kernel-chosen ports; PIDs in that directory): node a
primary, node b its standby, asynchronous (`--commit async`: nobody waits for the standby) or
synchronous (`--commit sync`: synchronous_standby_names='*', synchronous_commit=on; `--commit
remote_apply` the same with remote_apply). --workers fault_workers elect on one lock
through postgresql://127.0.0.1:A,127.0.0.1:B/leader_test?target_session_attrs=read-write (libpq
picks the primary). Every --interval-s seconds, up to --failovers times, a failover while a worker
holds the lease:
  1. the standby lags: the packets of its replication connection are dropped (nft, root) for
     0..--lag-ms-max ms (a slow or partitioned standby; in sync mode the primary's commits wait
     meanwhile); without nft its walreceiver is paused instead, which loses nothing,
  2. the primary is killed: kill -9 of its postmaster and every process it forked (a crash),
  3. the standby is promoted (pg_ctl promote) while its replication connection is still cut,
     then the drop rules go,
  4. the old primary is re-made a standby of the new one (pg_basebackup -R) and started, so the
     next failover goes the other way (in sync mode writes wait for it: the cost of sync).
Events: "F failover t_lag t_kill t_promoted t_rebuilt" and, in async mode only, "L t_lag
t_promoted" (check.py: leases forgotten by the promotion explain overlaps and stop misses whose
successor started up to a lease later; reported as data loss, never hidden). The verdict is
check.py's, strict: 0 fence violations, 0 token reuse, 0 token-order errors in both modes; in
sync mode also 0 overlaps and 0 stop misses (an acknowledged grant or renewal is on the standby).
Added to result.json: failover = {faults, kept, lost, no_holder, takeover_ms[], p50, p99} (fault
start, the kill, to the next term's start, for the faults where the holder lost its lease),
commit, and the failover timings (kill to promoted, promoted to rebuilt).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import check
import faults

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
PAIR = os.path.join(REPO, "scripts", "pg-standby.sh")


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(int(d))
        except (OSError, IndexError, ValueError):
            pass
    return out


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def nft_ok():
    if os.getuid() != 0 or not shutil.which("nft"):
        return False
    t = "lfpgchk%d" % os.getpid()
    ok = subprocess.run(["nft", "add", "table", "inet", t], capture_output=True).returncode == 0
    subprocess.run(["nft", "delete", "table", "inet", t], capture_output=True)
    return ok


class Pair:
    """A private scripts/pg-standby.sh pair under OUT/pg."""

    def __init__(self, out, commit):
        # Under /tmp, not OUT: the postgres user must reach it (a clone under /root would not
        # do); the servers' logs are copied to OUT/pg-logs at the end.
        self.out = out
        self.dir = tempfile.mkdtemp(prefix="leader-faults-pg-", dir="/tmp")
        os.chmod(self.dir, 0o777)
        self.ports = free_ports(2)
        sync = "off" if commit == "async" else "on"
        self.env = dict(os.environ, LE_PG_HA_DIR=self.dir, LE_PIDS=self.dir,
                        LE_PG_HA_PIDS=self.dir, LE_PG_HA_SYNC=sync,
                        LE_PG_HA_COMMIT="remote_apply" if commit == "remote_apply" else "on",
                        LE_PG_HA_PORTS="%d,%d" % tuple(self.ports))
        self.primary = "a"

    def sh(self, *args):
        r = subprocess.run([PAIR] + list(args), env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("pg-standby.sh %s: %s %s" % (" ".join(args), r.stdout, r.stderr))
        return r.stdout.strip()

    @property
    def standby(self):
        return "b" if self.primary == "a" else "a"

    def pid(self, node):
        with open(os.path.join(self.dir, node, "postmaster.pid")) as f:
            return int(f.readline())

    def uri(self):
        return ("postgresql://postgres@127.0.0.1:%d,127.0.0.1:%d/leader_test"
                "?target_session_attrs=read-write&table_prefix=faults_&connect_timeout=3s"
                % tuple(self.ports))

    def replication_port(self):
        """The standby's local port of its replication connection (pg_stat_replication)."""
        r = subprocess.run(["/usr/lib/postgresql/15/bin/psql", "-XAtq", "-h", "127.0.0.1", "-p",
                            str(self.port(self.primary)), "-U", "postgres", "-d", "postgres",
                            "-c", "SELECT client_port FROM pg_stat_replication LIMIT 1"],
                           capture_output=True, text=True, timeout=10)
        out = r.stdout.strip()
        return int(out) if out.isdigit() else None

    def port(self, node):
        return self.ports[0 if node == "a" else 1]

    def walreceiver(self):
        pm = self.pid(self.standby)
        for c in children(pm):
            if "walreceiver" in cmdline(c):
                return c
        return None

    def kill_primary(self):
        pm = self.pid(self.primary)
        procs = [pm] + children(pm)
        for p in procs:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        give_up = time.monotonic() + 10
        while any(os.path.exists("/proc/%d" % p) and "postgres" in cmdline(p) for p in procs):
            if time.monotonic() > give_up:
                break
            time.sleep(0.01)

    def promote(self):
        self.sh("promote", self.standby)
        self.primary = self.standby

    def rebuild_standby(self):
        self.sh("rebuild", self.standby)


class PgRun(faults.Run):
    def __init__(self, a):
        super().__init__(a)
        self.network = True
        self.durable = True
        self.pair = Pair(a.out, a.commit)
        self.lock = "faults-pg-%s-%d-%d" % (a.commit, os.getpid(), int(time.time()))
        self.timings = []  # (kill -> promoted ms, promoted -> rebuilt ms, lag ms)
        self.table = "lfpg%d" % os.getpid()
        self.nft = nft_ok()
        if not self.nft:
            print("faults: no nft here (root and nftables needed): the standby's lag is a "
                  "paused walreceiver, which loses nothing")

    def spawn(self, i):
        left = max(1, (self.end - faults.now()) // 10**9)
        cmd = [self.a.worker, "--uri", self.pair.uri(), "--lock", self.lock, "--dir", self.a.out,
               "--id", str(i), "--lease-ms", str(self.a.lease_ms), "--seconds", str(left),
               "--max-steps", str(self.a.max_steps)]
        with open(os.path.join(self.a.out, "w%d.log" % i), "a") as err:
            self.procs[i] = subprocess.Popen(cmd, stdout=err, stderr=err)

    def start(self):
        print("faults: " + self.pair.sh("start"), flush=True)
        for i in range(self.a.workers):
            self.spawn(i)

    def finish(self):
        try:
            super().finish()
        finally:
            subprocess.run([PAIR, "stop"], env=self.pair.env, capture_output=True)
            logs = os.path.join(self.a.out, "pg-logs")
            os.makedirs(logs, exist_ok=True)
            for f in os.listdir(self.pair.dir):
                if f.endswith(".log"):
                    shutil.copy(os.path.join(self.pair.dir, f), logs)
            shutil.rmtree(self.pair.dir, ignore_errors=True)

    def cut_replication(self):
        """nft: drops the packets of the standby's replication connection both ways, so the WAL
        sent meanwhile never reaches it (a SIGSTOPped walreceiver would still find it in its
        socket buffer). Returns an undo function; without nft, pauses the walreceiver instead
        (the standby then catches up, so nothing is lost: said in the output)."""
        cport = self.pair.replication_port()
        pport = self.pair.port(self.pair.primary)
        if self.nft and cport:
            rules = ("table inet %s {\n chain out { type filter hook output priority 0;"
                     " policy accept;\n  tcp sport %d tcp dport %d drop\n"
                     "  tcp sport %d tcp dport %d drop\n }\n}\n"
                     % (self.table, pport, cport, cport, pport))
            subprocess.run(["nft", "-f", "-"], input=rules, text=True, check=True)
            return lambda: subprocess.run(["nft", "delete", "table", "inet", self.table],
                                          capture_output=True)
        wr = self.pair.walreceiver()
        if wr:
            os.kill(wr, signal.SIGSTOP)

        def resume():
            try:
                os.kill(wr, signal.SIGCONT)
            except (ProcessLookupError, TypeError):
                pass
        return resume

    def failover(self):
        self.holder()  # strike while someone holds the lease
        lag = self.rng.uniform(0, self.a.lag_ms_max / 1000.0)
        t_lag = faults.now()
        undo = self.cut_replication()
        try:
            time.sleep(lag)
            t_kill = faults.now()
            self.pair.kill_primary()
            self.pair.promote()  # with the replication connection still cut
            t_promoted = faults.now()
        finally:
            undo()
        if self.a.commit == "async":
            self.log("L", t_lag, t_promoted)
        self.pair.rebuild_standby()
        t_rebuilt = faults.now()
        self.log("F", "failover", t_lag, t_kill, t_promoted, t_rebuilt)
        self.timings.append({"lag_ms": round(lag * 1000), "kill_to_promoted_ms":
                             round((t_promoted - t_kill) / 1e6, 1), "promoted_to_rebuilt_ms":
                             round((t_rebuilt - t_promoted) / 1e6, 1)})

    def inject(self):
        self.sleep(3.0)
        done = 0
        while done < self.a.failovers and faults.now() < self.end - self.a.tail_s * 10**9:
            self.count("failover")
            self.failover()
            done += 1
            if done < self.a.failovers:
                self.sleep(self.a.interval_s)
        while faults.now() < self.end:
            self.sleep(0.2)


def failover_figures(leases, events):
    """{faults, kept, lost, no_holder, takeover_ms[], p50, p99}: per F event, was the lease held
    when the fault began (the standby's lag) kept through the failover (its holder's term went on
    past the rebuild) or lost, and how long from the kill of the primary to the next term's
    start (also when nobody held the lease at the fault: in sync mode the holder often stops
    during the lag, its renewals waiting for the cut-off standby)."""
    f = {"faults": 0, "kept": 0, "lost": 0, "no_holder": 0, "takeover_ms": []}
    for e in events:
        if e[0] != "F":
            continue
        t_lag, t_kill, t_rebuilt = int(e[2]), int(e[3]), int(e[5])
        f["faults"] += 1
        held = [x for x in leases if x["start"] <= t_lag < x["eff_end"]]
        if not held:
            f["no_holder"] += 1
        elif held[0]["eff_end"] > t_rebuilt:
            f["kept"] += 1
            continue
        else:
            f["lost"] += 1
        nxt = [x["start"] for x in leases if x["start"] > t_kill]
        if nxt:
            f["takeover_ms"].append(round((min(nxt) - t_kill) / 1e6, 1))
    t = sorted(f["takeover_ms"])
    f["takeover_p50_ms"] = t[len(t) // 2] if t else None
    f["takeover_p99_ms"] = t[min(len(t) - 1, int(len(t) * 0.99))] if t else None
    return f


def options():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", choices=["async", "sync", "remote_apply"], default="async")
    ap.add_argument("--seconds", type=int, default=25)
    ap.add_argument("--failovers", type=int, default=1)
    ap.add_argument("--interval-s", type=float, default=7.0)
    ap.add_argument("--lag-ms-max", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--lease-ms", type=int, default=1500)
    ap.add_argument("--max-steps", type=int, default=60)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--min-terms", type=int, default=2)
    ap.add_argument("--soak", action="store_true",
                    help="the long form: 40 failovers, about 6 minutes")
    a = ap.parse_args()
    if a.soak:
        a.failovers = max(a.failovers, 40)
        a.seconds = max(a.seconds, int(a.failovers * (a.interval_s + 3)) + 15)
    a.tail_s = 6  # after the last failover: a takeover and a term on the new primary
    a.seed = int(time.time()) if a.seed is None else a.seed
    # what faults.Run reads
    a.store, a.scenario, a.redis_persist, a.group, a.extend = "postgres", "failover", "none", 0, False
    a.partition, a.server_faults, a.max_server_faults = "proxy", False, 0
    return a


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    a = options()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    print("faults: postgres primary+standby commit=%s seconds=%d failovers=%d workers=%d "
          "lease=%dms lag<=%dms seed=%d out=%s" % (a.commit, a.seconds, a.failovers, a.workers,
                                                  a.lease_ms, a.lag_ms_max, a.seed, a.out),
          flush=True)
    run = PgRun(a)
    t_start = time.monotonic()
    try:
        run.start()
        run.inject()
    finally:
        run.finish()
    label = "postgres-standby/%s" % a.commit
    rc = subprocess.call([sys.executable, os.path.join(HERE, "check.py"), "--dir", a.out,
                          "--lease-ms", str(a.lease_ms), "--label", label,
                          "--min-terms", str(a.min_terms),
                          "--require", "faults,takeovers,failover"])
    leases, writes, events, _ = check.load(a.out)
    check.analyse(leases, writes, events, a.lease_ms * 10**6)
    path = os.path.join(a.out, "result.json")
    with open(path) as f:
        r = json.load(f)
    r["failover"] = failover_figures(leases, events)
    r["failover_timings"] = run.timings
    r["commit"] = a.commit
    r["wall_s"] = round(time.monotonic() - t_start, 1)
    with open(path, "w") as f:
        json.dump(r, f, indent=1, sort_keys=True)
    f = r["failover"]
    print("failover postgres-standby/%s: %d failovers, holder kept the lease %d, lost %d, no "
          "holder %d; overlaps %d (data loss %d, unexplained %d), token reuse %d, fence "
          "violations %d; takeover after the kill p50 %s ms p99 %s ms"
          % (a.commit, f["faults"], f["kept"], f["lost"], f["no_holder"], r["overlaps"],
             r["overlaps_data_loss"], r["overlaps_unexplained"], r["token_reuse"],
             r["fence_violations"], f["takeover_p50_ms"], f["takeover_p99_ms"]))
    print("faults: postgres-standby/%s wall time %.1f s" % (a.commit, r["wall_s"]))
    return rc


if __name__ == "__main__":
    sys.exit(main())
