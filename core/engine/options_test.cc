// Options::FromConfig: unknown keys, bad values and impossible combinations
// are refused naming the file, line and key; defaults round-trip through
// ToString. (That every key of the file, the engine's included, is
// documented in docs/configuration.md is checked where all layers' keys are
// known: target/tests/target_options_test.cc.)
#include "core/engine/options.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/base/env.h"
#include "core/base/fastcdc_chunker.h"

namespace dedupv1 {
namespace {

Status FromText(const std::string& text, Options* o, const std::string& source = "test.conf") {
  Config c;
  Status s = Config::Parse(text, source, &c);
  if (!s.ok()) return s;
  return Options::FromConfig(c, o);
}

// Expects |text| to be refused with a message holding every one of |needles|.
void ExpectRefused(const std::string& text, const std::vector<std::string>& needles) {
  Options o;
  Status s = FromText(text, &o);
  ASSERT_TRUE(s.IsInvalidArgument()) << "accepted:\n" << text << "\n-> " << s.ToString();
  for (const auto& n : needles) {
    EXPECT_NE(s.message().find(n), std::string::npos)
        << "the error for\n" << text << "\nshould mention '" << n << "': " << s.ToString();
  }
}

TEST(OptionsTest, UnknownKeyNamesFileLineAndKey) {
  ExpectRefused("block-size = 128K\n\n# comment\nchunk-index.sise = 1G\n",
                {"test.conf:4", "chunk-index.sise"});
  Options o;
  Status s = FromText("volume = a 1G\ncontainer.colour = blue\n", &o, "/etc/dedupv1/dedupv1.conf");
  ASSERT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("/etc/dedupv1/dedupv1.conf:2"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("container.colour"), std::string::npos) << s.ToString();
}

TEST(OptionsTest, BadValuesNameKeyAndLine) {
  ExpectRefused("data-dir = /tmp/x\ncontainer.size = 12Q\n", {"test.conf:2", "container.size"});
  ExpectRefused("write-buffer.size = lots\n", {"test.conf:1", "write-buffer.size"});
  ExpectRefused("\nchunk-index.size = -5\n", {"test.conf:2", "chunk-index.size"});
  ExpectRefused("block-size = 3000\n", {"test.conf:1", "block-size"});
  ExpectRefused("block-size = 32M\n", {"block-size"});
  ExpectRefused("chunk-index.page-size = 100K\n", {"chunk-index.page-size"});
  ExpectRefused("chunk-index.max-fill = 1.5\n", {"chunk-index.max-fill"});
  ExpectRefused("chunk-index.grow-at = 1.2\n", {"chunk-index.grow-at"});
  ExpectRefused("chunk-index.grow-factor = 1\n", {"chunk-index.grow-factor"});
  ExpectRefused("bloom.false-positive-rate = 0.7\n", {"bloom.false-positive-rate"});
  ExpectRefused("fingerprint = md5\n", {"fingerprint"});
  ExpectRefused("chunking = fixed\n", {"chunking"});
  ExpectRefused("container.compression = lz77\n", {"container.compression"});
  ExpectRefused("container.size = 16K\n", {"container.size"});
  ExpectRefused("dedup.threads = 0\n", {"dedup.threads"});
  ExpectRefused("write-buffer.flush-delay = soon\n", {"write-buffer.flush-delay"});
  ExpectRefused("block-index.backend = berkeleydb\n", {"block-index.backend"});
  ExpectRefused("container.backend = tape\n", {"test.conf:1", "container.backend", "tape", "local, memory, rados"});
  ExpectRefused("container.backend = memory\n", {"test.conf:1", "container.backend", "not durable", "local"});
}

TEST(OptionsTest, ImpossibleCombinationsNameTheKey) {
  ExpectRefused("chunking.min-size = 16K\nchunking.avg-size = 8K\n", {"chunking.min-size"});
  ExpectRefused("chunking.avg-size = 64K\nchunking.max-size = 32K\n", {"chunking.avg-size"});
  ExpectRefused("chunking.avg-size = 3000\n", {"chunking.avg-size", "power of two"});
  ExpectRefused("chunking.max-size = 2M\ncontainer.size = 16M\n", {"chunking.max-size"});
  ExpectRefused("chunking.max-size = 64K\ncontainer.size = 64K\n", {"chunking.max-size", "container.size"});
  ExpectRefused("filter-chain = zero-chunk, block-index, bloom\n", {"filter-chain", "chunk-index"});
  ExpectRefused("filter-chain = zero-chunk,sparkle,chunk-index\n", {"test.conf:1", "filter-chain", "sparkle"});
  ExpectRefused("filter-chain = chunk-index,chunk-index\n", {"filter-chain"});
  ExpectRefused("chunk-index.aux-soft-limit = 2M\nchunk-index.aux-hard-limit = 1M\n",
                {"chunk-index.aux-soft-limit"});
  ExpectRefused("block-index.aux-soft-limit = 1M\nblock-index.aux-hard-limit = 1K\n",
                {"block-index.aux-soft-limit"});
  ExpectRefused("volume = backup 1G\nvolume = other 1G\nvolume = backup 2G\n",
                {"test.conf:3", "volume", "backup"});
  ExpectRefused("volume = backup 1000\n", {"test.conf:1", "volume", "512"});
  ExpectRefused("volume = backup\n", {"volume"});
  ExpectRefused("volume = back/up 1G\n", {"volume"});
  ExpectRefused("write-buffer.size = 256K\n", {"write-buffer.size"});
  ExpectRefused("chunk-index.size = 4K\n", {"chunk-index.size"});
}

TEST(OptionsTest, DefaultsRoundTrip) {
  Options empty;
  ASSERT_TRUE(FromText("", &empty).ok());
  Options defaults;
  ASSERT_TRUE(defaults.Finish().ok());
  EXPECT_EQ(empty.ToString(), defaults.ToString());

  // The defaults the documentation promises.
  EXPECT_EQ(empty.data_dir, "/var/lib/dedupv1");
  EXPECT_EQ(empty.block_size, 128u << 10);
  EXPECT_EQ(empty.fingerprint, FingerprintType::kSha1);
  EXPECT_EQ(empty.chunking.avg_size, 8u << 10);
  EXPECT_EQ(empty.chunk_store.container_size, 4u << 20);
  EXPECT_EQ(empty.chunk_index.table.size_bytes, 1ULL << 30);
  EXPECT_EQ(empty.filter_chain,
            (std::vector<std::string>{"zero-chunk", "block-index", "container-cache", "bloom", "chunk-index"}));
  EXPECT_EQ(empty.chunk_store.dir, "/var/lib/dedupv1/containers");
  EXPECT_EQ(empty.chunk_index.table.path, "/var/lib/dedupv1/chunk-index");
  EXPECT_TRUE(empty.volumes.empty());

  // ToString is a config that reproduces the same options.
  Options again;
  Status s = FromText(empty.ToString(), &again, "tostring");
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << empty.ToString();
  EXPECT_EQ(again.ToString(), empty.ToString());
}

// A volume's dedup policy (core/engine/dedup_policy.h): inline unless the
// line names one; an unknown one is refused naming the four; the
// policy round-trips through ToString; cluster scope takes only inline.
TEST(OptionsTest, VolumePolicyIsParsedRefusedAndRoundTrips) {
  Options o;
  Status s = FromText("volume = a 1G\nvolume = b 2G policy=off\nvolume = c 1G policy=inline\n"
                      "volume = d 1G policy=selective\ndedup.selective.threshold = 5\n", &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(o.volumes.size(), 4u);
  EXPECT_EQ(o.volumes[0].policy, DedupPolicy::kInline);
  EXPECT_EQ(o.volumes[1].policy, DedupPolicy::kOff);
  EXPECT_EQ(o.volumes[2].policy, DedupPolicy::kInline);
  EXPECT_EQ(o.volumes[3].policy, DedupPolicy::kSelective);
  EXPECT_EQ(o.selective_threshold, 5u);
  Options again;
  s = FromText(o.ToString(), &again, "tostring");
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(again.ToString(), o.ToString());
  EXPECT_EQ(again.volumes[1].policy, DedupPolicy::kOff);
  EXPECT_NE(o.ToString().find("volume = b 2147483648 policy=off"), std::string::npos) << o.ToString();
  EXPECT_EQ(again.volumes[3].policy, DedupPolicy::kSelective);
  EXPECT_EQ(again.selective_threshold, 5u);

  ExpectRefused("volume = v 1G policy=fast\n", {"test.conf:1", "v", "inline, selective, out-of-band or off", "fast"});
  ExpectRefused("dedup.background.period = 10ms\n", {"dedup.background.period", "100ms to 24h"});
  ExpectRefused("data-dir = /tmp/x\nstorage.backend = rados\ncache.budget = 64M\n", {"cache.budget", "local"});
  Options oob;
  s = FromText("volume = e 1G policy=out-of-band\ndedup.background.period = 2s\ndedup.background.rate = 5M\n", &oob);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(oob.volumes[0].policy, DedupPolicy::kOutOfBand);
  EXPECT_EQ(oob.background.period_ms, 2000u);
  EXPECT_EQ(oob.background.rate_bytes_per_s, 5u << 20);
  Options oob_again;
  s = FromText(oob.ToString(), &oob_again, "tostring");
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(oob_again.ToString(), oob.ToString());
  EXPECT_NE(oob.ToString().find("volume = e 1073741824 policy=out-of-band"), std::string::npos) << oob.ToString();
  ExpectRefused("dedup.selective.threshold = 0\n", {"dedup.selective.threshold", "1..1024"});
  ExpectRefused("data-dir = /tmp/x\nstorage.backend = rados\nstorage.rados.gateway = g\n"
                "storage.rados.dedup-scope = cluster\nvolume = v 1G policy=selective\n",
                {"v", "policy=selective", "dedup-scope"});
  ExpectRefused("volume = v 1G off\n", {"v", "policy=", "off"});
  ExpectRefused("volume = v 1G policy=off extra\n", {"volume"});
  ExpectRefused("data-dir = /tmp/x\nstorage.backend = rados\nstorage.rados.gateway = g\n"
                "storage.rados.dedup-scope = cluster\nvolume = v 1G policy=off\n",
                {"v", "policy=off", "dedup-scope"});
}

// FastCDC skips more bytes with a larger minimum: its own default unless the
// config names one (any chunker keeps a minimum the config names).
TEST(OptionsTest, FastCdcTakesItsOwnMinimumUnlessOneIsNamed) {
  Options o;
  ASSERT_TRUE(FromText("chunking = fastcdc\n", &o).ok());
  EXPECT_EQ(o.chunking.min_size, FastCdcChunker::kDefaultMinSize);
  ASSERT_TRUE(FromText("chunking = fastcdc\nchunking.min-size = 2K\n", &o).ok());
  EXPECT_EQ(o.chunking.min_size, 2048u);
  ASSERT_TRUE(FromText("chunking = rabin\n", &o).ok());
  EXPECT_EQ(o.chunking.min_size, 2048u);
  // At most half a smaller average, never below the generic minimum: what
  // was valid before stays valid.
  ASSERT_TRUE(FromText("chunking = fastcdc\nchunking.avg-size = 4K\n", &o).ok());
  EXPECT_EQ(o.chunking.min_size, 2048u);
  Status s = FromText("chunking = fastcdc\nchunking.avg-size = 2K\n", &o);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(o.chunking.min_size, 2048u);
  // The dump names the minimum, so it reads back the same.
  ASSERT_TRUE(FromText("chunking = fastcdc\n", &o).ok());
  Options again;
  ASSERT_TRUE(FromText(o.ToString(), &again).ok());
  EXPECT_EQ(again.chunking.min_size, FastCdcChunker::kDefaultMinSize);
}

TEST(OptionsTest, NonDefaultValuesRoundTrip) {
  const std::string text =
      "data-dir = /srv/dd\n"
      "block-size = 64K\n"
      "fingerprint = sha256\n"
      "chunking = rabin\n"
      "chunking.min-size = 4K\n"
      "chunking.avg-size = 16K\n"
      "chunking.max-size = 64K\n"
      "filter-chain = zero-chunk,chunk-index,byte-compare\n"
      "bloom.false-positive-rate = 0.001\n"
      "container.size = 8M\n"
      "container.compression = zlib\n"
      "container.commit-timeout = 2s\n"
      "chunk-index.path = /ssd/ci\n"
      "chunk-index.size = 2G\n"
      "chunk-index.max-fill = 0.65\n"
      "chunk-index.grow-at = 0.5\n"
      "chunk-index.grow-factor = 4\n"
      "block-index.backend = leveldb\n"
      "write-buffer.flush-delay = 250ms\n"
      "volume = a 1G\n"
      "volume = b 2G\n";
  Options o;
  Status s = FromText(text, &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(o.block_size, 64u << 10);
  EXPECT_EQ(o.fingerprint, FingerprintType::kSha256);
  EXPECT_EQ(o.chunk_index.table.key_size, 32u);  // follows the fingerprint
  EXPECT_EQ(o.chunk_store.fp_type, FingerprintType::kSha256);
  EXPECT_EQ(o.block_index.block_size, 64u << 10);
  EXPECT_EQ(o.chunk_index.table.path, "/ssd/ci");  // absolute paths are kept
  EXPECT_EQ(o.chunk_store.dir, "/srv/dd/containers");
  EXPECT_EQ(o.block_index.path, "/srv/dd/block-index.leveldb");
  EXPECT_EQ(o.chunk_store.commit_timeout_ms, 2000u);
  EXPECT_EQ(o.write_buffer_flush_delay_ms, 250u);
  EXPECT_EQ(o.chunk_index.grow_at, 0.5);
  EXPECT_EQ(o.chunk_index.grow_factor, 4u);
  ASSERT_EQ(o.volumes.size(), 2u);
  EXPECT_EQ(o.volumes[1].name, "b");
  EXPECT_EQ(o.volumes[1].size, 2ULL << 30);
  Options again;
  s = FromText(o.ToString(), &again, "tostring");
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << o.ToString();
  EXPECT_EQ(again.ToString(), o.ToString());
}

// A relative data-dir (from --data-dir, or text parsed without a file)
// dumps module paths that read back to the same places: the dump names
// them relative to the data-dir, not joined with it a second time.
TEST(OptionsTest, RelativeDataDirRoundTrips) {
  Options o;
  Status s = FromText("data-dir = srv/dd\nchunk-index.path = /ssd/ci\nlog.path = logs/ops\n", &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(o.chunk_store.dir, "srv/dd/containers");
  EXPECT_EQ(o.log.path, "srv/dd/logs/ops");
  Options again;
  s = FromText(o.ToString(), &again, "tostring");
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << o.ToString();
  EXPECT_EQ(again.chunk_store.dir, "srv/dd/containers");
  EXPECT_EQ(again.block_index.path, o.block_index.path);
  EXPECT_EQ(again.chunk_index.table.path, "/ssd/ci");
  EXPECT_EQ(again.log.path, "srv/dd/logs/ops");
  EXPECT_EQ(again.ToString(), o.ToString());
}

// A gateway slot self-fences (a lost lease is lost for good: another
// gateway may have taken the slot over); a store without slots keeps the
// re-taking lock of issue 14. Every connection of the engine gets the policy.
TEST(OptionsTest, GatewayModeFencesOnLeaseLoss) {
  Options single, slot;
  Status s = FromText("data-dir = /srv/dd\nstorage.backend = rados\n", &single);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(single.rados.fence_on_lease_loss);
  EXPECT_FALSE(single.chunk_store.rados.fence_on_lease_loss);
  EXPECT_FALSE(single.chunk_index.rados.fence_on_lease_loss);
  s = FromText("data-dir = /srv/dd\nstorage.backend = rados\nstorage.rados.gateway = gw-a\n", &slot);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(slot.rados.fence_on_lease_loss);
  EXPECT_TRUE(slot.chunk_store.rados.fence_on_lease_loss);
  EXPECT_TRUE(slot.chunk_index.rados.fence_on_lease_loss);
}

TEST(OptionsTest, LaterEntriesOverrideAndOverridesAreNamed) {
  Config c;
  ASSERT_TRUE(Config::Parse("block-size = 64K\nblock-size = 256K\ndata-dir = /a\n", "t.conf", &c).ok());
  c.Set("data-dir", "/b");
  Options o;
  ASSERT_TRUE(Options::FromConfig(c, &o).ok());
  EXPECT_EQ(o.block_size, 256u << 10);
  EXPECT_EQ(o.data_dir, "/b");
  c.Set("no-such-key", "1");
  Status s = Options::FromConfig(c, &o);
  ASSERT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("no-such-key"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("override"), std::string::npos) << s.ToString();
  // A refused config leaves the output untouched.
  EXPECT_EQ(o.data_dir, "/b");
}

// A relative data-dir in a config file is relative to the file's directory,
// whatever the current directory of the process reading it (dedupv1d, tgtd,
// the tools); the other paths stay relative to data-dir; overrides and
// configs parsed from text are taken as given.
TEST(OptionsTest, RelativeDataDirIsRelativeToTheConfigFile) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dedupv1-options-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "etc");
  const std::string file = (dir / "etc" / "d.conf").string();
  std::ofstream(file) << "data-dir = ../store/./data/\nlog.path = oplog\n";
  const std::filesystem::path old_cwd = std::filesystem::current_path();
  std::filesystem::current_path("/");
  Config c;
  Status s = Config::Load(Env::Default(), file, &c);
  std::filesystem::current_path(old_cwd);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.dir(), (dir / "etc").string());
  Options o;
  ASSERT_TRUE(Options::FromConfig(c, &o).ok());
  EXPECT_EQ(o.data_dir, (dir / "store" / "data").string());
  EXPECT_EQ(o.log.path, (dir / "store" / "data" / "oplog").string());
  c.Set("data-dir", "override-dir");
  ASSERT_TRUE(Options::FromConfig(c, &o).ok());
  EXPECT_EQ(o.data_dir, "override-dir");
  ASSERT_TRUE(FromText("data-dir = rel\n", &o).ok());
  EXPECT_EQ(o.data_dir, "rel");
  std::filesystem::remove_all(dir);
}

// storage.rados.dedup-scope (design-15 2.4): gateway by default; cluster
// only for a gateway slot of a rados store.
TEST(OptionsTest, DedupScope) {
  Options o;
  ASSERT_TRUE(FromText("data-dir = /srv/dd\nstorage.backend = rados\nstorage.rados.gateway = gw-a\n", &o).ok());
  EXPECT_FALSE(o.chunk_index.cluster_scope);
  EXPECT_EQ(o.chunk_index.claims.claim_hold_ms, 30000u);
  Options c;
  Status s = FromText("data-dir = /srv/dd\nstorage.backend = rados\nstorage.rados.gateway = gw-a\n"
                      "storage.rados.dedup-scope = cluster\nstorage.rados.claim-hold = 5s\n",
                      &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(c.chunk_index.cluster_scope);
  EXPECT_EQ(c.chunk_index.claims.claim_hold_ms, 5000u);
  EXPECT_NE(c.ToString().find("storage.rados.dedup-scope = cluster\n"), std::string::npos);
  ExpectRefused("data-dir = /srv/dd\nstorage.backend = rados\nstorage.rados.dedup-scope = cluster\n",
                {"storage.rados.dedup-scope", "storage.rados.gateway"});
  ExpectRefused("data-dir = /srv/dd\nstorage.rados.dedup-scope = cluster\n", {"storage.rados.dedup-scope"});
  ExpectRefused("data-dir = /srv/dd\nstorage.rados.dedup-scope = global\n", {"storage.rados.dedup-scope", "global"});
  // The lookup skip threshold (index/lookup_skip_policy.h): a share, 0 = never skip.
  EXPECT_DOUBLE_EQ(c.chunk_index.skip_lookups_below, 0.01);
  ASSERT_TRUE(FromText("data-dir = /srv/dd\nstorage.rados.skip-lookups-below = 0\n", &c).ok());
  EXPECT_DOUBLE_EQ(c.chunk_index.skip_lookups_below, 0.0);
  ExpectRefused("data-dir = /srv/dd\nstorage.rados.skip-lookups-below = 0.7\n",
                {"storage.rados.skip-lookups-below", "0.7"});
  ExpectRefused("data-dir = /srv/dd\nstorage.rados.skip-lookups-below = often\n", {"storage.rados.skip-lookups-below"});
}

TEST(OptionsTest, EveryKeyAppearsInToString) {
  Options o;
  ASSERT_TRUE(FromText("volume = v 1G\n", &o).ok());
  const std::string text = "\n" + o.ToString();
  for (const auto& key : Options::Keys()) {
    EXPECT_NE(text.find("\n" + key + " = "), std::string::npos) << key << " is missing from ToString()";
  }
}

// The engine reads only its own keys: target.* and monitor.* belong to the
// layers above (target/service_options.h validates them), so the engine
// passes over them unread, while any other unknown key stays refused.
TEST(OptionsTest, KeysOfTheLayersAboveArePassedOver) {
  Options o;
  Status s = FromText("volume = v 1G\ntarget.iqn = iqn.2026-11.org.example:t\nmonitor.port = 9002\n", &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(o.volumes.size(), 1u);
  EXPECT_TRUE(Options::IsKeyOfLayerAbove("target.portal"));
  EXPECT_TRUE(Options::IsKeyOfLayerAbove("monitor.token"));
  EXPECT_FALSE(Options::IsKeyOfLayerAbove("targets"));
  for (const auto& key : Options::Keys()) EXPECT_FALSE(Options::IsKeyOfLayerAbove(key)) << key;
  ExpectRefused("volume = v 1G\ntargetiqn = x\n", {"test.conf:2", "targetiqn"});
}

}  // namespace
}  // namespace dedupv1
