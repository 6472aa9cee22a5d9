#include "chunkstore/rados_container_store.h"

#include <cerrno>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

constexpr char kObjectPrefix[] = "c.";
constexpr size_t kHexDigits = 16;
// Stats in flight while counting the used bytes.
constexpr size_t kStatsInFlight = 64;
// Reads in flight in GetRanges.
constexpr size_t kReadsInFlight = 64;
// Objects asked for per listing op.
constexpr size_t kListPage = 1024;
constexpr char kMarkerContent[] = "dedupv1 container store 1\n";
// Writes to a pool that is full or over its quota fail at once with
// ENOSPC/EDQUOT (NoSpace naming the pool) instead of waiting, paused in
// librados, until the op timeout turns them into a vague I/O error; a
// remove goes through, so garbage collection can free space.
constexpr int kWriteFlags = librados::OPERATION_FULL_TRY;

std::string Name(ContainerId id) { return "container " + std::to_string(id); }

// Copies a bufferlist into a string. librados' bufferlist throws on a bad
// range; none may cross into the chunk store.
Status CopyOut(const librados::bufferlist& bl, std::string* out) {
  try {
    out->clear();
    out->reserve(bl.length());
    auto it = bl.begin();
    it.copy(bl.length(), *out);
  } catch (const std::exception& e) {
    return Status::IOError(std::string("cannot copy a RADOS read buffer: ") + e.what());
  }
  return Status::OK();
}

}  // namespace

RadosContainerStore::RadosContainerStore(std::shared_ptr<RadosCluster> cluster, ContainerId first, ContainerId end)
    : cluster_(std::move(cluster)), first_(first), end_(end) {}

std::string RadosContainerStore::ObjectName(ContainerId id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%016llx", kObjectPrefix, static_cast<unsigned long long>(id));
  return buf;
}

bool RadosContainerStore::ParseObjectName(const std::string& name, ContainerId* id) {
  const size_t prefix = sizeof(kObjectPrefix) - 1;
  if (name.size() != prefix + kHexDigits || name.compare(0, prefix, kObjectPrefix) != 0) return false;
  return ParseHex64(name.data() + prefix, kHexDigits, id);
}

std::string RadosContainerStore::Where(ContainerId id) const {
  return cluster_->Where(cluster_->data_pool(), ObjectName(id));
}

Status RadosContainerStore::CheckMarker(bool create, bool* exists) {
  const std::string pool = cluster_->data_pool();
  if (!create) {
    uint64_t size = 0;
    Status s = StatObject(kRadosStoreMarkerObject, &size);
    *exists = s.ok();
    return s.IsNotFound() ? Status::OK() : s;
  }
  // An exclusive create with its content: one op, and an existing marker
  // (EEXIST) is left as it is.
  librados::ObjectWriteOperation op;
  op.create(/*exclusive=*/true);
  librados::bufferlist bl;
  bl.append(kMarkerContent, sizeof(kMarkerContent) - 1);
  op.write_full(bl);
  RadosOpTimer t(cluster_.get(), RadosOpKind::kWrite);
  const int r = cluster_->data().operate(kRadosStoreMarkerObject, &op, kWriteFlags);
  t.Done(r == -EEXIST ? 0 : r, sizeof(kMarkerContent) - 1);
  if (r < 0 && r != -EEXIST) return cluster_->ToStatus(r, "create the store marker", pool, kRadosStoreMarkerObject);
  *exists = true;
  return Status::OK();
}

Status RadosContainerStore::StatObject(const std::string& object, uint64_t* size) {
  RadosOpTimer t(cluster_.get(), RadosOpKind::kStat);
  const int r = cluster_->data().stat(object, size, nullptr);
  t.Done(r, 0);
  if (r < 0) return cluster_->ToStatus(r, "stat", cluster_->data_pool(), object);
  return Status::OK();
}

