#include "etcd_test_util.hpp"

namespace leader::etcdtest {

std::string endpoint() { return env_or("LEADER_TEST_ETCD_ENDPOINT", "127.0.0.1:12379"); }

std::string uri(const std::string& prefix, const std::string& extra) {
  return "etcd://" + endpoint() + "?prefix=" + prefix + (extra.empty() ? "" : "&" + extra);
}

pid_t etcd_pid() {
  return test::read_pid_file(test::server_pid_file("LEADER_TEST_ETCD_PIDFILE", "etcd"));
}

}  // namespace leader::etcdtest
