#include <gtest/gtest.h>

#include "leader/leader.hpp"
#include "leader/stores/memory.hpp"

namespace leader {
namespace {

using namespace std::chrono_literals;

TEST(LockNames, AcceptTheDocumentedAlphabet) {
  for (const char* ok :
       {"a", "Z9", "nightly-settlement", "job_1.v2", "tenant:acme:job", "0starts-with-digit"})
    EXPECT_NO_THROW(validate_lock_name(ok)) << ok;
  EXPECT_NO_THROW(validate_lock_name(std::string(255, 'x')));
}

TEST(LockNames, RejectEmptyLongAndForeignCharactersNamingTheRule) {
  EXPECT_THROW(validate_lock_name(""), InvalidArgument);
  EXPECT_THROW(validate_lock_name(std::string(256, 'x')), InvalidArgument);
  for (const char* bad : {"-lead", ".x", ":x", "a b", "a/b", "é", "a\nb", "a*"}) {
    EXPECT_THROW(validate_lock_name(bad), InvalidArgument) << bad;
    EXPECT_FALSE(is_valid_lock_name(bad));
  }
  try {
    validate_lock_name("a/b");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'a/b'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("position 1"), std::string::npos) << e.what();
  }
}

TEST(Tenants, ScopeNamesAndRejectSeparatorsInside) {
  EXPECT_EQ(tenant_lock_name("acme", "job"), "tenant:acme:job");
  EXPECT_THROW((void)tenant_lock_name("ac:me", "job"), InvalidArgument);
  EXPECT_THROW((void)tenant_lock_name("acme", "a:b"), InvalidArgument);
  EXPECT_THROW((void)tenant_lock_name("", "job"), InvalidArgument);
  auto store = make_memory_store();
  LeaderElector e(store, {.wait_time = 0s});
  auto acme = e.for_tenant("acme");
  auto r = acme.run_if_leader_result("job", [](LeaderContext& c) { return c.lock_name(); });
  ASSERT_TRUE(r.elected());
  EXPECT_EQ(r.value(), "tenant:acme:job");
  EXPECT_THROW((void)e.for_tenant("a:b"), InvalidArgument);
  EXPECT_THROW(acme.run_if_leader("x:y", [] {}), InvalidArgument);
}

TEST(OwnerTokens, AreRandom128BitHex) {
  auto a = new_owner_token(), b = new_owner_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(ElectionOptions, DefaultsMatchTheDesign) {
  ElectionOptions o;
  EXPECT_EQ(o.wait_time, 5s);
  EXPECT_EQ(o.lease_time, 60s);
  EXPECT_EQ(o.min_lease_time, 0s);
  EXPECT_FALSE(o.auto_extend);
  EXPECT_FALSE(o.node_id.empty());
  EXPECT_EQ(o.on_backend_error, OnBackendError::rethrow);
  EXPECT_EQ(o.effective_safety_margin(), 12s);
  EXPECT_EQ(o.effective_call_timeout(), 10s);
  EXPECT_NO_THROW(o.validate());
  EXPECT_EQ(GroupOptions{}.max_leaders, 2);
}

struct BadOption {
  const char* field;
  ElectionOptions options;
};

class ElectionOptionsRule : public ::testing::TestWithParam<BadOption> {};

TEST_P(ElectionOptionsRule, IsEnforcedWithAMessageNamingTheField) {
  try {
    GetParam().options.validate();
    FAIL() << "accepted bad " << GetParam().field;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(GetParam().field), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Options, ElectionOptionsRule,
    ::testing::Values(
        BadOption{"wait_time", {.wait_time = -1ms}}, BadOption{"lease_time", {.lease_time = 0ms}},
        BadOption{"min_lease_time", {.lease_time = 1s, .min_lease_time = 2s}},
        BadOption{"min_lease_time", {.min_lease_time = -1ms}},
        BadOption{"node_id", {.node_id = "  "}}, BadOption{"node_id", {.node_id = "web-1\n"}},
        BadOption{"node_id", {.node_id = std::string("web\x01") + "-2"}},
        BadOption{"safety_margin", {.lease_time = 1s, .safety_margin = 1s}},
        BadOption{"safety_margin", {.lease_time = 10s, .auto_extend = true, .safety_margin = 6s}},
        BadOption{"call_timeout", {.call_timeout = -5ms}}));

TEST(GroupOptions, RequireAtLeastOneLeader) {
  EXPECT_THROW((GroupOptions{.max_leaders = 0}.validate()), InvalidArgument);
  EXPECT_THROW(LeaderGroupElector(make_memory_store(), {.max_leaders = -3}), InvalidArgument);
  EXPECT_NO_THROW(LeaderGroupElector(make_memory_store(), {.max_leaders = 1}));
}

TEST(Electors, RejectANullStoreAndBadOptionsAtConstruction) {
  EXPECT_THROW(LeaderElector(nullptr), InvalidArgument);
  EXPECT_THROW(LeaderElector(make_memory_store(), {.lease_time = 0s}), InvalidArgument);
}

}  // namespace
}  // namespace leader
