// Fencing: making sure another client of the cluster (a gateway that was
// paused, cut off or presumed dead) can never write again, before this one
// takes over what it served (design-15 2.2).
//
// A lease alone does not do it: a process paused between its lease check and
// the send of a write would write after its lease ran out. So the taker puts
// the victim's client address on the OSD map's blocklist; every OSD refuses
// ops of a blocklisted client (ESHUTDOWN, "EBLOCKLISTED") once it has the map
// epoch that says so. Fence waits for that epoch here and then touches (one
// stat each) every object whose later writes must be refused: an op from a
// client with a newer epoch makes the OSD serving it catch up first, so when
// Fence returns, those objects' OSDs refuse the victim. Without the touch a
// write of the victim right after the blocklisting still succeeded in a probe.
// Ops the victim had acknowledged before are ordered before the touch, so
// the taker sees them.
//
// Blocklisting needs a mon cap beyond 'allow r': mon 'allow r, allow command
// "osd blocklist"' (or mon 'profile rbd'); EACCES becomes a Status saying so
// (docs/ceph.md). Entries expire after |expire_s| (a restarted process has a
// new address nonce and is not hit meanwhile).
//
// Every librados call goes through the RadosCluster (counted as kLock for the
// mon command, the map wait and break_lock; kStat for the touches).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

// "127.0.0.1:0/123" for "v1:127.0.0.1:0/123", "v2:...", "any:...": one
// client however list_lockers or get_addrs spell it, so two addresses name
// the same client exactly when their bare forms are equal.
std::string BareAddress(const std::string& addr);

// Blocklists |client_addr| (as RadosCluster::client_address or list_lockers
// give it, "127.0.0.1:0/123" or "v1:127.0.0.1:0/123") for |expire_s|
// seconds, waits for the newest OSD map, then stats every object of
// |touch_index_objects| (index pool, the cluster's namespace; all in flight;
// a missing one is fine). Fencing the cluster's own address is
// InvalidArgument.
Status Fence(RadosCluster* cluster, const std::string& client_addr, uint32_t expire_s,
             const std::vector<std::string>& touch_index_objects);

// One holder of a cls lock (librados locker_t).
struct RadosLockHolder {
  std::string client;   // "client.4123"
  std::string cookie;
  std::string address;  // "v1:127.0.0.1:0/2546039316"
};

// The holders of lock |lock_name| on index object |object| (empty: nobody
// holds it, also when the object does not exist). The address is known only
// while the holder's lease runs.
Status ListLockHolders(RadosCluster* cluster, const std::string& object, const std::string& lock_name,
                       std::vector<RadosLockHolder>* holders);

// Removes |holder|'s lock |lock_name| on |object| (ENOENT: it was gone
// already, OK).
Status BreakLock(RadosCluster* cluster, const std::string& object, const std::string& lock_name,
                 const RadosLockHolder& holder);

// Forced takeover: lists the holders of |lock_name| on |object|, fences each
// one's address (Fence, with |touch_index_objects| plus |object|), then breaks
// its lock, so the caller's lock_exclusive can succeed at once although the
// holder's lease still runs. |fenced| (may be null) gets the holders fenced.
Status FenceLockHolder(RadosCluster* cluster, const std::string& object, const std::string& lock_name,
                       uint32_t expire_s, const std::vector<std::string>& touch_index_objects,
                       std::vector<RadosLockHolder>* fenced = nullptr);

}  // namespace dedupv1
