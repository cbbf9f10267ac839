// kubeconfig loading (no server): contexts, relative paths, -data fields, where the file comes
// from (?kubeconfig=, in-cluster, KUBECONFIG, ~/.kube/config) and every refusal, its message
// checked for the file, the stanza and the field, and never the token or key.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "k8s/config.hpp"
#include "k8s_double.hpp"
#include "leader/leader.hpp"

namespace leader::k8s::test {
namespace {

namespace fs = std::filesystem;

constexpr const char* kToken = "s3cr3t-kubeconfig-token";
constexpr const char* kPem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
constexpr const char* kKeyPem =
    "-----BEGIN PRIVATE KEY-----\nMIGHAgEA\n-----END PRIVATE KEY-----\n";

Config parse(const std::string& text) { return Config::from_uri(Uri::parse(text)); }

/// The message of the InvalidArgument that `uri` is refused with (a failure otherwise).
std::string refusal(const std::string& uri) {
  try {
    (void)parse(uri);
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find(kToken), std::string::npos) << what;
    EXPECT_EQ(what.find("MIGHAgEA"), std::string::npos) << what;
    return what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not InvalidArgument: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << uri;
  return "(accepted)";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class Kubeconfig : public ::testing::Test {
 protected:
  Kubeconfig() {
    dir_ = fs::temp_directory_path() /
           ("leader-k8s-kubeconfig-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "home");
    env_.set("HOME", (dir_ / "home").string());
    for (const char* v : {"KUBECONFIG", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT",
                          "POD_NAMESPACE", "LEADER_K8S_SERVICEACCOUNT_DIR"})
      env_.unset(v);
  }
  ~Kubeconfig() override { fs::remove_all(dir_); }
  /// Writes `text` to `name` under the test's directory and returns its path.
  std::string write(const std::string& name, const std::string& text) {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }
  /// A kubeconfig of one context `ctx` (cluster `cl`, user `u`) with the given stanza bodies.
  std::string one(const std::string& name, const std::string& cluster, const std::string& user,
                  const std::string& context_extra = "") {
    return write(name,
                 "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
                 "contexts:\n- name: ctx\n  context:\n    cluster: cl\n    user: u\n" +
                     context_extra + "clusters:\n- name: cl\n  cluster:\n" + cluster +
                     "users:\n- name: u\n  user:\n" + user);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
  ScopedEnv env_;
};

TEST_F(Kubeconfig, TheCurrentContextGivesServerCaServerNameTokenAndNamespace) {
  write("certs/ca.crt", kPem);
  const std::string file = write("cfg/config", std::string(R"(apiVersion: v1
kind: Config
current-context: dev
contexts:
- name: dev
  context: {cluster: dev-cluster, user: dev-user, namespace: team-a}
- name: prod
  context: {cluster: prod-cluster, user: prod-user}
clusters:
- name: dev-cluster
  cluster:
    server: https://dev.example:6443/
    certificate-authority: ../certs/ca.crt
    tls-server-name: api.dev.example
- name: prod-cluster
  cluster:
    server: https://prod.example
    insecure-skip-tls-verify: true
users:
- name: dev-user
  user: {token: )") + kToken + R"(}
- name: prod-user
  user: {tokenFile: token}
)");
  write("cfg/token", "from-file\n");
  Config c = parse("k8s://?kubeconfig=" + file);
  EXPECT_EQ(c.base_url, "https://dev.example:6443");
  EXPECT_EQ(c.ca_file, path("certs/ca.crt"));  // relative to the kubeconfig's folder
  EXPECT_EQ(c.tls_server_name, "api.dev.example");
  EXPECT_TRUE(c.tls_verify);
  EXPECT_EQ(c.token, kToken);
  EXPECT_EQ(c.ns, "team-a");
  EXPECT_EQ(c.kubeconfig, file);
  EXPECT_EQ(c.context, "dev");
  EXPECT_FALSE(c.in_cluster);
  EXPECT_FALSE(has(c.shown, kToken)) << c.shown;
  EXPECT_EQ(parse("k8s://?kubeconfig=" + file + "&namespace=other").ns, "other");

  Config p = parse("k8s://?kubeconfig=" + file + "&context=prod");
  EXPECT_EQ(p.base_url, "https://prod.example");
  EXPECT_FALSE(p.tls_verify);
  EXPECT_EQ(p.token_file, path("cfg/token"));
  EXPECT_TRUE(p.token.empty());
  EXPECT_EQ(p.ns, "default");
  EXPECT_EQ(p.context, "prod");
}

TEST_F(Kubeconfig, DataFieldsAreDecodedToPemAndPathsAreKeptAsPaths) {
  const std::string ca64 = base64(kPem);
  const std::string wrapped =
      ca64.substr(0, 20) + "\n      " + ca64.substr(20);  // Go skips newlines
  Config c = parse(
      "k8s://?kubeconfig=" +
      one("config",
          "    server: https://h:1\n    certificate-authority-data: |\n      " + wrapped + "\n",
          "    client-certificate-data: " + base64(kPem) +
              "\n    client-key-data: " + base64(kKeyPem) + "\n"));
  EXPECT_EQ(c.ca_pem, std::string(kPem));
  EXPECT_EQ(c.cert_pem, std::string(kPem));
  EXPECT_EQ(c.key_pem, std::string(kKeyPem));
  EXPECT_TRUE(c.ca_file.empty() && c.cert_file.empty() && c.key_file.empty());

  write("pki/client.crt", kPem);
  write("pki/client.key", kKeyPem);
  Config f =
      parse("k8s://?kubeconfig=" + one("config2", "    server: https://h:1\n",
                                       "    client-certificate: pki/client.crt\n    client-key: " +
                                           path("pki/client.key") + "\n"));
  EXPECT_EQ(f.cert_file, path("pki/client.crt"));
  EXPECT_EQ(f.key_file, path("pki/client.key"));
  EXPECT_TRUE(f.cert_pem.empty() && f.key_pem.empty());
  // URI parameters replace what the kubeconfig says.
  Config o = parse("k8s://?kubeconfig=" + path("config") + "&tls_ca=/ca.pem&token=override");
  EXPECT_EQ(o.ca_file, "/ca.pem");
  EXPECT_TRUE(o.ca_pem.empty());
  EXPECT_EQ(o.token, "override");
}

TEST_F(Kubeconfig, ExplicitFileThenInClusterThenKubeconfigVariableThenHome) {
  const std::string a = one("a", "    server: https://a:1\n", "    token: t\n");
  const std::string b = one("b", "    server: https://b:1\n", "    token: t\n");
  one("home/.kube/config", "    server: https://home:1\n", "");
  EXPECT_EQ(parse("k8s://").base_url, "https://home:1");  // ~/.kube/config
  env_.set("KUBECONFIG", path("missing") + ":" + b);      // missing files are skipped
  EXPECT_EQ(parse("k8s://").base_url, "https://b:1");
  EXPECT_EQ(parse("k8s://").kubeconfig, b);
  EXPECT_EQ(parse("k8s://?kubeconfig=" + a).base_url, "https://a:1");
  const fs::path sa = dir_ / "sa";
  fs::create_directories(sa);
  std::ofstream(sa / "token") << "sa\n";
  env_.set("LEADER_K8S_SERVICEACCOUNT_DIR", sa.string());
  env_.set("KUBERNETES_SERVICE_HOST", "10.0.0.1");
  env_.set("KUBERNETES_SERVICE_PORT", "443");
  EXPECT_TRUE(parse("k8s://").in_cluster);                             // a pod: in-cluster first
  EXPECT_EQ(parse("k8s://?kubeconfig=" + a).base_url, "https://a:1");  // unless a file is named
  EXPECT_EQ(parse("k8s://?context=ctx").base_url, "https://b:1");      // or a context is asked for
}

TEST_F(Kubeconfig, KubeconfigFilesMergeTheFirstToSetAValueWins) {
  const std::string first = write("first", R"(current-context: from-first
contexts:
- {name: from-first, context: {cluster: shared, user: only-in-second}}
clusters:
- {name: shared, cluster: {server: "https://first:1"}}
)");
  const std::string second = write("second", R"(current-context: from-second
contexts:
- {name: from-second, context: {cluster: shared}}
clusters:
- {name: shared, cluster: {server: "https://second:1"}}
users:
- {name: only-in-second, user: {token: from-second}}
)");
  env_.set("KUBECONFIG", first + ":" + second + ":" + first);
  Config c = parse("k8s://");
  EXPECT_EQ(c.context, "from-first");        // the first current-context
  EXPECT_EQ(c.base_url, "https://first:1");  // the first definition of "shared"
  EXPECT_EQ(c.token, "from-second");         // a user only the second file defines
  EXPECT_EQ(c.kubeconfig, first + ":" + second);
  EXPECT_EQ(parse("k8s://?context=from-second").base_url, "https://first:1");
}

TEST_F(Kubeconfig, WithoutAPodOrAKubeconfigTheErrorSaysWhereItLooked) {
  for (const char* uri : {"k8s://", "k8s://?context=x"}) {
    try {
      (void)parse(uri);
      ADD_FAILURE() << "accepted " << uri;
    } catch (const BackendError& e) {
      EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
      EXPECT_TRUE(has(e.what(), "~/.kube/config")) << e.what();
    }
  }
  env_.set("KUBECONFIG", path("nowhere"));  // set: ~/.kube/config is not looked at
  one("home/.kube/config", "    server: https://home:1\n", "");
  try {
    (void)parse("k8s://");
    ADD_FAILURE() << "accepted";
  } catch (const BackendError& e) {
    EXPECT_EQ(e.code(), ErrorCode::failed_precondition);
    EXPECT_TRUE(has(e.what(), "KUBECONFIG '" + path("nowhere") + "'")) << e.what();
    EXPECT_TRUE(has(e.what(), "KUBERNETES_SERVICE_HOST")) << e.what();
  }
}

TEST_F(Kubeconfig, PluginsBasicAuthAndImpersonationAreRefusedNamingFileUserAndField) {
  const std::string server = "    server: https://h:1\n";
  for (const auto& [field, text] : std::vector<std::pair<std::string, std::string>>{
           {"exec",
            "    exec:\n      command: aws\n      apiVersion: client.authentication.k8s.io/v1\n"},
           {"auth-provider", "    auth-provider:\n      name: oidc\n"},
           {"username", "    username: admin\n    password: " + std::string(kToken) + "\n"},
           {"as", "    as: someone\n"}}) {
    const std::string file =
        one("cfg-" + field, server, "    token: " + std::string(kToken) + "\n" + text);
    const std::string msg = refusal("k8s://?kubeconfig=" + file);
    EXPECT_TRUE(has(msg, "kubeconfig '" + file + "'")) << msg;
    EXPECT_TRUE(has(msg, "user 'u'")) << msg;
    EXPECT_TRUE(has(msg, "'" + field + "'")) << msg;
    EXPECT_TRUE(has(msg, "not supported")) << msg;
  }
  const std::string exec = refusal("k8s://?kubeconfig=" + path("cfg-exec"));
  EXPECT_TRUE(has(exec, "not supported: use a token file or client certificate")) << exec;
  const std::string ap = refusal("k8s://?kubeconfig=" + path("cfg-auth-provider"));
  EXPECT_TRUE(has(ap, "not supported: use a token file or client certificate")) << ap;
}

TEST_F(Kubeconfig, MissingContextsClustersUsersAndServersAreRefused) {
  const std::string ok = one("ok", "    server: https://h:1\n", "    token: t\n");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + ok + "&context=nope"),
                  "kubeconfig '" + ok + "': context 'nope' is not defined (contexts: ctx)"));
  const std::string none = write("none", "clusters: []\n");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + none), "sets no current-context"));
  const std::string dangling = write("dangling", "current-context: gone\ncontexts: []\n");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + dangling),
                  "current-context 'gone' is not defined (contexts: none)"));
  const std::string no_cluster = write("no-cluster", R"(current-context: c
contexts: [{name: c, context: {cluster: missing, user: u}}]
users: [{name: u, user: {token: t}}]
)");
  EXPECT_TRUE(
      has(refusal("k8s://?kubeconfig=" + no_cluster),
          "kubeconfig '" + no_cluster + "': context 'c': cluster 'missing' is not defined"));
  const std::string no_user = write("no-user", R"(current-context: c
contexts: [{name: c, context: {cluster: k, user: missing}}]
clusters: [{name: k, cluster: {server: "https://h"}}]
)");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + no_user),
                  "kubeconfig '" + no_user + "': context 'c': user 'missing' is not defined"));
  const std::string no_server = one("no-server", "    tls-server-name: x\n", "    token: t\n");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + no_server),
                  "kubeconfig '" + no_server + "': cluster 'cl': has no server"));
  const std::string bad_server = one("bad-server", "    server: h:6443\n", "");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + bad_server), "is not an http:// or https://"));
}

