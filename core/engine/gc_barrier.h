// GcBarrier keeps garbage collection's hold-and-recheck step apart from dedup
// runs (core/engine/garbage_collector.h): a dedup run holds it shared from reading
// the overwritten blocks' mappings until its new mappings are logged; a GC
// round holds it exclusively while it counts every logged event and deletes
// the chunks still unused. A gate mutex in front makes the exclusive side
// fair: std::shared_mutex (a glibc rwlock) prefers readers, so under steady
// load a waiting round could otherwise starve; while a round waits or holds
// the barrier, new runs wait at the gate and the ones inside finish.
#pragma once

#include <mutex>
#include <shared_mutex>

namespace dedupv1 {

class GcBarrier {
 public:
  // Held by a dedup run (released when the returned lock goes out of scope).
  std::shared_lock<std::shared_mutex> Shared() {
    std::lock_guard<std::mutex> gate(gate_);
    return std::shared_lock<std::shared_mutex>(mu_);
  }

  // Held by a GC round.
  class Exclusive {
   public:
    explicit Exclusive(GcBarrier* b) : gate_(b->gate_), lock_(b->mu_) {}

   private:
    std::unique_lock<std::mutex> gate_;
    std::unique_lock<std::shared_mutex> lock_;
  };

 private:
  std::mutex gate_;
  std::shared_mutex mu_;
};

}  // namespace dedupv1
