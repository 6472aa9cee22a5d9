#include "index/block_mapping.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

#include "core/base/coding.h"
#include "index/block_mapping_testutil.h"

namespace dedupv1 {
namespace {

const BlockId kBlock1{1, 1};

// Chunk |id| (>= 0) has a distinct non-zero fingerprint and lives in
// container id + 1.
Fingerprint Fp(int id, size_t size = 20) {
  Fingerprint fp;
  fp.size = static_cast<uint8_t>(size);
  fp.bytes[0] = 0xA5;
  fp.bytes[1] = static_cast<uint8_t>(id);
  fp.bytes[2] = static_cast<uint8_t>(id >> 8);
  return fp;
}

BlockMappingItem Chunk(int id, uint32_t chunk_offset, uint32_t size) {
  BlockMappingItem item;
  item.fp = Fp(id);
  item.container = static_cast<ContainerId>(id) + 1;
  item.chunk_offset = chunk_offset;
  item.size = size;
  return item;
}

// The canonical zero item, as a mapping stores it.
BlockMappingItem Zero(uint32_t size) {
  BlockMappingItem item;
  item.container = kZeroContainer;
  item.size = size;
  return item;
}

// A zero item as a writer might pass it (a typed zero fingerprint).
BlockMappingItem TypedZero(uint32_t size, FingerprintType type = FingerprintType::kSha1) {
  BlockMappingItem item = Zero(size);
  item.fp = Fingerprint::Zero(type);
  return item;
}

// The chunk id (-1 for zeros) and offset in the chunk of every byte.
using ByteModel = std::vector<std::pair<int, uint32_t>>;

int ChunkIdOf(const BlockMappingItem& item) {
  if (item.IsZero()) return -1;
  return item.fp.bytes[1] | (item.fp.bytes[2] << 8);
}

ByteModel Expand(const BlockMapping& m) {
  ByteModel bytes;
  for (const BlockMappingItem& item : m.items()) {
    for (uint32_t i = 0; i < item.size; i++) {
      bytes.emplace_back(ChunkIdOf(item), item.IsZero() ? 0 : item.chunk_offset + i);
    }
  }
  return bytes;
}

void ApplyToModel(ByteModel* model, uint32_t offset, const std::vector<BlockMappingItem>& items) {
  uint32_t pos = offset;
  for (const BlockMappingItem& item : items) {
    for (uint32_t i = 0; i < item.size; i++) {
      (*model)[pos++] = {ChunkIdOf(item), item.IsZero() ? 0 : item.chunk_offset + i};
    }
  }
}

std::vector<BlockMappingItem> Items(std::initializer_list<BlockMappingItem> items) {
  return std::vector<BlockMappingItem>(items);
}

TEST(BlockMappingTest, FreshBlockIsOneZeroItem) {
  BlockMapping m(4096);
  EXPECT_EQ(m.block_size(), 4096u);
  ASSERT_EQ(m.items().size(), 1u);
  EXPECT_TRUE(m.items()[0].IsZero());
  EXPECT_EQ(m.items()[0].size, 4096u);
  EXPECT_TRUE(m.IsAllZero());
  EXPECT_TRUE(m.CheckInvariants().ok());
  EXPECT_TRUE(BlockMapping().items().empty());
  EXPECT_FALSE(BlockMapping().CheckInvariants().ok());
}

TEST(BlockMappingTest, WholeBlock) {
  BlockMapping m(100);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 50, 60), Chunk(2, 0, 40)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(1, 50, 60), Chunk(2, 0, 40)}));
  EXPECT_FALSE(m.IsAllZero());
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(3, 7, 100)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(3, 7, 100)}));
  EXPECT_TRUE(m.CheckInvariants().ok());
}

TEST(BlockMappingTest, IntoTheMiddleOfAnItem) {
  BlockMapping m(100);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 1000, 100)})).ok());
  ASSERT_TRUE(m.Overlay(30, Items({Chunk(2, 5, 10)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(1, 1000, 30), Chunk(2, 5, 10), Chunk(1, 1040, 60)}));
  EXPECT_TRUE(m.CheckInvariants().ok());
}

