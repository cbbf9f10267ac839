#pragma once
/// @file state_watch.hpp
/// Awaiting a change of this process's leadership of a lock (EventBus::state) as an Asio
/// asynchronous operation, the equivalent of collecting a leadership state flow:
///
/// ```cpp
/// auto bus = elector.event_bus();
/// leader::LeadershipState s = bus->state("job");
/// for (;;) {
///   s = co_await leader::asio::async_wait_state_change(bus, "job", s.version,
///   ::asio::use_awaitable); log(s.held ? "leading" : "following");
/// }
/// ```
///
/// What is NOT guaranteed: that every intermediate state is observed. The operation completes with
/// the state current when it completes; a caller that re-waits from that version sees the next
/// change after it, not each one in between (EventBus::watch_state queues every change).
///
/// Threads: no thread is blocked while waiting. The handler runs on its associated executor
/// (for use_awaitable, the coroutine's), never inside the initiating call.
///
/// Completion signature: `void(std::error_code, LeadershipState)`. Cancellation (any type on the
/// handler's slot) completes it with `::asio::error::operation_aborted` and the current state.

#include <asio.hpp>
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "leader/events.hpp"

namespace leader::asio {
namespace detail {

/// One wait for a state change (internal).
template <class Handler>
class StateWaitOp : public std::enable_shared_from_this<StateWaitOp<Handler>> {
 public:
  StateWaitOp(Handler handler, std::shared_ptr<EventBus> bus, std::string lock)
      : handler_(std::move(handler)),
        work_(::asio::make_work_guard(handler_)),
        bus_(std::move(bus)),
        lock_(std::move(lock)) {}

  /// Registers with the bus and the handler's cancellation slot.
  void start(std::uint64_t after_version) {
    std::weak_ptr<StateWaitOp> weak = this->weak_from_this();
    // The slot first: the bus may complete the wait at once, and then clears the slot.
    auto slot = ::asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected())
      slot.assign([weak](::asio::cancellation_type type) {
        if (type == ::asio::cancellation_type::none) return;
        if (auto self = weak.lock()) {
          self->bus_->cancel_state_notification(self->id_.load());
          self->finish(::asio::error::operation_aborted, self->bus_->state(self->lock_));
        }
      });
    // The bus owns the operation until it notifies or the notification is cancelled.
    id_.store(bus_->notify_state_change(
        lock_, after_version,
        [self = this->shared_from_this()](const LeadershipState& s) { self->finish({}, s); }));
  }

 private:
  /// Completes once: posts the handler to its executor.
  void finish(std::error_code ec, LeadershipState state) {
    if (done_.exchange(true)) return;
    auto ex = work_.get_executor();
    ::asio::post(ex, [self = this->shared_from_this(), ec, state = std::move(state)]() mutable {
      auto slot = ::asio::get_associated_cancellation_slot(self->handler_);
      if (slot.is_connected()) slot.clear();
      Handler handler = std::move(self->handler_);
      self->work_.reset();
      std::move(handler)(ec, std::move(state));
    });
  }

  Handler handler_;
  ::asio::executor_work_guard<::asio::associated_executor_t<Handler>> work_;
  std::shared_ptr<EventBus> bus_;
  std::string lock_;
  std::atomic<std::uint64_t> id_{0};
  std::atomic<bool> done_{false};
};

}  // namespace detail

/// Completes with the state of `lock` on `bus` once its version is above `after_version` (at
/// once when it already is). See the file comment.
template <class CompletionToken>
auto async_wait_state_change(std::shared_ptr<EventBus> bus, std::string_view lock,
                             std::uint64_t after_version, CompletionToken&& token) {
  return ::asio::async_initiate<CompletionToken, void(std::error_code, LeadershipState)>(
      [](auto handler, std::shared_ptr<EventBus> b, std::string name, std::uint64_t after) {
        using Op = detail::StateWaitOp<std::decay_t<decltype(handler)>>;
        auto op = std::make_shared<Op>(std::move(handler), std::move(b), std::move(name));
        op->start(after);
      },
      token, std::move(bus), std::string(lock), after_version);
}

}  // namespace leader::asio
