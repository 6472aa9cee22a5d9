// ClusterView: the gateways of one store as RADOS knows them, read without
// opening any engine (design-15 2.7): for every registered slot its registry
// record (number, incarnation, last holder's host, address and pid,
// takeovers), whether its lock ("gw.NAME/LOCK") is held and by whom, its
// heartbeat (core/rados/gateway_heartbeat.h) and the volumes of its volume
// table (volumes belong to slots: each slot has its own "gw.NAME/volumes").
// `dedupv1d cluster`, the monitor's /cluster and `dedupv1d watch` read it.
//
// A snapshot, not a judgement of liveness across time: the lock's holders
// are what list_lockers says now (empty once a lease ran out); whether a
// heartbeat still beats needs two reads (GatewayWatch in target/ keeps the
// previous one). A slot whose heartbeat or volume table cannot be read keeps
// its row with the error said in |problem|: one damaged slot never hides the
// others. Only the registry itself failing fails the read.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/engine/volume_table.h"
#include "core/rados/gateway_heartbeat.h"
#include "core/rados/gateway_registry.h"
#include "core/rados/gc_epochs.h"
#include "core/rados/rados_cluster.h"
#include "core/rados/rados_fence.h"

namespace dedupv1 {

struct SlotView {
  std::string name;
  GatewayRecord record;
  std::vector<RadosLockHolder> holders;  // of gw.NAME/LOCK now; empty: not held
  bool has_heartbeat = false;
  GatewayHeartbeat heartbeat;
  std::vector<VolumeRecord> volumes;     // the slot's volume table (empty: none yet)
  std::string problem;                   // what could not be read, "" if all was
  // Cluster scope: the safe GC epoch this slot's current incarnation
  // published (core/rados/gc_epochs.h; kSafeEpochClosed: closed cleanly).
  bool has_safe_epoch = false;
  uint64_t safe_epoch = 0;

  bool lock_held() const { return !holders.empty(); }
  // One word for the table: "serving" (lock held), "fenced" (its heartbeat
  // says so), "stopped" (closed cleanly, lock free), "down" (lock free
  // otherwise: its holder died or hangs; a watcher may take it over),
  // "new" (registered, never opened).
  std::string State() const;
};

struct ClusterView {
  std::string store;  // RADOS namespace (storage.rados.store)
  std::vector<SlotView> slots;  // in name order
  // Cluster scope's GC epochs (core/rados/gc_epochs.h); has_gc false while
  // no epoch was raised and no slot published one (gateway scope).
  bool has_gc = false;
  uint64_t gc_epoch = 0;

  // Slots whose current incarnation has not said it is safe at the current
  // GC epoch: the index GC cannot erase dead entries sighted at it until
  // they do ("GC waits for slot NAME"). A dead, not taken over slot stays
  // here until it is taken over.
  std::vector<std::string> GcBehind() const;

  // From the heartbeats that carry load figures (cluster scope): the sum of
  // the gateways' pending claims, and the highest shard max/mean of any
  // gateway (0 if none says).
  uint64_t ClaimsPending() const;
  double ShardMaxOverMean() const;
};

// Reads the view of |cluster|'s store (every op through |cluster|).
Status ReadClusterView(const std::shared_ptr<RadosCluster>& cluster, ClusterView* view);
// Reads only slot |name| (NotFound if it is not registered).
Status ReadSlotView(const std::shared_ptr<RadosCluster>& cluster, const std::string& name, SlotView* slot);

// The view as a table for a person: one line per slot, then "volume -> slot"
// lines.
std::string FormatClusterView(const ClusterView& view);

}  // namespace dedupv1
