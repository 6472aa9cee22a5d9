#include "target/tools/container_dump.h"

#include <fmt/format.h>

#include "chunkstore/compression.h"
#include "chunkstore/container.h"
#include "core/base/coding.h"

namespace dedupv1 {
namespace tools {

namespace {
// Field offsets of the header (chunkstore/container.h).
constexpr size_t kMetaCrcStart = 8;
}  // namespace

ContainerDump DumpContainer(ContainerId expected_id, const std::string& bytes) {
  ContainerDump d;
  std::unique_ptr<Container> parsed;
  d.verdict = Container::Parse(expected_id, bytes, &parsed);
  d.file_size = bytes.size();
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t n = bytes.size();
  if (n < Container::kHeaderSize) {
    d.decode_error = fmt::format("file of {} bytes is shorter than the {}-byte header", n,
                                 Container::kHeaderSize);
    return d;
  }
  d.header_complete = true;
  d.magic = DecodeFixed32(p);
  d.meta_crc = DecodeFixed32(p + 4);
  d.data_crc = DecodeFixed32(p + 8);
  d.version = DecodeFixed16(p + 12);
  d.fp_size = p[14];
  d.id = DecodeFixed64(p + 16);
  d.item_count = DecodeFixed32(p + 24);
  d.alias_count = DecodeFixed32(p + 28);
  d.data_size = DecodeFixed64(p + 32);

  size_t pos = Container::kHeaderSize;
  for (uint32_t i = 0; i < d.alias_count; i++) {
    if (pos + 8 > n) {
      d.decode_error = fmt::format("alias {} of {} lies past the end of the file", i, d.alias_count);
      return d;
    }
    d.aliases.push_back(DecodeFixed64(p + pos));
    pos += 8;
  }
  if (d.fp_size == 0 || d.fp_size > Fingerprint::kMaxSize) {
    d.decode_error = fmt::format("fingerprint size {} is impossible; items not decoded", d.fp_size);
    return d;
  }
  if (d.version < Container::kOldestFormatVersion || d.version > Container::kFormatVersion) {
    d.decode_error = fmt::format("format version {} is unknown to this build; items not decoded", d.version);
    return d;
  }
  const size_t item_size = Container::ItemSize(d.fp_size, d.version);
  for (uint32_t i = 0; i < d.item_count; i++) {
    if (pos + item_size > n) {
      d.decode_error = fmt::format("item {} of {} lies past the end of the file", i, d.item_count);
      return d;
    }
    ContainerDumpItem item;
    item.fp = Fingerprint(p + pos, d.fp_size);
    item.offset = DecodeFixed32(p + pos + d.fp_size);
    item.stored_size = DecodeFixed32(p + pos + d.fp_size + 4);
    item.raw_size = DecodeFixed32(p + pos + d.fp_size + 8);
    item.compression = p[pos + d.fp_size + 12];
    item.has_crc = d.version >= 2;
    if (item.has_crc) item.crc = DecodeFixed32(p + pos + d.fp_size + 13);
    d.items.push_back(item);
    pos += item_size;
  }
  const size_t meta_end = pos;
  if (meta_end + d.data_size > n) {
    d.decode_error = fmt::format("data section of {} bytes at offset {} lies past the end of the file",
                                 d.data_size, meta_end);
    return d;
  }
  d.crcs_computed = true;
  d.computed_meta_crc = Crc32c(p + kMetaCrcStart, meta_end - kMetaCrcStart);
  d.computed_data_crc = Crc32c(p + meta_end, d.data_size);
  for (ContainerDumpItem& item : d.items) {
    if (!item.has_crc || uint64_t{item.offset} + item.stored_size > d.data_size) continue;
    item.crc_computed = true;
    item.computed_crc = Crc32c(p + meta_end + item.offset, item.stored_size);
  }
  if (meta_end + d.data_size != n) {
    d.decode_error = fmt::format("{} trailing bytes after the data section", n - meta_end - d.data_size);
  }
  return d;
}

const ContainerDumpItem* FindItem(const ContainerDump& dump, const Fingerprint& fp) {
  for (const auto& item : dump.items) {
    if (item.fp == fp) return &item;
  }
  return nullptr;
}

std::string DescribeItem(const ContainerDumpItem& item) {
  const char* comp = IsValidCompression(item.compression)
                         ? CompressionName(static_cast<Compression>(item.compression))
                         : "INVALID";
  std::string crc;
  if (item.has_crc) {
    crc = fmt::format(" crc 0x{:08x}", item.crc);
    if (item.crc_computed && item.computed_crc != item.crc) {
      crc += fmt::format(" MISMATCH (computed 0x{:08x})", item.computed_crc);
    }
  }
  return fmt::format("fp {} offset {} stored {} raw {} compression {}{}", item.fp.ToHex(), item.offset,
                     item.stored_size, item.raw_size, comp, crc);
}

void PrintContainerDump(const ContainerDump& d, std::ostream& out, size_t max_items) {
  out << fmt::format("  file size:    {}\n", d.file_size);
  out << "  verdict:      " << (d.verdict.ok() ? "OK (magic, bounds, metadata and data CRCs check out)"
                                               : d.verdict.ToString())
      << "\n";
  if (!d.header_complete) {
    out << "  header:       " << d.decode_error << "\n";
    return;
  }
  out << fmt::format("  magic:        0x{:08x}{}\n", d.magic, d.magic == Container::kMagic ? " (DDC1)" : " (WRONG)");
  out << fmt::format("  version:      {}\n", d.version);
  out << fmt::format("  header id:    {}\n", d.id);
  out << fmt::format("  fp size:      {}\n", d.fp_size);
  out << fmt::format("  items:        {}\n", d.item_count);
  out << fmt::format("  aliases:      {}", d.alias_count);
  for (uint64_t a : d.aliases) out << " " << a;
  out << "\n";
  out << fmt::format("  data size:    {}\n", d.data_size);
  if (d.crcs_computed) {
    out << fmt::format("  meta crc:     stored 0x{:08x} computed 0x{:08x}{}\n", d.meta_crc, d.computed_meta_crc,
                       d.meta_crc == d.computed_meta_crc ? "" : "  MISMATCH");
    out << fmt::format("  data crc:     stored 0x{:08x} computed 0x{:08x}{}\n", d.data_crc, d.computed_data_crc,
                       d.data_crc == d.computed_data_crc ? "" : "  MISMATCH");
  } else {
    out << fmt::format("  meta crc:     stored 0x{:08x} (not recomputed)\n", d.meta_crc);
    out << fmt::format("  data crc:     stored 0x{:08x} (not recomputed)\n", d.data_crc);
  }
  if (!d.decode_error.empty()) out << "  decoding:     " << d.decode_error << "\n";
  if (!d.verdict.ok() && !d.items.empty()) {
    out << "  items below are decoded from a container that failed its checks: do not trust them\n";
  }
  uint64_t raw = 0, stored = 0;
  for (const auto& item : d.items) {
    raw += item.raw_size;
    stored += item.stored_size;
  }
  out << fmt::format("  chunk bytes:  {} raw, {} stored\n", raw, stored);
  for (size_t i = 0; i < d.items.size(); i++) {
    if (max_items > 0 && i == max_items) {
      out << fmt::format("  ... {} more items\n", d.items.size() - max_items);
      break;
    }
    out << fmt::format("  item {:5}: {}\n", i, DescribeItem(d.items[i]));
  }
}

}  // namespace tools
}  // namespace dedupv1