TEST_F(Kubeconfig, UnreadableFilesBadBase64AndConflictingFieldsAreRefused) {
  const std::string server = "    server: https://h:1\n";
  const std::string gone = path("gone");
  EXPECT_TRUE(
      has(refusal("k8s://?kubeconfig=" + gone), "kubeconfig '" + gone + "': cannot be read"));
  const std::string ca = one("ca", server + "    certificate-authority: certs/missing.crt\n", "");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + ca),
                  "kubeconfig '" + ca + "': cluster 'cl': certificate-authority '" +
                      path("certs/missing.crt") + "' cannot be read"));
  const std::string tf = one("tf", server, "    tokenFile: /nonexistent/token\n");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + tf),
                  "user 'u': tokenFile '/nonexistent/token' cannot be read"));
  const std::string b64 = one("b64", server,
                              "    client-certificate-data: " + base64(kPem) +
                                  "\n    client-key-data: " + std::string(kToken) + "!!\n");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + b64),
                  "kubeconfig '" + b64 + "': user 'u': client-key-data is not valid base64"));
  const std::string not_pem =
      one("not-pem",
          server + "    certificate-authority-data: " + base64("MIGHAgEA plain bytes") + "\n", "");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + not_pem),
                  "certificate-authority-data does not hold PEM text"));
  const std::string half =
      one("half", server, "    client-certificate-data: " + base64(kPem) + "\n");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + half),
                  "user 'u': gives a client certificate without client-key"));
  write("k.pem", kKeyPem);
  const std::string twice =
      one("twice", server,
          "    client-certificate-data: " + base64(kPem) +
              "\n    client-key: k.pem\n    client-key-data: " + base64(kKeyPem) + "\n");
  EXPECT_TRUE(
      has(refusal("k8s://?kubeconfig=" + twice), "gives both client-key and client-key-data"));
  write("t", "x\n");
  const std::string both =
      one("both", server, "    token: " + std::string(kToken) + "\n    tokenFile: t\n");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + both), "gives both token and tokenFile"));
  const std::string insecure = one("insecure",
                                   server +
                                       "    insecure-skip-tls-verify: true\n"
                                       "    certificate-authority-data: " +
                                       base64(kPem) + "\n",
                                   "");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + insecure), "insecure-skip-tls-verify"));
  const std::string proxy = one("proxy", server + "    proxy-url: http://proxy:3128\n", "");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + proxy), "'proxy-url' is not supported"));
  const std::string yaml = write(
      "yaml", "users:\n- name: u\n  user: {token: " + std::string(kToken) + "\n clusters: [\n");
  EXPECT_TRUE(
      has(refusal("k8s://?kubeconfig=" + yaml), "kubeconfig '" + yaml + "': is not valid YAML"));
}

TEST_F(Kubeconfig, TheUriCannotMixAKubeconfigWithAServerOrTls) {
  const std::string ok = one("ok", "    server: https://h:1\n", "    token: t\n");
  EXPECT_TRUE(has(refusal("k8s://h:1?kubeconfig=" + ok), "names a server and a kubeconfig"));
  EXPECT_TRUE(has(refusal("k8s://h:1?context=ctx"), "names a server and a kubeconfig"));
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + ok + "&tls=false"), "drop tls="));
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig="), "names no file"));
  const std::string plain = one("plain", "    server: http://h:1\n", "    token: t\n");
  EXPECT_EQ(parse("k8s://?kubeconfig=" + plain).base_url, "http://h:1");
  EXPECT_TRUE(has(refusal("k8s://?kubeconfig=" + plain + "&tls_ca=/x"), "need TLS"));
}

}  // namespace
}  // namespace leader::k8s::test
