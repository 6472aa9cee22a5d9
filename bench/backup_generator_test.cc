#include "bench/backup_generator.h"

#include "core/base/chunker.h"
#include "core/base/fingerprint.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

namespace dedupv1 {
namespace bench {
namespace {

std::string ReadAll(const Generation& g) {
  std::string s(g.size(), '\0');
  g.Read(0, g.size(), reinterpret_cast<uint8_t*>(s.data()));
  return s;
}

// Share of |data|'s bytes in content-defined chunks already in |known|
// (or earlier in |data|); adds data's chunks to |known|.
double ChunkRedundancy(const std::string& data, std::set<std::string>* known) {
  std::unique_ptr<Chunker> chunker;
  EXPECT_TRUE(Chunker::Create(ChunkerOptions(), &chunker).ok());
  std::vector<size_t> ends;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
  chunker->Split(p, data.size(), true, &ends);
  uint64_t dup = 0;
  size_t start = 0;
  for (size_t end : ends) {
    Fingerprint fp;
    ComputeFingerprint(FingerprintType::kSha1, p + start, end - start, &fp);
    std::string key(reinterpret_cast<const char*>(fp.bytes), fp.size);
    if (!known->insert(key).second) dup += end - start;
    start = end;
  }
  return double(dup) / double(data.size());
}

TEST(BackupGeneratorTest, DeterministicAndRandomAccess) {
  GeneratorParams p;
  BackupGenerator a(p, 42), b(p, 42);
  Generation ga = a.First(8 << 20), gb = b.First(8 << 20);
  EXPECT_EQ(ReadAll(ga), ReadAll(gb));
  Generation na = a.Next(ga), nb = b.Next(gb);
  std::string all = ReadAll(na);
  EXPECT_EQ(all, ReadAll(nb));
  EXPECT_EQ(na.size(), ga.size());
  // Reading any piece equals the same bytes of a whole read.
  for (uint64_t off : {0ULL, 1ULL, 4095ULL, 1000003ULL, (8ULL << 20) - 17}) {
    std::string piece(17, '\0');
    na.Read(off, 17, reinterpret_cast<uint8_t*>(piece.data()));
    EXPECT_EQ(piece, all.substr(off, 17)) << off;
  }
  BackupGenerator c(p, 43);
  EXPECT_NE(ReadAll(c.First(1 << 20)), ReadAll(ga).substr(0, 1 << 20));
}

TEST(BackupGeneratorTest, GroundTruthMatchesTheData) {
  GeneratorParams p;
  p.gen1_run_mean = 64 << 10;
  BackupGenerator gen(p, 7);
  Generation g1 = gen.First(32 << 20);
  EXPECT_EQ(g1.truth().total(), g1.size());
  EXPECT_NEAR(g1.truth().redundancy(), p.internal_redundancy, 0.08);
  Generation g2 = gen.Next(g1);
  EXPECT_EQ(g2.truth().total(), g2.size());
  // Around the paper's 97.6% redundancy against the previous generation.
  EXPECT_GT(g2.truth().redundancy(), 0.95);
  EXPECT_LT(g2.truth().redundancy(), 0.995);
  // The bytes really are that redundant (block-level, so a little less).
  // The bytes really are that redundant, as content-defined chunks see it
  // (a little less: chunks that straddle a run boundary are new).
  std::set<std::string> known;
  double r1 = ChunkRedundancy(ReadAll(g1), &known);
  EXPECT_NEAR(r1, g1.truth().redundancy(), 0.08);
  double r2 = ChunkRedundancy(ReadAll(g2), &known);
  EXPECT_GT(r2, g2.truth().redundancy() - 0.05);
  EXPECT_LE(r2, g2.truth().redundancy() + 0.01);
}

}  // namespace
}  // namespace bench
}  // namespace dedupv1
