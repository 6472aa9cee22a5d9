#include "core/base/chunker.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>
#include <unordered_set>

#include "core/base/fingerprint.h"
#include "core/base/chunker_registry.h"
#include "core/base/fastcdc_chunker.h"
#include "core/base/rabin_chunker.h"
#include "core/base/static_chunker.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

std::unique_ptr<Chunker> MakeChunker(const ChunkerOptions& o) {
  std::unique_ptr<Chunker> c;
  Status s = Chunker::Create(o, &c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return c;
}

ChunkerOptions Rabin(size_t min, size_t avg, size_t max) {
  ChunkerOptions o;
  o.name = "rabin";
  o.min_size = min;
  o.avg_size = avg;
  o.max_size = max;
  return o;
}

ChunkerOptions FastCdc(size_t min, size_t avg, size_t max) {
  ChunkerOptions o = Rabin(min, avg, max);
  o.name = "fastcdc";
  return o;
}

ChunkerOptions Static(size_t size) {
  ChunkerOptions o;
  o.name = "static";
  o.min_size = size;
  o.avg_size = size;
  o.max_size = size;
  return o;
}

std::vector<size_t> SplitAll(const Chunker& c, const std::vector<uint8_t>& data, bool final = true) {
  std::vector<size_t> ends;
  c.Split(data.data(), data.size(), final, &ends);
  return ends;
}

// The Rabin fingerprint of a 48-byte window straight from the definition:
// polynomial long division, bit by bit, with no tables.
uint64_t ReferenceWindowFingerprint(const uint8_t* w) {
  uint64_t r = 0;
  for (size_t i = 0; i < RabinChunker::kWindowSize; i++) {
    for (int bit = 7; bit >= 0; bit--) {
      r = (r << 1) | ((w[i] >> bit) & 1);
      if (r >> 63) r ^= RabinChunker::kPolynomial;
    }
  }
  return r;
}

// Content-defined chunking straight from its definition, for
// cross-checking: a chunk ends at the first end e (its length L in [min,
// max]) where |is_end(e, L)| holds, else at max, or its bytes stay the
// unfinished tail.
template <class IsEnd>
std::vector<size_t> ReferenceSplitBy(const ChunkerOptions& o, const std::vector<uint8_t>& data, bool final,
                                     IsEnd is_end) {
  std::vector<size_t> ends;
  const size_t n = data.size();
  size_t start = 0;
  while (n - start >= o.min_size) {
    size_t found = 0;
    for (size_t len = o.min_size; len <= std::min(n - start, o.max_size); len++) {
      if (is_end(start + len, len)) {
        found = start + len;
        break;
      }
    }
    if (found == 0) {
      if (n - start < o.max_size) break;
      found = start + o.max_size;
    }
    ends.push_back(found);
    start = found;
  }
  if (final && n > start) ends.push_back(n);
  return ends;
}

// Rabin's rule: the window's fingerprint has every bit of avg - 1 set.
std::vector<size_t> ReferenceSplit(const ChunkerOptions& o, const std::vector<uint8_t>& data, bool final) {
  const uint64_t mask = o.avg_size - 1;
  return ReferenceSplitBy(o, data, final, [&](size_t e, size_t) {
    return (ReferenceWindowFingerprint(&data[e - RabinChunker::kWindowSize]) & mask) == mask;
  });
}

// FastCDC's rule: the gear hash of the 64 bytes that end a chunk of L
// bytes, recomputed for every L, has no bit of the mask of log2(avg) + 2
// bits while L < avg, of log2(avg) - 2 bits from avg on.
std::vector<size_t> ReferenceFastCdcSplit(const ChunkerOptions& o, const std::vector<uint8_t>& data, bool final) {
  int bits = 0;
  while ((size_t{1} << (bits + 1)) <= o.avg_size) bits++;
  const uint64_t small = FastCdcChunker::Mask(bits + 2), large = FastCdcChunker::Mask(bits - 2);
  return ReferenceSplitBy(o, data, final, [&](size_t e, size_t len) {
    uint64_t fp = 0;
    for (size_t j = e - FastCdcChunker::kWindowSize; j < e; j++) fp += FastCdcChunker::Gear(data[j]) << (e - 1 - j);
    return (fp & (len < o.avg_size ? small : large)) == 0;
  });
}

TEST(ChunkerTest, ValidatesOptions) {
  std::unique_ptr<Chunker> c;
  EXPECT_TRUE(Chunker::Create(ChunkerOptions(), &c).ok());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->options().avg_size, 8192u);

  auto expect_invalid = [](const ChunkerOptions& o, const std::string& names) {
    std::unique_ptr<Chunker> bad;
    Status s = Chunker::Create(o, &bad);
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_NE(s.message().find(names), std::string::npos) << s.ToString();
    EXPECT_EQ(bad, nullptr);
  };
  expect_invalid(Rabin(0, 8192, 32768), "min_size 0");
  expect_invalid(Rabin(9000, 8192, 32768), "min_size 9000");
  expect_invalid(Rabin(2048, 65536, 32768), "avg_size 65536");
  expect_invalid(Rabin(2048, 6000, 32768), "avg_size 6000");
  expect_invalid(Rabin(32, 8192, 32768), "min_size 32");
  expect_invalid(Rabin(2048, 8192, (1 << 20) + 1), "max_size 1048577");
  expect_invalid(Static(0), "min_size 0");
  expect_invalid(Static(2 << 20), "max_size 2097152");

  // Rabin-only rules do not apply to the static chunker.
  EXPECT_TRUE(Chunker::Create(Static(6000), &c).ok());
  EXPECT_TRUE(Chunker::Create(Static(16), &c).ok());
  EXPECT_TRUE(Chunker::Create(Rabin(64, 64, 64), &c).ok());
  EXPECT_TRUE(Chunker::Create(Rabin(2048, 8192, 1 << 20), &c).ok());

  // FastCDC: avg a power of two of at least 256 (masks of log2(avg) - 2
  // bits), room for its 64-byte window before min.
  expect_invalid(FastCdc(2048, 6000, 32768), "avg_size 6000");
  expect_invalid(FastCdc(64, 128, 1024), "avg_size 128");
  expect_invalid(FastCdc(32, 8192, 32768), "min_size 32");
  EXPECT_TRUE(Chunker::Create(FastCdc(64, 256, 1024), &c).ok());

  // Chunkers are chosen by their registry name.
  ChunkerOptions unknown;
  unknown.name = "gear";
  expect_invalid(unknown, "unknown kind gear");
}

