#include "http_test_util.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

#include "http/json.hpp"

namespace leader::httptest {
namespace {

// Binds a loopback TCP socket to a free port; returns the socket and sets `port`.
int bound_socket(int& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("bind failed");
  }
  port = ntohs(addr.sin_port);
  return fd;
}

void run(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
}

// One EC key and a certificate for `subject`, signed by `ca` (self-signed when `ca` is empty).
void make_cert(const std::string& dir, const std::string& name, const std::string& subject,
               const std::string& ca) {
  const std::string openssl = LEADER_OPENSSL;
  const std::string base = dir + "/" + name;
  if (ca.empty()) {
    run(openssl + " req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2" +
        " -subj '" + subject + "' -keyout " + base + ".key -out " + base + ".crt 2>/dev/null");
    return;
  }
  run(openssl + " req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj '" + subject +
      "' -keyout " + base + ".key -out " + base + ".csr 2>/dev/null");
  run("printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n"
      "extendedKeyUsage=serverAuth,clientAuth\\n' > " +
      base + ".ext");
  run(openssl + " x509 -req -in " + base + ".csr -CA " + dir + "/" + ca + ".crt -CAkey " + dir +
      "/" + ca + ".key -CAcreateserial -days 2 -extfile " + base + ".ext -out " + base +
      ".crt 2>/dev/null");
}

}  // namespace

Double::Double(const std::vector<std::string>& args)
    : child_([&] {
        std::vector<std::string> argv{LEADER_PYTHON3, LEADER_HTTP_DOUBLE};
        argv.insert(argv.end(), args.begin(), args.end());
        return argv;
      }()) {
  const std::string line = child_.read_line(Ms{10000});
  if (line.rfind("PORT ", 0) != 0)
    throw std::runtime_error("http_double.py did not start: '" + line + "'");
  port_ = std::stoi(line.substr(5));
}

std::string Double::url(bool tls) const {
  return std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(port_);
}

const Certs& Certs::get() {
  static const Certs certs = [] {
    Certs c;
    char tmpl[] = "/tmp/leader-http-certs.XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    c.dir = tmpl;
    make_cert(c.dir, "ca", "/CN=leader-http-test-ca", "");
    make_cert(c.dir, "other-ca", "/CN=unrelated-ca", "");
    make_cert(c.dir, "server", "/CN=localhost", "ca");
    make_cert(c.dir, "client", "/O=leader-http-test-client", "ca");
    c.ca = c.dir + "/ca.crt";
    c.other_ca = c.dir + "/other-ca.crt";
    c.server_crt = c.dir + "/server.crt";
    c.server_key = c.dir + "/server.key";
    c.client_crt = c.dir + "/client.crt";
    c.client_key = c.dir + "/client.key";
    std::atexit([] { std::system(("rm -rf " + Certs::get().dir).c_str()); });
    return c;
  }();
  return certs;
}

int closed_port() {
  int port = 0;
  ::close(bound_socket(port));
  return port;
}

SilentListener::SilentListener() {
  fd_ = bound_socket(port_);
  if (::listen(fd_, 64) != 0) throw std::runtime_error("listen failed");
}

SilentListener::~SilentListener() { ::close(fd_); }

std::string SilentListener::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

http::ClientOptions options(std::vector<std::string> urls) {
  http::ClientOptions o;
  o.store = "test";
  o.base_urls = std::move(urls);
  return o;
}

ErrorCode code_of(const std::function<void()>& f, std::string* what) {
  try {
    f();
  } catch (const BackendError& e) {
    if (what) *what = e.what();
    EXPECT_EQ(e.store(), "test");
    return e.code();
  }
  ADD_FAILURE() << "no BackendError";
  return ErrorCode::internal;
}

nlohmann::json echoed(const http::Response& r) {
  auto body = http::parse_json_object(r.body);
  if (!body) throw std::runtime_error("not a JSON object: " + r.body);
  return *body;
}

}  // namespace leader::httptest
