#include "core/rados/rados_file.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <vector>

namespace dedupv1 {

namespace {

constexpr char kSizeAttr[] = "size";
constexpr char kHwmAttr[] = "hwm";
constexpr char kIdAttr[] = "id";
constexpr uint64_t kNoTruncate = ~uint64_t{0};
constexpr uint64_t kUnknownSize = ~uint64_t{0};

librados::bufferlist Decimal(uint64_t v) {
  librados::bufferlist bl;
  bl.append(std::to_string(v));
  return bl;
}

bool ParseDecimal(const librados::bufferlist& bl, uint64_t* v) {
  const std::string s = bl.to_str();
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

std::string NewRadosFileId() {
  static std::mutex mu;
  static std::mt19937_64 rng(std::random_device{}() ^
                             static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::lock_guard<std::mutex> l(mu);
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

std::string RadosStripeOid(const std::string& oid, const std::string& id, uint64_t n) {
  return n == 0 ? oid : oid + "@" + id + ":" + std::to_string(n);
}

void SetRadosFileMeta(const RadosFileMeta& meta, librados::ObjectWriteOperation* op) {
  op->setxattr(kSizeAttr, Decimal(meta.size));
  op->setxattr(kHwmAttr, Decimal(meta.hwm));
  librados::bufferlist id;
  id.append(meta.id);
  op->setxattr(kIdAttr, id);
}

uint64_t RadosLastStripe(const RadosFileMeta& meta, uint64_t stripe_size) {
  const uint64_t bound = std::max(meta.size, meta.hwm);
  return bound <= stripe_size ? 0 : (bound - 1) / stripe_size;
}

Status RadosOperate(RadosCluster* cluster, const std::string& oid, librados::ObjectWriteOperation* op,
                    RadosOpKind kind, uint64_t bytes, const std::string& what, int* r) {
  // Every synchronous write of RadosEnv (create, truncate, directory
  // entries, remove, rename, link) passes here: none after a fence. In
  // gateway mode a lapsed lease counts as lost too (CheckLease fences then):
  // a paused gateway resuming before its renewal thread notices must not
  // create, rename or remove files a taker may own by now.
  DEDUPV1_RETURN_IF_ERROR(cluster->options().fence_on_lease_loss ? cluster->CheckLease() : cluster->CheckFenced());
  RadosOpTimer timer(cluster, kind);
  const int rr = cluster->index().operate(oid, op);
  // A caller that takes the raw result accepts ENOENT (removing what is gone).
  timer.Done(r != nullptr && rr == -ENOENT ? 0 : rr, bytes);
  if (r != nullptr) *r = rr;
  if (rr < 0) return cluster->ToStatus(rr, what, cluster->index_pool(), oid);
  return Status::OK();
}

Status RadosOperateRead(RadosCluster* cluster, const std::string& oid, librados::ObjectReadOperation* op,
                        RadosOpKind kind, const std::string& what, int* r) {
  RadosOpTimer timer(cluster, kind);
  const int rr = cluster->index().operate(oid, op, nullptr);
  timer.Done(r != nullptr && rr == -ENOENT ? 0 : rr, 0);
  if (r != nullptr) *r = rr;
  if (rr < 0) return cluster->ToStatus(rr, what, cluster->index_pool(), oid);
  return Status::OK();
}

Status StatRadosFile(RadosCluster* cluster, const std::string& oid, RadosFileMeta* meta) {
  librados::ObjectReadOperation op;
  std::map<std::string, librados::bufferlist> attrs;
  int attrs_r = 0;
  op.getxattrs(&attrs, &attrs_r);
  int r = 0;
  Status s = RadosOperateRead(cluster, oid, &op, RadosOpKind::kStat, "stat", &r);
  if (!s.ok()) return s;
  auto size = attrs.find(kSizeAttr);
  auto hwm = attrs.find(kHwmAttr);
  auto id = attrs.find(kIdAttr);
  if (size == attrs.end() || id == attrs.end() || !ParseDecimal(size->second, &meta->size) ||
      (hwm != attrs.end() && !ParseDecimal(hwm->second, &meta->hwm))) {
    return Status::Corruption(cluster->Where(cluster->index_pool(), oid) +
                              ": not a file of this store (xattrs size/id missing or damaged)");
  }
  if (hwm == attrs.end()) meta->hwm = 0;
  meta->id = id->second.to_str();
  return Status::OK();
}

Status RemoveRadosStripes(RadosCluster* cluster, const std::string& oid, const std::string& id, uint64_t first,
                          uint64_t last) {
  constexpr uint64_t kBatch = 64;
  for (uint64_t from = std::max<uint64_t>(first, 1); from <= last; from += kBatch) {
    struct Remove {
      librados::AioCompletion* c;
      std::string oid;
      std::chrono::steady_clock::time_point start;
    };
    std::vector<Remove> batch;
    Status first_error;
    for (uint64_t n = from; n <= last && n < from + kBatch; n++) {
      librados::ObjectWriteOperation op;
      op.remove();
      Remove rm{librados::Rados::aio_create_completion(), RadosStripeOid(oid, id, n),
                std::chrono::steady_clock::now()};
      const int r = cluster->index().aio_operate(rm.oid, rm.c, &op);
      if (r < 0) {
        rm.c->release();
        if (first_error.ok()) first_error = cluster->ToStatus(r, "remove", cluster->index_pool(), rm.oid);
        continue;
      }
      batch.push_back(std::move(rm));
    }
    for (Remove& rm : batch) {
      rm.c->wait_for_complete();
      const int r = rm.c->get_return_value();
      rm.c->release();
      cluster->Record(RadosOpKind::kRemove, rm.start, 0, r >= 0 || r == -ENOENT);
      if (r < 0 && r != -ENOENT && first_error.ok()) {
        first_error = cluster->ToStatus(r, "remove", cluster->index_pool(), rm.oid);
      }
    }
    if (!first_error.ok()) return first_error;
  }
  return Status::OK();
}

RadosFileState::RadosFileState(std::shared_ptr<RadosCluster> cluster, std::string oid, std::string path,
                               RadosFileMeta meta)
    : cluster_(std::move(cluster)),
      oid_(std::move(oid)),
      path_(std::move(path)),
      stripe_(cluster_->options().stripe_size),
      id_(meta.id),
      size_(meta.size),
      durable_(std::move(meta)) {}

RadosFileState::~RadosFileState() {
  std::lock_guard<std::mutex> l(mu_);
  if (detached_) {
    WaitAll();
    return;
  }
  Status s = FlushLocked();
  if (!s.ok()) std::fprintf(stderr, "dedupv1: closing %s: %s\n", path_.c_str(), s.ToString().c_str());
}

Status RadosFileState::CheckUsable() const {
  if (detached_) return Status::NotFound(path_ + " was deleted or renamed while open");
  return Status::OK();
}

Status RadosFileState::Write(uint64_t offset, const void* data, size_t n) {
  std::lock_guard<std::mutex> l(mu_);
  DEDUPV1_RETURN_IF_ERROR(CheckUsable());
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  if (n == 0) return Status::OK();
  const uint64_t end = offset + n;
  if (end > stripe_ && end > durable_.hwm) DEDUPV1_RETURN_IF_ERROR(RaiseHwm(end));
  size_ = std::max(size_, end);
  const char* p = static_cast<const char*>(data);
  uint64_t off = offset;
  while (off < end) {
    const uint64_t stripe = off / stripe_;
    const uint64_t in = off % stripe_;
    const size_t len = static_cast<size_t>(std::min<uint64_t>(end - off, stripe_ - in));
    DEDUPV1_RETURN_IF_ERROR(SubmitWrite(stripe, in, p + (off - offset), len));
    off += len;
  }
  return Status::OK();
}

// Before data may land past hwm in stripes >= 1, hwm must be durable past it.
// Raised in steps of an eighth of the file (at least a stripe) so appends
// pay one extra operation per step, not per write.
// A write inside the size (a preallocated table) raises it to the size only,
// so the next open has nothing to cut.
Status RadosFileState::RaiseHwm(uint64_t end) {
  const uint64_t step = std::max(stripe_, end / 8);
  const uint64_t hwm = end <= size_ ? size_ : (end + step + stripe_ - 1) / stripe_ * stripe_;
  librados::ObjectWriteOperation op;
  op.assert_exists();
  op.setxattr(kHwmAttr, Decimal(hwm));
  DEDUPV1_RETURN_IF_ERROR(RadosOperate(cluster_.get(), oid_, &op, RadosOpKind::kWrite, 0, "set hwm of " + path_));
  durable_.hwm = hwm;
  return Status::OK();
}

Status RadosFileState::SubmitWrite(uint64_t stripe, uint64_t offset_in_stripe, const char* data, size_t n) {
  while (pending_.size() >= kMaxInFlight) WaitOldest();
  Pending p;
  p.op = std::make_unique<librados::ObjectWriteOperation>();
  librados::bufferlist bl;
  bl.append(data, n);
  if (stripe == 0) {
    // Stripe 0 never holds data past its recorded size: the size goes along
    // in the same atomic operation.
    p.op->assert_exists();
    p.op->write(offset_in_stripe, bl);
    if (size_ != durable_.size) {
      p.op->setxattr(kSizeAttr, Decimal(size_));
      durable_.size = size_;
    }
  } else {
    p.op->write(offset_in_stripe, bl);
  }
  p.oid = RadosStripeOid(oid_, id_, stripe);
  p.bytes = n;
  p.start = std::chrono::steady_clock::now();
  p.completion = librados::Rados::aio_create_completion();
  const int r = cluster_->index().aio_operate(p.oid, p.completion, p.op.get());
  if (r < 0) {
    p.completion->release();
    cluster_->Record(RadosOpKind::kWrite, p.start, n, false);
    // Not submitted: this Write fails (and the size it may have carried is
    // unknown, so the next flush writes it again).
    if (stripe == 0) durable_.size = kUnknownSize;
    return cluster_->ToStatus(r, "write of " + path_, cluster_->index_pool(), p.oid);
  }
  pending_.push_back(std::move(p));
  return Status::OK();
}

void RadosFileState::WaitOldest() {
  Pending& p = pending_.front();
  p.completion->wait_for_complete();
  const int r = p.completion->get_return_value();
  p.completion->release();
  cluster_->Record(RadosOpKind::kWrite, p.start, p.bytes, r >= 0);
  if (r < 0) {
    // The size this op may have carried is unknown now: the next flush
    // writes it again.
    durable_.size = kUnknownSize;
    if (error_.ok()) {
      error_ = cluster_->ToStatus(r, "write " + std::to_string(p.bytes) + " bytes of " + path_,
                                  cluster_->index_pool(), p.oid);
    }
  }
  pending_.pop_front();
}

void RadosFileState::WaitAll() {
  while (!pending_.empty()) WaitOldest();
}

Status RadosFileState::WriteMetaLocked(uint64_t stripe0_truncate_to) {
  librados::ObjectWriteOperation op;
  op.assert_exists();
  if (stripe0_truncate_to != kNoTruncate) op.truncate(stripe0_truncate_to);
  RadosFileMeta meta = durable_;
  meta.size = size_;
  SetRadosFileMeta(meta, &op);
  DEDUPV1_RETURN_IF_ERROR(
      RadosOperate(cluster_.get(), oid_, &op, RadosOpKind::kWrite, 0, "set size of " + path_));
  durable_ = meta;
  return Status::OK();
}

// Like fsync on Linux, a failed asynchronous write is reported once, by the
// next flush: the caller redoes its writes (the operations log and the chunk
// index table do) or gives up (LevelDB).
Status RadosFileState::FlushLocked() {
  WaitAll();
  Status failed = error_;
  error_ = Status::OK();
  DEDUPV1_RETURN_IF_ERROR(failed);
  if (size_ != durable_.size) return WriteMetaLocked(kNoTruncate);
  return Status::OK();
}

Status RadosFileState::Sync() {
  std::lock_guard<std::mutex> l(mu_);
  DEDUPV1_RETURN_IF_ERROR(CheckUsable());
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  return FlushLocked();
}

uint64_t RadosFileState::Size() {
  std::lock_guard<std::mutex> l(mu_);
  return size_;
}

Status RadosFileState::Read(uint64_t offset, size_t n, void* buf) {
  {
    std::lock_guard<std::mutex> l(mu_);
    DEDUPV1_RETURN_IF_ERROR(CheckUsable());
    WaitAll();
    if (offset + n > size_) {
      return Status::IOError("short read of " + path_ + " at offset " + std::to_string(std::max(offset, size_)) +
                             " (file size " + std::to_string(size_) + ")");
    }
  }
  if (n == 0) return Status::OK();
  return ReadStripes(offset, n, static_cast<char*>(buf));
}

// Reads [offset, offset+n) (inside the size), all stripes in flight at once.
Status RadosFileState::ReadStripes(uint64_t offset, size_t n, char* buf) {
  struct Piece {
    uint64_t stripe, in;
    size_t len;
    char* dst;
    librados::bufferlist bl;
    int rval = 0;
    librados::AioCompletion* c = nullptr;
    std::chrono::steady_clock::time_point start;
  };
  std::vector<Piece> pieces;
  for (uint64_t off = offset; off < offset + n;) {
    Piece p;
    p.stripe = off / stripe_;
    p.in = off % stripe_;
    p.len = static_cast<size_t>(std::min<uint64_t>(offset + n - off, stripe_ - p.in));
    p.dst = buf + (off - offset);
    pieces.push_back(std::move(p));
    off += pieces.back().len;
  }
  Status result;
  for (size_t first = 0; first < pieces.size(); first += kMaxInFlight) {
    const size_t last = std::min(pieces.size(), first + kMaxInFlight);
    for (size_t i = first; i < last; i++) {
      Piece& p = pieces[i];
      librados::ObjectReadOperation op;
      op.read(p.in, p.len, &p.bl, &p.rval);
      p.c = librados::Rados::aio_create_completion();
      p.start = std::chrono::steady_clock::now();
      const int r = cluster_->index().aio_operate(RadosStripeOid(oid_, id_, p.stripe), p.c, &op, nullptr);
      if (r < 0) {
        p.c->release();
        p.c = nullptr;
        if (result.ok()) result = cluster_->ToStatus(r, "read of " + path_, cluster_->index_pool(), oid_);
      }
    }
    for (size_t i = first; i < last; i++) {
      Piece& p = pieces[i];
      if (p.c == nullptr) continue;
      p.c->wait_for_complete();
      const int r = p.c->get_return_value();
      p.c->release();
      const std::string oid = RadosStripeOid(oid_, id_, p.stripe);
      // A missing stripe >= 1 is a hole (zeros); a missing stripe 0 is a
      // missing file.
      const bool hole = r == -ENOENT && p.stripe != 0;
      cluster_->Record(RadosOpKind::kRead, p.start, hole || r < 0 ? 0 : p.bl.length(), r >= 0 || hole);
      if (r < 0 && !hole) {
        if (result.ok()) {
          result = cluster_->ToStatus(r, "read " + std::to_string(p.len) + "@" + std::to_string(p.in) + " of " + path_,
                                      cluster_->index_pool(), oid);
        }
        continue;
      }
      const size_t got = hole ? 0 : std::min<size_t>(p.bl.length(), p.len);
      if (got > 0) p.bl.begin().copy(got, p.dst);
      std::memset(p.dst + got, 0, p.len - got);
    }
  }
  return result;
}

// Removes the data of stripes >= 1 in [from, to); stripe 0 is cut by the
// caller's metadata write.
Status RadosFileState::CutData(uint64_t from, uint64_t to) {
  if (to <= from || to <= stripe_) return Status::OK();
  uint64_t first_whole = std::max<uint64_t>(1, (from + stripe_ - 1) / stripe_);
  const uint64_t partial = from / stripe_;
  if (partial >= 1 && from % stripe_ != 0) {
    librados::ObjectWriteOperation op;
    op.assert_exists();
    op.truncate(from % stripe_);
    int r = 0;
    Status s = RadosOperate(cluster_.get(), RadosStripeOid(oid_, id_, partial), &op, RadosOpKind::kWrite, 0,
                            "truncate " + path_, &r);
    if (!s.ok() && r != -ENOENT) return s;
  }
  return RemoveRadosStripes(cluster_.get(), oid_, id_, first_whole, (to - 1) / stripe_);
}

Status RadosFileState::Truncate(uint64_t size) {
  std::lock_guard<std::mutex> l(mu_);
  DEDUPV1_RETURN_IF_ERROR(CheckUsable());
  WaitAll();
  if (size >= size_) {
    // Growing: nothing lies past size_ (writes never put data past it, and
    // TrimStale removed what a crash left), so the new range reads zeros.
    size_ = size;
    return WriteMetaLocked(kNoTruncate);
  }
  // Shrinking: the data goes first, the size last, so the bytes past the
  // new size are never visible again once the size is cut. (A crash in
  // between leaves the old size with zeros in part of the cut range.)
  DEDUPV1_RETURN_IF_ERROR(CutData(size, std::max(size_, durable_.hwm)));
  size_ = size;
  durable_.hwm = std::min(durable_.hwm, size);
  return WriteMetaLocked(std::min(size, stripe_));
}

Status RadosFileState::Allocate(uint64_t offset, uint64_t len) {
  // RADOS cannot reserve space; setting the size is what posix_fallocate
  // does for the reads. A full pool shows up at the write as NoSpace.
  if (offset + len <= Size()) return Status::OK();
  return Truncate(offset + len);
}

Status RadosFileState::TrimStale() {
  std::lock_guard<std::mutex> l(mu_);
  DEDUPV1_RETURN_IF_ERROR(CheckUsable());
  if (durable_.hwm <= size_) return Status::OK();
  DEDUPV1_RETURN_IF_ERROR(CutData(size_, durable_.hwm));
  durable_.hwm = size_;
  return WriteMetaLocked(std::min(size_, stripe_));
}

Status RadosFileState::Detach(RadosFileMeta* meta) {
  std::lock_guard<std::mutex> l(mu_);
  Status s = detached_ ? Status::OK() : FlushLocked();
  detached_ = true;
  *meta = durable_;
  meta->size = size_;
  return s;
}

}  // namespace dedupv1
