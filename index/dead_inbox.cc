#include "index/dead_inbox.h"

#include <map>
#include <set>

#include "core/base/coding.h"

namespace dedupv1 {

namespace {

constexpr size_t kIdBytes = 8;

librados::bufferlist Bytes(const std::string& s) {
  librados::bufferlist bl;
  bl.append(s);
  return bl;
}

}  // namespace

std::string RadosDeadInbox::ObjectName(const std::string& slot_name) { return "gw." + slot_name + ".dead"; }

std::string RadosDeadInbox::KeyOf(const DeadChunk& chunk) {
  std::string key(kIdBytes, '\0');
  for (size_t i = 0; i < kIdBytes; i++) key[i] = static_cast<char>(chunk.container >> (8 * (kIdBytes - 1 - i)));
  key.append(reinterpret_cast<const char*>(chunk.fp.bytes), chunk.fp.size);
  return key;
}

std::string RadosDeadInbox::ValueOf(const std::string& key) {
  std::string v;
  PutFixed32(&v, Crc32c(key.data(), key.size()));
  return v;
}

bool RadosDeadInbox::Decode(const std::string& key, const std::string& value, DeadChunk* chunk) {
  if (key.size() <= kIdBytes || key.size() - kIdBytes > Fingerprint::kMaxSize || value != ValueOf(key)) return false;
  chunk->container = 0;
  for (size_t i = 0; i < kIdBytes; i++) chunk->container = (chunk->container << 8) | static_cast<uint8_t>(key[i]);
  chunk->fp = Fingerprint(reinterpret_cast<const uint8_t*>(key.data()) + kIdBytes, key.size() - kIdBytes);
  return true;
}

Status RadosDeadInbox::Append(const std::string& slot_name, const std::vector<DeadChunk>& chunks) {
  if (chunks.empty()) return Status::OK();
  std::map<std::string, librados::bufferlist> kv;
  for (const DeadChunk& c : chunks) {
    const std::string key = KeyOf(c);
    kv[key] = Bytes(ValueOf(key));
  }
  return cluster_->SetIndexOmapKeys(ObjectName(slot_name), kv,
                                    "append of " + std::to_string(kv.size()) + " dead chunks");
}

std::string RadosDeadInbox::Where(const std::string& slot_name) const {
  return cluster_->Where(cluster_->index_pool(), ObjectName(slot_name));
}

Status RadosDeadInbox::ReadPage(const std::string& slot_name, const std::string& after_key, size_t max,
                                std::vector<DeadChunk>* chunks, std::string* last_key) {
  return ReadPage(slot_name, after_key, max, chunks, last_key, nullptr);
}

Status RadosDeadInbox::ReadPage(const std::string& slot_name, const std::string& after_key, size_t max,
                                std::vector<DeadChunk>* chunks, std::string* last_key,
                                std::vector<std::string>* damaged) {
  if (damaged != nullptr) damaged->clear();
  chunks->clear();
  last_key->clear();
  if (max == 0) return Status::OK();
  const std::string oid = ObjectName(slot_name);
  std::map<std::string, librados::bufferlist> kv;
  DEDUPV1_RETURN_IF_ERROR(cluster_->ReadIndexOmapPage(oid, after_key, max, &kv, "read of dead chunks"));
  for (auto& [key, bl] : kv) {
    DeadChunk c;
    if (!Decode(key, bl.to_str(), &c)) {
      if (damaged != nullptr) {
        damaged->push_back(key);
        *last_key = key;
        continue;
      }
      return Status::Corruption("dead chunk inbox " + cluster_->Where(cluster_->index_pool(), oid) +
                                ": damaged key or checksum (key of " + std::to_string(key.size()) + " bytes)");
    }
    chunks->push_back(c);
    *last_key = key;
  }
  return Status::OK();
}

Status RadosDeadInbox::Remove(const std::string& slot_name, const std::vector<std::string>& keys) {
  if (keys.empty()) return Status::OK();
  return cluster_->RemoveIndexOmapKeys(ObjectName(slot_name), std::set<std::string>(keys.begin(), keys.end()),
                                       "removal of " + std::to_string(keys.size()) + " dead chunks");
}

}  // namespace dedupv1
