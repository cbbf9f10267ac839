#include "send.hpp"

#include <algorithm>
#include <utility>

#include "client.hpp"
#include "leader/errors.hpp"

namespace leader::redis {
namespace {

// True when a reply says its command changed something: what a WAIT must cover. nil, an error
// and the integer 0 wrote nothing (the scripts sent with `wait` answer nil or 0 when they
// changed no key).
bool wrote(const redisReply* r) {
  if (r == nullptr || r->type == REDIS_REPLY_NIL || r->type == REDIS_REPLY_ERROR) return false;
  return !(r->type == REDIS_REPLY_INTEGER && r->integer == 0);
}

// WAIT for `config.wait_replicas` replicas on `c` within `d`: the number that acknowledged. The
// write it follows was applied, so each failure is BackendError(deadline_exceeded), an unknown
// outcome.
int wait_for_replicas(Connection& c, const ClientConfig& config, Deadline d) {
  using std::chrono::milliseconds;
  const auto left =
      std::chrono::duration_cast<milliseconds>(d.at() - std::chrono::steady_clock::now());
  const auto timeout = std::max(
      milliseconds(1), std::min(std::chrono::duration_cast<milliseconds>(config.wait_timeout),
                                left - milliseconds(1)));
  Reply r;
  try {
    r = c.call({"WAIT", std::to_string(config.wait_replicas), std::to_string(timeout.count())}, d);
  } catch (const BackendError& e) {
    throw BackendError(
        ErrorCode::deadline_exceeded, "redis",
        std::string("the write was applied on the primary, then WAIT failed: ") + e.what());
  }
  if (r == nullptr || r->type != REDIS_REPLY_INTEGER)
    throw BackendError(
        ErrorCode::deadline_exceeded, "redis",
        "the write was applied on the primary, then WAIT answered " +
            (error_text(r.get()).empty() ? std::string("no integer") : error_text(r.get())));
  return static_cast<int>(r->integer);
}

}  // namespace

void send_calls(Connection& c, const std::vector<Command>& commands, std::vector<Reply>& answers,
                Deadline deadline, bool asking, std::vector<TimePoint>* sent) {
  answers.clear();
  answers.resize(commands.size());
  if (sent != nullptr) sent->assign(commands.size(), TimePoint{});
  // One pipeline of `what`, whose j-th command is commands[which[j]].
  auto send = [&](const std::vector<std::size_t>& which, const std::vector<Command>& what) {
    if (asking) (void)c.call({"ASKING"}, deadline);
    const TimePoint at = std::chrono::steady_clock::now();
    if (sent != nullptr)
      for (std::size_t k : which) (*sent)[k] = at;
    std::vector<Reply> got;
    try {
      c.pipeline(what, got, deadline);
    } catch (const BackendError&) {
      for (std::size_t j = 0; j < got.size(); ++j) answers[which[j]] = std::move(got[j]);
      throw;
    }
    for (std::size_t j = 0; j < got.size(); ++j) answers[which[j]] = std::move(got[j]);
  };
  std::vector<std::size_t> all(commands.size());
  for (std::size_t k = 0; k < all.size(); ++k) all[k] = k;
  send(all, commands);
  std::vector<std::size_t> again;
  std::vector<Command> full;
  for (std::size_t k = 0; k < answers.size(); ++k) {
    if (commands[k].size() < 2 || commands[k][0] != "EVALSHA" ||
        error_text(answers[k].get()).rfind("NOSCRIPT", 0) != 0)
      continue;
    std::optional<std::string> source = script_source(commands[k][1]);
    if (!source) continue;  // not a Script of this process: the NOSCRIPT error stands
    again.push_back(k);
    full.push_back(commands[k]);
    full.back()[0] = "EVAL";
    full.back()[1] = std::move(*source);
    answers[k].reset();
  }
  if (!again.empty()) send(again, full);
}

std::optional<Redirect> redirect_of(const std::string& text) {
  // "MOVED <slot> <host:port>" / "ASK <slot> <host:port>"
  const bool moved = text.rfind("MOVED ", 0) == 0;
  if (!moved && text.rfind("ASK ", 0) != 0) return std::nullopt;
  return Redirect{moved, text.substr(text.rfind(' ') + 1)};
}

void throw_reply_error(const std::string& text, const ClientConfig& config,
                       std::string_view operation) {
  std::string code = text.substr(0, text.find(' '));
  std::string where =
      "redis at " + config.endpoint() + " rejected " + std::string(operation) + ": " + text;
  if (code == "NOAUTH" || code == "WRONGPASS" || code == "NOPERM")
    throw BackendError(
        ErrorCode::failed_precondition, "redis",
        where + " (check the user, password and ACL of " + config.redacted_uri + ")");
  if ((code == "MOVED" || code == "ASK") && !config.cluster())
    throw BackendError(ErrorCode::failed_precondition, "redis",
                       where +
                           " (a Redis Cluster node: use redis-cluster://node1,node2,... to follow "
                           "its redirections)");
  if (code == "MOVED" || code == "ASK")  // a cluster that kept redirecting (resharding)
    throw BackendError(ErrorCode::unavailable, "redis", where);
  if (code == "CROSSSLOT") throw BackendError(ErrorCode::internal, "redis", where);
  if (code == "LOADING" || code == "BUSY" || code == "MASTERDOWN" || code == "TRYAGAIN" ||
      code == "CLUSTERDOWN" || code == "READONLY" || code == "OOM")
    throw BackendError(ErrorCode::unavailable, "redis", where);
  throw BackendError(ErrorCode::internal, "redis", where);
}

std::vector<Sent> Client::pipeline(ConnectionPool& pool, const std::vector<Command>& commands,
                                   Deadline deadline, bool wait, bool asking) {
  const ClientConfig& config = pool_.config();
  wait = wait && config.wait_replicas > 0;
  std::vector<Reply> replies;
  std::vector<TimePoint> at;
  int acked = -1;                           // what WAIT answered; -1 when no WAIT was sent
  std::optional<BackendError> failed;       // the round trip's failure
  std::optional<BackendError> wait_failed;  // WAIT's, after every reply came
  try {
    pool.run(deadline, [&](Connection& c, Deadline d) {
      acked = -1;  // a retry on a fresh connection starts over
      wait_failed.reset();
      send_calls(c, commands, replies, d, asking, &at);
      if (!wait || std::none_of(replies.begin(), replies.end(),
                                [](const Reply& r) { return wrote(r.get()); }))
        return;
      try {  // one WAIT covers every write of this connection so far
        acked = wait_for_replicas(c, config, d);
      } catch (const BackendError& e) {
        wait_failed = e;
        throw;  // the connection is dropped
      }
    });
  } catch (const BackendError& e) {
    failed = e;
    node_failed(e);
  }
  replies.resize(commands.size());
  at.resize(commands.size());
  std::vector<Sent> out(commands.size());
  for (std::size_t k = 0; k < commands.size(); ++k) {
    Sent& s = out[k];
    s.reply = std::move(replies[k]);
    s.at = at[k];
    s.acked = acked;
    if (s.reply == nullptr)  // sent or not, no answer: an unknown outcome
      s.error = failed.value_or(BackendError(ErrorCode::internal, "redis", "no reply, no error"));
    else if (wait && wrote(s.reply.get()) && acked < 0)
      s.error = wait_failed.value_or(BackendError(
          ErrorCode::deadline_exceeded, "redis",
          std::string("the write was applied on the primary, then the connection failed before "
                      "WAIT: ") +
              (failed ? failed->what() : "no WAIT sent")));
  }
  return out;
}

std::string Client::first_key(const Command& cmd) {
  // A script call's after its key count, a plain command's argument.
  const bool script = cmd.front() == "EVALSHA";
  const std::size_t at = script ? 3 : 1;
  return at < cmd.size() && !(script && cmd[2] == "0") ? cmd[at] : "";
}

Sent Client::send(const Command& cmd, std::string_view operation, Deadline deadline, bool wait) {
  ConnectionPool* pool = &pool_for(first_key(cmd), deadline);
  bool asking = false;
  for (int redirects = 0;; ++redirects) {
    Sent sent = std::move(pipeline(*pool, {cmd}, deadline, wait, asking).front());
    if (sent.error) throw *sent.error;
    const std::string text = error_text(sent.reply.get());
    if (text.empty()) return sent;
    const auto redirect = cluster_ && redirects < 3 ? redirect_of(text) : std::nullopt;
    if (!redirect) reject(text, operation);
    if (redirect->moved) {
      try {
        cluster_->refresh(deadline);
      } catch (const BackendError&) {  // the redirection names the node anyway
      }
    }
    pool = &cluster_->pool_at(redirect->target);
    asking = !redirect->moved;
  }
}

Reply Client::send_to(ConnectionPool& node, const Command& command, std::string_view operation,
                      Deadline deadline) {
  Sent sent = std::move(pipeline(node, {command}, deadline, false).front());
  if (sent.error) throw *sent.error;
  if (const std::string text = error_text(sent.reply.get()); !text.empty()) reject(text, operation);
  return std::move(sent.reply);
}

std::vector<Sent> Client::send_each(std::vector<Command> commands, std::string_view operation,
                                    Deadline deadline, bool wait) {
  std::vector<Sent> out(commands.size());
  // The commands by the pool that serves them: the one server, or on a cluster each key's primary.
  std::vector<std::pair<ConnectionPool*, std::vector<std::size_t>>> groups;
  for (std::size_t i = 0; i < commands.size(); ++i) {
    ConnectionPool* pool = &pool_;
    if (cluster_) {
      try {
        pool = &pool_for(first_key(commands[i]), deadline);
      } catch (const BackendError& e) {  // no slot map: nothing sent for this command
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
    for (std::size_t at = 0; at < indices.size(); at += kPipelineChunk) {
      const auto chunk = std::span<const std::size_t>(indices).subspan(
          at, std::min(kPipelineChunk, indices.size() - at));
      std::vector<Command> batch;
      batch.reserve(chunk.size());
      for (std::size_t i : chunk) batch.push_back(std::move(commands[i]));
      std::vector<Sent> sent = pipeline(*pool, batch, deadline, wait);
      for (std::size_t k = 0; k < chunk.size(); ++k) {
        const std::size_t i = chunk[k];
        commands[i] = std::move(batch[k]);
        out[i] = std::move(sent[k]);
        const std::string text = error_text(out[i].reply.get());
        if (out[i].error || text.empty()) continue;
        if (const auto redirect = cluster_ ? redirect_of(text) : std::nullopt) {
          moved = moved || redirect->moved;  // not executed there: sent again alone below
          redirected.push_back(i);
          continue;
        }
        try {
          reject(text, operation);
        } catch (const BackendError& e) {
          out[i].error = e;
        }
      }
    }
  }
  if (redirected.empty()) return out;
  if (moved) {
    try {  // once for all of them, instead of once per send() below
      cluster_->refresh(deadline);
    } catch (const BackendError&) {  // each send() follows its redirection anyway
    }
  }
  // Resharding: one send() each, following the redirections.
  for (std::size_t i : redirected) {
    if (deadline.expired()) {
      out[i] = Sent{};
      out[i].error = BackendError(ErrorCode::deadline_exceeded, "redis",
                                  "the deadline passed before a redirected command was sent again");
      continue;
    }
    try {
      out[i] = send(commands[i], operation, deadline, wait);
    } catch (const BackendError& e) {
      out[i] = Sent{};
      out[i].error = e;
    }
  }
  return out;
}

void Client::reject(const std::string& text, std::string_view operation) {
  if (cluster_ && text.rfind("CLUSTERDOWN", 0) == 0) cluster_->forget();
  if (text.rfind("READONLY", 0) == 0) pool_.forget_primary();  // demoted; no-op but Sentinel
  throw_reply_error(text, pool_.config(), operation);
}

void Client::node_failed(const BackendError& e) {
  if (cluster_ && (e.code() == ErrorCode::unavailable || e.code() == ErrorCode::deadline_exceeded))
    cluster_->forget();
}

}  // namespace leader::redis
