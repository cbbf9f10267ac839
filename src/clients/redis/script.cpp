#include "script.hpp"

#include <openssl/evp.h>

#include <cstdio>
#include <map>
#include <mutex>

namespace leader::redis {
namespace {

std::string sha1_hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha1(), nullptr);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

// Every script made in this process, by SHA1 (copies: a Script may be destroyed before the last
// call that sends it again).
struct Registry {
  std::mutex mu;
  std::map<std::string, std::string, std::less<>> sources;
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: calls may run during static destruction
  return *r;
}

}  // namespace

Script::Script(std::string src) : source(std::move(src)), sha1(sha1_hex(source)) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.sources.emplace(sha1, source);
}

std::optional<std::string> script_source(std::string_view sha1) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  const auto it = r.sources.find(sha1);
  if (it == r.sources.end()) return std::nullopt;
  return it->second;
}

Command script_call(const Script& script, const std::vector<std::string>& keys,
                    const std::vector<std::string>& args) {
  Command cmd;
  cmd.reserve(3 + keys.size() + args.size());
  cmd.insert(cmd.end(), {"EVALSHA", script.sha1, std::to_string(keys.size())});
  cmd.insert(cmd.end(), keys.begin(), keys.end());
  cmd.insert(cmd.end(), args.begin(), args.end());
  return cmd;
}

}  // namespace leader::redis