TEST(BlockMappingTest, SpanningItems) {
  BlockMapping m(100);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 0, 30), Chunk(2, 0, 30), Chunk(3, 0, 40)})).ok());
  // Cuts the end of 1, replaces all of 2, cuts the start of 3.
  ASSERT_TRUE(m.Overlay(20, Items({Chunk(4, 100, 25), Chunk(5, 0, 25)})).ok());
  EXPECT_EQ(m.items(),
            Items({Chunk(1, 0, 20), Chunk(4, 100, 25), Chunk(5, 0, 25), Chunk(3, 10, 30)}));
  EXPECT_TRUE(m.CheckInvariants().ok());
}

TEST(BlockMappingTest, AtBlockStartAndEnd) {
  BlockMapping m(100);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 0, 10)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(1, 0, 10), Zero(90)}));
  ASSERT_TRUE(m.Overlay(90, Items({Chunk(2, 3, 10)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(1, 0, 10), Zero(80), Chunk(2, 3, 10)}));
  // Exactly covering the last item.
  ASSERT_TRUE(m.Overlay(90, Items({Chunk(3, 0, 10)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(1, 0, 10), Zero(80), Chunk(3, 0, 10)}));
  EXPECT_TRUE(m.CheckInvariants().ok());
}

TEST(BlockMappingTest, ZeroOverlayMerges) {
  BlockMapping m(100);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 0, 40), Zero(20), Chunk(2, 0, 40)})).ok());
  ASSERT_TRUE(m.Overlay(60, Items({Zero(40)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(1, 0, 40), Zero(60)}));
  ASSERT_TRUE(m.Overlay(10, Items({TypedZero(10), Zero(5)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(1, 0, 10), Zero(15), Chunk(1, 25, 15), Zero(60)}));
  ASSERT_TRUE(m.Overlay(0, Items({Zero(40)})).ok());
  ASSERT_EQ(m.items().size(), 1u);
  EXPECT_TRUE(m.IsAllZero());
  EXPECT_EQ(m.items()[0].size, 100u);
}

TEST(BlockMappingTest, ContiguousPiecesOfOneChunkMerge) {
  BlockMapping m(100);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 0, 50), Chunk(2, 0, 50)})).ok());
  ASSERT_TRUE(m.Overlay(50, Items({Chunk(1, 50, 20)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(1, 0, 70), Chunk(2, 20, 30)}));
  // The same chunk repeated from its start is not contiguous: two items.
  ASSERT_TRUE(m.Overlay(70, Items({Chunk(1, 0, 30)})).ok());
  EXPECT_EQ(m.items(), Items({Chunk(1, 0, 70), Chunk(1, 0, 30)}));
  EXPECT_TRUE(m.CheckInvariants().ok());
}

TEST(BlockMappingTest, RejectsBadOverlaysAndStaysUnchanged) {
  BlockMapping m(100);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 0, 100)})).ok());
  const BlockMapping before = m;
  EXPECT_TRUE(m.Overlay(90, Items({Chunk(2, 0, 11)})).IsInvalidArgument());
  EXPECT_TRUE(m.Overlay(101, Items({})).IsInvalidArgument());
  EXPECT_TRUE(m.Overlay(0, Items({Chunk(2, 0, 0)})).IsInvalidArgument());
  BlockMappingItem no_container = Chunk(2, 0, 10);
  no_container.container = kNoContainer;
  EXPECT_TRUE(m.Overlay(0, Items({no_container})).IsInvalidArgument());
  BlockMappingItem zero_with_fp = Chunk(2, 0, 10);
  zero_with_fp.container = kZeroContainer;
  EXPECT_TRUE(m.Overlay(0, Items({zero_with_fp})).IsInvalidArgument());
  BlockMappingItem stored_zero_fp = TypedZero(10);
  stored_zero_fp.container = 4;
  EXPECT_TRUE(m.Overlay(0, Items({stored_zero_fp})).IsInvalidArgument());
  EXPECT_TRUE(m.Overlay(0, Items({Chunk(2, 0xFFFFFFF0u, 20)})).IsInvalidArgument());
  EXPECT_EQ(m, before);
  // An empty overlay inside the block changes nothing.
  EXPECT_TRUE(m.Overlay(100, Items({})).ok());
  EXPECT_EQ(m, before);
}

