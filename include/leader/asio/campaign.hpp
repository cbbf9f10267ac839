#pragma once
/// @file asio/campaign.hpp
/// leader::Campaign::run as an Asio asynchronous operation, usable with any completion token:
///
/// ```cpp
/// leader::Campaign campaign(elector, "svc", callbacks);
/// co_await leader::asio::async_campaign(campaign, ::asio::use_awaitable);  // until cancelled
/// ```
///
/// What is NOT guaranteed: that campaigning starts at once (run() occupies a BlockingPool thread
/// for the whole campaign and queues when every pool thread is busy).
///
/// Threads: the campaign (store calls, on_started_leading, on_stopped_leading) runs on a
/// BlockingPool thread, never on the caller's executor. The handler runs on its associated
/// executor (for use_awaitable, the coroutine's), never inside the initiating call. The campaign
/// must outlive the operation.
///
/// Completion signature: `void(std::exception_ptr)`: null when the campaign was cancelled (any
/// cancellation type on the handler's slot stops it: the term ends, the lease is released per
/// release_on_cancel), else what ended run() (on_started_leading's exception, a BackendError
/// that is not retryable).

#include <asio.hpp>
#include <atomic>
#include <exception>
#include <memory>
#include <stop_token>
#include <utility>

#include "leader/async.hpp"
#include "leader/campaign.hpp"

namespace leader::asio {
namespace detail {

/// One asynchronous campaign (internal).
template <class Handler>
class CampaignOp : public std::enable_shared_from_this<CampaignOp<Handler>> {
 public:
  CampaignOp(Handler handler, Campaign& campaign)
      : handler_(std::move(handler)),
        work_(::asio::make_work_guard(handler_)),
        campaign_(campaign) {}

  /// Connects the cancellation slot and starts run() on `pool`.
  void start(BlockingPool& pool) {
    auto slot = ::asio::get_associated_cancellation_slot(handler_);
    if (slot.is_connected())
      slot.assign([stop = stop_](::asio::cancellation_type type) mutable {
        if (type != ::asio::cancellation_type::none) stop.request_stop();
      });
    pool.post([self = this->shared_from_this()] {
      std::exception_ptr error;
      try {
        self->campaign_.run(self->stop_.get_token());
      } catch (...) {
        error = std::current_exception();
      }
      self->finish(error);
    });
  }

 private:
  void finish(std::exception_ptr error) {
    auto ex = work_.get_executor();
    ::asio::post(ex, [self = this->shared_from_this(), error]() mutable {
      auto slot = ::asio::get_associated_cancellation_slot(self->handler_);
      if (slot.is_connected()) slot.clear();
      Handler handler = std::move(self->handler_);
      self->work_.reset();
      std::move(handler)(error);
    });
  }

  Handler handler_;
  ::asio::executor_work_guard<::asio::associated_executor_t<Handler>> work_;
  Campaign& campaign_;
  std::stop_source stop_;
};

}  // namespace detail

/// Runs `campaign` until the operation is cancelled or run() ends with an error. See the file
/// comment for threads and the completion signature.
template <class CompletionToken>
auto async_campaign(Campaign& campaign, CompletionToken&& token,
                    BlockingPool& pool = BlockingPool::shared()) {
  return ::asio::async_initiate<CompletionToken, void(std::exception_ptr)>(
      [](auto handler, Campaign* c, BlockingPool* p) {
        using Op = detail::CampaignOp<std::decay_t<decltype(handler)>>;
        auto op = std::make_shared<Op>(std::move(handler), *c);
        op->start(*p);
      },
      token, &campaign, &pool);
}

}  // namespace leader::asio
