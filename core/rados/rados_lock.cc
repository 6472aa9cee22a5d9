#include "core/rados/rados_lock.h"

#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <list>

#include "core/base/host_name.h"
#include "core/rados/rados_file.h"

namespace dedupv1 {

RadosLock::RadosLock(std::shared_ptr<RadosCluster> cluster, std::string oid, std::string path, std::string cookie)
    : cluster_(std::move(cluster)), oid_(std::move(oid)), path_(std::move(path)), cookie_(std::move(cookie)) {}

int RadosLock::TryLock(bool renew, std::chrono::steady_clock::time_point* began_out) {
  struct timeval duration = {static_cast<time_t>(cluster_->options().lock_duration_s), 0};
  const std::string description = "dedupv1 on " + HostName() + " pid " + std::to_string(::getpid());
  // The lease runs from the moment the request was sent, at the latest.
  const auto began = std::chrono::steady_clock::now();
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kLock);
  const int r = cluster_->index().lock_exclusive(oid_, kLockName, cookie_, description, &duration,
                                                 renew ? LIBRADOS_LOCK_FLAG_MAY_RENEW : 0);
  timer.Done(r, 0);
  if (r == 0) cluster_->LeaseRenewed(this, began);
  if (began_out != nullptr) *began_out = began;
  return r;
}

// "client.4123 at v1:127.0.0.1:0/123 (cookie host-pid-id)", or why not known.
std::string RadosLock::Holder() {
  int exclusive = 0;
  std::string tag;
  std::list<librados::locker_t> lockers;
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kLock);
  const int r = cluster_->index().list_lockers(oid_, kLockName, &exclusive, &tag, &lockers);
  timer.Done(r, 0);
  if (r < 0) return std::string("an unknown holder (list_lockers: ") + std::strerror(-r) + ")";
  if (lockers.empty()) return "nobody (just released)";
  std::string out;
  for (const librados::locker_t& l : lockers) {
    if (!out.empty()) out += ", ";
    out += l.client + " at " + l.address + " (cookie " + l.cookie + ")";
  }
  return out;
}

Status RadosLock::Acquire(std::shared_ptr<RadosCluster> cluster, const std::string& oid, const std::string& path,
                          std::unique_ptr<FileLock>* out) {
  // A fenced connection never takes a lock again (CheckLease says why).
  if (cluster->fenced()) return cluster->CheckLease();
  const std::string cookie = HostName() + "-" + std::to_string(::getpid()) + "-" + NewRadosFileId();
  std::unique_ptr<RadosLock> lock(new RadosLock(cluster, oid, path, cookie));
  const auto lease = std::chrono::seconds(cluster->options().lock_duration_s);
  // A holder killed without unlocking leaves a lease nobody renews: waiting
  // one lease (and a second for clock steps) outlasts it.
  const auto deadline = std::chrono::steady_clock::now() + lease + std::chrono::seconds(1);
  std::chrono::steady_clock::time_point began;
  for (;;) {
    const int r = lock->TryLock(false, &began);
    if (r == 0) break;
    if (r != -EBUSY && r != -EEXIST) return cluster->ToStatus(r, "lock " + path, cluster->index_pool(), oid);
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Busy(path + " (" + cluster->Where(cluster->index_pool(), oid) + ") is locked by " +
                          lock->Holder() + ": another gateway has this store open (waited one lease of " +
                          std::to_string(cluster->options().lock_duration_s) + " s)");
    }
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(500), deadline - std::chrono::steady_clock::now()));
  }
  RadosLock* raw = lock.get();
  lock->renewer_ = std::thread([raw, began] { raw->RenewLoop(began); });
  *out = std::move(lock);
  return Status::OK();
}

bool RadosLock::LostForGood(int r, std::chrono::steady_clock::time_point last_began) const {
  if (!cluster_->options().fence_on_lease_loss) return false;
  if (r == -EBUSY || r == -EEXIST || r == -ESHUTDOWN) return true;
  return std::chrono::steady_clock::now() - last_began >= std::chrono::seconds(cluster_->options().lock_duration_s);
}

void RadosLock::RenewLoop(std::chrono::steady_clock::time_point last_began) {
  const auto period = std::chrono::milliseconds(cluster_->options().lock_duration_s * 1000 / 3);
  std::unique_lock<std::mutex> l(mu_);
  while (!cv_.wait_for(l, period, [this] { return stop_; })) {
    l.unlock();
    // Fenced (by another lock of this connection, or CheckLease): no re-take.
    if (cluster_->fenced()) return;
    int r = 0;
    std::string why;
    if (!LostForGood(0, last_began)) {
      std::chrono::steady_clock::time_point began;
      r = TryLock(true, &began);
      if (r == 0) last_began = began;
      if (r == -EBUSY || r == -EEXIST) {
        why = "now held by " + Holder();
      } else if (r == -ESHUTDOWN) {
        why = std::string(std::strerror(-r)) + " (this client " + cluster_->client_address() +
              " is blocklisted: another gateway fenced it)";
      } else if (r < 0) {
        why = std::strerror(-r);
      }
    } else {
      why = "not renewed within its lease of " + std::to_string(cluster_->options().lock_duration_s) + " s";
    }
    if (r < 0 || !why.empty()) {
      const std::string what = "renewing the store lock " + path_ + " (" +
                               cluster_->Where(cluster_->index_pool(), oid_) + ") failed: " + why;
      if (LostForGood(r, last_began)) {
        cluster_->SetFenced(what);
        std::fprintf(stderr, "dedupv1: %s; the lock is lost for good: this gateway is fenced and writes nothing "
                             "more (restart it to serve again)\n", what.c_str());
        return;
      }
      std::fprintf(stderr, "dedupv1: %s; the lock is lost until renewal succeeds, another gateway may open the "
                           "store meanwhile\n", what.c_str());
    }
    l.lock();
  }
}

RadosLock::~RadosLock() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  cluster_->LeaseReleased(this);
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kLock);
  const int r = cluster_->index().unlock(oid_, kLockName, cookie_);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r < 0 && r != -ENOENT) {
    std::fprintf(stderr, "dedupv1: releasing the store lock %s: %s (the lease runs out by itself)\n", path_.c_str(),
                 cluster_->ToStatus(r, "unlock", cluster_->index_pool(), oid_).ToString().c_str());
  }
}

}  // namespace dedupv1
