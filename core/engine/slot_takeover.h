// Takeover of a gateway slot (design-15 2.2): another gateway serves the slot
// of one that died or hangs, so that every write the old holder acknowledged
// as synced reads back through the taker and the old holder can never write
// again.
//
// TakeOverSlot runs before the slot is opened:
//  1. reads the slot's registry record (core/rados/gateway_registry.h): who
//     served it last (client address, host, pid, incarnation);
//  2. if the slot's lock ("gw.NAME/LOCK", RadosLock::kLockName) is held:
//     without |force| it waits for the lease to end (a dead holder stops
//     renewing), at most two leases, then fails Busy naming the holder; with
//     |force| it fences the holder (blocklist + touch of the slot's objects)
//     and breaks its lock (FenceLockHolder, core/rados/rados_fence.h);
//  3. once the lock is free it fences the address the last incarnation
//     recorded, unless empty, our own, or fenced already: a holder paused past
//     its lease no longer shows in list_lockers, but would write when it
//     resumes.
// The caller then opens the slot as usual with Options::gateway_takeover set
// (OpenTakenOverSlot does both): the open takes the lock, counts a takeover in
// the registry and runs dirty-start recovery from the slot's log, which holds
// every write the old holder acknowledged.
//
// Why fencing is safe: blocklist entries name one client instance (address
// with nonce); a restarted process has a new one and is not hit. Entries
// expire after kTakeoverFenceExpireS; by then the victim's lease check has
// fenced it for good (RadosOptions::fence_on_lease_loss, set in gateway mode).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/env.h"
#include "core/base/status.h"
#include "core/engine/dedup_system.h"
#include "core/engine/options.h"
#include "core/rados/gateway_registry.h"
#include "core/rados/rados_fence.h"

namespace dedupv1 {

// How long a takeover's blocklist entries last (a day).
constexpr uint32_t kTakeoverFenceExpireS = 24 * 3600;

// What a takeover did, and how long each step took.
struct TakeoverReport {
  std::string gateway;
  GatewayRecord previous;               // the slot's record before the takeover
  std::vector<RadosLockHolder> holders;  // who held the slot's lock when we looked
  std::vector<std::string> fenced;       // addresses blocklisted
  std::string not_fenced;               // why the recorded address was not fenced ("" = it was, or a holder was)
  size_t touched_objects = 0;           // objects each fence touched
  GatewayRecord taken;                  // the record the taker's open wrote (OpenTakenOverSlot)
  double read_ms = 0;                   // registry record and lock holders
  double wait_ms = 0;                   // waiting for the holder's lease to end
  double fence_ms = 0;                  // listing the slot's objects, fencing, breaking the lock
  double open_ms = 0;                   // the open with recovery (OpenTakenOverSlot)

  // One line per step, for logs and dedupv1d.
  std::string ToString() const;
};

// Steps 1-3 above for the slot |options.rados.gateway| (storage.backend =
// rados). NotFound if the slot is not registered; Busy naming the holder's
// address, host and pid if it kept the lock for two leases (without
// |force|); every RADOS error as a Status naming pool and object.
Status TakeOverSlot(const Options& options, bool force, TakeoverReport* report);

// TakeOverSlot, then DedupSystem::OpenStore of the slot with
// Options::gateway_takeover set (|local|: the gateway's local Env).
Status OpenTakenOverSlot(const Options& options, bool force, Env* local, std::unique_ptr<DedupSystem>* out,
                         TakeoverReport* report);

// Counts one takeover in the slot's registry record (takeovers + 1,
// compare-and-set, retried on a lost race) for a slot opened elsewhere
// without Options::gateway_takeover: dedupv1d takes over, the engine opens
// inside tgtd. |record| gets what was stored.
Status CountTakeover(const Options& options, GatewayRecord* record);

}  // namespace dedupv1
