#include "filters/filter_chain.h"

#include <gtest/gtest.h>

#include <memory>
#include <unordered_map>
#include <vector>

#include "filters/block_index_filter.h"
#include "filters/zero_chunk_filter.h"

namespace dedupv1 {
namespace {

// A filter that answers with a fixed result and records whether it ran.
class ScriptedFilter : public Filter {
 public:
  ScriptedFilter(const char* name, FilterResult max, FilterResult answer, int* calls,
                 int* new_updates = nullptr, int* known_updates = nullptr)
      : name_(name), max_(max), answer_(answer), calls_(calls), new_(new_updates),
        known_(known_updates) {}
  const char* name() const override { return name_; }
  FilterResult MaxResult() const override { return max_; }
  FilterResult Check(ChunkRequest* chunk, Status* error) override {
    (*calls_)++;
    if (answer_ == FilterResult::kError) *error = Status::IOError("scripted failure");
    if (answer_ == FilterResult::kStrongMaybe || answer_ == FilterResult::kExisting) chunk->container = 7;
    return answer_;
  }
  Status UpdateNew(const ChunkRequest&) override {
    if (new_) (*new_)++;
    return Status::OK();
  }
  Status UpdateKnown(const ChunkRequest&) override {
    if (known_) (*known_)++;
    return Status::OK();
  }

