#pragma once
// A raw ZooKeeper client for the integration tests (the C client's synchronous API): reads what
// the store wrote on the server, as another program would see it.

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "zk_test_util.hpp"

namespace leader::zktest {

/// One short-lived session of the test server: reads, and the writes of a client from outside.
class RawClient {
 public:
  RawClient() {
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zh_ = zookeeper_init(hosts().c_str(), nullptr, 10000, nullptr, nullptr, 0);
    if (zh_ == nullptr) throw std::runtime_error("zookeeper_init failed");
    if (!eventually([&] { return zoo_state(zh_) == ZOO_CONNECTED_STATE; }, Ms{5000}))
      throw std::runtime_error("raw client not connected");
  }
  ~RawClient() { zookeeper_close(zh_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  /// The data of `path`, or nullopt when it does not exist.
  std::optional<std::string> data(const std::string& path) {
    std::vector<char> buf(std::size_t{64} * 1024);
    int len = static_cast<int>(buf.size());
    struct Stat st {};
    if (zoo_get(zh_, path.c_str(), 0, buf.data(), &len, &st) != ZOK) return std::nullopt;
    return std::string(buf.data(), len > 0 ? static_cast<std::size_t>(len) : 0);
  }
  /// The stat of `path`, or nullopt when it does not exist.
  std::optional<struct Stat> stat(const std::string& path) {
    struct Stat st {};
    if (zoo_exists(zh_, path.c_str(), 0, &st) != ZOK) return std::nullopt;
    return st;
  }
  /// Deletes `path` (any version); the C client's return code.
  int remove(const std::string& path) { return zoo_delete(zh_, path.c_str(), -1); }
  /// Overwrites the data of `path` (any version); the C client's return code.
  int set(const std::string& path, const std::string& value) {
    return zoo_set(zh_, path.c_str(), value.data(), static_cast<int>(value.size()), -1);
  }
  /// The children of `path` (empty when it does not exist).
  std::vector<std::string> children(const std::string& path) {
    String_vector v{};
    std::vector<std::string> out;
    if (zoo_get_children(zh_, path.c_str(), 0, &v) != ZOK) return out;
    for (int i = 0; i < v.count; ++i) out.emplace_back(v.data[i]);
    deallocate_String_vector(&v);
    return out;
  }

 private:
  zhandle_t* zh_ = nullptr;
};

}  // namespace leader::zktest
