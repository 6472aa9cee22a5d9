#include "index/dead_inbox.h"

#include <cerrno>
#include <map>
#include <set>

#include "core/base/coding.h"
#include "core/rados/op_result.h"

namespace dedupv1 {

namespace {

constexpr size_t kIdBytes = 8;

std::string CrcOf(const std::string& key) {
  std::string v;
  PutFixed32(&v, Crc32c(key.data(), key.size()));
  return v;
}

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

Status RadosDeadInbox::Append(const std::string& slot_name, const std::vector<DeadChunk>& chunks) {
  if (chunks.empty()) return Status::OK();
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  std::map<std::string, librados::bufferlist> kv;
  for (const DeadChunk& c : chunks) {
    const std::string key = KeyOf(c);
    kv[key] = Bytes(CrcOf(key));
  }
  const std::string oid = ObjectName(slot_name);
  librados::ObjectWriteOperation op;
  op.create(false);
  op.omap_set(kv);
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kOmapWrite);
  const int r = cluster_->index().operate(oid, &op);
  timer.Done(r, 0);
  if (r < 0) return cluster_->ToStatus(r, "append of " + std::to_string(kv.size()) + " dead chunks", cluster_->index_pool(), oid);
  return Status::OK();
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
  librados::ObjectReadOperation op;
  std::map<std::string, librados::bufferlist> kv;
  bool more = false;
  int rval = 0;
  op.omap_get_vals2(after_key, max, &kv, &more, &rval);
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kOmapRead);
  int r = cluster_->index().operate(oid, &op, nullptr);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r == -ENOENT) return Status::OK();  // nothing was ever appended
  r = CompoundResult(r, {rval});
  if (r < 0) return cluster_->ToStatus(r, "read of dead chunks", cluster_->index_pool(), oid);
  for (auto& [key, bl] : kv) {
    const size_t fp_size = key.size() - kIdBytes;
    if (key.size() <= kIdBytes || fp_size > Fingerprint::kMaxSize || bl.to_str() != CrcOf(key)) {
      if (damaged != nullptr) {
        damaged->push_back(key);
        *last_key = key;
        continue;
      }
      return Status::Corruption("dead chunk inbox " + cluster_->Where(cluster_->index_pool(), oid) +
                                ": damaged key or checksum (key of " + std::to_string(key.size()) + " bytes)");
    }
    DeadChunk c;
    for (size_t i = 0; i < kIdBytes; i++) c.container = (c.container << 8) | static_cast<uint8_t>(key[i]);
    c.fp = Fingerprint(reinterpret_cast<const uint8_t*>(key.data()) + kIdBytes, fp_size);
    chunks->push_back(c);
    *last_key = key;
  }
  return Status::OK();
}

Status RadosDeadInbox::Remove(const std::string& slot_name, const std::vector<std::string>& keys) {
  if (keys.empty()) return Status::OK();
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  const std::string oid = ObjectName(slot_name);
  librados::ObjectWriteOperation op;
  op.omap_rm_keys(std::set<std::string>(keys.begin(), keys.end()));
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kOmapWrite);
  const int r = cluster_->index().operate(oid, &op);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r == -ENOENT) return Status::OK();  // no inbox, so nothing to remove
  if (r < 0) return cluster_->ToStatus(r, "removal of " + std::to_string(keys.size()) + " dead chunks", cluster_->index_pool(), oid);
  return Status::OK();
}

}  // namespace dedupv1
