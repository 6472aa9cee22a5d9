#include "index/claim_journal.h"

#include <cstdio>
#include <map>
#include <random>
#include <set>

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

constexpr uint8_t kVersion = 1;
constexpr size_t kKeyBytes = 8 + 1 + 16;  // "<incarnation>.<seq>"
constexpr size_t kFixedBytes = 1 + 1 + 4;  // version, fingerprint size, count

librados::bufferlist Bytes(const std::string& s) {
  librados::bufferlist bl;
  bl.append(s);
  return bl;
}

// Lower-case hex digits only, as KeyOf writes them.
bool ParseHex(const char* text, size_t n, uint64_t* value) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    const char c = text[i];
    if (c >= '0' && c <= '9') v = v << 4 | static_cast<uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f') v = v << 4 | static_cast<uint64_t>(c - 'a' + 10);
    else return false;
  }
  *value = v;
  return true;
}

// The first sequence of a writer: random in the high 31 bits, so sequences
// of two writers of one incarnation do not meet (and never wrap).
uint64_t FirstSeq() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd() & 0x7fffffff) << 32) | 1;
}

}  // namespace

RadosClaimJournal::RadosClaimJournal(std::shared_ptr<RadosCluster> cluster, std::string slot_name,
                                     uint32_t incarnation, SharedTableSteps* steps)
    : cluster_(std::move(cluster)),
      slot_name_(std::move(slot_name)),
      incarnation_(incarnation),
      steps_(steps),
      next_seq_(FirstSeq()) {}

bool RadosClaimJournal::ParseKey(const std::string& key, uint32_t* incarnation, uint64_t* seq) {
  if (key.size() != kKeyBytes || key[8] != '.') return false;
  uint64_t inc = 0;
  if (!ParseHex(key.data(), 8, &inc) || !ParseHex(key.data() + 9, 16, seq)) return false;
  *incarnation = static_cast<uint32_t>(inc);
  return true;
}

Status RadosClaimJournal::EncodeValue(const std::string& key, const std::vector<Fingerprint>& fps, std::string* value) {
  const size_t fp_size = fps.empty() ? 1 : fps[0].size;  // an empty record still decodes
  std::string body;
  body.push_back(static_cast<char>(kVersion));
  body.push_back(static_cast<char>(fp_size));
  PutFixed32(&body, static_cast<uint32_t>(fps.size()));
  for (const Fingerprint& fp : fps) {
    if (fp.size != fp_size) {
      return Status::InvalidArgument("claim journal: fingerprints of " + std::to_string(fp_size) + " and " +
                                     std::to_string(fp.size) + " bytes in one record");
    }
    body.append(reinterpret_cast<const char*>(fp.bytes), fp.size);
  }
  PutFixed32(&body, Crc32cKeyed(key, body));
  *value = std::move(body);
  return Status::OK();
}

bool RadosClaimJournal::DecodeValue(const std::string& key, const std::string& value, std::vector<Fingerprint>* fps) {
  if (value.size() < kFixedBytes + 4) return false;
  const std::string body = value.substr(0, value.size() - 4);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(value.data());
  if (DecodeFixed32(p + body.size()) != Crc32cKeyed(key, body)) return false;
  const size_t fp_size = p[1];
  const uint32_t count = DecodeFixed32(p + 2);
  if (p[0] != kVersion || fp_size == 0 || fp_size > Fingerprint::kMaxSize) return false;
  if (body.size() != kFixedBytes + static_cast<uint64_t>(count) * fp_size) return false;
  fps->clear();
  fps->reserve(count);
  for (uint32_t i = 0; i < count; i++) fps->emplace_back(p + kFixedBytes + i * fp_size, fp_size);
  return true;
}

std::string RadosClaimJournal::ObjectName(const std::string& slot_name) { return "gw." + slot_name + ".claims"; }

std::string RadosClaimJournal::KeyOf(uint32_t incarnation, uint64_t seq) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%08x.%016llx", incarnation, static_cast<unsigned long long>(seq));
  return buf;
}

std::string RadosClaimJournal::Where(const std::string& slot_name) const {
  return cluster_->Where(cluster_->index_pool(), ObjectName(slot_name));
}

Status RadosClaimJournal::Append(const std::vector<std::vector<Fingerprint>>& records, std::vector<std::string>* keys) {
  keys->clear();
  if (records.empty()) return Status::OK();
  std::map<std::string, librados::bufferlist> kv;
  for (const std::vector<Fingerprint>& fps : records) {
    const std::string key = KeyOf(incarnation_, next_seq_.fetch_add(1));
    std::string value;
    Status s = EncodeValue(key, fps, &value);
    if (!s.ok()) {
      keys->clear();
      return s;
    }
    kv[key] = Bytes(value);
    keys->push_back(key);
  }
  Count(kv.size());
  Status s = cluster_->SetIndexOmapKeys(ObjectName(slot_name_), kv,
                                        "append of " + std::to_string(kv.size()) + " claim records");
  if (!s.ok()) keys->clear();
  return s;
}

Status RadosClaimJournal::ReadPage(const std::string& slot_name, const std::string& after_key, size_t max,
                                   std::vector<ClaimJournalRecord>* records, std::string* last_key,
                                   std::vector<std::string>* damaged) {
  records->clear();
  damaged->clear();
  last_key->clear();
  if (max == 0) return Status::OK();
  std::map<std::string, librados::bufferlist> kv;
  Count(0);
  DEDUPV1_RETURN_IF_ERROR(cluster_->ReadIndexOmapPage(ObjectName(slot_name), after_key, max, &kv,
                                                      "read of claim records"));
  for (auto& [key, bl] : kv) {
    *last_key = key;
    ClaimJournalRecord rec;
    rec.key = key;
    if (!ParseKey(key, &rec.incarnation, &rec.seq) || !DecodeValue(key, bl.to_str(), &rec.fps)) {
      damaged->push_back(key);
      continue;
    }
    records->push_back(std::move(rec));
  }
  return Status::OK();
}

Status RadosClaimJournal::Remove(const std::string& slot_name, const std::vector<std::string>& keys) {
  if (keys.empty()) return Status::OK();
  Count(keys.size());
  return cluster_->RemoveIndexOmapKeys(ObjectName(slot_name), std::set<std::string>(keys.begin(), keys.end()),
                                       "removal of " + std::to_string(keys.size()) + " claim records");
}

}  // namespace dedupv1
