#pragma once
// The insides of a Session that zk_session.cpp (requests) and zk_watch.cpp (watches) share: the
// state of a request in flight, one zhandle_t with its session state, and the watches armed on
// that handle. Private to the store.

#include <zookeeper/zookeeper.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "zk_session.hpp"

namespace leader::detail::zk {

struct Pending::State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Reply reply;
  std::shared_ptr<void> buffers;  ///< what the C client writes into until the completion runs

  /// Called once by the completion: fills the reply and wakes the waiter.
  template <class Fill>
  void finish(Fill fill) {
    {
      std::lock_guard lock(mu);
      fill(reply);
      done = true;
    }
    cv.notify_all();
  }
};

/// One watch context handed to the C client (zoo_awget_children / zoo_awexists). Its Handle owns
/// it for as long as the C client may call it; waiters share it.
struct Watch::State {
  Session::Handle* handle = nullptr;  ///< outlives every callback: zookeeper_close joins them
  std::string key;                    ///< "c" (children) or "e" (exists) + the path
  bool fired = false;                 ///< under handle->mu: an event (node or session) came
};

struct Session::Handle {
  zhandle_t* zh = nullptr;
  std::uint64_t generation = 0;  ///< of the Session, when this handle was made
  std::mutex mu;
  std::condition_variable cv;  ///< session state changes and watch events
  int state = 0;
  int negotiated_ms = 0;  ///< zoo_recv_timeout() read when the session (re)connected; 0 before
  bool expired = false;
  bool auth_failed = false;
  /// Watches set on the server and not fired yet, by Watch::State::key: a new waiter on the same
  /// path joins one instead of leaving another context behind (under mu).
  std::map<std::string, std::shared_ptr<Watch::State>> armed;
  /// Every context the C client may still call (under mu). A node event unregisters its watch;
  /// a session event does not (the C client calls every active watcher with it and keeps them),
  /// and zookeeper_close frees its watcher lists without calling them: what is left here then is
  /// freed with the Handle, after zookeeper_close returned.
  std::map<const Watch::State*, std::shared_ptr<Watch::State>> watches;

  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (zh != nullptr) zookeeper_close(zh);  // joins the C client's threads: no callback after it
  }
  bool dead() {
    std::lock_guard lock(mu);
    return expired || auth_failed;
  }
};

}  // namespace leader::detail::zk
