#include "server_outage.hpp"

#include <memory>
#include <mutex>
#include <optional>

namespace leader::contract {

void set_sigstop_outage(Backend& b, std::function<std::vector<pid_t>()> pids) {
  struct State {
    std::mutex mu;
    std::optional<test::ProcessPause> pause;
  };
  auto state = std::make_shared<State>();
  b.outage_begin = [state, pids = std::move(pids)] {
    std::lock_guard lock(state->mu);
    if (!state->pause) state->pause.emplace(pids());
  };
  b.outage_end = [state] {
    std::lock_guard lock(state->mu);
    state->pause.reset();
  };
}

void set_sigstop_outage(Backend& b, const std::string& pid_file) {
  set_sigstop_outage(b, [pid_file] { return std::vector<pid_t>{test::read_pid_file(pid_file)}; });
}

Backend shared_server_backend(const std::string& name, const char* uri_env,
                              const std::string& default_uri, const char* pid_env,
                              const std::string& server) {
  Backend b;
  b.name = name;
  b.uri = env_or(uri_env, default_uri);
  b.open = [uri = b.uri] { return leader::open(uri); };
  set_sigstop_outage(b, server_pid_file(pid_env, server));
  return b;
}

}  // namespace leader::contract
