// Tests of RadosCluster against a live Ceph cluster: the conf file named by
// DEDUPV1_TEST_CEPH_CONF (ctest's "ceph" fixture sets it; pools
// dedupv1-data and dedupv1-index). Each test works in a RADOS namespace of
// its own, so runs and other users of the cluster never see each other's
// objects.
#include "core/rados/rados_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

// "t-<pid>-<ms>-<n>": unique per test in this run and across runs.
std::string UniqueStore() {
  static std::atomic<int> n{0};
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  return "t-" + std::to_string(::getpid()) + "-" + std::to_string(ms) + "-" + std::to_string(n++);
}

// A TCP port on 127.0.0.1 nobody listens on (bound, then released).
int UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

class RadosClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* conf = std::getenv("DEDUPV1_TEST_CEPH_CONF");
    ASSERT_TRUE(conf != nullptr && *conf != '\0')
        << "DEDUPV1_TEST_CEPH_CONF is not set: run this test under ctest (fixture 'ceph', `ctest -L ceph`) "
           "or point it at the ceph.conf of a cluster with pools dedupv1-data and dedupv1-index "
           "(scripts/ceph-cluster start --dir D prints it)";
    options_.conf_file = conf;
    options_.store = UniqueStore();
  }

  // The keyring the test cluster's conf names (a line "keyring = ...").
  std::string KeyringOfConf() const {
    std::ifstream in(options_.conf_file);
    std::string line;
    const std::regex re(R"(^\s*keyring\s*=\s*(\S+)\s*$)");
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_match(line, m, re)) return m[1];
    }
    return "";
  }

  RadosOptions options_;
};

TEST_F(RadosClusterTest, WritesAndReadsAnObjectInItsNamespaceAndCountsTheOps) {
  std::shared_ptr<RadosCluster> cluster;
  Status s = RadosCluster::Shared(options_, &cluster);
  ASSERT_TRUE(s.ok()) << s.ToString();

  const std::vector<uint8_t> data = test::RandomBytes(100000, 7);
  const std::string object = "object-1";
  librados::bufferlist bl;
  bl.append(reinterpret_cast<const char*>(data.data()), data.size());
  {
    RadosOpTimer timer(cluster.get(), RadosOpKind::kWrite);
    const int r = cluster->data().write_full(object, bl);
    timer.Done(r, data.size());
    ASSERT_EQ(r, 0) << cluster->ToStatus(r, "write", cluster->data_pool(), object).ToString();
  }
  librados::bufferlist out;
  {
    RadosOpTimer timer(cluster.get(), RadosOpKind::kRead);
    const int r = cluster->data().read(object, out, 0, 0);
    timer.Done(r, r > 0 ? r : 0);
    ASSERT_EQ(r, static_cast<int>(data.size())) << cluster->ToStatus(r, "read", cluster->data_pool(), object).ToString();
  }
  ASSERT_EQ(out.length(), data.size());
  EXPECT_EQ(0, std::memcmp(out.c_str(), data.data(), data.size()));

  // The object is in the store's namespace only.
  librados::IoCtx plain;
  ASSERT_EQ(0, cluster->rados().ioctx_create(cluster->data_pool().c_str(), plain));
  uint64_t size = 0;
  time_t mtime = 0;
  EXPECT_EQ(-ENOENT, plain.stat(object, &size, &mtime));
  EXPECT_EQ(0, cluster->data().stat(object, &size, &mtime));
  EXPECT_EQ(size, data.size());

  {
    RadosOpTimer timer(cluster.get(), RadosOpKind::kRemove);
    const int r = cluster->data().remove(object);
    timer.Done(r, 0);
    EXPECT_EQ(r, 0);
  }
  const RadosStats stats = cluster->stats();
  const auto& w = stats.kinds[static_cast<int>(RadosOpKind::kWrite)];
  const auto& rd = stats.kinds[static_cast<int>(RadosOpKind::kRead)];
  EXPECT_EQ(w.ops, 1u);
  EXPECT_EQ(w.bytes, data.size());
  EXPECT_EQ(w.errors, 0u);
  EXPECT_GT(w.latency_us_total, 0u);
  EXPECT_EQ(rd.ops, 1u);
  EXPECT_EQ(rd.bytes, data.size());
  EXPECT_EQ(stats.kinds[static_cast<int>(RadosOpKind::kRemove)].ops, 1u);
  EXPECT_EQ(stats.TotalOps(), 3u);
  EXPECT_EQ(-ENOENT, cluster->data().stat(object, &size, &mtime));
}

TEST_F(RadosClusterTest, SharesOneConnectionPerOptions) {
  std::shared_ptr<RadosCluster> a, b;
  ASSERT_TRUE(RadosCluster::Shared(options_, &a).ok());
  ASSERT_TRUE(RadosCluster::Shared(options_, &b).ok());
  EXPECT_EQ(a.get(), b.get());
}

TEST_F(RadosClusterTest, AWrongPoolNameIsNotFoundNamingThePool) {
  options_.index_pool = "no-such-pool-" + options_.store;
  std::shared_ptr<RadosCluster> cluster;
  const Status s = RadosCluster::Shared(options_, &cluster);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(s.ToString().find("'" + options_.index_pool + "'"), std::string::npos) << s.ToString();
  EXPECT_EQ(cluster, nullptr);
}

// A conf whose mon address nobody listens on: the connect fails as an I/O
// error after the op timeout, not later and without hanging.
TEST_F(RadosClusterTest, AnUnreachableClusterIsAnIOErrorWithinTheOpTimeout) {
  test::TempDir dir;
  const int port = UnusedPort();
  ASSERT_GT(port, 0);
  const std::string keyring = KeyringOfConf();
  ASSERT_FALSE(keyring.empty()) << "no keyring line in " << options_.conf_file;
  const std::string conf = dir.Sub("ceph.conf");
  {
    std::ofstream f(conf);
    f << "[global]\nmon_host = [v2:127.0.0.1:" << port << "]\nkeyring = " << keyring
      << "\nauth_client_required = cephx\nlog_file = " << dir.Sub("client.log") << "\nadmin_socket =\n";
  }
  options_.conf_file = conf;
  options_.op_timeout_s = 3;
  std::shared_ptr<RadosCluster> cluster;
  const auto start = std::chrono::steady_clock::now();
  const Status s = RadosCluster::Shared(options_, &cluster);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.ToString().find(conf), std::string::npos) << s.ToString();
  EXPECT_NE(s.ToString().find("unreachable"), std::string::npos) << s.ToString();
  EXPECT_LT(seconds, 3 + 5) << "the connect took " << seconds << " s with a 3 s op timeout";
  RecordProperty("connect_failed_after_ms", static_cast<int>(seconds * 1000));
  std::printf("unreachable cluster: IOError after %.2f s (op timeout 3 s)\n", seconds);
}

}  // namespace
}  // namespace dedupv1
