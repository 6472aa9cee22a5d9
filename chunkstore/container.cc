#include "chunkstore/container.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

// Header field offsets; see container.h for the layout.
constexpr size_t kMagicOffset = 0;
constexpr size_t kMetaCrcOffset = 4;
constexpr size_t kDataCrcOffset = 8;
constexpr size_t kVersionOffset = 12;
constexpr size_t kFpSizeOffset = 14;
constexpr size_t kIdOffset = 16;
constexpr size_t kItemCountOffset = 24;
constexpr size_t kAliasCountOffset = 28;
constexpr size_t kDataSizeOffset = 32;
// meta_crc covers everything after the two CRC-independent words.
constexpr size_t kMetaCrcStart = 8;

std::string Name(ContainerId id) { return "container " + std::to_string(id); }

}  // namespace

size_t Container::MaxChunkSize(size_t capacity, FingerprintType fp_type) {
  size_t overhead = kHeaderSize + ItemSize(FingerprintSize(fp_type));
  return capacity > overhead ? capacity - overhead : 0;
}

Container::Container(ContainerId id, size_t capacity, FingerprintType fp_type)
    : id_(id),
      capacity_(capacity),
      fp_type_(fp_type),
      fp_size_(FingerprintSize(fp_type)),
      created_(std::chrono::steady_clock::now()) {}

size_t Container::serialized_size() const {
  return kHeaderSize + aliases_.size() * 8 + items_.size() * item_size() + Data().size();
}

bool Container::Add(const Fingerprint& fp, const uint8_t* data, size_t n, Compression compression) {
  std::string compressed;
  if (compression != Compression::kNone && Compress(compression, data, n, &compressed)) {
    return AddStored(fp, compressed, n, compression);
  }
  return AddStored(fp, std::string_view(reinterpret_cast<const char*>(data), n), n,
                   Compression::kNone);
}

bool Container::AddStored(const Fingerprint& fp, std::string_view stored, size_t raw_size,
                          Compression stored_as) {
  if (fp.size != fp_size_) return false;
  if (index_.count(fp) != 0) return true;
  if (serialized_size() + item_size() + stored.size() > capacity_) return false;
  // Offsets and sizes are 32 bit on disk.
  if (data_.size() + stored.size() > std::numeric_limits<uint32_t>::max() ||
      raw_size > std::numeric_limits<uint32_t>::max()) {
    return false;
  }
  Item item{fp, static_cast<uint32_t>(data_.size()), static_cast<uint32_t>(stored.size()),
            static_cast<uint32_t>(raw_size), stored_as, version_ >= 2 ? Crc32c(stored.data(), stored.size()) : 0};
  // One allocation for the whole data section: growing it step by step
  // would copy every chunk again at each reallocation.
  if (data_.empty()) data_.reserve(capacity_ - kHeaderSize);
  data_.append(stored.data(), stored.size());
  index_.emplace(fp, items_.size());
  items_.push_back(item);
  raw_size_ += raw_size;
  return true;
}

bool Container::Contains(const Fingerprint& fp) const { return index_.count(fp) != 0; }

Status Container::ReadChunk(const Fingerprint& fp, std::string* data) const {
  auto it = index_.find(fp);
  if (it == index_.end()) {
    return Status::NotFound("chunk " + fp.ToHex() + " is not in " + Name(id_));
  }
  const Item& item = items_[it->second];
  Status s = Decompress(item.compression,
                        reinterpret_cast<const uint8_t*>(Data().data()) + item.offset,
                        item.stored_size, item.raw_size, data);
  if (!s.ok()) return s.WithContext(Name(id_) + ": chunk " + fp.ToHex());
  return Status::OK();
}

Status Container::ChunkView(const Fingerprint& fp, std::string* scratch, std::string_view* data) const {
  auto it = index_.find(fp);
  if (it == index_.end()) {
    return Status::NotFound("chunk " + fp.ToHex() + " is not in " + Name(id_));
  }
  const Item& item = items_[it->second];
  if (item.compression == Compression::kNone) {
    *data = Data().substr(item.offset, item.stored_size);
    return Status::OK();
  }
  DEDUPV1_RETURN_IF_ERROR(ReadChunk(fp, scratch));
  *data = *scratch;
  return Status::OK();
}

