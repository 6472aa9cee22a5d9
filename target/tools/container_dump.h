// ContainerDump decodes a serialized container field by field without
// trusting it (docs/architecture.md 3.1), so dedupv1_debug can show the
// header and items of a damaged container as far as its bytes allow.
// Container::Parse stays the authority on whether a container is good: the
// dump records Parse's verdict next to the raw fields and its own CRC
// computations, and says where decoding had to stop.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {
namespace tools {

struct ContainerDumpItem {
  Fingerprint fp;
  uint32_t offset = 0;       // in the data section
  uint32_t stored_size = 0;  // bytes as stored (after compression)
  uint32_t raw_size = 0;     // bytes after decompression
  uint8_t compression = 0;   // chunkstore/compression.h value
  bool has_crc = false;      // format 2 on: the stored bytes' CRC32C
  uint32_t crc = 0;
  bool crc_computed = false;  // the stored bytes lie within the file
  uint32_t computed_crc = 0;
};

struct ContainerDump {
  uint64_t file_size = 0;
  bool header_complete = false;  // the file holds a whole header
  uint32_t magic = 0;
  uint32_t meta_crc = 0;
  uint32_t data_crc = 0;
  uint16_t version = 0;
  uint8_t fp_size = 0;
  uint64_t id = 0;
  uint32_t item_count = 0;
  uint32_t alias_count = 0;
  uint64_t data_size = 0;
  // Recomputed over the bytes where the header says they are; valid only if
  // crcs_computed.
  bool crcs_computed = false;
  uint32_t computed_meta_crc = 0;
  uint32_t computed_data_crc = 0;
  std::vector<uint64_t> aliases;
  std::vector<ContainerDumpItem> items;  // as many as the bytes hold
  std::string decode_error;              // why decoding stopped early; empty if complete
  Status verdict;                        // Container::Parse(expected id, bytes)
};

ContainerDump DumpContainer(ContainerId expected_id, const std::string& bytes);

// Prints the header, the verdict and one line per item; items past |max_items|
// are summarized (0 = all).
void PrintContainerDump(const ContainerDump& dump, std::ostream& out, size_t max_items = 0);

// The item of |fp| in |dump|, or null.
const ContainerDumpItem* FindItem(const ContainerDump& dump, const Fingerprint& fp);

// "fp <hex> offset O stored S raw R compression zlib"
std::string DescribeItem(const ContainerDumpItem& item);

}  // namespace tools
}  // namespace dedupv1
