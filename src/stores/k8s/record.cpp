#include "record.hpp"

#include <cstdio>
#include <ctime>

#include "http/json.hpp"
#include "leader/errors.hpp"

namespace leader::k8s {
namespace {

constexpr std::size_t kMaxName = 253;
constexpr std::size_t kHashedPrefix = 200;  // leaves room for "-<hash>-slot<K>"

bool is_alnum_lower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

std::string hashed_name(std::string_view lock) {
  std::string out;
  for (char c : lock) {
    const char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    const char mapped = is_alnum_lower(l) ? l : '-';
    if (mapped == '-' && (out.empty() || out.back() == '-')) continue;
    out.push_back(mapped);
    if (out.size() >= kHashedPrefix) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return (out.empty() ? std::string("lock") : out) + "-" + short_hash(lock);
}

std::optional<int> int_annotation(const nlohmann::json& annotations, const char* key) {
  const auto text = http::field<std::string>(annotations, key);
  const auto v = text ? http::whole_number<int>(*text) : std::nullopt;
  if (!v || *v < 0) return std::nullopt;
  return v;
}

std::uint64_t fence_of(const nlohmann::json& annotations) {
  const auto text = http::field<std::string>(annotations, kFenceAnnotation);
  if (!text) return 0;
  const auto v = http::whole_number<std::uint64_t>(*text);
  if (!v)
    throw BackendError(ErrorCode::internal, "k8s",
                       "annotation " + std::string(kFenceAnnotation) + " is not a number: '" +
                           *text + "'; the lock's fencing counter was changed by hand");
  return *v;
}

// Marks `base` as a Lease of `lock` (kind, the lock annotation and label); its annotations.
nlohmann::json& stamp(nlohmann::json& base, std::string_view lock) {
  base["apiVersion"] = "coordination.k8s.io/v1";
  base["kind"] = "Lease";
  auto& meta = base["metadata"];
  if (!meta["annotations"].is_object()) meta["annotations"] = nlohmann::json::object();
  if (!meta["labels"].is_object()) meta["labels"] = nlohmann::json::object();
  meta["labels"][kLockLabel] = short_hash(lock);
  meta["annotations"][kLockAnnotation] = std::string(lock);
  return meta["annotations"];
}

}  // namespace

std::string short_hash(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool is_dns_subdomain(std::string_view name) {
  if (name.empty() || name.size() > kMaxName) return false;
  char prev = '.';
  for (char c : name) {
    if (c == '.' || c == '-') {
      if (prev == '.' || (c == '.' && prev == '-')) return false;
    } else if (!is_alnum_lower(c)) {
      return false;
    }
    prev = c;
  }
  return is_alnum_lower(prev);
}

std::string object_name(std::string_view lock) {
  return is_dns_subdomain(lock) ? std::string(lock) : hashed_name(lock);
}

std::string slot_object_name(std::string_view lock, int slot) {
  const std::string suffix = "-slot" + std::to_string(slot);
  std::string base = object_name(lock);
  if (base.size() + suffix.size() > kMaxName) base = hashed_name(lock);
  return base + suffix;
}

std::string micro_time(WallTime t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch());
  const std::time_t secs =
      static_cast<std::time_t>(std::chrono::floor<std::chrono::seconds>(us).count());
  const auto frac = us.count() - static_cast<long long>(secs) * 1000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long long>(frac));
  return buf;
}

std::optional<WallTime> parse_micro_time(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0, used = 0;
  const std::string str(text);
  if (std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6)
    return std::nullopt;
  std::string_view rest = text.substr(static_cast<std::size_t>(used));
  long long us = 0;
  int digits = 0;
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    while (!rest.empty() && rest.front() >= '0' && rest.front() <= '9') {
      if (digits < 6) us = us * 10 + (rest.front() - '0'), ++digits;
      rest.remove_prefix(1);
    }
    for (; digits < 6; ++digits) us *= 10;
  }
  if (rest != "Z") return std::nullopt;  // the server writes UTC (MicroTime marshals t.UTC())
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  const std::time_t secs = timegm(&tm);
  return WallTime(std::chrono::seconds(secs)) + std::chrono::microseconds(us);
}

std::string holder_identity(std::string_view node_id, std::string_view owner) {
  return std::string(node_id) + "_" + std::string(owner);
}

std::pair<std::string, std::string> split_identity(std::string_view identity) {
  constexpr std::size_t kOwner = 32;
  if (identity.size() > kOwner + 1 && identity[identity.size() - kOwner - 1] == '_') {
    const auto owner = identity.substr(identity.size() - kOwner);
    bool hex = true;
    for (char c : owner) hex = hex && is_alnum_lower(c) && c <= 'f';
    if (hex)
      return {std::string(identity.substr(0, identity.size() - kOwner - 1)), std::string(owner)};
  }
  return {std::string(identity), std::string()};
}

std::int32_t duration_seconds(Duration ttl) {
  const auto ms = ttl.count();
  const long long secs = ms <= 0 ? 1 : (ms + 999) / 1000;
  return static_cast<std::int32_t>(std::min<long long>(secs, 0x7fffffff));
}

