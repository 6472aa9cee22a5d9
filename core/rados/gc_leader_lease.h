// GcLeaderLease: the lease that makes one gateway slot of a store the leader
// of its index GC rounds (docs/design-15.md 2.6): the cls lock "dedupv1.gc"
// on the store's index-pool object "gc", any slot may hold it. A round takes
// it without waiting (a slot that does not get it skips the round: another
// one leads), checks it before every change it makes and releases it at the
// end.
//
// A lease, not a kernel lock: it runs lock_duration_s from the moment it was
// asked for. Check renews it once a third of it has passed and fails
// (Aborted) once it may have run out, so a leader that stalled longer than a
// lease stops changing the table before a second leader could be acting.
// The table's compare-and-sets keep two leaders from undoing each other's
// steps in any case; the lease only keeps the work to one.
//
// Every call goes through the RadosCluster (counted, errors name pool and
// object). Not thread-safe: one round's thread uses it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

class GcLeaderLease {
 public:
  static constexpr char kObject[] = "gc";
  static constexpr char kLockName[] = "dedupv1.gc";

  // Takes the lease if nobody holds it: *out is null (and the status OK)
  // when another holder has it.
  static Status TryAcquire(std::shared_ptr<RadosCluster> cluster, std::unique_ptr<GcLeaderLease>* out);
  // Releases the lease.
  ~GcLeaderLease();

  // OK while the lease is certainly ours; renews it when a third has passed.
  Status Check();

 private:
  GcLeaderLease(std::shared_ptr<RadosCluster> cluster, std::string cookie);
  // lock_exclusive (renewing if |renew|); the lease starts at |*began|.
  int Lock(bool renew, std::chrono::steady_clock::time_point* began);

  const std::shared_ptr<RadosCluster> cluster_;
  const std::string cookie_;
  const std::chrono::seconds duration_;
  std::chrono::steady_clock::time_point began_;
};

}  // namespace dedupv1
