// RadosLock: the store lock of RadosEnv::LockFile, an exclusive lease on one
// object of the index pool, taken with the "lock" object class (librados
// IoCtx::lock_exclusive, the mechanism RBD's exclusive lock uses).
//
// A lease, not a kernel lock: the holder renews it from a thread every third
// of RadosOptions::lock_duration_s; if the holder dies (kill -9, power loss)
// nobody renews and the lease runs out, so the next Acquire succeeds at most
// one lease later. Acquire waits that long (one lease, plus a little) while
// the lock is held, then fails Busy naming the holder (client, address,
// cookie with host and pid).
//
// If renewal fails (cluster unreachable for longer than the lease, or another
// holder took the lock after it ran out) the lock is lost: this is logged
// once per failure, and renewal keeps trying (it re-takes the lock if nobody
// else has it). While lost, a second gateway may open the same store, so an
// operator must stop one of them; the I/O the engine does meanwhile fails
// anyway when the cluster is gone, which is the usual cause.
//
// With RadosOptions::fence_on_lease_loss (gateway mode) a lost lock is lost
// for good instead: a renewal answered EBUSY (another holder), ESHUTDOWN
// (this client was blocklisted, core/rados/rados_fence.h), or any renewal
// due after the lease had already lapsed, fences the connection
// (RadosCluster::SetFenced) and renewal stops. No re-take: another gateway
// may have recovered the store and moved on. Acquire on a fenced connection
// fails.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/base/env.h"
#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

class RadosLock : public FileLock {
 public:
  // The cls lock name of every store lock (list_lockers, break_lock).
  static constexpr char kLockName[] = "dedupv1.store";

  // Takes the lock on object |oid| (|path| names it in messages).
  static Status Acquire(std::shared_ptr<RadosCluster> cluster, const std::string& oid, const std::string& path,
                        std::unique_ptr<FileLock>* out);
  // Stops renewal and releases the lock.
  ~RadosLock() override;

 private:
  RadosLock(std::shared_ptr<RadosCluster> cluster, std::string oid, std::string path, std::string cookie);
  int TryLock(bool renew, std::chrono::steady_clock::time_point* began = nullptr);
  std::string Holder();
  // Renews the lease taken at |began| until stopped (or lost for good).
  void RenewLoop(std::chrono::steady_clock::time_point began);
  // With fence_on_lease_loss: whether renewal result |r| (0: not tried yet),
  // the lease last taken at |last_began|, loses the lock for good.
  bool LostForGood(int r, std::chrono::steady_clock::time_point last_began) const;

  const std::shared_ptr<RadosCluster> cluster_;
  const std::string oid_;
  const std::string path_;
  const std::string cookie_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread renewer_;
};

}  // namespace dedupv1
