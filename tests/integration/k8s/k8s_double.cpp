#include "k8s_double.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "http/base64.hpp"
#include "http/client.hpp"

namespace leader::k8s::test {

namespace {

void sh(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
}

}  // namespace

TestCa::TestCa() {
  static std::atomic<int> count{0};
  dir = std::filesystem::temp_directory_path() /
        ("leader-k8s-ca-" + std::to_string(::getpid()) + "-" + std::to_string(count++));
  std::filesystem::create_directories(dir);
  const std::string d = dir.string(), ssl = LEADER_OPENSSL;
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  sh(ssl + " req -x509" + ec + " -days 2 -subj /CN=leader-k8s-test-ca -keyout " + d +
     "/ca.key -out " + d + "/ca.crt 2>/dev/null");
  sh(ssl + " req" + ec + " -subj /CN=localhost -keyout " + d + "/server.key -out " + d +
     "/server.csr 2>/dev/null");
  std::ofstream(dir / "san.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  sh(ssl + " x509 -req -in " + d + "/server.csr -CA " + d + "/ca.crt -CAkey " + d +
     "/ca.key -CAcreateserial -days 2 -extfile " + d + "/san.ext -out " + d +
     "/server.crt 2>/dev/null");
  sh(ssl + " req" + ec + " -subj /CN=leader-client/O=leader-test -keyout " + d +
     "/client.key -out " + d + "/client.csr 2>/dev/null");
  std::ofstream(dir / "client.ext") << "extendedKeyUsage=clientAuth\n";
  sh(ssl + " x509 -req -in " + d + "/client.csr -CA " + d + "/ca.crt -CAkey " + d +
     "/ca.key -CAcreateserial -days 2 -extfile " + d + "/client.ext -out " + d +
     "/client.crt 2>/dev/null");
  sh(ssl + " req -x509" + ec + " -days 2 -subj /CN=unrelated -keyout " + d + "/other.key -out " +
     d + "/other.crt 2>/dev/null");
}

TestCa::~TestCa() {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

ScopedEnv::~ScopedEnv() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second) {
      ::setenv(it->first.c_str(), it->second->c_str(), 1);
    } else {
      ::unsetenv(it->first.c_str());
    }
  }
}

void ScopedEnv::save(const std::string& name) {
  const char* old = std::getenv(name.c_str());
  saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
}

void ScopedEnv::set(const std::string& name, const std::string& value) {
  save(name);
  ::setenv(name.c_str(), value.c_str(), 1);
}

void ScopedEnv::unset(const std::string& name) {
  save(name);
  ::unsetenv(name.c_str());
}

std::string base64(const std::string& bytes) { return http::base64_encode(bytes); }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

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
