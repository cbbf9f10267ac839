// The default of LeaseStore's one non-pure operation: renew_batch as one renew per lease.

#include <string>

#include "leader/store.hpp"

namespace leader {

std::vector<BatchRenewal> LeaseStore::renew_batch(std::span<const RenewalRequest> requests,
                                                  Deadline deadline) {
  std::vector<BatchRenewal> out(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (deadline.expired()) {
      out[i].error = BackendError(ErrorCode::deadline_exceeded, std::string(scheme()),
                                  "renew_batch: deadline passed before this lease was sent");
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

}  // namespace leader
