// A Container is the unit in which chunk data is written to and read from the
// container store: up to |capacity| bytes (the whole serialized size,
// metadata included) holding many chunks, each found by its fingerprint.
//
// Serialized form (little endian):
//   header   (kHeaderSize bytes)
//     magic u32 | meta_crc u32 | data_crc u32 | version u16 | fp_size u8 |
//     reserved u8 | id u64 | item_count u32 | alias_count u32 | data_size u64
//   aliases  (alias_count x u64): older ids this container also answers to
//            (GC merges containers and the merged one keeps the old ids)
//   items    (item_count x (fp_size + 17) bytes), sorted by fingerprint:
//     fingerprint | offset u32 (in data section) | stored_size u32 |
//     raw_size u32 | compression u8 | crc u32
//   data     (data_size bytes), chunks in the order they were added
// meta_crc is the CRC32C of bytes [8, end of items): it covers the header
// (including data_crc), the aliases and the items. data_crc covers the data
// section. Parse verifies both and every bound before trusting any field.
// An item's crc is the CRC32C of the chunk's stored bytes: a chunk read alone
// (a range of the container, without data_crc) is checked by it, a checksum
// the cores compute ten times faster than the chunk's SHA-1 fingerprint.
// Format 1 (written before format 2 existed) has 13-byte items without the
// crc; it is still read, and its chunks read alone are checked by their
// fingerprints. A container keeps the format it was parsed with.
//
// In memory the chunk data lives in one growing buffer plus a hash index
// fingerprint -> item. A Container is not thread-safe; once no one calls Add
// any more (it was handed to the commit threads or was parsed) concurrent
// const calls are safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "chunkstore/compression.h"
#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

class Container {
 public:
  static constexpr size_t kDefaultCapacity = 4 << 20;
  static constexpr uint32_t kMagic = 0x31434444;  // "DDC1"
  static constexpr uint16_t kFormatVersion = 2;        // what new containers are written in
  static constexpr uint16_t kOldestFormatVersion = 1;  // the oldest that is read
  static constexpr size_t kHeaderSize = 40;
  // Serialized size of one metadata item in format |version|.
  static constexpr size_t ItemSize(size_t fp_size, uint16_t version = kFormatVersion) {
    return fp_size + (version >= 2 ? 17 : 13);
  }
  // Largest chunk (stored size) an empty container of |capacity| can take.
  static size_t MaxChunkSize(size_t capacity, FingerprintType fp_type);

  Container(ContainerId id, size_t capacity, FingerprintType fp_type);
  // For a container being filled: its data area allocated once at capacity,
  // instead of a doubling series of copies into fresh pages.
  void ReserveData() { data_.reserve(capacity_); }

  ContainerId id() const { return id_; }
  uint16_t format_version() const { return version_; }
  FingerprintType fp_type() const { return fp_type_; }
  size_t capacity() const { return capacity_; }

  // Adds a chunk, compressing it with |compression| if that makes it smaller.
  // Returns false (and adds nothing) if the serialized container would exceed
  // capacity or |fp| has the wrong size. Adding a fingerprint that is already
  // present keeps the first copy (same fingerprint, same content) and returns
  // true.
  bool Add(const Fingerprint& fp, const uint8_t* data, size_t n, Compression compression);
  // Like Add for a chunk the caller already compressed (or decided not to):
  // |stored| are the bytes as kept, |stored_as| how they are encoded and
  // |raw_size| their size after decompression. Lets the chunk store compress
  // outside its lock.
  bool AddStored(const Fingerprint& fp, std::string_view stored, size_t raw_size,
                 Compression stored_as);

  bool Contains(const Fingerprint& fp) const;
  // The raw (decompressed) chunk. NotFound if absent; Corruption naming the
  // container if it does not decompress.
  Status ReadChunk(const Fingerprint& fp, std::string* data) const;
  // Like ReadChunk without a copy: |data| views this container's bytes (a
  // chunk stored raw) or |scratch| (a compressed one, decompressed there).
  Status ChunkView(const Fingerprint& fp, std::string* scratch, std::string_view* data) const;
  // All fingerprints, sorted.
  std::vector<Fingerprint> Fingerprints() const;
  // Bytes the chunk takes in the data section plus its metadata item (what
  // dropping it from the container saves); 0 if absent.
  size_t FootprintOf(const Fingerprint& fp) const;

  size_t item_count() const { return items_.size(); }
  size_t serialized_size() const;
  // Bytes of the data section (chunks as stored, after compression).
  size_t data_size() const { return Data().size(); }
  // Bytes of the chunks before compression.
  uint64_t raw_size() const { return raw_size_; }
  std::chrono::steady_clock::time_point created() const { return created_; }