TEST(ChunkerTest, RegistryNamesBuildChunkersOfThatKind) {
  ASSERT_EQ(ChunkerNames(),
            (std::vector<std::string>{RabinChunker::kName, StaticChunker::kName, FastCdcChunker::kName}));
  for (const std::string& name : ChunkerNames()) {
    ChunkerOptions o;
    o.name = name;
    std::unique_ptr<Chunker> c;
    ASSERT_TRUE(Chunker::Create(o, &c).ok()) << name;
    EXPECT_EQ(c->options().name, name);
  }
  EXPECT_EQ(FindChunker("gear"), nullptr);
}

TEST(ChunkerTest, WindowFingerprintMatchesPolynomialDefinition) {
  std::vector<uint8_t> data = test::RandomBytes(48 * 200, 7);
  for (size_t i = 0; i + 48 <= data.size(); i += 48) {
    ASSERT_EQ(RabinChunker::WindowFingerprint(&data[i]), ReferenceWindowFingerprint(&data[i])) << i;
  }
  std::vector<uint8_t> ff(48, 0xff);
  EXPECT_EQ(RabinChunker::WindowFingerprint(ff.data()), ReferenceWindowFingerprint(ff.data()));
  // Residues mod a degree-63 polynomial fit in 63 bits.
  EXPECT_EQ(RabinChunker::WindowFingerprint(ff.data()) >> 63, 0u);
}

TEST(ChunkerTest, RabinBoundariesMatchReferenceDefinition) {
  // Small chunks so that many boundaries, forced cuts and tails are checked.
  std::vector<uint8_t> data = test::RandomBytes(48 << 10, 11);
  // A zero run long enough to force max-size cuts, and a low-entropy stretch.
  std::fill(data.begin() + 10000, data.begin() + 14000, 0);
  for (size_t i = 20000; i < 26000; i++) data[i] = static_cast<uint8_t>(i % 7);
  for (const ChunkerOptions& o : {Rabin(64, 256, 1024), Rabin(100, 128, 300), Rabin(64, 64, 64)}) {
    auto c = MakeChunker(o);
    for (bool final : {false, true}) {
      EXPECT_EQ(SplitAll(*c, data, final), ReferenceSplit(o, data, final))
          << "min " << o.min_size << " avg " << o.avg_size << " final " << final;
    }
  }
}

