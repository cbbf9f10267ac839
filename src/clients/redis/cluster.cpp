#include "cluster.hpp"

#include <algorithm>

#include "leader/errors.hpp"

namespace leader::redis {
namespace {

std::uint16_t crc16(std::string_view s) {
  std::uint16_t crc = 0;
  for (unsigned char c : s) {
    crc ^= static_cast<std::uint16_t>(c << 8);
    for (int i = 0; i < 8; ++i)
      crc = (crc & 0x8000) != 0 ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                : static_cast<std::uint16_t>(crc << 1);
  }
  return crc;
}

std::string endpoint_of(const std::string& host, long long port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

}  // namespace

int key_slot(std::string_view key) {
  const auto open = key.find('{');
  if (open != std::string_view::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1)
      key = key.substr(open + 1, close - open - 1);
  }
  return crc16(key) & 16383;
}

Cluster::Cluster(const ClientConfig& config) : config_(config) {}

ConnectionPool& Cluster::pool_locked(const std::string& endpoint) {
  auto& p = pools_[endpoint];
  if (!p) {
    ClientConfig c = config_;
    const auto colon = endpoint.rfind(':');
    c.host = endpoint.substr(0, colon);
    if (!c.host.empty() && c.host.front() == '[') c.host = c.host.substr(1, c.host.size() - 2);
    c.port = std::stoi(endpoint.substr(colon + 1));
    c.cluster_seeds.clear();
    p = std::make_unique<ConnectionPool>(std::move(c));
  }
  return *p;
}

ConnectionPool& Cluster::pool_at(const std::string& endpoint) {
  std::lock_guard lock(mu_);
  return pool_locked(endpoint);
}

void Cluster::refresh(Deadline deadline) {
  std::vector<std::string> ask;
  {
    std::lock_guard lock(mu_);
    ask = nodes_;
    for (const auto& s : config_.cluster_seeds) {
      const std::string e = endpoint_of(s.host, s.port);
      if (std::find(ask.begin(), ask.end(), e) == ask.end()) ask.push_back(e);
    }
  }
  std::string why;
  for (const std::string& e : ask) {
    if (deadline.expired()) break;
    Reply r;
    try {
      pool_at(e).run(deadline, [&](Connection& c, Deadline d) {
        r = c.call({"CLUSTER", "SLOTS"}, d);
      });
    } catch (const BackendError& err) {
      why += (why.empty() ? "" : "; ") + std::string(err.what());
      continue;
    }
    if (const std::string text = error_text(r.get());
        !text.empty() || r->type != REDIS_REPLY_ARRAY) {
      why +=
          (why.empty() ? "" : "; ") + e + ": CLUSTER SLOTS: " + (text.empty() ? "no array" : text);
      continue;
    }
    std::array<int, 16384> owner;
    owner.fill(-1);
    std::vector<std::string> nodes;
    for (std::size_t i = 0; i < r->elements; ++i) {
      const redisReply* range = r->element[i];
      if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
          range->element[0]->type != REDIS_REPLY_INTEGER ||
          range->element[1]->type != REDIS_REPLY_INTEGER ||
          range->element[2]->type != REDIS_REPLY_ARRAY || range->element[2]->elements < 2)
        continue;
      const redisReply* node = range->element[2];
      std::string host = node->element[0]->type == REDIS_REPLY_STRING
                             ? std::string(node->element[0]->str, node->element[0]->len)
                             : "";
      if (host.empty() || host == "?") host = e.substr(0, e.rfind(':'));
      const long long port =
          node->element[1]->type == REDIS_REPLY_INTEGER ? node->element[1]->integer : 0;
      const std::string primary = endpoint_of(host, port);
      auto at = std::find(nodes.begin(), nodes.end(), primary);
      const int index = static_cast<int>(at - nodes.begin());
      if (at == nodes.end()) nodes.push_back(primary);
      const long long lo = std::clamp<long long>(range->element[0]->integer, 0, 16383);
      const long long hi = std::clamp<long long>(range->element[1]->integer, 0, 16383);
      for (long long s = lo; s <= hi; ++s) owner[static_cast<std::size_t>(s)] = index;
    }
    if (nodes.empty()) {
      why += (why.empty() ? "" : "; ") + e + " serves no slots";
      continue;
    }
    std::lock_guard lock(mu_);
    owner_ = owner;
    nodes_ = std::move(nodes);
    known_ = true;
    return;
  }
  throw BackendError(ErrorCode::unavailable, "redis",
                     "no node of the Redis Cluster " + config_.redacted_uri +
                         " answered CLUSTER SLOTS" + (why.empty() ? "" : ": " + why));
}

void Cluster::forget() {
  std::lock_guard lock(mu_);
  known_ = false;
}

ConnectionPool& Cluster::pool_for_slot(int slot, Deadline deadline) {
  {
    std::lock_guard lock(mu_);
    if (known_ && owner_[static_cast<std::size_t>(slot)] >= 0)
      return pool_locked(nodes_[static_cast<std::size_t>(owner_[static_cast<std::size_t>(slot)])]);
  }
  refresh(deadline);
  std::lock_guard lock(mu_);
  const int owner = owner_[static_cast<std::size_t>(slot)];
  if (owner < 0)
    throw BackendError(ErrorCode::unavailable, "redis",
                       "no node of the Redis Cluster " + config_.redacted_uri + " serves slot " +
                           std::to_string(slot) + " (CLUSTERDOWN)");
  return pool_locked(nodes_[static_cast<std::size_t>(owner)]);
}

std::vector<ConnectionPool*> Cluster::primaries(Deadline deadline) {
  refresh(deadline);
  std::lock_guard lock(mu_);
  std::vector<ConnectionPool*> out;
  for (const auto& n : nodes_) out.push_back(&pool_locked(n));
  return out;
}

}  // namespace leader::redis