  const std::vector<ContainerId>& aliases() const { return aliases_; }
  // Replaces the alias list. Returns false (and changes nothing) if the
  // serialized container would exceed capacity.
  bool SetAliases(std::vector<ContainerId> aliases);
  // True if |id| is this container's id or one of its aliases.
  bool AnswersTo(ContainerId id) const;

  Status Serialize(std::string* out) const;
  // Parses and verifies a serialized container. Corruption naming the
  // container id (and which check failed) on any mismatch, including a header
  // id that is neither |expected_id| nor one of its aliases. The parsed
  // container is sealed: its capacity is its serialized size.
  static Status Parse(ContainerId expected_id, const std::string& bytes,
                      std::unique_ptr<Container>* out);
  // Parse that keeps |bytes| as the container's memory instead of copying
  // its data section out of them (a read of a whole container allocates its
  // megabytes once).
  static Status Parse(ContainerId expected_id, std::string&& bytes, std::unique_ptr<Container>* out);

  // Where a chunk's stored bytes lie in the serialized container.
  struct ChunkLocation {
    uint64_t offset = 0;  // from the start of the serialized container
    uint32_t stored_size = 0;
    uint32_t raw_size = 0;
    Compression compression = Compression::kNone;
    bool has_crc = false;  // format 2 on: |crc| checks the stored bytes
    uint32_t crc = 0;      // CRC32C of the stored bytes
  };
  // Parses only the metadata of |head| (see ParseFingerprints) into a
  // container without data, for Locate.
  static Status ParseMetadataOnly(ContainerId expected_id, const std::string& head,
                                  std::unique_ptr<Container>* out);
  // Location of |fp| in a container from ParseMetadataOnly or Parse (items
  // sorted by fingerprint). NotFound if absent.
  Status Locate(const Fingerprint& fp, ChunkLocation* location) const;

  // Reading only the metadata: the container cache filter needs a committed
  // container's fingerprints, not its 4 MiB of data.
  // MetadataSize reads from the header in |head| (at least kHeaderSize bytes
  // of a serialized container) how many leading bytes hold the metadata.
  static Status MetadataSize(ContainerId expected_id, const std::string& head, size_t* size);
  // The alias count in the header in |head| (at least kHeaderSize bytes): how
  // many older ids a merged container answers to (0: never merged). Checks
  // the magic only; the CRCs need the whole metadata.
  static Status HeaderAliasCount(ContainerId expected_id, const std::string& head, uint32_t* count);
  // The sorted fingerprints from |head|, the first MetadataSize bytes (or
  // more) of a serialized container; verifies meta_crc and the same fields
  // Parse does, except the data section. Optionally each chunk's footprint
  // (as FootprintOf) and the container's serialized size.
  static Status ParseFingerprints(ContainerId expected_id, const std::string& head,
                                  std::vector<Fingerprint>* fps,
                                  std::vector<size_t>* footprints = nullptr,
                                  uint64_t* serialized_size = nullptr);

 private:
  // Parse; with |whole| false |bytes| is a metadata prefix and the data
  // section is neither checked nor copied.
  // |take|: null, or &bytes when the container may keep them (moved).
  static Status ParseImpl(ContainerId expected_id, const std::string& bytes, bool whole, std::string* take,
                          std::unique_ptr<Container>* out);
  // The data section: data_ from data_begin_ on.
  std::string_view Data() const { return std::string_view(data_).substr(data_begin_); }

  struct Item {
    Fingerprint fp;
    uint32_t offset;
    uint32_t stored_size;
    uint32_t raw_size;
    Compression compression;
    uint32_t crc;  // of the stored bytes; 0 in a format 1 container
  };
  size_t item_size() const { return ItemSize(fp_size_, version_); }

  ContainerId id_;
  size_t capacity_;
  FingerprintType fp_type_;
  size_t fp_size_;
  uint16_t version_ = kFormatVersion;
  std::chrono::steady_clock::time_point created_;
  std::vector<ContainerId> aliases_;
  std::vector<Item> items_;  // in insertion order
  std::unordered_map<Fingerprint, size_t, FingerprintHasher> index_;  // fp -> items_ index
  std::string data_;
  // A container parsed from bytes it may keep (Parse(&&)) holds its whole
  // serialized form in data_, the data section from here on. Such a
  // container is sealed (capacity = serialized size), so AddStored never
  // appends to it.
  size_t data_begin_ = 0;
  uint64_t raw_size_ = 0;
};

}  // namespace dedupv1