std::vector<Fingerprint> Container::Fingerprints() const {
  std::vector<Fingerprint> fps;
  fps.reserve(items_.size());
  for (const Item& item : items_) fps.push_back(item.fp);
  std::sort(fps.begin(), fps.end());
  return fps;
}

size_t Container::FootprintOf(const Fingerprint& fp) const {
  auto it = index_.find(fp);
  if (it == index_.end()) return 0;
  return items_[it->second].stored_size + item_size();
}

bool Container::SetAliases(std::vector<ContainerId> aliases) {
  size_t size = serialized_size() - aliases_.size() * 8 + aliases.size() * 8;
  if (size > capacity_) return false;
  aliases_ = std::move(aliases);
  return true;
}

bool Container::AnswersTo(ContainerId id) const {
  return id == id_ || std::find(aliases_.begin(), aliases_.end(), id) != aliases_.end();
}

Status Container::Serialize(std::string* out) const {
  const size_t item_size = this->item_size();
  const size_t meta_end = kHeaderSize + aliases_.size() * 8 + items_.size() * item_size;
  out->assign(meta_end, '\0');
  const std::string_view data = Data();
  out->reserve(meta_end + data.size());
  uint8_t* p = reinterpret_cast<uint8_t*>(out->data());

  EncodeFixed32(p + kMagicOffset, kMagic);
  EncodeFixed32(p + kDataCrcOffset, Crc32c(data.data(), data.size()));
  EncodeFixed16(p + kVersionOffset, version_);
  p[kFpSizeOffset] = static_cast<uint8_t>(fp_size_);
  EncodeFixed64(p + kIdOffset, id_);
  EncodeFixed32(p + kItemCountOffset, static_cast<uint32_t>(items_.size()));
  EncodeFixed32(p + kAliasCountOffset, static_cast<uint32_t>(aliases_.size()));
  EncodeFixed64(p + kDataSizeOffset, data.size());

  uint8_t* q = p + kHeaderSize;
  for (ContainerId alias : aliases_) {
    EncodeFixed64(q, alias);
    q += 8;
  }
  // Items sorted by fingerprint so a reader of the raw bytes can binary search.
  std::vector<const Item*> sorted;
  sorted.reserve(items_.size());
  for (const Item& item : items_) sorted.push_back(&item);
  std::sort(sorted.begin(), sorted.end(),
            [](const Item* a, const Item* b) { return a->fp < b->fp; });
  for (const Item* item : sorted) {
    std::memcpy(q, item->fp.bytes, fp_size_);
    EncodeFixed32(q + fp_size_, item->offset);
    EncodeFixed32(q + fp_size_ + 4, item->stored_size);
    EncodeFixed32(q + fp_size_ + 8, item->raw_size);
    q[fp_size_ + 12] = static_cast<uint8_t>(item->compression);
    if (version_ >= 2) EncodeFixed32(q + fp_size_ + 13, item->crc);
    q += item_size;
  }
  EncodeFixed32(p + kMetaCrcOffset, Crc32c(p + kMetaCrcStart, meta_end - kMetaCrcStart));
  out->append(data);
  return Status::OK();
}

namespace {

// The header fields MetadataSize and HeaderAliasCount read, before any CRC
// can be checked: a header's worth of bytes and the magic.
Status CheckHeaderPrefix(ContainerId expected_id, const std::string& head) {
  if (head.size() < Container::kHeaderSize) {
    return Status::Corruption(Name(expected_id) + ": too short for a header (" +
                              std::to_string(head.size()) + " bytes)");
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(head.data());
  if (DecodeFixed32(p + kMagicOffset) != Container::kMagic) {
    return Status::Corruption(Name(expected_id) + ": bad magic");
  }
  return Status::OK();
}

}  // namespace

Status Container::MetadataSize(ContainerId expected_id, const std::string& head, size_t* size) {
  DEDUPV1_RETURN_IF_ERROR(CheckHeaderPrefix(expected_id, head));
  const uint8_t* p = reinterpret_cast<const uint8_t*>(head.data());
  const uint64_t fp_size = p[kFpSizeOffset];
  const uint16_t version = DecodeFixed16(p + kVersionOffset);
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    return Status::Corruption(Name(expected_id) + ": unsupported format version " + std::to_string(version) +
                              " (this build reads " + std::to_string(kOldestFormatVersion) + " to " +
                              std::to_string(kFormatVersion) + ")");
  }
  // Counts are 32 bit, so this cannot overflow; the size is verified (CRC,
  // bounds) by the parse that follows.
  *size = kHeaderSize + uint64_t{DecodeFixed32(p + kAliasCountOffset)} * 8 +
          uint64_t{DecodeFixed32(p + kItemCountOffset)} * ItemSize(fp_size, version);
  return Status::OK();
}

