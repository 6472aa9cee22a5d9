// Unit tests of the tools' building blocks: argument parsing, progress line
// formatting, the raw container decoder, log event summaries, volume lookup.
#include <gtest/gtest.h>

#include "chunkstore/container.h"
#include "core/base/testutil.h"
#include "index/block_mapping.h"
#include "log/log_event.h"
#include "target/tools/container_dump.h"
#include "target/tools/log_summary.h"
#include "target/tools/progress.h"
#include "target/tools/tool_util.h"
#include "target/tools/volume_table.h"

namespace dedupv1 {
namespace tools {
namespace {

bool Parse(std::vector<std::string> argv, const std::vector<std::string>& flags, ToolArgs* args, std::string* err) {
  argv.insert(argv.begin(), "tool");
  std::vector<char*> c;
  for (auto& a : argv) c.push_back(a.data());
  return ParseToolArgs(static_cast<int>(c.size()), c.data(), flags, args, err);
}

TEST(ToolArgsTest, ParsesOptionsAnywhere) {
  ToolArgs a;
  std::string err;
  ASSERT_TRUE(Parse({"log", "--config", "c.conf", "3", "--data-dir=/d", "--progress", "7"}, {"--progress"}, &a, &err))
      << err;
  EXPECT_EQ(a.config, "c.conf");
  EXPECT_EQ(a.data_dir, "/d");
  EXPECT_TRUE(a.progress);
  EXPECT_EQ(a.positional, (std::vector<std::string>{"log", "3", "7"}));
}

TEST(ToolArgsTest, RefusesUnknownAndMissing) {
  ToolArgs a;
  std::string err;
  EXPECT_FALSE(Parse({"--config", "c", "--repair"}, {"--json"}, &a, &err));
  EXPECT_NE(err.find("--repair"), std::string::npos);
  ToolArgs b;
  EXPECT_FALSE(Parse({"--json"}, {"--json"}, &b, &err));
  EXPECT_NE(err.find("--config FILE is required"), std::string::npos) << err;
  ToolArgs c;
  EXPECT_FALSE(Parse({"--config"}, {}, &c, &err));
  ToolArgs d;
  EXPECT_FALSE(Parse({"--config=c", "--json=1"}, {"--json"}, &d, &err));
  ToolArgs h;
  EXPECT_TRUE(Parse({"--help"}, {}, &h, &err));
  EXPECT_TRUE(h.help);
}

TEST(ProgressTest, FormatShowsPercentRateAndEta) {
  std::string line = Progress::Format("containers", 42, 100, "containers", 2.0);
  EXPECT_NE(line.find(" 42% 42/100 containers"), std::string::npos) << line;
  EXPECT_NE(line.find("21.0 containers/s"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 0:03"), std::string::npos) << line;  // 58 left at 21/s
  line = Progress::Format("scan", 5, 0, "blocks", 1.0);
  EXPECT_EQ(line.find('%'), std::string::npos) << line;
  EXPECT_EQ(line.find("ETA"), std::string::npos) << line;
  line = Progress::Format("x", 10, 10, "items", 3725.0);
  EXPECT_NE(line.find("100%"), std::string::npos) << line;
  EXPECT_NE(line.find("in 1:02:05"), std::string::npos) << line;
}

std::string SerializedContainer(ContainerId id, std::vector<Fingerprint>* fps) {
  Container c(id, 1 << 20, FingerprintType::kSha1);
  for (int i = 0; i < 5; i++) {
    auto data = test::RandomBytes(3000 + i * 100, 100 + i);
    Fingerprint fp;
    ComputeFingerprint(FingerprintType::kSha1, data.data(), data.size(), &fp);
    EXPECT_TRUE(c.Add(fp, data.data(), data.size(), i % 2 ? Compression::kNone : Compression::kZlib));
    fps->push_back(fp);
  }
  std::string bytes;
  EXPECT_TRUE(c.Serialize(&bytes).ok());
  return bytes;
}

TEST(ContainerDumpTest, DecodesAGoodContainer) {
  std::vector<Fingerprint> fps;
  const std::string bytes = SerializedContainer(7, &fps);
  ContainerDump d = DumpContainer(7, bytes);
  EXPECT_TRUE(d.verdict.ok()) << d.verdict.ToString();
  EXPECT_TRUE(d.decode_error.empty()) << d.decode_error;
  EXPECT_EQ(d.id, 7u);
  EXPECT_EQ(d.fp_size, 20);
  ASSERT_EQ(d.items.size(), 5u);
  ASSERT_TRUE(d.crcs_computed);
  EXPECT_EQ(d.meta_crc, d.computed_meta_crc);
  EXPECT_EQ(d.data_crc, d.computed_data_crc);
  for (size_t i = 0; i < fps.size(); i++) {
    const ContainerDumpItem* item = FindItem(d, fps[i]);
    ASSERT_NE(item, nullptr);
    EXPECT_EQ(item->raw_size, 3000 + i * 100);
  }
  // Random data does not compress: every item is stored raw.
  for (const auto& item : d.items) EXPECT_EQ(item.compression, 0);
}

TEST(ContainerDumpTest, ShowsWhatFailedInADamagedContainer) {
  std::vector<Fingerprint> fps;
  std::string bytes = SerializedContainer(7, &fps);
  bytes[bytes.size() - 10] ^= 1;  // data section
  ContainerDump d = DumpContainer(7, bytes);
  EXPECT_TRUE(d.verdict.IsCorruption());
  ASSERT_TRUE(d.crcs_computed);
  EXPECT_EQ(d.meta_crc, d.computed_meta_crc);
  EXPECT_NE(d.data_crc, d.computed_data_crc);
  EXPECT_EQ(d.items.size(), 5u);

  // Wrong id: Parse refuses, the dump still shows the header id.
  d = DumpContainer(8, SerializedContainer(7, &fps));
  EXPECT_TRUE(d.verdict.IsCorruption());
  EXPECT_EQ(d.id, 7u);

  // Truncated inside the items.
  d = DumpContainer(7, bytes.substr(0, Container::kHeaderSize + 40));
  EXPECT_FALSE(d.crcs_computed);
  EXPECT_EQ(d.items.size(), 1u);
  EXPECT_NE(d.decode_error.find("item 1 of 5"), std::string::npos) << d.decode_error;
  d = DumpContainer(7, bytes.substr(0, 10));
  EXPECT_FALSE(d.header_complete);
}

TEST(LogSummaryTest, DescribesEvents) {
  BlockMapping m(4096);
  Fingerprint fp;
  auto data = test::RandomBytes(100, 1);
  ComputeFingerprint(FingerprintType::kSha1, data.data(), data.size(), &fp);
  ASSERT_TRUE(m.Overlay(0, {{fp, 12, 0, 1024}}).ok());
  m.set_version(3);
  BlockMappingWrittenData w;
  w.block = BlockId{2, 9};
  m.Serialize(w.block, &w.new_mapping);
  LogEvent e;
  e.id = 5;
  e.type = LogEventType::kBlockMappingWritten;
  e.payload = w.Encode();
  std::string s = DescribeLogEvent(e);
  EXPECT_NE(s.find("volume 2 block 9: version 3, 2 items"), std::string::npos) << s;
  EXPECT_NE(s.find("c=12"), std::string::npos) << s;
  EXPECT_NE(s.find("no previous mapping"), std::string::npos) << s;
  BlockId b;
  ASSERT_TRUE(LogEventBlock(e, &b));
  EXPECT_EQ(b, (BlockId{2, 9}));

  ContainerEventData c;
  c.container = 77;
  e.type = LogEventType::kContainerCommitted;
  e.payload = c.Encode();
  EXPECT_EQ(DescribeLogEvent(e), "container 77");
  EXPECT_FALSE(LogEventBlock(e, &b));

  e.type = LogEventType::kContainerOpened;
  EXPECT_EQ(DescribeLogEvent(e), "container 77");
  e.type = LogEventType::kContainerCommitFailed;
  EXPECT_EQ(DescribeLogEvent(e), "container 77");

  // The payloads DedupSystem logs at open, close and around checkpoints.
  SystemEventData sys;
  sys.dirty_start = true;
  e.type = LogEventType::kSystemStart;
  e.payload = sys.Encode();
  EXPECT_EQ(DescribeLogEvent(e), "dirty start");
  VolumeEventData vol{3, "backup", 1 << 20};
  e.type = LogEventType::kVolumeDetached;
  e.payload = vol.Encode();
  EXPECT_EQ(DescribeLogEvent(e), "volume 3 (backup, 1048576 bytes)");
  ReplayEventData replay{ReplayMode::kBackground, 10, 20};
  e.type = LogEventType::kReplayStopped;
  e.payload = replay.Encode();
  EXPECT_EQ(DescribeLogEvent(e), std::string(ReplayModeName(ReplayMode::kBackground)) + " replay of events 10..20");

  e.payload = "junk";
  EXPECT_NE(DescribeLogEvent(e).find("undecodable payload of 4 bytes"), std::string::npos);
}

TEST(VolumeTableTest, FindsByNameOrId) {
  std::vector<VolumeEntry> v = {{1, "alpha", 1 << 20, true, ""}, {3, "7", 2 << 20, false, ""}};
  VolumeEntry out;
  ASSERT_TRUE(FindVolume(v, "alpha", &out).ok());
  EXPECT_EQ(out.id, 1u);
  ASSERT_TRUE(FindVolume(v, "1", &out).ok());
  EXPECT_EQ(out.name, "alpha");
  ASSERT_TRUE(FindVolume(v, "7", &out).ok());  // a name wins over an id
  EXPECT_EQ(out.id, 3u);
  Status s = FindVolume(v, "beta", &out);
  EXPECT_TRUE(s.IsNotFound());
  EXPECT_NE(s.message().find("alpha (id 1)"), std::string::npos) << s.message();
}

TEST(VolumeTableTest, ReadsTheDataDirectoryTable) {
  test::TempDir dir;
  Options o;
  o.data_dir = dir.path();
  o.volumes = {{"b", 1 << 20}};
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), dir.Sub("volumes"), "2 b 1048576\n1 a 4096\n").ok());
  std::vector<VolumeEntry> v;
  ASSERT_TRUE(ReadVolumeTable(Env::Default(), o, &v).ok());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].name, "a");
  EXPECT_FALSE(v[0].configured);
  EXPECT_EQ(v[1].name, "b");
  EXPECT_TRUE(v[1].configured);
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), dir.Sub("volumes"), "1 a\n").ok());
  EXPECT_TRUE(ReadVolumeTable(Env::Default(), o, &v).IsCorruption());
}

}  // namespace
}  // namespace tools
}  // namespace dedupv1
