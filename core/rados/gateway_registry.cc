#include "core/rados/gateway_registry.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "core/base/coding.h"
#include "core/base/host_name.h"
#include "core/rados/op_result.h"

namespace dedupv1 {
namespace {

constexpr uint8_t kRecordVersion = 1;
constexpr uint8_t kNextVersion = 1;
// Compare-and-set attempts before giving up: each lost race means another
// registration or incarnation succeeded, so this bounds a storm, not a
// single contender.
constexpr int kMaxAttempts = 64;

librados::bufferlist ToBl(const std::string& s) {
  librados::bufferlist bl;
  bl.append(s);
  return bl;
}

}  // namespace

std::string GatewayRegistry::EncodeNext(uint32_t next) {
  std::string v;
  v.push_back(static_cast<char>(kNextVersion));
  PutFixed32(&v, next);
  PutFixed32(&v, Crc32cKeyed(GatewayRegistry::kNextKey, v));
  return v;
}

Status GatewayRegistry::DecodeNext(const std::string& where, const std::string& v, uint32_t* next) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
  if (v.size() != 9 || p[0] != kNextVersion || DecodeFixed32(p + 5) != Crc32cKeyed(GatewayRegistry::kNextKey, v.substr(0, 5))) {
    return Status::Corruption("gateway registry " + where + " key " + GatewayRegistry::kNextKey +
                              ": damaged record (" + std::to_string(v.size()) + " bytes)");
  }
  *next = DecodeFixed32(p + 1);
  return Status::OK();
}

std::string GatewayRegistry::Encode(const std::string& name, const GatewayRecord& r) {
  std::string v;
  v.push_back(static_cast<char>(kRecordVersion));
  PutFixed16(&v, r.slot);
  PutFixed32(&v, r.incarnation);
  PutFixed32(&v, r.takeovers);
  PutFixed32(&v, r.pid);
  PutString16(&v, r.address);
  PutString16(&v, r.host);
  PutFixed32(&v, Crc32cKeyed(name, v));
  return v;
}

Status GatewayRegistry::Decode(const std::string& where, const std::string& name, const std::string& v,
                               GatewayRecord* r) {
  auto damaged = [&](const std::string& why) {
    return Status::Corruption("gateway registry " + where + " key " + name + ": damaged record (" + why + ")");
  };
  constexpr size_t kFixed = 1 + 2 + 4 + 4 + 4;
  if (v.size() < kFixed + 2 + 2 + 4) return damaged(std::to_string(v.size()) + " bytes");
  const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
  if (DecodeFixed32(p + v.size() - 4) != Crc32cKeyed(name, v.substr(0, v.size() - 4))) return damaged("CRC mismatch");
  if (p[0] != kRecordVersion) return damaged("unknown version " + std::to_string(p[0]));
  GatewayRecord out;
  out.slot = DecodeFixed16(p + 1);
  out.incarnation = DecodeFixed32(p + 3);
  out.takeovers = DecodeFixed32(p + 7);
  out.pid = DecodeFixed32(p + 11);
  size_t pos = kFixed;
  if (!GetString16(v, &pos, &out.address) || !GetString16(v, &pos, &out.host) || pos + 4 != v.size()) {
    return damaged("bad lengths");
  }
  if (out.slot == 0 || out.slot > kMaxGatewaySlot) return damaged("slot number " + std::to_string(out.slot));
  *r = out;
  return Status::OK();
}

std::string GatewayRegistry::Where() const { return cluster_->Where(cluster_->index_pool(), kObject); }

Status GatewayRegistry::ReadKeys(const std::set<std::string>& keys, std::map<std::string, std::string>* values) {
  values->clear();
  librados::ObjectReadOperation op;
  std::map<std::string, librados::bufferlist> got;
  int keys_r = 0;
  op.omap_get_vals_by_keys(keys, &got, &keys_r);
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kOmapRead);
  const int r = CompoundResult(cluster_->index().operate(kObject, &op, nullptr), {keys_r});
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r == -ENOENT) return Status::OK();  // no slot registered yet
  if (r < 0) return cluster_->ToStatus(r, "read gateway registry", cluster_->index_pool(), kObject);
  for (auto& [k, bl] : got) (*values)[k] = bl.to_str();
  return Status::OK();
}

Status GatewayRegistry::Lookup(const std::string& name, GatewayRecord* record) {
  std::map<std::string, std::string> values;
  DEDUPV1_RETURN_IF_ERROR(ReadKeys({name}, &values));
  auto it = values.find(name);
  if (it == values.end()) return Status::NotFound("gateway " + name + " is not registered in " + Where());
  return Decode(Where(), name, it->second, record);
}

Status GatewayRegistry::List(std::map<std::string, GatewayRecord>* records) {
  records->clear();
  std::string after;
  for (bool more = true; more;) {
    librados::ObjectReadOperation op;
    std::map<std::string, librados::bufferlist> page;
    int vals_r = 0;
    op.omap_get_vals2(after, 1024, &page, &more, &vals_r);
    RadosOpTimer timer(cluster_.get(), RadosOpKind::kOmapRead);
    const int r = CompoundResult(cluster_->index().operate(kObject, &op, nullptr), {vals_r});
    timer.Done(r == -ENOENT ? 0 : r, 0);
    if (r == -ENOENT) return Status::OK();
    if (r < 0) return cluster_->ToStatus(r, "list gateway registry", cluster_->index_pool(), kObject);
    if (page.empty()) break;
    for (auto& [k, bl] : page) {
      if (k == kNextKey) continue;
      DEDUPV1_RETURN_IF_ERROR(Decode(Where(), k, bl.to_str(), &(*records)[k]));
    }
    after = page.rbegin()->first;
  }
  return Status::OK();
}