Status Container::HeaderAliasCount(ContainerId expected_id, const std::string& head, uint32_t* count) {
  DEDUPV1_RETURN_IF_ERROR(CheckHeaderPrefix(expected_id, head));
  *count = DecodeFixed32(reinterpret_cast<const uint8_t*>(head.data()) + kAliasCountOffset);
  return Status::OK();
}

Status Container::ParseFingerprints(ContainerId expected_id, const std::string& head,
                                    std::vector<Fingerprint>* fps, std::vector<size_t>* footprints,
                                    uint64_t* serialized_size) {
  std::unique_ptr<Container> c;
  DEDUPV1_RETURN_IF_ERROR(ParseImpl(expected_id, head, /*whole=*/false, nullptr, &c));
  // Items are stored sorted (checked by the parse), so no sort is needed.
  fps->clear();
  fps->reserve(c->items_.size());
  for (const Item& item : c->items_) fps->push_back(item.fp);
  if (footprints != nullptr) {
    footprints->clear();
    for (const Item& item : c->items_) footprints->push_back(item.stored_size + c->item_size());
  }
  if (serialized_size != nullptr) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(head.data());
    *serialized_size = kHeaderSize + c->aliases_.size() * 8 + c->items_.size() * c->item_size() +
                       DecodeFixed64(p + kDataSizeOffset);
  }
  return Status::OK();
}

Status Container::ParseMetadataOnly(ContainerId expected_id, const std::string& head,
                                    std::unique_ptr<Container>* out) {
  return ParseImpl(expected_id, head, /*whole=*/false, nullptr, out);
}

Status Container::Locate(const Fingerprint& fp, ChunkLocation* location) const {
  auto it = std::lower_bound(items_.begin(), items_.end(), fp,
                             [](const Item& item, const Fingerprint& f) { return item.fp < f; });
  if (it == items_.end() || it->fp != fp) {
    return Status::NotFound("chunk " + fp.ToHex() + " is not in " + Name(id_));
  }
  const uint64_t data_start = kHeaderSize + aliases_.size() * 8 + items_.size() * item_size();
  location->offset = data_start + it->offset;
  location->stored_size = it->stored_size;
  location->raw_size = it->raw_size;
  location->compression = it->compression;
  location->has_crc = version_ >= 2;
  location->crc = it->crc;
  return Status::OK();
}

Status Container::Parse(ContainerId expected_id, const std::string& bytes,
                        std::unique_ptr<Container>* out) {
  return ParseImpl(expected_id, bytes, /*whole=*/true, nullptr, out);
}

Status Container::Parse(ContainerId expected_id, std::string&& bytes, std::unique_ptr<Container>* out) {
  return ParseImpl(expected_id, bytes, /*whole=*/true, &bytes, out);
}