void ExpectSizesWithinBounds(const Chunker& c, const std::vector<uint8_t>& data) {
  const ChunkerOptions& o = c.options();
  std::vector<size_t> ends = SplitAll(c, data);
  ASSERT_FALSE(ends.empty());
  EXPECT_EQ(ends.back(), data.size());
  size_t prev = 0;
  for (size_t i = 0; i < ends.size(); i++) {
    ASSERT_GT(ends[i], prev);
    size_t size = ends[i] - prev;
    if (i + 1 < ends.size()) {
      ASSERT_GE(size, o.min_size) << "chunk " << i;
      ASSERT_LE(size, o.max_size) << "chunk " << i;
    } else {
      ASSERT_LE(size, o.max_size);
    }
    prev = ends[i];
  }
}

// The masks and the gear table are part of every stored chunk's identity:
// a change to either moves every boundary. Golden values hold them.
TEST(ChunkerTest, FastCdcMasksAndGearAreFixed) {
  EXPECT_EQ(FastCdcChunker::Mask(6), 0xaaa0000000000000ULL);
  EXPECT_EQ(FastCdcChunker::Mask(11), 0xaaaaa80000000000ULL);
  EXPECT_EQ(FastCdcChunker::Mask(15), 0xaaaaaaa800000000ULL);
  for (int bits = 6; bits <= FastCdcChunker::kMaxMaskBits; bits++) {
    EXPECT_EQ(__builtin_popcountll(FastCdcChunker::Mask(bits)), bits);
    EXPECT_EQ(FastCdcChunker::Mask(bits - 4) & ~FastCdcChunker::Mask(bits), 0u) << "nested at " << bits;
  }
  // SplitMix64 of seed + byte, seed "dedupv1g" (checked with an independent
  // SplitMix64 in Python), and the boundaries of one fixed input.
  EXPECT_EQ(FastCdcChunker::Gear(0), 0xfc6715aaf659b6b3ULL);
  EXPECT_EQ(FastCdcChunker::Gear(255), 0x764c968648a852a1ULL);
  auto c = MakeChunker(FastCdc(2048, 8192, 32768));
  const std::vector<size_t> ends = SplitAll(*c, test::RandomBytes(65536, 23), false);
  EXPECT_EQ(ends, (std::vector<size_t>{19435, 27945, 36535, 47684, 50247, 58284}));
}

TEST(ChunkerTest, FastCdcBoundariesMatchReferenceDefinition) {
  std::vector<uint8_t> data = test::RandomBytes(300000, 21);
  std::fill(data.begin() + 100000, data.begin() + 140000, 0);  // forced cuts at max
  // Low-entropy text: many candidate positions close together.
  for (size_t i = 200000; i < 260000; i++) data[i] = static_cast<uint8_t>("abcabcabd"[i % 9]);
  for (const ChunkerOptions& o : {FastCdc(2048, 8192, 32768), FastCdc(64, 256, 1024), FastCdc(4096, 4096, 8192)}) {
    auto c = MakeChunker(o);
    for (bool final : {false, true}) {
      EXPECT_EQ(SplitAll(*c, data, final), ReferenceFastCdcSplit(o, data, final)) << "avg " << o.avg_size;
    }
  }
}

// Normalized chunking pulls sizes towards avg: on random data the mean is
// near avg, and few chunks are much smaller or larger than Rabin's
// geometric tail would make them.
TEST(ChunkerTest, FastCdcSizesAreNormalized) {
  auto c = MakeChunker(FastCdc(2048, 8192, 32768));
  std::vector<uint8_t> data = test::RandomBytes(8 << 20, 22);
  std::vector<size_t> ends = SplitAll(*c, data, false);
  ASSERT_GT(ends.size(), 500u);
  double mean = static_cast<double>(ends.back()) / ends.size();
  EXPECT_GT(mean, 0.8 * 8192);
  EXPECT_LT(mean, 1.4 * 8192);
  size_t outside = 0;  // outside [avg / 2, 2 avg]
  size_t prev = 0;
  for (size_t e : ends) {
    const size_t len = e - prev;
    if (len < 4096 || len > 16384) outside++;
    prev = e;
  }
  EXPECT_LT(outside * 100, ends.size() * 20) << outside << " of " << ends.size();
}

