// Metrics::instrument: a LeaseStore decorator that times each call and counts failures by code.

#include <chrono>

#include "leader/detail/capabilities.hpp"
#include "leader/errors.hpp"
#include "leader/forwarding_store.hpp"
#include "metrics_state.hpp"

namespace leader::metrics {
namespace {

using detail::Operation;

class InstrumentedStore final : public ForwardingStore, public ::leader::detail::AsyncAttempts {
 public:
  InstrumentedStore(std::shared_ptr<LeaseStore> inner, std::shared_ptr<detail::MetricsState> state)
      : ForwardingStore(std::move(inner)),
        async_(this->inner().capabilities().async),
        state_(std::move(state)),
        scheme_(this->inner().scheme()),
        histograms_(state_->store_histograms(scheme_)) {}

 private:
  // Runs `call`, observing its latency (successful or not) and counting a throw by its code.
  template <typename Call>
  decltype(auto) timed(Operation operation, Call&& call) {
    const auto start = std::chrono::steady_clock::now();
    struct Observe {
      prometheus::Histogram* histogram;
      std::chrono::steady_clock::time_point start;
      ~Observe() {
        const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
        histogram->Observe(d.count());
      }
    } observe{histograms_[static_cast<std::size_t>(operation)], start};
    try {
      return call();
    } catch (const BackendError& e) {
      state_->store_error(scheme_, operation, std::string(to_string(e.code())));
      throw;
    } catch (const InvalidArgument&) {
      state_->store_error(scheme_, operation, "invalid_argument");
      throw;
    } catch (...) {
      state_->store_error(scheme_, operation, "other");
      throw;
    }
  }

 public:
  // The wrapped store's capabilities; its asynchronous attempts are timed here.
  [[nodiscard]] Capabilities capabilities() noexcept override {
    Capabilities c = ForwardingStore::capabilities();
    if (c.async != nullptr) c.async = this;
    return c;
  }

  Acquired try_acquire(const LeaseRequest& request, Deadline deadline) override {
    return timed(Operation::acquire, [&] { return inner().try_acquire(request, deadline); });
  }
  Renewal renew(const Lease& lease, Duration ttl, Deadline deadline) override {
    return timed(Operation::renew, [&] { return inner().renew(lease, ttl, deadline); });
  }
  // One latency observation per batch (one round trip); each lease's error is counted.
  std::vector<BatchRenewal> renew_batch(std::span<const RenewalRequest> requests,
                                        Deadline deadline) override {
    auto out = timed(Operation::renew, [&] { return inner().renew_batch(requests, deadline); });
    for (const BatchRenewal& r : out)
      if (r.error)
        state_->store_error(scheme_, Operation::renew, std::string(to_string(r.error->code())));
    return out;
  }
  LeaseStatus release(const Lease& lease, Duration keep_for, Deadline deadline) override {
    return timed(Operation::release, [&] { return inner().release(lease, keep_for, deadline); });
  }
  [[nodiscard]] LockState inspect(std::string_view lock, Deadline deadline) override {
    return timed(Operation::inspect, [&] { return inner().inspect(lock, deadline); });
  }
  void put_candidate(std::string_view group, const Candidate& candidate, Duration ttl,
                     Deadline deadline) override {
    timed(Operation::put_candidate,
          [&] { inner().put_candidate(group, candidate, ttl, deadline); });
  }
  [[nodiscard]] std::vector<Candidate> list_candidates(std::string_view group,
                                                       Deadline deadline) override {
    return timed(Operation::list_candidates,
                 [&] { return inner().list_candidates(group, deadline); });
  }
  void remove_candidate(std::string_view group, std::string_view node_id,
                        Deadline deadline) override {
    timed(Operation::remove_candidate, [&] { inner().remove_candidate(group, node_id, deadline); });
  }
  // Asynchronous attempts (the store's own, when it has them) are timed like try_acquire: from
  // the call to the outcome's delivery on the store's I/O thread.
  [[nodiscard]] bool attempts_async() const noexcept override {
    return async_ != nullptr && async_->attempts_async();
  }
  void try_acquire_async(const LeaseRequest& request, Deadline deadline,
                         std::function<void(Attempt)> done) override {
    if (async_ == nullptr)
      throw InvalidArgument("metrics: the instrumented store has no asynchronous attempts");
    async_->try_acquire_async(
        request, deadline,
        [state = state_, scheme = scheme_,
         histogram = histograms_[static_cast<std::size_t>(Operation::acquire)],
         start = std::chrono::steady_clock::now(), done = std::move(done)](Attempt a) {
          const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start;
          histogram->Observe(d.count());
          if (a.error) {
            try {
              std::rethrow_exception(a.error);
            } catch (const BackendError& e) {
              state->store_error(scheme, Operation::acquire, std::string(to_string(e.code())));
            } catch (...) {
              state->store_error(scheme, Operation::acquire, "other");
            }
          }
          done(std::move(a));
        });
  }
  std::uint64_t wait_change(std::string_view lock, std::uint64_t seen, Deadline until,
                            Deadline last, std::uint64_t order,
                            std::function<void(bool)> woken) override {
    if (async_ == nullptr)
      throw InvalidArgument("metrics: the instrumented store has no asynchronous attempts");
    return async_->wait_change(lock, seen, until, last, order, std::move(woken));
  }
  void cancel_wait(std::uint64_t id) noexcept override {
    if (async_ != nullptr) async_->cancel_wait(id);
  }

 private:
  ::leader::detail::AsyncAttempts* async_ = nullptr;  // its asynchronous attempts, if any
  std::shared_ptr<detail::MetricsState> state_;
  std::string scheme_;
  detail::StoreHistograms histograms_;
};

}  // namespace

std::shared_ptr<LeaseStore> Metrics::instrument(std::shared_ptr<LeaseStore> store) {
  if (!store) throw InvalidArgument("metrics: instrument() needs a store, got null");
  return std::make_shared<InstrumentedStore>(std::move(store), state_);
}

}  // namespace leader::metrics