TEST(BlockMappingTest, ForEachPieceClipsToTheRange) {
  BlockMapping m(100);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 1000, 30), Zero(20), Chunk(2, 0, 50)})).ok());
  struct Piece {
    int chunk;
    uint32_t block_offset, chunk_offset, size;
    bool operator==(const Piece& o) const {
      return chunk == o.chunk && block_offset == o.block_offset &&
             chunk_offset == o.chunk_offset && size == o.size;
    }
  };
  std::vector<Piece> pieces;
  auto collect = [&](const BlockMappingItem& item, uint32_t bo, uint32_t co, uint32_t size) {
    pieces.push_back({ChunkIdOf(item), bo, co, size});
  };
  m.ForEachPiece(10, 50, collect);
  EXPECT_EQ(pieces, (std::vector<Piece>{{1, 10, 1010, 20}, {-1, 30, 0, 20}, {2, 50, 0, 10}}));
  pieces.clear();
  m.ForEachPiece(55, 10, collect);
  EXPECT_EQ(pieces, (std::vector<Piece>{{2, 55, 5, 10}}));
  pieces.clear();
  m.ForEachPiece(90, 1000, collect);  // clipped at the block end
  EXPECT_EQ(pieces, (std::vector<Piece>{{2, 90, 40, 10}}));
  pieces.clear();
  m.ForEachPiece(30, 0, collect);
  EXPECT_TRUE(pieces.empty());
}

TEST(BlockMappingTest, RandomOverlaysMatchAByteModel) {
  const uint32_t kBlock = 2048;
  std::mt19937 rng(1234);
  BlockMapping m(kBlock);
  ByteModel model(kBlock, {-1, 0});
  const int kRounds = 3000;
  for (int round = 0; round < kRounds; round++) {
    uint32_t offset = rng() % kBlock;
    uint32_t room = kBlock - offset;
    std::vector<BlockMappingItem> items;
    int n = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < n && room > 0; i++) {
      uint32_t size = 1 + rng() % std::min<uint32_t>(room, 700);
      BlockMappingItem item;
      switch (rng() % 4) {
        case 0:
          item = rng() % 2 ? Zero(size) : TypedZero(size, FingerprintType::kSha256);
          break;
        case 1:
          // Continue the previous piece of the same chunk: exercises merging.
          if (!items.empty() && !items.back().IsZero()) {
            item = items.back();
            item.chunk_offset += item.size;
            item.size = size;
            break;
          }
          [[fallthrough]];
        default:
          item = Chunk(static_cast<int>(rng() % 6), rng() % 10000, size);
      }
      items.push_back(item);
      room -= size;
    }
    ASSERT_TRUE(m.Overlay(offset, items).ok()) << "round " << round;
    ApplyToModel(&model, offset, items);
    ASSERT_TRUE(m.CheckInvariants().ok()) << m.CheckInvariants().ToString() << " round " << round;
    ASSERT_EQ(Expand(m), model) << "round " << round << ": " << m.DebugString();

    // ForEachPiece of a random range agrees with the model.
    uint32_t from = rng() % kBlock;
    uint32_t len = rng() % (kBlock - from + 1);
    ByteModel seen;
    uint32_t expected_offset = from;
    m.ForEachPiece(from, len, [&](const BlockMappingItem& item, uint32_t bo, uint32_t co,
                                  uint32_t size) {
      EXPECT_EQ(bo, expected_offset);
      expected_offset += size;
      for (uint32_t i = 0; i < size; i++) {
        seen.emplace_back(ChunkIdOf(item), item.IsZero() ? 0 : co + i);
      }
    });
    ASSERT_EQ(seen, ByteModel(model.begin() + from, model.begin() + from + len));

    if (round % 100 == 0) {
      std::string data;
      m.Serialize(kBlock1, &data);
      BlockMapping parsed;
      ASSERT_TRUE(BlockMapping::Parse(data, kBlock1, &parsed).ok());
      ASSERT_EQ(parsed, m);
    }
  }
}

