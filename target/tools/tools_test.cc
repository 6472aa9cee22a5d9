// End-to-end tests of dedupv1_check, dedupv1_replay and dedupv1_debug: each
// test writes a small store through DedupSystem (or a child process that is
// killed with SIGKILL), damages it in one specific way, runs the real
// binaries and checks their exit codes and output.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "chunkstore/container.h"
#include "chunkstore/dead_chunk_file.h"
#include "chunkstore/local_container_store.h"
#include "core/base/config.h"
#include "core/base/fault_injection_env.h"
#include "core/engine/data_dir.h"
#include "core/engine/dedup_system.h"
#include "core/engine/volume_table.h"
#include "core/base/testutil.h"
#include "index/block_index.h"
#include "index/disk_hash_table.h"
#include "index/growable_hash_table.h"
#include "index/kv_store.h"
#include "index/tc_kv_store_testutil.h"
#include "log/log_slot.h"
#include "target/tools/store_checker.h"
#include "target/tools/index_rebuild.h"
#include "target/tools/tool_util.h"
#include "target/tools/volume_table.h"

namespace dedupv1 {
namespace {

struct RunResult {
  int code = -1;  // exit code; -1 if killed or timed out
  std::string out, err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ToolsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = dir_.Sub("data");
    config_ = dir_.Sub("dedupv1.conf");
    std::ofstream(config_) << ConfigText(data_);
    Config config;
    ASSERT_TRUE(Config::Parse(ConfigText(data_), config_, &config).ok());
    ASSERT_TRUE(Options::FromConfig(config, &options_).ok());
  }

  static std::string ConfigText(const std::string& data_dir) {
    return "data-dir = " + data_dir + "\n" +
           "chunk-index.size = 4M\n"
           "bloom.expected-chunks = 64K\n"
           "log.size = 4M\n"
           "write-buffer.size = 8M\n"
           "write-buffer.flush-delay = 20ms\n"
           "container.size = 256K\n"
           "container.commit-timeout = 200ms\n"
           "monitor.enabled = false\n"
           "idle.period = 1h\n"  // no idle checkpoint trims the log a test inspects
           "volume = vol1 8M\n"
           "volume = vol2 4M\n";
  }

  // Starts |argv| with stdout and stderr going to the files |out| and |err|.
  static pid_t Spawn(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
    pid_t pid = fork();
    if (pid == 0) {
      int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      std::vector<char*> cargv;
      for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
      cargv.push_back(nullptr);
      execv(cargv[0], cargv.data());
      _exit(127);
    }
    return pid;
  }

  // Runs |binary| with --config and |args|; stdout and stderr are captured.
  RunResult Run(const std::string& binary, std::vector<std::string> args, bool with_config = true) {
    std::vector<std::string> argv = {binary};
    if (with_config) {
      argv.push_back("--config");
      argv.push_back(config_);
    }
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string out = dir_.Sub("out" + std::to_string(runs_)), err = dir_.Sub("err" + std::to_string(runs_));
    runs_++;
    const pid_t pid = Spawn(argv, out, err);
    RunResult r;
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        ADD_FAILURE() << binary << " timed out";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
    r.out = ReadAll(out);
    r.err = ReadAll(err);
    return r;
  }
  RunResult Check(std::vector<std::string> args = {}) { return Run(DEDUPV1_CHECK_BINARY, std::move(args)); }
  RunResult Replay() { return Run(DEDUPV1_REPLAY_BINARY, {}); }
  RunResult Debug(std::vector<std::string> args) { return Run(DEDUPV1_DEBUG_BINARY, std::move(args)); }

  // Writes unique data, a duplicate of part of it and zeros to vol1, and
  // unique data to vol2; syncs and closes cleanly.
  void WriteStore() {
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::Open(options_, Env::Default(), &sys).ok());
    Volume *v1, *v2;
    ASSERT_TRUE(sys->GetVolume("vol1", &v1).ok());
    ASSERT_TRUE(sys->GetVolume("vol2", &v2).ok());
    auto a = test::RandomBytes(2 << 20, 1);
    ASSERT_TRUE(v1->Write(0, a.size(), a.data(), false).ok());
    ASSERT_TRUE(v1->Write(3 << 20, 1 << 20, a.data(), false).ok());  // duplicate of [0, 1M)
    std::vector<uint8_t> zeros(512 << 10, 0);
    ASSERT_TRUE(v1->Write(5 << 20, zeros.size(), zeros.data(), false).ok());
    auto b = test::RandomBytes(1 << 20, 2);
    ASSERT_TRUE(v2->Write(0, b.size(), b.data(), false).ok());
    ASSERT_TRUE(sys->Sync().ok());
    ASSERT_TRUE(sys->Close().ok());
  }

  std::vector<ContainerId> Containers() {
    std::unique_ptr<LocalContainerStore> store;
    EXPECT_TRUE(LocalContainerStore::Open(Env::Default(), options_.chunk_store.dir, &store).ok());
    std::vector<ContainerId> ids;
    EXPECT_TRUE(store->List(&ids).ok());
    std::sort(ids.begin(), ids.end());
    return ids;
  }
  std::string ContainerPath(ContainerId id) {
    std::unique_ptr<LocalContainerStore> store;
    EXPECT_TRUE(LocalContainerStore::Open(Env::Default(), options_.chunk_store.dir, &store).ok());
    return store->ContainerPath(id);
  }
  std::vector<Fingerprint> ContainerFingerprints(ContainerId id) {
    std::unique_ptr<LocalContainerStore> store;
    EXPECT_TRUE(LocalContainerStore::Open(Env::Default(), options_.chunk_store.dir, &store).ok());
    std::string bytes;
    EXPECT_TRUE(store->Get(id, &bytes).ok());
    std::unique_ptr<Container> c;
    EXPECT_TRUE(Container::Parse(id, bytes, &c).ok());
    return c ? c->Fingerprints() : std::vector<Fingerprint>{};
  }
  // The first block of vol1 (id 1) whose mapping references container |id|.
  int64_t BlockReferencing(ContainerId id) {
    std::unique_ptr<DedupSystem> sys;
    EXPECT_TRUE(DedupSystem::Open(options_, Env::Default(), &sys).ok());
    int64_t found = -1;
    EXPECT_TRUE(sys->block_index()
                    ->ForEachBlock(1, [&](uint64_t block, const BlockMapping& m) {
                      for (const auto& item : m.items()) {
                        if (item.container == id) found = static_cast<int64_t>(block);
                      }
                      return found < 0;
                    })
                    .ok());
    EXPECT_TRUE(sys->Close().ok());
    return found;
  }

  // Flips a byte 100 bytes before the end of container |id|'s file: inside
  // the data of its last chunk.
  void FlipContainerByte(ContainerId id) {
    std::fstream f(ContainerPath(id), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-100, std::ios::end);
    char c;
    f.read(&c, 1);
    c ^= 0x5a;
    f.seekp(-100, std::ios::end);
    f.write(&c, 1);
  }

