// ZooKeeper node data and child names: lease node data (ours or a foreign contender's), candidate
// node data, and contender sequence names (kazoo, Curator). Input: the node data; its lines are
// also used as the children of a lock directory.

#include "fuzz_support.hpp"
#include "zookeeper/zk_core.hpp"
#include "zookeeper/zk_data.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using leader::fuzz::expect_value_or_error;
  namespace zk = leader::zookeeper;
  const std::string text = leader::fuzz::text_of(data, size);
  expect_value_or_error([&] { (void)zk::recorded_owner(text); });
  expect_value_or_error([&] {
    leader::Holder h;
    zk::read_holder_data(text, "0123456789abcdef0123456789abcdef__lock__0000000001", h);
  });
  expect_value_or_error([&] { (void)zk::parse_candidate(text); });
  expect_value_or_error([&] { (void)zk::candidate_expired(text, 1764547200000, 1764547260000); });
  expect_value_or_error([&] {
    const auto contenders = zk::sorted_contenders(leader::fuzz::split(text, '\n'));
    for (std::size_t i = 1; i < contenders.size(); ++i)
      if (contenders[i - 1].seq > contenders[i].seq) __builtin_trap();  // sorted
  });
  return 0;
}
