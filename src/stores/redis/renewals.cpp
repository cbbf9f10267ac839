// RedisStore::renew, and renew_batch: the renew script of every lease, pipelined by the client
// on one connection per node (README.md, section "Batched renewals").

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
  if (sent.acked >= 0 && sent.acked < client_.config().wait_replicas)
    throw not_replicated_renewal(lease, sent.acked, client_.config().wait_replicas);
  return {LeaseStatus::ok, ttl};
}

Renewal RedisStore::renew(const Lease& lease, Duration ttl, Deadline deadline) {
  return renewal(lease, ttl, client_.send(renew_call(lease, ttl), "a script", deadline, true));
}

std::vector<BatchRenewal> RedisStore::renew_batch(std::span<const RenewalRequest> requests,
                                                  Deadline deadline) {
  std::vector<Command> commands;  // exactly what renew() sends, one per lease
  commands.reserve(requests.size());
  for (const RenewalRequest& r : requests) commands.push_back(renew_call(*r.lease, r.ttl));
  const std::vector<Sent> sent = client_.send_each(std::move(commands), "a script", deadline, true);
  std::vector<BatchRenewal> out(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    try {
      out[i].renewal = renewal(*requests[i].lease, requests[i].ttl, sent[i]);
    } catch (const BackendError& e) {
      out[i].error = e;
    }
  }
  return out;
}

}  // namespace leader::redis
