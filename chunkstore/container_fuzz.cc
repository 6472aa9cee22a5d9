// Fuzz harness of Container's decoders (core/base/fuzz_check.h): a container
// file or object read back damaged, or written by a peer that is wrong, must
// parse as Corruption or as a container whose every chunk lies inside it.
//
// Input: a flags byte, then the serialized container. Flag 1: the checksums
// are recomputed first (meta_crc, data_crc, each item's crc, wherever the
// header's counts say they are), so mutations reach the checks behind them:
// a container whose checksums hold but whose fields lie. Flag 2: the
// expected id is the one in the header (else 7, the seeds' id).
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "chunkstore/container.h"
#include "core/base/coding.h"
#include "core/base/fuzz_check.h"

namespace dedupv1 {
namespace {

constexpr ContainerId kSeedId = 7;

// Recomputes the checksums of |c| where its header says they are.
void FixChecksums(std::string* c) {
  if (c->size() < Container::kHeaderSize) return;
  uint8_t* p = reinterpret_cast<uint8_t*>(c->data());
  const uint16_t version = DecodeFixed16(p + 12);
  const size_t fp_size = p[14];
  const uint64_t items = DecodeFixed32(p + 24);
  const uint64_t aliases = DecodeFixed32(p + 28);
  const uint64_t data_size = DecodeFixed64(p + 32);
  const uint64_t item_size = Container::ItemSize(fp_size, version);
  const uint64_t meta_end = Container::kHeaderSize + aliases * 8 + items * item_size;
  if (meta_end > c->size()) return;
  const uint64_t data_end = std::min<uint64_t>(c->size(), meta_end + std::min<uint64_t>(data_size, c->size()));
  if (version >= 2) {
    for (uint64_t i = 0; i < items; i++) {
      uint8_t* q = p + Container::kHeaderSize + aliases * 8 + i * item_size;
      const uint64_t offset = DecodeFixed32(q + fp_size);
      const uint64_t stored = DecodeFixed32(q + fp_size + 4);
      if (meta_end + offset + stored <= data_end) EncodeFixed32(q + fp_size + 13, Crc32c(p + meta_end + offset, stored));
    }
  }
  EncodeFixed32(p + 8, Crc32c(p + meta_end, data_end - meta_end));
  EncodeFixed32(p + 4, Crc32c(p + 8, meta_end - 8));
}

// A parsed container keeps its promises: sorted fingerprints, every chunk
// inside the bytes, reads that either fail as Corruption or give raw_size
// bytes. With |damage_seen| (checksums as the damage left them) a chunk read
// is the chunk stored: its fingerprint matches.
void CheckParsed(const Container& c, const std::string& bytes, bool damage_seen, std::vector<std::string>* chunks) {
  const std::vector<Fingerprint> fps = c.Fingerprints();
  FUZZ_CHECK(fps.size() == c.item_count(), "fingerprint count");
  for (size_t i = 0; i < fps.size(); i++) {
    if (i > 0) FUZZ_CHECK(fps[i - 1] < fps[i], "fingerprints not strictly sorted");
    Container::ChunkLocation loc;
    FUZZ_CHECK(c.Locate(fps[i], &loc).ok(), "a listed chunk cannot be located");
    FUZZ_CHECK(loc.offset + loc.stored_size <= bytes.size(), "a chunk lies outside the container");
    std::string data;
    Status s = c.ReadChunk(fps[i], &data);
    FUZZ_CHECK(s.ok() || s.IsCorruption(), "ReadChunk: " + s.ToString());
    if (s.ok()) FUZZ_CHECK(data.size() == loc.raw_size, "a chunk read with another size than its raw size");
    if (s.ok() && damage_seen) {
      Fingerprint fp;
      ComputeFingerprint(c.fp_type(), reinterpret_cast<const uint8_t*>(data.data()), data.size(), &fp);
      FUZZ_CHECK(fp == fps[i], "a damaged container read as other data than the chunk stored");
    }
    chunks->push_back(s.ok() ? data : "<" + s.ToString() + ">");
  }
}

void CheckContainer(const std::string& bytes, ContainerId expected, bool damage_seen) {
  std::unique_ptr<Container> c;
  Status s = Container::Parse(expected, bytes, &c);
  std::unique_ptr<Container> moved;
  Status sm = Container::Parse(expected, std::string(bytes), &moved);
  FUZZ_CHECK(s.ok() == sm.ok(), "the two Parse forms disagree: " + s.ToString() + " / " + sm.ToString());
  FUZZ_CHECK(s.ok() || s.IsCorruption(), "Parse: " + s.ToString());

  std::vector<Fingerprint> listed;
  std::vector<size_t> footprints;
  uint64_t serialized = 0;
  Status sf = Container::ParseFingerprints(expected, bytes, &listed, &footprints, &serialized);
  FUZZ_CHECK(sf.ok() || sf.IsCorruption(), "ParseFingerprints: " + sf.ToString());
  if (sf.ok()) FUZZ_CHECK(footprints.size() == listed.size(), "footprints");
  size_t meta = 0;
  if (Container::MetadataSize(expected, bytes, &meta).ok() && meta <= bytes.size()) {
    std::unique_ptr<Container> head;
    Status sh = Container::ParseMetadataOnly(expected, bytes.substr(0, meta), &head);
    FUZZ_CHECK(sh.ok() || sh.IsCorruption(), "ParseMetadataOnly: " + sh.ToString());
  }
  uint32_t alias_count = 0;
  (void)Container::HeaderAliasCount(expected, bytes, &alias_count);
  if (!s.ok()) return;

  FUZZ_CHECK(sf.ok(), "Parse accepts what ParseFingerprints refuses: " + sf.ToString());
  FUZZ_CHECK(listed == c->Fingerprints(), "ParseFingerprints lists other fingerprints than Parse");
  FUZZ_CHECK(serialized == bytes.size(), "ParseFingerprints' serialized size");
  std::vector<std::string> chunks, moved_chunks;
  CheckParsed(*c, bytes, damage_seen, &chunks);
  CheckParsed(*moved, bytes, damage_seen, &moved_chunks);
  FUZZ_CHECK(chunks == moved_chunks, "the two Parse forms read other chunk data");

  // What a parsed container serializes to parses back to the same chunks.
  std::string again;
  if (!c->Serialize(&again).ok()) return;
  std::unique_ptr<Container> re;
  Status sr = Container::Parse(expected, again, &re);
  FUZZ_CHECK(sr.ok(), "a parsed container serializes to bytes Parse refuses: " + sr.ToString());
  std::vector<std::string> re_chunks;
  CheckParsed(*re, again, false, &re_chunks);
  FUZZ_CHECK(re_chunks == chunks, "chunks changed through Serialize and Parse");
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  const FingerprintType types[] = {FingerprintType::kSha1, FingerprintType::kSha256};
  const Compression compressions[] = {Compression::kNone, Compression::kZlib};
  for (FingerprintType type : types) {
    for (Compression compression : compressions) {
      Container c(kSeedId, 64 << 10, type);
      for (int i = 0; i < 5; i++) {
        // Text-like chunks, so zlib keeps the compressed form.
        std::string data(200 + 300 * i, static_cast<char>('a' + i));
        for (size_t j = 0; j < data.size(); j += 7) data[j] = static_cast<char>('0' + (j % 10));
        Fingerprint fp;
        ComputeFingerprint(type, reinterpret_cast<const uint8_t*>(data.data()), data.size(), &fp);
        c.Add(fp, reinterpret_cast<const uint8_t*>(data.data()), data.size(), compression);
      }
      if (compression == Compression::kZlib) c.SetAliases({3, 5});
      std::string bytes;
      if (c.Serialize(&bytes).ok()) AddSeedBothWays(seeds, 0, 1, bytes);
    }
  }
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string bytes;
  if (!test::SplitFuzzInput(data, size, &flags, &bytes)) return 0;
  if (flags & 1) FixChecksums(&bytes);
  ContainerId expected = kSeedId;
  if ((flags & 2) && bytes.size() >= Container::kHeaderSize) {
    expected = DecodeFixed64(reinterpret_cast<const uint8_t*>(bytes.data()) + 16);
  }
  CheckContainer(bytes, expected, (flags & 1) == 0);
  return 0;
}
