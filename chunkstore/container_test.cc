#include "chunkstore/container.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/base/coding.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

struct Chunk {
  Fingerprint fp;
  std::string data;
};

// Chunk |i|: even ones compress well, odd ones are random.
Chunk MakeChunk(int i, size_t size, FingerprintType type = FingerprintType::kSha1) {
  Chunk c;
  if (i % 2 == 0) {
    c.data.assign(size, static_cast<char>('a' + i % 26));
    for (size_t j = 0; j < size; j += 97) c.data[j] = static_cast<char>(i);
  } else {
    std::vector<uint8_t> r = test::RandomBytes(size, static_cast<uint64_t>(i));
    c.data.assign(r.begin(), r.end());
  }
  ComputeFingerprint(type, reinterpret_cast<const uint8_t*>(c.data.data()), c.data.size(), &c.fp);
  return c;
}

bool AddChunk(Container* c, const Chunk& ch, Compression comp) {
  return c->Add(ch.fp, reinterpret_cast<const uint8_t*>(ch.data.data()), ch.data.size(), comp);
}

class ContainerRoundTrip : public ::testing::TestWithParam<Compression> {};

TEST_P(ContainerRoundTrip, SerializeParseRead) {
  Container c(42, 256 << 10, FingerprintType::kSha1);
  std::vector<Chunk> chunks;
  for (int i = 0; i < 20; i++) {
    chunks.push_back(MakeChunk(i, 1000 + 317 * i));
    ASSERT_TRUE(AddChunk(&c, chunks.back(), GetParam()));
  }
  EXPECT_EQ(c.item_count(), 20u);
  if (GetParam() != Compression::kNone) {
    EXPECT_LT(c.data_size(), c.raw_size());
  } else {
    EXPECT_EQ(c.data_size(), c.raw_size());
  }
  std::string bytes;
  ASSERT_TRUE(c.Serialize(&bytes).ok());
  EXPECT_EQ(bytes.size(), c.serialized_size());

  std::unique_ptr<Container> parsed;
  Status s = Container::Parse(42, bytes, &parsed);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(parsed->id(), 42u);
  EXPECT_EQ(parsed->item_count(), 20u);
  EXPECT_EQ(parsed->data_size(), c.data_size());
  for (const Chunk& ch : chunks) {
    EXPECT_TRUE(parsed->Contains(ch.fp));
    std::string data;
    ASSERT_TRUE(parsed->ReadChunk(ch.fp, &data).ok());
    EXPECT_EQ(data, ch.data);
    ASSERT_TRUE(c.ReadChunk(ch.fp, &data).ok());
    EXPECT_EQ(data, ch.data);
  }
  std::vector<Fingerprint> fps = parsed->Fingerprints();
  ASSERT_EQ(fps.size(), 20u);
  EXPECT_TRUE(std::is_sorted(fps.begin(), fps.end()));
  EXPECT_EQ(fps, c.Fingerprints());
  // A parsed container is sealed.
  Chunk extra = MakeChunk(100, 10);
  EXPECT_FALSE(AddChunk(parsed.get(), extra, GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Types, ContainerRoundTrip,
                         ::testing::Values(Compression::kNone, Compression::kZlib,
                                           Compression::kBzip2));

TEST(ContainerTest, Sha256Fingerprints) {
  Container c(5, 64 << 10, FingerprintType::kSha256);
  Chunk ch = MakeChunk(1, 3000, FingerprintType::kSha256);
  ASSERT_TRUE(AddChunk(&c, ch, Compression::kNone));
  // A fingerprint of the wrong size is refused.
  EXPECT_FALSE(AddChunk(&c, MakeChunk(3, 100, FingerprintType::kSha1), Compression::kNone));
  std::string bytes;
  ASSERT_TRUE(c.Serialize(&bytes).ok());
  std::unique_ptr<Container> parsed;
  ASSERT_TRUE(Container::Parse(5, bytes, &parsed).ok());
  EXPECT_EQ(parsed->fp_type(), FingerprintType::kSha256);
  std::string data;
  ASSERT_TRUE(parsed->ReadChunk(ch.fp, &data).ok());
  EXPECT_EQ(data, ch.data);
}

TEST(ContainerTest, RefusesChunkThatWouldExceedCapacity) {
  const size_t capacity = 16 << 10;
  Container c(1, capacity, FingerprintType::kSha1);
  int added = 0;
  Chunk refused;
  for (int i = 1;; i += 2) {  // odd = random, incompressible
    Chunk ch = MakeChunk(i, 4000);
    size_t before = c.serialized_size();
    if (!AddChunk(&c, ch, Compression::kZlib)) {
      EXPECT_EQ(c.serialized_size(), before);
      refused = ch;
      break;
    }
    added++;
    ASSERT_LT(added, 10);
  }
  EXPECT_EQ(added, 4);
  EXPECT_EQ(c.item_count(), 4u);
  EXPECT_LE(c.serialized_size(), capacity);
  EXPECT_FALSE(c.Contains(refused.fp));
  std::string data;
  EXPECT_TRUE(c.ReadChunk(refused.fp, &data).IsNotFound());
  // A small chunk still fits.
  EXPECT_TRUE(AddChunk(&c, MakeChunk(2, 100), Compression::kNone));
  EXPECT_LE(c.serialized_size(), capacity);
  EXPECT_EQ(Container::MaxChunkSize(capacity, FingerprintType::kSha1),
            capacity - Container::kHeaderSize - Container::ItemSize(20));
}

TEST(ContainerTest, DuplicateFingerprintKeepsFirstCopy) {
  Container c(1, 64 << 10, FingerprintType::kSha1);
  Chunk ch = MakeChunk(1, 2000);
  ASSERT_TRUE(AddChunk(&c, ch, Compression::kNone));
  size_t size = c.serialized_size();
  ASSERT_TRUE(AddChunk(&c, ch, Compression::kNone));
  EXPECT_EQ(c.item_count(), 1u);
  EXPECT_EQ(c.serialized_size(), size);
}

class ContainerCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    Container c(17, 64 << 10, FingerprintType::kSha1);
    for (int i = 0; i < 5; i++) ASSERT_TRUE(AddChunk(&c, MakeChunk(i, 1500), Compression::kNone));
    meta_end_ = c.serialized_size() - c.data_size();
    ASSERT_TRUE(c.Serialize(&bytes_).ok());
  }
  Status ParseFlipped(size_t offset) {
    std::string b = bytes_;
    b[offset] ^= 0x01;
    std::unique_ptr<Container> out;
    return Container::Parse(17, b, &out);
  }
  std::string bytes_;
  size_t meta_end_ = 0;
};

