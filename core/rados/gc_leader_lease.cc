#include "core/rados/gc_leader_lease.h"

#include <sys/time.h>
#include <unistd.h>

#include <cerrno>

#include "core/base/host_name.h"
#include "core/rados/rados_file.h"

namespace dedupv1 {

GcLeaderLease::GcLeaderLease(std::shared_ptr<RadosCluster> cluster, std::string cookie)
    : cluster_(std::move(cluster)),
      cookie_(std::move(cookie)),
      duration_(std::max<uint32_t>(cluster_->options().lock_duration_s, 1)) {}

int GcLeaderLease::Lock(bool renew, std::chrono::steady_clock::time_point* began) {
  struct timeval duration = {static_cast<time_t>(duration_.count()), 0};
  const std::string description = "dedupv1 GC leader on " + HostName() + " pid " + std::to_string(::getpid());
  *began = std::chrono::steady_clock::now();  // the lease runs from the request, at the latest
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kLock);
  const int r = cluster_->index().lock_exclusive(kObject, kLockName, cookie_, description, &duration,
                                                 renew ? LIBRADOS_LOCK_FLAG_MAY_RENEW : 0);
  timer.Done(r == -EBUSY || r == -EEXIST ? 0 : r, 0);
  return r;
}

Status GcLeaderLease::TryAcquire(std::shared_ptr<RadosCluster> cluster, std::unique_ptr<GcLeaderLease>* out) {
  out->reset();
  DEDUPV1_RETURN_IF_ERROR(cluster->CheckLease());  // a fenced gateway leads nothing
  const std::string cookie = HostName() + "-" + std::to_string(::getpid()) + "-" + NewRadosFileId();
  std::unique_ptr<GcLeaderLease> lease(new GcLeaderLease(cluster, cookie));
  const int r = lease->Lock(false, &lease->began_);
  if (r == -EBUSY || r == -EEXIST) return Status::OK();  // another slot leads
  if (r < 0) return cluster->ToStatus(r, "take the GC leader lease", cluster->index_pool(), kObject);
  *out = std::move(lease);
  return Status::OK();
}

GcLeaderLease::~GcLeaderLease() {
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kLock);
  const int r = cluster_->index().unlock(kObject, kLockName, cookie_);
  timer.Done(r == -ENOENT ? 0 : r, 0);  // ENOENT: the lease ran out and was taken or cleaned up
}

Status GcLeaderLease::Check() {
  const auto now = std::chrono::steady_clock::now();
  if (now - began_ < duration_ / 3) return Status::OK();
  // Past the lease (a stall): another slot may lead by now, so stop here
  // rather than renew.
  if (now - began_ >= duration_) {
    return Status::Aborted("GC leader lease on " + cluster_->Where(cluster_->index_pool(), kObject) +
                           " ran out before it was renewed");
  }
  std::chrono::steady_clock::time_point began;
  const int r = Lock(true, &began);
  if (r < 0) {
    return cluster_->ToStatus(r, "renew the GC leader lease", cluster_->index_pool(), kObject)
        .WithContext("GC leader lease lost");
  }
  began_ = began;
  return Status::OK();
}

}  // namespace dedupv1
