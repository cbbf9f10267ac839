"""Statuses of the C interface as exceptions (the codes mirror leader::ErrorCode)."""

from __future__ import annotations

from typing import Dict, Type

from ._ffi import lib, text


class LeaderError(Exception):
    """A call failed; ``status`` is the C interface's code, ``code`` its name."""

    status: int = 0
    code: str = "error"

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        if status:
            self.status = status
            self.code = text(lib.leader_status_name(status))


class NotElected(LeaderError):
    """Another replica holds the lock (raised only where a lease is required)."""

    status = 1
    code = "not_elected"


class Cancelled(LeaderError):
    """The cancellation was requested first."""

    status = 2
    code = "cancelled"


class ActionFailed(LeaderError):
    status = 3
    code = "action_failed"


class InvalidArgument(LeaderError, ValueError):
    """A bad value of the caller's (a lock name, an option)."""

    status = 4
    code = "invalid_argument"


class Unavailable(LeaderError):
    """The store could not be reached; retrying may help."""

    status = 5
    code = "unavailable"


class DeadlineExceeded(LeaderError):
    """A store call ran out of time; its outcome is unknown."""

    status = 6
    code = "deadline_exceeded"


class LeaseLost(LeaderError):
    """The lease is no longer ours."""

    status = 7
    code = "lease_lost"


class FailedPrecondition(LeaderError):
    """Misconfiguration: authentication, schema, permissions."""

    status = 8
    code = "failed_precondition"


class StoreRejected(LeaderError):
    status = 9
    code = "store_rejected"


class Internal(LeaderError):
    status = 10
    code = "internal"


class NoMemory(LeaderError, MemoryError):
    status = 11
    code = "no_memory"


class BadState(LeaderError):
    """The handle cannot do this now (a campaign already started)."""

    status = 12
    code = "bad_state"


_BY_STATUS: Dict[int, Type[LeaderError]] = {
    c.status: c
    for c in (NotElected, Cancelled, ActionFailed, InvalidArgument, Unavailable,
              DeadlineExceeded, LeaseLost, FailedPrecondition, StoreRejected, Internal,
              NoMemory, BadState)
}


def error(status: int, message: str | None = None) -> LeaderError:
    """The exception for ``status``, with leader_last_error() as its message by default."""
    if message is None:
        message = text(lib.leader_last_error())
    cls = _BY_STATUS.get(int(status), LeaderError)
    e = cls(message or text(lib.leader_status_name(status)), int(status))
    return e


def check(status: int) -> None:
    """Raises the exception of ``status`` unless it is LEADER_OK."""
    if status != 0:
        raise error(status)
