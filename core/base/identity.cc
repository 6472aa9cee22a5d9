#include "core/base/identity.h"

#include <random>

namespace dedupv1 {

const char kInstanceIdFile[] = "instance-id";

Id128 NewRandomId128() {
  // std::random_device reads the kernel's random source (getrandom) on Linux.
  std::random_device rd;
  Id128 id{};
  do {
    for (size_t i = 0; i < id.size(); i += 4) {
      const uint32_t r = rd();
      for (size_t j = 0; j < 4; j++) id[i + j] = static_cast<uint8_t>(r >> (8 * j));
    }
  } while (IsZero(id));
  return id;
}

bool IsZero(const Id128& id) {
  for (uint8_t b : id) {
    if (b != 0) return false;
  }
  return true;
}

std::string Id128ToHex(const Id128& id) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(32);
  for (uint8_t b : id) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

bool ParseId128Hex(const std::string& text, Id128* id) {
  if (text.size() != 32) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  Id128 out{};
  for (size_t i = 0; i < 16; i++) {
    const int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  *id = out;
  return true;
}

Status ReadInstanceId(Env* env, const std::string& data_dir, Id128* id) {
  const std::string path = JoinPath(data_dir, kInstanceIdFile);
  if (!env->FileExists(path)) return Status::NotFound(path + " does not exist");
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env, path, &text));
  if (!text.empty() && text.back() == '\n') text.pop_back();
  if (!ParseId128Hex(text, id) || IsZero(*id)) {
    return Status::Corruption(path + 
                              ": expected an instance id of 32 hex digits (delete the file to make a new id)");
  }
  return Status::OK();
}

Status LoadOrCreateInstanceId(Env* env, const std::string& data_dir, Id128* id) {
  Status s = ReadInstanceId(env, data_dir, id);
  if (!s.IsNotFound()) return s;
  const Id128 fresh = NewRandomId128();
  DEDUPV1_RETURN_IF_ERROR(
      WriteFileAtomically(env, JoinPath(data_dir, kInstanceIdFile), Id128ToHex(fresh) + "\n"));
  *id = fresh;
  return Status::OK();
}

}  // namespace dedupv1
