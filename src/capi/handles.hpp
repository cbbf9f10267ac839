#pragma once
// The C interface's handles (leader.h) over the C++ library's public types, and the one way a
// call turns an exception into a leader_status and the thread's last error.

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <variant>

#include "leader/leader.h"
#include "leader/leader.hpp"

struct leader_store {
  std::shared_ptr<leader::LeaseStore> store;
};

struct leader_elector {
  std::variant<leader::LeaderElector, leader::LeaderGroupElector> elector;
  [[nodiscard]] const leader::Elector& base() const {
    return std::visit([](const auto& e) -> const leader::Elector& { return e; }, elector);
  }
};

struct leader_cancel {
  std::stop_source source;
};

// A LeaderContext as the C caller sees it; lives as long as the lease (or the action) it wraps.
struct leader_context {
  explicit leader_context(leader::LeaderContext& c) : ctx(&c) {}
  leader_context(const leader_context&) = delete;
  leader_context& operator=(const leader_context&) = delete;
  ~leader_context() {
    wake.reset();  // before the descriptor it writes to is closed
    if (fd >= 0) ::close(fd);
  }
  // Makes the descriptor readable: the stop signal fired.
  struct Wake {
    int fd;
    void operator()() const noexcept {
      const std::uint64_t one = 1;
      [[maybe_unused]] const auto n = ::write(fd, &one, sizeof one);
    }
  };
  leader::LeaderContext* ctx;
  std::mutex mu;  // guards fd and wake (leader_context_stop_fd may race itself)
  int fd = -1;
  std::optional<std::stop_callback<Wake>> wake;
};

struct leader_lease {
  explicit leader_lease(leader::LeaseGuard g) : guard(std::move(g)), ctx(guard.context()) {}
  leader::LeaseGuard guard;
  leader_context ctx;
};

namespace leader::capi {

/// Records `message` as this thread's last error and returns `status`.
leader_status fail(leader_status status, std::string message);
/// The status of the exception being handled (call inside a catch block), recorded as the last
/// error with its message.
leader_status from_current_exception() noexcept;
/// The status a store's error code maps to.
leader_status status_of(ErrorCode code) noexcept;

/// Runs `call` (returning a leader_status); any exception becomes its status.
template <class Call>
leader_status guarded(Call&& call) noexcept {
  try {
    return std::forward<Call>(call)();
  } catch (...) {
    return from_current_exception();
  }
}

/// A stop token of `cancel` (none for NULL).
inline std::stop_token token_of(const leader_cancel* cancel) {
  return cancel != nullptr ? cancel->source.get_token() : std::stop_token{};
}

}  // namespace leader::capi
