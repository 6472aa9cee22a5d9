// Options is the validated form of the engine's part of a dedupv1
// configuration: every engine key of the config file maps to one field here,
// most of them inside the options struct of the module that uses them
// (FilterOptions, ChunkStoreOptions, ChunkIndexOptions, BlockIndexOptions,
// OperationsLogOptions, IdleOptions). FromConfig refuses unknown keys, bad
// values and impossible combinations, naming the key and the line.
//
// The same file also holds the keys of the layers above the engine: target.*
// (the iSCSI target dedupv1d sets up) and monitor.* (the status server).
// Those belong to target/service_options.h, which validates the whole file
// for dedupv1d, tgtd's module and the tools; the engine passes over them.
//
// docs/configuration.md lists every key with its default; keep them in sync
// (target_options_test checks that every key is documented).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "core/base/chunker.h"
#include "core/base/config.h"
#include "core/base/config_keys.h"
#include "core/base/fingerprint.h"
#include "core/engine/background_dedup_options.h"
#include "core/engine/dedup_policy.h"
#include "core/engine/idle_detector.h"
#include "core/engine/rewrite_policy.h"
#include "core/engine/select_dedupe.h"
#include "core/rados/rados_options.h"
#include "filters/filter_options.h"
#include "index/block_index.h"
#include "index/chunk_index.h"
#include "filters/filter_registry.h"
#include "log/operations_log.h"

namespace dedupv1 {

struct VolumeOptions {
  std::string name;
  uint64_t size = 0;  // bytes, a multiple of 512
  DedupPolicy policy = DedupPolicy::kInline;  // core/engine/dedup_policy.h
};

struct Options {
  std::string data_dir = "/var/lib/dedupv1";
  // Where the store's durable state lives (storage.backend): "local" (files
  // under data_dir, the default) or "rados" (every durable byte in a Ceph
  // cluster, docs/ceph.md: containers in rados.data_pool, everything else in
  // rados.index_pool; data_dir names the store's root there and holds only
  // the gateway's runtime files locally).
  std::string storage_backend = "local";
  RadosOptions rados;  // storage.rados.*; used when storage_backend is "rados"
  // Not a config key: this open takes a gateway slot over from another holder
  // (core/engine/slot_takeover.h), so the registry counts it as a takeover.
  bool gateway_takeover = false;
  uint32_t block_size = 128 << 10;
  FingerprintType fingerprint = FingerprintType::kSha1;
  ChunkerOptions chunking;
  std::vector<std::string> filter_chain = DefaultFilterChain();  // names: filters/filter_registry.cc
  FilterOptions filters;            // bloom.*, container-cache.*
  ChunkStoreOptions chunk_store;    // dir filled from data_dir unless set
  ChunkIndexOptions chunk_index;    // path filled from data_dir unless set
  BlockIndexOptions block_index;    // path filled from data_dir unless set
  OperationsLogOptions log;         // path filled from data_dir unless set
  uint64_t write_buffer_size = 64 << 20;
  uint64_t write_buffer_flush_delay_ms = 500;
  int dedup_threads = 2;
  RewriteOptions rewrite;  // dedup.rewrite*: container rewriting (core/engine/rewrite_policy.h)
  // dedup.selective.threshold: Select-Dedupe's threshold for volumes of
  // policy selective (core/engine/select_dedupe.h).
  uint32_t selective_threshold = kDefaultSelectiveThreshold;
  // cache.budget: one memory budget for the chunk index's table page cache
  // and the container read cache, split by their ghost hits
  // (core/engine/cache_budget.h); 0 keeps container.read-cache and no page
  // cache.
  uint64_t cache_budget = 0;
  // dedup.background.*: the out-of-band volumes' pass (core/engine/background_dedup.h).
  BackgroundDedupOptions background;
  IdleOptions idle;  // when background work (replay, write-back, GC) runs
  // Not a config key: false for an offline tool's open (dedupv1_check,
  // _replay, _debug). Then the system never turns idle by itself, so it runs
  // no idle checkpoint or GC round, and the out-of-band pass does not run:
  // the tool changes only what it came to change. (A GC round trusts the
  // chunk index, so one running while the check finds entries missing would
  // free the very chunks the repair is to re-add.)
  bool background_work = true;
  // Not a config key: the open of dedupv1_check --rebuild-index
  // (target/tools/index_rebuild.h), which a rebuild's marker
  // (core/engine/data_dir.h) does not refuse and which needs no table yet.
  bool index_rebuild = false;
  std::vector<VolumeOptions> volumes;

  // Defaults for everything; paths derived from data_dir by Finish().
  Options();
  // Parses and validates the engine keys of |config|. Later entries override
  // earlier ones (so a command-line override appended with Config::Set wins),
  // except "volume", which accumulates. Keys of the layers above
  // (IsKeyOfLayerAbove) are passed over unread; any other key the engine
  // does not know is refused.
  static Status FromConfig(const Config& config, Options* options);
  // Resolves relative and default paths against data_dir and checks
  // cross-key constraints. FromConfig calls it; call it after changing fields
  // by hand.
  Status Finish();
  // Moves the options to |data_dir| with every module path derived from it
  // again (explicitly configured paths too) and Finish()es: a rados store
  // opened by a gateway on a new local directory, or options whose storage
  // backend changed the default paths (a rados block index is LevelDB).
  Status DerivePathsFrom(const std::string& data_dir);
  // The engine's keys and their parsers (for loaders of the whole file).
  static const ConfigKeyTable<Options>& KeyTable();
  // Every key FromConfig understands.
  static std::vector<std::string> Keys();
  // Whether |key| belongs to a layer above the engine (target.*, monitor.*;
  // see target/service_options.h).
  static bool IsKeyOfLayerAbove(const std::string& key);
  // The effective configuration as "key = value" lines: SettingsToString()
  // (every key but volume) followed by VolumesToString() (one line each).
  std::string ToString() const;
  std::string SettingsToString() const;
  std::string VolumesToString() const;

  // Checks storage.backend against the module backends and points them at
  // RADOS when it is "rados". Called by Finish().
  Status FinishStorageBackend();
  // |path| as ToString names it: relative to a relative data_dir.
  std::string DumpPath(const std::string& path) const;

  // Whether a path was given explicitly (else it is derived from data_dir).
  bool chunk_store_dir_set_ = false, chunk_index_path_set_ = false, block_index_path_set_ = false,
       log_path_set_ = false;
  bool block_index_backend_set_ = false, container_backend_set_ = false;
  bool chunking_min_size_set_ = false;  // else fastcdc takes its own default (Finish)
};

// Whether |options| keep their durable state in a Ceph cluster.
inline bool UsesRados(const Options& options) { return options.storage_backend == "rados"; }

}  // namespace dedupv1
