// RadosCluster is one connection to a Ceph cluster (librados) with the two
// I/O contexts a store uses (data pool, index pool; both set to the store's
// namespace), and the counters the monitor shows: operations, bytes and
// latency per kind of operation.
//
// Every librados call of the project goes through a RadosCluster, so:
//  - a failed call becomes a Status naming the pool, the object and what
//    failed (ToStatus): ENOENT -> NotFound, ENOSPC/EDQUOT -> NoSpace (a full
//    pool or a quota), EPERM/EACCES -> IOError naming the cephx user's caps,
//    ETIMEDOUT -> IOError "cluster did not answer within N s", ESHUTDOWN
//    -> IOError "this client is blocklisted" (another gateway fenced it);
//  - no call blocks forever: rados_osd_op_timeout, rados_mon_op_timeout and
//    client_mount_timeout are set to RadosOptions::op_timeout_s before the
//    connect, so a stopped cluster turns into I/O errors.
//
// Connections are shared: Shared() returns the live connection for the same
// RadosOptions::ConnectionKey() (one per process and cluster), so the
// engine, the chunk store backend and the tools of one process do not open
// several; Unshared() opens one of its own (two independent clients of one
// store in a process: fencing tests). Thread-safe (librados is; the counters
// are atomics).
//
// Fenced (gateway mode, RadosOptions::fence_on_lease_loss): once the store
// lock is lost for good (core/rados/rados_lock.h) the connection is fenced,
// stickily: CheckLease, which every writer calls before a write, fails from
// then on, so the process can never write into the store again, even if
// the cluster would let it. Reads still work (unless the cluster has
// blocklisted this client too: then every op fails ESHUTDOWN).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include <rados/librados.hpp>

#include "core/base/status.h"
#include "core/rados/rados_options.h"

namespace dedupv1 {

// Kinds of RADOS operations, counted separately.
enum class RadosOpKind { kRead, kWrite, kOmapRead, kOmapWrite, kStat, kRemove, kList, kLock, kCount };

const char* RadosOpKindName(RadosOpKind kind);

struct RadosOpCounters {
  std::atomic<uint64_t> ops{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> latency_us_total{0};
  std::atomic<uint64_t> latency_us_max{0};
};

// A plain copy of the counters, for stats and the monitor.
struct RadosStats {
  struct Kind {
    uint64_t ops = 0, errors = 0, bytes = 0, latency_us_total = 0, latency_us_max = 0;
  };
  Kind kinds[static_cast<int>(RadosOpKind::kCount)];
  uint64_t TotalOps() const;
};

class RadosCluster {
 public:
  // Connects (or returns the shared connection) and opens both pools in the
  // store's namespace. Errors name the conf file, the client and the pool:
  // an unreachable cluster, a missing pool ("create it with ..."), missing
  // caps.
  static Status Shared(const RadosOptions& options, std::shared_ptr<RadosCluster>* out);
  // A connection of its own, never shared (errors as Shared).
  static Status Unshared(const RadosOptions& options, std::shared_ptr<RadosCluster>* out);

  ~RadosCluster();
  RadosCluster(const RadosCluster&) = delete;
  RadosCluster& operator=(const RadosCluster&) = delete;

  const RadosOptions& options() const { return options_; }
  librados::Rados& rados() { return rados_; }
  // I/O contexts in the store's namespace. IoCtx is not safe for concurrent
  // set_namespace etc.; callers only issue operations on them, which is.
  librados::IoCtx& data() { return data_; }
  librados::IoCtx& index() { return index_; }
  const std::string& data_pool() const { return options_.data_pool; }
  const std::string& index_pool() const { return options_.index_pool; }

  // A Status for librados result |r| (< 0) of |what| ("write", "read
  // 4096@0", ...) on |object| in |pool|.
  Status ToStatus(int r, const std::string& what, const std::string& pool, const std::string& object) const;

  // Whether |object| exists in the index pool (one counted stat). Any error
  // but ENOENT is ToStatus of |what| ("look for ...").
  Status IndexObjectExists(const std::string& object, const std::string& what, bool* exists);

