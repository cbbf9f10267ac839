"""The held lease as the work sees it: fencing token, slot, stop signal, extend."""

from __future__ import annotations

import os
import select
import threading
from typing import Any, Optional

from ._errors import check, error
from ._ffi import lib, text


class _StopWatch:
    """A thread that sets ``event`` when the stop descriptor becomes readable; ``close`` ends it
    before the lease (and with it the descriptor) goes away."""

    def __init__(self, fd: int, event: threading.Event) -> None:
        self._fd = fd
        self._event = event
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="leader-stop", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self._fd, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        for fd, _ in poller.poll():
            if fd == self._fd:
                self._event.set()
                return

    def close(self) -> None:
        os.write(self._wake_w, b"x")
        self._thread.join()
        os.close(self._wake_r)
        os.close(self._wake_w)


class Context:
    """What the work holding a lease sees. Falsy when this replica was not elected (another
    replica leads, or the wait was cancelled): then it holds nothing and its token is 0."""

    __slots__ = ("_ctx", "_status", "_token", "_slot", "_stopped", "_watch", "__weakref__")

    def __init__(self, ctx: Any = None, status: str = "ok", group: bool = True) -> None:
        self._ctx = ctx
        self._status = status
        self._token = 0 if ctx is None else -1  # read on first use (or at the release)
        self._slot = -1 if ctx is not None and group else 0
        self._stopped: Any = None
        self._watch: Optional[_StopWatch] = None

    def __bool__(self) -> bool:
        return self._status == "ok"

    def __repr__(self) -> str:
        if self._status != "ok":
            return f"<leader.Context {self._status}>"
        return f"<leader.Context token={self.fencing_token} slot={self.slot}>"

    def _held(self) -> Any:
        if self._ctx is None:
            raise error(12, "the lease is not held" if self else "this replica was not elected")
        return self._ctx

    @property
    def status(self) -> str:
        """'ok' when elected, else 'not_elected' or 'cancelled'."""
        return self._status

    @property
    def fencing_token(self) -> int:
        """Strictly increasing per lock: pass it to the resource so that it refuses stale
        writers. 0 when not elected."""
        if self._token < 0:
            self._token = int(lib.leader_context_fencing_token(self._ctx))
        return self._token

    @property
    def slot(self) -> int:
        """The slot of a group lease (max_leaders >= 1); 0 for a single leader."""
        if self._slot < 0:
            self._slot = int(lib.leader_context_slot(self._ctx))
        return self._slot

    @property
    def lock(self) -> str:
        """The lock's full name (while the lease is held)."""
        return text(lib.leader_context_lock(self._held()))

    @property
    def node_id(self) -> str:
        """This replica's node id (while the lease is held)."""
        return text(lib.leader_context_node_id(self._held()))

    @property
    def remaining(self) -> float:
        """Seconds until the lease must be assumed lost (0.0 when it is, or not held)."""
        return 0.0 if self._ctx is None else lib.leader_context_remaining_ms(self._ctx) / 1000.0

    def is_stopped(self) -> bool:
        """True once the work must stop (lease lost, about to expire, or cancelled): a cheap
        poll, without the watcher thread that ``stopped`` starts."""
        return self._ctx is not None and bool(lib.leader_context_stopped(self._ctx))

    @property
    def stopped(self) -> threading.Event:
        """Set when the lease's stop signal fires (watched by a small thread, started on first
        use while the lease is held and ended when it ends). Never set when not elected."""
        if self._stopped is None:
            self._stopped = threading.Event()
            if self._ctx is not None:
                if lib.leader_context_stopped(self._ctx):
                    self._stopped.set()
                    return self._stopped  # type: ignore[no-any-return]
                fd = lib.leader_context_stop_fd(self._ctx)
                if fd < 0:
                    raise error(10)
                self._watch = _StopWatch(fd, self._stopped)
        return self._stopped  # type: ignore[no-any-return]

    def extend(self, seconds: float) -> None:
        """Renews the lease now to ``seconds`` from now (later renewals ask for it too)."""
        check(lib.leader_context_extend(self._held(), _ms(seconds)))

    def _close(self) -> None:
        """Ends the watcher; the context is unusable afterwards (its lease is gone)."""
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        if self._ctx is not None:  # the token and slot stay readable after the release
            if self._token < 0:
                self._token = int(lib.leader_context_fencing_token(self._ctx))
            if self._slot < 0:
                self._slot = int(lib.leader_context_slot(self._ctx))
        self._ctx = None


def _ms(seconds: float) -> int:
    return int(round(float(seconds) * 1000.0))
