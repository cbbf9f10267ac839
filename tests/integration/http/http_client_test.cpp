// leader::http::Client over plain HTTP against http_double.py: replies as values, the error
// classification (not sent = unavailable, possibly sent = deadline_exceeded), failover, deadlines,
// secrets, and the handle pool under concurrency.

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>

#include "http/json.hpp"
#include "http_test_util.hpp"

namespace leader::httptest {
namespace {

using http::Client;
using http::Method;
using http::Request;

Deadline soon() { return Deadline::after(Ms{5000}); }

TEST(HttpClient, EveryMethodSendsItsTargetHeadersAndBody) {
  Double server;
  auto o = options({server.url()});
  o.default_headers = {{"X-Default", "d"}, {"X-Replaced", "old"}};
  Client c(o);
  for (Method m : {Method::get, Method::post, Method::put, Method::patch, Method::delete_}) {
    Request req{m, "/echo/x?a=1&b=2", {{"X-Replaced", "new"}}, m == Method::get ? "" : "payload"};
    auto r = c.send(req, soon());
    ASSERT_EQ(r.status, 200);
    EXPECT_TRUE(r.success());
    EXPECT_EQ(r.header("x-double"), "http_double");
    EXPECT_EQ(r.header("X-DOUBLE"), "http_double");
    EXPECT_EQ(r.base_url, server.url());
    auto e = echoed(r);
    EXPECT_EQ(e["method"], std::string(http::to_string(m)));
    EXPECT_EQ(e["target"], "/echo/x?a=1&b=2");
    EXPECT_EQ(e["body"], req.body);
    EXPECT_EQ(e["headers"]["x-default"], "d");
    EXPECT_EQ(e["headers"]["x-replaced"], "new");
    EXPECT_FALSE(e["headers"].contains("expect"));
  }
}

TEST(HttpClient, JsonRequestsCarryTheirContentType) {
  Double server;
  Client c(options({server.url() + "/echo/base/"}));  // a base path, trailing '/' dropped
  auto r = c.send(http::json_request(Method::post, "/j", {{"k", 1}}), soon());
  auto e = echoed(r);
  EXPECT_EQ(e["target"], "/echo/base/j");
  EXPECT_EQ(e["headers"]["content-type"], "application/json");
  EXPECT_EQ(http::parse_json_object(e["body"].get<std::string>()).value()["k"], 1);
  EXPECT_FALSE(http::parse_json("{nope"));
  EXPECT_FALSE(http::parse_json_object("[1]"));
}

TEST(HttpClient, HttpErrorStatusesAreReturnedAsValues) {
  Double server;
  Client c(options({server.url()}));
  for (long status : {404L, 409L, 422L, 500L, 503L}) {
    auto r = c.send({Method::get, "/status/" + std::to_string(status), {}, {}}, soon());
    EXPECT_EQ(r.status, status);
    EXPECT_FALSE(r.success());
    EXPECT_EQ(r.body, "status " + std::to_string(status));
  }
}

TEST(HttpClient, ARefusedConnectionIsUnavailableAndNamesNoSecret) {
  auto o = options({"http://127.0.0.1:" + std::to_string(closed_port())});
  o.default_headers = {{"Authorization", "Bearer s3cr3t-token", true}};
  o.secrets = {"hunter2"};
  Client c(o);
  std::string what;
  Request req{Method::post, "/v1/kv?token=hunter2", {{"X-Key", "s3cr3t-too", true}}, "x"};
  EXPECT_EQ(code_of([&] { (void)c.send(req, soon()); }, &what), ErrorCode::unavailable);
  EXPECT_NE(what.find("POST http://127.0.0.1:"), std::string::npos) << what;
  EXPECT_NE(what.find("/v1/kv"), std::string::npos) << what;
  for (const char* secret : {"s3cr3t", "hunter2", "token="})
    EXPECT_EQ(what.find(secret), std::string::npos) << what;
  EXPECT_EQ(c.redact("a Bearer s3cr3t-token and hunter2"), "a *** and ***");
}

TEST(HttpClient, AnUnreachableBaseUrlIsSkippedAndAllUnreachableIsUnavailable) {
  Double server;
  const std::string dead = "http://127.0.0.1:" + std::to_string(closed_port());
  Client c(options({dead, server.url()}));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(c.send({Method::get, "/echo", {}, {}}, soon()).status, 200);
  const std::string dead2 = "http://127.0.0.1:" + std::to_string(closed_port());
  Client none(options({dead, dead2}));
  std::string what;
  EXPECT_EQ(code_of(
                [&] {
                  (void)none.send({Method::get, "/", {}, {}}, soon());
                },
                &what),
            ErrorCode::unavailable);
  EXPECT_NE(what.find(dead), std::string::npos) << what;
  EXPECT_NE(what.find(dead2), std::string::npos) << what;
}

TEST(HttpClient, ASilentServerIsDeadlineExceededAtTheDeadlineAndNotReplayedElsewhere) {
  Double server;
  SilentListener silent;
  Client c(options({silent.url(), server.url()}));
  const auto t0 = std::chrono::steady_clock::now();
  std::string what;
  EXPECT_EQ(code_of(
                [&] {
                  (void)c.send({Method::post, "/echo", {}, "w"}, Deadline::after(Ms{300}));
                },
                &what),
            ErrorCode::deadline_exceeded);
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, Ms{290});
  EXPECT_LT(took, Ms{2500});  // generous: CI runs three tests at a time
  EXPECT_NE(what.find("outcome unknown"), std::string::npos) << what;
  // The next call starts with the other base URL.
  EXPECT_EQ(c.send({Method::get, "/echo", {}, {}}, soon()).base_url, server.url());
}

TEST(HttpClient, AConnectionClosedWithoutAReplyIsDeadlineExceeded) {
  Double server;
  Client c(options({server.url()}));
  EXPECT_EQ(code_of([&] {
              (void)c.send({Method::put, "/close", {}, "w"}, soon());
            }),
            ErrorCode::deadline_exceeded);
  EXPECT_EQ(c.send({Method::get, "/echo", {}, {}}, soon()).status, 200);  // recovers
}

TEST(HttpClient, ASlowReplyIsCutAtTheDeadlineOrTheRequestTimeout) {
  Double server;
  Client c(options({server.url()}));
  EXPECT_EQ(code_of([&] {
              (void)c.send({Method::get, "/slow/3000", {}, {}}, Deadline::after(Ms{200}));
            }),
            ErrorCode::deadline_exceeded);
  auto o = options({server.url()});
  o.request_timeout = Ms{200};
  Client capped(o);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(code_of([&] {
              (void)capped.send({Method::get, "/slow/3000", {}, {}}, soon());
            }),
            ErrorCode::deadline_exceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, Ms{1500});
  EXPECT_EQ(c.send({Method::get, "/slow/10", {}, {}}, soon()).body, "slow");
}

TEST(HttpClient, AnExpiredDeadlineSendsNothing) {
  SilentListener silent;
  Client c(options({silent.url()}));
  std::string what;
  EXPECT_EQ(code_of(
                [&] {
                  (void)c.send({Method::get, "/", {}, {}}, Deadline::after(Ms{-1}));
                },
                &what),
            ErrorCode::deadline_exceeded);
  EXPECT_NE(what.find("before the request was sent"), std::string::npos) << what;
}

TEST(HttpClient, AReplyOverTheSizeLimitIsRefused) {
  Double server;
  auto o = options({server.url()});
  o.max_response_bytes = 1000;
  Client c(o);
  EXPECT_EQ(c.send({Method::get, "/big/1000", {}, {}}, soon()).body.size(), 1000u);
  EXPECT_EQ(code_of([&] {
              (void)c.send({Method::get, "/big/1001", {}, {}}, soon());
            }),
            ErrorCode::internal);
}

TEST(HttpClient, SequentialCallsReuseOneConnection) {
  Double server;
  Client c(options({server.url()}));
  std::set<int> ports;
  for (int i = 0; i < 20; ++i)
    ports.insert(echoed(c.send({Method::get, "/echo", {}, {}}, soon()))["peer_port"].get<int>());
  EXPECT_EQ(ports.size(), 1u);
}

TEST(HttpClient, ConcurrentCallsShareAPoolOfAtMostPoolSizeConnections) {
  Double server;
  constexpr int kThreads = 4;
  auto o = options({server.url()});
  o.pool_size = kThreads;
  Client c(o);
  std::mutex mu;
  std::set<int> ports;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 40; ++i) {
        auto r = c.send({Method::post, "/echo", {}, std::to_string(t * 1000 + i)}, soon());
        auto e = echoed(r);
        if (r.status == 200 && e["body"] == std::to_string(t * 1000 + i)) ++ok;
        std::lock_guard lock(mu);
        ports.insert(e["peer_port"].get<int>());
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), kThreads * 40);
  EXPECT_LE(ports.size(), static_cast<std::size_t>(kThreads));
}

TEST(HttpClient, BadOptionsAreInvalidArgumentsThatNeverEchoAPassword) {
  auto bad = [](std::vector<std::string> urls) {
    try {
      Client c(options(std::move(urls)));
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(bad({}), "accepted");
  EXPECT_NE(bad({"ftp://h"}), "accepted");
  EXPECT_NE(bad({"http://h/?q=1"}), "accepted");
  const std::string userinfo = bad({"http://u:pa55word@h"});
  EXPECT_NE(userinfo, "accepted");
  EXPECT_EQ(userinfo.find("pa55word"), std::string::npos) << userinfo;
  auto o = options({"http://h"});
  o.tls.ca_file = "/ca.crt";
  EXPECT_THROW(Client{o}, InvalidArgument);  // TLS options without https
  o = options({"https://h"});
  o.tls.cert_file = "/c.crt";
  EXPECT_THROW(Client{o}, InvalidArgument);  // a certificate without its key
  o = options({"http://h"});
  o.pool_size = 0;
  EXPECT_THROW(Client{o}, InvalidArgument);
}

}  // namespace
}  // namespace leader::httptest