Status RadosContainerStore::CreateObject(const std::string& object, const std::string& bytes, bool* existed) {
  *existed = false;
  // write_full empties the bufferlist it is given, so each attempt builds its own.
  librados::ObjectWriteOperation op;
  op.create(/*exclusive=*/true);
  librados::bufferlist bl;
  bl.append(bytes.data(), bytes.size());
  op.write_full(bl);
  RadosOpTimer t(cluster_.get(), RadosOpKind::kWrite);
  const int r = cluster_->data().operate(object, &op, kWriteFlags);
  t.Done(r == -EEXIST ? 0 : r, r == -EEXIST ? 0 : bytes.size());
  if (r == -EEXIST) {
    *existed = true;
    return Status::OK();
  }
  if (r < 0) return cluster_->ToStatus(r, "write " + std::to_string(bytes.size()) + " bytes", cluster_->data_pool(), object);
  return Status::OK();
}

Status RadosContainerStore::WriteObject(const std::string& object, const std::string& bytes, uint64_t* replaced) {
  const std::string& pool = cluster_->data_pool();
  *replaced = 0;
  bool existed = false;
  DEDUPV1_RETURN_IF_ERROR(CreateObject(object, bytes, &existed));
  if (!existed) return Status::OK();
  // An overwrite: learn what it replaces, then replace it.
  Status s = StatObject(object, replaced);
  if (s.IsNotFound()) {
    *replaced = 0;  // deleted in between
  } else if (!s.ok()) {
    return s;
  }
  librados::ObjectWriteOperation op;
  librados::bufferlist bl;
  bl.append(bytes.data(), bytes.size());
  op.write_full(bl);
  RadosOpTimer t(cluster_.get(), RadosOpKind::kWrite);
  const int r = cluster_->data().operate(object, &op, kWriteFlags);
  t.Done(r, bytes.size());
  if (r < 0) return cluster_->ToStatus(r, "write " + std::to_string(bytes.size()) + " bytes", pool, object);
  return Status::OK();
}

Status RadosContainerStore::Put(ContainerId id, const std::string& bytes) {
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  std::shared_lock<std::shared_mutex> l(used_mu_);
  uint64_t replaced = 0;
  Status s = WriteObject(ObjectName(id), bytes, &replaced);
  if (!s.ok()) {
    // A timed-out write may still have landed: count again when asked.
    used_known_ = false;
    return s.WithContext("put " + Name(id));
  }
  used_bytes_.fetch_add(bytes.size());
  used_bytes_.fetch_sub(replaced);
  return Status::OK();
}

Status RadosContainerStore::PutNew(ContainerId id, const std::string& bytes) {
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  std::shared_lock<std::shared_mutex> l(used_mu_);
  bool existed = false;
  Status s = CreateObject(ObjectName(id), bytes, &existed);
  if (!s.ok()) {
    used_known_ = false;  // a timed-out write may still have landed
    return s.WithContext("put " + Name(id));
  }
  if (!existed) {
    used_bytes_.fetch_add(bytes.size());
    return Status::OK();
  }
  // The exclusive create is the atomic part: whoever wrote the object first
  // owns it. What is there decides whether that was an earlier attempt of
  // this put (its bytes; counted already, or by the recount a failed attempt
  // asked for) or another writer.
  std::string stored;
  s = Get(id, &stored);
  if (!s.ok()) return s.WithContext("put " + Name(id) + ": it exists, but reading it back failed");
  return SameOrOwnedByAnother(id, stored, bytes);
}

Status RadosContainerStore::Get(ContainerId id, std::string* bytes) {
  const std::string object = ObjectName(id);
  // The size and the data in one op: a read that came back short is seen.
  librados::ObjectReadOperation op;
  uint64_t size = 0;
  int stat_r = 0, read_r = 0;
  librados::bufferlist bl;
  op.stat(&size, nullptr, &stat_r);
  op.read(0, 0, &bl, &read_r);  // length 0: the whole object
  RadosOpTimer t(cluster_.get(), RadosOpKind::kRead);
  int r = cluster_->data().operate(object, &op, nullptr);
  if (r >= 0 && stat_r < 0) r = stat_r;
  if (r >= 0 && read_r < 0) r = read_r;
  t.Done(r, bl.length());
  if (r == -ENOENT) return Status::NotFound(Name(id) + " is not in the container store (" + Where(id) + ")");
  if (r < 0) return cluster_->ToStatus(r, "read", cluster_->data_pool(), object).WithContext("get " + Name(id));
  if (bl.length() != size) {
    return Status::IOError("get " + Name(id) + ": read " + std::to_string(bl.length()) + " of " +
                           std::to_string(size) + " bytes of " + Where(id));
  }
  return CopyOut(bl, bytes);
}

