// The files of a data directory and the rule that decides whether a directory
// may be opened (docs/durability.md, "Missing files"). DedupSystem::Open and
// the offline tools (target/tools/tool_util.h) apply the same rule, so tgtd,
// dedupv1d and dedupv1_check/_replay/_debug never disagree about a directory.
//
// A directory is *fresh* when it holds none of a store's files; opening it
// creates a store. Creation writes the `creating` marker before any other
// file and deletes it once the store is complete (at the end of the first
// open, before any data can be written), so a creation that failed half way
// (say, a full disk while the log or the chunk index is preallocated) or
// crashed is resumed by the next open instead of being taken for a damaged
// store.
//
// Any other directory holds a store, and every file its data depends on must
// be there. A missing one is refused (Corruption) naming it and what to do;
// it is never recreated empty over stored data (issue 19: a recreated
// `volumes` gave the volumes each other's data, a recreated `system`
// misread it). Files that are safe to lose (bloom, clean, checkpoint,
// containers/dead-chunks, containers/container-summaries) are never required.
#pragma once

#include <string>

#include "core/base/env.h"
#include "core/engine/options.h"
#include "core/base/status.h"
#include "core/base/types.h"

namespace dedupv1 {

// Files of DATA-DIR itself (docs/architecture.md 3).
constexpr char kSystemFileName[] = "system";          // format, block size, fingerprint
constexpr char kVolumesFileName[] = "volumes";        // volume ids (core/engine/volume_table.h)
constexpr char kCreatingFileName[] = "creating";      // present only while a store is created
constexpr char kCleanFileName[] = "clean";            // present only after a clean stop
constexpr char kCheckpointFileName[] = "checkpoint";  // what the last checkpoint made persistent
constexpr char kBloomFileName[] = "bloom";            // saved bloom filter (clean stop to open)
// Present while dedupv1_check --rebuild-index (target/tools/index_rebuild.h)
// fills a new chunk index: until it is gone the table lacks entries, and a
// GC round would free the chunks they name, so only the rebuild opens the
// store (Options::index_rebuild).
constexpr char kIndexRebuildFileName[] = "rebuilding-chunk-index";

enum class DataDirState {
  kFresh,     // holds no store file: opening creates a store
  kCreating,  // a creation did not finish (the marker is there): opening resumes it
  kStore,     // holds a store, with every file its data depends on
};

// Tells what |options.data_dir| holds. Reads only: safe while another
// process has the store open. Corruption naming every missing file (and what
// to do about it) if the directory holds a store that lacks one.
Status InspectDataDir(Env* env, const Options& options, DataDirState* state);

// The container watermark the last checkpoint recorded in DATA-DIR/checkpoint:
// every container up to it has its chunks in the chunk-index table. 0 if
// there is no checkpoint file.
Status ReadCheckpointWatermark(Env* env, const std::string& data_dir, ContainerId* watermark);
// Replaces DATA-DIR/checkpoint atomically ("container-watermark = N").
Status WriteCheckpointWatermark(Env* env, const std::string& data_dir, ContainerId watermark);

}  // namespace dedupv1