TEST_F(ContainerCorruption, MetadataByte) {
  Status s = ParseFlipped(Container::kHeaderSize + 3);  // inside the first item's fingerprint
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("container 17"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("metadata"), std::string::npos) << s.message();
}

TEST_F(ContainerCorruption, DataByte) {
  Status s = ParseFlipped(meta_end_ + 700);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("container 17"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("data"), std::string::npos) << s.message();
}

TEST_F(ContainerCorruption, EveryHeaderByteIsChecked) {
  for (size_t i = 0; i < Container::kHeaderSize; i++) {
    Status s = ParseFlipped(i);
    EXPECT_TRUE(s.IsCorruption()) << "byte " << i << ": " << s.ToString();
  }
}

TEST_F(ContainerCorruption, TruncatedAndEmpty) {
  std::unique_ptr<Container> out;
  EXPECT_TRUE(Container::Parse(17, bytes_.substr(0, bytes_.size() - 1), &out).IsCorruption());
  EXPECT_TRUE(Container::Parse(17, bytes_.substr(0, 10), &out).IsCorruption());
  EXPECT_TRUE(Container::Parse(17, std::string(), &out).IsCorruption());
  EXPECT_TRUE(Container::Parse(17, std::string(bytes_.size(), '\0'), &out).IsCorruption());
}

TEST_F(ContainerCorruption, WrongIdIsRefused) {
  std::unique_ptr<Container> out;
  Status s = Container::Parse(18, bytes_, &out);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("container 18"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("17"), std::string::npos) << s.message();
}

TEST(ContainerTest, AliasesAnswerAndSurviveRoundTrip) {
  Container c(30, 64 << 10, FingerprintType::kSha1);
  Chunk ch = MakeChunk(4, 1000);
  ASSERT_TRUE(AddChunk(&c, ch, Compression::kNone));
  ASSERT_TRUE(c.SetAliases({12, 25}));
  EXPECT_TRUE(c.AnswersTo(25));
  EXPECT_FALSE(c.AnswersTo(26));
  std::string bytes;
  ASSERT_TRUE(c.Serialize(&bytes).ok());
  std::unique_ptr<Container> parsed;
  ASSERT_TRUE(Container::Parse(12, bytes, &parsed).ok());
  EXPECT_EQ(parsed->id(), 30u);
  EXPECT_EQ(parsed->aliases(), (std::vector<ContainerId>{12, 25}));
  std::string data;
  ASSERT_TRUE(parsed->ReadChunk(ch.fp, &data).ok());
  EXPECT_EQ(data, ch.data);
  ASSERT_TRUE(Container::Parse(30, bytes, &parsed).ok());
  EXPECT_TRUE(Container::Parse(13, bytes, &parsed).IsCorruption());
  // Aliases count against capacity.
  Container small(1, Container::kHeaderSize + 16, FingerprintType::kSha1);
  EXPECT_TRUE(small.SetAliases({2, 3}));
  EXPECT_FALSE(small.SetAliases({2, 3, 4}));
  EXPECT_EQ(small.aliases().size(), 2u);
}

TEST(ContainerTest, ItemsAreSortedInSerializedForm) {
  Container c(3, 64 << 10, FingerprintType::kSha1);
  for (int i = 0; i < 10; i++) ASSERT_TRUE(AddChunk(&c, MakeChunk(i, 200), Compression::kNone));
  std::string bytes;
  ASSERT_TRUE(c.Serialize(&bytes).ok());
  const size_t item = Container::ItemSize(20);
  for (int i = 1; i < 10; i++) {
    const char* prev = bytes.data() + Container::kHeaderSize + (i - 1) * item;
    const char* cur = prev + item;
    EXPECT_LT(std::memcmp(prev, cur, 20), 0) << "item " << i;
  }
}

}  // namespace
}  // namespace dedupv1
