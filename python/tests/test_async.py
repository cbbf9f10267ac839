import asyncio
import time

import pytest

import leader


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_async_lead_falsy_and_release(async_uri, lock):
    async def main():
        a = leader.Elector(async_uri, wait=0, lease=10.0)
        b = leader.Elector(async_uri, wait=0, lease=10.0)
        async with a.lead_async(lock) as ctx:
            assert ctx and ctx.fencing_token > 0
            async with b.lead_async(lock) as other:
                assert not other and other.status == "not_elected"
            first = ctx.fencing_token
        async with b.lead_async(lock) as ctx:
            assert ctx and ctx.fencing_token > first

    run(main())


def test_async_wait_does_not_block_the_loop(async_uri, lock):
    async def main():
        a = leader.Elector(async_uri, wait=0, lease=10.0)
        b = leader.Elector(async_uri, wait=10.0, lease=10.0)
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        async with a.lead_async(lock) as held:
            t = asyncio.ensure_future(ticker())

            async def second():
                async with b.lead_async(lock) as ctx:
                    return ctx.fencing_token

            waiting = asyncio.ensure_future(second())
            await asyncio.sleep(0.5)
            assert not waiting.done() and ticks >= 20
            first = held.fencing_token
        assert await waiting > first
        t.cancel()

    run(main())


def test_async_stopped_is_an_asyncio_event(async_uri, lock):
    async def main():
        e = leader.Elector(async_uri, wait=0, lease=1.0, auto_extend=False)
        async with e.lead_async(lock) as ctx:
            assert isinstance(ctx.stopped, asyncio.Event)
            await asyncio.wait_for(ctx.stopped.wait(), 3.0)

    run(main())


def test_async_exception_releases(async_uri, lock):
    async def main():
        e = leader.Elector(async_uri, wait=0, lease=10.0)
        with pytest.raises(KeyError):
            async with e.lead_async(lock) as ctx:
                assert ctx
                raise KeyError("x")
        async with e.lead_async(lock) as ctx:
            assert ctx

    run(main())


def test_async_task_cancellation_ends_the_wait(async_uri, lock):
    async def main():
        a = leader.Elector(async_uri, wait=0, lease=10.0)
        b = leader.Elector(async_uri, wait=30.0, lease=10.0)
        async with a.lead_async(lock):

            async def second():
                async with b.lead_async(lock):
                    pass

            task = asyncio.ensure_future(second())
            await asyncio.sleep(0.2)
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert time.monotonic() - started < 5.0

    run(main())