Status RadosContainerStore::ReadResult(ContainerId id, uint64_t offset, size_t n, bool exact, int r,
                                       const librados::bufferlist& bl, std::string* bytes) const {
  bytes->clear();
  if (r == -ENOENT) return Status::NotFound(Name(id) + " is not in the container store (" + Where(id) + ")");
  if (r < 0) {
    return cluster_->ToStatus(r, "read " + std::to_string(n) + "@" + std::to_string(offset), cluster_->data_pool(),
                              ObjectName(id))
        .WithContext("read from " + Name(id));
  }
  if (exact && bl.length() != n) {
    return Status::Corruption(Name(id) + " (" + Where(id) + ") ends " + std::to_string(n - bl.length()) +
                              " bytes short of its chunk at " + std::to_string(offset) + "+" + std::to_string(n) +
                              ": shorter than its metadata says");
  }
  return CopyOut(bl, bytes);
}

Status RadosContainerStore::ReadObject(ContainerId id, uint64_t offset, size_t n, bool exact, std::string* bytes) {
  bytes->clear();
  if (n == 0) {
    // A read of length 0 would read the whole object; only existence matters.
    uint64_t size = 0;
    Status s = StatObject(ObjectName(id), &size);
    if (s.IsNotFound()) return Status::NotFound(Name(id) + " is not in the container store (" + Where(id) + ")");
    return s;
  }
  librados::bufferlist bl;
  RadosOpTimer t(cluster_.get(), RadosOpKind::kRead);
  const int r = cluster_->data().read(ObjectName(id), bl, n, offset);
  t.Done(r, bl.length());
  return ReadResult(id, offset, n, exact, r, bl, bytes);
}

Status RadosContainerStore::GetHead(ContainerId id, size_t n, std::string* bytes) {
  return ReadObject(id, 0, n, /*exact=*/false, bytes);
}

Status RadosContainerStore::GetRange(ContainerId id, uint64_t offset, size_t n, std::string* bytes) {
  return ReadObject(id, offset, n, /*exact=*/true, bytes);
}

void RadosContainerStore::GetRanges(std::vector<RangeRead>* reads) {
  struct InFlight {
    size_t index = 0;
    librados::AioCompletion* done = nullptr;
    librados::bufferlist bl;
    std::chrono::steady_clock::time_point start;
  };
  std::deque<InFlight> flying;  // a deque: the bufferlists librados fills stay where they are
  auto finish_oldest = [&] {
    InFlight& f = flying.front();
    f.done->wait_for_complete();
    const int r = f.done->get_return_value();
    f.done->release();
    cluster_->Record(RadosOpKind::kRead, f.start, r >= 0 ? f.bl.length() : 0, r >= 0);
    RangeRead& rr = (*reads)[f.index];
    rr.status = ReadResult(rr.id, rr.offset, rr.n, /*exact=*/true, r, f.bl, &rr.bytes);
    MoveInto(&rr);
    flying.pop_front();
  };
  for (size_t i = 0; i < reads->size(); i++) {
    RangeRead& rr = (*reads)[i];
    if (rr.n == 0) {
      rr.status = GetRange(rr.id, rr.offset, rr.n, &rr.bytes);
      MoveInto(&rr);
      continue;
    }
    if (flying.size() >= kReadsInFlight) finish_oldest();
    flying.emplace_back();
    InFlight& f = flying.back();
    f.index = i;
    f.done = librados::Rados::aio_create_completion();
    f.start = std::chrono::steady_clock::now();
    const int r = cluster_->data().aio_read(ObjectName(rr.id), f.done, &f.bl, rr.n, rr.offset);
    if (r < 0) {
      f.done->release();
      flying.pop_back();
      rr.status = ReadResult(rr.id, rr.offset, rr.n, /*exact=*/true, r, {}, &rr.bytes);
      MoveInto(&rr);
    }
  }
  while (!flying.empty()) finish_oldest();
}

