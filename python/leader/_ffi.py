"""The C interface (include/leader/leader.h) declared for cffi in ABI mode, and the library.

ABI mode (ffi.dlopen): nothing is compiled when the package is installed, and the package runs
against whichever libleader.so.0 it finds. The declarations below are leader.h's, minus its
macros; the structs that may grow carry their size (struct_size), which the library checks.
"""

from __future__ import annotations

import os

import cffi

CDEF = """
typedef enum leader_status {
  LEADER_OK = 0, LEADER_NOT_ELECTED = 1, LEADER_CANCELLED = 2, LEADER_ACTION_FAILED = 3,
  LEADER_INVALID_ARGUMENT = 4, LEADER_UNAVAILABLE = 5, LEADER_DEADLINE_EXCEEDED = 6,
  LEADER_LEASE_LOST = 7, LEADER_FAILED_PRECONDITION = 8, LEADER_STORE_REJECTED = 9,
  LEADER_INTERNAL = 10, LEADER_NO_MEMORY = 11, LEADER_BAD_STATE = 12
} leader_status;
const char* leader_status_name(leader_status status);
const char* leader_last_error(void);
const char* leader_version(void);

typedef struct leader_store leader_store;
leader_status leader_store_open(const char* uri, leader_store** out);
void leader_store_close(leader_store* store);

typedef enum leader_on_backend_error {
  LEADER_BACKEND_ERROR_RETURN = 0, LEADER_BACKEND_ERROR_SKIP = 1,
  LEADER_BACKEND_ERROR_FAIL_OPEN = 2
} leader_on_backend_error;
typedef struct leader_options {
  size_t struct_size;
  int64_t wait_ms;
  int64_t lease_ms;
  int64_t min_lease_ms;
  int64_t safety_margin_ms;
  int64_t call_timeout_ms;
  bool auto_extend;
  bool fair;
  bool reentrant;
  const char* node_id;
  leader_on_backend_error on_backend_error;
  int max_leaders;
} leader_options;
void leader_options_init(leader_options* options);
typedef struct leader_elector leader_elector;
leader_status leader_elector_new(leader_store* store, const leader_options* options,
                                 leader_elector** out);
void leader_elector_free(leader_elector* elector);

typedef struct leader_cancel leader_cancel;
leader_cancel* leader_cancel_new(void);
void leader_cancel_request(leader_cancel* cancel);
bool leader_cancel_requested(const leader_cancel* cancel);
void leader_cancel_free(leader_cancel* cancel);

typedef struct leader_context leader_context;
uint64_t leader_context_fencing_token(const leader_context* ctx);
int leader_context_slot(const leader_context* ctx);
const char* leader_context_lock(const leader_context* ctx);
const char* leader_context_node_id(const leader_context* ctx);
bool leader_context_stopped(const leader_context* ctx);
int leader_context_stop_fd(leader_context* ctx);
int64_t leader_context_remaining_ms(const leader_context* ctx);
leader_status leader_context_extend(leader_context* ctx, int64_t lease_ms);

typedef int (*leader_action)(leader_context* ctx, void* user);
typedef struct leader_outcome {
  uint64_t fencing_token;
  int slot;
  int action_code;
} leader_outcome;
leader_status leader_run_if_leader(leader_elector* elector, const char* lock,
                                   leader_action action, void* user,
                                   leader_cancel* cancel, leader_outcome* outcome);

typedef struct leader_lease leader_lease;
leader_status leader_acquire(leader_elector* elector, const char* lock,
                             leader_cancel* cancel, leader_lease** out);
typedef void (*leader_acquired)(leader_status status, leader_lease* lease, const char* message,
                                void* user);
leader_status leader_acquire_async(leader_elector* elector, const char* lock,
                                   leader_cancel* cancel, leader_acquired done, void* user);
leader_context* leader_lease_context(leader_lease* lease);
leader_status leader_lease_release(leader_lease* lease, bool failed);

typedef struct leader_holder {
  const char* node_id;
  uint64_t fencing_token;
  int slot;
  int64_t expires_in_ms;
} leader_holder;
typedef struct leader_campaign_callbacks {
  size_t struct_size;
  void (*on_started_leading)(leader_context* ctx, void* user);
  void (*on_stopped_leading)(void* user);
  void (*on_new_leader)(const leader_holder* holders, size_t count, void* user);
  void (*on_error)(leader_status status, const char* message, void* user);
  void* user;
} leader_campaign_callbacks;
typedef struct leader_campaign_options {
  size_t struct_size;
  int64_t retry_ms;
  bool release_on_stop;
  bool resign_on_return;
  int64_t resign_hold_off_ms;
} leader_campaign_options;
void leader_campaign_options_init(leader_campaign_options* options);
typedef struct leader_campaign leader_campaign;
leader_status leader_campaign_start(leader_elector* elector, const char* lock,
                                    const leader_campaign_callbacks* callbacks,
                                    const leader_campaign_options* options,
                                    leader_campaign** out);
bool leader_campaign_resign(leader_campaign* campaign);
bool leader_campaign_is_leader(const leader_campaign* campaign);
leader_status leader_campaign_stop(leader_campaign* campaign);
"""

ffi = cffi.FFI()
ffi.cdef(CDEF)

#: The environment variable naming the library to load (a path to libleader.so.0).
LIBRARY_VARIABLE = "LEADER_LIBRARY"


def _load():  # type: ignore[no-untyped-def]
    path = os.environ.get(LIBRARY_VARIABLE) or "libleader.so.0"
    try:
        return ffi.dlopen(path)
    except OSError as e:
        raise ImportError(
            f"leader: cannot load {path} ({e}); install libleader0 or set "
            f"{LIBRARY_VARIABLE}=/path/to/libleader.so.0"
        ) from e


lib = _load()


def text(p) -> str:  # type: ignore[no-untyped-def]
    """A C string as str ('' for NULL)."""
    return "" if p == ffi.NULL else ffi.string(p).decode("utf-8", "replace")