  // Writes |a| to vol1, forgets every chunk, writes it to vol2: two copies of
  // the data; *old_ids are the containers of vol1's copy.
  void WriteTwoCopies(const std::vector<uint8_t>& a, std::vector<ContainerId>* old_ids) {
    {
      std::unique_ptr<DedupSystem> sys;
      ASSERT_TRUE(DedupSystem::Open(options_, Env::Default(), &sys).ok());
      Volume* v1;
      ASSERT_TRUE(sys->GetVolume("vol1", &v1).ok());
      ASSERT_TRUE(v1->Write(0, a.size(), a.data(), false).ok());
      ASSERT_TRUE(sys->Close().ok());
    }
    *old_ids = Containers();
    ASSERT_FALSE(old_ids->empty());
    // Forget every chunk, so writing the same data again stores a second copy.
    {
      std::unique_ptr<DiskHashTable> table;
      ASSERT_TRUE(DiskHashTable::Open(options_.chunk_index.table, Env::Default(), &table).ok());
      std::vector<DiskHashTable::Op> ops;
      for (ContainerId id : *old_ids) {
        for (const auto& fp : ContainerFingerprints(id)) ops.push_back({fp, {}, true});
      }
      ASSERT_TRUE(table->Apply(ops).ok());
    }
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::Open(options_, Env::Default(), &sys).ok());
    Volume* v2;
    ASSERT_TRUE(sys->GetVolume("vol2", &v2).ok());
    ASSERT_TRUE(v2->Write(0, a.size(), a.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }

  // Switches the test's config to another block index backend.
  void UseBackend(const std::string& backend) {
    const std::string text = ConfigText(data_) + "block-index.backend = " + backend + "\n";
    std::ofstream(config_) << text;
    Config config;
    ASSERT_TRUE(Config::Parse(text, config_, &config).ok());
    ASSERT_TRUE(Options::FromConfig(config, &options_).ok());
  }

  // Every block of |volume| as read through DedupSystem: its bytes, or
  // nothing if the read failed. Optionally runs a GC round first.
  std::vector<std::optional<std::vector<uint8_t>>> ReadBlocks(const std::string& volume, bool gc_first = false) {
    std::unique_ptr<DedupSystem> sys;
    Status s = DedupSystem::Open(options_, Env::Default(), &sys);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) return {};
    if (gc_first) {
      EXPECT_TRUE(sys->RunGc().ok());
    }
    Volume* v;
    EXPECT_TRUE(sys->GetVolume(volume, &v).ok());
    const uint64_t bs = options_.block_size;
    std::vector<std::optional<std::vector<uint8_t>>> blocks(v->size() / bs);
    for (uint64_t b = 0; b < blocks.size(); b++) {
      std::vector<uint8_t> data(bs);
      if (v->Read(b * bs, bs, data.data()).ok()) blocks[b] = std::move(data);
    }
    EXPECT_TRUE(sys->Close().ok());
    return blocks;
  }

  // Every block of |volume| that |data| covers reads back |data|.
  void ExpectReadsBack(const std::string& volume, const std::vector<uint8_t>& data, bool gc_first = false) {
    const auto blocks = ReadBlocks(volume, gc_first);
    const uint64_t bs = options_.block_size;
    for (uint64_t b = 0; b < blocks.size() && (b + 1) * bs <= data.size(); b++) {
      ASSERT_TRUE(blocks[b].has_value()) << volume << " block " << b;
      EXPECT_TRUE(std::equal(blocks[b]->begin(), blocks[b]->end(), data.begin() + b * bs)) << b;
    }
  }

  // Writes |size| bytes of unique data to vol1 and closes cleanly.
  std::vector<uint8_t> WriteUnique(uint64_t size, uint64_t seed) {
    std::unique_ptr<DedupSystem> sys;
    EXPECT_TRUE(DedupSystem::Open(options_, Env::Default(), &sys).ok());
    Volume* v;
    EXPECT_TRUE(sys->GetVolume("vol1", &v).ok());
    auto data = test::RandomBytes(size, seed);
    EXPECT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    EXPECT_TRUE(sys->Close().ok());
    return data;
  }

  // Offset of vol1's (id 1) block |block| record in the Tokyo Cabinet
  // file: its key followed by the record (format 2 starts with the id).
  size_t RecordOffset(const std::string& bytes, uint64_t block) {
    std::string value;
    BlockMapping(options_.block_size).Serialize(BlockId{1, block}, &value);
    const std::string needle = EncodeBlockKey({1, block}) + value.substr(0, 13);
    const size_t at = bytes.find(needle);
    EXPECT_NE(at, std::string::npos);
    EXPECT_EQ(bytes.find(needle, at + 1), std::string::npos);
    return at;
  }
  // Flips bytes of a record in the Tokyo Cabinet file of a store as a build
  // before page checksums left it (a store this build created refuses to
  // open on any flipped page byte, naming the file: BlockIndexDamageTest,
  // the corruption suite); in such a store only the block index's record
  // checks stand between a damaged page and wrong data.
  void FlipInBlockIndexFile(uint64_t block, size_t offset_after_key_start, const std::vector<uint8_t>& masks) {
    ASSERT_TRUE(test::RewriteTcStoreWithoutPageChecksums(Env::Default(), options_.block_index.path).ok());
    std::string bytes = ReadAll(options_.block_index.path);
    const size_t at = RecordOffset(bytes, block);
    ASSERT_NE(at, std::string::npos);
    for (size_t i = 0; i < masks.size(); i++) {
      bytes[at + offset_after_key_start + i] = static_cast<char>(bytes[at + offset_after_key_start + i] ^ masks[i]);
    }
    std::ofstream(options_.block_index.path, std::ios::binary | std::ios::trunc) << bytes;
  }

  test::TempDir dir_;
  std::string data_, config_;
  Options options_;
  int runs_ = 0;
};