TEST(ChunkerTest, ChunkSizesWithinMinMax) {
  auto c = MakeChunker(ChunkerOptions());
  ExpectSizesWithinBounds(*c, test::RandomBytes(4 << 20, 1));
  std::vector<uint8_t> zeros(1 << 20, 0);
  ExpectSizesWithinBounds(*c, zeros);
  // All-zero data never hits the mask: every chunk is forced at max_size.
  std::vector<size_t> ends = SplitAll(*c, zeros);
  EXPECT_EQ(ends.size(), (1u << 20) / 32768);
  std::vector<uint8_t> text;
  for (size_t i = 0; i < (1 << 20); i++) text.push_back(static_cast<uint8_t>("abcabcabd"[i % 9]));
  ExpectSizesWithinBounds(*c, text);
  auto big = MakeChunker(Rabin(4096, 16384, 65536));
  ExpectSizesWithinBounds(*big, test::RandomBytes(2 << 20, 2));
  auto gear = MakeChunker(FastCdc(2048, 8192, 32768));
  ExpectSizesWithinBounds(*gear, test::RandomBytes(4 << 20, 1));
  ExpectSizesWithinBounds(*gear, zeros);
  ExpectSizesWithinBounds(*gear, text);
  // The hash of zeros is a constant that hits no mask: forced cuts only.
  EXPECT_EQ(SplitAll(*gear, zeros).size(), (1u << 20) / 32768);
}

TEST(ChunkerTest, Deterministic) {
  std::vector<uint8_t> data = test::RandomBytes(1 << 20, 3);
  auto a = MakeChunker(ChunkerOptions());
  auto b = MakeChunker(ChunkerOptions());
  std::vector<size_t> ea = SplitAll(*a, data);
  EXPECT_EQ(ea, SplitAll(*a, data));
  EXPECT_EQ(ea, SplitAll(*b, data));
  EXPECT_GT(ea.size(), 50u);
  // Different content gives different boundaries.
  EXPECT_NE(ea, SplitAll(*a, test::RandomBytes(1 << 20, 4)));
}

// Feeds |data| in random pieces the way the engine does (unfinished tail,
// then new bytes) and returns the absolute chunk ends.
std::vector<size_t> SplitStreaming(const Chunker& c, const std::vector<uint8_t>& data, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<size_t> result;
  std::vector<uint8_t> pending;  // starts at a chunk start
  size_t pending_offset = 0;     // absolute offset of pending[0]
  size_t pos = 0;
  while (pos < data.size()) {
    size_t piece = std::min<size_t>(data.size() - pos, 1 + rng() % 70000);
    pending.insert(pending.end(), data.begin() + pos, data.begin() + pos + piece);
    pos += piece;
    bool final = pos == data.size();
    std::vector<size_t> ends;
    c.Split(pending.data(), pending.size(), final, &ends);
    size_t consumed = ends.empty() ? 0 : ends.back();
    for (size_t e : ends) result.push_back(pending_offset + e);
    if (!final) {
      EXPECT_LT(pending.size() - consumed, c.options().max_size);
    } else {
      EXPECT_EQ(consumed, pending.size());
    }
    pending.erase(pending.begin(), pending.begin() + consumed);
    pending_offset += consumed;
  }
  return result;
}

TEST(ChunkerTest, StreamingEqualsOneShot) {
  std::vector<uint8_t> data = test::RandomBytes(2 << 20, 5);
  std::fill(data.begin() + 300000, data.begin() + 400000, 0);  // forced cuts too
  for (const ChunkerOptions& o : {ChunkerOptions(), Rabin(64, 256, 1024), Static(4096), Static(5000),
                                  FastCdc(2048, 8192, 32768), FastCdc(64, 256, 1024)}) {
    auto c = MakeChunker(o);
    std::vector<size_t> whole = SplitAll(*c, data);
    for (uint64_t seed : {1, 2, 3}) {
      EXPECT_EQ(SplitStreaming(*c, data, seed), whole) << "avg " << o.avg_size << " seed " << seed;
    }
  }
}

TEST(ChunkerTest, EmptyAndExactInputs) {
  auto c = MakeChunker(ChunkerOptions());
  std::vector<size_t> ends;
  c->Split(nullptr, 0, true, &ends);
  EXPECT_TRUE(ends.empty());
  std::vector<uint8_t> small = test::RandomBytes(100, 1);
  c->Split(small.data(), small.size(), false, &ends);
  EXPECT_TRUE(ends.empty());
  c->Split(small.data(), small.size(), true, &ends);
  EXPECT_EQ(ends, std::vector<size_t>{100});
  // Split appends: existing entries are kept.
  c->Split(small.data(), small.size(), true, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{100, 100}));
  // Final splitting of data that ends exactly at a boundary adds no empty chunk.
  std::vector<uint8_t> zeros(65536, 0);
  ends.clear();
  c->Split(zeros.data(), zeros.size(), true, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{32768, 65536}));
}

std::vector<Fingerprint> ChunkFingerprints(const Chunker& c, const std::vector<uint8_t>& data) {
  std::vector<Fingerprint> fps;
  size_t prev = 0;
  for (size_t e : SplitAll(c, data)) {
    Fingerprint fp;
    ComputeFingerprint(FingerprintType::kSha1, &data[prev], e - prev, &fp);
    fps.push_back(fp);
    prev = e;
  }
  return fps;
}

