// RedisStore::renew, and renew_batch: the renew script of every lease pipelined on one
// connection per node.// README.md, section "Batched renewals".

#include <algorithm>
#include <optional>

#include "leader/errors.hpp"
#include "redis_store.hpp"
#include "replies.hpp"

namespace leader::redis {
namespace {

// Renew's message when too few replicas acknowledged a renewal (`acked` of `wanted`).
BackendError not_replicated_renewal(const Lease& lease, int acked, int wanted) {
  return BackendError(
      ErrorCode::deadline_exceeded, "redis",
      "lock '" + lease.lock + "' was renewed on the primary, but only " + std::to_string(acked) +
          " of the " + std::to_string(wanted) +
          " replicas required (?wait_replicas=) acknowledged within WAIT's timeout: the "
          "renewal is not known to survive a failover (the lease is possibly held until the "
          "previous ttl or the new one)");
}

}  // namespace

Command RedisStore::renew_call(const Lease& lease, Duration ttl) const {
  return script_call(renew_script(), {slot_key(lease.lock, lease.slot)},
                     {lease.owner, std::to_string(ttl.count()), changes_channel(lease.lock)});
}

Renewal RedisStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  int acked = -1;
  Reply reply = send(renew_call(lease, ttl), "a script", deadline, nullptr, &acked);
  if (!decode_owned(reply.get(), "renew")) return {};
  if (acked >= 0 && acked < pool_.config().wait_replicas)
    throw not_replicated_renewal(lease, acked, pool_.config().wait_replicas);
  return {LeaseStatus::ok, ttl};
}

std::vector<BatchRenewal> RedisStore::renew_batch(std::span<const RenewalRequest> requests,
                                                  Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
  if (requests.empty()) return out;
  // The leases by the pool that serves them: the one server, or on a cluster each slot's primary.
  std::vector<std::pair<ConnectionPool*, std::vector<std::size_t>>> groups;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    ConnectionPool* pool = &pool_;
    if (cluster_) {
      try {
        pool = &pool_for(slot_key(requests[i].lease->lock, requests[i].lease->slot), deadline);
      } catch (const BackendError& e) {  // no slot map: nothing sent for this lease
        out[i].error = e;
        continue;
      }
    }
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& group) { return group.first == pool; });
    if (g == groups.end()) g = groups.insert(groups.end(), {pool, {}});
    g->second.push_back(i);
  }
  std::vector<std::size_t> redirected;  // MOVED / ASK: not executed there
  bool moved = false;
  for (auto& [pool, indices] : groups)
    for (std::size_t at = 0; at < indices.size(); at += kBatchChunk)
      renew_chunk(*pool, requests,
                  std::span<const std::size_t>(indices).subspan(
                      at, std::min(kBatchChunk, indices.size() - at)),
                  deadline, out, redirected, moved);
  if (redirected.empty()) return out;
  if (moved) {
    try {  // once for all of them, instead of once per renew() below
      cluster_->refresh(deadline);
    } catch (const BackendError&) {  // each renew() follows its redirection anyway
    }
  }
  for (std::size_t i : redirected) {  // resharding: one by one, following the redirections
    if (deadline.expired()) {
      out[i].error = BackendError(ErrorCode::deadline_exceeded, "redis",
                                  "renew_batch: deadline passed before this lease was sent to the "
                                  "node its slot moved to");
      continue;
    }
    try {
      out[i].renewal = renew(*requests[i].lease, requests[i].ttl, deadline);
    } catch (const BackendError& e) {
      out[i].error = e;
    }
  }
  return out;
}

void RedisStore::renew_chunk(ConnectionPool& pool, std::span<const RenewalRequest> requests,
                             std::span<const std::size_t> chunk, Deadline deadline,
                             std::vector<BatchRenewal>& out, std::vector<std::size_t>& redirected,
                             bool& moved) {
  const Config& config = pool_.config();
  std::vector<Command> commands;  // exactly what renew() sends, one per lease
  commands.reserve(chunk.size());
  for (std::size_t i : chunk) {
    commands.push_back(renew_call(*requests[i].lease, requests[i].ttl));
  }
  std::vector<Reply> answers;               // answers[k] is commands[k]'s reply; null: none came
  int acked = -1;                           // what WAIT answered; -1 when no WAIT was sent
  std::optional<BackendError> failed;       // the round trip's failure
  std::optional<BackendError> wait_failed;  // WAIT's, after every reply came
  try {
    pool.run(deadline, [&](Connection& c, Deadline d) {
      acked = -1;  // a retry on a fresh connection starts over
      wait_failed.reset();
      send_calls(c, commands, answers, d);
      if (config.wait_replicas > 0 && std::any_of(answers.begin(), answers.end(),
                                                  [](const Reply& r) { return wrote(r.get()); })) {
        try {  // one WAIT covers every write of this connection so far
          acked = wait_for_replicas(c, config, d);
        } catch (const BackendError& e) {
          wait_failed = e;
          throw;  // the connection is dropped, as after renew()'s failed WAIT
        }
      }
    });
  } catch (const BackendError& e) {
    failed = e;
    node_failed(e);
  }
  answers.resize(commands.size());
  for (std::size_t k = 0; k < chunk.size(); ++k) {
    const std::size_t i = chunk[k];
    const Lease& lease = *requests[i].lease;
    const redisReply* r = answers[k].get();
    if (r == nullptr) {  // sent or not, no answer: what renew() would have thrown
      out[i].error = failed.value_or(
          BackendError(ErrorCode::internal, "redis", "renew_batch: no reply and no error"));
      continue;
    }
    bool owned = false;
    try {
      if (const std::string text = error_text(r); !text.empty()) {
        if (const auto redirect = cluster_ ? redirect_of(text) : std::nullopt) {
          moved = moved || redirect->moved;  // not executed there: renewed alone by renew()
          redirected.push_back(i);
          continue;
        }
        reject(text, "a script");
      }
      owned = decode_owned(r, "renew");
    } catch (const BackendError& e) {
      out[i].error = e;
      continue;
    }
    if (!owned) continue;  // lost: Renewal{} as renew() returns it
    if (config.wait_replicas > 0) {
      if (wait_failed) {
        out[i].error = *wait_failed;
        continue;
      }
      if (acked < 0) {  // renewed on the primary, then the connection failed before WAIT
        out[i].error = BackendError(
            ErrorCode::deadline_exceeded, "redis",
            "lock '" + lease.lock +
                "' was renewed on the primary, then the connection failed before WAIT: " +
                (failed ? failed->what() : std::string("no WAIT sent")));
        continue;
      }
      if (acked < config.wait_replicas) {
        out[i].error = not_replicated_renewal(lease, acked, config.wait_replicas);
        continue;
      }
    }
    out[i].renewal = {LeaseStatus::ok, requests[i].ttl};
  }
}

}  // namespace leader::redis
