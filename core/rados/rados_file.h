// A file of RadosEnv (core/rados/rados_env.h): a byte array striped over
// objects of the index pool, with pread/pwrite semantics.
//
// Layout of the file whose object name is <oid> (the path relative to the
// store's root):
//   <oid>                stripe 0 (bytes [0, stripe)), and the file's
//                        metadata in xattrs:
//                          size  the file size (decimal)
//                          id    this incarnation of the file (hex); stripes
//                                of another incarnation are never read
//                          hwm   a bound past which no stripe >= 1 holds data
//   <oid>@<id>:<n>       stripe n >= 1 (bytes [n*stripe, (n+1)*stripe))
// A missing stripe, and the part of a stripe past its object's end, read as
// zeros up to the size (Allocate and Truncate only set the size).
//
// Why the incarnation id: RADOS has no rename and no atomic multi-object
// update. With the id in the stripe names, a new file under a name (create,
// rename over it, truncate on open) can never see stripes a crash left behind
// from an earlier file of that name, and a rename of a multi-stripe file
// switches atomically: the new stripes are written under a fresh id, then one
// write of stripe 0 (data, size, id) makes them the file.
//
// Why the hwm: writes to stripes >= 1 are not ordered against the size
// update of stripe 0 (posix gives no such order before fsync either), so a
// crash can leave data past the recorded size. Before a write may put data
// past hwm, hwm is raised (in steps, so a stream of appends raises it rarely);
// a writer opening the file cuts away [size, hwm) first. So a later extension
// of the file reads zeros in its holes, as on posix.
//
// Writes are asynchronous (aio_operate, at most kMaxInFlight per file):
// Sync waits for all of them and returns the first error since the last
// Sync, once (as Linux reports a writeback error to fsync), so a caller that
// redoes its writes after the cluster returns can sync again. Reads wait for
// the pending writes but do not report their errors. A write that
// touches stripe 0 carries the current size in the same atomic operation;
// size changes from writes to other stripes are written by Sync or Close.
//
// RadosFileState is shared by every open handle of one file in one process
// (RadosEnv keeps the map), so handles see each other's writes and size.
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>

#include <rados/librados.hpp>

#include "core/base/env.h"
#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

// The xattrs of stripe 0.
struct RadosFileMeta {
  uint64_t size = 0;
  uint64_t hwm = 0;
  std::string id;
};

// A fresh random incarnation id.
std::string NewRadosFileId();
// Object name of stripe |n| of the file |oid| in incarnation |id|.
std::string RadosStripeOid(const std::string& oid, const std::string& id, uint64_t n);
// Adds setxattrs of |meta| to |op|.
void SetRadosFileMeta(const RadosFileMeta& meta, librados::ObjectWriteOperation* op);
// Reads the metadata of file |oid| (one read op). NotFound if there is no
// such file; Corruption if stripe 0 lacks or garbles its xattrs.
Status StatRadosFile(RadosCluster* cluster, const std::string& oid, RadosFileMeta* meta);
// Removes stripes [first, last] (>= 1) of incarnation |id| of |oid|, all in
// flight at once; missing ones are fine.
Status RemoveRadosStripes(RadosCluster* cluster, const std::string& oid, const std::string& id, uint64_t first,
                          uint64_t last);
// Number of stripes >= 1 that may hold data of a file with |meta|: stripes
// 1 .. LastStripe(meta) (0 if none).
uint64_t RadosLastStripe(const RadosFileMeta& meta, uint64_t stripe_size);

// Runs one operation synchronously, counted as |kind|; errors name pool and
// object. |r| (if given) receives the raw result so callers can accept ENOENT.
Status RadosOperate(RadosCluster* cluster, const std::string& oid, librados::ObjectWriteOperation* op,
                    RadosOpKind kind, uint64_t bytes, const std::string& what, int* r = nullptr);
Status RadosOperateRead(RadosCluster* cluster, const std::string& oid, librados::ObjectReadOperation* op,
                        RadosOpKind kind, const std::string& what, int* r = nullptr);

class RadosFileState {
 public:
  RadosFileState(std::shared_ptr<RadosCluster> cluster, std::string oid, std::string path, RadosFileMeta meta);
  // Waits for pending writes and writes the size (Close); errors are logged,
  // as a close without fsync may lose them on posix too.
  ~RadosFileState();
  RadosFileState(const RadosFileState&) = delete;
  RadosFileState& operator=(const RadosFileState&) = delete;

  Status Read(uint64_t offset, size_t n, void* buf);
  Status Write(uint64_t offset, const void* data, size_t n);
  Status Sync();
  uint64_t Size();
  Status Truncate(uint64_t size);
  Status Allocate(uint64_t offset, uint64_t len);
  // Cuts away data a crash may have left in [size, hwm) (see above).
  Status TrimStale();
  // Flushes like Sync, then detaches the state from the objects (the file is
  // being deleted or renamed): every later call fails NotFound. *meta: the
  // file's metadata as written.
  Status Detach(RadosFileMeta* meta);
  const std::string& path() const { return path_; }

 private:
  struct Pending {
    librados::AioCompletion* completion;
    std::unique_ptr<librados::ObjectWriteOperation> op;
    std::string oid;
    uint64_t bytes;
    std::chrono::steady_clock::time_point start;
  };
  static constexpr size_t kMaxInFlight = 64;

  Status CheckUsable() const;
  Status SubmitWrite(uint64_t stripe, uint64_t offset_in_stripe, const char* data, size_t n);
  Status RaiseHwm(uint64_t end);
  void WaitOldest();
  void WaitAll();
  Status FlushLocked();
  Status WriteMetaLocked(uint64_t stripe0_truncate_to);
  Status ReadStripes(uint64_t offset, size_t n, char* buf);
  Status CutData(uint64_t from, uint64_t to);

  const std::shared_ptr<RadosCluster> cluster_;
  const std::string oid_;
  const std::string path_;
  const uint64_t stripe_;
  const std::string id_;  // the incarnation: fixed for the life of the state

  std::mutex mu_;
  uint64_t size_;             // the file size as handles see it
  RadosFileMeta durable_;     // what stripe 0's xattrs hold (or will, once pending ops complete)
  std::deque<Pending> pending_;
  Status error_;              // first failed asynchronous write since the last flush
  bool detached_ = false;
};

// A handle on a RadosFileState.
class RadosFile : public File {
 public:
  RadosFile(std::shared_ptr<RadosFileState> state, std::string path)
      : state_(std::move(state)), path_(std::move(path)) {}

  Status Read(uint64_t offset, size_t n, void* buf) override { return state_->Read(offset, n, buf); }
  Status Write(uint64_t offset, const void* data, size_t n) override { return state_->Write(offset, data, n); }
  Status Sync() override { return state_->Sync(); }
  Status Size(uint64_t* size) override {
    *size = state_->Size();
    return Status::OK();
  }
  Status Truncate(uint64_t size) override { return state_->Truncate(size); }
  Status Allocate(uint64_t offset, uint64_t len) override { return state_->Allocate(offset, len); }
  const std::string& path() const override { return path_; }

 private:
  const std::shared_ptr<RadosFileState> state_;
  const std::string path_;
};

}  // namespace dedupv1
