// OrphanCopies finds the copies of chunks that nothing in a cluster-scope
// store (storage.rados.dedup-scope = cluster) can reach any more: the orphan
// scan of docs/design-15.md 2.6. A copy is a chunk of a gateway slot's
// committed container, not marked dead, and it is an orphan when
//  - no block mapping of any slot names it (merged ids followed to where the
//    chunks are now),
//  - the shared chunk index's entry of its fingerprint names another
//    container or there is none (an entry in any state, C, U or D, keeps it),
//  - and its slot's dead inbox does not hold it (index GC's finding, which
//    the slot's container GC turns into a mark anyway).
// A crash in a narrow window leaves such copies: a dead mark the claim step
// made after the last checkpoint, index GC's erase before its inbox append,
// a journaled claim that was never sent, a container a fenced gateway wrote
// late. No dedup run can find one again (a run reaches a copy only through
// the entry, its block's own mapping, or a lost claim's winner, which is an
// entry too), so marking it dead loses nothing, and the slot's container GC
// then gives the space back.
//
// The judgement is only as good as its view: every slot's mappings, walked
// while every slot's lock is held (ClusterChecker), and the shared index
// read after them, with nothing changing meanwhile. The caller records the
// listed copies (AddContainer) and everything that names a copy (Reach), in
// any order, then calls Find. Listed containers are ids as the chunks are
// stored now; a reach names where the caller found the chunk (merges
// followed) or, if it could not tell, the id as named. A reach of an id that
// no listing has (a merge source its owner had not deleted yet, a container
// that could not be read) might resolve to any copy: it keeps every copy of
// that fingerprint. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/types.h"

namespace dedupv1 {
namespace tools {

class OrphanCopies {
 public:
  struct Chunk {
    Fingerprint fp;
    uint64_t bytes = 0;  // what the chunk takes in its container
  };
  struct Orphan {
    uint16_t slot = 0;
    ContainerId container = kNoContainer;
    Fingerprint fp;
    uint64_t bytes = 0;
  };

  // The live (not dead-marked) chunks of slot |slot|'s committed container
  // |id|. A container added twice keeps the first listing.
  void AddContainer(uint16_t slot, ContainerId id, std::vector<Chunk> chunks);
  // Something names the copy of |fp| in container |at|.
  void Reach(ContainerId at, const Fingerprint& fp);

  // Whether container |id| was listed, and if so whether it holds a live
  // copy of |fp|.
  bool Listed(ContainerId id) const { return listed_.count(id) != 0; }
  bool Holds(ContainerId id, const Fingerprint& fp) const;

  // The listed copies nothing reaches, by container, then fingerprint.
  std::vector<Orphan> Find() const;

  size_t containers() const { return listed_.size(); }

 private:
  struct Listing {
    uint16_t slot = 0;
    std::vector<Chunk> chunks;
  };
  std::map<ContainerId, Listing> listed_;
  // Per fingerprint the containers named; nearly always one.
  std::unordered_map<Fingerprint, std::vector<ContainerId>, FingerprintHasher> reached_;
};

}  // namespace tools
}  // namespace dedupv1
