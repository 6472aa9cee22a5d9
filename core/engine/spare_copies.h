// SpareCopies are the chunk copies a garbage collection round found that the
// chunk index does not name (it names another copy of the same chunk: one
// stored again by container rewriting, or by two writers at once), and
// whether any block mapping still names them. Such a copy is live only
// while a mapping names it; the usage count of its fingerprint cannot tell
// (it counts the mappings of every copy).
//
// The round registers the set with the usage counter before it walks the
// block index, so every mapping is seen: those installed before the walk
// began by the walk, those logged later when their events are counted (the
// round counts every logged event under the GC barrier before it judges).
// A copy no mapping named is garbage once its entry still names another
// committed copy under the barrier (GarbageCollector step 3).
//
// Thread-safe: the usage counter and the round's walk note mappings
// concurrently.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/types.h"
#include "index/block_mapping.h"

namespace dedupv1 {

class ChunkStore;

class SpareCopies {
 public:
  // |store| resolves the containers mappings name (a merge folds ids).
  explicit SpareCopies(const ChunkStore* store) : store_(store) {}

  // A copy of |fp| in container |container| (resolved) of |bytes| footprint.
  void Add(ContainerId container, const Fingerprint& fp, size_t bytes);
  bool empty() const;
  size_t size() const;

  // Every copy an item of |mapping| names is referenced.
  void NoteMapping(const BlockMapping& mapping);

  struct Copy {
    ContainerId container = kNoContainer;
    Fingerprint fp;
    size_t bytes = 0;
  };
  // The copies no noted mapping named, by container.
  std::vector<Copy> Unreferenced() const;

 private:
  struct State {
    size_t bytes = 0;
    bool referenced = false;
  };

  const ChunkStore* const store_;
  mutable std::mutex mu_;
  std::map<ContainerId, std::map<Fingerprint, State>> copies_;
  size_t count_ = 0;
};

}  // namespace dedupv1
