"""leader: distributed leader election with fencing tokens, over libleader.so.0 (the C
interface of the C++ library) through cffi.

    elector = leader.Elector("redis://127.0.0.1:6379", wait=5.0, lease=60.0)
    with elector.lead("nightly") as ctx:
        if ctx:
            write(ctx.fencing_token)

The library is $LEADER_LIBRARY when set, else the system's libleader.so.0.
"""

from ._aio import AsyncContext, AsyncLead
from ._campaign import Campaign, Holder
from ._context import Context
from ._elector import Cancel, Elector, Lead, Result, Store, once
from ._errors import (
    ActionFailed,
    BadState,
    Cancelled,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    LeaderError,
    LeaseLost,
    NoMemory,
    NotElected,
    StoreRejected,
    Unavailable,
)
from ._ffi import ffi as _ffi
from ._ffi import lib as _lib

__version__ = "0.1.0"


def library_version() -> str:
    """The loaded libleader's version, e.g. '0.1.0'."""
    return _ffi.string(_lib.leader_version()).decode()


__all__ = [
    "ActionFailed", "AsyncContext", "AsyncLead", "BadState", "Campaign", "Cancel", "Cancelled",
    "Context", "DeadlineExceeded", "Elector", "FailedPrecondition", "Holder", "Internal",
    "InvalidArgument", "Lead", "LeaderError", "LeaseLost", "NoMemory", "NotElected", "Result",
    "Store", "StoreRejected", "Unavailable", "library_version", "once",
]
