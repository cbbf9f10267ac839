import threading
import time

import leader


def wait_for(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


def test_campaign_terms_hand_over_with_increasing_tokens(store_uri, lock):
    events = []
    mu = threading.Lock()

    def replica(name):
        def started(ctx):
            with mu:
                events.append(("start", name, ctx.fencing_token))
            ctx.stopped.wait()

        def stopped():
            with mu:
                events.append(("stop", name, 0))

        e = leader.Elector(store_uri, wait=0, lease=3.0, auto_extend=True, node_id=name)
        return leader.Campaign(e, lock, on_started_leading=started, on_stopped_leading=stopped,
                               retry=0.1, resign_hold_off=0.5)

    a, b = replica("a"), replica("b")
    a.start()
    assert wait_for(lambda: a.is_leader)
    b.start()
    time.sleep(0.3)
    assert not b.is_leader
    assert a.resign()
    assert wait_for(lambda: b.is_leader)
    b.stop()
    a.stop()
    starts = [e for e in events if e[0] == "start"]
    assert [s[1] for s in starts[:2]] == ["a", "b"]
    tokens = [s[2] for s in starts]
    assert tokens == sorted(set(tokens))
    assert ("stop", "a", 0) in events
    # no overlap: the events alternate start/stop
    kinds = [e[0] for e in events]
    assert all(kinds[i] != kinds[i + 1] for i in range(len(kinds) - 1))


def test_campaign_reports_new_leaders(store_uri, lock):
    seen = []
    e = leader.Elector(store_uri, wait=0, lease=3.0, auto_extend=True, node_id="watcher")
    with leader.Campaign(e, lock, on_new_leader=seen.append, retry=0.1) as c:
        assert wait_for(lambda: c.is_leader)
        assert wait_for(lambda: any(h and h[0].node_id == "watcher" for h in seen))
    holder = next(h for h in seen if h)[0]
    assert isinstance(holder, leader.Holder) and holder.fencing_token > 0
