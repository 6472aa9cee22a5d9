#include "core/engine/data_dir.h"

#include <memory>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "chunkstore/container_summary_file.h"
#include "chunkstore/dead_chunk_file.h"
#include "chunkstore/local_container_catalog.h"
#include "chunkstore/local_container_store.h"
#include "chunkstore/storage_backend_registry.h"
#include "core/base/config.h"
#include "core/rados/gateway_registry.h"
#include "index/chunk_index.h"
#include "index/disk_hash_table.h"

namespace dedupv1 {
namespace {

constexpr char kWatermarkKey[] = "container-watermark";
constexpr char kRestore[] = "restore it from a backup of the data directory";

// A file the stored data depends on, and why, for the refusal.
struct Required {
  std::string path;
  std::string why_and_what;  // why it cannot be recreated; what to do instead
  int exists = -1;           // known presence (0/1) of what is not a file; -1: ask the Env
};

}  // namespace

Status ReadCheckpointWatermark(Env* env, const std::string& data_dir, ContainerId* watermark) {
  *watermark = 0;
  const std::string path = JoinPath(data_dir, kCheckpointFileName);
  if (!env->FileExists(path)) return Status::OK();
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env, path, &text));
  Config cp;
  Status s = Config::Parse(text, path, &cp);
  if (!s.ok()) return Status::Corruption(s.message());
  for (const auto& e : cp.entries()) {
    if (e.key != kWatermarkKey) continue;
    if (!ParseUint(e.value, watermark).ok()) {
      return Status::Corruption(path + ":" + std::to_string(e.line) + ": " + kWatermarkKey + " '" + e.value +
                                "' is not a number");
    }
  }
  return Status::OK();
}

Status WriteCheckpointWatermark(Env* env, const std::string& data_dir, ContainerId watermark) {
  return WriteFileAtomically(env, JoinPath(data_dir, kCheckpointFileName),
                             std::string(kWatermarkKey) + " = " + std::to_string(watermark) + "\n");
}

// The files a store cannot do without, each with why and what to do when it
// is missing (|table_exists|: the chunk index table was found; |clean|: the
// last stop was clean).
static std::vector<Required> RequiredFiles(const Options& options, bool table_exists, bool clean) {
  const std::string& dir = options.data_dir;
  auto in_dir = [&dir](const char* name) { return JoinPath(dir, name); };
  const bool table_in_rados = options.chunk_index.table_backend == "rados";
  const std::string journal = DiskHashTable::JournalPath(options.chunk_index.table.path);
  std::vector<Required> required = {
      {in_dir(kSystemFileName),
       "it records the format, block size and fingerprint the data was written with, and one taken from "
       "the config would misread the data if they differ; " + std::string(kRestore) +
           ", or write it by hand with the values the store was created with: lines 'format = 2', "
           "'block-size = BYTES' and 'fingerprint = sha1' or 'sha256' (docs/architecture.md 3.6)"},
      {in_dir(kVolumesFileName),
       "it gives each volume the id its block mappings are stored under, and ids taken from the config "
       "would give volumes listed in another order each other's data; " + std::string(kRestore) +
           ", or write it by hand: one line 'ID NAME SIZE' per volume, with the id the volume was created "
           "with (ids were given 1, 2, ... in the order the volumes first appeared in the config)"},
      {options.log.path,
       "a new, empty log would restart the event ids the chunk index's usage counts are tagged with (garbage "
       "collection could then free live chunks) and, after an unclean stop, lose synced writes; " +
           std::string(kRestore) + " (taken together with the other files)"},
      {ChunkIndex::TableWhere(options.chunk_index),
       "it lists every stored chunk and its usage count, and an empty one would make garbage collection "
       "take every stored chunk for garbage; " + std::string(kRestore) +
           (options.chunk_index.table_backend == "disk" && !options.chunk_index.cluster_scope
                ? ", or rebuild it from the containers and block mappings: dedupv1_check --rebuild-index"
                : ""),
       // The rebuild (Options::index_rebuild) makes a table of its own.
       table_exists || options.index_rebuild ? 1 : 0},
      {options.block_index.path,
       "it holds the block mappings of every volume, without which every volume would read zeros; " +
           std::string(kRestore)},
      {options.chunk_store.dir, "it holds the stored chunks; " + std::string(kRestore)},
  };
  if (!clean && !table_in_rados && !options.index_rebuild) {
    // After a clean stop the journal is empty; after any other it may hold
    // the page images of a write-back a crash interrupted.
    required.push_back(
        {journal,
         "the last stop was not clean (there is no " + in_dir(kCleanFileName) +
             "), so it may hold chunk-index pages an interrupted write-back must redo; restore it, or if it is "
             "lost create it empty and run dedupv1_check, which verifies every chunk-index page"});
  }
  return required;
}

