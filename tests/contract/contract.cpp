#include "contract.hpp"

#include <unistd.h>

#include <atomic>

namespace leader::contract {

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

void ContractTest::TearDown() { store_.reset(); }

Outage::Outage(const Backend& b) : b_(b) { b_.outage_begin(); }
Outage::~Outage() { end(); }
void Outage::end() {
  if (active_) {
    active_ = false;
    b_.outage_end();
  }
}

std::string child_binary() { return LEADER_CONTRACT_CHILD; }

}  // namespace leader::contract
