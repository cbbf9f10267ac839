"""Campaign: lead a lock whenever possible, with callbacks (leader::Campaign through the C
interface). Callbacks run on the campaign's threads; an exception in one is printed and the
campaign goes on."""

from __future__ import annotations

import traceback
from typing import Any, Callable, List, NamedTuple, Optional

from ._context import Context, _ms
from ._elector import Elector
from ._errors import check, error
from ._ffi import ffi, lib, text


class Holder(NamedTuple):
    """One holder of a lock, as the campaign's observer saw it."""

    node_id: str
    fencing_token: int
    slot: int
    expires_in: float


class Campaign:
    """Campaigns for ``name`` on ``elector`` (which needs ``auto_extend=True``).

    ``on_started_leading(ctx)``: this replica leads; block until ``ctx.stopped`` (or return at
    once and lead until stopped, resigned or lost; with ``resign_on_return`` returning ends the
    term). ``ctx`` is valid during the call only. ``on_stopped_leading()``: the term ended, after
    the release. ``on_new_leader(holders)``: the lock's holders changed ([]: nobody). ``on_error(
    exc)``: a retryable store failure; the campaign retries after ``retry`` seconds.
    """

    def __init__(
        self,
        elector: Elector,
        name: str,
        *,
        on_started_leading: Optional[Callable[[Context], None]] = None,
        on_stopped_leading: Optional[Callable[[], None]] = None,
        on_new_leader: Optional[Callable[[List[Holder]], None]] = None,
        on_error: Optional[Callable[[Exception], None]] = None,
        retry: float = 1.0,
        release_on_stop: bool = True,
        resign_on_return: bool = False,
        resign_hold_off: float = 0.0,
    ) -> None:
        self._elector = elector
        self._name = name
        self._user = (on_started_leading, on_stopped_leading, on_new_leader, on_error)
        self._options = ffi.new("leader_campaign_options*")
        lib.leader_campaign_options_init(self._options)
        self._options.retry_ms = _ms(retry)
        self._options.release_on_stop = release_on_stop
        self._options.resign_on_return = resign_on_return
        self._options.resign_hold_off_ms = _ms(resign_hold_off)
        self._h: Any = None
        self._keep: list = []

    def start(self) -> "Campaign":
        """Starts campaigning on a thread of the campaign's own."""
        if self._h is not None:
            raise error(12, "the campaign is already started")
        started, stopped, new_leader, failed = self._user
        cb = ffi.new("leader_campaign_callbacks*")
        cb.struct_size = ffi.sizeof("leader_campaign_callbacks")
        keep: list = [cb]
        if started is not None:

            def on_started(ctx: Any, user: Any) -> None:
                c = Context(ctx)
                try:
                    started(c)
                except BaseException:
                    traceback.print_exc()
                finally:
                    c._close()

            keep.append(ffi.callback("void(leader_context*, void*)", on_started))
            cb.on_started_leading = keep[-1]
        if stopped is not None:

            def on_stopped(user: Any) -> None:
                try:
                    stopped()
                except BaseException:
                    traceback.print_exc()

            keep.append(ffi.callback("void(void*)", on_stopped))
            cb.on_stopped_leading = keep[-1]
        if new_leader is not None:

            def on_new(holders: Any, count: int, user: Any) -> None:
                seen = [
                    Holder(text(h.node_id), int(h.fencing_token), int(h.slot),
                           h.expires_in_ms / 1000.0)
                    for h in (holders[i] for i in range(count))
                ]
                try:
                    new_leader(seen)
                except BaseException:
                    traceback.print_exc()

            keep.append(ffi.callback("void(const leader_holder*, size_t, void*)", on_new))
            cb.on_new_leader = keep[-1]
        if failed is not None:

            def on_error(status: int, message: Any, user: Any) -> None:
                try:
                    failed(error(status, text(message)))
                except BaseException:
                    traceback.print_exc()

            keep.append(ffi.callback("void(leader_status, const char*, void*)", on_error))
            cb.on_error = keep[-1]
        out = ffi.new("leader_campaign**")
        check(lib.leader_campaign_start(
            self._elector._handle(), self._name.encode(), cb, self._options, out))
        self._h = out[0]
        self._keep = keep
        return self

    @property
    def is_leader(self) -> bool:
        """True while this replica leads."""
        return self._h is not None and bool(lib.leader_campaign_is_leader(self._h))

    def resign(self) -> bool:
        """Ends the current term and campaigns again after the hold-off; False when not
        leading."""
        return self._h is not None and bool(lib.leader_campaign_resign(self._h))

    def stop(self) -> None:
        """Stops the campaign and waits for it (the GIL released); raises what ended it when it
        ended on a store's non-retryable error."""
        h, self._h = self._h, None
        if h is None:
            return
        status = lib.leader_campaign_stop(h)
        self._keep = []
        check(status)

    def __enter__(self) -> "Campaign":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
