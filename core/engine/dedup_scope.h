// CheckDedupScope: a store's storage.rados.dedup-scope is fixed when it is
// created (docs/design-15.md 2.1). The scope is recorded by what the store's
// chunk index is: in cluster scope the shared table's header "ci.header" at
// the store level (index/rados_shared_chunk_table.h), in gateway scope one
// table per slot ("gw.NAME/ci.header"). A gateway slot opened with the other
// scope than its store's is refused (InvalidArgument naming the key) before
// any chunk index is created, so a store never holds both.
//
// Not atomic against two slots of different scopes created at the same
// moment (each sees no table of the other yet); an operator error that the
// next open of either reports.
#pragma once

#include <memory>

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

// For a gateway slot (|cluster| has a gateway name) about to open its chunk
// index with |cluster_scope|.
Status CheckDedupScope(const std::shared_ptr<RadosCluster>& cluster, const RadosOptions& options, bool cluster_scope);

}  // namespace dedupv1
