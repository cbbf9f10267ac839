#include "client.hpp"

#include <utility>

#include "leader/errors.hpp"

namespace leader::redis {

Client::Client(ClientConfig config) : pool_(std::move(config)) {
  if (pool_.config().cluster()) cluster_ = std::make_unique<Cluster>(pool_.config());
}

Client::~Client() = default;

ConnectionPool& Client::pool_for(const std::string& key, Deadline deadline) {
  if (!cluster_) return pool_;
  return cluster_->pool_for_slot(key_slot(key), deadline);
}

std::vector<ConnectionPool*> Client::nodes(Deadline deadline) {
  if (cluster_) return cluster_->primaries(deadline);
  return {&pool_};
}

bool Client::lane_available() const noexcept {
  return !cluster_ && pool_.config().wait_replicas == 0;
}

AsyncLane& Client::lane() {
  std::lock_guard lock(lane_mu_);
  if (!lane_) lane_ = std::make_unique<AsyncLane>(pool_);
  return *lane_;
}

AsyncLane::Stats Client::lane_stats() const {
  std::lock_guard lock(lane_mu_);
  return lane_ ? lane_->stats() : AsyncLane::Stats{};
}

void Client::submit(Command command, std::string channel, std::string_view operation,
                    Deadline deadline, AsyncLane::Done done) {
  if (!lane_available())
    throw BackendError(ErrorCode::failed_precondition, "redis",
                       "the asynchronous lane needs a standalone or Sentinel client without "
                       "?wait_replicas= (lane_available() is false)");
  lane().submit(std::move(command), std::move(channel), deadline,
                [this, operation = std::string(operation), done = std::move(done)](
                    Reply reply, std::exception_ptr error, TimePoint sent, std::uint64_t seen) {
                  if (const std::string text = error_text(reply.get()); !error && !text.empty()) {
                    try {
                      reject(text, operation);  // as send() does: READONLY looks again
                    } catch (...) {
                      error = std::current_exception();
                    }
                  }
                  done(std::move(reply), std::move(error), sent, seen);
                });
}

std::uint64_t Client::wait_change(const std::string& channel, std::uint64_t seen, Deadline until,
                                  Deadline last, std::uint64_t order,
                                  std::function<void(bool)> woken) {
  return lane().wait(channel, seen, until, last, order, std::move(woken));
}

void Client::cancel_wait(std::uint64_t id) noexcept {
  std::lock_guard lock(lane_mu_);
  if (lane_) lane_->cancel(id);
}

}  // namespace leader::redis
