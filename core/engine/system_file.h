// The system file, DATA-DIR/system (core/engine/data_dir.h): what the stored
// data depends on and a config must never change, the store's format, its
// block size and its fingerprint, as "key = value" lines ended by a
// checksum line (core/base/crc_text.h), so that a flipped byte is refused
// instead of being read as another block size or format.
//
// The store's format (kStoreFormat) says what a build must understand to
// read the directory; a build refuses a newer one and upgrades an older one
// in place, the system file first:
// 1: the first.
// 2: GC's dead-chunk marks persist (containers/dead-chunks). A build that
//    reads format 1 would ignore them, hand a marked chunk out again and
//    leave the mark to drop it at a later merge, so it must refuse the
//    directory.
// 3: block mappings (block index store and log events) are written in
//    mapping format 2, which carries the block's id inside its checksum; a
//    build that reads format 2 would fail every such read with "unknown
//    format". The block index rewrites its old records at open
//    (ScanBlockStore). Format 3 also brought checksum lines to `system` and
//    `volumes`, and Tokyo Cabinet page checksums to block index stores
//    created from then on (a build without them cannot open such a store).
// 4: containers are written in container format 2 (each chunk's CRC32C in
//    its item, chunkstore/container.h), which a build of format 3 refuses
//    as "unsupported format version"; format 1 containers stay and are read.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/fingerprint.h"
#include "core/base/status.h"

namespace dedupv1 {

constexpr uint64_t kStoreFormat = 4;
constexpr uint64_t kOldestStoreFormatRead = 1;

struct SystemFileFields {
  std::string format;        // as written
  uint64_t format_number = 0;
  // Whether |format| is one this build reads (kOldestStoreFormatRead ..
  // kStoreFormat). If not, the fields below are not read at all: a newer
  // build's file may say things this one does not know, and its directory
  // is to be refused as newer (the caller's InvalidArgument), not as damaged.
  bool format_readable = false;
  uint64_t block_size = 0;
  std::string block_size_text;  // as written
  FingerprintType fingerprint = FingerprintType::kSha1;
  std::string fingerprint_text;  // as written
  bool had_crc = false;
};

// The file a store of |block_size| and |fingerprint| has in this build's
// format, checksum line included.
std::string EncodeSystemFile(uint64_t block_size, FingerprintType fingerprint);

// Reads |text|, the file at |path|, line by line. A file whose checksum
// line fails, that does not say each of format, block-size and fingerprint
// exactly once, in a form this build knows, or that lacks a checksum line
// although its format is this build's, is Corruption naming the file (and
// the line) and saying to restore it; never guessed at. Reading stops at a
// format line whose format this build does not read (format_readable
// false), as the lines before it are checked.
Status ParseSystemFile(const std::string& path, const std::string& text, SystemFileFields* fields);

// Whether the store |stored| describes (the system file at |path| of the
// data directory |data_dir|) may be opened with |block_size| and
// |fingerprint|: InvalidArgument naming the format this build does not
// read, or the key the config would change (which would misread the data).
Status CheckSystemFileAgainst(const std::string& data_dir, const std::string& path, const SystemFileFields& stored,
                              uint64_t block_size, FingerprintType fingerprint);

}  // namespace dedupv1