std::int32_t lease_seconds(Duration ttl) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(ttl).count();
  if (secs < 1)
    throw BackendError(ErrorCode::invalid_argument, "k8s",
                       "lease ttl " + std::to_string(ttl.count()) +
                           " ms is under one second: a Kubernetes Lease counts whole seconds "
                           "(leaseDurationSeconds > 0); ask for at least 1 s");
  return static_cast<std::int32_t>(std::min<long long>(secs, 0x7fffffff));
}

Lease lease_of(const LeaseRequest& request, std::uint64_t fence, int slot) {
  Lease l;
  l.lock = request.lock;
  l.owner = request.owner;
  l.node_id = request.node_id;
  l.fencing_token = fence;
  l.slot = slot;
  l.slots = request.slots;
  l.ttl = std::chrono::seconds(lease_seconds(request.ttl));  // whole seconds, rounded down
  return l;
}

LeaseView LeaseView::of(const nlohmann::json& object) {
  // LIST items carry no kind/apiVersion (the API server omits them: kubernetes/kubernetes#3030).
  if (!object.is_object() || object.value("kind", "Lease") != "Lease" ||
      !object.contains("metadata") || !object["metadata"].is_object())
    throw BackendError(ErrorCode::internal, "k8s", "the API server answered with no Lease object");
  const auto& meta = object["metadata"];
  LeaseView v;
  v.name = meta.value("name", "");
  v.resource_version = meta.value("resourceVersion", "");
  v.uid = meta.value("uid", "");
  const auto spec = object.value("spec", nlohmann::json::object());
  v.holder = http::field<std::string>(spec, "holderIdentity").value_or("");
  v.duration_seconds = http::field<std::int32_t>(spec, "leaseDurationSeconds").value_or(0);
  v.transitions = http::field<std::int32_t>(spec, "leaseTransitions").value_or(0);
  const auto annotations = meta.value("annotations", nlohmann::json::object());
  v.lock = http::field<std::string>(annotations, kLockAnnotation);
  v.slots = int_annotation(annotations, kSlotsAnnotation);
  v.slot = int_annotation(annotations, kSlotAnnotation);
  v.fence = fence_of(annotations);
  return v;
}

nlohmann::json bump_fence(nlohmann::json base, std::string_view name, std::string_view lock,
                          bool free_holder) {
  const bool create = !base.is_object() || !base.contains("metadata");
  const std::uint64_t fence = create ? 0 : LeaseView::of(base).fence;
  if (create) {
    const std::string now = micro_time(std::chrono::system_clock::now());
    base = nlohmann::json{{"metadata", {{"name", std::string(name)}}},
                          {"spec",
                           {{"holderIdentity", ""},
                            {"leaseDurationSeconds", 1},
                            {"acquireTime", now},
                            {"renewTime", now},
                            {"leaseTransitions", 0}}}};
  }
  stamp(base, lock)[kFenceAnnotation] = std::to_string(fence + 1);
  if (free_holder && base["spec"].is_object()) {
    base["spec"]["holderIdentity"] = "";
    base["spec"]["leaseDurationSeconds"] = 1;
    base["spec"]["renewTime"] = micro_time(std::chrono::system_clock::now());
  }
  return base;
}

nlohmann::json apply_grant(nlohmann::json base, std::string_view name, const Grant& grant) {
  const bool create = !base.is_object() || !base.contains("metadata");
  const LeaseView old = create ? LeaseView{} : LeaseView::of(base);
  if (create) base = nlohmann::json{{"metadata", {{"name", std::string(name)}}}};
  auto& annotations = stamp(base, grant.lock);
  annotations[kSlotsAnnotation] = std::to_string(grant.slots);
  if (grant.slot) annotations[kSlotAnnotation] = std::to_string(*grant.slot);
  auto spec = base.value("spec", nlohmann::json::object());
  if (!spec.is_object()) spec = nlohmann::json::object();
  // renewTime is the writer's wall clock, as client-go writes it: observers (kubectl users,
  // other tools) may judge renewTime + leaseDurationSeconds. This store's own contenders count
  // from the resourceVersion they see change, never from renewTime (README.md, "Safety").
  const std::string now = micro_time(std::chrono::system_clock::now());
  spec["holderIdentity"] = grant.holder;
  spec["leaseDurationSeconds"] = grant.duration_seconds;
  spec["renewTime"] = now;
  if (grant.new_holder || grant.holder.empty() || !spec.contains("acquireTime"))
    spec["acquireTime"] = now;
  if (grant.new_holder) {
    annotations[kFenceAnnotation] = std::to_string(grant.fence.value_or(old.fence + 1));
    spec["leaseTransitions"] = create ? 0 : old.transitions + 1;
  } else if (!spec.contains("leaseTransitions")) {
    spec["leaseTransitions"] = old.transitions;
  }
  base["spec"] = spec;
  return base;
}

}  // namespace leader::k8s
