// A tiny client process for the PostgreSQL integration tests (run under libfaketime or killed
// with SIGKILL). Usage: postgres_child <uri> <lock> <ttl_ms> <hold_ms>   (hold_ms < 0: forever)
// Prints "ACQUIRED <token> <wall_epoch_s>" or "SKIPPED <wall_epoch_s>", then after the hold
// "RELEASED ok|lost".
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>

#include "leader/leader.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <uri> <lock> <ttl_ms> <hold_ms>\n", argv[0]);
    return 64;
  }
  try {
    auto store = leader::open(argv[1]);
    const leader::Duration ttl(std::stoll(argv[3]));
    const long long hold = std::stoll(argv[4]);
    auto got = store->try_acquire({argv[2], leader::new_owner_token(), "child", ttl, 0},
                                  leader::Deadline::after(std::chrono::seconds(5)));
    const long long wall = static_cast<long long>(std::time(nullptr));
    if (!got) {
      std::printf("SKIPPED %lld\n", wall);
      return 0;
    }
    std::printf("ACQUIRED %llu %lld\n", static_cast<unsigned long long>(got.lease->fencing_token),
                wall);
    std::fflush(stdout);
    if (hold < 0)
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(hold));
    auto st = store->release(*got.lease, leader::Duration{0},
                             leader::Deadline::after(std::chrono::seconds(5)));
    std::printf("RELEASED %s\n", st == leader::LeaseStatus::ok ? "ok" : "lost");
    return 0;
  } catch (const std::exception& e) {
    std::printf("ERROR %s\n", e.what());
    return 1;
  }
}
