// The CLI against the shared servers: exit 77 (EX_NOPERM) when a real server refuses the
// credentials of the store URI (redis ACL: no such user; MariaDB: access denied), and
// `leader list` on every server store (each implements leader::LockLister). Test names start with
// the server (Redis*, Mysql*, Postgres*, Etcd*, ...): each runs under that server's RESOURCE_LOCK.

#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace leader::cli_test {
namespace {

class Auth : public CliTest {
 protected:
  void expect_refused(const std::string& store) {
    Finished status = leader({"status", "--store", store, "--lock", "x"});
    EXPECT_EQ(status.code, 77) << store << "\n" << status.err;
    EXPECT_EQ(status.err.find("wrong-pw"), std::string::npos) << status.err;
    Finished run = leader({"run", "--store", store, "--lock", "x", "--", "touch", path("ran")});
    EXPECT_EQ(run.code, 77) << store << "\n" << run.err;
    EXPECT_EQ(read_file(path("ran")), "");
  }

  // Holds two locks under a per-process prefix, lists them, and lists nothing once released.
  void expect_listed(const std::string& store) {
    const std::string prefix = "cli-list-" + std::to_string(::getpid()) + "-";
    std::vector<Process> holders;
    for (const std::string name : {"b", "a"})
      holders.emplace_back(
          std::vector<std::string>{leader_binary(), "run", "--store", store, "--lock",
                                   prefix + name, "--node-id", "node-" + name, "--", "sh", "-c",
                                   "while [ ! -e " + path("release") + " ]; do sleep 0.02; done"},
          dir_);
    Finished listed;
    EXPECT_TRUE(eventually([&] {
      listed = leader({"list", "--store", store, "--prefix", prefix, "--json"});
      return listed.code == 0 && nlohmann::json::parse(listed.out).size() == 2;
    })) << listed.out
        << listed.err;
    auto doc = nlohmann::json::parse(listed.out);
    if (doc.size() == 2) {
      EXPECT_EQ(doc[0]["lock"], prefix + "a");
      EXPECT_EQ(doc[0]["holders"][0]["node_id"], "node-a");
      EXPECT_EQ(doc[1]["lock"], prefix + "b");
    }
    std::ofstream(path("release")) << "go\n";
    for (auto& h : holders) EXPECT_EQ(h.wait(), 0) << h.err();
    EXPECT_EQ(leader({"list", "--store", store, "--prefix", prefix, "--json"}).out, "[]\n");
  }
};

TEST_F(Auth, RedisRefusedCredentialsExit77) {
#ifdef LEADER_CLI_AUTH_REDIS
  expect_refused("redis://leader-no-such-user:wrong-pw@127.0.0.1:16379");
#else
  GTEST_SKIP() << "the redis store is not built";
#endif
}

TEST_F(Auth, MysqlRefusedCredentialsExit77) {
#ifdef LEADER_CLI_AUTH_MYSQL
  expect_refused("mysql://leader-no-such-user:wrong-pw@127.0.0.1:13306/leader_test");
#else
  GTEST_SKIP() << "the mysql store is not built";
#endif
}

TEST_F(Auth, MysqlListsHeldLocks) {
#ifdef LEADER_CLI_AUTH_MYSQL
  expect_listed("mysql://root@127.0.0.1:13306/leader_test");
#else
  GTEST_SKIP() << "the mysql store is not built";
#endif
}

TEST_F(Auth, PostgresListsHeldLocks) {
#ifdef LEADER_CLI_LIST_POSTGRES
  expect_listed("postgresql://postgres@127.0.0.1:15432/leader_test");
#else
  GTEST_SKIP() << "the postgres store is not built";
#endif
}

TEST_F(Auth, RedisListsHeldLocks) {
#ifdef LEADER_CLI_AUTH_REDIS
  expect_listed("redis://127.0.0.1:16379?prefix=leader-cli-list:");
#else
  GTEST_SKIP() << "the redis store is not built";
#endif
}

TEST_F(Auth, EtcdListsHeldLocks) {
#ifdef LEADER_CLI_LIST_ETCD
  expect_listed("etcd://127.0.0.1:12379?prefix=/leader-cli-list");
#else
  GTEST_SKIP() << "the etcd store is not built";
#endif
}

TEST_F(Auth, ZookeeperListsHeldLocks) {
#ifdef LEADER_CLI_LIST_ZOOKEEPER
  expect_listed("zk://127.0.0.1:12181?prefix=/leader-cli-list");
#else
  GTEST_SKIP() << "the zookeeper store is not built";
#endif
}

TEST_F(Auth, DynamodbListsHeldLocks) {
#ifdef LEADER_CLI_LIST_DYNAMODB
  expect_listed("dynamodb://test:test@127.0.0.1:18000?table=leader_cli_list&tls=false");
#else
  GTEST_SKIP() << "the dynamodb store is not built";
#endif
}

TEST_F(Auth, ConsulListsHeldLocks) {
#ifdef LEADER_CLI_LIST_CONSUL
  expect_listed("consul://127.0.0.1:18500?prefix=leader-cli-list");
#else
  GTEST_SKIP() << "the consul store is not built";
#endif
}

TEST_F(Auth, K8sListsHeldLocks) {
#ifdef LEADER_CLI_LIST_K8S
  expect_listed("k8s://127.0.0.1:16443?tls=false&namespace=cli-list");
#else
  GTEST_SKIP() << "the k8s store is not built";
#endif
}

TEST_F(Auth, MongodbListsHeldLocks) {
#ifdef LEADER_CLI_LIST_MONGODB
  expect_listed("mongodb://127.0.0.1:17017/leader_cli_list");
#else
  GTEST_SKIP() << "the mongodb store is not built";
#endif
}

}  // namespace
}  // namespace leader::cli_test
