#include "process_tree.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstddef>

namespace leader::cli {
namespace {

// Everything here runs in the keeper between fork and exit, so it uses only system calls and
// static storage: no allocation, no locks, no stdio.

// The processes of one /proc walk, sorted by pid (/proc lists them in increasing order).
struct ProcessEntry {
  pid_t pid;
  pid_t ppid;
  signed char descends;  // -1 unknown, 0 no, 1 yes
};

constexpr std::size_t kMaxProcesses = 1 << 17;
ProcessEntry table[kMaxProcesses];

// Decimal digits of `value` into `out` (no terminator); returns the number written.
std::size_t format_pid(pid_t value, char* out) noexcept {
  char digits[16];
  std::size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < sizeof digits);
  for (std::size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  return n;
}

// The parent of `pid` from /proc/<pid>/stat ("pid (comm) state ppid ..."), or -1 when it is gone.
pid_t parent_of(pid_t pid) noexcept {
  char path[32] = "/proc/";
  std::size_t len = 6 + format_pid(pid, path + 6);
  const char suffix[] = "/stat";
  for (std::size_t i = 0; i < sizeof suffix; ++i) path[len + i] = suffix[i];
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[512];
  ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return -1;
  ssize_t close_paren = -1;  // comm may contain ')': the last one ends it
  for (ssize_t i = 0; i < n; ++i)
    if (buf[i] == ')') close_paren = i;
  ssize_t i = close_paren + 4;  // ") S ppid"
  if (close_paren < 0 || i >= n) return -1;
  pid_t ppid = 0;
  for (; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i) ppid = ppid * 10 + (buf[i] - '0');
  return ppid;
}

bool parse_pid(const char* name, pid_t& pid) noexcept {
  pid = 0;
  if (*name == '\0') return false;
  for (; *name != '\0'; ++name) {
    if (*name < '0' || *name > '9') return false;
    pid = pid * 10 + (*name - '0');
  }
  return true;
}

// Fills `table` with every process of /proc; returns how many.
std::size_t read_processes() noexcept {
  int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  std::size_t count = 0;
  alignas(8) char buf[16384];
  for (;;) {
    ssize_t n = ::getdents64(dir, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const dirent64*>(buf + at);
      at += entry->d_reclen;
      pid_t pid = 0;
      if (count == kMaxProcesses || !parse_pid(entry->d_name, pid)) continue;
      pid_t ppid = parent_of(pid);
      if (ppid >= 0) table[count++] = {pid, ppid, -1};
    }
  }
  ::close(dir);
  return count;
}

// Index of `pid` in the first `count` entries (binary search when sorted, as /proc lists them).
std::ptrdiff_t find(pid_t pid, std::size_t count) noexcept {
  std::size_t lo = 0, hi = count;
  while (lo < hi) {
    std::size_t mid = lo + (hi - lo) / 2;
    if (table[mid].pid == pid) return static_cast<std::ptrdiff_t>(mid);
    if (table[mid].pid < pid)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (std::size_t i = 0; i < count; ++i)  // not sorted after all: linear search
    if (table[i].pid == pid) return static_cast<std::ptrdiff_t>(i);
  return -1;
}

// Whether entry `i` descends from `root`, following (and memoising) the chain of parents.
bool descends(std::size_t i, pid_t root, std::size_t count) noexcept {
  std::size_t chain[256];
  std::size_t depth = 0;
  bool result = false;
  for (std::ptrdiff_t at = static_cast<std::ptrdiff_t>(i);;) {
    ProcessEntry& e = table[at];
    if (e.descends >= 0) {
      result = e.descends == 1;
      break;
    }
    if (depth < sizeof chain / sizeof chain[0]) chain[depth++] = static_cast<std::size_t>(at);
    if (e.ppid == root) {
      result = true;
      break;
    }
    if (e.ppid <= 1 || e.ppid == e.pid) break;
    at = find(e.ppid, count);
    if (at < 0) break;
  }
  for (std::size_t d = 0; d < depth; ++d) table[chain[d]].descends = result ? 1 : 0;
  return result;
}

}  // namespace

int signal_descendants(pid_t root, pid_t spared, int sig) noexcept {
  int saved_errno = errno;
  std::size_t count = read_processes();
  int signalled = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (table[i].pid == root || table[i].pid == spared || !descends(i, root, count)) continue;
    if (::kill(table[i].pid, sig) == 0) ++signalled;
  }
  errno = saved_errno;
  return signalled;
}

}  // namespace leader::cli
