#include "core/engine/system_file.h"

#include <map>

#include "core/base/config.h"
#include "core/base/crc_text.h"

namespace dedupv1 {

std::string EncodeSystemFile(uint64_t block_size, FingerprintType fingerprint) {
  return AppendCrcLine("format = " + std::to_string(kStoreFormat) + "\n" + "block-size = " +
                       std::to_string(block_size) + "\n" + "fingerprint = " + FingerprintTypeName(fingerprint) +
                       "\n");
}

Status ParseSystemFile(const std::string& path, const std::string& text, SystemFileFields* fields) {
  std::string body;
  bool had_crc = false;
  DEDUPV1_RETURN_IF_ERROR(StripCrcLine(path, text, false, &body, &had_crc));
  const std::string damaged = "; " + path + " is damaged: restore it from a backup of the data directory";
  Config stored;
  Status parsed = Config::Parse(body, path, &stored);
  if (!parsed.ok()) return Status::Corruption(parsed.message() + damaged);
  SystemFileFields out;
  out.had_crc = had_crc;
  std::map<std::string, int> line_of = {{"format", 0}, {"block-size", 0}, {"fingerprint", 0}};
  for (const auto& e : stored.entries()) {
    const std::string where = path + ":" + std::to_string(e.line) + ": ";
    auto known = line_of.find(e.key);
    if (known == line_of.end()) {
      return Status::Corruption(where + "unknown key '" + e.key + "' (the file holds format, block-size and "
                                "fingerprint)" + damaged);
    }
    if (known->second != 0) {
      return Status::Corruption(where + e.key + " again (first on line " + std::to_string(known->second) + ")" +
                                damaged);
    }
    known->second = e.line;
    if (e.key == "format") {
      out.format = e.value;
      out.format_readable = ParseUint(e.value, &out.format_number).ok() &&
                            out.format_number >= kOldestStoreFormatRead && out.format_number <= kStoreFormat;
      if (!out.format_readable) {  // a newer build's (or no number): not this build's to judge
        *fields = out;
        return Status::OK();
      }
    } else if (e.key == "block-size") {
      if (!ParseUint(e.value, &out.block_size).ok()) {
        return Status::Corruption(where + "block-size '" + e.value + "' is not a number" + damaged);
      }
      out.block_size_text = e.value;
    } else {
      if (!ParseFingerprintType(e.value, &out.fingerprint).ok()) {
        return Status::Corruption(where + "unknown fingerprint '" + e.value + "'" + damaged);
      }
      out.fingerprint_text = e.value;
    }
  }
  for (const auto& [key, line] : line_of) {
    if (line == 0) return Status::Corruption(path + ": no " + key + " line" + damaged);
  }
  // Files of this format are written with their checksum line; only an
  // older format's file (upgraded at its open) may lack it.
  if (!had_crc && out.format_number == kStoreFormat) {
    return Status::Corruption(path + ": no checksum line" + damaged);
  }
  *fields = out;
  return Status::OK();
}

Status CheckSystemFileAgainst(const std::string& data_dir, const std::string& path, const SystemFileFields& stored,
                              uint64_t block_size, FingerprintType fingerprint) {
  if (!stored.format_readable) {
    return Status::InvalidArgument("data directory " + data_dir + " has format " + stored.format + " (" + path +
                                   "); this build reads formats " + std::to_string(kOldestStoreFormatRead) + " to " +
                                   std::to_string(kStoreFormat));
  }
  auto changed = [&](const char* key, const std::string& stored_value, const std::string& config_value) {
    return Status::InvalidArgument("data directory " + data_dir + " was created with " + key + " = " +
                                   stored_value + " but the config says " + config_value +
                                   "; changing it would misread the stored data");
  };
  if (stored.block_size != block_size) return changed("block-size", stored.block_size_text, std::to_string(block_size));
  if (stored.fingerprint != fingerprint) {
    return changed("fingerprint", stored.fingerprint_text, FingerprintTypeName(fingerprint));
  }
  return Status::OK();
}

}  // namespace dedupv1
