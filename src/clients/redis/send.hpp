#pragma once
// The one send path of the client's calls, shared by Client::send, Client::send_each, the
// AsyncLane and Cluster mode: a pipeline that sends a flushed script again by its source
// (NOSCRIPT), the reading of a redirection (MOVED, ASK), and the error an error reply becomes.
// Client's send(), send_each() and pipeline() (send.cpp) add the cluster routing, WAIT after a
// write (`?wait_replicas=`) and what READONLY and CLUSTERDOWN change.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connection.hpp"
#include "leader/errors.hpp"
#include "script.hpp"

namespace leader::redis {

/// Sends `commands` as one pipeline on `c` (after an ASKING round trip when `asking`), then once
/// more those answered NOSCRIPT (not executed: the server lost its script cache) as EVAL of the
/// script's source. `answers[k]` receives commands[k]'s reply, null when none came before the
/// connection failed or `deadline` passed (the BackendError is rethrown); `sent`, when given,
/// when each was written (the EVAL's pipeline for a script sent again).
void send_calls(Connection& c, const std::vector<Command>& commands, std::vector<Reply>& answers,
                Deadline deadline, bool asking = false, std::vector<TimePoint>* sent = nullptr);

/// What one command came back with (Client::send, Client::send_each).
struct Sent {
  Reply reply;  ///< null when none came
  /// Set when no reply came, or when a write's WAIT failed or was never sent (an unknown
  /// outcome); by send_each(), also for an error reply.
  std::optional<BackendError> error;
  TimePoint at{};  ///< when the pipeline carrying it was written
  int acked = -1;  ///< what the WAIT after it answered; -1 when none was sent
};

/// Where a MOVED or ASK error reply sends its command, which the node did not execute.
struct Redirect {
  bool moved = false;  ///< MOVED (the slot moved for good: read the slot map again), else ASK
  std::string target;  ///< "host:port"
};
/// The redirection an error reply's `text` names, if it is one.
[[nodiscard]] std::optional<Redirect> redirect_of(const std::string& text);

/// Throws the BackendError matching a Redis error reply (`text`), naming `operation`.
[[noreturn]] void throw_reply_error(const std::string& text, const ClientConfig& config,
                                    std::string_view operation);

}  // namespace leader::redis
