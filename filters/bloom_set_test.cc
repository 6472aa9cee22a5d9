#include "filters/bloom_set.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

// Fingerprint number |i| of a key space: SHA-1 of the counter, as uniform as
// real chunk fingerprints. Different |space| values never collide.
Fingerprint Key(uint64_t space, uint64_t i) {
  uint8_t buf[16];
  std::memcpy(buf, &space, 8);
  std::memcpy(buf + 8, &i, 8);
  Fingerprint fp;
  ComputeFingerprint(FingerprintType::kSha1, buf, sizeof(buf), &fp);
  return fp;
}

std::unique_ptr<BloomSet> MakeSet(uint64_t n, double p) {
  std::unique_ptr<BloomSet> set;
  Status s = BloomSet::Create(n, p, &set);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return set;
}

TEST(BloomSetTest, SizedFromEntriesAndRate) {
  auto set = MakeSet(100000, 0.01);
  const double ln2 = std::log(2.0);
  const double m = -100000 * std::log(0.01) / (ln2 * ln2);  // ~958506 bits
  EXPECT_GE(static_cast<double>(set->bit_count()), m);
  EXPECT_LT(static_cast<double>(set->bit_count()), m + 65);
  EXPECT_EQ(set->bit_count() % 64, 0u);
  EXPECT_EQ(set->hash_count(), 7);  // ceil(log2(100))
  EXPECT_EQ(set->memory_bytes(), set->bit_count() / 8);
  EXPECT_EQ(set->added(), 0u);
  EXPECT_EQ(MakeSet(1000, 0.001)->hash_count(), 10);
  EXPECT_EQ(MakeSet(1, 0.5)->bit_count(), 64u);
}

TEST(BloomSetTest, RefusesBadParameters) {
  std::unique_ptr<BloomSet> set;
  EXPECT_TRUE(BloomSet::Create(0, 0.01, &set).IsInvalidArgument());
  EXPECT_TRUE(BloomSet::Create(100, 0.0, &set).IsInvalidArgument());
  EXPECT_TRUE(BloomSet::Create(100, 1.0, &set).IsInvalidArgument());
  EXPECT_TRUE(BloomSet::Create(100, -0.5, &set).IsInvalidArgument());
  EXPECT_TRUE(BloomSet::Create(100, 1.5, &set).IsInvalidArgument());
  EXPECT_TRUE(BloomSet::Create(100, std::numeric_limits<double>::quiet_NaN(), &set).IsInvalidArgument());
  // 10^12 entries at 10^-9 would need ~5.4 TiB.
  Status s = BloomSet::Create(1000000000000ULL, 1e-9, &set);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(set, nullptr);
}

TEST(BloomSetTest, NoFalseNegativesAndFalsePositiveRateNearTarget) {
  for (double p : {0.01, 0.001}) {
    const uint64_t n = 100000;
    auto set = MakeSet(n, p);
    for (uint64_t i = 0; i < n; i++) set->Add(Key(1, i));
    EXPECT_EQ(set->added(), n);
    for (uint64_t i = 0; i < n; i++) ASSERT_TRUE(set->MightContain(Key(1, i))) << i;
    uint64_t false_positives = 0;
    const uint64_t probes = 100000;
    for (uint64_t i = 0; i < probes; i++) false_positives += set->MightContain(Key(2, i));
    const double rate = static_cast<double>(false_positives) / probes;
    EXPECT_LT(rate, 2 * p) << "target " << p;
    // A set that answers "maybe" too rarely is oversized or not hashing all bits.
    EXPECT_GT(rate, p / 4) << "target " << p;
  }
}

TEST(BloomSetTest, EmptySetContainsNothing) {
  auto set = MakeSet(1000, 0.01);
  for (uint64_t i = 0; i < 1000; i++) ASSERT_FALSE(set->MightContain(Key(3, i)));
}

TEST(BloomSetTest, SaveLoadRoundTrip) {
  test::TempDir dir;
  Env* env = Env::Default();
  auto set = MakeSet(20000, 0.01);
  for (uint64_t i = 0; i < 15000; i++) set->Add(Key(1, i));
  set->Add(Key(1, 0));  // a repeated add still counts
  const std::string path = dir.Sub("bloom");
  ASSERT_TRUE(set->Save(env, path).ok());
  EXPECT_FALSE(env->FileExists(path + ".tmp"));

  std::unique_ptr<BloomSet> loaded;
  Status s = BloomSet::Load(env, path, &loaded);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(loaded->bit_count(), set->bit_count());
  EXPECT_EQ(loaded->hash_count(), set->hash_count());
  EXPECT_EQ(loaded->added(), 15001u);
  for (uint64_t i = 0; i < 15000; i++) ASSERT_TRUE(loaded->MightContain(Key(1, i)));
  size_t maybes = 0;
  for (uint64_t i = 0; i < 20000; i++) {
    ASSERT_EQ(loaded->MightContain(Key(2, i)), set->MightContain(Key(2, i))) << i;
    maybes += loaded->MightContain(Key(2, i));
  }
  EXPECT_LT(maybes, 20000u / 10);

  // The loaded set keeps working, and a second save replaces the first.
  loaded->Add(Key(4, 1));
  ASSERT_TRUE(loaded->Save(env, path).ok());
  std::unique_ptr<BloomSet> again;
  ASSERT_TRUE(BloomSet::Load(env, path, &again).ok());
  EXPECT_TRUE(again->MightContain(Key(4, 1)));
  EXPECT_EQ(again->added(), 15002u);
}

