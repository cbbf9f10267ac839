// The rules of one acquisition (src/core/engine/acquire_loop.hpp), which the blocking and the
// asynchronous drivers share: which errors are retried, when the call ends and how, the pause
// between attempts and the backoff.

#include "../../src/core/engine/acquire_loop.hpp"

#include <gtest/gtest.h>

namespace leader::detail {
namespace {

using namespace std::chrono_literals;
using End = AcquireLoop::End;

const TimePoint t0{std::chrono::seconds(1000)};

BackendError error(ErrorCode code) { return BackendError(code, "memory", "test"); }

TEST(AcquireLoop, RetriesExactlyTheErrorsWhoseOutcomeIsUnknown) {
  for (auto code : {ErrorCode::unavailable, ErrorCode::deadline_exceeded, ErrorCode::internal}) {
    AcquireLoop loop(t0, 10s);
    EXPECT_EQ(loop.failed(error(code)), End::go_on) << to_string(code);
    EXPECT_TRUE(loop.unknown()) << to_string(code);
    ASSERT_TRUE(loop.last_error()) << to_string(code);
    EXPECT_EQ(loop.last_error()->code(), code);
  }
  for (auto code :
       {ErrorCode::lease_lost, ErrorCode::failed_precondition, ErrorCode::invalid_argument}) {
    AcquireLoop loop(t0, 10s);
    EXPECT_EQ(loop.failed(error(code)), End::failed) << to_string(code);
    EXPECT_FALSE(loop.unknown()) << "an answered refusal granted nothing: " << to_string(code);
  }
}

TEST(AcquireLoop, AContendedAttemptClearsTheLastErrorButNotTheUnknownOutcome) {
  AcquireLoop loop(t0, 10s);
  (void)loop.failed(error(ErrorCode::unavailable));
  loop.contended();
  EXPECT_FALSE(loop.last_error()) << "the store answered since: the skip is contention";
  EXPECT_TRUE(loop.unknown()) << "the lost attempt may still hold a lease";
}

TEST(AcquireLoop, TheWaitEndsAtStartPlusWaitTimeAndOutranksAStop) {
  AcquireLoop loop(t0, 2s);
  EXPECT_EQ(loop.wait_until(), t0 + 2s);
  EXPECT_EQ(loop.after_attempt(t0, false), End::go_on);
  EXPECT_EQ(loop.after_attempt(t0 + 1999ms, false), End::go_on);
  EXPECT_EQ(loop.after_attempt(t0 + 1999ms, true), End::cancelled);
  EXPECT_EQ(loop.after_attempt(t0 + 2s, false), End::wait_over);
  EXPECT_EQ(loop.after_attempt(t0 + 2s, true), End::wait_over)
      << "an attempt at the wait's end is the store's answer";
}

TEST(AcquireLoop, WaitTimeZeroMakesOneAttempt) {
  AcquireLoop loop(t0, 0s);
  EXPECT_EQ(loop.after_attempt(t0, false), End::wait_over);
}

TEST(AcquireLoop, AnEndlessWaitDoesNotOverflow) {
  AcquireLoop loop(t0, Duration::max());
  EXPECT_EQ(loop.wait_until(), TimePoint::max());
  EXPECT_EQ(loop.after_attempt(t0 + 24h * 365, false), End::go_on);
}

TEST(AcquireLoop, ThePauseIsTheJitteredBackoffCutToTheRestOfTheWait) {
  AcquireLoop loop(t0, 1s);
  EXPECT_EQ(loop.pause(t0, 30ms), 30ms);
  EXPECT_EQ(loop.pause(t0 + 990ms, 30ms), 10ms);
}

TEST(AcquireLoop, TheBackoffDoublesUpToItsCapAndRestartsOnAChange) {
  AcquireLoop loop(t0, 60s);
  EXPECT_EQ(loop.backoff(), kFirstBackoff);
  Duration expected = kFirstBackoff;
  for (int i = 0; i < 10; ++i) {
    loop.woken(false);
    expected = std::min(expected * 2, kMaxBackoff);
    EXPECT_EQ(loop.backoff(), expected) << "after " << i + 1 << " quiet pauses";
  }
  EXPECT_EQ(loop.backoff(), kMaxBackoff);
  loop.woken(true);
  EXPECT_EQ(loop.backoff(), kFirstBackoff) << "a change of the lock: try again soon";
}

}  // namespace
}  // namespace leader::detail
