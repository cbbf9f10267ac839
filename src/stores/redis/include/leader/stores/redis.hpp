#pragma once
/// @file redis.hpp
/// Extras of the Redis store (component leader::redis). Open the store itself with
/// `leader::open("redis://host:6379")`, `rediss://...` or `unix:///path/redis.sock`.

#include "leader/store.hpp"

namespace leader {

/// A snapshot of a Redis store's connection pool.
struct RedisPoolStats {
  int open_connections = 0;  ///< connections open now (idle or in use)
  int pool_size = 0;         ///< the most the store opens (`?pool_size=`)
};

/// The pool statistics of `store`; throws InvalidArgument when it is not a Redis store.
[[nodiscard]] RedisPoolStats redis_pool_stats(LeaseStore& store);

}  // namespace leader
