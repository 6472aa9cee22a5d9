#include "core/base/crc_text.h"

#include <cstdio>

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

constexpr char kPrefix[] = "crc ";
constexpr size_t kPrefixLen = sizeof(kPrefix) - 1;
constexpr size_t kHexDigits = 8;

bool ParseHex32(const std::string& s, uint32_t* out) {
  if (s.size() != kHexDigits) return false;
  uint32_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return false;
    v = v << 4 | static_cast<uint32_t>(d);
  }
  *out = v;
  return true;
}

}  // namespace

std::string AppendCrcLine(std::string text) {
  char line[32];
  std::snprintf(line, sizeof(line), "%s%08x\n", kPrefix, Crc32c(text.data(), text.size()));
  text += line;
  return text;
}

Status StripCrcLine(const std::string& path, const std::string& text, bool required, std::string* body,
                    bool* had_crc) {
  // The last line: after the newline before the final one (a file cut short
  // may not end with a newline; then its last fragment is the last line).
  size_t end = text.size();
  if (end > 0 && text[end - 1] == '\n') end--;
  const size_t start = text.rfind('\n', end == 0 ? 0 : end - 1);
  const size_t line_start = (start == std::string::npos || end == 0) ? 0 : start + 1;
  const std::string last = text.substr(line_start, end - line_start);
  if (last.compare(0, kPrefixLen, kPrefix) != 0) {
    if (required) {
      return Status::Corruption(path + " has no checksum line (cut short or damaged); restore it from a backup");
    }
    *body = text;
    *had_crc = false;
    return Status::OK();
  }
  uint32_t stored = 0;
  if (end != text.size() - 1 || !ParseHex32(last.substr(kPrefixLen), &stored)) {
    return Status::Corruption(path + ": malformed checksum line '" + last + "'; restore it from a backup");
  }
  const uint32_t computed = Crc32c(text.data(), line_start);
  if (stored != computed) {
    char why[96];
    std::snprintf(why, sizeof(why), " is damaged (checksum %08x, content %08x); restore it from a backup", stored,
                  computed);
    return Status::Corruption(path + why);
  }
  *body = text.substr(0, line_start);
  *had_crc = true;
  return Status::OK();
}

}  // namespace dedupv1
