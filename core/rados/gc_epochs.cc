#include "core/rados/gc_epochs.h"

#include <cerrno>
#include <cstdlib>

#include "core/base/coding.h"
#include "core/rados/gc_leader_lease.h"
#include "core/rados/op_result.h"

namespace dedupv1 {
namespace {

constexpr char kEpochXattr[] = "epoch";
constexpr char kSafePrefix[] = "s.";
constexpr size_t kSafeValueSize = 4 + 8 + 4;

const char* Object() { return GcLeaderLease::kObject; }

// The xattr's decimal value; false if it is not one.
bool ParseEpoch(const librados::bufferlist& bl, uint64_t* epoch) {
  const std::string s = bl.to_str();
  if (s.empty() || s.size() > 20) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  errno = 0;
  *epoch = std::strtoull(s.c_str(), nullptr, 10);
  return errno == 0;
}

Status EpochOf(RadosCluster* cluster, const std::map<std::string, librados::bufferlist>& xattrs, uint64_t* epoch) {
  *epoch = 0;
  auto it = xattrs.find(kEpochXattr);
  if (it == xattrs.end()) return Status::OK();
  if (!ParseEpoch(it->second, epoch)) {
    return Status::Corruption(cluster->Where(cluster->index_pool(), Object()) + ": GC epoch xattr \"" +
                              it->second.to_str() + "\" is not a number");
  }
  return Status::OK();
}

}  // namespace

std::string SafeEpochKey(const std::string& slot) { return kSafePrefix + slot; }

std::string EncodeSafeEpoch(const std::string& slot, const SlotSafeEpoch& record) {
  std::string v;
  PutFixed32(&v, record.incarnation);
  PutFixed64(&v, record.safe);
  PutFixed32(&v, Crc32cKeyed(SafeEpochKey(slot), v));
  return v;
}

Status ReadGcEpoch(RadosCluster* cluster, uint64_t* epoch) {
  librados::ObjectReadOperation op;
  std::map<std::string, librados::bufferlist> xattrs;
  int xattrs_r = 0;
  op.getxattrs(&xattrs, &xattrs_r);
  RadosOpTimer timer(cluster, RadosOpKind::kStat);
  const int r = CompoundResult(cluster->index().operate(Object(), &op, nullptr), {xattrs_r});
  timer.Done(r == -ENOENT ? 0 : r, 0);
  *epoch = 0;
  if (r == -ENOENT) return Status::OK();
  if (r < 0) return cluster->ToStatus(r, "read the GC epoch", cluster->index_pool(), Object());
  return EpochOf(cluster, xattrs, epoch);
}

Status ReadGcEpochState(RadosCluster* cluster, GcEpochState* state) {
  *state = GcEpochState();
  std::string after;
  for (bool more = true, first = true; more; first = false) {
    librados::ObjectReadOperation op;
    std::map<std::string, librados::bufferlist> xattrs, page;
    int xattrs_r = 0, vals_r = 0;
    if (first) op.getxattrs(&xattrs, &xattrs_r);
    op.omap_get_vals2(after, kSafePrefix, 1024, &page, &more, &vals_r);
    RadosOpTimer timer(cluster, RadosOpKind::kOmapRead);
    const int r = CompoundResult(cluster->index().operate(Object(), &op, nullptr), {xattrs_r, vals_r});
    timer.Done(r == -ENOENT ? 0 : r, 0);
    if (r == -ENOENT) return Status::OK();
    if (r < 0) return cluster->ToStatus(r, "read the GC epochs", cluster->index_pool(), Object());
    if (first) DEDUPV1_RETURN_IF_ERROR(EpochOf(cluster, xattrs, &state->epoch));
    for (const auto& [key, bl] : page) {
      const std::string v = bl.to_str();
      const std::string slot = key.substr(sizeof(kSafePrefix) - 1);
      const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
      if (v.size() != kSafeValueSize || DecodeFixed32(p + 12) != Crc32cKeyed(key, std::string_view(v).substr(0, 12))) {
        state->damaged.push_back(cluster->Where(cluster->index_pool(), Object()) + ": safe epoch of slot " + slot +
                                 " is damaged (" + std::to_string(v.size()) + " bytes or CRC mismatch)");
        continue;
      }
      state->safe[slot] = SlotSafeEpoch{DecodeFixed32(p), DecodeFixed64(p + 4)};
    }
    if (page.empty()) break;
    after = page.rbegin()->first;
  }
  return Status::OK();
}

Status BumpGcEpoch(RadosCluster* cluster, uint64_t from, bool* bumped) {
  *bumped = false;
  DEDUPV1_RETURN_IF_ERROR(cluster->CheckLease());
  librados::bufferlist next;
  next.append(std::to_string(from + 1));
  // The leader lease lives on the object, so it exists; a missing one is
  // created first (cmpxattr on a missing object fails even after create).
  for (int attempt = 0; attempt < 2; attempt++) {
    librados::ObjectWriteOperation op;
    op.cmpxattr(kEpochXattr, LIBRADOS_CMPXATTR_OP_EQ, from);  // absent xattr = 0
    op.setxattr(kEpochXattr, next);
    RadosOpTimer timer(cluster, RadosOpKind::kWrite);
    const int r = cluster->index().operate(Object(), &op);
    timer.Done(r == -ECANCELED || r == -ENOENT ? 0 : r, 0);
    if (r == -ECANCELED) return Status::OK();
    if (r >= 0) {
      *bumped = true;
      return Status::OK();
    }
    if (r != -ENOENT || attempt > 0) {
      return cluster->ToStatus(r, "raise the GC epoch to " + std::to_string(from + 1), cluster->index_pool(), Object());
    }
    librados::ObjectWriteOperation create;
    create.create(false);
    const int c = cluster->index().operate(Object(), &create);
    if (c < 0) return cluster->ToStatus(c, "create the GC object", cluster->index_pool(), Object());
  }
  return Status::OK();
}

Status PublishSafeEpoch(RadosCluster* cluster, const std::string& slot, uint32_t incarnation, uint64_t safe) {
  DEDUPV1_RETURN_IF_ERROR(cluster->CheckLease());
  librados::bufferlist value;
  value.append(EncodeSafeEpoch(slot, SlotSafeEpoch{incarnation, safe}));
  librados::ObjectWriteOperation op;
  op.create(false);
  op.omap_set({{SafeEpochKey(slot), value}});
  RadosOpTimer timer(cluster, RadosOpKind::kOmapWrite);
  const int r = cluster->index().operate(Object(), &op);
  timer.Done(r, value.length());
  if (r < 0) {
    return cluster->ToStatus(r, "publish the safe GC epoch of slot " + slot, cluster->index_pool(), Object());
  }
  return Status::OK();
}

}  // namespace dedupv1
