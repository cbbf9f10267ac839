// RedisStore::renew, and renew_batch: the renew script of every lease pipelined on one
// connection per node (README.md, section "Batched renewals").

#include <algorithm>
#include <optional>
#include <utility>

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

Renewal RedisStore::renewal(const Lease& lease, Duration ttl, const Sent& sent) const {
  if (sent.error) throw *sent.error;
  if (!decode_owned(sent.reply.get(), "renew")) return {};
  if (sent.acked >= 0 && sent.acked < pool_.config().wait_replicas)
    throw not_replicated_renewal(lease, sent.acked, pool_.config().wait_replicas);
  return {LeaseStatus::ok, ttl};
}

Renewal RedisStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  return renewal(lease, ttl, send(renew_call(lease, ttl), "a script", deadline, true));
}

std::vector<BatchRenewal> RedisStore::renew_batch(std::span<const RenewalRequest> requests,
                                                  Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
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
  for (auto& [pool, indices] : groups) {
    for (std::size_t at = 0; at < indices.size(); at += kBatchChunk) {
      const auto chunk = std::span<const std::size_t>(indices).subspan(
          at, std::min(kBatchChunk, indices.size() - at));
      std::vector<Command> commands;  // exactly what renew() sends, one per lease
      commands.reserve(chunk.size());
      for (std::size_t i : chunk)
        commands.push_back(renew_call(*requests[i].lease, requests[i].ttl));
      std::vector<Sent> sent = pipeline(*pool, commands, deadline, true);
      for (std::size_t k = 0; k < chunk.size(); ++k) {
        const std::size_t i = chunk[k];
        try {
          if (const std::string text = error_text(sent[k].reply.get()); !text.empty()) {
            if (const auto redirect = cluster_ ? redirect_of(text) : std::nullopt) {
              moved = moved || redirect->moved;  // not executed there: renewed alone below
              redirected.push_back(i);
              continue;
            }
            reject(text, "a script");
          }
          out[i].renewal = renewal(*requests[i].lease, requests[i].ttl, sent[k]);
        } catch (const BackendError& e) {
          out[i].error = e;
        }
      }
    }
  }
  if (redirected.empty()) return out;
  if (moved) {
    try {  // once for all of them, instead of once per renew() below
      cluster_->refresh(deadline);
    } catch (const BackendError&) {  // each renew() follows its redirection anyway
    }
  }
  // Resharding: one renew() each (LeaseStore's default), following the redirections.
  std::vector<RenewalRequest> again;
  for (std::size_t i : redirected) again.push_back(requests[i]);
  std::vector<BatchRenewal> alone = LeaseStore::renew_batch(again, deadline);
  for (std::size_t j = 0; j < redirected.size(); ++j) out[redirected[j]] = std::move(alone[j]);
  return out;
}

}  // namespace leader::redis
