#include "leader/names.hpp"

#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "engine/owner_token.hpp"
#include "leader/errors.hpp"

namespace leader {
namespace {

constexpr bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
constexpr bool is_name_char(char c) {
  return is_alnum(c) || c == '_' || c == '.' || c == ':' || c == '-';
}

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 80)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

// The characters of a lock name, by byte.
constexpr std::array<bool, 256> kNameChars = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 256; ++c) t[c] = is_name_char(static_cast<char>(c));
  return t;
}();

// The rules of name_problem() without building a message: every lock name of every store call
// passes here, nearly always valid.
bool plainly_valid(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxLockNameLength || !is_alnum(name[0])) return false;
  bool ok = true;
  for (const char c : name) ok &= kNameChars[static_cast<unsigned char>(c)];
  return ok;
}

// Empty when valid, else the broken rule.
std::string name_problem(std::string_view name) {
  if (plainly_valid(name)) return {};
  if (name.empty()) return "must not be empty";
  if (name.size() > kMaxLockNameLength)
    return "is " + std::to_string(name.size()) + " characters long; the limit is 255";
  if (!is_alnum(name[0])) return "must start with a letter or digit";
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (!is_name_char(name[i]))
      return "has " + quoted(name.substr(i, 1)) + " at position " + std::to_string(i) +
             "; allowed are A-Z a-z 0-9 _ . : -";
  }
  return {};
}

}  // namespace

bool is_valid_lock_name(std::string_view name) noexcept {
  if (plainly_valid(name)) return true;
  try {
    return name_problem(name).empty();
  } catch (...) {
    return false;
  }
}

void validate_lock_name(std::string_view name) {
  if (plainly_valid(name)) return;
  if (auto problem = name_problem(name); !problem.empty())
    throw InvalidArgument("lock name " + quoted(name) + " " + problem +
                          " (rule: ^[A-Za-z0-9][A-Za-z0-9_.:-]*$, 1..255 characters)");
}

void validate_tenant_id(std::string_view tenant) {
  if (auto problem = name_problem(tenant); !problem.empty())
    throw InvalidArgument("tenant id " + quoted(tenant) + " " + problem);
  if (tenant.find(':') != std::string_view::npos)
    throw InvalidArgument("tenant id " + quoted(tenant) + " must not contain ':'");
}

std::string tenant_lock_name(std::string_view tenant, std::string_view name) {
  validate_tenant_id(tenant);
  validate_lock_name(name);
  if (name.find(':') != std::string_view::npos)
    throw InvalidArgument("lock name " + quoted(name) + " inside tenant scope " + quoted(tenant) +
                          " must not contain ':'");
  std::string full = "tenant:" + std::string(tenant) + ":" + std::string(name);
  validate_lock_name(full);
  return full;
}

namespace detail {

void write_owner_token(char* out) {
  // Re-seeded after fork(), so a child never repeats its parent's tokens.
  static std::atomic<unsigned> fork_generation{1};
  static const bool hooked = [] {
    pthread_atfork(nullptr, nullptr, [] { fork_generation.fetch_add(1); });
    return true;
  }();
  (void)hooked;
  thread_local unsigned seeded_for = 0;
  thread_local std::mt19937_64 rng;
  if (unsigned g = fork_generation.load(std::memory_order_relaxed); seeded_for != g) {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), static_cast<unsigned>(getpid())};
    rng.seed(seq);
    seeded_for = g;
  }
  // Eight hex digits at a time, in a 64-bit word: each nibble spread to a
  // byte, then '0' + n, plus 'a' - '0' - 10 where n >= 10. Digits come low nibble first.
  const auto eight = [](std::uint32_t v, char* to) {
    std::uint64_t x = v;
    x = (x | (x << 16)) & 0x0000FFFF0000FFFFULL;
    x = (x | (x << 8)) & 0x00FF00FF00FF00FFULL;
    x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0FULL;
    const std::uint64_t letters = ((x + 0x0606060606060606ULL) >> 4) & 0x0101010101010101ULL;
    x += 0x3030303030303030ULL + letters * static_cast<std::uint64_t>('a' - '0' - 10);
    std::memcpy(to, &x, sizeof x);
  };
  for (char* p = out; p != out + kOwnerTokenLength; p += 16) {
    const std::uint64_t v = rng();
    eight(static_cast<std::uint32_t>(v), p);
    eight(static_cast<std::uint32_t>(v >> 32), p + 8);
  }
}

}  // namespace detail

std::string new_owner_token() {
  std::string out(detail::kOwnerTokenLength, '0');
  detail::write_owner_token(out.data());
  return out;
}

std::string default_node_id() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host = {'l', 'o', 'c', 'a', 'l'};
  return std::string(host.data()) + ":" + std::to_string(getpid());
}

}  // namespace leader
