#pragma once
// Decoding of the data of lease and candidate nodes (JSON written by this library, or anything a
// foreign client wrote), separate from the I/O so that the fuzz harness (tests/fuzz) can feed it
// any node data.

#include <cstdint>
#include <optional>
#include <string>

#include "leader/store.hpp"

namespace leader::zookeeper {

/// The owner token recorded in a lease node's data, or nullopt when the data is not ours.
[[nodiscard]] std::optional<std::string> recorded_owner(const std::string& data);
/// Fills `h`'s owner, node id and expiry from the data of lease node `node_name`; a foreign
/// contender's data (kazoo's identifier, Curator's address) becomes the node id.
void read_holder_data(const std::string& data, const std::string& node_name, Holder& h);
/// A candidate node's data as written by put_candidate, or nullopt.
[[nodiscard]] std::optional<Candidate> parse_candidate(const std::string& data);
/// True when a candidate node last written at server time `mtime_ms` has outlived its ttl at
/// server time `server_now_ms`.
[[nodiscard]] bool candidate_expired(const std::string& data, std::int64_t mtime_ms,
                                     std::int64_t server_now_ms);

}  // namespace leader::zookeeper
