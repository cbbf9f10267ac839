#include "second_client.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <exception>

#include "cli_support.hpp"
#include "leader/open.hpp"

namespace leader::cli_test {

using namespace std::chrono_literals;

std::int64_t wall_ns(Wall::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

double ms_between(Wall::time_point from, Wall::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

std::string timestamp_writer(const std::string& file) {
  return "while :; do date +%s%N >> " + file + "; sleep 0.01; done";
}

std::vector<std::int64_t> timestamps(const std::string& file) {
  std::vector<std::int64_t> out;
  for (const auto& line : read_lines(file)) out.push_back(std::stoll(line));
  return out;
}

LeaseRequest second_client_request(const std::string& lock) {
  return LeaseRequest{.lock = lock,
                      .owner = "0123456789abcdef0123456789abcdef",
                      .node_id = "second-client",
                      .ttl = 30s,
                      .slots = 0};
}

SecondClient::SecondClient(const std::string& uri, std::string lock)
    : store_(leader::open(uri)), lock_(std::move(lock)), thread_([this] { poll(); }) {}

SecondClient::~SecondClient() {
  stop_ = true;
  thread_.join();
  if (lease_) (void)store_->release(*lease_, Duration{0}, Deadline::after(5s));
}

std::optional<Wall::time_point> SecondClient::granted(std::chrono::seconds limit) {
  eventually([&] { return taken_.load(); }, limit);
  std::lock_guard lock(mu_);
  return taken_at_;
}

void SecondClient::poll() {
  const LeaseRequest request = second_client_request(lock_);
  while (!stop_) {
    auto sent = Wall::now();
    try {
      Acquired got = store_->try_acquire(request, Deadline::after(2s));
      if (got) {
        std::lock_guard lock(mu_);
        lease_ = std::move(got.lease);
        taken_at_ = sent;
        taken_ = true;
        return;
      }
    } catch (const std::exception&) {
      // busy or unreachable for a moment: try again
    }
    std::this_thread::sleep_for(10ms);
  }
}

void expect_no_write_after_grant(SecondClient& client, const std::string& file,
                                 Wall::time_point disturbed_at, const std::string& who) {
  auto grant = client.granted(30s);
  ASSERT_TRUE(grant) << "the server never let the second client in";
  std::this_thread::sleep_for(1s);  // a write after the grant would show up by now
  auto all = timestamps(file);
  ASSERT_FALSE(all.empty());
  std::int64_t last = *std::max_element(all.begin(), all.end());
  EXPECT_LT(last, wall_ns(*grant))
      << who << "'s command wrote " << (last - wall_ns(*grant)) / 1'000'000
      << " ms after the server gave the lock to another client";
  EXPECT_GT(last, wall_ns(disturbed_at))
      << "vacuous: nothing ran while " << who << " was disturbed";
}

}  // namespace leader::cli_test