TEST(BlockMappingTest, SerializeRoundTrip) {
  BlockMapping m(1 << 17);
  m.set_version(77);
  BlockMappingItem sha256 = Chunk(9, 12, 1000);
  sha256.fp = Fp(9, 32);
  BlockMappingItem zero256 = TypedZero(500, FingerprintType::kSha256);
  ASSERT_TRUE(m.Overlay(100, Items({Chunk(1, 0, 4000), sha256, zero256, Chunk(2, 5, 9)})).ok());
  std::string data;
  m.Serialize(kBlock1, &data);
  BlockMapping parsed;
  ASSERT_TRUE(BlockMapping::Parse(data, kBlock1, &parsed).ok());
  EXPECT_EQ(parsed, m);
  EXPECT_EQ(parsed.version(), 77u);
  EXPECT_EQ(parsed.items()[2].fp.size, 32u);
  EXPECT_EQ(parsed.items()[3], Zero(500));  // canonical zero item

  // A fresh block round-trips too, and zero fingerprints cost no bytes.
  BlockMapping fresh(4096);
  fresh.Serialize(kBlock1, &data);
  EXPECT_EQ(data.size(), 33u + 17u);
  ASSERT_TRUE(BlockMapping::Parse(data, kBlock1, &parsed).ok());
  EXPECT_EQ(parsed, fresh);
  BlockMapping::RecordHeader header;
  ASSERT_TRUE(BlockMapping::ParseHeader(data, &header).ok());
  EXPECT_EQ(header.format, 2u);
  EXPECT_TRUE(header.has_owner);
  EXPECT_EQ(header.owner, kBlock1);
  EXPECT_EQ(header.version, 0u);
}

// The record carries its block's id inside the checksum: read under another
// block's id (a damaged key, or a record logged for another block) it is
// Corruption naming both blocks, never that block's data.
TEST(BlockMappingTest, RecordOfAnotherBlockIsCorruption) {
  BlockMapping m(4096);
  m.set_version(5);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 0, 100)})).ok());
  std::string data;
  m.Serialize(BlockId{1, 100}, &data);
  BlockMapping out(8);
  const BlockMapping untouched = out;
  for (const BlockId& other : {BlockId{1, 101}, BlockId{1, 356}, BlockId{0, 100}, BlockId{2, 100}}) {
    Status s = BlockMapping::Parse(data, other, &out);
    ASSERT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find("block mapping of block " + std::to_string(other.volume) + "/" +
                               std::to_string(other.block)),
              std::string::npos)
        << s.ToString();
    EXPECT_NE(s.message().find("belongs to block 1/100"), std::string::npos) << s.ToString();
    EXPECT_EQ(out, untouched);
  }
  ASSERT_TRUE(BlockMapping::Parse(data, BlockId{1, 100}, &out).ok());
  EXPECT_EQ(out, m);
  BlockMapping::RecordHeader header;
  ASSERT_TRUE(BlockMapping::ParseHeader(data, &header).ok());
  EXPECT_EQ(header.owner, (BlockId{1, 100}));
  EXPECT_EQ(header.version, 5u);
}

// Format 1 (older builds: the same fields without the block id) is still
// read, under any id; its header says it carries none.
TEST(BlockMappingTest, FormatOneIsStillRead) {
  BlockMapping m(4096);
  m.set_version(9);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 0, 100), Chunk(2, 10, 200)})).ok());
  const std::string v1 = test::SerializeFormatOne(m);
  BlockMapping out;
  ASSERT_TRUE(BlockMapping::Parse(v1, BlockId{3, 4}, &out).ok());
  EXPECT_EQ(out, m);
  BlockMapping::RecordHeader header;
  ASSERT_TRUE(BlockMapping::ParseHeader(v1, &header).ok());
  EXPECT_EQ(header.format, 1u);
  EXPECT_FALSE(header.has_owner);
  EXPECT_EQ(header.version, 9u);
  // A flipped byte is still caught by its checksum.
  std::string bad = v1;
  bad[5] ^= 0x01;
  EXPECT_TRUE(BlockMapping::Parse(bad, BlockId{3, 4}, &out).IsCorruption());
  EXPECT_TRUE(BlockMapping::ParseHeader(bad, &header).IsCorruption());
}

