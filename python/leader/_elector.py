"""Store, Elector, Cancel, the blocking lease (``with elector.lead(...)``) and ``once``."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, NamedTuple, Optional, TypeVar, Union

from ._context import Context, _ms
from ._errors import check, error
from ._ffi import ffi, lib

T = TypeVar("T")

_BACKEND_ERROR = {"return": 0, "skip": 1, "fail_open": 2}

# One leader_lease* out-parameter per thread: read right after the call that fills it.
_out = threading.local()


def _lease_out() -> Any:
    try:
        return _out.lease
    except AttributeError:
        _out.lease = ffi.new("leader_lease**")
        return _out.lease


class Store:
    """An opened store (any URI the C++ library's leader::open accepts: redis://, sqlite:///,
    postgresql://, etcd://, zookeeper://, memory:, ...). Electors keep it alive after close()."""

    def __init__(self, uri: str) -> None:
        self._h: Any = None
        out = ffi.new("leader_store**")
        check(lib.leader_store_open(uri.encode(), out))
        self._h = out[0]

    def close(self) -> None:
        """Drops this handle (electors made from it keep the store)."""
        h, self._h = self._h, None
        if h is not None:
            lib.leader_store_close(h)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


class Cancel:
    """A cancellation source: ``cancel()`` ends a wait (the context is falsy, status
    'cancelled') and fires the stop signal of the leases acquired with it. From any thread."""

    def __init__(self) -> None:
        self._h: Any = lib.leader_cancel_new()
        if self._h == ffi.NULL:
            raise error(11, "leader_cancel_new")

    def cancel(self) -> None:
        lib.leader_cancel_request(self._h)

    @property
    def requested(self) -> bool:
        return bool(lib.leader_cancel_requested(self._h))

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h is not None:
            lib.leader_cancel_free(h)


class Result(NamedTuple):
    """What ``run_if_leader`` did: ``ran`` is False when another replica led (or the wait was
    cancelled); ``value`` is what the function returned (None when it did not run)."""

    ran: bool
    value: Any
    fencing_token: int


class Lead:
    """The context manager of ``Elector.lead``: acquires on enter, releases on exit (marked
    failed when the block raised). Enter gives a Context, falsy when not elected."""

    __slots__ = ("_elector", "_name", "_cancel", "_lease", "_ctx")

    def __init__(self, elector: "Elector", name: str, cancel: Optional[Cancel]) -> None:
        self._elector = elector
        self._name = name.encode()
        self._cancel = cancel
        self._lease: Any = None
        self._ctx: Optional[Context] = None

    def __enter__(self) -> Context:
        out = _lease_out()
        cancel = ffi.NULL if self._cancel is None else self._cancel._h
        elector = self._elector._h
        if elector is None:
            raise error(12, "the elector is closed")
        status = lib.leader_acquire(elector, self._name, cancel, out)
        if status == 0:
            self._lease = out[0]
            self._ctx = Context(lib.leader_lease_context(self._lease), "ok", self._elector._group)
        elif status == 1:
            self._ctx = Context(None, "not_elected")
        elif status == 2:
            self._ctx = Context(None, "cancelled")
        else:
            raise error(status)
        return self._ctx

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        lease, self._lease = self._lease, None
        if lease is None:
            return
        assert self._ctx is not None
        self._ctx._close()
        status = lib.leader_lease_release(lease, exc_type is not None)
        if status != 0 and exc_type is None:
            raise error(status)


class Elector:
    """Elects one leader (or ``max_leaders`` of them) per lock name on a store.

    ``store`` is a URI or a Store. Durations are seconds: ``wait`` (0: try once), ``lease``,
    ``min_lease``, ``safety_margin`` and ``call_timeout`` (None: the library's defaults).
    ``on_backend_error``: 'return' (raise the store's error), 'skip' (not elected) or
    'fail_open' (run without the lock, token 0). Thread-safe; every store call releases the GIL.
    """

    def __init__(
        self,
        store: Union[str, Store],
        *,
        wait: float = 5.0,
        lease: float = 60.0,
        min_lease: float = 0.0,
        safety_margin: Optional[float] = None,
        call_timeout: Optional[float] = None,
        auto_extend: bool = False,
        fair: bool = True,
        reentrant: bool = False,
        node_id: Optional[str] = None,
        max_leaders: int = 0,
        on_backend_error: str = "return",
    ) -> None:
        self._h: Any = None
        self._group = max_leaders > 0
        if on_backend_error not in _BACKEND_ERROR:
            raise error(4, f"on_backend_error {on_backend_error!r}: one of {list(_BACKEND_ERROR)}")
        o = ffi.new("leader_options*")
        lib.leader_options_init(o)
        o.wait_ms = _ms(wait)
        o.lease_ms = _ms(lease)
        o.min_lease_ms = _ms(min_lease)
        if safety_margin is not None:
            o.safety_margin_ms = _ms(safety_margin)
        if call_timeout is not None:
            o.call_timeout_ms = _ms(call_timeout)
        o.auto_extend = auto_extend
        o.fair = fair
        o.reentrant = reentrant
        node = None if node_id is None else ffi.new("char[]", node_id.encode())
        if node is not None:
            o.node_id = node
        o.on_backend_error = _BACKEND_ERROR[on_backend_error]
        o.max_leaders = max_leaders
        own = isinstance(store, str)
        s = Store(store) if isinstance(store, str) else store
        try:
            out = ffi.new("leader_elector**")
            check(lib.leader_elector_new(s._h, o, out))
            self._h = out[0]
        finally:
            if own:
                s.close()

    def _handle(self) -> Any:
        if self._h is None:
            raise error(12, "the elector is closed")
        return self._h

    def lead(self, name: str, *, cancel: Optional[Cancel] = None) -> Lead:
        """``with elector.lead(name) as ctx:`` holds the lock while the block runs when ``ctx``
        is truthy; waits up to ``wait`` seconds first (the GIL released)."""
        return Lead(self, name, cancel)

    def lead_async(self, name: str, *, cancel: Optional[Cancel] = None) -> Any:
        """``async with elector.lead_async(name) as ctx:``: the asyncio form of ``lead``."""
        from ._aio import AsyncLead

        return AsyncLead(self, name, cancel)

    def run_if_leader(
        self, name: str, fn: Callable[[Context], T], *, cancel: Optional[Cancel] = None
    ) -> Result:
        """Runs ``fn(ctx)`` while holding ``name`` when elected; an exception it raises releases
        the lease as failed and propagates."""
        with self.lead(name, cancel=cancel) as ctx:
            if not ctx:
                return Result(False, None, 0)
            return Result(True, fn(ctx), ctx.fencing_token)

    def close(self) -> None:
        """Frees the elector (leases and campaigns it started keep what they need)."""
        h, self._h = self._h, None
        if h is not None:
            lib.leader_elector_free(h)

    def __enter__(self) -> "Elector":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def once(
    name: str,
    *,
    store: Union[str, Store, None] = None,
    elector: Optional[Elector] = None,
    with_context: bool = False,
    **options: Any,
) -> Callable[[Callable[..., T]], Callable[..., Result]]:
    """A decorator: each call runs the function only where this replica leads ``name``, and
    returns a Result. The elector is ``elector`` or one made on first call from ``store`` and
    ``options`` (Elector's keywords). ``with_context``: pass the Context as first argument."""
    if (store is None) == (elector is None):
        raise error(4, "once: give exactly one of store= and elector=")

    def decorate(fn: Callable[..., T]) -> Callable[..., Result]:
        made: list = [elector]
        lock = threading.Lock()

        def get() -> Elector:
            with lock:
                if made[0] is None:
                    made[0] = Elector(store, **options)  # type: ignore[arg-type]
                return made[0]  # type: ignore[no-any-return]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Result:
            if with_context:
                return get().run_if_leader(name, lambda ctx: fn(ctx, *args, **kwargs))
            return get().run_if_leader(name, lambda ctx: fn(*args, **kwargs))

        return wrapper

    return decorate
