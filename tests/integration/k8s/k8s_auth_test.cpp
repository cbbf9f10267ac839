// Bearer tokens: a token file that rotates, a refused token (401) and a forbidden one (403,
// RBAC), never quoted in messages.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "k8s_double.hpp"
#include "leader/leader.hpp"

namespace leader::k8s::test {
namespace {

using Ms = std::chrono::milliseconds;

class K8sAuth : public ::testing::Test {
 protected:
  K8sAuth()
      : file_(std::filesystem::temp_directory_path() /
              ("leader-k8s-token-" + std::to_string(::getpid()))),
        server_({"--token-file", write("token-one"), "--forbidden-token", "no-rbac-token"}) {}
  ~K8sAuth() override { std::filesystem::remove(file_); }
  std::string write(const std::string& token) {
    std::ofstream(file_) << token << "\n";
    return file_.string();
  }
  BackendError failure(const std::string& extra) {
    try {
      (void)server_.store("auth", extra)
          ->try_acquire({"job", new_owner_token(), "n", Ms{5000}, 0}, soon());
    } catch (const BackendError& e) {
      return e;
    }
    throw std::runtime_error("accepted");
  }
  std::filesystem::path file_;
  Double server_;
};

TEST_F(K8sAuth, ATokenFileIsReadAgainWhenTheServerRefusesARotatedToken) {
  auto s = server_.store("auth", "&token_file=" + file_.string());
  auto got = s->try_acquire({"rotating", new_owner_token(), "n", Ms{5000}, 0}, soon());
  ASSERT_TRUE(got);
  write("token-two");  // the kubelet rotated the projected token; the server knows only the new
  Lease l = *got.lease;
  EXPECT_EQ(status_of(s->renew(l, Ms{5000}, soon())), LeaseStatus::ok);
}

TEST_F(K8sAuth, ARefusedTokenIsFailedPreconditionWithoutTheToken) {
  auto e = failure("&token=wrong-secret-value");
  EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
  EXPECT_NE(std::string(e.what()).find("401"), std::string::npos) << e.what();
  EXPECT_EQ(std::string(e.what()).find("wrong-secret-value"), std::string::npos) << e.what();
  EXPECT_EQ(failure("").code(), ErrorCode::failed_precondition);  // no token at all
}

TEST_F(K8sAuth, AForbiddenTokenPointsAtTheRbacManifest) {
  auto e = failure("&token=no-rbac-token");
  EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
  EXPECT_NE(std::string(e.what()).find("rbac.yaml"), std::string::npos) << e.what();
  EXPECT_EQ(std::string(e.what()).find("no-rbac-token"), std::string::npos) << e.what();
}

}  // namespace
}  // namespace leader::k8s::test
