#include "dynamodb_test_util.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "server_process.hpp"

namespace leader::dynamodb::test {
namespace {

using ::leader::test::env_or;

std::string dynalite_bin() {
  return env_or("LEADER_TEST_DYNALITE_BIN", "/tmp/le-test/npm/node_modules/.bin/dynalite");
}

}  // namespace

std::string dynalite_addr() { return env_or("LEADER_TEST_DYNALITE_ADDR", "127.0.0.1:18000"); }

std::string uri_for(const std::string& table, const std::string& params) {
  return "dynamodb://test:test@" + dynalite_addr() + "?tls=false&table=" + table + params;
}

std::string unique_table(const std::string& stem) {
  static std::atomic<int> n{0};
  return "it_" + stem + "_" + std::to_string(getpid()) + "_" + std::to_string(n++);
}

std::shared_ptr<DynamoStore> open_store(const std::string& uri) {
  return std::make_shared<DynamoStore>(Config::from_uri(Uri::parse(uri)));
}

Dynalite::Dynalite(int port) : port_(port) {
  dir_ = "/tmp/le-test-dynalite-" + std::to_string(getpid()) + "-" + std::to_string(port);
  std::filesystem::remove_all(dir_);
  std::filesystem::create_directories(dir_);
  start();
}

Dynalite::~Dynalite() {
  kill();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool Dynalite::available() { return ::access(dynalite_bin().c_str(), X_OK) == 0; }

void Dynalite::start() {
  const std::string port = std::to_string(port_), log = dir_ + ".log";
  process_.emplace(
      std::vector<std::string>{dynalite_bin(), "--host", "127.0.0.1", "--port", port, "--path",
                               dir_, "--createTableMs", "0", "--deleteTableMs", "0"},
      ::leader::test::ChildOptions{.out = ::leader::test::Output::file,
                                   .err = ::leader::test::Output::file,
                                   .out_file = log,
                                   .err_file = log + ".err"});
  if (!::leader::test::wait_for_port(port_, std::chrono::seconds(20)))
    throw std::runtime_error("dynalite did not listen on port " + port + " (see " + log + ")");
}

void Dynalite::kill() { process_.reset(); }

std::string Dynalite::uri(const std::string& table) const {
  return "dynamodb://test:test@127.0.0.1:" + std::to_string(port_) + "?tls=false&table=" + table;
}

CaptureServer::CaptureServer() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(listen_fd_, 4) != 0)
    throw std::runtime_error("capture server: bind/listen failed");
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
  port_ = ntohs(a.sin_port);
}

CaptureServer::~CaptureServer() { ::close(listen_fd_); }

std::string CaptureServer::request() {
  int fd = ::accept(listen_fd_, nullptr, nullptr);
  if (fd < 0) throw std::runtime_error("capture server: accept failed");
  std::string text;
  std::vector<char> buf(65536);
  std::size_t want = std::string::npos;
  while (want == std::string::npos || text.size() < want) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    text.append(buf.data(), static_cast<std::size_t>(n));
    auto head_end = text.find("\r\n\r\n");
    if (want == std::string::npos && head_end != std::string::npos) {
      auto cl = text.find("Content-Length: ");
      std::size_t body = cl == std::string::npos ? 0 : std::stoul(text.substr(cl + 16));
      want = head_end + 4 + body;
    }
  }
  const std::string reply =
      "HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: 2\r\n"
      "Connection: close\r\n\r\n{}";
  (void)!::write(fd, reply.data(), reply.size());
  ::close(fd);
  return text;
}

}  // namespace leader::dynamodb::test
