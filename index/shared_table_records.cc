#include "index/shared_table_records.h"

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

constexpr uint8_t kEntryVersion = 2;
// version, state, container, claimer slot, incarnation, epoch, CRC
constexpr size_t kEntryBytes = 1 + 1 + 8 + 2 + 4 + 8 + 4;
// count, last event id, CRC
constexpr size_t kUsageBytes = 8 + 8 + 4;
// why, slot, epoch, CRC
constexpr size_t kHintBytes = 1 + 2 + 8 + 4;

// Appends a CRC32C over |key| and |value| to |value|.
std::string Sealed(const std::string& key, std::string value) {
  PutFixed32(&value, Crc32cKeyed(key, value));
  return value;
}

bool SealOk(const std::string& key, const std::string& value) {
  if (value.size() < 4) return false;
  const size_t n = value.size() - 4;
  return DecodeFixed32(reinterpret_cast<const uint8_t*>(value.data()) + n) ==
         Crc32cKeyed(key, std::string_view(value).substr(0, n));
}

bool ValidState(uint8_t s) {
  return s == static_cast<uint8_t>(SharedEntry::State::kUncommitted) ||
         s == static_cast<uint8_t>(SharedEntry::State::kCommitted) ||
         s == static_cast<uint8_t>(SharedEntry::State::kDead);
}

// Whether |key| is a key of type |type| of a fingerprint of |fp_size| bytes
// followed by |tail| bytes.
bool KeyShape(const std::string& key, char type, size_t fp_size, size_t tail) {
  return key.size() == 1 + fp_size + tail && key[0] == type;
}

}  // namespace

std::string SharedEntry::ToString() const {
  return std::string(1, static_cast<char>(state)) + "{container " + std::to_string(container) + ", slot " +
         std::to_string(claimer_slot) + "/" + std::to_string(claimer_incarnation) + ", epoch " +
         std::to_string(epoch) + "}";
}

std::string SharedEntryKey(const Fingerprint& fp) { return kSharedEntryType + fp.ToBytes(); }
std::string SharedHintKey(const Fingerprint& fp) { return kSharedHintType + fp.ToBytes(); }
std::string SharedUsagePrefix(const Fingerprint& fp) { return kSharedUsageType + fp.ToBytes(); }

std::string SharedUsageKey(const Fingerprint& fp, uint16_t slot) {
  std::string key = SharedUsagePrefix(fp);
  key.push_back(static_cast<char>(slot >> 8));  // big-endian: slots in order in a prefix read
  key.push_back(static_cast<char>(slot & 0xff));
  return key;
}

std::string SharedKeyName(const std::string& key) {
  static const char digits[] = "0123456789abcdef";
  if (key.empty()) return "(empty)";
  std::string out(1, key[0]);
  for (size_t i = 1; i < key.size(); i++) {
    const unsigned char c = key[i];
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string EncodeSharedEntry(const Fingerprint& fp, const SharedEntry& e) {
  std::string v;
  v.push_back(static_cast<char>(kEntryVersion));
  v.push_back(static_cast<char>(e.state));
  PutFixed64(&v, e.container);
  PutFixed16(&v, e.claimer_slot);
  PutFixed32(&v, e.claimer_incarnation);
  PutFixed64(&v, e.epoch);
  return Sealed(SharedEntryKey(fp), std::move(v));
}

Status DecodeSharedEntry(const std::string& key, const std::string& value, size_t fp_size, SharedEntry* e) {
  if (!KeyShape(key, kSharedEntryType, fp_size, 0)) {
    return Status::Corruption("entry key of " + std::to_string(key.size()) + " bytes");
  }
  if (value.size() != kEntryBytes) {
    return Status::Corruption("entry of " + std::to_string(value.size()) + " bytes, expected " +
                              std::to_string(kEntryBytes));
  }
  if (!SealOk(key, value)) return Status::Corruption("entry CRC mismatch");
  const uint8_t* p = reinterpret_cast<const uint8_t*>(value.data());
  if (p[0] != kEntryVersion) return Status::Corruption("entry version " + std::to_string(p[0]) + ", expected 2");
  if (!ValidState(p[1])) return Status::Corruption("entry state " + std::to_string(p[1]) + " is not U, C or D");
  e->state = static_cast<SharedEntry::State>(p[1]);
  e->container = DecodeFixed64(p + 2);
  e->claimer_slot = DecodeFixed16(p + 10);
  e->claimer_incarnation = DecodeFixed32(p + 12);
  e->epoch = DecodeFixed64(p + 16);
  return Status::OK();
}

std::string EncodeSharedUsage(const std::string& key, const SharedSlotUsage& u) {
  std::string v;
  PutFixed64(&v, static_cast<uint64_t>(u.count));
  PutFixed64(&v, u.last_event_id);
  return Sealed(key, std::move(v));
}

Status DecodeSharedUsage(const std::string& key, const std::string& value, size_t fp_size, uint16_t* slot,
                         SharedSlotUsage* u) {
  if (!KeyShape(key, kSharedUsageType, fp_size, 2)) {
    return Status::Corruption("usage key of " + std::to_string(key.size()) + " bytes");
  }
  if (value.size() != kUsageBytes || !SealOk(key, value)) {
    return Status::Corruption("usage value damaged (" + std::to_string(value.size()) + " bytes or CRC mismatch)");
  }
  const auto* k = reinterpret_cast<const uint8_t*>(key.data()) + 1 + fp_size;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(value.data());
  *slot = static_cast<uint16_t>((k[0] << 8) | k[1]);
  u->count = static_cast<int64_t>(DecodeFixed64(p));
  u->last_event_id = DecodeFixed64(p + 8);
  return Status::OK();
}

std::string EncodeSharedHint(const Fingerprint& fp, char why, uint16_t slot, uint64_t epoch) {
  std::string v(1, why);
  PutFixed16(&v, slot);
  PutFixed64(&v, epoch);
  return Sealed(SharedHintKey(fp), std::move(v));
}

Status DecodeSharedHint(const std::string& key, const std::string& value, size_t fp_size, SharedHint* h) {
  if (!KeyShape(key, kSharedHintType, fp_size, 0)) {
    return Status::Corruption("hint key of " + std::to_string(key.size()) + " bytes");
  }
  if (value.size() != kHintBytes || !SealOk(key, value)) return Status::Corruption("GC hint damaged");
  const auto* p = reinterpret_cast<const uint8_t*>(value.data());
  h->fp = Fingerprint(reinterpret_cast<const uint8_t*>(key.data()) + 1, fp_size);
  h->why = static_cast<char>(p[0]);
  h->slot = DecodeFixed16(p + 1);
  h->epoch = DecodeFixed64(p + 3);
  h->value = value;
  return Status::OK();
}

}  // namespace dedupv1
