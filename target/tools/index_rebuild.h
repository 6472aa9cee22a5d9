// Rebuilding a local store's chunk index (dedupv1_check --rebuild-index):
// for a table lost with its disk, or damaged beyond what --repair mends.
// The new table holds an entry for every chunk a block mapping references,
// naming a container a mapping names and with the recounted usage
// (StoreChecker's repair of missing entries, for every chunk); chunks no
// mapping references get none and are garbage for GC, as after a repair.
//
// The new table is built under its own name, WORK = chunk-index.path +
// ".new", and takes the table's name only once it is complete, so
// nothing at chunk-index.path is ever deleted. Steps, with the data
// directory locked throughout, and what a crash at each leaves:
//  1. StartIndexRebuild writes the marker DATA-DIR/rebuilding-chunk-index
//     (core/engine/data_dir.h) unless it is there: from now on every open
//     but the rebuild's is refused, since a GC round would free the chunks
//     whose entries are not back yet. The marker records the new table's
//     size and where the old table went.
//  2. Whatever sits at chunk-index.path (the old table, its journal, a
//     growth's files; or a table an admin put back) is renamed aside with
//     one suffix ".replaced-TIME", recorded in the marker first, so a move
//     cut short is finished under the same suffix.
//  3. WORK's files, which only a rebuild makes, are deleted, and WORK is
//     created empty, as large as the old table (at least chunk-index.size),
//     if the disk has room for it.
//  4. The caller opens the store with RebuildOptions (the table at WORK),
//     checks it, repairs, closes, and applies the index repairs.
//  5. FinishIndexRebuild renames WORK's files to the table's names (the
//     table first), then removes the marker. A crash in between: step 2 of
//     the next run moves the renamed files aside, step 3 deletes the rest,
//     and the rebuild runs again.
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
  bool resumed = false;      // a rebuild's marker was found
  std::string replaced;      // where the old table went ("" if there was none)
  uint64_t table_bytes = 0;  // size of the new table
};

// The table being built, for |table| (chunk-index.path).
std::string IndexRebuildWorkPath(const std::string& table);
// |options| with the table at the work path and Options::index_rebuild set:
// what the rebuild opens the store and applies its repairs with.
Options RebuildOptions(const Options& options);

// NotSupported unless |options| name a table on local disk.
Status CheckRebuildable(const Options& options);

// Steps 1-3 above. Call with the data directory locked and after
// CheckToolDataDir(RebuildOptions(options)) said the rest of the store is
// there.
Status StartIndexRebuild(Env* env, const Options& options, IndexRebuildStart* start);
// Step 5: the work table is complete.
Status FinishIndexRebuild(Env* env, const Options& options);

}  // namespace tools
}  // namespace dedupv1
