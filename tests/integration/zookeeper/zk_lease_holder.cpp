// zk_lease_holder URI LOCK ACQUIRE_TTL_MS RENEW_TTL_MS [SLOTS [release-on-eof]]: acquires LOCK
// (a group of SLOTS when given) with one store call, renews it once, prints "HELD <token> <renew
// sent, steady ns> <granted ttl ms after the renew>" and then sleeps without renewing, so that
// only the server decides when the lease ends (the test SIGSTOPs this process: its session then
// expires on the server). With `release-on-eof` it releases the lease once its stdin is closed
// and prints "RELEASED ok|lost".

#include <chrono>
#include <iostream>
#include <string>
#include <thread>

#include "leader/leader.hpp"

int main(int argc, char** argv) {
  if (argc < 5 || argc > 7) {
    std::cerr << "usage: zk_lease_holder URI LOCK ACQUIRE_TTL_MS RENEW_TTL_MS [SLOTS "
                 "[release-on-eof]]\n";
    return 64;
  }
  using Ms = std::chrono::milliseconds;
  try {
    auto store = leader::open(argv[1]);
    leader::LeaseRequest request{argv[2], leader::new_owner_token(), "zk-lease-holder",
                                 Ms{std::stol(argv[3])}, argc > 5 ? std::stoi(argv[5]) : 0};
    auto got = store->try_acquire(request, leader::Deadline::after(Ms{5000}));
    if (!got) {
      std::cout << "SKIPPED" << std::endl;
      return 1;
    }
    leader::Lease lease = *got.lease;
    const auto sent = std::chrono::steady_clock::now();
    const leader::Renewal renewal =
        store->renew(lease, Ms{std::stol(argv[4])}, leader::Deadline::after(Ms{5000}));
    if (renewal.status != leader::LeaseStatus::ok) {
      std::cout << "LOST" << std::endl;
      return 1;
    }
    std::cout
        << "HELD " << lease.fencing_token << " "
        << std::chrono::duration_cast<std::chrono::nanoseconds>(sent.time_since_epoch()).count()
        << " " << renewal.ttl.count() << std::endl;
    if (argc > 6 && std::string(argv[6]) == "release-on-eof") {
      for (std::string ignored; std::getline(std::cin, ignored);) {
      }
      const auto status = store->release(lease, Ms{0}, leader::Deadline::after(Ms{5000}));
      std::cout << "RELEASED " << (status == leader::LeaseStatus::ok ? "ok" : "lost") << std::endl;
    }
    while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
  } catch (const std::exception& e) {
    std::cerr << "zk_lease_holder: " << e.what() << "\n";
    return 70;
  }
}
