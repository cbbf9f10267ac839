// leader_run_if_leader and the explicit lease: the elector's own run_if_leader_result and
// acquire, with the C action's return code as the outcome.

#include <string>

#include "handles.hpp"
#include "leader/blocking_pool.hpp"

namespace {

using leader::capi::fail;
using leader::capi::guarded;

// Thrown after a C action returned non-zero, so that the engine ends the lease as failed.
struct ActionCode {
  int code;
};

leader_status skipped_status(const leader::Skipped& s, const char* lock) {
  const std::string where = std::string("lock '") + lock + "'";
  switch (s.reason) {
    case leader::SkipReason::contention:
      return fail(LEADER_NOT_ELECTED, where + " is held by another replica" +
                                          (s.detail.empty() ? "" : " (" + s.detail + ")"));
    case leader::SkipReason::cancelled:
      return fail(LEADER_CANCELLED, where + ": cancelled before the lease was acquired");
    case leader::SkipReason::backend_error:
      return fail(LEADER_NOT_ELECTED, where + ": skipped after a store failure: " + s.detail);
    case leader::SkipReason::lease_lost:
      return fail(LEADER_LEASE_LOST, where + ": the lease was lost before the action started");
  }
  return fail(LEADER_NOT_ELECTED, where + " was not acquired");
}

bool bad_args(const leader_elector* e, const char* lock, const char* call, leader_status& out) {
  if (e != nullptr && lock != nullptr) return false;
  out = fail(LEADER_INVALID_ARGUMENT, std::string(call) + ": elector and lock must not be NULL");
  return true;
}

}  // namespace

extern "C" {

leader_status leader_run_if_leader(leader_elector* elector, const char* lock, leader_action action,
                                   void* user, leader_cancel* cancel, leader_outcome* outcome) {
  if (outcome != nullptr) *outcome = leader_outcome{};
  leader_status bad = LEADER_OK;
  if (bad_args(elector, lock, "leader_run_if_leader", bad)) return bad;
  if (action == nullptr)
    return fail(LEADER_INVALID_ARGUMENT, "leader_run_if_leader: action must not be NULL");
  return guarded([&] {
    int code = 0;
    auto result = elector->base().run_if_leader_result(
        lock,
        [&](leader::LeaderContext& ctx) {
          leader_context c(ctx);
          code = action(&c, user);
          if (code != 0) throw ActionCode{code};
        },
        leader::capi::token_of(cancel));
    if (outcome != nullptr) {
      if (const leader::LeaseInfo* lease = result.lease()) {
        outcome->fencing_token = lease->fencing_token;
        outcome->slot = lease->slot;
      }
      outcome->action_code = code;
    }
    if (result.skipped()) return skipped_status(std::get<leader::Skipped>(result.variant()), lock);
    if (result.failed())
      return fail(LEADER_ACTION_FAILED,
                  std::string("lock '") + lock + "': the action returned " + std::to_string(code));
    return LEADER_OK;
  });
}

leader_status leader_acquire(leader_elector* elector, const char* lock, leader_cancel* cancel,
                             leader_lease** out) {
  if (out == nullptr) return fail(LEADER_INVALID_ARGUMENT, "leader_acquire: out is NULL");
  *out = nullptr;
  leader_status bad = LEADER_OK;
  if (bad_args(elector, lock, "leader_acquire", bad)) return bad;
  return guarded([&] {
    leader::Acquisition acq = elector->base().acquire(lock, leader::capi::token_of(cancel));
    if (!acq) return skipped_status(acq.skipped, lock);
    *out = new leader_lease(std::move(*acq.guard));
    return LEADER_OK;
  });
}

leader_status leader_acquire_async(leader_elector* elector, const char* lock, leader_cancel* cancel,
                                   leader_acquired done, void* user) {
  leader_status bad = LEADER_OK;
  if (bad_args(elector, lock, "leader_acquire_async", bad)) return bad;
  if (done == nullptr)
    return fail(LEADER_INVALID_ARGUMENT, "leader_acquire_async: done must not be NULL");
  return guarded([&] {
    // What acquire() gave or threw, turned into the callback's arguments (on the thread it ran on).
    auto finish = [done, user, name = std::string(lock)](leader::Acquisition* acq,
                                                         const std::exception_ptr& error) {
      leader_status s = LEADER_OK;
      leader_lease* lease = nullptr;
      try {
        if (error) std::rethrow_exception(error);
        if (*acq) {
          lease = new leader_lease(std::move(*acq->guard));
        } else {
          s = skipped_status(acq->skipped, name.c_str());
        }
      } catch (...) {
        s = leader::capi::from_current_exception();
      }
      done(s, lease, s == LEADER_OK ? "" : leader_last_error(), user);
    };
    const leader::Elector& e = elector->base();
    std::stop_token stop = leader::capi::token_of(cancel);
    if (e.acquires_async()) {
      e.acquire_async(lock, std::move(stop),
                      [finish](leader::Acquisition acq, const std::exception_ptr& error) {
                        finish(&acq, error);
                      });
    } else {
      leader::BlockingPool::shared().post([finish, copy = leader_elector{elector->elector},
                                           name = std::string(lock),
                                           stop = std::move(stop)]() mutable {
        std::exception_ptr error;
        try {
          leader::Acquisition acq = copy.base().acquire(name, stop);
          finish(&acq, nullptr);
          return;
        } catch (...) {
          error = std::current_exception();
        }
        finish(nullptr, error);
      });
    }
    return LEADER_OK;
  });
}

leader_context* leader_lease_context(leader_lease* lease) {
  return lease != nullptr ? &lease->ctx : nullptr;
}

leader_status leader_lease_release(leader_lease* lease, bool failed) {
  if (lease == nullptr) return LEADER_OK;
  const std::unique_ptr<leader_lease> owned(lease);
  std::exception_ptr error = lease->guard.release(failed, failed ? "the work failed" : "");
  if (!error) return LEADER_OK;
  try {
    std::rethrow_exception(error);
  } catch (...) {
    return leader::capi::from_current_exception();
  }
}

}  // extern "C"