 private:
  const char* name_;
  FilterResult max_, answer_;
  int* calls_;
  int* new_;
  int* known_;
};

using R = FilterResult;

struct Case {
  std::vector<std::pair<R, R>> filters;  // (max result, answer)
  R expected;
  std::vector<int> expected_calls;
};

TEST(FilterChainTest, DecisionTable) {
  const std::vector<Case> cases = {
      // NOT-EXISTING stops the chain.
      {{{R::kNotExisting, R::kNotExisting}, {R::kStrongMaybe, R::kStrongMaybe}}, R::kNotExisting, {1, 0}},
      // WEAK-MAYBE continues; STRONG-MAYBE skips STRONG-capable filters, runs EXISTING-capable ones.
      {{{R::kNotExisting, R::kWeakMaybe}, {R::kStrongMaybe, R::kStrongMaybe},
        {R::kStrongMaybe, R::kNotExisting}, {R::kExisting, R::kExisting}},
       R::kExisting, {1, 1, 0, 1}},
      // STRONG-MAYBE at the end is the final answer (known).
      {{{R::kStrongMaybe, R::kStrongMaybe}, {R::kStrongMaybe, R::kNotExisting}}, R::kStrongMaybe, {1, 0}},
      // EXISTING stops at once.
      {{{R::kExisting, R::kExisting}, {R::kNotExisting, R::kNotExisting}}, R::kExisting, {1, 0}},
      // Only WEAK-MAYBE answers: the chain cannot decide (treated as new).
      {{{R::kNotExisting, R::kWeakMaybe}, {R::kStrongMaybe, R::kWeakMaybe}}, R::kWeakMaybe, {1, 1}},
      // ERROR stops the chain.
      {{{R::kStrongMaybe, R::kError}, {R::kExisting, R::kExisting}}, R::kError, {1, 0}},
      // After STRONG-MAYBE a NOT-EXISTING-only filter (bloom) is skipped too.
      {{{R::kStrongMaybe, R::kStrongMaybe}, {R::kNotExisting, R::kNotExisting}}, R::kStrongMaybe, {1, 0}},
  };
  for (size_t c = 0; c < cases.size(); c++) {
    const Case& tc = cases[c];
    std::vector<int> calls(tc.filters.size(), 0);
    FilterChain chain;
    for (size_t i = 0; i < tc.filters.size(); i++) {
      chain.Add(std::make_unique<ScriptedFilter>("f", tc.filters[i].first, tc.filters[i].second, &calls[i]));
    }
    ChunkRequest chunk;
    Status error;
    R r = chain.Decide(&chunk, &error);
    EXPECT_EQ(r, tc.expected) << "case " << c << ": got " << FilterResultName(r);
    EXPECT_EQ(calls, tc.expected_calls) << "case " << c;
    EXPECT_EQ(r == R::kError, !error.ok()) << "case " << c;
    if (r == R::kStrongMaybe || r == R::kExisting) {
      EXPECT_EQ(chunk.container, 7u);
    }
  }
}

TEST(FilterChainTest, CountsResultsAndSkips) {
  int a = 0, b = 0;
  FilterChain chain;
  chain.Add(std::make_unique<ScriptedFilter>("a", R::kStrongMaybe, R::kStrongMaybe, &a));
  chain.Add(std::make_unique<ScriptedFilter>("b", R::kStrongMaybe, R::kNotExisting, &b));
  ChunkRequest chunk;
  Status error;
  for (int i = 0; i < 3; i++) chain.Decide(&chunk, &error);
  EXPECT_EQ(chain.counters(0).strong_maybe.load(), 3u);
  EXPECT_EQ(chain.counters(1).skipped.load(), 3u);
  EXPECT_EQ(chain.Describe(), "a,b");
}

TEST(FilterChainTest, UpdatesReachEveryFilter) {
  int calls = 0, n1 = 0, n2 = 0, k1 = 0, k2 = 0;
  FilterChain chain;
  chain.Add(std::make_unique<ScriptedFilter>("a", R::kNotExisting, R::kNotExisting, &calls, &n1, &k1));
  chain.Add(std::make_unique<ScriptedFilter>("b", R::kStrongMaybe, R::kStrongMaybe, &calls, &n2, &k2));
  ChunkRequest chunk;
  ASSERT_TRUE(chain.UpdateNew(chunk).ok());
  ASSERT_TRUE(chain.UpdateKnown(chunk).ok());
  EXPECT_EQ(n1 + n2, 2);
  EXPECT_EQ(k1 + k2, 2);
}

TEST(ZeroChunkFilterTest, ZeroChunksExistWithoutStorage) {
  ZeroChunkFilter f;
  ChunkRequest zero;
  zero.is_zero = true;
  Status e;
  EXPECT_EQ(f.Check(&zero, &e), R::kExisting);
  EXPECT_EQ(zero.container, kZeroContainer);
  ChunkRequest data;
  EXPECT_EQ(f.Check(&data, &e), R::kWeakMaybe);
}

TEST(BlockIndexFilterTest, MatchesPreviousChunksOfTheBlock) {
  BlockIndexFilter f;
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> prev;
  Fingerprint a, b;
  ComputeFingerprint(FingerprintType::kSha1, reinterpret_cast<const uint8_t*>("a"), 1, &a);
  ComputeFingerprint(FingerprintType::kSha1, reinterpret_cast<const uint8_t*>("b"), 1, &b);
  prev[a] = 42;
  ChunkRequest chunk;
  chunk.previous_chunks = &prev;
  chunk.fp = a;
  Status e;
  EXPECT_EQ(f.Check(&chunk, &e), R::kStrongMaybe);
  EXPECT_EQ(chunk.container, 42u);
  ChunkRequest other;
  other.previous_chunks = &prev;
  other.fp = b;
  EXPECT_EQ(f.Check(&other, &e), R::kWeakMaybe);
}

// Records the chunks PrepareRun and FinishRun hand it.
class BatchingFilter : public Filter {
 public:
  const char* name() const override { return "batching"; }
  FilterResult MaxResult() const override { return FilterResult::kStrongMaybe; }
  FilterResult Check(ChunkRequest*, Status*) override { return FilterResult::kWeakMaybe; }
  bool WantsRun() const override { return true; }
  void PrepareRun(const std::vector<const ChunkRequest*>& chunks) override { prepared = chunks; }
  void FinishRun(const std::vector<const ChunkRequest*>& chunks) override { finished = chunks; }
  std::vector<const ChunkRequest*> prepared, finished;
};

TEST(FilterChainTest, PrepareRunHandsOnlyUnsettledChunksAndFinishesThem) {
  int calls = 0;
  {
    FilterChain plain;
    plain.Add(std::make_unique<ZeroChunkFilter>());
    plain.Add(std::make_unique<ScriptedFilter>("f", R::kStrongMaybe, R::kWeakMaybe, &calls));
    std::vector<ChunkRequest> chunks(2);
    EXPECT_EQ(plain.PrepareRun(chunks), nullptr);  // no filter batches: no work at all
  }
  FilterChain chain;
  chain.Add(std::make_unique<ZeroChunkFilter>());
  chain.Add(std::make_unique<BlockIndexFilter>());
  auto batching = std::make_unique<BatchingFilter>();
  BatchingFilter* b = batching.get();
  chain.Add(std::move(batching));
  std::unordered_map<Fingerprint, ContainerId, FingerprintHasher> previous;
  std::vector<ChunkRequest> chunks(4);
  for (size_t i = 0; i < chunks.size(); i++) {
    chunks[i].fp.size = 20;
    chunks[i].fp.bytes[0] = static_cast<uint8_t>(i + 1);
    chunks[i].previous_chunks = &previous;
  }
  chunks[0].is_zero = true;            // the zero-chunk filter settles it
  previous[chunks[2].fp] = 9;          // the block-index filter settles it
  {
    auto run = chain.PrepareRun(chunks);
    ASSERT_NE(run, nullptr);
    EXPECT_EQ(b->prepared, (std::vector<const ChunkRequest*>{&chunks[1], &chunks[3]}));
    EXPECT_TRUE(b->finished.empty());
  }
  EXPECT_EQ(b->finished, b->prepared);
}

}  // namespace
}  // namespace dedupv1
