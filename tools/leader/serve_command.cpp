// `leader serve`: the HTTP sidecar (docs/serve.md), from start-up to shutdown. HTTP is
// cpp-httplib 0.11 from Debian (libcpp-httplib-dev); why that library: tools/leader/README.md.

#include "serve_command.hpp"

#include <httplib.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "exit_codes.hpp"
#include "leader/errors.hpp"
#include "leader/names.hpp"
#include "leader/open.hpp"
#include "leader/uri.hpp"
#include "log.hpp"
#include "serve_http.hpp"
#include "serve_sidecar.hpp"
#include "service_notify.hpp"
#include "store_location.hpp"

namespace leader::cli {
namespace {

// Listening sockets get SO_REUSEADDR only (a restart may bind while old connections linger in
// TIME_WAIT). cpp-httplib's default sets SO_REUSEPORT, which lets a second process bind the same
// port and take half of the connections: renewals then reach a sidecar that never heard of the
// lease.
void exclusive_socket_options(socket_t sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// SIGTERM/SIGINT/SIGHUP are taken by one thread (sigwait), blocked in every other: blocked here,
// before any thread starts.
sigset_t block_stop_signals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

struct OpenedStore {
  std::shared_ptr<LeaseStore> store;
  std::string shown;  ///< the URI as messages show it
};

OpenedStore open_sidecar_store(const ServeOptions& o, const Log& log) {
  StoreChoice choice = choose_store(o.store);
  OpenedStore opened{nullptr, redact_uri(choice.uri)};
  try {
    opened.shown = announce_store(choice, log);
    opened.store = leader::open(choice.uri);
  } catch (const InvalidArgument& e) {
    throw UsageError(std::string("--store: ") + e.what());
  } catch (const std::exception& e) {
    throw StoreUnavailable("cannot open store " + opened.shown + ": " + e.what());
  }
  return opened;
}

// Binds `svr` to --listen; returns the port (the one chosen for port 0).
int bind_listen(httplib::Server& svr, const ListenAddress& listen, const std::string& listen_text) {
  int port = listen.port;
  if (port == 0) {
    port = svr.bind_to_any_port(listen.host);
    if (port < 0)
      throw StoreUnavailable("cannot listen on " + listen_text + ": " + std::strerror(errno));
  } else if (!svr.bind_to_port(listen.host, port)) {
    // Exclusive (no SO_REUSEPORT): a second sidecar on the same port ends here with EADDRINUSE.
    throw StoreUnavailable("cannot listen on " + listen_text + ": " + std::strerror(errno));
  }
  return port;
}

// Serves until one of `signals` comes (or the server stops on its own), then stops the sidecar's
// waits, its reaper and finally the sidecar itself; returns the exit code.
int serve_until_signal(httplib::Server& svr, Sidecar& sidecar, const sigset_t& signals,
                       const Log& log) {
  std::jthread reaper([&sidecar](const std::stop_token& stop) { sidecar.reap(stop); });
  std::atomic<int> got_signal{0};
  std::atomic<bool> listen_failed{false};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!listen_failed) {
      got_signal = sig;
      notify_stopping("stopping (signal " + std::to_string(sig) + "): releasing leases");
    }
    sidecar.stop_waits();
    // stop() does nothing until listen_after_bind() has started: a signal right after the bind
    // would otherwise be lost and the process would serve on, deaf to SIGTERM.
    while (!listen_failed && !svr.is_running())
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    svr.stop();
  });
  (void)svr.listen_after_bind();
  if (got_signal ==
      0) {  // the server stopped on its own (stop() follows a signal): wake the waiter
    listen_failed = true;
    // NOLINTNEXTLINE(bugprone-bad-signal-to-kill-thread): SIGTERM is blocked, the waiter sigwait()s
    pthread_kill(waiter.native_handle(), SIGTERM);
  }
  waiter.join();
  reaper.request_stop();
  reaper.join();
  sidecar.shut_down();
  if (listen_failed) {
    log.error("the HTTP server stopped on its own (listen failed)");
    return kExitUnavailable;
  }
  log.notice("stopped (signal " + std::to_string(got_signal.load()) + ")");
  return kExitOk;
}

}  // namespace

int serve(const ServeOptions& o) {
  Log log(o.verbose ? 1 : 0);
  ListenSettings listen = listen_settings(o);
  sigset_t signals = block_stop_signals();
  OpenedStore opened = open_sidecar_store(o, log);
  Sidecar sidecar(o, opened.store, opened.shown, log);

  httplib::Server svr;
  svr.new_task_queue = [n = o.threads] { return new httplib::ThreadPool(n); };
  svr.set_payload_max_length(kMaxBodyBytes);
  svr.set_read_timeout(std::chrono::seconds(10));
  svr.set_write_timeout(std::chrono::seconds(10));
  svr.set_socket_options(exclusive_socket_options);
  sidecar.routes(svr, {listen.token, listen.clients});
  int port = bind_listen(svr, listen.address, o.listen);
  const std::string& host = listen.address.host;
  log.notice("serving http://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) +
             ":" + std::to_string(port) + "/ (store " + opened.shown + ", node " +
             (o.node_id.empty() ? default_node_id() : o.node_id) + ")");
  notify_ready("serving on port " + std::to_string(port));
  return serve_until_signal(svr, sidecar, signals, log);
}

}  // namespace leader::cli
