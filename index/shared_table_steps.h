// SharedTableSteps counts the operations and keys the shared chunk index
// (index/rados_shared_chunk_table.h) sent for each step of the cluster-scope
// protocol (docs/design-15.md 2.4-2.6): lookups, claims, flips, usage reads
// and writes, GC. The bench reports them per GiB, so a change to the
// protocol shows which step it made cheaper, and the gateway model
// (bench/gateway_sim.h) is fed per step instead of with one total.
//
// Thread-safe (atomic counters); a snapshot taken while operations run may
// mix counts of slightly different moments, never loses one.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace dedupv1 {

enum class SharedTableStep : int {
  kLookup,      // a run's entries (LookupMany)
  kClaim,       // claims of new chunks (ClaimMany)
  kFlip,        // claims flipped to committed (FlipMany)
  kOtherCas,    // single-key take-overs, revives, replaces
  kUsageRead,   // the read before a usage write
  kUsageWrite,  // usage counts of this slot
  kGc,          // GC: records, hints, guarded replaces and erases
  kJournal,     // the claim journal (index/claim_journal.h): appends, removals, GC's reads
  kCount,
};

// "lookup", "claim", ... (JSON keys of the bench).
const char* SharedTableStepName(SharedTableStep step);

struct SharedTableStepCounts {
  std::array<uint64_t, static_cast<size_t>(SharedTableStep::kCount)> ops{};
  std::array<uint64_t, static_cast<size_t>(SharedTableStep::kCount)> keys{};  // keys sent or asked for
};

class SharedTableSteps {
 public:
  void Count(SharedTableStep step, uint64_t keys) {
    const auto i = static_cast<size_t>(step);
    ops_[i].fetch_add(1, std::memory_order_relaxed);
    keys_[i].fetch_add(keys, std::memory_order_relaxed);
  }
  SharedTableStepCounts Snapshot() const {
    SharedTableStepCounts c;
    for (size_t i = 0; i < c.ops.size(); i++) {
      c.ops[i] = ops_[i].load(std::memory_order_relaxed);
      c.keys[i] = keys_[i].load(std::memory_order_relaxed);
    }
    return c;
  }

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(SharedTableStep::kCount)> ops_{};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(SharedTableStep::kCount)> keys_{};
};

inline const char* SharedTableStepName(SharedTableStep step) {
  switch (step) {
    case SharedTableStep::kLookup: return "lookup";
    case SharedTableStep::kClaim: return "claim";
    case SharedTableStep::kFlip: return "flip";
    case SharedTableStep::kOtherCas: return "other_cas";
    case SharedTableStep::kUsageRead: return "usage_read";
    case SharedTableStep::kUsageWrite: return "usage_write";
    case SharedTableStep::kGc: return "gc";
    case SharedTableStep::kJournal: return "journal";
    case SharedTableStep::kCount: break;
  }
  return "?";
}

}  // namespace dedupv1
