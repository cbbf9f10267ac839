"""``async with elector.lead_async(name)``: leader_acquire_async hands the outcome to the loop.

On Redis the wait holds no thread at all; on the other stores it runs on the library's pool.
The release runs in the loop's default executor (a store call must not block the loop).
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any, Optional, Set

from ._context import Context
from ._errors import error
from ._ffi import ffi, lib, text

if TYPE_CHECKING:
    from ._elector import Cancel, Elector

# Waiters whose callback has not run yet (their handle must stay alive until it does).
_pending: Set["_Waiter"] = set()
_pending_lock = threading.Lock()


class _Waiter:
    __slots__ = ("loop", "future", "cancel", "handle", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop, cancel: "Cancel") -> None:
        self.loop = loop
        self.future: asyncio.Future = loop.create_future()
        self.cancel = cancel  # must live until the callback ran
        self.handle = ffi.new_handle(self)

    def settle(self, status: int, lease: Any, message: str) -> None:
        if self.future.cancelled():
            if lease is not None:
                self.loop.run_in_executor(None, lib.leader_lease_release, lease, False)
            return
        self.future.set_result((status, lease, message))


@ffi.callback("void(leader_status, leader_lease*, const char*, void*)")
def _acquired(status: int, lease: Any, message: Any, user: Any) -> None:
    waiter: _Waiter = ffi.from_handle(user)
    with _pending_lock:
        _pending.discard(waiter)
    held = None if lease == ffi.NULL else lease
    try:
        waiter.loop.call_soon_threadsafe(waiter.settle, status, held, text(message))
    except RuntimeError:  # the loop is closed: nobody will use the lease
        if held is not None:
            threading.Thread(target=lib.leader_lease_release, args=(held, False)).start()


class AsyncContext(Context):
    """A Context whose ``stopped`` is an asyncio.Event fed by ``loop.add_reader`` on the stop
    descriptor (no thread)."""

    __slots__ = ("_loop", "_fd")

    def __init__(self, ctx: Any = None, status: str = "ok", loop: Any = None) -> None:
        super().__init__(ctx, status)
        self._loop = loop
        self._fd = -1

    @property
    def stopped(self) -> asyncio.Event:  # type: ignore[override]
        """Set (on the loop) when the lease's stop signal fires."""
        if self._stopped is None:
            event = asyncio.Event()
            self._stopped = event
            if self._ctx is not None:
                if lib.leader_context_stopped(self._ctx):
                    event.set()
                    return event
                fd = lib.leader_context_stop_fd(self._ctx)
                if fd < 0:
                    raise error(10)

                def fired() -> None:
                    event.set()
                    self._loop.remove_reader(fd)
                    self._fd = -1

                self._fd = fd
                self._loop.add_reader(fd, fired)
        return self._stopped  # type: ignore[no-any-return]

    def _close(self) -> None:
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            self._fd = -1
        super()._close()


class AsyncLead:
    """The async context manager of ``Elector.lead_async``."""

    def __init__(self, elector: "Elector", name: str, cancel: Optional["Cancel"]) -> None:
        self._elector = elector
        self._name = name.encode()
        self._cancel = cancel
        self._lease: Any = None
        self._ctx: Optional[AsyncContext] = None

    async def __aenter__(self) -> AsyncContext:
        from ._elector import Cancel

        loop = asyncio.get_running_loop()
        cancel = self._cancel if self._cancel is not None else Cancel()
        waiter = _Waiter(loop, cancel)
        with _pending_lock:
            _pending.add(waiter)
        status = lib.leader_acquire_async(
            self._elector._handle(), self._name, cancel._h, _acquired, waiter.handle
        )
        if status != 0:
            with _pending_lock:
                _pending.discard(waiter)
            raise error(status)
        try:
            status, lease, message = await asyncio.shield(waiter.future)
        except asyncio.CancelledError:
            cancel.cancel()  # ends the wait; a lease that won the race is released
            status, lease, _ = await waiter.future
            if lease is not None:
                await loop.run_in_executor(None, lib.leader_lease_release, lease, False)
            raise
        if status == 0:
            self._lease = lease
            self._ctx = AsyncContext(lib.leader_lease_context(lease), "ok", loop)
        elif status == 1:
            self._ctx = AsyncContext(None, "not_elected", loop)
        elif status == 2:
            self._ctx = AsyncContext(None, "cancelled", loop)
        else:
            raise error(status, message)
        return self._ctx

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        lease, self._lease = self._lease, None
        if lease is None:
            return
        assert self._ctx is not None
        self._ctx._close()
        loop = asyncio.get_running_loop()
        status, message = await loop.run_in_executor(None, _release, lease, exc_type is not None)
        if status != 0 and exc_type is None:
            raise error(status, message)


def _release(lease: Any, failed: bool) -> Any:
    status = lib.leader_lease_release(lease, failed)
    return status, (text(lib.leader_last_error()) if status != 0 else "")
