#pragma once
// Shared helpers of the DynamoDB integration tests: the test endpoint, unique table names, a
// private dynalite process, and a one-shot HTTP capture socket for the wire-format checks.

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "child_process.hpp"
#include "dynamodb/dynamodb_store.hpp"

namespace leader::dynamodb::test {

/// host:port of the shared dynalite (LEADER_TEST_DYNALITE_ADDR, default 127.0.0.1:18000).
std::string dynalite_addr();
/// A dynamodb:// URI of the shared dynalite for `table` with extra `params` ("&k=v...").
std::string uri_for(const std::string& table, const std::string& params = "");
/// A table name unique to this process and call.
std::string unique_table(const std::string& stem);
/// Opens a DynamoStore on `uri`.
std::shared_ptr<DynamoStore> open_store(const std::string& uri);

/// A private dynalite process with LevelDB data in a directory of its own; killed at destruction.
class Dynalite {
 public:
  /// Starts dynalite on 127.0.0.1:`port` (data kept across restart()).
  explicit Dynalite(int port);
  ~Dynalite();
  Dynalite(const Dynalite&) = delete;
  Dynalite& operator=(const Dynalite&) = delete;
  /// True when the dynalite binary exists (LEADER_TEST_DYNALITE_BIN).
  static bool available();
  /// Kills the process (SIGKILL: a crash) and waits for it.
  void kill();
  /// Starts it again on the same port and data directory; waits until it accepts connections.
  void start();
  /// The URI of this instance for `table`.
  [[nodiscard]] std::string uri(const std::string& table) const;

 private:
  int port_;
  std::string dir_;
  std::optional<::leader::test::ChildProcess> process_;
};

/// Accepts one HTTP request on 127.0.0.1 (an ephemeral port), records it and answers 200 "{}".
class CaptureServer {
 public:
  CaptureServer();
  ~CaptureServer();
  CaptureServer(const CaptureServer&) = delete;
  CaptureServer& operator=(const CaptureServer&) = delete;
  [[nodiscard]] int port() const { return port_; }
  /// Waits for the request and returns it verbatim (head and body).
  std::string request();

 private:
  int listen_fd_ = -1;
  int port_ = 0;
};

}  // namespace leader::dynamodb::test
