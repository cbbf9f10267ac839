#include "consul_double.hpp"

#include <stdexcept>

namespace leader::consul::test {

DoubleServer::DoubleServer(std::vector<std::string> args) {
  std::vector<std::string> argv{"/usr/bin/env",      "python3", LEADER_CONSUL_DOUBLE, "--port", "0",
                                "--session-ttl-min", "100ms"};
  argv.insert(argv.end(), args.begin(), args.end());
  child_ = std::make_unique<leader::test::ChildProcess>(argv);
  const std::string line = child_->read_line(Ms{20000});
  if (line.rfind("PORT ", 0) != 0)
    throw std::runtime_error("the Consul double did not start: " + line);
  port_ = std::stoi(line.substr(5));
}

std::string DoubleServer::uri(const std::string& extra) const {
  return "consul://127.0.0.1:" + std::to_string(port_) + "?prefix=it&session_ttl_min=100ms" + extra;
}

std::shared_ptr<ConsulStore> DoubleServer::store(const std::string& extra) const {
  return std::make_shared<ConsulStore>(Config::from_uri(Uri::parse(uri(extra))));
}

LeaseRequest single(const std::string& lock, Ms ttl, int slots) {
  return {lock, new_owner_token(), "it-node", ttl, slots};
}

}  // namespace leader::consul::test
