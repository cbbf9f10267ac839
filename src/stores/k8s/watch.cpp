// LockWatcher over the Kubernetes watch API (README.md, "Watching"): read the lock, then
// list-watch its Lease objects from the resourceVersion of that read's LIST until an event
// comes; every event re-reads, since a renewal (a new resourceVersion, same holder) is an event
// too and only the read says whether the holders changed.

#include <algorithm>

#include "k8s_store.hpp"
#include "leader/lock_watching.hpp"
#include "leader/names.hpp"

namespace leader::k8s {
namespace {

/// Reads inside a watch get at least this long, so that an event that came just before the
/// deadline is read rather than failed as deadline_exceeded.
constexpr auto kReadTime = std::chrono::seconds(2);
/// Streams in a row that ended without an event while the lock's LIST stayed at the same
/// resourceVersion, after which the caller's safety net takes over: a server or proxy that
/// ends every watch at once (or answers each with ERROR) must not make this spin.
constexpr int kIdleEnds = 2;

}  // namespace

LockState K8sStore::watch(std::string_view lock, const LockState& last_seen, Deadline deadline,
                          const std::stop_token& stop) {
  validate_lock_name(lock);
  const std::string label = std::string(kLockLabel) + "=" + short_hash(lock);
  int idle = 0;
  std::string previous;  // the resourceVersion the last watch started from
  for (;;) {
    const LockRead read =
        read_lock(lock, Deadline::after(std::max<Duration>(deadline.remaining(), kReadTime)));
    if (!same_holders(read.state, last_seen) || read.version.empty()) return read.state;
    if (read.version != previous) idle = 0;  // the namespace moved on: not a spin
    previous = read.version;
    if (stop.stop_requested() || deadline.remaining() < std::chrono::milliseconds(10))
      return read.state;
    // Our writes label the base object; until it carries the label (absent, or created by a
    // client-go holder) only its name finds it. A group always draws its token on the base
    // object first, so a lock with no labelled base has no slot of ours to watch.
    const std::string selector =
        read.labelled_base ? Api::label_selector(label) : Api::name_selector(object_name(lock));
    const WatchEnd end = api_.watch(selector, read.version, deadline, stop);
    if (end == WatchEnd::changed) {
      idle = 0;
      continue;
    }
    if (stop.stop_requested() || deadline.expired()) return read.state;
    // 410 or ERROR: the next read lists again and the watch starts from its resourceVersion;
    // a stream the server ended early (timeoutSeconds) likewise.
    if (++idle >= kIdleEnds) return read.state;
  }
}

}  // namespace leader::k8s
