#include "chunkstore/container.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "chunkstore/container_testutil.h"
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
  EXPECT_EQ(item, 37u);  // format 2: fingerprint, offset, sizes, compression, crc
  for (int i = 1; i < 10; i++) {
    const char* prev = bytes.data() + Container::kHeaderSize + (i - 1) * item;
    const char* cur = prev + item;
    EXPECT_LT(std::memcmp(prev, cur, 20), 0) << "item " << i;
  }
}

// Format 2: each item carries the CRC32C of the chunk's stored bytes, which
// Locate hands to readers of a single chunk (chunkstore reads ranges).
TEST(ContainerTest, ItemsCarryTheStoredBytesCrc) {
  for (Compression comp : {Compression::kNone, Compression::kZlib}) {
    Container c(8, 256 << 10, FingerprintType::kSha1);
    std::vector<Chunk> chunks;
    for (int i = 0; i < 12; i++) {
      chunks.push_back(MakeChunk(i, 3000 + 11 * i));
      ASSERT_TRUE(AddChunk(&c, chunks.back(), comp));
    }
    std::string bytes;
    ASSERT_TRUE(c.Serialize(&bytes).ok());
    std::unique_ptr<Container> meta;
    ASSERT_TRUE(Container::ParseMetadataOnly(8, bytes, &meta).ok());
    EXPECT_EQ(meta->format_version(), 2);
    for (const Chunk& ch : chunks) {
      Container::ChunkLocation loc;
      ASSERT_TRUE(meta->Locate(ch.fp, &loc).ok());
      EXPECT_TRUE(loc.has_crc);
      EXPECT_EQ(loc.crc, Crc32c(bytes.data() + loc.offset, loc.stored_size)) << CompressionName(comp);
    }
  }
}

// Containers written before format 2 (13-byte items, no crc) are read as
// they are, whole or by their metadata, and keep their format.
TEST(ContainerTest, FormatOneIsStillRead) {
  Container c(9, 256 << 10, FingerprintType::kSha1);
  std::vector<Chunk> chunks;
  for (int i = 0; i < 10; i++) {
    chunks.push_back(MakeChunk(i, 2000 + 7 * i));
    ASSERT_TRUE(AddChunk(&c, chunks.back(), i % 3 == 0 ? Compression::kZlib : Compression::kNone));
  }
  std::string v2;
  ASSERT_TRUE(c.Serialize(&v2).ok());
  const std::string v1 = test::ContainerInFormatOne(v2);
  EXPECT_EQ(v1.size(), v2.size() - 10 * 4);
  size_t meta_size = 0;
  ASSERT_TRUE(Container::MetadataSize(9, v1, &meta_size).ok());
  EXPECT_EQ(meta_size, Container::kHeaderSize + 10 * Container::ItemSize(20, 1));
  std::unique_ptr<Container> parsed;
  Status s = Container::Parse(9, v1, &parsed);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(parsed->format_version(), 1);
  for (const Chunk& ch : chunks) {
    std::string out;
    ASSERT_TRUE(parsed->ReadChunk(ch.fp, &out).ok());
    EXPECT_EQ(out, ch.data);
    Container::ChunkLocation loc;
    ASSERT_TRUE(parsed->Locate(ch.fp, &loc).ok());
    EXPECT_FALSE(loc.has_crc);
  }
  std::string again;
  ASSERT_TRUE(parsed->Serialize(&again).ok());
  EXPECT_EQ(again, v1);  // a format 1 container stays format 1
  std::vector<Fingerprint> fps;
  std::vector<size_t> footprints;
  ASSERT_TRUE(Container::ParseFingerprints(9, v1.substr(0, meta_size), &fps, &footprints).ok());
  EXPECT_EQ(fps.size(), 10u);
  EXPECT_EQ(footprints[0], parsed->FootprintOf(fps[0]));

  // A format this build does not know is refused by name.
  std::string v9 = v2;
  EncodeFixed16(reinterpret_cast<uint8_t*>(v9.data()) + 12, 9);
  EXPECT_NE(Container::Parse(9, v9, &parsed).message().find("unsupported format version 9"), std::string::npos);
  EXPECT_NE(Container::MetadataSize(9, v9, &meta_size).message().find("unsupported format version 9"),
            std::string::npos);
}

}  // namespace
}  // namespace dedupv1
