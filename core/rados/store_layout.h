// One RADOS namespace (RadosOptions::store) holds either one store without
// gateway slots or the gateway slots of one store, never both:
//  - a store without slots names its files from the namespace's root ("/",
//    "LOCK", "log", ...), lists every container id below 1 << 48 and would,
//    opened beside slots, never see their files but share their pools;
//  - slots (storage.rados.gateway) are registered in the object "gateways"
//    (core/rados/gateway_registry.h); beside a store without slots, that
//    store's recovery, GC and checker would see containers and objects that
//    are not its own, and its writers could meet theirs.
// Each layout has a marker object, the other layout's opener refuses it:
// the root directory object "/" of a store without slots (created by its
// first open, before anything else), the registry "gateways" of slots.
// Two first opens of different layouts at the same moment on an empty
// namespace are not caught (an administrator's error, not a crash's).
#pragma once

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

// OK if a store of |rados|'s layout (gateway slot or not) may be opened in
// its namespace: InvalidArgument naming the namespace, the marker object and
// the key storage.rados.gateway otherwise; a RADOS error as a Status naming
// pool and object. One stat of the other layout's marker.
Status CheckStoreLayout(RadosCluster* cluster, const RadosOptions& rados);

}  // namespace dedupv1
