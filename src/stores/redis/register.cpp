// Registers the redis://, rediss:// and unix:// schemes with leader::open().

#include "leader/errors.hpp"
#include "leader/open.hpp"
#include "leader/stores/redis.hpp"
#include "redis_store.hpp"

namespace leader {
namespace {

const bool registered = [] {
  auto factory = [](const Uri& uri) -> std::shared_ptr<LeaseStore> {
    return std::make_shared<detail::redis::RedisStore>(detail::redis::Config::from_uri(uri));
  };
  register_store("redis", factory);
  register_store("rediss", factory);
  register_store("unix", factory);
  return true;
}();

}  // namespace

RedisPoolStats redis_pool_stats(LeaseStore& store) {
  auto* redis = dynamic_cast<detail::redis::RedisStore*>(&store);
  if (redis == nullptr) throw InvalidArgument("redis_pool_stats: not a Redis store");
  return {redis->pool().open_connections(), redis->pool().config().pool_size};
}

}  // namespace leader

extern "C" {
extern const int leader_store_redis_anchor;
const int leader_store_redis_anchor = 0;
}
