#include "core/engine/gc_epoch_follower.h"

#include "core/rados/gc_epochs.h"

namespace dedupv1 {

GcEpochFollower::GcEpochFollower(std::shared_ptr<RadosCluster> cluster, std::string slot, uint32_t incarnation,
                                 Hooks hooks, std::chrono::milliseconds poll_interval,
                                 std::chrono::milliseconds republish)
    : cluster_(std::move(cluster)),
      slot_(std::move(slot)),
      incarnation_(incarnation),
      hooks_(std::move(hooks)),
      poll_interval_(poll_interval),
      republish_(republish) {}

Status GcEpochFollower::Open() {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t epoch = 0;
  DEDUPV1_RETURN_IF_ERROR(ReadGcEpoch(cluster_.get(), &epoch));
  hooks_.set_epoch(epoch);
  epoch_ = epoch;
  return Status::OK();
}

Status GcEpochFollower::Follow() {
  // The checkpoint thread's look: skipped while another step (RunGc's
  // Advance) holds the follower, so the thread does not wait out that
  // step's barrier and checkpoint.
  std::unique_lock<std::mutex> l(mu_, std::try_to_lock);
  if (!l.owns_lock()) return Status::OK();
  const auto now = std::chrono::steady_clock::now();
  if (has_published_ && now - last_look_ < poll_interval_) return Status::OK();
  last_look_ = now;
  return AdvanceLocked();
}

Status GcEpochFollower::Advance() {
  std::lock_guard<std::mutex> l(mu_);
  return AdvanceLocked();
}

Status GcEpochFollower::AdvanceLocked() {
  uint64_t epoch = 0;
  DEDUPV1_RETURN_IF_ERROR(ReadGcEpoch(cluster_.get(), &epoch));
  const auto now = std::chrono::steady_clock::now();
  if (has_published_ && epoch <= published_) {
    // Still true (every later run is tagged at least this): said again now
    // and then, in case the record was lost or damaged.
    if (now - last_publish_ < republish_) return Status::OK();
    DEDUPV1_RETURN_IF_ERROR(PublishSafeEpoch(cluster_.get(), slot_, incarnation_, published_));
    last_publish_ = now;
    return Status::OK();
  }
  // The epoch never goes down; a smaller one read would be damage elsewhere,
  // and tagging runs with it would only make them trust less.
  if (epoch > epoch_) {
    hooks_.set_epoch(epoch);
    epoch_ = epoch;
  }
  DEDUPV1_RETURN_IF_ERROR(hooks_.checkpoint());
  DEDUPV1_RETURN_IF_ERROR(PublishSafeEpoch(cluster_.get(), slot_, incarnation_, epoch_));
  published_ = epoch_.load();
  has_published_ = true;
  last_publish_ = now;
  return Status::OK();
}

Status GcEpochFollower::PublishClosed() {
  std::lock_guard<std::mutex> l(mu_);
  DEDUPV1_RETURN_IF_ERROR(PublishSafeEpoch(cluster_.get(), slot_, incarnation_, kSafeEpochClosed));
  published_ = kSafeEpochClosed;
  has_published_ = true;
  return Status::OK();
}

}  // namespace dedupv1
