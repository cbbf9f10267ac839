#pragma once
// Decoding of DynamoDB JSON replies, declared here so that the fuzz harness (tests/fuzz) can feed
// them any reply. Lease items are decoded by held_slots() (item.hpp).

#include <nlohmann/json.hpp>
#include <string>

#include "client.hpp"
#include "leader/store.hpp"

namespace leader::dynamodb {

/// The status, error type ("__type" after '#'), message and body of one reply.
[[nodiscard]] Response parse_response(const std::string& text, long status);
/// A candidate item of a strategic group as written by put_candidate.
[[nodiscard]] Candidate decode_candidate(const nlohmann::json& item);

}  // namespace leader::dynamodb
