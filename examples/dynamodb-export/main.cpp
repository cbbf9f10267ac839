// dynamodb-export: a long export (longer than its lease) held with auto_extend, which saves
// checkpoints so that another replica resumes where it stopped. Each checkpoint write carries the
// fencing token of its lease, and the checkpoint store refuses a token lower than the last one
// it accepted. A new exporter first *claims* the checkpoint with its token (reading where to
// resume in the same step), so an exporter paused past its lease and replaced can neither move
// the checkpoint back nor overwrite the newer exporter's progress when it resumes, even before
// the newer one saved anything.
//
// The checkpoint store here is a local file updated under flock(2); in production it is a row
// written with a conditional write (DynamoDB PutItem with `ConditionExpression:
// attribute_not_exists(token) OR token <= :token`), or any store that can compare and set.
//
//   example_dynamodb_export <dynamodb-uri> <replica> <checkpoint-file> [--lock NAME]
//                           [--items N] [--every N] [--item-ms N] [--lease-ms N]
//
// Output (one line per event; the test driver greps them):
//   EXPORTING replica=<r> token=<t> from=<i>        elected; resumes at item i
//   CHECKPOINT replica=<r> token=<t> at=<i>         checkpoint accepted
//   REJECTED replica=<r> token=<t> newer=<t'>       a newer exporter owns the checkpoint
//   STOPPED replica=<r> token=<t> at=<i>            the lease was lost (stop_token)
//   DONE replica=<r> exported=<n>                   the export is complete
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <leader/leader.hpp>
#include <stdexcept>
#include <string>
#include <thread>

#include "../common.hpp"

namespace {

using namespace std::chrono_literals;

struct Checkpoint {
  std::uint64_t token = 0;
  long position = 0;
};

// A fenced checkpoint: read, and write only when `token` is not older than the stored one.
class CheckpointFile {
 public:
  explicit CheckpointFile(std::string path) : path_(std::move(path)) {}

  Checkpoint read() const {
    return with_lock([](Checkpoint& c) {
      (void)c;
      return false;
    });
  }
  // Claims the checkpoint for `token` (a new exporter's first act, atomically with reading where
  // to resume): from now on every write of an older token is refused, even before this exporter
  // saved any progress. Returns the stored checkpoint; its token is `token` when accepted.
  Checkpoint claim(std::uint64_t token) const {
    return with_lock([&](Checkpoint& c) {
      if (token < c.token) return false;
      c.token = token;
      return true;
    });
  }
  // Returns the stored checkpoint; it is `{token, position}` when the write was accepted.
  Checkpoint write(std::uint64_t token, long position) const {
    return with_lock([&](Checkpoint& c) {
      if (token < c.token) return false;  // fenced: a newer exporter wrote already
      c = {token, position};
      return true;
    });
  }

 private:
  template <typename Update>
  Checkpoint with_lock(Update update) const {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0) throw std::runtime_error("cannot open " + path_);
    ::flock(fd, LOCK_EX);
    char buf[64] = {};
    Checkpoint c;
    if (::pread(fd, buf, sizeof buf - 1, 0) > 0) {
      unsigned long long t = 0;
      if (std::sscanf(buf, "%llu %ld", &t, &c.position) == 2) c.token = t;
    }
    if (update(c)) {
      const std::string line = std::to_string(c.token) + " " + std::to_string(c.position) + "\n";
      if (::ftruncate(fd, 0) != 0 ||
          ::pwrite(fd, line.data(), line.size(), 0) != static_cast<ssize_t>(line.size())) {
        ::close(fd);
        throw std::runtime_error("cannot write " + path_);
      }
    }
    ::close(fd);  // releases the flock
    return c;
  }
  std::string path_;
};

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "<dynamodb-uri> <replica> <checkpoint-file> [--lock NAME] [--items N] [--every N] "
      "[--item-ms N] [--lease-ms N]";
  return example::run(argc, argv, usage, [](const example::Args& args) {
    const std::string& replica = args.at(1);
    const CheckpointFile checkpoints(args.at(2));
    const std::string lock = args.get("--lock", "table-export");
    const long items = args.number("--items", 20);
    const long every = args.number("--every", 5);
    const auto item_time = std::chrono::milliseconds(args.number("--item-ms", 100));
    leader::LeaderElector elector(
        leader::open(args.at(0)),
        {.wait_time = 500ms,
         .lease_time = std::chrono::milliseconds(args.number("--lease-ms", 1000)),
         .auto_extend = true,  // the export is longer than the lease
         .node_id = replica});
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (checkpoints.read().position < items) {
      if (std::chrono::steady_clock::now() > give_up) throw std::runtime_error("export unfinished");
      elector.run_if_leader(lock, [&](leader::LeaderContext& ctx) {
        const auto token = ctx.fencing_token();
        const auto t = static_cast<unsigned long long>(token);
        const Checkpoint claimed = checkpoints.claim(token);
        if (claimed.token != token) {
          std::printf("REJECTED replica=%s token=%llu newer=%llu\n", replica.c_str(), t,
                      static_cast<unsigned long long>(claimed.token));
          return;
        }
        long at = claimed.position;
        std::printf("EXPORTING replica=%s token=%llu from=%ld\n", replica.c_str(), t, at);
        while (at < items) {
          if (ctx.stop_token().stop_requested()) {
            std::printf("STOPPED replica=%s token=%llu at=%ld\n", replica.c_str(), t, at);
            return;
          }
          std::this_thread::sleep_for(item_time);  // export item `at` (a Scan page, say)
          ++at;
          if (at % every == 0 || at == items) {
            if (ctx.stop_token().stop_requested()) continue;  // lost meanwhile: stop at the top
            const Checkpoint stored = checkpoints.write(token, at);
            if (stored.token != token) {
              std::printf("REJECTED replica=%s token=%llu newer=%llu\n", replica.c_str(), t,
                          static_cast<unsigned long long>(stored.token));
              return;
            }
            std::printf("CHECKPOINT replica=%s token=%llu at=%ld\n", replica.c_str(), t, at);
          }
        }
      });
    }
    std::printf("DONE replica=%s exported=%ld\n", replica.c_str(), checkpoints.read().position);
    return 0;
  });
}
