import threading
import time

import pytest

import leader


def test_lead_holds_then_another_replica_is_not_elected_then_release(store_uri, lock):
    a = leader.Elector(store_uri, wait=0, lease=10.0, node_id="a")
    b = leader.Elector(store_uri, wait=0, lease=10.0, node_id="b")
    with a.lead(lock) as ctx:
        assert ctx
        assert ctx.fencing_token > 0
        assert ctx.slot == 0
        assert ctx.node_id == "a"
        assert not ctx.stopped.is_set()
        with b.lead(lock) as other:
            assert not other
            assert other.status == "not_elected"
            assert other.fencing_token == 0
    with b.lead(lock) as ctx:  # released on exit
        assert ctx


def test_tokens_increase_across_terms(store_uri, lock):
    e = leader.Elector(store_uri, wait=0, lease=10.0)
    tokens = [e.run_if_leader(lock, lambda ctx: ctx.fencing_token).value for _ in range(5)]
    assert tokens == sorted(set(tokens))


def test_run_if_leader_result_shape(store_uri, lock):
    a = leader.Elector(store_uri, wait=0, lease=10.0)
    assert a.run_if_leader(lock, lambda ctx: "done")[:2] == (True, "done")
    with a.lead(lock):
        r = leader.Elector(store_uri, wait=0).run_if_leader(lock, lambda ctx: "never")
    assert (r.ran, r.value, r.fencing_token) == (False, None, 0)


def test_an_exception_releases_as_failed_and_propagates(store_uri, lock):
    e = leader.Elector(store_uri, wait=0, lease=10.0)
    with pytest.raises(ZeroDivisionError):
        with e.lead(lock) as ctx:
            assert ctx
            1 / 0
    with e.lead(lock) as ctx:  # the lock was released
        assert ctx


def test_stopped_fires_when_the_lease_runs_out(store_uri, lock):
    e = leader.Elector(store_uri, wait=0, lease=1.0, auto_extend=False)
    with e.lead(lock) as ctx:
        assert ctx
        assert ctx.stopped.wait(3.0), "the stop signal did not fire before the lease ran out"
        assert ctx.is_stopped()
        assert ctx.remaining == 0.0


def test_extend_keeps_the_lease(store_uri, lock):
    e = leader.Elector(store_uri, wait=0, lease=1.0)
    with e.lead(lock) as ctx:
        ctx.extend(10.0)
        assert ctx.remaining > 2.0
        assert not ctx.stopped.wait(1.5)


def test_waiting_replica_gets_the_lock_after_release(store_uri, lock):
    a = leader.Elector(store_uri, wait=0, lease=10.0)
    b = leader.Elector(store_uri, wait=5.0, lease=10.0)
    got = []
    with a.lead(lock) as ctx:
        t = threading.Thread(target=lambda: got.append(b.run_if_leader(lock, lambda c: 1)))
        t.start()  # waits with the GIL released
        time.sleep(0.3)
        assert t.is_alive()
        first = ctx.fencing_token
    t.join(10)
    assert got and got[0].ran and got[0].fencing_token > first


def test_cancel_ends_a_wait(store_uri, lock):
    a = leader.Elector(store_uri, wait=0, lease=10.0)
    b = leader.Elector(store_uri, wait=30.0, lease=10.0)
    cancel = leader.Cancel()
    with a.lead(lock):
        threading.Timer(0.2, cancel.cancel).start()
        started = time.monotonic()
        with b.lead(lock, cancel=cancel) as ctx:
            assert not ctx and ctx.status == "cancelled"
        assert time.monotonic() - started < 5.0


def test_group_slots(store_uri, lock):
    es = [leader.Elector(store_uri, wait=0, lease=10.0, max_leaders=2) for _ in range(3)]
    with es[0].lead(lock) as x, es[1].lead(lock) as y, es[2].lead(lock) as z:
        assert x and y and not z
        assert {x.slot, y.slot} == {0, 1}


def test_once_decorator(store_uri, lock):
    calls = []

    @leader.once(lock, store=store_uri, wait=0, lease=10.0)
    def nightly(n):
        calls.append(n)
        return n * 2

    first = nightly(21)
    assert first.ran and first.value == 42 and first.fencing_token > 0
    assert nightly.__name__ == "nightly"
    other = leader.Elector(store_uri, wait=0, lease=10.0)
    with other.lead(lock):
        assert nightly(1) == (False, None, 0)
    assert calls == [21]

    @leader.once(lock, elector=other, with_context=True)
    def tokened(ctx):
        return ctx.fencing_token

    r = tokened()
    assert r.ran and r.value == r.fencing_token > first.fencing_token
