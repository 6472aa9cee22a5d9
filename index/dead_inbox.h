// RadosDeadInbox: the chunks index GC found dead, waiting for the slot that
// owns their containers (design-15 2.6). Index GC (the leader,
// core/engine/cluster_gc.h) erases a fingerprint's shared entry only after
// proving that no slot references it, then appends (container, fingerprint)
// to the inbox of the slot whose container holds that copy; the owner's
// container GC moves the inbox into its dead marks (ChunkStore::MarkDead,
// persisted) at the start of a round and only then removes the keys, so a
// crash in between marks a chunk twice (harmless), never loses one.
//
// One omap object per slot, "gw.<slot name>.dead", in the index pool and the
// store's namespace (the RadosCluster's index context). Key = container id
// (8 bytes, big-endian, so keys page in container order) + fingerprint
// bytes (20 or 32); value = CRC32C of the key, 4 bytes little-endian. A
// value that does not match its key is Corruption naming the object.
//
// Every call goes through the RadosCluster (counted; errors name pool and
// object; bounded by its op timeout); writes check the lease first. An
// absent object is an empty inbox. Thread-safe.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/base/fingerprint.h"
#include "core/base/status.h"
#include "core/base/types.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

struct DeadChunk {
  ContainerId container = 0;
  Fingerprint fp;

  bool operator==(const DeadChunk& o) const { return container == o.container && fp == o.fp; }
};

class RadosDeadInbox {
 public:
  explicit RadosDeadInbox(std::shared_ptr<RadosCluster> cluster) : cluster_(std::move(cluster)) {}

  // "gw.<slot_name>.dead".
  static std::string ObjectName(const std::string& slot_name);
  // The omap key of |chunk| and the value stored under it; the inverse:
  // false for a key that is too short or long or whose value does not check
  // out (index/dead_inbox_fuzz.cc feeds it damaged ones).
  static std::string KeyOf(const DeadChunk& chunk);
  static std::string ValueOf(const std::string& key);
  static bool Decode(const std::string& key, const std::string& value, DeadChunk* chunk);

  // Adds |chunks| to |slot_name|'s inbox in one write (the object is created
  // if needed). Appending a chunk that is already there is harmless.
  Status Append(const std::string& slot_name, const std::vector<DeadChunk>& chunks);

  // Up to |max| chunks whose keys follow |after_key| ("" = from the start),
  // in key order, into |chunks|; |last_key| = the key of the last one ("" if
  // none). Fewer than |max| means the inbox ends here.
  Status ReadPage(const std::string& slot_name, const std::string& after_key, size_t max,
                  std::vector<DeadChunk>* chunks, std::string* last_key);
  // As above, but a damaged key (checksum mismatch, or a key too short or
  // long) goes to |damaged| instead of failing the page, so that a reader
  // can remove it and go on; |last_key| covers it too. Up to |max| keys in
  // all.
  Status ReadPage(const std::string& slot_name, const std::string& after_key, size_t max,
                  std::vector<DeadChunk>* chunks, std::string* last_key, std::vector<std::string>* damaged);

  // "pool/namespace/gw.<slot_name>.dead", for messages.
  std::string Where(const std::string& slot_name) const;

  // Removes |keys| (KeyOf) from |slot_name|'s inbox; absent keys and an
  // absent object are fine.
  Status Remove(const std::string& slot_name, const std::vector<std::string>& keys);

 private:
  const std::shared_ptr<RadosCluster> cluster_;
};

}  // namespace dedupv1