  // Omap of an index-pool object, for the per-slot key lists (dead inbox,
  // claim journal): each one counted operation, errors ToStatus of |what|.
  // Up to |max| keys after |after| in key order (an absent object has none).
  Status ReadIndexOmapPage(const std::string& object, const std::string& after, size_t max,
                           std::map<std::string, librados::bufferlist>* page, const std::string& what);
  // Sets |keys| in one write, creating the object if needed; checks the
  // lease first.
  Status SetIndexOmapKeys(const std::string& object, const std::map<std::string, librados::bufferlist>& keys,
                          const std::string& what);
  // Removes |keys| in one write (absent keys and an absent object are fine);
  // checks the lease first.
  Status RemoveIndexOmapKeys(const std::string& object, const std::set<std::string>& keys, const std::string& what);

  // Counts one finished operation.
  void Record(RadosOpKind kind, std::chrono::steady_clock::time_point start, uint64_t bytes, bool ok);
  RadosStats stats() const;

  // Objects and bytes of |pool| (the whole pool, every namespace: RADOS
  // keeps no per-namespace totals), at most |max_age_s| seconds old (one
  // query to the cluster when older). Errors as ToStatus.
  Status PoolUsage(const std::string& pool, uint64_t* objects, uint64_t* bytes, int max_age_s = 10);

  // The store's leases (core/rados/rados_lock.h): each held lock reports
  // when its last successful take or renewal began. CheckLease is OK while
  // the connection is not fenced and no lock is held or every held one was
  // renewed less than a lease ago; else an IOError: the lease may have passed
  // to another gateway, whose store this process must not write into (every
  // writer of a rados store calls it before a write: RadosEnv's files,
  // containers, the chunk table). With fence_on_lease_loss a lapsed lease
  // fences the connection (SetFenced), so the refusal stays.
  void LeaseRenewed(const void* lock, std::chrono::steady_clock::time_point began);
  void LeaseReleased(const void* lock);
  Status CheckLease();

  // Fences this connection for good (the first |why| is kept): "gateway lost
  // its store lock (fenced): <why>" is CheckLease's answer from now on.
  // CheckFenced is that answer alone (OK unless fenced), for writes that
  // never checked the lease (RadosEnv's creates, renames, removes).
  void SetFenced(const std::string& why);
  bool fenced() const;
  Status CheckFenced() const;

  // This client's address as the cluster knows it ("127.0.0.1:0/2546039316"):
  // what Fence (core/rados/rados_fence.h) blocklists. A gateway records it
  // at open (GatewayRegistry), since list_lockers forgets it once the lease
  // ran out. "" before the connect.
  std::string client_address() const { return connected_ ? rados_.get_addrs() : ""; }

  // "pool/namespace/object", for messages and tools.
  std::string Where(const std::string& pool, const std::string& object) const;

 private:
  explicit RadosCluster(const RadosOptions& options) : options_(options) {}
  Status Connect();
  Status OpenPool(const std::string& pool, librados::IoCtx* ioctx);

  const RadosOptions options_;
  librados::Rados rados_;
  librados::IoCtx data_;
  librados::IoCtx index_;
  bool connected_ = false;
  struct PoolUsageCache {
    std::chrono::steady_clock::time_point at;
    uint64_t objects = 0, bytes = 0;
    Status error;  // of the last query, kept as long as a result would be
  };
  mutable std::mutex lease_mu_;
  std::map<const void*, std::chrono::steady_clock::time_point> leases_;  // guarded by lease_mu_
  std::string fenced_why_;                                               // guarded by lease_mu_; "" = not fenced
  std::mutex usage_mu_;
  std::map<std::string, PoolUsageCache> usage_;  // guarded by usage_mu_
  RadosOpCounters counters_[static_cast<int>(RadosOpKind::kCount)];
};

// Times one operation and records it on destruction (or on Done()).
class RadosOpTimer {
 public:
  RadosOpTimer(RadosCluster* cluster, RadosOpKind kind)
      : cluster_(cluster), kind_(kind), start_(std::chrono::steady_clock::now()) {}
  ~RadosOpTimer() {
    if (!done_) cluster_->Record(kind_, start_, bytes_, ok_);
  }
  void Done(int r, uint64_t bytes) {
    ok_ = r >= 0;
    bytes_ = bytes;
    cluster_->Record(kind_, start_, bytes_, ok_);
    done_ = true;
  }

 private:
  RadosCluster* const cluster_;
  const RadosOpKind kind_;
  const std::chrono::steady_clock::time_point start_;
  uint64_t bytes_ = 0;
  bool ok_ = false;
  bool done_ = false;
};

}  // namespace dedupv1
