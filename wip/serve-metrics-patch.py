import re
root='/work/wt/serve/'
p=root+'tools/leader/CMakeLists.txt'; s=open(p).read()
s=s.replace("""  set_property(GLOBAL PROPERTY LEADER_SERVE_BUILT ON)
""","""  set_property(GLOBAL PROPERTY LEADER_SERVE_BUILT ON)
  if(TARGET leader::metrics)  # /metrics serves Metrics::serialize()
    target_link_libraries(leader PRIVATE leader::metrics)
    target_compile_definitions(leader PRIVATE LEADER_HAVE_METRICS=1)
  endif()
""")
open(p,'w').write(s)
p=root+'tools/leader/serve_command.cpp'; s=open(p).read()
s=s.replace("""#include "leader/history.hpp"
""","""#include "leader/history.hpp"
#ifdef LEADER_HAVE_METRICS
#include "leader/metrics.hpp"
#endif
""",1)
s=s.replace("""      : o_(o),
        log_(log),
        store_(std::move(store)),""","""      : o_(o),
        log_(log),
        store_(instrumented(std::move(store))),""")
s=s.replace("""    feeds_.push_back(attach_history(*bus_, memory_history_));""","""    feeds_.push_back(attach_history(*bus_, memory_history_));
#ifdef LEADER_HAVE_METRICS
    feeds_.push_back(metrics_.attach(*bus_));
#endif""")
s=s.replace("""    svr.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
      res.status = 503;
      res.set_content("metrics not built (leader::metrics is not part of this build)\\n",
                      "text/plain");
    });""","""    svr.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
#ifdef LEADER_HAVE_METRICS
      res.set_content(metrics_.serialize(), "text/plain; version=0.0.4; charset=utf-8");
#else
      res.status = 503;
      res.set_content("metrics not built (leader::metrics is not part of this build)\\n",
                      "text/plain");
#endif
    });""")
s=s.replace("""  const ServeOptions& o_;
  Log log_;""","""  std::shared_ptr<LeaseStore> instrumented(std::shared_ptr<LeaseStore> store) {
#ifdef LEADER_HAVE_METRICS
    return metrics_.instrument(std::move(store));
#else
    return store;
#endif
  }

#ifdef LEADER_HAVE_METRICS
  metrics::Metrics metrics_;  // declared first: store_ is instrumented by it
#endif
  const ServeOptions& o_;
  Log log_;""")
open(p,'w').write(s)
