"""One replica of a judged election through the Python package (capi_judge starts three, with
the arguments of capi_replica.c):  replica.py URI LOCK TERMS HOLD_MS NODE LOG
Leads TERMS terms of LOCK (each holds HOLD_MS, or until ctx.stopped) and writes one line per
term to LOG: "<fencing token> <start ns> <end ns> <stopped 0|1>", times on CLOCK_MONOTONIC (the
judge's clock too). Exits 0 after TERMS terms, 2 on a store error, 3 when 60 s passed first."""

import sys
import time

import leader


def main(uri, lock, terms, hold_ms, node, log_path):
    elector = leader.Elector(uri, wait=3.0, lease=2.0, auto_extend=True, node_id=node)
    give_up = time.monotonic() + 60
    led = 0
    with open(log_path, "w") as log:
        while led < int(terms) and time.monotonic() < give_up:
            try:
                with elector.lead(lock) as ctx:
                    if not ctx:
                        continue
                    start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                    stopped = ctx.stopped.wait(int(hold_ms) / 1000.0) or ctx.is_stopped()
                    end = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            except leader.LeaderError as e:
                print(f"replica {node}: {e.code}: {e}", file=sys.stderr)
                return 2
            log.write(f"{ctx.fencing_token} {start} {end} {int(stopped)}\n")
            log.flush()
            led += 1
            time.sleep(0.03)  # let the others in
    return 0 if led == int(terms) else 3


if __name__ == "__main__":
    if len(sys.argv) != 7:
        print("usage: replica.py URI LOCK TERMS HOLD_MS NODE LOG", file=sys.stderr)
        sys.exit(64)
    sys.exit(main(*sys.argv[1:]))
