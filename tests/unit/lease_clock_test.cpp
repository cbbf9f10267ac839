// The lease clock (src/core/engine/lease_clock.hpp): every rule with explicit times (a confirmed
// grant, a shorter grant than asked, unknown outcomes before and after confirmed grants, the margin
// and its misfits, the renewal cadence, the retry after a failure, extend's new ttl), then a model
// of the server that tries every order the requests of a lease may land in and checks that the
// deadline never promises more than the server holds.

#include "../../src/core/engine/lease_clock.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace leader::detail {
namespace {

using namespace std::chrono_literals;

// Every time of these tests is kT0 + some milliseconds.
const TimePoint kT0 = TimePoint{} + 1h;
TimePoint at(Duration d) { return kT0 + d; }

const MarginRule kDefaultMargin{};                    // a fifth of every grant
const MarginRule kMargin100{.safety_margin = 100ms};  // explicit, without auto_extend

TEST(LeaseClockGranted, AGrantIsJudgedByTheAskUnlessTheStoreGrantedLess) {
  struct Case {
    Duration requested, granted_ttl, expected;
  };
  for (const Case& c : std::vector<Case>{{3000ms, 3000ms, 3000ms},
                                         {3000ms, 1000ms, 1000ms},
                                         {3000ms, 2999ms, 2999ms},
                                         {3000ms, 5000ms, 3000ms},   // more: the ask
                                         {3000ms, 0ms, 3000ms},      // not reported: the ask
                                         {3000ms, -5ms, 3000ms}}) {  // nonsense: the ask
    EXPECT_EQ(LeaseClock::granted(c.requested, c.granted_ttl), c.expected)
        << c.requested.count() << " asked, " << c.granted_ttl.count() << " granted";
  }
}

TEST(MarginRuleTest, TheDefaultMarginIsAFifthOfTheGrantAndAnExplicitOneIsKept) {
  struct Case {
    Duration safety_margin, ttl, expected;
  };
  for (const Case& c : std::vector<Case>{{0ms, 3000ms, 600ms},
                                         {0ms, 1000ms, 200ms},
                                         {0ms, 7ms, 1ms},  // integer division
                                         {-5ms, 3000ms, 600ms},
                                         {100ms, 3000ms, 100ms},
                                         {100ms, 50ms, 100ms},  // even when it does not fit
                                         {2500ms, 3000ms, 2500ms}}) {
    const MarginRule without{.safety_margin = c.safety_margin};
    const MarginRule with{.safety_margin = c.safety_margin, .auto_extend = true};
    EXPECT_EQ(without.for_grant(c.ttl), c.expected)
        << c.safety_margin.count() << " ms margin, " << c.ttl.count() << " ms grant";
    EXPECT_EQ(with.for_grant(c.ttl), c.expected) << "auto_extend changes no margin";
  }
}

TEST(MarginRuleTest, AMarginMisfitsAGrantItIsNotShorterThanOrMoreThanHalfOfWithAutoExtend) {
  struct Case {
    Duration safety_margin;
    bool auto_extend;
    Duration ttl;
    std::string expected;
  };
  const std::string not_shorter = "safety_margin 3s is not shorter than the granted ttl ";
  const std::string over_half = "safety_margin 1.5s is more than half the granted ttl ";
  const std::string tail = ", so auto_extend's renewals (at a third of it) do not fit";
  for (const Case& c : std::vector<Case>{
           {0ms, true, 1ms, ""},  // the default margin always fits
           {0ms, false, 1ms, ""},
           {-1ms, true, 10ms, ""},
           {3000ms, false, 3000ms, not_shorter + "3s"},
           {3000ms, true, 3000ms, not_shorter + "3s"},
           {3000ms, false, 2000ms, not_shorter + "2s"},
           {3000ms, false, 500ms, not_shorter + "500ms"},
           {3000ms, false, 3001ms, ""},
           {1500ms, false, 2000ms, ""},  // more than half, but no renewals to fit
           {1500ms, true, 2000ms, over_half + "2s" + tail},
           {1500ms, true, 2999ms, over_half + "3s" + tail},  // 2999 / 2 = 1499
           {1500ms, true, 3000ms, ""},                       // exactly half fits
           {1500ms, true, 1500ms, "safety_margin 1.5s is not shorter than the granted ttl 1.5s"},
       }) {
    const MarginRule rule{.safety_margin = c.safety_margin, .auto_extend = c.auto_extend};
    EXPECT_EQ(rule.misfit(c.ttl), c.expected)
        << c.safety_margin.count() << " ms margin, auto_extend " << c.auto_extend << ", "
        << c.ttl.count() << " ms grant";
  }
}

TEST(LeaseClockTest, ANewClockRequestsNothingAndHasNoGrant) {
  const LeaseClock clock;
  EXPECT_EQ(clock.requested(), 0ms);
  EXPECT_EQ(clock.granted_ttl(), 0ms);
  EXPECT_EQ(clock.sent_at(), TimePoint{});
  EXPECT_EQ(clock.deadline(), TimePoint{});
  EXPECT_EQ(clock.renew_every(), 0ms);
}

TEST(LeaseClockTest, AConfirmedGrantCountsFromItsSendTimeMinusTheMargin) {
  LeaseClock clock;
  clock.request(3000ms);
  clock.confirm(at(0ms), 3000ms, 3000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(2400ms));  // 3000 - 3000 / 5
  EXPECT_EQ(clock.renew_every(), 1000ms);
  EXPECT_EQ(clock.next_renew(), at(1000ms));
  EXPECT_EQ(clock.granted_ttl(), 3000ms);
  EXPECT_EQ(clock.sent_at(), at(0ms));
  EXPECT_EQ(clock.requested(), 3000ms);

  clock.confirm(at(1000ms), 3000ms, 3000ms, kDefaultMargin);  // a renewal
  EXPECT_EQ(clock.deadline(), at(3400ms));
  EXPECT_EQ(clock.next_renew(), at(2000ms));
  EXPECT_EQ(clock.sent_at(), at(1000ms));
}

TEST(LeaseClockTest, AnExplicitMarginIsTakenOffEveryGrant) {
  struct Case {
    Duration asked, granted_ttl;
    TimePoint deadline;
    Duration renew_every;
  };
  for (const Case& c : std::vector<Case>{{3000ms, 3000ms, at(2900ms), 1000ms},
                                         {3000ms, 1200ms, at(1100ms), 400ms},
                                         {3000ms, 0ms, at(2900ms), 1000ms},
                                         {10000ms, 10000ms, at(9900ms), 3333ms}}) {
    LeaseClock clock;
    clock.request(c.asked);
    clock.confirm(at(0ms), c.asked, c.granted_ttl, kMargin100);
    EXPECT_EQ(clock.deadline(), c.deadline) << c.granted_ttl.count();
    EXPECT_EQ(clock.renew_every(), c.renew_every) << c.granted_ttl.count();
    EXPECT_EQ(clock.next_renew(), at(c.renew_every)) << c.granted_ttl.count();
    EXPECT_EQ(clock.granted_ttl(), c.granted_ttl) << "kept as the store reported it";
  }
}

TEST(LeaseClockTest, AGrantLongerThanAskedOrUnreportedIsJudgedByTheAsk) {
  for (const Duration reported : {5000ms, 0ms}) {
    LeaseClock clock;
    clock.request(3000ms);
    clock.confirm(at(0ms), 3000ms, reported, kDefaultMargin);
    EXPECT_EQ(clock.deadline(), at(2400ms)) << reported.count();
    EXPECT_EQ(clock.renew_every(), 1000ms) << reported.count();
    EXPECT_EQ(clock.granted_ttl(), reported) << reported.count();
    // No grant cap: an unknown outcome counts its whole ask, and the retry the whole ttl.
    clock.unknown_outcome(at(100ms), 3000ms, kDefaultMargin);
    EXPECT_EQ(clock.deadline(), at(2400ms)) << reported.count();
    EXPECT_EQ(clock.retry_after_failure(), 300ms) << reported.count();
  }
}

TEST(LeaseClockTest, AShorterGrantThanAskedIsJudgedByTheGrantAndCapsLaterUnknownOutcomes) {
  LeaseClock clock;
  clock.request(3000ms);
  clock.confirm(at(0ms), 3000ms, 1500ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(1200ms));  // 1500 - 300
  EXPECT_EQ(clock.renew_every(), 500ms);
  EXPECT_EQ(clock.next_renew(), at(500ms));
  EXPECT_EQ(clock.retry_after_failure(), 150ms) << "a tenth of the cap, not of the ask";

  // A renewal asking 3000 whose outcome is unknown sets at most the cap from its send time.
  clock.unknown_outcome(at(100ms), 3000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(1200ms)) << "100 + 1500 - 300 = 1300 is later";
  clock.unknown_outcome(at(-200ms), 3000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(1000ms)) << "-200 + 1500 - 300";

  // A later full grant (the cap may have been a session's) does not lift the cap.
  clock.confirm(at(500ms), 3000ms, 3000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(1700ms)) << "500 + min(3000, unknown 1500) - 300";
  EXPECT_EQ(clock.renew_every(), 1000ms);
  EXPECT_EQ(clock.retry_after_failure(), 150ms);
}

TEST(LeaseClockTest, TheGrantCapIsTheSmallestShortGrantSoFar) {
  LeaseClock clock;
  clock.request(3000ms);
  clock.confirm(at(0ms), 3000ms, 2000ms, kMargin100);
  clock.confirm(at(500ms), 3000ms, 2500ms, kMargin100);
  EXPECT_EQ(clock.deadline(), at(2900ms)) << "500 + 2500 - 100: the grant itself counts";
  EXPECT_EQ(clock.retry_after_failure(), 200ms) << "the cap stays 2000";
  clock.unknown_outcome(at(600ms), 3000ms, kMargin100);
  EXPECT_EQ(clock.deadline(), at(2500ms)) << "600 + min(3000, cap 2000) - 100";
  // A grant at or above the ask is no cap.
  LeaseClock full;
  full.request(3000ms);
  full.confirm(at(0ms), 3000ms, 3000ms, kMargin100);
  full.unknown_outcome(at(600ms), 3000ms, kMargin100);
  EXPECT_EQ(full.deadline(), at(2900ms));
  EXPECT_EQ(full.retry_after_failure(), 300ms);
}

TEST(LeaseClockTest, AnUnknownOutcomeAfterAConfirmedGrantBoundsTheDeadlineByItsSendTimeAndTtl) {
  struct Case {
    const char* name;
    TimePoint sent;
    Duration asked;
    MarginRule rule;
    TimePoint deadline;
  };
  // Confirmed: sent at 0, 3000 granted: deadline 2400 (default margin) or 2900 (explicit 100).
  for (const Case& c : std::vector<Case>{
           {"the same ask, later", at(1000ms), 3000ms, kDefaultMargin, at(2400ms)},
           {"a shorter ask", at(1000ms), 1000ms, kDefaultMargin, at(1800ms)},  // 1000+1000-200
           {"a shorter ask, early", at(100ms), 1000ms, kDefaultMargin, at(900ms)},
           {"a longer ask (extend)", at(1000ms), 6000ms, kDefaultMargin, at(2400ms)},
           {"explicit margin, same ask", at(1000ms), 3000ms, kMargin100, at(2900ms)},
           {"explicit margin, shorter ask", at(1000ms), 1000ms, kMargin100, at(1900ms)},
           {"shorter ask ending exactly there", at(500ms), 2500ms, kMargin100, at(2900ms)},
           {"one ms shorter", at(500ms), 2499ms, kMargin100, at(2899ms)},
       }) {
    LeaseClock clock;
    clock.request(3000ms);
    clock.confirm(at(0ms), 3000ms, 3000ms, c.rule);
    clock.unknown_outcome(c.sent, c.asked, c.rule);
    EXPECT_EQ(clock.deadline(), c.deadline) << c.name;
    EXPECT_EQ(clock.next_renew(), at(1000ms)) << c.name << ": only retry_from() moves it";
    EXPECT_EQ(clock.granted_ttl(), 3000ms) << c.name;
    EXPECT_EQ(clock.sent_at(), at(0ms)) << c.name;
  }
}

TEST(LeaseClockTest, AnUnknownOutcomeBoundsEveryLaterConfirmedGrantByItsTtl) {
  // Sent at 100 for 1000, outcome unknown: it may land after any later confirmed request, and
  // then holds the lease until that request's send time + 1000 only.
  LeaseClock clock;
  clock.request(3000ms);
  clock.confirm(at(0ms), 3000ms, 3000ms, kDefaultMargin);
  clock.unknown_outcome(at(100ms), 1000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(900ms));
  clock.confirm(at(500ms), 3000ms, 3000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(1300ms)) << "500 + 1000 - 200";
  EXPECT_EQ(clock.renew_every(), 1000ms) << "the cadence follows the grant, not the bound";
  EXPECT_EQ(clock.next_renew(), at(1500ms));
  clock.confirm(at(5000ms), 3000ms, 3000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(5800ms)) << "for good: it may land any time";
  // A later, longer unknown outcome does not lift the bound; a shorter one lowers it.
  clock.unknown_outcome(at(5100ms), 3000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(5800ms));
  clock.unknown_outcome(at(5100ms), 500ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(5500ms)) << "5100 + 500 - 100";
  clock.confirm(at(6000ms), 3000ms, 3000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(6400ms)) << "6000 + 500 - 100";
}

TEST(LeaseClockTest, AConfirmedGrantShorterThanTheUnknownBoundCountsItself) {
  LeaseClock clock;
  clock.request(3000ms);
  clock.confirm(at(0ms), 3000ms, 3000ms, kMargin100);
  clock.unknown_outcome(at(100ms), 2000ms, kMargin100);
  EXPECT_EQ(clock.deadline(), at(2000ms));
  clock.confirm(at(500ms), 1000ms, 1000ms, kMargin100);  // an extend to a shorter lease
  EXPECT_EQ(clock.deadline(), at(1400ms)) << "500 + min(1000, 2000) - 100: not a minimum";
  EXPECT_EQ(clock.renew_every(), 333ms);
}

TEST(LeaseClockTest, AnUnknownOutcomeBeforeTheAcquireBoundsItsGrant) {
  struct Case {
    Duration before, asked, granted_ttl;
    TimePoint deadline;
    Duration renew_every;
  };
  for (const Case& c : std::vector<Case>{
           {3000ms, 3000ms, 3000ms, at(2400ms), 1000ms},  // the same lease time: no change
           {2000ms, 3000ms, 3000ms, at(1600ms), 1000ms},  // 2000 - 400
           {2000ms, 3000ms, 1000ms, at(800ms), 333ms},    // the grant is shorter still
           {5000ms, 3000ms, 3000ms, at(2400ms), 1000ms},
       }) {
    LeaseClock clock;
    clock.request(c.asked);
    clock.unknown_before(c.before);
    clock.confirm(at(0ms), c.asked, c.granted_ttl, kDefaultMargin);
    EXPECT_EQ(clock.deadline(), c.deadline) << c.before.count() << " " << c.granted_ttl.count();
    EXPECT_EQ(clock.renew_every(), c.renew_every);
    // It bounds the renewals too.
    clock.confirm(at(1000ms), c.asked, c.asked, kDefaultMargin);
    const Duration bound = std::min(c.before, c.asked);
    EXPECT_EQ(clock.deadline(), at(1000ms) + bound - bound / 5) << c.before.count();
  }
  // The smallest of several.
  LeaseClock clock;
  clock.unknown_before(2000ms);
  clock.unknown_before(1000ms);
  clock.unknown_before(2500ms);
  clock.confirm(at(0ms), 3000ms, 3000ms, kMargin100);
  EXPECT_EQ(clock.deadline(), at(900ms));
}

TEST(LeaseClockTest, UnknownOutcomesKeepTheSmallestTtlInEveryArrivalOrder) {
  // The same three unknown outcomes recorded in every order leave the same bound on a later
  // confirmed grant, and the same deadline.
  struct Unknown {
    TimePoint sent;
    Duration asked;
  };
  std::vector<Unknown> unknowns{{at(100ms), 2000ms}, {at(200ms), 1000ms}, {at(300ms), 2500ms}};
  std::sort(unknowns.begin(), unknowns.end(),
            [](const Unknown& a, const Unknown& b) { return a.sent < b.sent; });
  int orders = 0;
  do {
    LeaseClock clock;
    clock.request(3000ms);
    clock.confirm(at(0ms), 3000ms, 3000ms, kMargin100);
    for (const Unknown& u : unknowns) clock.unknown_outcome(u.sent, u.asked, kMargin100);
    EXPECT_EQ(clock.deadline(), at(1100ms)) << "200 + 1000 - 100, order " << orders;
    clock.confirm(at(2000ms), 3000ms, 3000ms, kMargin100);
    EXPECT_EQ(clock.deadline(), at(2900ms)) << "2000 + 1000 - 100, order " << orders;
    ++orders;
  } while (
      std::next_permutation(unknowns.begin(), unknowns.end(),
                            [](const Unknown& a, const Unknown& b) { return a.sent < b.sent; }));
  EXPECT_EQ(orders, 6);
}

TEST(LeaseClockTest, TheDefaultMarginOfAnUnknownOutcomeIsAFifthOfItsOwnTtl) {
  LeaseClock clock;
  clock.request(10000ms);
  clock.confirm(at(0ms), 10000ms, 10000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(8000ms));
  clock.unknown_outcome(at(1000ms), 5000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(5000ms)) << "1000 + 5000 - 1000";
  clock.confirm(at(2000ms), 10000ms, 10000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(6000ms)) << "2000 + 5000 - 1000";
}

TEST(LeaseClockTest, RenewalsAreDueAThirdOfTheGrantAfterItsSendTime) {
  struct Case {
    Duration granted_ttl;
    Duration renew_every;
  };
  for (const Case& c : std::vector<Case>{
           {3000ms, 1000ms}, {1000ms, 333ms}, {2ms, 0ms}, {10000ms, 3333ms}, {60000ms, 20000ms}}) {
    LeaseClock clock;
    clock.request(c.granted_ttl);
    clock.confirm(at(500ms), c.granted_ttl, c.granted_ttl, kDefaultMargin);
    EXPECT_EQ(clock.renew_every(), c.renew_every) << c.granted_ttl.count();
    EXPECT_EQ(clock.next_renew(), at(500ms) + c.renew_every) << c.granted_ttl.count();
  }
}

TEST(LeaseClockTest, TheLeaseIsLookedAtAtItsDeadlineOrItsNextRenewalWhenItRenews) {
  LeaseClock clock;
  clock.request(3000ms);
  clock.confirm(at(0ms), 3000ms, 3000ms, kDefaultMargin);
  EXPECT_EQ(clock.next_due(false), at(2400ms));
  EXPECT_EQ(clock.next_due(true), at(1000ms));
  EXPECT_FALSE(clock.renewal_due(at(999ms)));
  EXPECT_TRUE(clock.renewal_due(at(1000ms)));
  EXPECT_FALSE(clock.expired(at(2399ms)));
  EXPECT_TRUE(clock.expired(at(2400ms))) << "the deadline itself is past";

  clock.shift_renewal(-100ms);  // the scheduler's jitter
  EXPECT_EQ(clock.next_renew(), at(900ms));
  EXPECT_EQ(clock.next_due(true), at(900ms));
  clock.shift_renewal(200ms);
  EXPECT_EQ(clock.next_renew(), at(1100ms));

  // A renewal due after the deadline (a failed one's retry past it): the deadline comes first.
  clock.retry_from(at(2390ms));
  EXPECT_EQ(clock.next_renew(), at(2690ms));
  EXPECT_EQ(clock.next_due(true), at(2400ms));
  EXPECT_EQ(clock.next_due(false), at(2400ms));
}

TEST(LeaseClockTest, AFailedRenewalIsRetriedAfterATenthOfTheTtlWithinTenMsAndOneSecond) {
  struct Case {
    Duration ttl, granted_ttl, retry;
  };
  for (const Case& c : std::vector<Case>{
           {3000ms, 3000ms, 300ms},
           {1000ms, 1000ms, 100ms},
           {100ms, 100ms, 10ms},
           {50ms, 50ms, 10ms},  // at least 10 ms
           {10000ms, 10000ms, 1000ms},
           {60000ms, 60000ms, 1000ms},  // at most 1 s
           {3000ms, 1200ms, 120ms},     // a tenth of the grant cap
           {3000ms, 50ms, 10ms},
           {3000ms, 0ms, 300ms},  // not reported: no cap
       }) {
    LeaseClock clock;
    clock.request(c.ttl);
    clock.confirm(at(0ms), c.ttl, c.granted_ttl, kDefaultMargin);
    EXPECT_EQ(clock.retry_after_failure(), c.retry)
        << c.ttl.count() << " " << c.granted_ttl.count();
    clock.retry_from(at(700ms));
    EXPECT_EQ(clock.next_renew(), at(700ms) + c.retry) << c.ttl.count();
  }
  EXPECT_EQ(LeaseClock{}.retry_after_failure(), 10ms) << "nothing requested yet";
}

TEST(LeaseClockTest, AFailedRenewalMovesTheRenewalAndTheDeadlineTogether) {
  // What HeldLease::end_renewal does with an unknown outcome: bound, then retry.
  LeaseClock clock;
  clock.request(3000ms);
  clock.confirm(at(0ms), 3000ms, 3000ms, kDefaultMargin);
  clock.unknown_outcome(at(1000ms), 3000ms, kDefaultMargin);
  clock.retry_from(at(1250ms));
  EXPECT_EQ(clock.deadline(), at(2400ms));
  EXPECT_EQ(clock.next_renew(), at(1550ms));
  EXPECT_EQ(clock.next_due(true), at(1550ms));
  clock.confirm(at(1550ms), 3000ms, 3000ms, kDefaultMargin);  // the retry succeeds
  EXPECT_EQ(clock.deadline(), at(3950ms)) << "1550 + min(3000, 3000) - 600";
  EXPECT_EQ(clock.next_renew(), at(2550ms));
}

TEST(LeaseClockTest, ExtendRequestsANewTtlForEveryLaterRenewal) {
  LeaseClock clock;
  clock.request(3000ms);
  clock.confirm(at(0ms), 3000ms, 3000ms, kDefaultMargin);
  clock.request(10000ms);  // extend(10 s)
  EXPECT_EQ(clock.requested(), 10000ms);
  EXPECT_EQ(clock.deadline(), at(2400ms)) << "asking changes no time";
  EXPECT_EQ(clock.retry_after_failure(), 1000ms);
  clock.confirm(at(500ms), 10000ms, 10000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(8500ms));
  EXPECT_EQ(clock.renew_every(), 3333ms);
  EXPECT_EQ(clock.next_renew(), at(3833ms));

  // A shorter extend, confirmed, shortens the deadline: the server's expiry moved back.
  clock.request(1000ms);
  clock.confirm(at(600ms), 1000ms, 1000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(1400ms));
  EXPECT_EQ(clock.retry_after_failure(), 100ms);

  // An extend whose outcome is unknown still changes what later renewals ask.
  clock.request(5000ms);
  clock.unknown_outcome(at(700ms), 5000ms, kDefaultMargin);
  EXPECT_EQ(clock.deadline(), at(1400ms));
  EXPECT_EQ(clock.requested(), 5000ms);
  EXPECT_EQ(clock.retry_after_failure(), 500ms);
}

TEST(LeaseClockTest, AFailOpenLeaseNeverExpires) {
  LeaseClock clock;
  clock.never_expire();
  EXPECT_EQ(clock.deadline(), TimePoint::max());
  EXPECT_FALSE(clock.expired(at(1h)));
  EXPECT_EQ(clock.next_due(false), TimePoint::max());
}

// A model of the server for one lease: every request sets the expiry to its landing time + its
// granted ttl while the lease is held; a renewal that lands after the expiry is refused.
struct ModelRequest {
  Duration sent, replied, asked;
  bool confirmed = true;
  bool acquire = false;  // an acquire attempt: it grants whether or not the lease is held
};

constexpr Duration kNever{-1};

// Until when the server holds the lease without a gap, if requests land at `landed` (kNever:
// not at all); nullopt when that order contradicts a confirmed outcome.
std::optional<Duration> held_until(const std::vector<ModelRequest>& requests,
                                   const std::vector<Duration>& landed, Duration cap) {
  std::array<std::size_t, 8> order{};
  std::size_t n = 0;
  for (std::size_t i = 0; i < requests.size(); ++i)
    if (landed[i] != kNever) order.at(n++) = i;
  for (std::size_t k = 1; k < n; ++k)  // by landing time (an insertion sort: a few at most)
    for (std::size_t j = k; j > 0 && landed[order[j]] < landed[order[j - 1]]; --j)
      std::swap(order[j], order[j - 1]);
  std::optional<Duration> expiry;
  Duration gap = Duration::max();
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = order[k];
    const ModelRequest& r = requests[i];
    const Duration granted = std::min(r.asked, cap);
    const Duration when = landed[i];
    if (expiry && when < *expiry) {
      expiry = when + granted;
    } else if (r.acquire) {
      if (expiry) gap = std::min(gap, *expiry);  // lapsed, then granted again
      expiry = when + granted;
    } else if (r.confirmed) {
      return std::nullopt;  // refused: it would not have been confirmed
    } else if (expiry) {
      gap = std::min(gap, *expiry);  // refused: the lease lapsed before it
    }
  }
  if (!expiry) return std::nullopt;  // the confirmed acquire always lands
  return std::min(gap, *expiry);
}

