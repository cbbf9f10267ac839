#include "contract.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <mutex>

namespace leader::contract {

namespace case_files {
/// Defined in the generated case_files.cpp: reads the anchor of every case file.
int linked();
}  // namespace case_files

namespace {

/// Counts the cases started (ContractTest::SetUp): a factory_backend store belongs to one.
std::atomic<std::uint64_t> case_serial{0};

}  // namespace

Backend factory_backend(std::string name, std::function<std::shared_ptr<LeaseStore>()> factory) {
  struct PerCase {
    std::mutex mu;
    std::function<std::shared_ptr<LeaseStore>()> factory;
    std::uint64_t serial = 0;
    std::shared_ptr<LeaseStore> store;
  };
  auto state = std::make_shared<PerCase>();
  state->factory = std::move(factory);
  Backend b;
  b.name = std::move(name);
  b.open = [state] {
    std::lock_guard lock(state->mu);
    const std::uint64_t serial = case_serial.load();
    if (!state->store || state->serial != serial) {
      state->store.reset();  // the previous case's store goes before the next one opens
      state->store = state->factory();
      state->serial = serial;
    }
    return state->store;
  };
  return b;
}

Backend registered(Backend b) {
  (void)case_files::linked();
  return b;
}

std::shared_ptr<LeaseStore> warmed(std::shared_ptr<LeaseStore> store) {
  try {
    (void)store->inspect("contract-warm-up", Deadline::after(std::chrono::seconds(5)));
  } catch (const BackendError&) {  // an outage case may open its clients while the server is down
  }
  return store;
}

std::shared_ptr<LeaseStore> ContractTest::store() {
  if (!store_) store_ = backend().open();
  return store_;
}

std::string ContractTest::lock(const std::string& suffix) {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string("ct-") + info->name() + "-" + std::to_string(getpid()) + "-" +
                     std::to_string(counter++) + suffix;
  for (char& c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) c = '-';
  return name;
}

void ContractTest::SetUp() { ++case_serial; }

void ContractTest::TearDown() { store_.reset(); }

Outage::Outage(const Backend& b) : b_(b) { b_.outage_begin(); }
Outage::~Outage() { end(); }
void Outage::end() {
  if (active_) {
    active_ = false;
    b_.outage_end();
  }
}

std::string missing(const Backend& b, Need need) {
  const std::string kit =
      " (LEADER_STORE_CONTRACT has a store factory only: register a Backend with these hooks "
      "through LEADER_STORE_CONTRACT_BACKEND to run this case)";
  switch (need) {
    case Need::outage:
      if (b.outage_begin && b.outage_end) return "";
      return b.name + " has no outage hook: Backend::outage_begin/outage_end, a server to pause" +
             kit;
    case Need::processes:
      if (!b.uri.empty() && !b.child.empty()) return "";
      if (b.uri.empty() && !b.child.empty())
        return b.name + " is in-process only: no Backend::uri for other processes to open";
      return b.name + " has no " + (b.uri.empty() ? "Backend::uri and no " : "") +
             "Backend::child, a program that opens the URI in other processes" + kit;
  }
  return "";
}

}  // namespace leader::contract
