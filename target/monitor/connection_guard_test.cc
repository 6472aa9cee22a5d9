// ConnectionGuard on its own (socket pairs), and the monitor under a flood of
// half-sent requests: other clients are still answered at once, and the
// half-open connections are dropped (issue 19: 64 of them turned every other
// client away for about 30 s).
#include "target/monitor/connection_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "target/monitor/monitor_server.h"
#include "target/monitor/monitor_test_util.h"

namespace dedupv1 {
namespace {

// True when the peer of a socket pair end (or a client socket) sees the
// connection end (EOF or reset) within |ms|.
bool SeesEnd(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

struct Pair {
  int server = -1, client = -1;
  Pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0) server = fds[0], client = fds[1];
  }
  ~Pair() {
    ::close(server);
    ::close(client);
  }
};

TEST(ConnectionGuardTest, EvictsTheConnectionIdleTheLongest) {
  ConnectionGuard guard(2);
  Pair a, b, c, d, e;
  guard.Opened(&a, a.server);
  guard.Opened(&b, b.server);
  EXPECT_EQ(guard.evicted(), 0u);
  guard.Opened(&c, c.server);  // a third idle one: a goes
  EXPECT_EQ(guard.evicted(), 1u);
  EXPECT_TRUE(SeesEnd(a.client, 1000));
  EXPECT_FALSE(SeesEnd(b.client, 0));
  guard.Busy(&b);  // a request being handled is never evicted
  guard.Opened(&d, d.server);
  EXPECT_EQ(guard.evicted(), 1u);
  guard.Opened(&e, e.server);  // idle: c, d, e; c the oldest
  EXPECT_EQ(guard.evicted(), 2u);
  EXPECT_TRUE(SeesEnd(c.client, 1000));
  EXPECT_FALSE(SeesEnd(b.client, 0));
  guard.Idle(&b);  // b's response done: idle now, the newest; d the oldest
  EXPECT_EQ(guard.evicted(), 3u);
  EXPECT_TRUE(SeesEnd(d.client, 1000));
  EXPECT_FALSE(SeesEnd(b.client, 0));
  EXPECT_FALSE(SeesEnd(e.client, 0));
  EXPECT_EQ(guard.idle(), 2u);
  EXPECT_EQ(guard.open(), 5u);  // evicted ones stay until the server closes them
  for (const void* conn : {static_cast<const void*>(&a), static_cast<const void*>(&b), static_cast<const void*>(&c),
                           static_cast<const void*>(&d), static_cast<const void*>(&e)}) {
    guard.Closed(conn);
  }
  EXPECT_EQ(guard.open(), 0u);
  EXPECT_EQ(guard.idle(), 0u);
}

int ConnectTo(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(MonitorServerTest, HalfSentRequestsDoNotStarveOtherClients) {
  test::TempDir dir;
  std::unique_ptr<DedupSystem> sys;
  ASSERT_TRUE(DedupSystem::Open(test::SmallMonitorOptions(dir.path()), Env::Default(), &sys).ok());
  MonitorOptions o;  // the defaults, but a short silence timeout so the test is quick
  o.port = 0;
  o.connection_timeout_s = 3;
  std::unique_ptr<MonitorServer> server;
  ASSERT_TRUE(MonitorServer::Start(sys.get(), o, &server).ok());

  // More half-sent requests than the connection limit, from loopback like
  // every other client.
  const int kSlow = static_cast<int>(MonitorOptions().max_connections) + 44;
  std::vector<int> slow;
  for (int i = 0; i < kSlow; i++) {
    int fd = ConnectTo(server->port());
    ASSERT_GE(fd, 0) << "connection " << i;
    const std::string half = "GET /stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    ASSERT_EQ(::send(fd, half.data(), half.size(), MSG_NOSIGNAL), static_cast<ssize_t>(half.size()));
    slow.push_back(fd);
  }

  // Another client is answered at once (a bounded wait: 5 s, far above the
  // few milliseconds it takes).
  const auto start = std::chrono::steady_clock::now();
  MonitorClient client("127.0.0.1", server->port(), "", 5000);
  HttpResult r;
  Status s = client.Get("/version", &r);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(r.status, 200);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_GE(server->guard().evicted(), static_cast<uint64_t>(kSlow) - o.max_idle_connections);

  // Every half-open connection is dropped: evicted, or closed by the timeout.
  int ended = 0;
  for (int fd : slow) ended += SeesEnd(fd, (o.connection_timeout_s + 20) * 1000) ? 1 : 0;
  EXPECT_EQ(ended, kSlow);
  for (int fd : slow) ::close(fd);
  s = client.Get("/version", &r);
  EXPECT_TRUE(s.ok()) << s.ToString();
  server.reset();
  ASSERT_TRUE(sys->Close().ok());
}

TEST(MonitorServerTest, IdentityNamesTheDataDirAndInstance) {
  test::MonitorHarness h;
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  MonitorClient client("127.0.0.1", h.port());
  long code = 0;
  Json doc = test::FetchJson(&client, "GET", "/identity", &code);
  ASSERT_EQ(code, 200) << doc.dump();
  EXPECT_EQ(doc["data_dir"], h.system()->options().data_dir);
  EXPECT_EQ(doc["instance_id"], Id128ToHex(h.system()->instance_id()));
  EXPECT_EQ(doc["pid"].get<int64_t>(), static_cast<int64_t>(::getpid()));
}

}  // namespace
}  // namespace dedupv1
