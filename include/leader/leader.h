/* leader.h: the C interface of leader (libleader.so.0), C11, no C++ in it.
 *
 * Opaque handles over the C++ library's public surface: a store (leader_store_open, any store URI
 * leader::open accepts), an elector (single leader, or a group of N with max_leaders), a held
 * lease, a campaign, and a cancellation source. The action of a lease gets a leader_context: the
 * fencing token, the slot, and the stop signal that fires before the server can expire the lease
 * (a pollable flag and a file descriptor that becomes readable).
 *
 * Errors: every call that can fail returns a leader_status; LEADER_OK is 0. The message of the
 * last failing call on the calling thread is leader_last_error() (never a secret: passwords,
 * tokens and lease ids are not in it). Durations are milliseconds.
 *
 * Threads: unless a call says otherwise, a handle may be used from any thread, and the calls on
 * one store, elector or campaign may run at once from several threads. A leader_lease and its
 * leader_context belong to the thread that runs the work; its context's getters and the stop
 * signal may be read from threads the work starts while the lease is held.
 *
 * Link: pkg-config leader, or CMake find_package(leader COMPONENTS c) and leader::c.
 */
#ifndef LEADER_LEADER_H
#define LEADER_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define LEADER_C_API __attribute__((visibility("default")))
#else
#define LEADER_C_API
#endif

/** What a call returned. The store error codes mirror leader::ErrorCode. */
typedef enum leader_status {
  LEADER_OK = 0,
  LEADER_NOT_ELECTED = 1,         /**< another replica holds the lock (after waiting wait_ms) */
  LEADER_CANCELLED = 2,           /**< the cancellation source was requested first */
  LEADER_ACTION_FAILED = 3,       /**< the action ran and returned non-zero */
  LEADER_INVALID_ARGUMENT = 4,    /**< a bad value of the caller's (a lock name, an option) */
  LEADER_UNAVAILABLE = 5,         /**< the store could not be reached; retrying may help */
  LEADER_DEADLINE_EXCEEDED = 6,   /**< a store call ran out of time; its outcome is unknown */
  LEADER_LEASE_LOST = 7,          /**< the lease is no longer ours */
  LEADER_FAILED_PRECONDITION = 8, /**< misconfiguration (auth, schema, permissions) */
  LEADER_STORE_REJECTED = 9,      /**< the store rejected a value as invalid */
  LEADER_INTERNAL = 10,           /**< a protocol or server error that fits no other code */
  LEADER_NO_MEMORY = 11,
  LEADER_BAD_STATE = 12 /**< the handle cannot do this now (a campaign already started) */
} leader_status;

/** The lower-case name of a status, e.g. "not_elected". Never NULL. */
LEADER_C_API const char* leader_status_name(leader_status status);
/** The message of the last call on this thread that did not return LEADER_OK ("" when none).
 * Valid until the next leader_* call on this thread. */
LEADER_C_API const char* leader_last_error(void);
/** The library's version, e.g. "0.1.0". */
LEADER_C_API const char* leader_version(void);

/* ---- stores ---------------------------------------------------------------------------- */

typedef struct leader_store leader_store;

/** Opens the store at `uri` (sqlite:///path, redis://host:port, postgresql://..., etcd://...,
 * zookeeper://..., memory:, ...: docs/uri-parameters.md). On LEADER_OK, *out is a new handle. */
LEADER_C_API leader_status leader_store_open(const char* uri, leader_store** out);
/** Drops the handle (electors opened on it keep the store alive). NULL is ignored. */
LEADER_C_API void leader_store_close(leader_store* store);

/* ---- electors -------------------------------------------------------------------------- */

/** What to do when the store fails while acquiring. */
typedef enum leader_on_backend_error {
  LEADER_BACKEND_ERROR_RETURN = 0,   /**< return the store's status */
  LEADER_BACKEND_ERROR_SKIP = 1,     /**< do not run the action: LEADER_NOT_ELECTED */
  LEADER_BACKEND_ERROR_FAIL_OPEN = 2 /**< run the action without the lock (token 0) */
} leader_on_backend_error;

