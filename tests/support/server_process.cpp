#include "server_process.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace leader::test {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

pid_t read_pid_file(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  if (!(in >> pid) || pid <= 0)
    throw std::runtime_error("no PID in " + path + " (is the test server running?)");
  return pid;
}

std::string server_pid_file(const char* env, const std::string& server) {
  return env_or(env, env_or("LE_TEST_ROOT", "/tmp/le-test") + "/pids/" + server + ".pid");
}

namespace {

// The fields after the command of a /proc/.../stat file: "<state> <ppid> ...", or empty when the
// process or thread ended meanwhile.
std::string stat_fields(const std::filesystem::path& stat_file) {
  std::ifstream stat(stat_file);
  std::string line;
  if (!std::getline(stat, line)) return {};
  const auto close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return {};
  return line.substr(close + 2);
}

}  // namespace

std::vector<pid_t> with_children(pid_t root) {
  std::vector<pid_t> pids{root};
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::istringstream rest(stat_fields(entry.path() / "stat"));
    char state = 0;
    pid_t ppid = 0;
    if (!(rest >> state >> ppid)) continue;
    if (ppid == root) pids.push_back(std::stoi(entry.path().filename().string()));
  }
  return pids;
}

namespace {

// Whether every thread of `pid` is stopped ('T'; 't' when traced) or gone, from /proc.
bool all_threads_stopped(pid_t pid) {
  std::error_code ec;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(tasks, ec)) {
    const std::string fields = stat_fields(entry.path() / "stat");
    if (fields.empty()) continue;  // the thread ended meanwhile
    const char state = fields[0];
    if (state != 'T' && state != 't' && state != 'Z' && state != 'X') return false;
  }
  return true;
}

}  // namespace

ProcessPause::ProcessPause(std::vector<pid_t> pids) : pids_(std::move(pids)) {
  for (pid_t p : pids_) ::kill(p, SIGSTOP);
  // kill() only queues the signal: every thread stops when it next runs, which under load can be
  // after a request sent just now was served (seen once: an acquire granted by the 3-member etcd
  // "during" its outage in a full CI run). The outage begins when all threads are stopped.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (pid_t p : pids_) {
    while (!all_threads_stopped(p) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void ProcessPause::resume() {
  for (auto it = pids_.rbegin(); it != pids_.rend(); ++it) ::kill(*it, SIGCONT);
  pids_.clear();
}

bool port_open(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

bool wait_for_port(int port, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!port_open(port)) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

int free_port() {
  // Not a kernel-chosen port: those come from the ephemeral range (ip_local_port_range,
  // 32768-60999 here), where any outgoing connection of a concurrent test may take the port
  // between this check and the server's bind, and where a client polling a port nobody listens
  // on yet can connect to itself. A random port below that range, free now, avoids both; one
  // drawn per call from a per-process sequence keeps two servers of one test apart.
  static std::atomic<unsigned> sequence{static_cast<unsigned>(::getpid()) * 7919u};
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = 20000 + static_cast<int>((sequence.fetch_add(104729u) ^
                                               static_cast<unsigned>(::time(nullptr))) %
                                              12000u);
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (free && !port_open(port)) return port;
  }
  return 0;
}

}  // namespace leader::test
