// Registers the redis://, rediss:// and unix:// schemes with leader::open().

#include "leader/detail/store_registration.hpp"
#include "leader/detail/store_support.hpp"
#include "leader/errors.hpp"
#include "leader/stores/redis.hpp"
#include "redis_store.hpp"

namespace {

std::shared_ptr<leader::LeaseStore> make_redis(const leader::Uri& uri) {
  return std::make_shared<leader::detail::redis::RedisStore>(
      leader::detail::redis::Config::from_uri(uri));
}

}  // namespace

LEADER_REGISTER_STORE(redis, make_redis, "redis", "rediss", "unix", "redis-sentinel",
                      "redis-cluster")

namespace leader {

RedisPoolStats redis_pool_stats(LeaseStore& store) {
  auto* redis = dynamic_cast<detail::redis::RedisStore*>(&detail::unchecked(store));
  if (redis == nullptr) throw InvalidArgument("redis_pool_stats: not a Redis store");
  return {redis->pool().open_connections(), redis->pool().config().pool_size};
}

}  // namespace leader