Status Container::ParseImpl(ContainerId expected_id, const std::string& bytes, bool whole, std::string* take,
                            std::unique_ptr<Container>* out) {
  auto corrupt = [expected_id](const std::string& what) {
    return Status::Corruption(Name(expected_id) + ": " + what);
  };
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  if (size < kHeaderSize) {
    return corrupt("too short for a header (" + std::to_string(size) + " bytes)");
  }
  if (DecodeFixed32(p + kMagicOffset) != kMagic) return corrupt("bad magic");
  const uint16_t version = DecodeFixed16(p + kVersionOffset);
  if (version < kOldestFormatVersion || version > kFormatVersion) {
    return corrupt("unsupported format version " + std::to_string(version) + " (this build reads " +
                   std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) + ")");
  }
  const size_t fp_size = p[kFpSizeOffset];
  FingerprintType fp_type;
  if (fp_size == FingerprintSize(FingerprintType::kSha1)) {
    fp_type = FingerprintType::kSha1;
  } else if (fp_size == FingerprintSize(FingerprintType::kSha256)) {
    fp_type = FingerprintType::kSha256;
  } else {
    return corrupt("bad fingerprint size " + std::to_string(fp_size));
  }
  const uint64_t item_count = DecodeFixed32(p + kItemCountOffset);
  const uint64_t alias_count = DecodeFixed32(p + kAliasCountOffset);
  const uint64_t data_size = DecodeFixed64(p + kDataSizeOffset);
  const size_t item_size = ItemSize(fp_size, version);
  // All counts are at most 32 bit, so these sums cannot overflow 64 bit.
  const uint64_t meta_end = kHeaderSize + alias_count * 8 + item_count * item_size;
  if (!whole && meta_end > size) {
    return corrupt("metadata of " + std::to_string(meta_end) + " bytes, have " + std::to_string(size));
  }
  if (whole && (data_size > size || meta_end + data_size != size)) {
    return corrupt("size mismatch: header describes " + std::to_string(meta_end) +
                   " metadata bytes + " + std::to_string(data_size) + " data bytes, have " +
                   std::to_string(size));
  }
  const uint32_t meta_crc = Crc32c(p + kMetaCrcStart, meta_end - kMetaCrcStart);
  if (meta_crc != DecodeFixed32(p + kMetaCrcOffset)) return corrupt("metadata checksum mismatch");
  if (whole) {
    const uint32_t data_crc = Crc32c(p + meta_end, data_size);
    if (data_crc != DecodeFixed32(p + kDataCrcOffset)) return corrupt("data checksum mismatch");
  }

  const ContainerId id = DecodeFixed64(p + kIdOffset);
  std::vector<ContainerId> aliases(alias_count);
  for (uint64_t i = 0; i < alias_count; i++) aliases[i] = DecodeFixed64(p + kHeaderSize + i * 8);
  if (id != expected_id &&
      std::find(aliases.begin(), aliases.end(), expected_id) == aliases.end()) {
    return corrupt("header names container " + std::to_string(id) + ", not " +
                   std::to_string(expected_id) + " or an alias of it");
  }

  auto c = std::make_unique<Container>(id, size, fp_type);
  c->version_ = version;
  c->aliases_ = std::move(aliases);
  c->items_.reserve(item_count);
  // The fingerprint index serves ReadChunk; a metadata-only parse has no data to read.
  if (whole) c->index_.reserve(item_count);
  const uint8_t* q = p + kHeaderSize + alias_count * 8;
  for (uint64_t i = 0; i < item_count; i++, q += item_size) {
    Item item;
    item.fp = Fingerprint(q, fp_size);
    item.offset = DecodeFixed32(q + fp_size);
    item.stored_size = DecodeFixed32(q + fp_size + 4);
    item.raw_size = DecodeFixed32(q + fp_size + 8);
    const uint8_t compression = q[fp_size + 12];
    if (!IsValidCompression(compression)) {
      return corrupt("item " + std::to_string(i) + " has unknown compression " +
                     std::to_string(compression));
    }
    item.compression = static_cast<Compression>(compression);
    item.crc = version >= 2 ? DecodeFixed32(q + fp_size + 13) : 0;
    if (static_cast<uint64_t>(item.offset) + item.stored_size > data_size) {
      return corrupt("item " + std::to_string(i) + " lies outside the data section");
    }
    if (item.compression == Compression::kNone && item.stored_size != item.raw_size) {
      return corrupt("item " + std::to_string(i) + " is raw but its sizes differ");
    }
    if (i > 0 && !(c->items_.back().fp < item.fp)) {
      return corrupt("items are not sorted by fingerprint at item " + std::to_string(i));
    }
    if (whole) c->index_.emplace(item.fp, c->items_.size());
    c->items_.push_back(item);
    c->raw_size_ += item.raw_size;
  }
  if (whole && take != nullptr) {
    c->data_ = std::move(*take);
    c->data_begin_ = meta_end;
  } else if (whole) {
    c->data_.assign(bytes, meta_end, data_size);
  }
  *out = std::move(c);
  return Status::OK();
}

}  // namespace dedupv1