TEST_F(ToolsTest, CleanStoreChecksClean) {
  WriteStore();
  RunResult r = Check({"--progress"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("usage counts:  checked:"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("containers/s"), std::string::npos) << "no progress bar: " << r.err;

  r = Check({"--json"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["clean"].get<bool>());
  EXPECT_GT(j["containers"]["good"].get<uint64_t>(), 1u);
  EXPECT_EQ(j["containers"]["good"], j["containers"]["listed"]);
  EXPECT_GT(j["block_index"]["chunk_references"].get<uint64_t>(), 0u);
  EXPECT_GT(j["block_index"]["zero_ranges"].get<uint64_t>(), 0u);
  // vol1's second copy of [0, 1M) deduplicates: fewer distinct chunks than references.
  EXPECT_LT(j["usage_counts"]["referenced_chunks"].get<uint64_t>(),
            j["usage_counts"]["references"].get<uint64_t>());
  EXPECT_TRUE(j["usage_counts"]["maintained"].get<bool>());
  EXPECT_TRUE(j["usage_counts"]["checked"].get<bool>());
  EXPECT_EQ(j["usage_counts"]["mismatches"].get<uint64_t>(), 0u);
  EXPECT_GT(j["usage_counts"]["matching"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["chunk_index"]["entries"], j["containers"]["chunks"]);
  EXPECT_TRUE(j["problems"].empty());
}

// The issue's scenario, checked by dedupv1_check: overwrite a volume three
// times, unmap half, collect garbage; the checker library and the binary find
// the store clean (usage counts equal the recount, garbage is gone or
// counted), and a usage count off by one is found and repaired.
TEST_F(ToolsTest, StoreIsCleanAfterGarbageCollection) {
  const uint64_t size = 8 << 20;
  std::vector<uint8_t> data;
  {
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::Open(options_, Env::Default(), &sys).ok());
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    for (uint64_t generation = 0; generation < 4; generation++) {
      data = test::RandomBytes(size, 40 + generation);
      ASSERT_TRUE(v->Write(0, size, data.data(), false).ok());
      ASSERT_TRUE(v->Sync().ok());
    }
    ASSERT_TRUE(v->Unmap(size / 2, size / 2).ok());
    ASSERT_TRUE(sys->Sync().ok());
    uint64_t before = 0, after = 0;
    ASSERT_TRUE(sys->chunk_store()->UsedBytes(&before).ok());
    ASSERT_TRUE(sys->RunGc().ok());
    ASSERT_TRUE(sys->chunk_store()->UsedBytes(&after).ok());
    EXPECT_LT(after, before / 4);

    // The checker library on the open system.
    std::vector<tools::VolumeEntry> volumes;
    ASSERT_TRUE(tools::ReadVolumeTable(Env::Default(), options_, &volumes).ok());
    tools::StoreChecker checker(sys.get(), volumes, tools::CheckOptions{true, false});
    tools::CheckReport report;
    ASSERT_TRUE(checker.Check(&report).ok());
    EXPECT_TRUE(report.Clean()) << tools::FormatReportText(report);
    EXPECT_TRUE(report.usage_checked);
    EXPECT_GT(report.usage_matching, 0u);
    EXPECT_EQ(report.usage_mismatches, 0u);
    std::vector<uint8_t> got(size / 2);
    ASSERT_TRUE(v->Read(0, got.size(), got.data()).ok());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin()));
    ASSERT_TRUE(sys->Close().ok());
  }
  RunResult r = Check({"--json"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["clean"].get<bool>());
  EXPECT_EQ(j["usage_counts"]["mismatches"].get<uint64_t>(), 0u);

  // One usage count off by one: found, repaired, clean again.
  Fingerprint victim;
  {
    std::unique_ptr<DiskHashTable> table;
    ASSERT_TRUE(DiskHashTable::Open(options_.chunk_index.table, Env::Default(), &table).ok());
    std::vector<Fingerprint> fps;
    uint64_t pages;
    ASSERT_TRUE(table->Verify(&pages, [&](const Fingerprint& fp, const ChunkIndexEntry&) { fps.push_back(fp); }).ok());
    ASSERT_FALSE(fps.empty());
    victim = fps[0];
    ChunkIndexEntry e;
    ASSERT_TRUE(table->Get(victim, &e).ok());
    e.usage_count++;
    ASSERT_TRUE(table->Apply({{victim, e, false}}).ok());
  }
  r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("usage-count-mismatch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(victim.ToHex()), std::string::npos) << r.out;
  r = Check({"--repair"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
}

TEST_F(ToolsTest, CorruptContainerByteIsNamed) {
  WriteStore();
  const auto ids = Containers();
  ASSERT_GE(ids.size(), 2u);
  const ContainerId victim = ids[1];
  FlipContainerByte(victim);
  // Only the chunk the byte belongs to is lost: the check verifies each
  // chunk against its fingerprint when the container's data checksum fails.
  RunResult r = Check({"--json"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::set<std::string> damaged;
  size_t unrecoverable = 0;
  for (const auto& p : j["problems"]) {
    EXPECT_NE(p["kind"], "container-corrupt") << p.dump();
    if (p["kind"] == "chunk-corrupt") {
      damaged.insert(p["fingerprint"].get<std::string>());
      EXPECT_EQ(p["container"].get<ContainerId>(), victim);
      EXPECT_NE(p["message"].get<std::string>().find("data checksum mismatch"), std::string::npos) << p.dump();
    }
    if (p["kind"] == "mapping-unrecoverable") unrecoverable++;
  }
  ASSERT_EQ(damaged.size(), 1u) << r.out;
  EXPECT_GT(unrecoverable, 0u);
  for (const auto& p : j["problems"]) {
    if (p["kind"] == "mapping-unrecoverable" || p["kind"] == "index-entry-dangling") {
      EXPECT_EQ(p["fingerprint"].get<std::string>(), *damaged.begin()) << p.dump();
    }
  }
  EXPECT_EQ(j["containers"]["good"], j["containers"]["listed"]);
  r = Check();
  EXPECT_NE(r.out.find("chunk-corrupt: chunk " + *damaged.begin() + " in container " + std::to_string(victim)),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("mapping-unrecoverable"), std::string::npos) << r.out;

  r = Debug({"container", std::to_string(victim)});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("do not trust them"), std::string::npos) << r.out;
}

TEST_F(ToolsTest, DeletedContainerNamesBlocksAndIsUnrecoverable) {
  WriteStore();
  const auto ids = Containers();
  ASSERT_GE(ids.size(), 2u);
  const ContainerId victim = ids[0];
  const int64_t block = BlockReferencing(victim);
  ASSERT_GE(block, 0);
  ASSERT_EQ(unlink(ContainerPath(victim).c_str()), 0);

  RunResult r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::string named = "volume vol1 (id 1) block " + std::to_string(block) + " bytes [";
  EXPECT_NE(r.out.find(named), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("container " + std::to_string(victim) + " does not exist"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("index-entry-dangling"), std::string::npos) << r.out;

  r = Check({"--repair", "--json"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  size_t unrecoverable = 0, repaired = 0;
  bool block_listed = false;
  for (const auto& p : j["problems"]) {
    if (p["kind"] == "mapping-unrecoverable") {
      unrecoverable++;
      EXPECT_FALSE(p["repaired"].get<bool>());
      EXPECT_EQ(p["volume"], "vol1") << p.dump();  // vol2's data is in other containers
      if (p["block"].get<int64_t>() == block) block_listed = true;
      EXPECT_GT(p["length"].get<uint64_t>(), 0u);
    }
    if (p["kind"] == "index-entry-dangling") {
      EXPECT_TRUE(p["repaired"].get<bool>()) << p.dump();
      repaired++;
    }
  }
  EXPECT_GT(unrecoverable, 0u);
  EXPECT_GT(repaired, 0u);
  EXPECT_TRUE(block_listed);

  // The dangling entries are gone; the lost ranges stay reported.
  r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.find("index-entry-dangling"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[unrecoverable] mapping-unrecoverable"), std::string::npos) << r.out;
}

TEST_F(ToolsTest, RemovedIndexEntriesAreReAddedByRepair) {
  WriteStore();
  const auto ids = Containers();
  ASSERT_GE(ids.size(), 1u);
  ContainerId id = ids[0];
  for (ContainerId c : ids) {
    if (ContainerFingerprints(c).size() > ContainerFingerprints(id).size()) id = c;
  }
  auto fps = ContainerFingerprints(id);
  ASSERT_GE(fps.size(), 3u);
  fps.resize(3);
  {
    std::unique_ptr<DiskHashTable> table;
    ASSERT_TRUE(DiskHashTable::Open(options_.chunk_index.table, Env::Default(), &table).ok());
    std::vector<DiskHashTable::Op> ops;
    for (const auto& fp : fps) {
      ChunkIndexEntry e;
      ASSERT_TRUE(table->Get(fp, &e).ok());
      ops.push_back({fp, {}, true});
    }
    ASSERT_TRUE(table->Apply(ops).ok());
  }
  RunResult r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  for (const auto& fp : fps) {
    EXPECT_NE(r.out.find("chunk " + fp.ToHex() + " in container " + std::to_string(id) + " has no chunk index entry"),
              std::string::npos)
        << r.out;
  }
  EXPECT_NE(r.out.find("3 repairable with --repair"), std::string::npos) << r.out;

  r = Check({"--repair"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("3 repaired, 0 cannot be repaired"), std::string::npos) << r.out;

  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;

  r = Debug({"chunk", fps[0].ToHex()});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  // The repair re-adds the entry with the recounted usage.
  EXPECT_NE(r.out.find("container " + std::to_string(id) + ", usage count "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("container " + std::to_string(id) + ", usage count 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("item:         fp " + fps[0].ToHex()), std::string::npos) << r.out;
}

// The tools open the store without background work (core/engine/options.h
// background_work): a check of a store whose index lost entries must not
// run the daemon's idle GC round, which trusts the index and would free the
// chunks the repair is to re-add. Here every entry is gone and the config
// makes every idle sample a GC tick (period 0). These checks end within a
// sample or two, so the round itself is shown by the engine's test
// (DedupSystemIdleTest.AnOfflineToolsOpenRunsNoIdleWork); this one checks
// the tools' options and that a whole index's entries come back by repair.
TEST_F(ToolsTest, ToolsRunNoIdleGcOnAStoreWhoseIndexLostEntries) {
  const auto a = WriteUnique(6 << 20, 31);
  Options loaded;
  Status s = tools::LoadToolOptions(config_, "", &loaded);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(loaded.background_work);
  std::ofstream(config_, std::ios::app) << "idle.period = 0ms\nidle.throughput-threshold = 1T\n";
  size_t erased = 0;
  {
    std::unique_ptr<DiskHashTable> table;
    ASSERT_TRUE(DiskHashTable::Open(options_.chunk_index.table, Env::Default(), &table).ok());
    std::vector<DiskHashTable::Op> ops;
    for (ContainerId id : Containers()) {
      for (const auto& fp : ContainerFingerprints(id)) ops.push_back({fp, {}, true});
    }
    erased = ops.size();
    ASSERT_GT(erased, 300u);
    ASSERT_TRUE(table->Apply(ops).ok());
  }
  RunResult r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(std::to_string(erased) + " repairable with --repair"), std::string::npos) << r.out;
  r = Check({"--repair"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find(std::to_string(erased) + " repaired, 0 cannot be repaired"), std::string::npos) << r.out;
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  ExpectReadsBack("vol1", a, /*gc_first=*/true);
}

// The chunk index's disk died: the table and its journal are gone. Every
// open is refused naming the table and the rebuild; --rebuild-index gives
// the store a new table from the containers and block mappings, and the
// store then checks clean, reads back after GC and deduplicates against
// what it stored before.
TEST_F(ToolsTest, RebuildIndexAfterTheTableIsLost) {
  WriteStore();
  const auto a = test::RandomBytes(2 << 20, 1);  // WriteStore's vol1 data
  ASSERT_EQ(::unlink(options_.chunk_index.table.path.c_str()), 0);
  ::unlink(DiskHashTable::JournalPath(options_.chunk_index.table.path).c_str());

  RunResult r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(options_.chunk_index.table.path + " is missing"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dedupv1_check --rebuild-index"), std::string::npos) << r.err;

  r = Check({"--rebuild-index"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("rebuilt: a new table, finished with "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("there was no old table"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(JoinPath(data_, kIndexRebuildFileName)));

  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
  ExpectReadsBack("vol1", a, /*gc_first=*/true);
  ExpectReadsBack("vol2", test::RandomBytes(1 << 20, 2), /*gc_first=*/true);

  // Deduplicated against: the same data again stores no new container.
  const size_t containers = Containers().size();
  {
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::Open(options_, Env::Default(), &sys).ok());
    Volume* v2;
    ASSERT_TRUE(sys->GetVolume("vol2", &v2).ok());
    ASSERT_TRUE(v2->Write(1 << 20, 2 << 20, a.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  EXPECT_EQ(Containers().size(), containers);
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

// A rebuild stopped after its new table was made (as kill -9 would stop
// it): the marker refuses every open, the tools say to run it again; the
// second run starts over on its own table and keeps the original one,
// byte for byte, beside it. The JSON report says it finished.
TEST_F(ToolsTest, RebuildIndexStoppedHalfWayIsRefusedThenStartedOver) {
  WriteStore();
  const std::string table = options_.chunk_index.table.path;
  const std::string original = ReadAll(table);
  ASSERT_FALSE(original.empty());
  {
    Options o;
    ASSERT_TRUE(tools::LoadToolConfig(config_, "", &o).ok());
    tools::IndexRebuildStart start;
    ASSERT_TRUE(tools::StartIndexRebuild(Env::Default(), o, &start).ok());
    EXPECT_FALSE(start.resumed);
    EXPECT_EQ(start.replaced.rfind(table + ".replaced-", 0), 0u) << start.replaced;
    EXPECT_EQ(start.table_bytes, original.size());
  }
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(options_, Env::Default(), &sys);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("a rebuild of the chunk index did not finish"), std::string::npos) << s.ToString();
  RunResult r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("run dedupv1_check --rebuild-index again"), std::string::npos) << r.err;

  r = Check({"--rebuild-index", "--json"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("going on with a rebuild that did not finish"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["clean"].get<bool>());
  EXPECT_TRUE(j["index_rebuild"]["finished"].get<bool>());
  const std::string replaced = j["index_rebuild"]["replaced"].get<std::string>();
  EXPECT_EQ(ReadAll(replaced), original) << "the original table was not kept as it was";
  size_t kept = 0;
  const std::string table_name = std::filesystem::path(table).filename().string();
  for (const auto& e : std::filesystem::directory_iterator(DirName(table))) {
    kept += e.path().filename().string().rfind(table_name + ".replaced-", 0) == 0 ? 1 : 0;
  }
  EXPECT_EQ(kept, 1u) << "the second run moved its own table aside too";
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  ExpectReadsBack("vol1", test::RandomBytes(2 << 20, 1), /*gc_first=*/true);
}

// The rebuild stopped at each of its steps (a fault in its Env where the
// step renames, writes or creates; what kill -9 there would leave), then
// run again by the tool: it finishes, the store checks clean and reads
// back, and what sat at chunk-index.path before is kept byte for byte.
TEST_F(ToolsTest, RebuildIndexStoppedAtEachStepFinishesAndKeepsWhatWasThere) {
  WriteStore();
  using Op = FaultInjectionEnv::Op;
  const std::string table = options_.chunk_index.table.path;
  const std::string table_name = std::filesystem::path(table).filename().string();
  struct Point {
    const char* what;
    FaultInjectionEnv::Rule rule;
    bool then_finish;  // the fault is in FinishIndexRebuild's renames
  };
  const std::vector<Point> points = {
      {"the marker's write", {Op::kRename, "rebuilding-chunk-index", FaultInjectionEnv::Fault::kEIO, 0, 1}, false},
      {"the table's move aside", {Op::kRename, ".replaced-", FaultInjectionEnv::Fault::kEIO, 0, 1}, false},
      {"the journal's move aside", {Op::kRename, ".replaced-", FaultInjectionEnv::Fault::kEIO, 1, 1}, false},
      {"the new table's creation", {Op::kOpen, table_name + ".new", FaultInjectionEnv::Fault::kENOSPC, 0, 1}, false},
      {"the new table's rename", {Op::kRename, table_name, FaultInjectionEnv::Fault::kEIO, 1, 1}, true},
  };
  for (const Point& point : points) {
    SCOPED_TRACE(point.what);
    const std::string before = ReadAll(table);
    ASSERT_FALSE(before.empty());
    Options o;
    ASSERT_TRUE(tools::LoadToolConfig(config_, "", &o).ok());
    FaultInjectionEnv env(Env::Default());
    tools::IndexRebuildStart start;
    if (point.then_finish) {
      ASSERT_TRUE(tools::StartIndexRebuild(&env, o, &start).ok());
      env.AddRule(point.rule);
      EXPECT_FALSE(tools::FinishIndexRebuild(&env, o).ok());
    } else {
      env.AddRule(point.rule);
      EXPECT_FALSE(tools::StartIndexRebuild(&env, o, &start).ok());
    }
    EXPECT_EQ(env.faults_fired(), 1);
    RunResult r = Check({"--rebuild-index"});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_FALSE(std::filesystem::exists(JoinPath(data_, kIndexRebuildFileName)));
    bool kept = false;
    for (const auto& e : std::filesystem::directory_iterator(DirName(table))) {
      if (e.path().filename().string().rfind(table_name + ".replaced-", 0) == 0) {
        kept = kept || ReadAll(e.path().string()) == before;
      }
    }
    EXPECT_TRUE(kept) << "the table that was there is not kept as it was";
    // A journal kept goes with a table kept under the same suffix.
    const std::string journal_name = table_name + ".journal.replaced-";
    for (const auto& e : std::filesystem::directory_iterator(DirName(table))) {
      const std::string name = e.path().filename().string();
      if (name.rfind(journal_name, 0) != 0) continue;
      const std::string twin = table_name + ".replaced-" + name.substr(journal_name.size());
      EXPECT_TRUE(std::filesystem::exists(JoinPath(DirName(table), twin))) << name << " has no " << twin;
    }
    r = Check();
    EXPECT_EQ(r.code, 0) << r.out << r.err;
  }
  ExpectReadsBack("vol1", test::RandomBytes(2 << 20, 1), /*gc_first=*/true);
  ExpectReadsBack("vol2", test::RandomBytes(1 << 20, 2), /*gc_first=*/true);
}

// A container whose chunk data is damaged: its damaged chunk gets no entry
// (it cannot be read), so the rebuild does not finish -- the store stays
// closed and says why -- until --finish-with-problems accepts the damage.
TEST_F(ToolsTest, RebuildIndexWithAnUnreadableContainerDoesNotFinish) {
  WriteStore();
  const auto ids = Containers();
  ASSERT_FALSE(ids.empty());
  FlipContainerByte(ids.front());
  ASSERT_EQ(::unlink(options_.chunk_index.table.path.c_str()), 0);
  RunResult r = Check({"--rebuild-index"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("the rebuild did not finish"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("NOT finished"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(JoinPath(data_, kIndexRebuildFileName)));
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(options_, Env::Default(), &sys);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();

  r = Check({"--rebuild-index", "--finish-with-problems"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;  // the damage is still there
  EXPECT_NE(r.out.find("rebuilt: a new table, finished with "), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(JoinPath(data_, kIndexRebuildFileName)));
  s = DedupSystem::Open(options_, Env::Default(), &sys);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(sys->Close().ok());
  r = Check({"--finish-with-problems"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
}

// kill -9 of a rebuild at any moment: every run after a kill either
// finishes or can be run again, and in the end the store checks clean and
// every block reads back. The delays are bounded (five kills).
TEST_F(ToolsTest, RebuildIndexSurvivesKillNineAtAnyMoment) {
  WriteStore();
  for (int delay_ms : {0, 5, 20, 60, 150}) {
    const pid_t pid =
        Spawn({DEDUPV1_CHECK_BINARY, "--config", config_, "--rebuild-index"}, "/dev/null", "/dev/null");
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
  }
  RunResult r = Check({"--rebuild-index"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
  ExpectReadsBack("vol1", test::RandomBytes(2 << 20, 1), /*gc_first=*/true);
  ExpectReadsBack("vol2", test::RandomBytes(1 << 20, 2), /*gc_first=*/true);
}

// The table was lost and chunk-index.size is too small for the entries the
// rebuild re-adds: the repair grows the new table before it fills it.
TEST_F(ToolsTest, RebuildIndexGrowsATableTooSmallForItsEntries) {
  WriteStore();
  ASSERT_EQ(::unlink(options_.chunk_index.table.path.c_str()), 0);
  std::ofstream(config_, std::ios::app) << "chunk-index.size = 12K\n";
  RunResult r = Check({"--rebuild-index"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  uint64_t bytes = 0;
  ASSERT_TRUE(Env::Default()->GetFileSize(options_.chunk_index.table.path, &bytes).ok());
  const bool grown = bytes > (12u << 10) ||
                     std::filesystem::exists(GrowableHashTable::NextPath(options_.chunk_index.table.path));
  EXPECT_TRUE(grown) << bytes << " bytes";
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
  ExpectReadsBack("vol1", test::RandomBytes(2 << 20, 1), /*gc_first=*/true);
}

// A chunk stored twice, only the newer copy still mapped: the re-added
// entry names the copy a mapping names, so GC gives the older copies'
// containers back (with the entry on an older copy they were kept live).
TEST_F(ToolsTest, RebuildIndexNamesTheCopyAMappingNames) {
  const auto a = test::RandomBytes(1 << 20, 41);
  std::vector<ContainerId> old_ids;
  ASSERT_NO_FATAL_FAILURE(WriteTwoCopies(a, &old_ids));
  WriteUnique(1 << 20, 42);  // vol1 lets go of its copy of |a|
  ASSERT_EQ(::unlink(options_.chunk_index.table.path.c_str()), 0);
  RunResult r = Check({"--rebuild-index"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const Fingerprint fp = ContainerFingerprints(old_ids.front()).front();
  r = Debug({"chunk", fp.ToHex()});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("container " + std::to_string(old_ids.front()) + ","), std::string::npos) << r.out;
  ExpectReadsBack("vol2", a, /*gc_first=*/true);
  const auto after = Containers();
  for (ContainerId id : old_ids) {
    EXPECT_FALSE(std::binary_search(after.begin(), after.end(), id)) << "container " << id << " was kept";
  }
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

TEST_F(ToolsTest, RepairPointsMappingsAtASurvivingCopy) {
  auto a = test::RandomBytes(1 << 20, 11);
  std::vector<ContainerId> old_ids;
  ASSERT_NO_FATAL_FAILURE(WriteTwoCopies(a, &old_ids));
  ASSERT_GT(Containers().size(), old_ids.size());
  // Which blocks' chunks went to which container depends on timing (open
  // containers, commit timeout): ask the block index.
  const int64_t block = BlockReferencing(old_ids[0]);
  ASSERT_GE(block, 0);
  ASSERT_EQ(unlink(ContainerPath(old_ids[0]).c_str()), 0);

  RunResult r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("[repairable] mapping-relocatable: volume vol1 (id 1) block " + std::to_string(block) + ":"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("mapping-unrecoverable"), std::string::npos) << r.out;
  r = Check({"--repair"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("[repaired] mapping-relocatable"), std::string::npos) << r.out;
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;

  ExpectReadsBack("vol1", a);
}

// The container the index names for a chunk is lost while a block mapping
// elsewhere still references an older copy, and the entry's usage count
// is also wrong (it counted only the newer copy's mappings): the repair
// re-points the entry at the surviving copy with the recounted usage.
// (Before 2026-11-29 the count's repair, applied after the re-point, put
// the entry back on the lost container.)
TEST_F(ToolsTest, RepairRepointsADanglingEntryWhoseCountIsAlsoWrong) {
  auto a = test::RandomBytes(1 << 20, 13);
  std::vector<ContainerId> old_ids;
  ASSERT_NO_FATAL_FAILURE(WriteTwoCopies(a, &old_ids));
  ContainerId lost = kNoContainer;
  for (ContainerId id : Containers()) {
    if (!std::binary_search(old_ids.begin(), old_ids.end(), id)) {
      lost = id;
      break;
    }
  }
  ASSERT_NE(lost, kNoContainer);
  ASSERT_EQ(unlink(ContainerPath(lost).c_str()), 0);
  RunResult r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("index-entry-dangling"), std::string::npos) << r.out;
  r = Check({"--repair"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
  ExpectReadsBack("vol1", a, /*gc_first=*/true);
  ExpectReadsBack("vol2", a, /*gc_first=*/true);
}

// Block mappings of a volume id the volume table does not list (a line lost
// from a hand-rebuilt table): their chunks are not recounted, so the check
// says so, lowers no count and the rebuild does not finish; with the line
// back, the store checks clean.
TEST_F(ToolsTest, MappingsOfAVolumeTheTableDoesNotListLowerNoCount) {
  WriteStore();
  const std::string path = JoinPath(data_, "volumes");
  std::vector<VolumeRecord> records;
  ASSERT_TRUE(ReadVolumeTable(Env::Default(), path, &records).ok());
  ASSERT_EQ(records.size(), 2u);
  const std::vector<VolumeRecord> all = records;
  records.pop_back();  // vol2
  ASSERT_TRUE(WriteVolumeTable(Env::Default(), path, records).ok());
  std::ofstream(config_) << ConfigText(data_).substr(0, ConfigText(data_).find("volume = vol2"));
  RunResult r = Check({"--repair"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("block-volume-unknown"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of volume id " + std::to_string(all[1].id)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[kept] usage-count-mismatch"), std::string::npos) << r.out;
  ASSERT_EQ(::unlink(options_.chunk_index.table.path.c_str()), 0);
  r = Check({"--rebuild-index"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("the rebuild did not finish"), std::string::npos) << r.err;

  ASSERT_TRUE(WriteVolumeTable(Env::Default(), path, all).ok());
  r = Check({"--rebuild-index"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  ExpectReadsBack("vol1", test::RandomBytes(2 << 20, 1), /*gc_first=*/true);
}

// Issue 19 defect 1: four bytes flipped inside one block mapping's stored
// value. The check used to stop reading the volume at that record and set
// to 0 the usage counts of every chunk only later blocks use, and the next
// GC round deleted them. Now it reads past the record, and with a record it
// could not read it never lowers a count: after --repair and a GC round
// every block that was readable before reads the same data.
TEST_F(ToolsTest, RepairAndGcAfterADamagedMappingValueKeepEveryReadableBlock) {
  const uint64_t bs = options_.block_size;
  const auto data = WriteUnique(8 << 20, 21);
  const uint64_t victim = 10;
  // Inside the value: past the key (12), the format byte and the id (13).
  ASSERT_NO_FATAL_FAILURE(FlipInBlockIndexFile(victim, 12 + 20, {0x11, 0x22, 0x33, 0x44}));
  const auto before = ReadBlocks("vol1");
  ASSERT_EQ(before.size(), data.size() / bs);
  for (uint64_t b = 0; b < before.size(); b++) {
    if (b == victim) {
      EXPECT_FALSE(before[b].has_value()) << "the damaged record must be an I/O error";
      continue;
    }
    ASSERT_TRUE(before[b].has_value()) << b;
    ASSERT_TRUE(std::equal(before[b]->begin(), before[b]->end(), data.begin() + b * bs)) << b;
  }

  RunResult r = Check({"--json"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["block_index"]["unreadable_records"].get<uint64_t>(), 1u);
  EXPECT_FALSE(j["usage_counts"]["recount_complete"].get<bool>());
  // The walk went past the damaged record: every other block was checked.
  EXPECT_EQ(j["block_index"]["blocks_mapped"].get<uint64_t>(), before.size() - 1);
  bool named = false;
  size_t kept = 0;
  for (const auto& p : j["problems"]) {
    if (p["kind"] == "block-index-corrupt") {
      named = p["block"].get<uint64_t>() == victim && p["volume"] == "vol1";
      EXPECT_NE(p["message"].get<std::string>().find("checksum mismatch"), std::string::npos) << p.dump();
    }
    if (p["kind"] == "usage-count-mismatch") {
      EXPECT_TRUE(p.value("held_back", false)) << p.dump();
      EXPECT_FALSE(p["repairable"].get<bool>()) << p.dump();
      kept++;
    }
  }
  EXPECT_TRUE(named) << r.out;
  EXPECT_GT(kept, 0u) << "the damaged block's chunks keep their counts: " << r.out;

  r = Check({"--repair"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;  // the damaged record stays reported
  EXPECT_NE(r.out.find("[kept] usage-count-mismatch"), std::string::npos) << r.out;
  const auto after = ReadBlocks("vol1", /*gc_first=*/true);
  ASSERT_EQ(after.size(), before.size());
  for (uint64_t b = 0; b < before.size(); b++) {
    if (!before[b]) continue;
    ASSERT_TRUE(after[b].has_value()) << "block " << b << " became unreadable after --repair and GC";
    EXPECT_TRUE(*after[b] == *before[b]) << b;
  }
}

// Issue 19 defect 3 on the real file: one bit of block 10's key flipped in
// the Tokyo Cabinet file. Block 10 read as zeros before (its record was
// under another key) and block 11 could return block 10's data. Now both
// reads fail, the check names the record, --repair puts it back, and every
// block reads its own data again, also after a GC round.
TEST_F(ToolsTest, FlippedBlockIndexKeyIsFoundAndRepaired) {
  const uint64_t bs = options_.block_size;
  const auto data = WriteUnique(8 << 20, 22);
  for (const uint8_t mask : {uint8_t{0x01}, uint8_t{0x02}}) {  // 10 -> 11 (exists), 10 -> 8 (exists, before)
    SCOPED_TRACE("mask " + std::to_string(mask));
    ASSERT_NO_FATAL_FAILURE(FlipInBlockIndexFile(10, 11, {mask}));
    const uint64_t flipped = 10 ^ mask;
    const auto blocks = ReadBlocks("vol1");
    for (uint64_t b = 0; b < blocks.size(); b++) {
      if (b == 10 || b == flipped) {
        EXPECT_FALSE(blocks[b].has_value()) << b << " must be an I/O error, not zeros or another block's data";
      } else {
        ASSERT_TRUE(blocks[b].has_value()) << b;
        EXPECT_TRUE(std::equal(blocks[b]->begin(), blocks[b]->end(), data.begin() + b * bs)) << b;
      }
    }
    RunResult r = Check();
    EXPECT_EQ(r.code, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("[repairable] block-record-displaced"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("key 1/" + std::to_string(flipped) + " holds the record of block 1/10"), std::string::npos)
        << r.out;
    r = Check({"--repair"});
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("[repaired] block-record-displaced"), std::string::npos) << r.out;
    r = Check();
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    for (bool gc : {false, true}) ASSERT_NO_FATAL_FAILURE(ExpectReadsBack("vol1", data, gc));
  }
}

// The same with LevelDB, whose own block checksums catch flipped bytes in
// its files: a record under another block's key (as a damaged key or a bug
// would leave it) is refused, reported and put back the same way.
TEST_F(ToolsTest, RecordUnderAnotherKeyIsRepairedWithLevelDb) {
  ASSERT_NO_FATAL_FAILURE(UseBackend("leveldb"));
  const auto data = WriteUnique(8 << 20, 23);
  {
    std::unique_ptr<KvStore> store;
    ASSERT_TRUE(OpenKvStore(KvBackend::kLevelDb, options_.block_index.path, Env::Default(), &store).ok());
    std::string value;
    ASSERT_TRUE(store->Get(EncodeBlockKey({1, 10}), &value).ok());
    KvStore::WriteOp erase{EncodeBlockKey({1, 10}), "", true};
    KvStore::WriteOp put{EncodeBlockKey({1, 300}), value, false};
    ASSERT_TRUE(store->Write({erase, put}).ok());
  }
  auto blocks = ReadBlocks("vol1");
  EXPECT_FALSE(blocks[10].has_value()) << "block 10 must be an I/O error, not zeros";
  RunResult r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("key 1/300 holds the record of block 1/10"), std::string::npos) << r.out;
  r = Check({"--repair"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  ExpectReadsBack("vol1", data, /*gc_first=*/true);
}

// A damaged chunk of a container that has a good copy elsewhere: only the
// mappings of that chunk are relocated; the container's other chunks stay
// in use where they are.
TEST_F(ToolsTest, RepairRelocatesOnlyTheDamagedChunksOfAContainer) {
  auto a = test::RandomBytes(1 << 20, 12);
  std::vector<ContainerId> old_ids;
  ASSERT_NO_FATAL_FAILURE(WriteTwoCopies(a, &old_ids));
  // One byte near the end of the old container's data: one chunk damaged.
  const ContainerId victim = old_ids[0];
  ASSERT_GT(ContainerFingerprints(victim).size(), 2u);
  FlipContainerByte(victim);
  RunResult r = Check({"--json"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  size_t corrupt = 0, relocatable = 0;
  for (const auto& p : j["problems"]) {
    corrupt += p["kind"] == "chunk-corrupt";
    relocatable += p["kind"] == "mapping-relocatable";
    EXPECT_NE(p["kind"], "mapping-unrecoverable") << p.dump();
    EXPECT_NE(p["kind"], "container-corrupt") << p.dump();
  }
  EXPECT_EQ(corrupt, 1u) << r.out;
  EXPECT_GE(relocatable, 1u) << r.out;
  r = Check({"--repair"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;  // the damaged chunk itself stays reported
  EXPECT_NE(r.out.find("[repaired] mapping-relocatable"), std::string::npos) << r.out;
  // The undamaged chunks of the container are still what vol1 uses.
  EXPECT_GE(BlockReferencing(victim), 0);
  ExpectReadsBack("vol1", a);
}

// The child writes and syncs, writes more without syncing, and is killed.
[[noreturn]] void WriteAndHang(const Options& o, int fd) {
  std::unique_ptr<DedupSystem> sys;
  if (!DedupSystem::Open(o, Env::Default(), &sys).ok()) _exit(10);
  Volume* v;
  if (!sys->GetVolume("vol1", &v).ok()) _exit(11);
  auto a = test::RandomBytes(1 << 20, 7);
  if (!v->Write(0, a.size(), a.data(), false).ok()) _exit(12);
  if (!v->Sync().ok()) _exit(13);
  auto b = test::RandomBytes(256 << 10, 8);
  if (!v->Write(2 << 20, b.size(), b.data(), false).ok()) _exit(14);
  char c = 'S';
  if (write(fd, &c, 1) != 1) _exit(15);
  for (;;) pause();
}

// Leaves an uncleanly stopped store: WriteAndHang in a child, then SIGKILL.
void KillWriter(const Options& options) {
  int synced_fd = -1;
  const pid_t pid = test::ForkWithPipe([&](int fd) { WriteAndHang(options, fd); }, &synced_fd);
  ASSERT_GE(pid, 0);
  char c = 0;
  EXPECT_EQ(read(synced_fd, &c, 1), 1) << "child failed before syncing";
  close(synced_fd);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
}

TEST_F(ToolsTest, CheckAfterKillNineReplaysAndIsClean) {
  ASSERT_NO_FATAL_FAILURE(KillWriter(options_));
  RunResult r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("open:          unclean stop detected: replayed "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
  // The check closed the store cleanly: nothing left to replay.
  r = Replay();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("previous stop:  clean"), std::string::npos) << r.out;
}

TEST_F(ToolsTest, ReplayAfterKillNineEmptiesTheLog) {
  ASSERT_NO_FATAL_FAILURE(KillWriter(options_));

  // The crashed store as it is: mapping events of vol1 (id 1) in the log.
  RunResult r = Debug({"log"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("BLOCK_MAPPING_WRITTEN volume 1 block 0:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n#1 "), std::string::npos) << r.out;
  r = Debug({"log", "1", "1"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("shown: events 1..1"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n#2 "), std::string::npos) << r.out;
  r = Debug({"block", "vol1", "0"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("for this block not yet checkpointed"), std::string::npos) << r.out;

  r = Replay();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("previous stop:  unclean"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("log before:     events 1.."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BLOCK_MAPPING_WRITTEN"), std::string::npos) << r.out;
  const size_t at = r.out.find("replayed:       ");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_GT(std::stoull(r.out.substr(at + 16)), 0u) << r.out;
  EXPECT_NE(r.out.find("after an unclean stop"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("log after:      empty"), std::string::npos) << r.out;

  r = Debug({"log"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("events:   none"), std::string::npos) << r.out;
  r = Replay();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("previous stop:  clean"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("replayed:       nothing"), std::string::npos) << r.out;

  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  // The synced megabyte is mapped.
  r = Debug({"block", "vol1", "0"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("block index:  version"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("operations log: no events for this block"), std::string::npos) << r.out;
}

// Issue 19, defect 2, through the tools: a store killed with synced writes
// whose events are still in the log (replay paused), and 8 payload bytes of
// a mapping slot in the middle of the log flipped. dedupv1_check and a plain
// dedupv1_replay refuse it naming the damage and change nothing;
// dedupv1_debug log shows the damaged slot, the lost event and the intact
// events after it; dedupv1_replay --accept-log-damage lists the same,
// recovers, and the store checks clean, also after a GC round.
TEST_F(ToolsTest, DamagedLogIsRefusedListedAndAccepted) {
  constexpr uint64_t kWrites = 16, kWriteSize = 256 << 10;
  {
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::Open(options_, Env::Default(), &sys).ok());
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    auto a = test::RandomBytes(kWrites * kWriteSize, 1);
    ASSERT_TRUE(v->Write(0, a.size(), a.data(), false).ok());
    ASSERT_TRUE(sys->Close().ok());
  }
  int synced_fd = -1;
  const pid_t pid = test::ForkWithPipe(
      [&](int fd) {
        std::unique_ptr<DedupSystem> sys;
        if (!DedupSystem::Open(options_, Env::Default(), &sys).ok()) _exit(10);
        sys->PauseReplay(true);
        Volume* v;
        if (!sys->GetVolume("vol1", &v).ok()) _exit(11);
        for (uint64_t i = 0; i < kWrites; i++) {
          auto b = test::RandomBytes(kWriteSize, 100 + i);
          if (!v->Write(i * kWriteSize, kWriteSize, b.data(), false).ok() || !v->Sync().ok()) _exit(12);
        }
        if (write(fd, "S", 1) != 1) _exit(13);
        for (;;) pause();
      },
      &synced_fd);
  ASSERT_GE(pid, 0);
  char c = 0;
  ASSERT_EQ(read(synced_fd, &c, 1), 1) << "child failed before syncing";
  close(synced_fd);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));

  // The first slot of the mapping event in the middle of the log.
  std::vector<uint64_t> mapping_events;
  {
    std::unique_ptr<OperationsLog> log;
    ASSERT_TRUE(OperationsLog::Open(options_.log, Env::Default(), &log).ok());
    ASSERT_TRUE(log->Replay(0, [&](const LogEvent& e) {
                     if (e.type == LogEventType::kBlockMappingWritten) mapping_events.push_back(e.id);
                     return Status::OK();
                   }).ok());
  }
  ASSERT_GE(mapping_events.size(), kWrites);
  const uint64_t lost = mapping_events[mapping_events.size() / 2];
  uint64_t offset = 0;
  std::string slot(options_.log.slot_size, '\0');
  {
    std::unique_ptr<File> f;
    ASSERT_TRUE(Env::Default()->OpenFile(options_.log.path, OpenMode::kReadWrite, &f).ok());
    for (uint64_t off = 2 * slot.size(); off < options_.log.size_bytes && offset == 0; off += slot.size()) {
      ASSERT_TRUE(f->Read(off, slot.size(), slot.data()).ok());
      LogSlotHeader h;
      std::string why;
      if (DecodeLogSlot(reinterpret_cast<const uint8_t*>(slot.data()), slot.size() - kLogSlotHeaderBytes, &h, &why) &&
          h.id == lost && h.fragment_index == 0) {
        offset = off;
      }
    }
    ASSERT_NE(offset, 0u);
    for (int i = 0; i < 8; i++) slot[kLogSlotHeaderBytes + 20 + i] ^= 0x55;
    ASSERT_TRUE(f->Write(offset, slot.data(), slot.size()).ok());
  }
  const std::string log_bytes = ReadAll(options_.log.path);
  const std::string slot_name = "slot " + std::to_string(offset / slot.size()) + " (";
  const std::string lost_line = "region 1: event " + std::to_string(lost) + " lost";

  RunResult r = Check();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(options_.log.path + " is damaged: " + slot_name), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--accept-log-damage"), std::string::npos) << r.err;
  r = Replay();
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find(" is damaged: " + slot_name), std::string::npos) << r.err;
  r = Debug({"log"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("DAMAGED: 1 damaged region, 1 event lost"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(lost_line), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(slot_name), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("checksum mismatch"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("intact events after the damage: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#" + std::to_string(lost + 1) + " "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BLOCK_MAPPING_WRITTEN volume 1 block"), std::string::npos) << r.out;
  // None of them changed the log or marked the stop clean.
  EXPECT_TRUE(ReadAll(options_.log.path) == log_bytes);
  EXPECT_FALSE(Env::Default()->FileExists(JoinPath(options_.data_dir, "clean")));

  r = Run(DEDUPV1_REPLAY_BINARY, {"--accept-log-damage"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("log damage:     DAMAGED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(lost_line), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("damage:         accepted: 1 events lost"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("log after:      empty"), std::string::npos) << r.out;

  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
  {
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::Open(options_, Env::Default(), &sys).ok());
    ASSERT_TRUE(sys->RunGc().ok());
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    std::vector<uint8_t> back(kWriteSize);
    for (uint64_t i = 0; i < kWrites; i++) ASSERT_TRUE(v->Read(i * kWriteSize, kWriteSize, back.data()).ok()) << i;
    ASSERT_TRUE(sys->Close().ok());
  }
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
}

TEST_F(ToolsTest, DebugPrintsContainerBlockAndVolumes) {
  WriteStore();
  const auto ids = Containers();
  ASSERT_FALSE(ids.empty());
  const auto fps = ContainerFingerprints(ids[0]);
  RunResult r = Debug({"container", std::to_string(ids[0])});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("container " + std::to_string(ids[0]) + " ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("verdict:      OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("items:        " + std::to_string(fps.size()) + "\n"), std::string::npos) << r.out;
  for (const auto& fp : fps) EXPECT_NE(r.out.find("fp " + fp.ToHex() + " offset"), std::string::npos);

  const int64_t block = BlockReferencing(ids[0]);
  ASSERT_GE(block, 0);
  r = Debug({"block", "1", std::to_string(block)});  // volume by id
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("volume vol1 (id 1) block " + std::to_string(block)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" container " + std::to_string(ids[0]) + " chunk bytes ["), std::string::npos) << r.out;

  r = Debug({"block", "vol1", "40"});  // [5M, 5.5M) was written as zeros
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("zeros"), std::string::npos) << r.out;
  r = Debug({"block", "vol1", "63"});  // never written
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no mapping"), std::string::npos) << r.out;
  r = Debug({"block", "vol1", "64"});  // past the end of the 8M volume
  EXPECT_EQ(r.code, 1) << r.out << r.err;

  r = Debug({"volumes"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("vol1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("vol2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("configured"), std::string::npos) << r.out;
  {
    std::vector<tools::VolumeEntry> volumes;
    ASSERT_TRUE(tools::ReadVolumeTable(Env::Default(), options_, &volumes).ok());
    ASSERT_FALSE(volumes.empty());
    EXPECT_EQ(volumes[0].uid.size(), 32u);
    EXPECT_NE(r.out.find(volumes[0].uid), std::string::npos) << r.out;  // each volume's uid is shown
  }

  r = Debug({"container", "999999"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("does not exist"), std::string::npos) << r.out;
  r = Debug({"chunk", std::string(40, 'a')});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("none of"), std::string::npos) << r.out;
}

// Garbage GC kept inside a container that stays at least half live is shown
// as such by dedupv1_debug, and the check does not count it as a problem.
TEST_F(ToolsTest, DebugShowsGarbageKeptInPlace) {
  const uint64_t bs = options_.block_size;
  {
    // Containers are sealed full or by the Sync, never by the commit timer:
    // one sealed early under load is less than half live after the unmaps and
    // GC merges it instead of keeping its garbage in place (seen once in a
    // repeated run beside a CPU hog).
    Options options = options_;
    options.chunk_store.commit_timeout_ms = 3600 * 1000;
    std::unique_ptr<DedupSystem> sys;
    ASSERT_TRUE(DedupSystem::Open(options, Env::Default(), &sys).ok());
    Volume* v;
    ASSERT_TRUE(sys->GetVolume("vol1", &v).ok());
    auto data = test::RandomBytes(4 << 20, 7);
    ASSERT_TRUE(v->Write(0, data.size(), data.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
    // Overwrite 32 KiB of every fourth block: a container loses well under
    // half its chunks, so GC keeps them in place as marks rather than merging
    // it (unmapping whole blocks left some containers just about half dead,
    // and which side of half they fell on depended on the workers' timing).
    auto fresh = test::RandomBytes(32 << 10, 8);
    for (uint64_t off = 0; off < data.size(); off += 4 * bs) ASSERT_TRUE(v->Write(off, fresh.size(), fresh.data(), false).ok());
    ASSERT_TRUE(v->Sync().ok());
    ASSERT_TRUE(sys->RunGc().ok());
    ASSERT_GT(sys->chunk_store()->stats().dead_chunks_marked, 0u);
    ASSERT_TRUE(sys->Close().ok());
  }
  DeadChunkFile file(Env::Default(), JoinPath(options_.chunk_store.dir, kDeadChunkFileName),
                     FingerprintSize(options_.fingerprint));
  DeadChunkFile::Marks marks;
  bool intact = false;
  ASSERT_TRUE(file.Read(&marks, &intact).ok());
  ASSERT_TRUE(intact);
  ASSERT_FALSE(marks.empty());
  const auto& [id, fps] = *marks.begin();
  ASSERT_FALSE(fps.empty());
  RunResult r = Debug({"container", std::to_string(id)});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gc garbage:   " + std::to_string(fps.size()) + " of the items"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    fp " + fps[0].ToHex()), std::string::npos) << r.out;
  r = Debug({"chunk", fps[0].ToHex()});
  EXPECT_EQ(r.code, 1) << r.out << r.err;  // no chunk-index entry
  EXPECT_NE(r.out.find("container " + std::to_string(id) + ": "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[garbage kept in place: containers/dead-chunks]"), std::string::npos) << r.out;
  r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("result: clean"), std::string::npos) << r.out;
}

// The tools apply the engine's rule (core/engine/data_dir.h): a store that lacks a
// file its data depends on is a problem of the store (exit 1, the file
// named), and none of them recreates it; a creation that did not finish is
// not a store yet (exit 3).
TEST_F(ToolsTest, StoreMissingAMetadataFileIsRefusedByEveryTool) {
  WriteStore();
  for (const std::string& name : {std::string("volumes"), std::string("system")}) {
    SCOPED_TRACE(name);
    const std::string path = JoinPath(data_, name);
    ASSERT_TRUE(Env::Default()->RenameFile(path, path + ".aside").ok());
    for (RunResult r : {Check(), Replay(), Debug({"volumes"}), Check({"--repair"})}) {
      EXPECT_EQ(r.code, 1) << r.out << r.err;
      EXPECT_NE(r.err.find(path + " is missing"), std::string::npos) << r.err;
    }
    EXPECT_FALSE(Env::Default()->FileExists(path));
    ASSERT_TRUE(Env::Default()->RenameFile(path + ".aside", path).ok());
  }
  EXPECT_EQ(Check().code, 0);

  std::ofstream(JoinPath(data_, "creating")) << "\n";
  RunResult r = Check();
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("creation did not finish"), std::string::npos) << r.err;
}

TEST_F(ToolsTest, LockedStoreExitsThree) {
  WriteStore();
  std::unique_ptr<FileLock> lock;
  ASSERT_TRUE(Env::Default()->LockFile(JoinPath(data_, "LOCK"), &lock).ok());
  for (const char* bin : {DEDUPV1_CHECK_BINARY, DEDUPV1_REPLAY_BINARY}) {
    RunResult r = Run(bin, {});
    EXPECT_EQ(r.code, 3) << bin << r.out << r.err;
    EXPECT_NE(r.err.find("is in use"), std::string::npos) << r.err;
  }
  RunResult r = Debug({"volumes"});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("stop it first"), std::string::npos) << r.err;
  lock.reset();
  EXPECT_EQ(Check().code, 0);
}

// A relative data-dir is relative to the config file, not to the directory
// the tool runs in (issue 19: relative to the current directory, a tool run
// elsewhere found no store, or another one).
TEST_F(ToolsTest, RelativeDataDirIsFoundFromAnyDirectory) {
  WriteStore();
  ASSERT_EQ(Check().code, 0);
  std::string text = ConfigText(data_);
  text.replace(0, text.find('\n'), "data-dir = ./data");
  std::ofstream(config_) << text;
  ASSERT_NE(std::filesystem::current_path().string(), dir_.path());
  RunResult r = Check();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = Debug({"volumes"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("vol2"), std::string::npos) << r.out;
  r = Replay();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
}

TEST_F(ToolsTest, UsageAndOpenErrors) {
  EXPECT_EQ(Run(DEDUPV1_CHECK_BINARY, {}, false).code, 2);             // no --config
  EXPECT_EQ(Check({"--frobnicate"}).code, 2);
  EXPECT_EQ(Check({"extra"}).code, 2);
  EXPECT_EQ(Run(DEDUPV1_REPLAY_BINARY, {"--repair"}).code, 2);         // not a replay option
  EXPECT_EQ(Debug({}).code, 2);
  EXPECT_EQ(Debug({"frobnicate"}).code, 2);
  EXPECT_EQ(Debug({"container", "x"}).code, 2);
  EXPECT_EQ(Debug({"chunk", "xyz"}).code, 2);
  EXPECT_EQ(Debug({"log", "5", "2"}).code, 2);
  EXPECT_EQ(Run(DEDUPV1_CHECK_BINARY, {"--help"}, false).code, 0);

  // No store in the data directory yet: refused, and nothing is created.
  RunResult r = Check();
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("not a dedupv1 data directory"), std::string::npos) << r.err;
  EXPECT_FALSE(Env::Default()->FileExists(JoinPath(data_, "system")));
  EXPECT_EQ(Run(DEDUPV1_CHECK_BINARY, {"--config", dir_.Sub("missing.conf")}, false).code, 3);
  std::ofstream(dir_.Sub("bad.conf")) << "data-dir = " << data_ << "\nno-such-key = 1\n";
  EXPECT_EQ(Run(DEDUPV1_DEBUG_BINARY, {"--config", dir_.Sub("bad.conf"), "volumes"}, false).code, 3);

  // --data-dir overrides the config's data-dir.
  WriteStore();
  std::ofstream(dir_.Sub("elsewhere.conf")) << ConfigText(dir_.Sub("nowhere"));
  EXPECT_EQ(Run(DEDUPV1_CHECK_BINARY, {"--config", dir_.Sub("elsewhere.conf")}, false).code, 3);
  EXPECT_EQ(Run(DEDUPV1_CHECK_BINARY, {"--config=" + dir_.Sub("elsewhere.conf"), "--data-dir=" + data_}, false).code,
            0);
}

}  // namespace
}  // namespace dedupv1