Status GatewayRegistry::TryRegister(const std::string& name, GatewayRecord* record) {
  std::map<std::string, std::string> values;
  DEDUPV1_RETURN_IF_ERROR(ReadKeys({name, kNextKey}, &values));
  if (auto it = values.find(name); it != values.end()) return Decode(Where(), name, it->second, record);
  uint32_t next = 1;
  const auto stored_next = values.find(kNextKey);
  if (stored_next != values.end()) DEDUPV1_RETURN_IF_ERROR(DecodeNext(Where(), stored_next->second, &next));
  // The counter alone could hand out a number in use if it was lost or set
  // back (a slot number is a container id range: two slots sharing one would
  // list, collect and count each other's containers). A new name is rare, so
  // the records are read and the number is above every slot in use.
  std::map<std::string, GatewayRecord> records;
  DEDUPV1_RETURN_IF_ERROR(List(&records));
  for (const auto& [other, rec] : records) next = std::max<uint32_t>(next, uint32_t{rec.slot} + 1);
  if (next == 0 || next > kMaxGatewaySlot) {
    return Status::NoSpace("gateway registry " + Where() + ": all " + std::to_string(kMaxGatewaySlot) +
                           " slot numbers are used");
  }
  GatewayRecord fresh;
  fresh.slot = static_cast<uint16_t>(next);
  // The name must still be absent and the counter unchanged (an absent key
  // compares as ""): else another registration came first.
  // The first registration creates the object (omap_cmp on a missing object
  // would fail ENOENT).
  DEDUPV1_RETURN_IF_ERROR(GuardedSet(
      {{name, ""}, {kNextKey, stored_next == values.end() ? "" : stored_next->second}},
      {{name, Encode(name, fresh)}, {kNextKey, EncodeNext(next + 1)}}, /*create=*/true, "register gateway " + name,
      "gateway registry " + Where() + ": lost a registration race"));
  *record = fresh;
  return Status::OK();
}

Status GatewayRegistry::GuardedSet(const std::map<std::string, std::string>& expect,
                                   const std::map<std::string, std::string>& set, bool create, const std::string& what,
                                   const std::string& lost) {
  std::map<std::string, std::pair<librados::bufferlist, int>> cmp;
  for (const auto& [k, v] : expect) cmp[k] = {ToBl(v), LIBRADOS_CMPXATTR_OP_EQ};
  std::map<std::string, librados::bufferlist> values;
  for (const auto& [k, v] : set) values[k] = ToBl(v);
  librados::ObjectWriteOperation op;
  if (create) op.create(false);
  int cmp_r = 0;
  op.omap_cmp(cmp, &cmp_r);
  op.omap_set(values);
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kOmapWrite);
  const int r = cluster_->index().operate(kObject, &op);
  timer.Done(r == -ECANCELED ? 0 : r, 0);
  if (r == -ECANCELED) return Status::Aborted(lost);
  if (r < 0) return cluster_->ToStatus(r, what, cluster_->index_pool(), kObject);
  return Status::OK();
}

Status GatewayRegistry::Register(const std::string& name, GatewayRecord* record) {
  if (!IsValidGatewayName(name)) {
    return Status::InvalidArgument("gateway name '" + name + "' must be 1 to 32 characters of a-z, 0-9 and '-'");
  }
  Status s;
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    s = TryRegister(name, record);
    if (!s.IsAborted()) return s;
  }
  return s;
}

Status GatewayRegistry::CompareAndSet(const std::string& name, const GatewayRecord& expected,
                                      const GatewayRecord& next) {
  if (next.slot != expected.slot) {
    return Status::InvalidArgument("gateway " + name + ": a slot number never changes (" +
                                   std::to_string(expected.slot) + " -> " + std::to_string(next.slot) + ")");
  }
  // A process whose lease on the slot lapsed (paused after taking the lock,
  // say) must not record itself as the holder over a taker: CheckLease
  // refuses then (and with fence_on_lease_loss fences for good). A process
  // holding no lease (an admin command) is not affected.
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  return GuardedSet({{name, Encode(name, expected)}}, {{name, Encode(name, next)}}, /*create=*/false,
                    "update gateway " + name,
                    "gateway registry " + Where() + " key " + name + ": the record changed meanwhile");
}

Status GatewayRegistry::BeginIncarnation(const std::string& name, bool takeover, GatewayRecord* record) {
  Status s;
  for (int attempt = 0; attempt < kMaxAttempts; attempt++) {
    GatewayRecord old;
    DEDUPV1_RETURN_IF_ERROR(Lookup(name, &old));
    GatewayRecord next = old;
    next.incarnation++;
    if (takeover) next.takeovers++;
    next.address = cluster_->client_address();
    next.host = HostName();
    next.pid = static_cast<uint32_t>(::getpid());
    s = CompareAndSet(name, old, next);
    if (s.ok()) {
      *record = next;
      return s;
    }
    if (!s.IsAborted()) return s;
  }
  return s;
}

}  // namespace dedupv1
