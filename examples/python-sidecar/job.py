#!/usr/bin/env python3
"""A replica's nightly job, led through the `leader serve` sidecar (see leader_client.py).

    job.py <sidecar-url> <replica> [--lock NAME] [--ttl 1s] [--steps N] [--step-s S]

Output: RAN replica=<r> token=<t> steps=<n> | LOST replica=<r> after=<n> | SKIPPED replica=<r>
"""
import argparse
import time

from leader_client import Sidecar

parser = argparse.ArgumentParser()
parser.add_argument("url")
parser.add_argument("replica")
parser.add_argument("--lock", default="nightly-report")
parser.add_argument("--ttl", default="1s")
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--step-s", type=float, default=0.25)
args = parser.parse_args()

with Sidecar(args.url).lease(args.lock, ttl=args.ttl, node_id=args.replica) as lease:
    if lease is None:
        print(f"SKIPPED replica={args.replica}", flush=True)
    else:
        done = 0
        for _ in range(args.steps):  # longer than the ttl: the client renews it meanwhile
            if lease.lost.wait(args.step_s):
                break
            done += 1
        if lease.lost.is_set():
            print(f"LOST replica={args.replica} after={done}", flush=True)
        else:
            print(f"RAN replica={args.replica} token={lease.fencing_token} steps={done}", flush=True)