TEST(ChunkerTest, BoundariesSurviveInsertion) {
  std::vector<uint8_t> original = test::RandomBytes(4 << 20, 6);
  std::vector<uint8_t> shifted = original;
  shifted.insert(shifted.begin() + 1000, 0x5a);
  for (const ChunkerOptions& o : {ChunkerOptions(), FastCdc(2048, 8192, 32768)}) {
    auto c = MakeChunker(o);
    std::vector<Fingerprint> before = ChunkFingerprints(*c, original);
    std::vector<Fingerprint> after = ChunkFingerprints(*c, shifted);
    std::unordered_set<Fingerprint, FingerprintHasher> after_set(after.begin(), after.end());
    size_t found = 0;
    for (const Fingerprint& fp : before) found += after_set.count(fp);
    EXPECT_GE(found * 100, before.size() * 95) << o.name << ": " << found << " of " << before.size();
  }
  // The static chunker, by contrast, loses every chunk after the insert.
  auto s = MakeChunker(Static(8192));
  std::vector<Fingerprint> sb = ChunkFingerprints(*s, original);
  std::vector<Fingerprint> sa = ChunkFingerprints(*s, shifted);
  std::unordered_set<Fingerprint, FingerprintHasher> sa_set(sa.begin(), sa.end());
  size_t static_found = 0;
  for (const Fingerprint& fp : sb) static_found += sa_set.count(fp);
  EXPECT_LT(static_found, sb.size() / 10);
}

TEST(ChunkerTest, AverageChunkSizeOnRandomData) {
  // On random data a position past min is a boundary with probability
  // p = 1/avg, independently, so the chunk size is min + a geometric
  // distance truncated at max - min:
  //   E[size] = min + avg * (1 - (1 - 1/avg)^(max - min)).
  // With the defaults that is about 10050; the standard deviation of a chunk
  // is below avg, so over ~400 chunks the mean is within +-15% with a margin
  // of about 4 standard errors.
  for (const ChunkerOptions& o : {ChunkerOptions(), Rabin(1024, 4096, 16384)}) {
    auto c = MakeChunker(o);
    std::vector<uint8_t> data = test::RandomBytes(4 << 20, 8);
    std::vector<size_t> ends = SplitAll(*c, data, false);
    ASSERT_FALSE(ends.empty());
    double mean = static_cast<double>(ends.back()) / ends.size();
    double avg = static_cast<double>(o.avg_size);
    double expected = o.min_size + avg * (1 - std::pow(1 - 1 / avg, double(o.max_size - o.min_size)));
    EXPECT_NEAR(mean, expected, 0.15 * expected) << "avg " << o.avg_size;
    EXPECT_GE(mean, 0.5 * avg + o.min_size);
    EXPECT_LE(mean, 2 * avg);
  }
}

TEST(ChunkerTest, StaticChunker) {
  auto c = MakeChunker(Static(4096));
  std::vector<uint8_t> data = test::RandomBytes(10000, 9);
  std::vector<size_t> ends;
  c->Split(data.data(), data.size(), false, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{4096, 8192}));
  ends.clear();
  c->Split(data.data(), data.size(), true, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{4096, 8192, 10000}));
  ends.clear();
  c->Split(data.data(), 8192, true, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{4096, 8192}));
  ends.clear();
  c->Split(data.data(), 4095, false, &ends);
  EXPECT_TRUE(ends.empty());

  ChunkerOptions o = Static(3000);
  o.min_size = 1;
  o.max_size = 3000;
  auto odd = MakeChunker(o);
  ends.clear();
  odd->Split(data.data(), data.size(), true, &ends);
  EXPECT_EQ(ends, (std::vector<size_t>{3000, 6000, 9000, 10000}));
}

TEST(ChunkerTest, ConcurrentSplitsAgree) {
  for (const ChunkerOptions& o : {ChunkerOptions(), FastCdc(2048, 8192, 32768)}) {
    auto c = MakeChunker(o);
    std::vector<uint8_t> data = test::RandomBytes(1 << 20, 10);
    const std::vector<size_t> expected = SplitAll(*c, data);
    std::vector<std::vector<size_t>> results(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < results.size(); t++) {
      threads.emplace_back([&, t] {
        for (int r = 0; r < 3; r++) results[t] = SplitAll(*c, data);
      });
    }
    for (auto& th : threads) th.join();
    for (const auto& r : results) EXPECT_EQ(r, expected) << o.name;
  }
}

}  // namespace
}  // namespace dedupv1