/** An elector's options: fill with leader_options_init, then set what differs. */
typedef struct leader_options {
  size_t struct_size;       /**< sizeof(leader_options), set by leader_options_init */
  int64_t wait_ms;          /**< how long to wait for the lock; 0: try once (default 5000) */
  int64_t lease_ms;         /**< lease time (default 60000) */
  int64_t min_lease_ms;     /**< hold at least this long after acquiring (default 0) */
  int64_t safety_margin_ms; /**< 0: the library's default margin */
  int64_t call_timeout_ms;  /**< bound of one store call; 0: derived from the lease */
  bool auto_extend;         /**< renew the lease while the work runs (default false) */
  bool fair;                /**< FIFO among waiters (default true) */
  bool reentrant;           /**< a nested run on the same lock runs in the outer lease */
  const char* node_id;      /**< NULL: host:pid; copied */
  leader_on_backend_error on_backend_error;
  int max_leaders; /**< 0: one leader; N >= 1: a group of N leaders, one slot each */
} leader_options;

/** Sets every field of `options` to its default. */
LEADER_C_API void leader_options_init(leader_options* options);

typedef struct leader_elector leader_elector;

/** A new elector on `store` (options NULL: the defaults). */
LEADER_C_API leader_status leader_elector_new(leader_store* store, const leader_options* options,
                                              leader_elector** out);
/** Frees the elector (leases and campaigns it started keep what they need). NULL is ignored. */
LEADER_C_API void leader_elector_free(leader_elector* elector);

/* ---- cancellation ---------------------------------------------------------------------- */

/** A cancellation source: requesting it ends a wait (LEADER_CANCELLED) and fires the stop
 * signal of the leases acquired with it. Request from any thread. */
typedef struct leader_cancel leader_cancel;

LEADER_C_API leader_cancel* leader_cancel_new(void);
LEADER_C_API void leader_cancel_request(leader_cancel* cancel);
LEADER_C_API bool leader_cancel_requested(const leader_cancel* cancel);
/** Frees the source; the calls using it must have returned. NULL is ignored. */
LEADER_C_API void leader_cancel_free(leader_cancel* cancel);

/* ---- the action's context -------------------------------------------------------------- */

typedef struct leader_context leader_context;

/** Strictly increasing per lock: pass it to the resource so that it refuses stale writers. */
LEADER_C_API uint64_t leader_context_fencing_token(const leader_context* ctx);
/** The slot of a group lease; 0 for a single leader. */
LEADER_C_API int leader_context_slot(const leader_context* ctx);
/** The lock's full name. */
LEADER_C_API const char* leader_context_lock(const leader_context* ctx);
/** This replica's node id. */
LEADER_C_API const char* leader_context_node_id(const leader_context* ctx);
/** True once the work must stop: the lease was lost, is about to expire locally, or the caller
 * cancelled. Poll it between steps. */
LEADER_C_API bool leader_context_stopped(const leader_context* ctx);
/** A file descriptor that becomes readable when the stop signal fires (poll/select/epoll it
 * beside the work's own); owned by the context, closed when the lease ends. -1 with
 * leader_last_error() when none can be made. */
LEADER_C_API int leader_context_stop_fd(leader_context* ctx);
/** Milliseconds until the lease must be assumed lost (0 when it is). */
LEADER_C_API int64_t leader_context_remaining_ms(const leader_context* ctx);
/** Renews the lease now to `lease_ms` from now (later renewals ask for it too). */
LEADER_C_API leader_status leader_context_extend(leader_context* ctx, int64_t lease_ms);

/* ---- run once, if leader --------------------------------------------------------------- */

/** The work. Return 0 when it succeeded, anything else when it failed (the lease is then
 * released as failed and the call returns LEADER_ACTION_FAILED). */
typedef int (*leader_action)(leader_context* ctx, void* user);

/** What a run did (optional out-parameter). */
typedef struct leader_outcome {
  uint64_t fencing_token; /**< the lease's token; 0 when the action did not run or ran fail-open */
  int slot;
  int action_code; /**< what the action returned */
} leader_outcome;

/** Acquires `lock`, runs `action(ctx, user)` on the calling thread while holding it, releases
 * it. LEADER_OK: it ran and returned 0. LEADER_NOT_ELECTED / LEADER_CANCELLED: it did not run.
 * LEADER_ACTION_FAILED: it returned non-zero. A store status: the store failed. `cancel` and
 * `outcome` may be NULL. */
LEADER_C_API leader_status leader_run_if_leader(leader_elector* elector, const char* lock,
                                                leader_action action, void* user,
                                                leader_cancel* cancel, leader_outcome* outcome);

/* ---- an explicit lease ----------------------------------------------------------------- */

typedef struct leader_lease leader_lease;

