#include "index/block_mapping.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "core/base/coding.h"

namespace dedupv1 {

namespace {

// Format 1 (older builds): no block id. Format 2 carries the id inside the
// checksum, so a record under the wrong key is detected.
constexpr uint8_t kFormatWithoutId = 1;
constexpr uint8_t kFormat = 2;
constexpr uint8_t kZeroFpFlag = 0x80;
// format + version + block size + item count + crc
constexpr size_t kFixedBytesWithoutId = 1 + 8 + 4 + 4 + 4;
// ... + volume + block
constexpr size_t kFixedBytes = kFixedBytesWithoutId + 4 + 8;
// fp size byte + container + chunk offset + size (with an omitted fingerprint)
constexpr size_t kMinItemBytes = 1 + 8 + 4 + 4;
constexpr uint64_t kMaxChunkEnd = std::numeric_limits<uint32_t>::max();

// Why |item| cannot be part of a mapping, or "" if it can.
std::string ItemProblem(const BlockMappingItem& item) {
  if (item.size == 0) return "size 0";
  if (item.container == kNoContainer) return "no container";
  if (item.IsZero() && !item.fp.IsZero()) return "zero container with a non-zero fingerprint";
  if (!item.IsZero() && item.fp.IsZero()) {
    return fmt::format("container {} with a zero fingerprint", item.container);
  }
  if (static_cast<uint64_t>(item.chunk_offset) + item.size > kMaxChunkEnd) {
    return fmt::format("chunk offset {} + size {} exceeds 2^32", item.chunk_offset, item.size);
  }
  return "";
}

// True if |b| directly following |a| can be stored as one item.
bool Mergeable(const BlockMappingItem& a, const BlockMappingItem& b) {
  if (a.IsZero() || b.IsZero()) return a.IsZero() && b.IsZero();
  return a.container == b.container && a.fp == b.fp &&
         static_cast<uint64_t>(a.chunk_offset) + a.size == b.chunk_offset;
}

// Appends |item| to |out|, merging it into the last item where possible.
void AppendMerged(std::vector<BlockMappingItem>* out, BlockMappingItem item) {
  if (item.IsZero()) {
    // Canonical zero item: the same bytes whatever the writer passed in.
    item.fp = Fingerprint();
    item.chunk_offset = 0;
  }
  if (!out->empty() && Mergeable(out->back(), item)) {
    out->back().size += item.size;
    return;
  }
  out->push_back(item);
}

}  // namespace

BlockMapping::BlockMapping(uint32_t block_size) : block_size_(block_size) {
  if (block_size > 0) {
    BlockMappingItem zero;
    zero.container = kZeroContainer;
    zero.size = block_size;
    items_.push_back(zero);
  }
}

Status BlockMapping::Overlay(uint32_t offset, const std::vector<BlockMappingItem>& items) {
  uint64_t total = 0;
  for (size_t i = 0; i < items.size(); i++) {
    std::string problem = ItemProblem(items[i]);
    if (!problem.empty()) {
      return Status::InvalidArgument(fmt::format("block mapping overlay: item {}: {}", i, problem));
    }
    total += items[i].size;
  }
  const uint64_t end = static_cast<uint64_t>(offset) + total;
  if (end > block_size_) {
    return Status::InvalidArgument(fmt::format(
        "block mapping overlay: range [{}, {}) leaves the block of {} bytes", offset, end,
        block_size_));
  }
  if (total == 0) return Status::OK();

  std::vector<BlockMappingItem> out;
  out.reserve(items_.size() + items.size() + 2);
  bool inserted = false;
  auto insert_new = [&] {
    if (inserted) return;
    for (const BlockMappingItem& item : items) AppendMerged(&out, item);
    inserted = true;
  };
  uint64_t pos = 0;
  for (const BlockMappingItem& old : items_) {
    const uint64_t s = pos;
    const uint64_t e = pos + old.size;
    pos = e;
    if (e <= offset) {
      AppendMerged(&out, old);
      continue;
    }
    if (s >= end) {
      insert_new();
      AppendMerged(&out, old);
      continue;
    }
    // |old| overlaps the new range: keep what sticks out on either side.
    if (s < offset) {
      BlockMappingItem left = old;
      left.size = static_cast<uint32_t>(offset - s);
      AppendMerged(&out, left);
    }
    insert_new();
    if (e > end) {
      BlockMappingItem right = old;
      const uint32_t cut = static_cast<uint32_t>(end - s);
      if (!right.IsZero()) right.chunk_offset += cut;
      right.size = static_cast<uint32_t>(e - end);
      AppendMerged(&out, right);
    }
  }
  insert_new();
  items_ = std::move(out);
  return Status::OK();
}

bool BlockMapping::IsAllZero() const { return items_.size() == 1 && items_[0].IsZero(); }

void BlockMapping::ForEachPiece(
    uint32_t offset, uint32_t len,
    const std::function<void(const BlockMappingItem&, uint32_t, uint32_t, uint32_t)>& f) const {
  const uint64_t begin = offset;
  const uint64_t end = std::min<uint64_t>(static_cast<uint64_t>(offset) + len, block_size_);
  uint64_t pos = 0;
  for (const BlockMappingItem& item : items_) {
    const uint64_t s = pos;
    const uint64_t e = pos + item.size;
    pos = e;
    if (e <= begin) continue;
    if (s >= end) break;
    const uint64_t piece_begin = std::max(s, begin);
    const uint64_t piece_end = std::min(e, end);
    f(item, static_cast<uint32_t>(piece_begin),
      static_cast<uint32_t>(item.chunk_offset + (piece_begin - s)),
      static_cast<uint32_t>(piece_end - piece_begin));
  }
}

void BlockMapping::Serialize(const BlockId& id, std::string* out) const {
  out->clear();
  out->reserve(kFixedBytes + items_.size() * (kMinItemBytes + Fingerprint::kMaxSize));
  out->push_back(static_cast<char>(kFormat));
  PutFixed32(out, id.volume);
  PutFixed64(out, id.block);
  PutFixed64(out, version_);
  PutFixed32(out, block_size_);
  PutFixed32(out, static_cast<uint32_t>(items_.size()));
  for (const BlockMappingItem& item : items_) {
    if (item.fp.IsZero()) {
      out->push_back(static_cast<char>(item.fp.size | kZeroFpFlag));
    } else {
      out->push_back(static_cast<char>(item.fp.size));
      out->append(reinterpret_cast<const char*>(item.fp.bytes), item.fp.size);
    }
    PutFixed64(out, item.container);
    PutFixed32(out, item.chunk_offset);
    PutFixed32(out, item.size);
  }
  PutFixed32(out, Crc32c(out->data(), out->size()));
}

Status BlockMapping::ParseHeader(const std::string& data, RecordHeader* out) {
  size_t items_at = 0;
  return ParseHeaderNamed(data, "block mapping", out, &items_at);
}

Status BlockMapping::ParseHeaderNamed(const std::string& data, const std::string& name, RecordHeader* header,
                                      size_t* items_at) {
  auto corrupt = [&name](const std::string& what) {
    return Status::Corruption(name + ": " + what);
  };
  if (data.size() < kFixedBytesWithoutId) {
    return corrupt(fmt::format("too short ({} bytes)", data.size()));
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
  const size_t body = data.size() - 4;
  const uint32_t stored_crc = DecodeFixed32(p + body);
  const uint32_t crc = Crc32c(p, body);
  if (stored_crc != crc) {
    return corrupt(fmt::format("checksum mismatch (stored {:08x}, computed {:08x})", stored_crc, crc));
  }
  RecordHeader h;
  h.format = p[0];
  size_t pos = 1;
  if (h.format == kFormat) {
    if (data.size() < kFixedBytes) return corrupt(fmt::format("too short ({} bytes)", data.size()));
    h.has_owner = true;
    h.owner.volume = DecodeFixed32(p + pos);
    h.owner.block = DecodeFixed64(p + pos + 4);
    pos += 12;
  } else if (h.format != kFormatWithoutId) {
    return corrupt(fmt::format("unknown format {}", h.format));
  }
  h.version = DecodeFixed64(p + pos);
  *header = h;
  *items_at = pos + 8;
  return Status::OK();
}

Status BlockMapping::Parse(const std::string& data, const BlockId& id, BlockMapping* out) {
  const std::string name = fmt::format("block mapping of block {}/{}", id.volume, id.block);
  auto corrupt = [&name](const std::string& what) {
    return Status::Corruption(name + ": " + what);
  };
  RecordHeader header;
  size_t pos = 0;
  DEDUPV1_RETURN_IF_ERROR(ParseHeaderNamed(data, name, &header, &pos));
  if (header.has_owner && !(header.owner == id)) {
    return corrupt(fmt::format("the record belongs to block {}/{} (a damaged key or a record in the wrong place)",
                               header.owner.volume, header.owner.block));
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
  const size_t body = data.size() - 4;
  BlockMapping m;
  m.version_ = header.version;
  m.block_size_ = DecodeFixed32(p + pos);
  pos += 4;
  const uint32_t count = DecodeFixed32(p + pos);
  pos += 4;
  if (count > (body - pos) / kMinItemBytes) {
    return corrupt(fmt::format("item count {} does not fit in {} bytes", count, data.size()));
  }
  m.items_.reserve(count);
  for (uint32_t i = 0; i < count; i++) {
    if (pos + 1 > body) return corrupt(fmt::format("truncated at item {}", i));
    const uint8_t fp_byte = p[pos++];
    const uint8_t fp_size = fp_byte & ~kZeroFpFlag;
    const bool zero_fp = (fp_byte & kZeroFpFlag) != 0;
    if (fp_size > Fingerprint::kMaxSize) {
      return corrupt(fmt::format("item {}: fingerprint size {}", i, fp_size));
    }
    const size_t fp_bytes = zero_fp ? 0 : fp_size;
    if (pos + fp_bytes + 16 > body) return corrupt(fmt::format("truncated at item {}", i));
    BlockMappingItem item;
    item.fp.size = fp_size;
    if (!zero_fp) std::memcpy(item.fp.bytes, p + pos, fp_size);
    pos += fp_bytes;
    item.container = DecodeFixed64(p + pos);
    item.chunk_offset = DecodeFixed32(p + pos + 8);
    item.size = DecodeFixed32(p + pos + 12);
    pos += 16;
    m.items_.push_back(item);
  }
  if (pos != body) return corrupt(fmt::format("{} trailing bytes", body - pos));
  DEDUPV1_RETURN_IF_ERROR(m.CheckInvariantsNamed(name));
  *out = std::move(m);
  return Status::OK();
}

Status BlockMapping::CheckInvariants() const { return CheckInvariantsNamed("block mapping"); }

Status BlockMapping::CheckInvariantsNamed(const std::string& name) const {
  auto corrupt = [&name](const std::string& what) {
    return Status::Corruption(name + ": " + what);
  };
  if (block_size_ == 0) return corrupt("block size 0");
  uint64_t total = 0;
  for (size_t i = 0; i < items_.size(); i++) {
    const BlockMappingItem& item = items_[i];
    std::string problem = ItemProblem(item);
    if (!problem.empty()) return corrupt(fmt::format("item {}: {}", i, problem));
    if (item.IsZero() && (item.chunk_offset != 0 || item.fp.size != 0)) {
      return corrupt(fmt::format("item {}: zero item with chunk offset {} or fingerprint size {}",
                                 i, item.chunk_offset, item.fp.size));
    }
    if (i > 0 && Mergeable(items_[i - 1], item)) {
      return corrupt(fmt::format("items {} and {} should be merged", i - 1, i));
    }
    total += item.size;
  }
  if (total != block_size_) {
    return corrupt(fmt::format("items cover {} bytes of a {} byte block", total, block_size_));
  }
  return Status::OK();
}

std::string BlockMapping::DebugString() const {
  std::string s = fmt::format("block_size={} version={} items=[", block_size_, version_);
  uint64_t pos = 0;
  for (size_t i = 0; i < items_.size(); i++) {
    const BlockMappingItem& item = items_[i];
    if (i > 0) s += "; ";
    if (item.IsZero()) {
      s += fmt::format("{}+{} zero", pos, item.size);
    } else {
      s += fmt::format("{}+{} fp={}.. c={} off={}", pos, item.size, item.fp.ToHex().substr(0, 8),
                       item.container, item.chunk_offset);
    }
    pos += item.size;
  }
  s += "]";
  return s;
}

}  // namespace dedupv1
