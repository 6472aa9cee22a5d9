// dedupv1_check on gateway slots (storage.rados.gateway): two slots of one
// RADOS store written through DedupSystem, then the real binary checks each
// slot given its config: clean, and only that slot's containers listed.
// Needs the test cluster (DEDUPV1_TEST_CEPH_CONF).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/config.h"
#include "core/base/testutil.h"
#include "core/engine/dedup_system.h"
#include "core/rados/rados_env_testutil.h"

namespace dedupv1 {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct RunResult {
  int code = -1;
  std::string out;
};

// Runs dedupv1_check --config |config| (60 s at most); stdout and stderr in |out|.
RunResult Check(const std::string& config, const std::string& out_path) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(DEDUPV1_CHECK_BINARY, DEDUPV1_CHECK_BINARY, "--config", config.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  RunResult r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "dedupv1_check timed out";
      break;
    }
    usleep(10000);
  }
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  r.out = ReadAll(out_path);
  return r;
}

TEST(GatewayCheckTest, CheckSeesOnlyItsSlotAndIsClean) {
  RadosOptions rados;
  Status s = test::TestRadosOptions(&rados, 4 << 20, 5);
  ASSERT_TRUE(s.ok()) << s.ToString();
  test::TempDir dir;
  size_t containers[2] = {0, 0};
  std::string configs[2];
  const std::string names[2] = {"gw-a", "gw-b"};
  for (int g = 0; g < 2; g++) {
    const std::string data = dir.Sub("data-" + names[g]);
    configs[g] = dir.Sub(names[g] + ".conf");
    const std::string text = "data-dir = " + data + "\n" + "storage.backend = rados\n" +
                             "storage.rados.conf = " + rados.conf_file + "\n" + "storage.rados.store = " +
                             rados.store + "\n" + "storage.rados.gateway = " + names[g] + "\n" +
                             "storage.rados.lock-lease = 5s\n"
                             "storage.rados.index-shards = 8\n"
                             "chunk-index.size = 4M\n"
                             "bloom.expected-chunks = 64K\n"
                             "log.size = 4M\n"
                             "write-buffer.size = 8M\n"
                             "container.size = 256K\n"
                             "container.commit-timeout = 200ms\n"
                             "monitor.enabled = false\n"
                             "volume = vol-" + names[g] + " 8M\n";
    std::ofstream(configs[g]) << text;
    std::unique_ptr<DedupSystem> sys;
    s = DedupSystem::OpenConfigFile(configs[g], "", Env::Default(), &sys);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol-" + names[g], &v).ok());
    // Different sizes, so the container counts tell the slots apart.
    auto bytes = test::RandomBytes((g + 1) << 20, 7 + g);
    ASSERT_TRUE(v->Write(0, bytes.size(), bytes.data(), false).ok());
    ASSERT_TRUE(v->Write(4 << 20, bytes.size(), bytes.data(), false).ok());  // a duplicate
    ASSERT_TRUE(sys->Sync().ok());
    std::vector<ContainerId> ids;
    ASSERT_TRUE(sys->chunk_store()->ListCommitted(&ids).ok());
    containers[g] = ids.size();
    ASSERT_TRUE(sys->Close().ok());
  }
  ASSERT_NE(containers[0], containers[1]);
  for (int g = 0; g < 2; g++) {
    RunResult r = Check(configs[g], dir.Sub("check-" + names[g]));
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("containers:    " + std::to_string(containers[g]) + " listed"), std::string::npos)
        << names[g] << " has " << containers[g] << " containers:\n" << r.out;
  }
  std::shared_ptr<RadosCluster> cluster;
  if (RadosCluster::Shared(rados, &cluster).ok()) {
    test::RemoveIndexObjects(cluster.get());
    std::vector<std::string> names;
    for (auto it = cluster->data().nobjects_begin(); it != cluster->data().nobjects_end(); ++it) {
      names.push_back(it->get_oid());
    }
    for (const std::string& name : names) cluster->data().remove(name);
  }
}

}  // namespace
}  // namespace dedupv1