Status InspectDataDir(Env* env, const Options& options, DataDirState* state) {
  const std::string& dir = options.data_dir;
  auto in_dir = [&dir](const char* name) { return JoinPath(dir, name); };
  auto in_containers = [&options](const char* name) { return JoinPath(options.chunk_store.dir, name); };
  if (env->FileExists(in_dir(kCreatingFileName))) {
    *state = DataDirState::kCreating;
    return Status::OK();
  }
  // The chunk index table: a file with its journal, or shards in RADOS (no
  // journal: each shard's batch is atomic).
  const bool table_in_rados = options.chunk_index.table_backend == "rados";
  const std::string journal = DiskHashTable::JournalPath(options.chunk_index.table.path);
  bool table_exists = false;
  DEDUPV1_RETURN_IF_ERROR(ChunkIndex::TableExists(options.chunk_index, env, &table_exists));

  // Containers are listed only when it matters (nothing else was found, or a
  // catalog file is missing): a listing reads every subdirectory.
  std::unique_ptr<ContainerStore> containers;
  std::vector<ContainerId> ids;
  auto list_containers = [&]() -> Status {
    if (containers) return Status::OK();
    if (options.chunk_store.backend == "local") {
      // Read only: another process may have the store open.
      if (!env->FileExists(options.chunk_store.dir)) return Status::OK();
      std::unique_ptr<LocalContainerStore> local;
      DEDUPV1_RETURN_IF_ERROR(LocalContainerStore::OpenExisting(env, options.chunk_store.dir, &local));
      containers = std::move(local);
      return containers->List(&ids);
    }
    // Through the store's backend (the data pool); a backend that holds no
    // store yet is NotFound here: no containers.
    StorageBackend backend;
    Status s = OpenStorageBackend(options.chunk_store, env, StorageOpenMode::kExisting, &backend);
    if (s.IsNotFound()) return Status::OK();
    DEDUPV1_RETURN_IF_ERROR(s);
    containers = std::move(backend.containers);
    return containers->List(&ids);
  };

  // Any file of a store (but LOCK: any open takes it; dedupv1d's files; a shared table: any slot's) means one.
  std::string evidence =
      table_exists && !options.chunk_index.cluster_scope ? ChunkIndex::TableWhere(options.chunk_index) : "";
  for (const std::string& f :
       {in_dir(kSystemFileName), in_dir(kVolumesFileName), options.log.path,
        table_in_rados ? options.log.path : journal, options.block_index.path, in_dir(kCheckpointFileName),
        in_dir(kCleanFileName), in_dir(kIndexRebuildFileName),
        in_dir(kBloomFileName), in_containers(kContainerIdFileName), in_containers(kContainerAliasFileName),
        in_containers(kDeadChunkFileName), in_containers(kContainerSummaryFileName)}) {
    if (evidence.empty() && env->FileExists(f)) {
      evidence = f;
      break;
    }
  }
  if (evidence.empty()) {
    DEDUPV1_RETURN_IF_ERROR(list_containers());
    if (ids.empty()) {
      *state = DataDirState::kFresh;
      return Status::OK();
    }
    evidence = containers->Where(ids.front());
  }
  *state = DataDirState::kStore;

  const bool clean = env->FileExists(in_dir(kCleanFileName));
  const std::vector<Required> required = RequiredFiles(options, table_exists, clean);
  std::string missing;
  for (const Required& r : required) {
    if (r.exists == 1 || (r.exists == -1 && env->FileExists(r.path))) continue;
    missing += (missing.empty() ? "" : "; and ") + r.path + " is missing: " + r.why_and_what;
  }
  if (env->FileExists(options.chunk_store.dir) &&
      (!env->FileExists(in_containers(kContainerIdFileName)) ||
       !env->FileExists(in_containers(kContainerAliasFileName)))) {
    ContainerId watermark = 0;
    DEDUPV1_RETURN_IF_ERROR(ReadCheckpointWatermark(env, dir, &watermark));
    DEDUPV1_RETURN_IF_ERROR(list_containers());
    LocalContainerCatalog catalog(env, options.chunk_store.dir, FingerprintSize(options.fingerprint));
    // A gateway slot's ids start above its base (slot << 48): a watermark at
    // the base means none was handed out (a cluster-scope slot that found
    // every chunk in other slots' containers never allocates one).
    const bool handed_out = watermark > GatewaySlotIdBase(static_cast<uint16_t>(watermark >> 48));
    Status s = catalog.CheckComplete(containers.get(), ids, handed_out);
    if (s.IsCorruption()) {
      missing += (missing.empty() ? "" : "; and ") + s.message();
    } else if (!s.ok()) {
      return s;
    }
  }
  if (!options.index_rebuild && env->FileExists(in_dir(kIndexRebuildFileName))) {
    missing += std::string(missing.empty() ? "" : "; and ") + "a rebuild of the chunk index did not finish (" +
               in_dir(kIndexRebuildFileName) +
               " exists): the table lacks entries, and garbage collection would free the chunks they name; run "
               "dedupv1_check --rebuild-index again";
  }
  if (missing.empty()) return Status::OK();
  return Status::Corruption("data directory " + dir + " holds a store (" + evidence + " exists) but " + missing +
                            ". dedupv1 never recreates such a file over stored data");
}

}  // namespace dedupv1