/** Acquires `lock`; on LEADER_OK *out holds the lease until leader_lease_release. Otherwise *out
 * is NULL (LEADER_NOT_ELECTED, LEADER_CANCELLED, or the store's status). */
LEADER_C_API leader_status leader_acquire(leader_elector* elector, const char* lock,
                                          leader_cancel* cancel, leader_lease** out);
/** What leader_acquire_async reports, once: LEADER_OK and the lease (the callee owns it: release
 * it with leader_lease_release, not inside this call), or another status, NULL and the message
 * (valid during the call). Runs on a library thread and must not block. */
typedef void (*leader_acquired)(leader_status status, leader_lease* lease, const char* message,
                                void* user);

/** leader_acquire without blocking the calling thread: `done` runs once with the outcome. On a
 * store with asynchronous I/O of its own (Redis) the wait holds no thread at all; on the others it
 * runs on a thread of the library's pool. Returns LEADER_OK when started (then `done` will run),
 * or an error (then it will not). `cancel`, when not NULL, must live until `done` ran. */
LEADER_C_API leader_status leader_acquire_async(leader_elector* elector, const char* lock,
                                                leader_cancel* cancel, leader_acquired done,
                                                void* user);

/** The lease's context (owned by the lease). */
LEADER_C_API leader_context* leader_lease_context(leader_lease* lease);
/** Releases the lease and frees the handle. `failed` marks the work as failed in the history.
 * Returns the store's status when the release call failed (the lease then stays held on the
 * store until its ttl runs out). NULL is ignored (LEADER_OK). */
LEADER_C_API leader_status leader_lease_release(leader_lease* lease, bool failed);

/* ---- campaigns ------------------------------------------------------------------------- */

/** One holder of a lock, as an observer of the store saw it. */
typedef struct leader_holder {
  const char* node_id;
  uint64_t fencing_token;
  int slot;
  int64_t expires_in_ms;
} leader_holder;

/** What a campaign calls, each on the campaign's threads; every member may be NULL. */
typedef struct leader_campaign_callbacks {
  size_t struct_size; /**< sizeof(leader_campaign_callbacks) */
  /** This replica leads: run the term's work (block until leader_context_stopped, or return at
   * once and lead until stopped, resigned or lost; see resign_on_return). */
  void (*on_started_leading)(leader_context* ctx, void* user);
  /** The term ended (after the lease was released). */
  void (*on_stopped_leading)(void* user);
  /** The lock's holders changed (count 0: nobody holds it). The array lives during the call. */
  void (*on_new_leader)(const leader_holder* holders, size_t count, void* user);
  /** A retryable store failure; the campaign tries again after retry_ms. */
  void (*on_error)(leader_status status, const char* message, void* user);
  void* user;
} leader_campaign_callbacks;

/** A campaign's options: fill with leader_campaign_options_init. */
typedef struct leader_campaign_options {
  size_t struct_size;
  int64_t retry_ms;           /**< pause after contention or a store failure (default 1000) */
  bool release_on_stop;       /**< release on stop (true) or leave it to expire (default true) */
  bool resign_on_return;      /**< end the term when on_started_leading returns (default false) */
  int64_t resign_hold_off_ms; /**< after a resign, wait this long for another replica; 0: the
                                   lease time */
} leader_campaign_options;

LEADER_C_API void leader_campaign_options_init(leader_campaign_options* options);

typedef struct leader_campaign leader_campaign;

/** Starts campaigning for `lock` on a thread of the campaign's own. The elector needs
 * auto_extend. `callbacks` and `options` are copied (options NULL: the defaults). */
LEADER_C_API leader_status leader_campaign_start(leader_elector* elector, const char* lock,
                                                 const leader_campaign_callbacks* callbacks,
                                                 const leader_campaign_options* options,
                                                 leader_campaign** out);
/** Ends the current term and campaigns again after the hold-off; false when not leading. */
LEADER_C_API bool leader_campaign_resign(leader_campaign* campaign);
/** True while this replica leads. */
LEADER_C_API bool leader_campaign_is_leader(const leader_campaign* campaign);
/** Stops the campaign, waits for it, and frees the handle; returns what ended it when it ended
 * on an error (a callback cannot throw, so this is a store's non-retryable status). */
LEADER_C_API leader_status leader_campaign_stop(leader_campaign* campaign);

#ifdef __cplusplus
}
#endif

#endif /* LEADER_LEADER_H */