TEST(BlockMappingTest, ParseDetectsEveryFlippedByteAndTruncation) {
  BlockMapping m(4096);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 0, 100), Chunk(2, 10, 200)})).ok());
  std::string data;
  m.Serialize(kBlock1, &data);
  const BlockMapping untouched(8);
  for (size_t i = 0; i < data.size(); i++) {
    std::string bad = data;
    bad[i] = static_cast<char>(bad[i] ^ 0x10);
    BlockMapping out = untouched;
    Status s = BlockMapping::Parse(bad, kBlock1, &out);
    ASSERT_TRUE(s.IsCorruption()) << "byte " << i << ": " << s.ToString();
    ASSERT_EQ(out, untouched);
  }
  for (size_t n = 0; n < data.size(); n++) {
    BlockMapping out;
    ASSERT_TRUE(BlockMapping::Parse(data.substr(0, n), kBlock1, &out).IsCorruption()) << n;
  }
  BlockMapping out;
  Status s = BlockMapping::Parse(data + "x", BlockId{3, 17}, &out);
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("block mapping of block 3/17"), std::string::npos) << s.ToString();
}

// A blob with a correct checksum whose items break an invariant is corrupt too.
TEST(BlockMappingTest, ParseChecksInvariants) {
  BlockMapping m(4096);
  ASSERT_TRUE(m.Overlay(0, Items({Chunk(1, 0, 100)})).ok());
  std::string data;
  m.Serialize(BlockId{1, 2}, &data);
  auto reseal = [](std::string d) {
    d.resize(d.size() - 4);
    PutFixed32(&d, Crc32c(d.data(), d.size()));
    return d;
  };
  // Block size field (after format byte, id and version) claims more bytes than covered.
  std::string wrong_size = data;
  EncodeFixed32(reinterpret_cast<uint8_t*>(&wrong_size[21]), 8192);
  BlockMapping out;
  Status s = BlockMapping::Parse(reseal(wrong_size), BlockId{1, 2}, &out);
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("cover"), std::string::npos) << s.ToString();
  std::string bad_format = data;
  bad_format[0] = 9;
  EXPECT_TRUE(BlockMapping::Parse(reseal(bad_format), BlockId{1, 2}, &out).IsCorruption());
  std::string huge_count = data;
  EncodeFixed32(reinterpret_cast<uint8_t*>(&huge_count[25]), 0xFFFFFFFF);
  EXPECT_TRUE(BlockMapping::Parse(reseal(huge_count), BlockId{1, 2}, &out).IsCorruption());
}

// A hand-made format-1 blob of a 100-byte block made of |n| zero items of 100/n bytes
// each, with fingerprint byte |fp_byte|.
std::string ZeroItemsBlob(int n, uint8_t fp_byte) {
  std::string d;
  d.push_back(1);
  PutFixed64(&d, 0);
  PutFixed32(&d, 100);
  PutFixed32(&d, static_cast<uint32_t>(n));
  for (int i = 0; i < n; i++) {
    d.push_back(static_cast<char>(fp_byte));
    PutFixed64(&d, kZeroContainer);
    PutFixed32(&d, 0);
    PutFixed32(&d, static_cast<uint32_t>(100 / n));
  }
  PutFixed32(&d, Crc32c(d.data(), d.size()));
  return d;
}

TEST(BlockMappingTest, ParseInsistsOnCanonicalZeroItems) {
  BlockMapping out;
  ASSERT_TRUE(BlockMapping::Parse(ZeroItemsBlob(1, 0x80), kBlock1, &out).ok());
  EXPECT_EQ(out, BlockMapping(100));
  Status s = BlockMapping::Parse(ZeroItemsBlob(2, 0x80), kBlock1, &out);
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("merged"), std::string::npos) << s.ToString();
  s = BlockMapping::Parse(ZeroItemsBlob(1, 0x80 | 20), kBlock1, &out);
  ASSERT_TRUE(s.IsCorruption());
  EXPECT_NE(s.message().find("fingerprint size 20"), std::string::npos) << s.ToString();
}

}  // namespace
}  // namespace dedupv1
