#include "k8s_double.hpp"

#include <gtest/gtest.h>

#include "http/client.hpp"

namespace leader::k8s::test {

Double::Double(const std::vector<std::string>& args) {
  std::vector<std::string> argv{
      "/usr/bin/python3", LEADER_SOURCE_DIR "/tests/doubles/k8s/k8s_double.py", "--port", "0"};
  argv.insert(argv.end(), args.begin(), args.end());
  process_ = std::make_unique<leader::test::ChildProcess>(argv);
  const std::string line = process_->read_line(std::chrono::seconds(20));
  if (line.rfind("READY ", 0) != 0) throw std::runtime_error("the k8s double did not start");
  port_ = std::stoi(line.substr(6));
}

std::string Double::uri(const std::string& ns, const std::string& extra) const {
  return "k8s://127.0.0.1:" + std::to_string(port_) + "?tls=false&namespace=" + ns + extra;
}

std::shared_ptr<K8sStore> Double::store(const std::string& ns, const std::string& extra) const {
  return std::make_shared<K8sStore>(Config::from_uri(Uri::parse(uri(ns, extra))));
}

void Double::faults(const std::string& spec) const {
  http::ClientOptions o;
  o.store = "test";
  o.base_urls = {"http://127.0.0.1:" + std::to_string(port_)};
  http::Client c(o);
  auto r = c.send({http::Method::post, "/_double/faults", {}, spec}, soon());
  if (r.status != 200) throw std::runtime_error("fault hook refused: " + r.body);
}

}  // namespace leader::k8s::test
