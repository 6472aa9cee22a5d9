// dedupv1_check on gateway slots (storage.rados.gateway): two slots of one
// RADOS store written through DedupSystem, then the real binary checks each
// slot given its config: clean, and only that slot's containers listed.
// Needs the test cluster (DEDUPV1_TEST_CEPH_CONF).
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/base/config.h"
#include "core/base/testutil.h"
#include "core/engine/dedup_system.h"
#include "core/rados/rados_env_testutil.h"
#include "target/tools/tool_run_testutil.h"

namespace dedupv1 {
namespace {

// Runs dedupv1_check --config |config| (60 s at most); stdout and stderr in |out|.
test::ToolRun Check(const std::string& config, const std::string& out_path) {
  return test::RunTool(DEDUPV1_CHECK_BINARY, {"--config", config}, out_path, 60);
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
    test::ToolRun r = Check(configs[g], dir.Sub("check-" + names[g]));
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