// Calls `check` with every landing time of every request: a confirmed one when it was sent or
// when its reply came (two at once apply in send order), an unknown one never or at its send
// time + 2 ms + its index + every multiple of `step` before `until` (a landing after the promised
// deadline changes nothing before it): an unknown one never lands at once with another.
template <class Check>
void every_landing(const std::vector<ModelRequest>& requests, Duration step, Duration until,
                   std::vector<Duration>& landed, std::size_t i, const Check& check) {
  if (i == requests.size()) {
    check(landed);
    return;
  }
  const ModelRequest& r = requests[i];
  if (r.confirmed) {
    for (const Duration t : {r.sent, r.replied}) {
      landed[i] = t;
      every_landing(requests, step, until, landed, i + 1, check);
    }
    return;
  }
  landed[i] = kNever;
  every_landing(requests, step, until, landed, i + 1, check);
  for (Duration t = r.sent + Duration(2 + static_cast<Duration::rep>(i)); t < until; t += step) {
    landed[i] = t;
    every_landing(requests, step, until, landed, i + 1, check);
  }
}

TEST(LeaseClockModel, TheDeadlinePlusTheMarginIsHeldOnTheServerWhateverOrderRequestsLandIn) {
  // An acquire asking 3000 (sent at 0, replied at 200), maybe after a lost attempt of it (sent
  // at -200), then up to two renewals or extends: each asks 1000, 3000 or 5000, right after the
  // previous reply or 400 ms later, and is confirmed or of unknown outcome; the server grants
  // everything or caps every grant at 2000. Sends are multiples of 200 and unknown requests land
  // at every multiple of 200 (+ a few ms): each lands just after any other one, in either order.
  const MarginRule rule{.safety_margin = 1ms};
  const Duration latency = 200ms;
  const Duration step = 200ms;
  int sequences = 0;
  long orders = 0;
  int failures = 0;  // the first few are reported
  for (const Duration cap : {Duration::max(), Duration{2000}}) {
    for (const bool lost_attempt : {false, true}) {
      std::vector<ModelRequest> base;
      if (lost_attempt) base.push_back({-200ms, 0ms, 3000ms, false, true});
      base.push_back({0ms, latency, 3000ms, true, true});
      std::vector<std::vector<ModelRequest>> sequences_of{base};
      for (int renewals = 0; renewals < 2; ++renewals) {
        std::vector<std::vector<ModelRequest>> longer;
        for (const auto& s : sequences_of) {
          if (static_cast<int>(s.size()) - (lost_attempt ? 1 : 0) != renewals + 1) continue;
          for (const Duration asked : {1000ms, 3000ms, 5000ms})
            for (const Duration pause : {0ms, 400ms})
              for (const bool confirmed : {true, false}) {
                auto next = s;
                const Duration sent = s.back().replied + pause;
                next.push_back({sent, sent + latency, asked, confirmed, false});
                longer.push_back(std::move(next));
              }
        }
        sequences_of.insert(sequences_of.end(), longer.begin(), longer.end());
      }
      for (const auto& requests : sequences_of) {
        // The clock, fed the outcomes in the order their replies came.
        LeaseClock clock;
        clock.request(3000ms);
        for (const ModelRequest& r : requests) {
          if (r.acquire && !r.confirmed) {
            clock.unknown_before(r.asked);
          } else if (r.confirmed) {
            clock.confirm(at(r.sent), r.asked, std::min(r.asked, cap), rule);
          } else {
            clock.unknown_outcome(at(r.sent), r.asked, rule);
          }
        }
        const Duration promised =
            std::chrono::duration_cast<Duration>(clock.deadline() - kT0) + rule.for_grant(0ms);
        std::vector<Duration> landed(requests.size());
        ++sequences;
        every_landing(requests, step, promised, landed, 0, [&](const std::vector<Duration>& l) {
          const auto held = held_until(requests, l, cap);
          if (!held) return;
          ++orders;
          if (*held >= promised || ++failures > 5) return;
          std::string trace;
          for (std::size_t i = 0; i < requests.size(); ++i)
            trace += " [sent " + std::to_string(requests[i].sent.count()) + " ask " +
                     std::to_string(requests[i].asked.count()) +
                     (requests[i].confirmed ? " ok" : " unknown") + " landed " +
                     std::to_string(l[i].count()) + "]";
          ADD_FAILURE() << "held until " << held->count() << " but promised " << promised.count()
                        << ":" << trace;
        });
      }
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(sequences, 2 * 2 * (1 + 12 + 144));
  EXPECT_GT(orders, 100000);
}

}  // namespace
}  // namespace leader::detail
