#pragma once
// The stream initiator of the store's libmongoc clients: TCP (+ TLS) connections whose reads and
// writes never wait past the Deadline of the call running on this thread, whatever
// socketTimeoutMS says (libmongoc 1.23 has no per-operation timeout).

#include <mongoc/mongoc.h>

#include "config.hpp"
#include "leader/time.hpp"

namespace leader::mongodb {

/// Sets the deadline of the store call running on this thread for its lifetime.
class CallDeadline {
 public:
  explicit CallDeadline(Deadline deadline);
  ~CallDeadline();
  CallDeadline(const CallDeadline&) = delete;
  CallDeadline& operator=(const CallDeadline&) = delete;
};

/// A mongoc_stream_initiator_t: connects to `host` within the config's connect_timeout (and the
/// call's deadline), performs the TLS handshake when configured, and wraps the stream so that
/// every read and write is bounded by the call's deadline. `user_data` is the Config.
mongoc_stream_t* open_stream(const mongoc_uri_t* uri, const mongoc_host_list_t* host,
                             void* user_data, bson_error_t* error);

}  // namespace leader::mongodb
