#pragma once
/// @file serve_metrics.hpp
/// The sidecar's own series, next to the library's in the same registry: leader_build_info, the
/// process_* series of the Prometheus client conventions (read from /proc/self at each scrape:
/// prometheus-cpp has no process collector), and the HTTP requests served, by route and code.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <mutex>
#include <string>

namespace leader::cli {

/// The route of a request as a label value: the path with the lock name replaced by {lock}
/// ("/v1/locks/{lock}/acquire"); "other" for a path no route serves (bounded cardinality).
std::string route_label(const std::string& path);

/// Build, process and HTTP series of `leader serve`. Thread-safe.
class ServeMetrics {
 public:
  /// Registers the families in `registry`; `version` is leader_build_info's label.
  ServeMetrics(prometheus::Registry& registry, const std::string& version);

  /// Counts one answered request and its latency.
  void observe(const std::string& method, const std::string& path, int status, double seconds);
  /// Reads /proc/self into the process_* series (before each scrape).
  void refresh_process();

 private:
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Counter& cpu_seconds_;
  prometheus::Gauge& resident_bytes_;
  prometheus::Gauge& virtual_bytes_;
  prometheus::Gauge& open_fds_;
  prometheus::Gauge& max_fds_;
  prometheus::Gauge& start_time_;
  std::mutex mu_;
  double cpu_counted_ = 0;  // CPU seconds already added to cpu_seconds_
};

}  // namespace leader::cli