Status RadosContainerStore::Delete(ContainerId id) {
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  std::shared_lock<std::shared_mutex> l(used_mu_);
  const std::string object = ObjectName(id);
  uint64_t size = 0;
  Status s = StatObject(object, &size);
  if (s.IsNotFound()) return Status::NotFound(Name(id) + " is not in the container store (" + Where(id) + ")");
  if (s.ok()) {
    librados::ObjectWriteOperation op;
    op.remove();
    RadosOpTimer t(cluster_.get(), RadosOpKind::kRemove);
    const int r = cluster_->data().operate(object, &op, kWriteFlags);
    t.Done(r, 0);
    if (r == -ENOENT) return Status::NotFound(Name(id) + " is not in the container store (" + Where(id) + ")");
    if (r < 0) s = cluster_->ToStatus(r, "remove", cluster_->data_pool(), object);
  }
  if (!s.ok()) {
    used_known_ = false;  // the remove may have happened
    return s.WithContext("delete " + Name(id));
  }
  used_bytes_.fetch_sub(size);
  return Status::OK();
}

Status RadosContainerStore::List(std::vector<ContainerId>* ids) {
  ids->clear();
  // object_list (not NObjectIterator, which throws): each page is one op
  // with an error code.
  librados::IoCtx& io = cluster_->data();
  librados::ObjectCursor cursor = io.object_list_begin();
  const librados::ObjectCursor end = io.object_list_end();
  const librados::bufferlist no_filter;
  while (!io.object_list_is_end(cursor)) {
    std::vector<librados::ObjectItem> items;
    librados::ObjectCursor next;
    RadosOpTimer t(cluster_.get(), RadosOpKind::kList);
    const int r = io.object_list(cursor, end, kListPage, no_filter, &items, &next);
    t.Done(r, 0);
    if (r < 0) return cluster_->ToStatus(r, "list containers in", cluster_->data_pool(), "");
    for (const librados::ObjectItem& item : items) {
      ContainerId id;
      // The namespace check is belt and braces: the context lists only its own.
      if (item.nspace != cluster_->options().store || !ParseObjectName(item.oid, &id)) continue;
      if (id >= first_ && (end_ == 0 || id < end_)) ids->push_back(id);  // another slot's otherwise
    }
    cursor = next;
  }
  return Status::OK();
}

Status RadosContainerStore::CountUsedBytes(uint64_t* total) {
  std::vector<ContainerId> ids;
  DEDUPV1_RETURN_IF_ERROR(List(&ids));
  struct InFlight {
    std::string object;
    librados::AioCompletion* done = nullptr;
    uint64_t size = 0;
    std::chrono::steady_clock::time_point start;
  };
  std::deque<InFlight> flying;
  Status first_error;
  *total = 0;
  // Waits for the oldest stat; a container deleted since the listing counts 0.
  auto finish_oldest = [&] {
    InFlight& f = flying.front();
    f.done->wait_for_complete();
    const int r = f.done->get_return_value();
    f.done->release();
    cluster_->Record(RadosOpKind::kStat, f.start, 0, r >= 0 || r == -ENOENT);
    if (r >= 0) {
      *total += f.size;
    } else if (r != -ENOENT && first_error.ok()) {
      first_error = cluster_->ToStatus(r, "stat", cluster_->data_pool(), f.object);
    }
    flying.pop_front();
  };
  for (ContainerId id : ids) {
    if (flying.size() >= kStatsInFlight) finish_oldest();
    flying.emplace_back();
    InFlight& f = flying.back();
    f.object = ObjectName(id);
    f.done = librados::Rados::aio_create_completion();
    f.start = std::chrono::steady_clock::now();
    const int r = cluster_->data().aio_stat(f.object, f.done, &f.size, nullptr);
    if (r < 0) {
      f.done->release();
      flying.pop_back();
      if (first_error.ok()) first_error = cluster_->ToStatus(r, "stat", cluster_->data_pool(), ObjectName(id));
    }
  }
  while (!flying.empty()) finish_oldest();
  return first_error.WithContext("count the bytes of the container store");
}

Status RadosContainerStore::UsedBytes(uint64_t* bytes) {
  if (!used_known_) {
    std::unique_lock<std::shared_mutex> l(used_mu_);
    if (!used_known_) {
      uint64_t total = 0;
      DEDUPV1_RETURN_IF_ERROR(CountUsedBytes(&total));
      used_bytes_ = total;
      used_known_ = true;
    }
  }
  *bytes = used_bytes_.load();
  return Status::OK();
}

}  // namespace dedupv1