TEST(BloomSetTest, LoadMissingFileFails) {
  test::TempDir dir;
  std::unique_ptr<BloomSet> set;
  Status s = BloomSet::Load(Env::Default(), dir.Sub("nothing"), &set);
  EXPECT_FALSE(s.ok());
  EXPECT_FALSE(s.IsCorruption());
  EXPECT_EQ(set, nullptr);
}

// Saves a small set, applies |damage| to the file bytes, and expects Load to
// report Corruption naming the file.
void ExpectCorruptionAfter(const std::function<void(std::string*)>& damage, const char* what) {
  test::TempDir dir;
  Env* env = Env::Default();
  auto set = MakeSet(5000, 0.01);
  for (uint64_t i = 0; i < 3000; i++) set->Add(Key(1, i));
  const std::string path = dir.Sub("bloom.set");
  ASSERT_TRUE(set->Save(env, path).ok());
  std::string data;
  ASSERT_TRUE(ReadFileToString(env, path, &data).ok());
  damage(&data);
  ASSERT_TRUE(WriteFileAtomically(env, path, data).ok());
  std::unique_ptr<BloomSet> loaded;
  Status s = BloomSet::Load(env, path, &loaded);
  EXPECT_TRUE(s.IsCorruption()) << what << ": " << s.ToString();
  EXPECT_NE(s.message().find(path), std::string::npos) << s.ToString();
  EXPECT_EQ(loaded, nullptr);
}

TEST(BloomSetTest, CorruptFileGivesCorruption) {
  ExpectCorruptionAfter([](std::string* d) { (*d)[d->size() - 100] ^= 0x10; }, "bit flip in bits");
  ExpectCorruptionAfter([](std::string* d) { (*d)[0] = 'X'; }, "bad magic");
  ExpectCorruptionAfter([](std::string* d) { (*d)[24] ^= 1; }, "header field changed");
  ExpectCorruptionAfter([](std::string* d) { (*d)[32] ^= 1; }, "stored crc changed");
  ExpectCorruptionAfter([](std::string* d) { d->resize(d->size() - 8); }, "truncated bits");
  ExpectCorruptionAfter([](std::string* d) { d->resize(20); }, "truncated header");
  ExpectCorruptionAfter([](std::string* d) { d->append(8, '\0'); }, "trailing bytes");
  ExpectCorruptionAfter([](std::string* d) { std::fill(d->begin() + 40, d->end(), '\0'); }, "zeroed bits");
}

TEST(BloomSetTest, FailedSaveKeepsPreviousFile) {
  test::TempDir dir;
  FaultInjectionEnv env(Env::Default());
  const std::string path = dir.Sub("bloom");
  auto set = MakeSet(5000, 0.01);
  set->Add(Key(1, 1));
  ASSERT_TRUE(set->Save(&env, path).ok());

  set->Add(Key(1, 2));
  env.AddRule({FaultInjectionEnv::Op::kWrite, "bloom", FaultInjectionEnv::Fault::kENOSPC, 0, 1, 0});
  Status s = set->Save(&env, path);
  EXPECT_TRUE(s.IsNoSpace()) << s.ToString();
  env.AddRule({FaultInjectionEnv::Op::kSync, "bloom", FaultInjectionEnv::Fault::kEIO, 0, 1, 0});
  s = set->Save(&env, path);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  env.AddRule({FaultInjectionEnv::Op::kWrite, "bloom", FaultInjectionEnv::Fault::kTorn, 0, 1, 100});
  EXPECT_FALSE(set->Save(&env, path).ok());

  std::unique_ptr<BloomSet> loaded;
  ASSERT_TRUE(BloomSet::Load(&env, path, &loaded).ok());
  EXPECT_EQ(loaded->added(), 1u);
  EXPECT_TRUE(loaded->MightContain(Key(1, 1)));
}

TEST(BloomSetTest, ConcurrentAddAndQuery) {
  auto set = MakeSet(40000, 0.01);
  const uint64_t per_thread = 10000;
  // Keys of space 9 are in the set before the threads start; readers must
  // always see them while writers add more.
  for (uint64_t i = 0; i < 1000; i++) set->Add(Key(9, i));
  std::atomic<bool> reader_failed{false};
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < 3; t++) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < per_thread; i++) set->Add(Key(10 + t, i));
    });
  }
  for (int r = 0; r < 2; r++) {
    threads.emplace_back([&] {
      for (int round = 0; round < 5; round++) {
        for (uint64_t i = 0; i < 1000; i++) {
          if (!set->MightContain(Key(9, i))) reader_failed = true;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(reader_failed);
  EXPECT_EQ(set->added(), 1000 + 3 * per_thread);
  for (uint64_t t = 0; t < 3; t++) {
    for (uint64_t i = 0; i < per_thread; i++) ASSERT_TRUE(set->MightContain(Key(10 + t, i)));
  }
}

}  // namespace
}  // namespace dedupv1
