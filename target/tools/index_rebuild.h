// Rebuilding a local store's chunk index (dedupv1_check --rebuild-index):
// for a table lost with its disk, or damaged beyond what --repair mends.
// The new table holds an entry for every chunk a block mapping references,
// naming a container a mapping names and with the recounted usage
// (StoreChecker's repair of missing entries, for every chunk); chunks no
// mapping references get none and are garbage for GC, as after a repair.
//
// Steps, with the data directory locked throughout, and what a crash at
// each leaves:
//  1. StartIndexRebuild, when no rebuild is under way: the old table, its
//     journal and a growth's files are renamed aside with the suffix
//     ".replaced-TIME" (nothing is deleted). A crash here leaves the table
//     missing: every open is refused naming it; a second run starts over.
//  2. The marker DATA-DIR/chunk-index.rebuild (core/engine/data_dir.h) is
//     written: from now on every open but the rebuild's is refused, since a
//     GC round would free the chunks whose entries are not back yet.
//  3. An empty table is created, as large as the old one (at least
//     chunk-index.size). A second run that finds the marker deletes the
//     table files it finds (they are this rebuild's) and creates them anew.
//  4. The caller opens the store (Options::index_rebuild), checks it,
//     repairs, closes, and applies the index repairs (ApplyIndexRepairs).
//  5. FinishIndexRebuild removes the marker.
//
// Only a table on local disk (chunk-index.path): NotSupported for one in
// RADOS and for a cluster-scope slot.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/env.h"
#include "core/base/status.h"
#include "core/engine/options.h"

namespace dedupv1 {
namespace tools {

struct IndexRebuildStart {
  bool resumed = false;      // a rebuild's marker was found: its table was made anew
  std::string replaced;      // where the old table went ("" if there was none)
  uint64_t table_bytes = 0;  // size of the new table
};

// Steps 1-3 above.
Status StartIndexRebuild(Env* env, const Options& options, IndexRebuildStart* start);
// Step 5: the table is complete.
Status FinishIndexRebuild(Env* env, const Options& options);

}  // namespace tools
}  // namespace dedupv1
