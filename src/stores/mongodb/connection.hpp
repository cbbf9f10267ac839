#pragma once
// The MongoDB connection layer of the store: a pool of single-threaded libmongoc clients whose
// streams honour each call's Deadline, the write concern of every write, and the mapping of
// libmongoc and server errors to BackendError codes (see README.md "Errors").

#include <mongoc/mongoc.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "config.hpp"
#include "leader/time.hpp"

namespace leader::mongodb {

/// An owned BSON document (bson_destroy on destruction).
struct Doc {
  bson_t b = BSON_INITIALIZER;
  Doc() = default;
  Doc(const Doc&) = delete;
  Doc& operator=(const Doc&) = delete;
  ~Doc() { bson_destroy(&b); }
};
using DocPtr = std::unique_ptr<Doc>;

/// A pool of libmongoc clients for one deployment. Thread-safe.
class Connection {
 public:
  /// Builds the libmongoc URI from `config`; no I/O. Throws InvalidArgument when libmongoc
  /// refuses the URI.
  explicit Connection(Config config);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Runs the write command `command` (findAndModify, update, delete, createIndexes) with the
  /// configured write concern and `maxTimeMS` from `deadline`. Returns the reply, or nullopt for
  /// a duplicate key (code 11000, as a command error or the first write error). Throws
  /// BackendError: unavailable when the command was certainly not applied, deadline_exceeded
  /// when it may have been (no reply, write concern not confirmed), others by server code.
  std::optional<DocPtr> write(const char* what, bson_t* command, Deadline deadline);
  /// Runs the read command `command` (aggregate, find) and returns its reply.
  DocPtr read(const char* what, bson_t* command, Deadline deadline);

  /// The settings this connection was built from.
  [[nodiscard]] const Config& config() const { return config_; }
  /// The full collection name `<prefix><suffix>`.
  [[nodiscard]] std::string collection(const char* suffix) const { return config_.prefix + suffix; }

 private:
  struct Lent;
  struct Borrowed {
    mongoc_client_t* client;
    bool shortened;  ///< opened with a connect timeout below the configured one
  };
  Borrowed borrow(Deadline deadline);
  void give_back(mongoc_client_t* client, bool broken);
  DocPtr run(const char* what, bson_t* command, bool is_write, Deadline deadline);

  Config config_;
  mongoc_uri_t* uri_ = nullptr;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<mongoc_client_t*> idle_;
  int open_ = 0;
};

/// Reads an integer field (int32, int64 or double) of `doc`, or nullopt.
std::optional<std::int64_t> get_int(const bson_t* doc, const char* dotted);

}  // namespace leader::mongodb
