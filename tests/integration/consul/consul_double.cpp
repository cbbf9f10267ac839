#include "consul_double.hpp"

#include <stdexcept>

#include "consul/transport.hpp"

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
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--agent") continue;
    const std::string agent = child_->read_line(Ms{20000});  // "AGENT <node> <port>"
    const std::string head = "AGENT " + args[i + 1] + " ";
    if (agent.rfind(head, 0) != 0)
      throw std::runtime_error("the Consul double did not start agent " + args[i + 1] + ": " +
                               agent);
    agents_.emplace_back(args[i + 1], std::stoi(agent.substr(head.size())));
  }
}

std::shared_ptr<ConsulStore> DoubleServer::store_on(const std::string& node,
                                                    const std::string& extra) const {
  for (const auto& [name, port] : agents_)
    if (name == node)
      return std::make_shared<ConsulStore>(
          Config::from_uri(Uri::parse("consul://127.0.0.1:" + std::to_string(port) +
                                      "?prefix=it&session_ttl_min=100ms" + extra)));
  throw std::invalid_argument("the Consul double has no agent of node " + node);
}

long DoubleServer::put(const std::string& target, const std::string& body) const {
  Transport t(Config::from_uri(Uri::parse(uri())));
  return t.send("PUT", target, body, soon()).status;
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
