// The sidecar's build, process and HTTP series (serve_metrics.hpp).

#include "serve_metrics.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

namespace leader::cli {
namespace {

// Request latency buckets (seconds): fast routes in ms, long-polls and waiting acquires up to 60 s.
const std::vector<double> kLatencyBuckets = {0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10, 60};

// The fields of /proc/self/stat after the command name (field 3 onwards), empty when unreadable.
std::vector<std::string> stat_fields() {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');  // the command name may hold spaces and parentheses
  std::vector<std::string> fields;
  if (close == std::string::npos) return fields;
  std::istringstream rest(text.substr(close + 1));
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

// Seconds since the epoch at boot (btime of /proc/stat), 0 when unknown.
double boot_time() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("btime ", 0) == 0) return std::stod(line.substr(6));
  return 0;
}

}  // namespace

std::string route_label(const std::string& path) {
  static const std::regex lock_route(
      R"(^/v1/(locks|leader)/[^/]+(/(acquire|renew|release|watch|resign))?$)");
  if (path.rfind("/v1/leases/", 0) == 0) return "/v1/leases/{id}";
  std::smatch m;
  if (std::regex_match(path, m, lock_route)) return "/v1/" + m[1].str() + "/{lock}" + m[2].str();
  for (const char* fixed :
       {"/", "/healthz", "/readyz", "/metrics", "/v1/locks", "/v1/leases", "/v1/history"})
    if (path == fixed) return path;
  return "other";
}

ServeMetrics::ServeMetrics(prometheus::Registry& registry, const std::string& version)
    : requests_(prometheus::BuildCounter()
                    .Name("leader_http_requests_total")
                    .Help("HTTP requests the sidecar answered, by method, route and status code")
                    .Register(registry)),
      latency_(prometheus::BuildHistogram()
                   .Name("leader_http_request_duration_seconds")
                   .Help("Time to answer an HTTP request, by method and route")
                   .Register(registry)),
      cpu_seconds_(prometheus::BuildCounter()
                       .Name("process_cpu_seconds_total")
                       .Help("Total user and system CPU time spent in seconds")
                       .Register(registry)
                       .Add({})),
      resident_bytes_(prometheus::BuildGauge()
                          .Name("process_resident_memory_bytes")
                          .Help("Resident memory size in bytes")
                          .Register(registry)
                          .Add({})),
      virtual_bytes_(prometheus::BuildGauge()
                         .Name("process_virtual_memory_bytes")
                         .Help("Virtual memory size in bytes")
                         .Register(registry)
                         .Add({})),
      open_fds_(prometheus::BuildGauge()
                    .Name("process_open_fds")
                    .Help("Number of open file descriptors")
                    .Register(registry)
                    .Add({})),
      max_fds_(prometheus::BuildGauge()
                   .Name("process_max_fds")
                   .Help("Maximum number of open file descriptors")
                   .Register(registry)
                   .Add({})),
      start_time_(prometheus::BuildGauge()
                      .Name("process_start_time_seconds")
                      .Help("Start time of the process since unix epoch in seconds")
                      .Register(registry)
                      .Add({})) {
  prometheus::BuildGauge()
      .Name("leader_build_info")
      .Help("Always 1: the version of leader that serves these series")
      .Register(registry)
      .Add({{"version", version}})
      .Set(1);
  refresh_process();
}

void ServeMetrics::observe(const std::string& method, const std::string& path, int status,
                           double seconds) {
  std::string route = route_label(path);
  requests_.Add({{"method", method}, {"route", route}, {"code", std::to_string(status)}})
      .Increment();
  latency_.Add({{"method", method}, {"route", route}}, kLatencyBuckets).Observe(seconds);
}

void ServeMetrics::refresh_process() {
  std::lock_guard lock(mu_);
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  std::vector<std::string> f = stat_fields();
  // Field N of proc(5) is f[N - 3]: utime 14, stime 15, starttime 22, vsize 23, rss 24.
  if (f.size() > 21 && ticks > 0) {
    double cpu = (std::stod(f[11]) + std::stod(f[12])) / ticks;
    if (cpu > cpu_counted_) cpu_seconds_.Increment(cpu - cpu_counted_);
    cpu_counted_ = std::max(cpu, cpu_counted_);
    start_time_.Set(boot_time() + std::stod(f[19]) / ticks);
    virtual_bytes_.Set(std::stod(f[20]));
    resident_bytes_.Set(std::stod(f[21]) * page);
  }
  std::error_code ec;
  double fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec))
    ++fds;
  open_fds_.Set(fds > 0 ? fds - 1 : 0);  // less the descriptor that reads the directory
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0)
    max_fds_.Set(limit.rlim_cur == RLIM_INFINITY ? -1 : static_cast<double>(limit.rlim_cur));
}

}  // namespace leader::cli
