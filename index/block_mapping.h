// A BlockMapping says which chunk pieces make up the current data of one
// fixed-size block of a volume (paper section 3.5, Figure 3.5). Chunks are
// content-defined and follow the write stream, so a chunk may start in one
// block and end in the next: each item names a piece [chunk_offset,
// chunk_offset + size) of one chunk, and the items laid end to end are the
// block's bytes.
//
// Invariants (checked by CheckInvariants, kept by Overlay):
//  - the items are in block order and cover [0, block_size) exactly;
//  - no item has size 0;
//  - a zero item (container == kZeroContainer: zero data or a hole, nothing
//    stored) is canonical: empty fingerprint (size 0, the mapping does not
//    know the fingerprint type) and chunk_offset 0, whatever zero fingerprint
//    (e.g. Fingerprint::Zero) the writer passed to Overlay; any other item has
//    a non-zero fingerprint and a real container id (not kNoContainer);
//  - adjacent zero items are merged, and so are adjacent pieces that continue
//    each other within the same chunk (same fingerprint and container, the
//    second starts where the first ends), so equal data has one form.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

struct BlockMappingItem {
  Fingerprint fp;              // chunk fingerprint (zero/empty for zero data / holes)
  ContainerId container = kZeroContainer;  // kZeroContainer for zeros/holes (nothing stored)
  uint32_t chunk_offset = 0;   // where in the chunk this piece starts
  uint32_t size = 0;           // bytes of this piece

  bool IsZero() const { return container == kZeroContainer; }
  bool operator==(const BlockMappingItem& o) const {
    return fp == o.fp && container == o.container && chunk_offset == o.chunk_offset &&
           size == o.size;
  }
  bool operator!=(const BlockMappingItem& o) const { return !(*this == o); }
};

class BlockMapping {
 public:
  // A fresh block: one zero item covering the whole block. A block size of 0
  // gives an empty placeholder (e.g. an output argument).
  explicit BlockMapping(uint32_t block_size = 0);

  uint32_t block_size() const { return block_size_; }
  const std::vector<BlockMappingItem>& items() const { return items_; }
  // Set by the writer (e.g. incremented per write of the block); stored and
  // logged with the mapping, not interpreted here.
  uint64_t version() const { return version_; }
  void set_version(uint64_t v) { version_ = v; }

  // Replaces bytes [offset, offset + sum(item sizes)) with |items|, cutting the
  // old items that overlap (adjusting chunk_offset/size of the cut pieces),
  // then merges adjacent zero items (and contiguous pieces of one chunk) and
  // makes zero items canonical.
  // InvalidArgument if the range leaves the block or an item is malformed
  // (size 0, kNoContainer, zero container with a non-zero fingerprint or the
  // other way round, chunk_offset + size beyond 2^32); the mapping is then
  // unchanged.
  Status Overlay(uint32_t offset, const std::vector<BlockMappingItem>& items);

  // True if the block is a single zero item (nothing mapped).
  bool IsAllZero() const;

  // Calls f(item, block_offset, chunk_offset, size) for every piece of the
  // mapping overlapping [offset, offset + len), clipped to that range (and to
  // the block): the piece covers block bytes [block_offset, block_offset +
  // size), which are bytes [chunk_offset, chunk_offset + size) of item's chunk.
  void ForEachPiece(uint32_t offset, uint32_t len,
                    const std::function<void(const BlockMappingItem& item, uint32_t block_offset,
                                             uint32_t chunk_offset, uint32_t size)>& f) const;

  // Compact binary form (little endian, docs/formats.md), format 2: format
  // byte 2, the block's id (volume u32, block u64), version u64, block size
  // u32, item count u32, then per item: fp size u8 (bit 7 set = all-zero
  // fingerprint, bytes omitted) + fp bytes, container u64, chunk offset u32,
  // size u32; finally CRC32C u32 of everything before it. The id is inside
  // the checksum, so a record stored (or logged) under another block's key
  // is caught by Parse: the store's key and the record's id must agree.
  void Serialize(const BlockId& id, std::string* out) const;
  // Parses the Serialize output of block |id|. Any mismatch (checksum,
  // format, length, broken invariant, or a record that carries another
  // block's id) is Corruption("block mapping of block <volume>/<block>:
  // ...") and leaves |out| unchanged. Format 1 (written by older builds:
  // no id, otherwise the same fields) is still read; it cannot be checked
  // against |id|.
  static Status Parse(const std::string& data, const BlockId& id, BlockMapping* out);

  // What a scan needs to know of a stored record without parsing its items:
  // its format, the block it belongs to (format 2) and its version.
  struct RecordHeader {
    uint8_t format = 0;
    bool has_owner = false;  // format 2: |owner| is the block id it carries
    BlockId owner;
    uint64_t version = 0;
  };
  // Verifies the checksum and the format byte of a serialized mapping and
  // reads its header; Corruption("block mapping: ...") if either fails.
  static Status ParseHeader(const std::string& data, RecordHeader* out);

  // OK, or Corruption("block mapping: ...") naming the broken invariant.
  Status CheckInvariants() const;
  // One line, e.g. "block_size=131072 version=3 items=[0+4096 fp=ab12cd34.. c=5 off=0; ...]".
  std::string DebugString() const;

  bool operator==(const BlockMapping& o) const {
    return block_size_ == o.block_size_ && version_ == o.version_ && items_ == o.items_;
  }
  bool operator!=(const BlockMapping& o) const { return !(*this == o); }

 private:
  // Checks the checksum and format and reads the header; |name| prefixes errors.
  static Status ParseHeaderNamed(const std::string& data, const std::string& name, RecordHeader* header,
                                 size_t* items_at);
  Status CheckInvariantsNamed(const std::string& name) const;

  uint32_t block_size_ = 0;
  uint64_t version_ = 0;
  std::vector<BlockMappingItem> items_;
};

}  // namespace dedupv1
