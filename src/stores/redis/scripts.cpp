#include "scripts.hpp"

#include <array>

namespace leader::redis {
namespace {

// Shared Lua helpers. A lease value is "<owner> <fencing token> <node id>"; foreign values (a
// redis-py Lock token, any plain SET NX value) never start with our 32-hex owner and a space.
//
// Fencing token = max(counter + 1, server TIME in microseconds), and the counter is set to it. It
// strictly increases while the data survives, and it also increases across data loss (a restart
// from an older RDB snapshot or a short append-only file, a replica promoted while behind, a lost
// or evicted counter) as long as the clock of the server that issues the next token is ahead of
// the clock reading behind the last token issued before the loss. Redis >= 5 replicates a
// script's effects, so replicas and the AOF get the resulting SET, not the TIME call. Lua
// numbers are doubles: exact below 2^53 (microseconds since 1970 stay below it until 2255), so
// the script refuses to go past it rather than round.
//
// notify() tells the lock's watchers (RedisStore::watch, watch.cpp) that a holder changed, by a
// PUBLISH on the lock's channel in the same script. Pub/sub is fire-and-forget and costs nothing
// without subscribers; pcall, because a Redis 7 ACL user without channel permissions
// (acl-pubsub-default resetchannels) may not publish, and that must not fail the acquire.
constexpr const char* kPrelude = R"lua(
local function owns(v, owner)
  return v and string.sub(v, 1, #owner + 1) == owner .. ' '
end
local function next_fence(key)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local token = math.max(tonumber(redis.call('GET', key) or '0') + 1, now)
  if token >= 9007199254740992 then
    error({err = 'ERR leader fence counter ' .. key .. ' reached 2^53'})
  end
  local text = string.format('%.0f', token)
  redis.call('SET', key, text)
  return text
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function notify(channel, event, key)
  redis.pcall('PUBLISH', channel, event .. ' ' .. key)
end
)lua";

// KEYS = slot keys 0..k-1 (k >= the grantable n), fence, size; ARGV[4] = the request's size
// (0 single, N group), ARGV[5] = the lock's channel. Replies {slot, token}; {-1, size} when the
// lock's size names more slots than were declared (the client asks again declaring them); {-2,
// size} when the lock is held under another size; nil on contention.
constexpr const char* kAcquire = R"lua(
local want = tonumber(ARGV[4])
local n = math.max(1, want)
local k = #KEYS - 2
local free = nil
for i = 1, n do
  local v = redis.call('GET', KEYS[i])
  if v == false then
    if free == nil then free = i end
  elseif owns(v, ARGV[1]) then
    redis.call('PEXPIRE', KEYS[i], ARGV[3])
    return {i - 1, string.match(v, '^%S+ (%d+)')}
  end
end
local size = redis.call('GET', KEYS[k + 2])
if size and size ~= ARGV[4] then
  local m = math.max(1, tonumber(size) or 1)
  if m > k then return {-1, size} end
  for i = 1, m do
    if redis.call('EXISTS', KEYS[i]) == 1 then return {-2, size} end
  end
end
if free == nil then return false end
local fence = next_fence(KEYS[k + 1])
redis.call('SET', KEYS[free], ARGV[1] .. ' ' .. fence .. ' ' .. ARGV[2], 'NX', 'PX', ARGV[3])
if size ~= ARGV[4] then redis.call('SET', KEYS[k + 2], ARGV[4]) end
notify(ARGV[5], 'acquired', KEYS[free])
return {free - 1, fence}
)lua";

// A renew changes no holder; it tells watchers only when it shortens the lease (their next
// re-read at the holder's expiry would come too late).
constexpr const char* kRenew = R"lua(
if owns(redis.call('GET', KEYS[1]), ARGV[1]) then
  local left = redis.call('PTTL', KEYS[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if left > tonumber(ARGV[2]) then notify(ARGV[3], 'shortened', KEYS[1]) end
  return 1
end
return 0
)lua";

constexpr const char* kRelease = R"lua(
if owns(redis.call('GET', KEYS[1]), ARGV[1]) then
  if tonumber(ARGV[2]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    notify(ARGV[3], 'shortened', KEYS[1])
  else
    redis.call('DEL', KEYS[1])
    notify(ARGV[3], 'released', KEYS[1])
  end
  return 1
end
return 0
)lua";

constexpr const char* kInspect = R"lua(
local out = {}
for i = 1, #KEYS do
  out[#out + 1] = redis.call('GET', KEYS[i])
  out[#out + 1] = redis.call('PTTL', KEYS[i])
end
return out
)lua";

// Candidate entry: "<expiry ms> <registered_at us> <payload>" (server time).
constexpr const char* kPutCandidate = R"lua(
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[2])
local registered = t[1] .. string.format('%06d', tonumber(t[2]))
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local e, r = string.match(old, '^(%d+) (%d+) ')
  if e and tonumber(e) > now then registered = r end
end
redis.call('HSET', KEYS[1], ARGV[1],
           string.format('%.0f', now + ttl) .. ' ' .. registered .. ' ' .. ARGV[3])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return registered
)lua";

constexpr const char* kListCandidates = R"lua(
local now = now_ms()
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local e = tonumber(string.match(all[i + 1], '^(%d+) ') or '0')
  if e <= now then
    redis.call('HDEL', KEYS[1], all[i])
  else
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
)lua";

// Every script of the store, in the order of the accessors below.
const std::array<Script, 6>& scripts() {
  static const std::array<Script, 6> all{Script(std::string(kPrelude) + kAcquire),
                                         Script(std::string(kPrelude) + kRenew),
                                         Script(std::string(kPrelude) + kRelease),
                                         Script(kInspect),
                                         Script(kPutCandidate),
                                         Script(std::string(kPrelude) + kListCandidates)};
  return all;
}

}  // namespace

const Script& acquire_script() { return scripts()[0]; }
const Script& renew_script() { return scripts()[1]; }
const Script& release_script() { return scripts()[2]; }
const Script& inspect_script() { return scripts()[3]; }
const Script& put_candidate_script() { return scripts()[4]; }
const Script& list_candidates_script() { return scripts()[5]; }

}  // namespace leader::redis
