#!/usr/bin/python3
"""Tests of check.py on made-up ledgers: every verdict fails when it should, and a run that proves
nothing (no terms, no fault, no takeover, no extend, never two group holders) fails too.

    tests/faults/check_test.py        (ctest: faults.checker)
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MS = 10**6


def lease(token, pid, start, end, slot=0, stop=0, why="done"):
    """A, W and E lines of one lease that writes every 100 ms of [start, end) (times in ms)."""
    lines = ["A %d %d 0 %d %d %d %d" % (token, pid, (start - 10) * MS, start * MS,
                                         (end + 500) * MS, slot)]
    t = start + 50
    while t < end:
        lines.append("W %d %d %d %d 1" % (token, pid, (t - 20) * MS, t * MS))
        t += 100
    lines.append("E %d %d %d %d %s" % (token, pid, end * MS, stop * MS, why))
    return lines


def good():
    out = []
    for k in range(4):  # four terms one after the other, each successor after the stop
        out += lease(k + 1, 100 + k % 2, 1000 * k, 1000 * k + 600)
    return out


def verdict(ledger, events="", faults="pause_worker 1\n", extra=()):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "ledger"), "w") as f:
            f.write("\n".join(ledger) + "\n")
        with open(os.path.join(d, "events"), "w") as f:
            f.write(events)
        with open(os.path.join(d, "faults"), "w") as f:
            f.write(faults)
        r = subprocess.run([sys.executable, os.path.join(HERE, "check.py"), "--dir", d] +
                           list(extra), stdout=subprocess.PIPE, text=True, check=False)
        return r.returncode, r.stdout.strip().splitlines()[-1]


def main():
    # token 2 starts at 300 while token 1 still writes (its checks at 330, 430, 530 are misses)
    overlap = (lease(1, 100, 0, 600) + lease(2, 200, 300, 900) + lease(3, 101, 1000, 1600) +
               lease(4, 100, 2000, 2600))
    # the same takeover, but token 1 was SIGSTOPped at 240 with a write in flight (checked at
    # 230), resumed at 950: the write lands late and the fence rejects it; no check after 300
    paused = (lease(1, 100, 0, 250)[:-1] + ["W 1 100 %d %d 0" % (230 * MS, 960 * MS),
                                            "E 1 100 %d %d stop" % (970 * MS, 955 * MS)] +
              lease(2, 200, 300, 900) + lease(3, 101, 1000, 1600) + lease(4, 100, 2000, 2600))
    group3 = (lease(1, 100, 0, 900, slot=0) + lease(2, 101, 100, 900, slot=1) +
              lease(3, 102, 200, 900, slot=2) + lease(4, 103, 1000, 1500, slot=0))
    group2 = (lease(1, 100, 0, 900, slot=0) + lease(2, 101, 100, 900, slot=1) +
              lease(3, 102, 1000, 1500, slot=0))
    cases = [
        ("a clean run passes", good(), "", "pause_worker 1\n", [], 0),
        ("no lease at all fails", [], "", "pause_worker 1\n", [], 1),
        ("one term fails (no takeover)", lease(1, 100, 0, 600), "", "pause_worker 1\n", [], 1),
        ("no fault injected fails", good(), "", "", [], 1),
        ("a required fault kind missing fails", good(), "", "pause_worker 1\n",
         ["--require", "faults,takeovers,restart_server"], 1),
        ("no extend() in an extend run fails", good(), "", "pause_worker 1\n",
         ["--require", "faults,extends"], 1),
        ("an overlap of an unpaused holder fails", overlap, "", "pause_worker 1\n", [], 1),
        ("a paused holder's late in-flight write passes", paused,
         "P 100 %d %d\n" % (240 * MS, 950 * MS), "pause_worker 1\n", [], 0),
        ("the same without the pause event fails", paused, "", "pause_worker 1\n", [], 1),
        ("a token granted twice fails", good() + lease(2, 300, 5000, 5300), "",
         "pause_worker 1\n", [], 1),
        ("3 holders in a group of 2 fail", group3, "", "pause_worker 1\n",
         ["--group", "2", "--require", "faults,concurrent_holders"], 1),
        ("2 holders in a group of 2 pass", group2, "", "pause_worker 1\n",
         ["--group", "2", "--require", "faults,concurrent_holders"], 0),
        ("a group run that never had 2 holders fails", good(), "", "pause_worker 1\n",
         ["--group", "2", "--require", "faults,concurrent_holders"], 1),
    ]
    failed = 0
    for name, ledger, events, faults, extra, want in cases:
        rc, last = verdict(ledger, events, faults, extra)
        ok = (rc == 0) == (want == 0)
        failed += not ok
        print("%s: %s (exit %d: %s)" % ("ok" if ok else "WRONG", name, rc, last))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
