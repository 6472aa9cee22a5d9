#include "core/engine/options.h"

#include "core/engine/cache_budget.h"

#include "core/base/chunker_registry.h"
#include "core/base/fastcdc_chunker.h"
#include "filters/filter_registry.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <sstream>

#include "chunkstore/storage_backend_registry.h"

namespace dedupv1 {
namespace {

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

template <typename T>
Status SizeInto(const std::string& v, T* out) {
  uint64_t x;
  DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &x));
  *out = static_cast<T>(x);
  return Status::OK();
}

}  // namespace

Options::Options() {
  chunk_store.writer_threads = 4;  // a 4 MiB container commit waits ~30 ms for fdatasync
  chunk_index.table.size_bytes = 1ULL << 30;
  chunk_store.fp_type = fingerprint;
  block_index.block_size = block_size;
}

// The table of keys. Each setter parses one value into the options.
// long-function: one table row per config key (data, not logic); splitting it
// would scatter the keys that docs/configuration.md lists in one place.
const ConfigKeyTable<Options>& Options::KeyTable() {
  static const ConfigKeyTable<Options> table = {
      {"data-dir", [](const std::string& v, Options* o) {
         if (v.empty()) return Status::InvalidArgument("data-dir must not be empty");
         o->data_dir = v;
         return Status::OK();
       }},
      {"block-size", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &x));
         if (x < 4096 || x > (16 << 20) || !IsPowerOfTwo(x)) {
           return Status::InvalidArgument("block-size must be a power of two from 4K to 16M, got " + v);
         }
         o->block_size = static_cast<uint32_t>(x);
         return Status::OK();
       }},
      {"fingerprint", [](const std::string& v, Options* o) { return ParseFingerprintType(v, &o->fingerprint); }},
      {"chunking", [](const std::string& v, Options* o) {
         if (FindChunker(v) == nullptr) {
           std::string known;
           for (const auto& n : ChunkerNames()) known += (known.empty() ? "" : " or ") + n;
           return Status::InvalidArgument("chunking must be " + known + ", got '" + v + "'");
         }
         o->chunking.name = v;
         return Status::OK();
       }},
      {"chunking.min-size", [](const std::string& v, Options* o) {
         o->chunking_min_size_set_ = true;
         return SizeInto(v, &o->chunking.min_size);
       }},
      {"chunking.avg-size", [](const std::string& v, Options* o) { return SizeInto(v, &o->chunking.avg_size); }},
      {"chunking.max-size", [](const std::string& v, Options* o) { return SizeInto(v, &o->chunking.max_size); }},
      {"filter-chain", [](const std::string& v, Options* o) {
         auto names = SplitConfigList(v);
         DEDUPV1_RETURN_IF_ERROR(CheckFilterNames(names));
         o->filter_chain = names;
         return Status::OK();
       }},
      {"bloom.expected-chunks", [](const std::string& v, Options* o) {
         return SizeInto(v, &o->filters.bloom_expected_chunks);
       }},
      {"bloom.false-positive-rate", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &o->filters.bloom_false_positive_rate));
         if (o->filters.bloom_false_positive_rate <= 0 || o->filters.bloom_false_positive_rate >= 0.5) {
           return Status::InvalidArgument("bloom.false-positive-rate must be between 0 and 0.5, got " + v);
         }
         return Status::OK();
       }},
      {"container-cache.containers", [](const std::string& v, Options* o) {
         return SizeInto(v, &o->filters.container_cache_containers);
       }},
      {"container.size", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &x));
         if (x < (64 << 10) || x > (256 << 20)) {
           return Status::InvalidArgument("container.size must be from 64K to 256M, got " + v);
         }
         o->chunk_store.container_size = x;
         return Status::OK();
       }},
      {"container.compression", [](const std::string& v, Options* o) {
         return ParseCompression(v, &o->chunk_store.compression);
       }},
      {"container.open-count", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 64) return Status::InvalidArgument("container.open-count must be 1..64, got " + v);
         o->chunk_store.open_containers = static_cast<int>(x);
         return Status::OK();
       }},
      {"container.writer-threads", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 32) return Status::InvalidArgument("container.writer-threads must be 1..32, got " + v);
         o->chunk_store.writer_threads = static_cast<int>(x);
         return Status::OK();
       }},
      {"container.commit-timeout", [](const std::string& v, Options* o) {
         return ParseDurationMs(v, &o->chunk_store.commit_timeout_ms);
       }},
      {"container.read-cache", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         o->chunk_store.read_cache_containers = x;
         return Status::OK();
       }},
      {"container.backend", [](const std::string& v, Options* o) {
         if (!IsStorageBackend(v)) {
           return Status::InvalidArgument("unknown backend '" + v + "' (known: " + StorageBackendNameList() + ")");
         }
         if (!IsDurableStorageBackend(v)) {
           // Tests choose it in code (ChunkStoreOptions::backend).
           return Status::InvalidArgument("backend '" + v + "' is not durable and only for tests (a store needs: " +
                                          DurableStorageBackendNameList() + ")");
         }
         o->chunk_store.backend = v;
         o->container_backend_set_ = true;
         return Status::OK();
       }},
      {"container.dir", [](const std::string& v, Options* o) {
         o->chunk_store.dir = v;
         o->chunk_store_dir_set_ = true;
         return Status::OK();
       }},
      {"chunk-index.path", [](const std::string& v, Options* o) {
         o->chunk_index.table.path = v;
         o->chunk_index_path_set_ = true;
         return Status::OK();
       }},
      {"chunk-index.size", [](const std::string& v, Options* o) { return ParseSize(v, &o->chunk_index.table.size_bytes); }},
      {"chunk-index.page-size", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &x));
         if (x < 512 || x > (64 << 10) || !IsPowerOfTwo(x)) {
           return Status::InvalidArgument("chunk-index.page-size must be a power of two from 512 to 64K, got " + v);
         }
         o->chunk_index.table.page_size = x;
         return Status::OK();
       }},
      {"chunk-index.max-fill", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &o->chunk_index.table.max_fill));
         if (o->chunk_index.table.max_fill <= 0 || o->chunk_index.table.max_fill > 0.95) {
           return Status::InvalidArgument("chunk-index.max-fill must be in (0, 0.95], got " + v);
         }
         return Status::OK();
       }},
      {"chunk-index.grow-at", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &o->chunk_index.grow_at));
         if (o->chunk_index.grow_at < 0 || o->chunk_index.grow_at > 1) {
           return Status::InvalidArgument("chunk-index.grow-at must be in [0, 1] (0: grow only on request), got " + v);
         }
         return Status::OK();
       }},
      {"chunk-index.grow-factor", [](const std::string& v, Options* o) {
         uint64_t x = 0;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 2 || x > 16) return Status::InvalidArgument("chunk-index.grow-factor must be from 2 to 16, got " + v);
         o->chunk_index.grow_factor = static_cast<uint32_t>(x);
         return Status::OK();
       }},
      {"chunk-index.grow-step", [](const std::string& v, Options* o) {
         uint64_t x = 0;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 4096) return Status::InvalidArgument("chunk-index.grow-step must be from 1 to 4096 pages, got " + v);
         o->chunk_index.grow_step_pages = x;
         return Status::OK();
       }},
      {"chunk-index.aux-soft-limit", [](const std::string& v, Options* o) { return ParseSize(v, &o->chunk_index.aux_soft_limit); }},
      {"chunk-index.aux-hard-limit", [](const std::string& v, Options* o) { return ParseSize(v, &o->chunk_index.aux_hard_limit); }},
      {"block-index.backend", [](const std::string& v, Options* o) {
         o->block_index_backend_set_ = true;
         return ParseKvBackend(v, &o->block_index.backend);
       }},
      {"storage.backend", [](const std::string& v, Options* o) {
         if (v != "local" && v != "rados") {
           return Status::InvalidArgument("storage.backend must be local or rados, got '" + v + "'");
         }
         o->storage_backend = v;
         return Status::OK();
       }},
      {"storage.rados.conf", [](const std::string& v, Options* o) { o->rados.conf_file = v; return Status::OK(); }},
      {"storage.rados.client", [](const std::string& v, Options* o) {
         if (v.rfind("client.", 0) != 0 || v.size() == 7) {
           return Status::InvalidArgument("storage.rados.client must be client.<id>, got '" + v + "'");
         }
         o->rados.client_name = v;
         return Status::OK();
       }},
      {"storage.rados.keyring", [](const std::string& v, Options* o) { o->rados.keyring = v; return Status::OK(); }},
      {"storage.rados.data-pool", [](const std::string& v, Options* o) {
         if (v.empty()) return Status::InvalidArgument("storage.rados.data-pool must not be empty");
         o->rados.data_pool = v;
         return Status::OK();
       }},
      {"storage.rados.index-pool", [](const std::string& v, Options* o) {
         if (v.empty()) return Status::InvalidArgument("storage.rados.index-pool must not be empty");
         o->rados.index_pool = v;
         return Status::OK();
       }},
      {"storage.rados.store", [](const std::string& v, Options* o) {
         if (v.empty() || v.find_first_of("/ \t") != std::string::npos) {
           return Status::InvalidArgument("storage.rados.store must be a name without '/' or spaces, got '" + v + "'");
         }
         o->rados.store = v;
         return Status::OK();
       }},
      {"storage.rados.gateway", [](const std::string& v, Options* o) {
         if (!v.empty() && !IsValidGatewayName(v)) {
           return Status::InvalidArgument("storage.rados.gateway must be 1 to 32 characters of a-z, 0-9 and '-', got '" +
                                          v + "'");
         }
         o->rados.gateway = v;
         return Status::OK();
       }},
      {"storage.rados.op-timeout", [](const std::string& v, Options* o) {
         uint64_t ms;
         DEDUPV1_RETURN_IF_ERROR(ParseDurationMs(v, &ms));
         if (ms < 1000 || ms > 3600 * 1000) {
           return Status::InvalidArgument("storage.rados.op-timeout must be from 1s to 1h, got " + v);
         }
         o->rados.op_timeout_s = static_cast<uint32_t>(ms / 1000);
         return Status::OK();
       }},
      {"storage.rados.index-shards", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 65536 || (x & (x - 1)) != 0) {
           return Status::InvalidArgument("storage.rados.index-shards must be a power of two from 1 to 65536, got " + v);
         }
         o->chunk_index.rados_shards = static_cast<uint32_t>(x);
         return Status::OK();
       }},
      {"storage.rados.dedup-scope", [](const std::string& v, Options* o) {
         if (v != "gateway" && v != "cluster") {
           return Status::InvalidArgument("storage.rados.dedup-scope must be gateway or cluster, got '" + v + "'");
         }
         o->chunk_index.cluster_scope = v == "cluster";
         return Status::OK();
       }},
      {"storage.rados.claim-hold", [](const std::string& v, Options* o) {
         uint64_t ms;
         DEDUPV1_RETURN_IF_ERROR(ParseDurationMs(v, &ms));
         if (ms > 3600 * 1000) return Status::InvalidArgument("storage.rados.claim-hold must be at most 1h, got " + v);
         o->chunk_index.claims.claim_hold_ms = ms;
         return Status::OK();
       }},
      {"storage.rados.skip-lookups-below", [](const std::string& v, Options* o) {
         double share;
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &share));
         if (!(share >= 0 && share <= 0.5)) {
           return Status::InvalidArgument("storage.rados.skip-lookups-below must be a share from 0 (never skip) to 0.5, got " + v);
         }
         o->chunk_index.skip_lookups_below = share;
         return Status::OK();
       }},
      {"storage.rados.lock-lease", [](const std::string& v, Options* o) {
         uint64_t ms;
         DEDUPV1_RETURN_IF_ERROR(ParseDurationMs(v, &ms));
         if (ms < 3000 || ms > 3600 * 1000) {
           return Status::InvalidArgument("storage.rados.lock-lease must be from 3s to 1h, got " + v);
         }
         o->rados.lock_duration_s = static_cast<uint32_t>(ms / 1000);
         return Status::OK();
       }},
      {"block-index.path", [](const std::string& v, Options* o) {
         o->block_index.path = v;
         o->block_index_path_set_ = true;
         return Status::OK();
       }},
      {"block-index.aux-soft-limit", [](const std::string& v, Options* o) { return ParseSize(v, &o->block_index.aux_soft_limit); }},
      {"block-index.aux-hard-limit", [](const std::string& v, Options* o) { return ParseSize(v, &o->block_index.aux_hard_limit); }},
      {"write-buffer.size", [](const std::string& v, Options* o) { return ParseSize(v, &o->write_buffer_size); }},
      {"write-buffer.flush-delay", [](const std::string& v, Options* o) { return ParseDurationMs(v, &o->write_buffer_flush_delay_ms); }},
      {"dedup.threads", [](const std::string& v, Options* o) {
         uint64_t x;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 64) return Status::InvalidArgument("dedup.threads must be 1..64, got " + v);
         o->dedup_threads = static_cast<int>(x);
         return Status::OK();
       }},
      {"dedup.rewrite", [](const std::string& v, Options* o) {
         if (v != "off" && v != "sparse") return Status::InvalidArgument("dedup.rewrite must be off or sparse, got '" + v + "'");
         o->rewrite.enabled = v == "sparse";
         return Status::OK();
       }},
      {"dedup.rewrite.sparse-bytes", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &o->rewrite.sparse_bytes));
         if (o->rewrite.sparse_bytes == 0) return Status::InvalidArgument("dedup.rewrite.sparse-bytes must be above 0, got " + v);
         return Status::OK();
       }},
      {"dedup.rewrite.limit", [](const std::string& v, Options* o) {
         double share;
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &share));
         if (!(share > 0 && share <= 0.5)) {
           return Status::InvalidArgument("dedup.rewrite.limit must be a share of the written bytes above 0 and at most 0.5, got " + v);
         }
         o->rewrite.limit = share;
         return Status::OK();
       }},
      {"dedup.selective.threshold", [](const std::string& v, Options* o) {
         uint64_t x = 0;
         DEDUPV1_RETURN_IF_ERROR(ParseUint(v, &x));
         if (x < 1 || x > 1024) {
           return Status::InvalidArgument("dedup.selective.threshold must be 1..1024 known chunks per request, got " + v);
         }
         o->selective_threshold = static_cast<uint32_t>(x);
         return Status::OK();
       }},
      {"cache.budget", [](const std::string& v, Options* o) { return ParseSize(v, &o->cache_budget); }},
      {"dedup.background.rate", [](const std::string& v, Options* o) {
         return ParseSize(v, &o->background.rate_bytes_per_s);
       }},
      {"dedup.background.period", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDurationMs(v, &o->background.period_ms));
         if (o->background.period_ms < 100 || o->background.period_ms > 24ull * 3600 * 1000) {
           return Status::InvalidArgument("dedup.background.period must be from 100ms to 24h, got " + v);
         }
         return Status::OK();
       }},
      {"idle.throughput-threshold", [](const std::string& v, Options* o) { return ParseSize(v, &o->idle.throughput_threshold); }},
      {"idle.period", [](const std::string& v, Options* o) { return ParseDurationMs(v, &o->idle.period_ms); }},
      {"idle.latency-threshold", [](const std::string& v, Options* o) { return ParseDurationMs(v, &o->idle.latency_threshold_ms); }},
      {"idle.window", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDurationMs(v, &o->idle.window_ms));
         if (o->idle.window_ms == 0) return Status::InvalidArgument("idle.window must be above 0, got " + v);
         return Status::OK();
       }},
      {"log.path", [](const std::string& v, Options* o) {
         o->log.path = v;
         o->log_path_set_ = true;
         return Status::OK();
       }},
      {"log.size", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseSize(v, &o->log.size_bytes));
         if (o->log.size_bytes < (1 << 20)) return Status::InvalidArgument("log.size must be at least 1M, got " + v);
         return Status::OK();
       }},
      {"log.soft-limit", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &o->log.soft_limit));
         if (o->log.soft_limit <= 0 || o->log.soft_limit >= 1) return Status::InvalidArgument("log.soft-limit must be in (0, 1), got " + v);
         return Status::OK();
       }},
      {"log.hard-limit", [](const std::string& v, Options* o) {
         DEDUPV1_RETURN_IF_ERROR(ParseDouble(v, &o->log.hard_limit));
         if (o->log.hard_limit <= 0 || o->log.hard_limit >= 1) return Status::InvalidArgument("log.hard-limit must be in (0, 1), got " + v);
         return Status::OK();
       }},
      {"volume", [](const std::string& v, Options* o) {
         auto parts = SplitConfigList(v);
         if (parts.size() != 2 && parts.size() != 3) {
           return Status::InvalidArgument("volume must be 'NAME SIZE [policy=inline|selective|out-of-band|off]' (e.g. 'volume = backup1 100G'), got '" +
                                          v + "'");
         }
         for (char c : parts[0]) {
           if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
             return Status::InvalidArgument("volume name '" + parts[0] + "' may only use letters, digits, '-', '_' and '.'");
           }
         }
         VolumeOptions vol;
         vol.name = parts[0];
         DEDUPV1_RETURN_IF_ERROR(ParseSize(parts[1], &vol.size));
         if (vol.size == 0 || vol.size % 512 != 0) {
           return Status::InvalidArgument("volume " + vol.name + ": size must be a non-zero multiple of 512 bytes, got " + parts[1]);
         }
         if (parts.size() == 3) {
           const std::string prefix = "policy=";
           if (parts[2].rfind(prefix, 0) != 0) {
             return Status::InvalidArgument("volume " + vol.name + ": the third word must be policy=inline, policy=selective, policy=out-of-band or policy=off, got '" +
                                            parts[2] + "'");
           }
           DEDUPV1_RETURN_IF_ERROR(ParseDedupPolicy(vol.name, parts[2].substr(prefix.size()), &vol.policy));
         }
         for (const auto& other : o->volumes) {
           if (other.name == vol.name) return Status::InvalidArgument("volume " + vol.name + " is declared twice");
         }
         o->volumes.push_back(vol);
         return Status::OK();
       }},
  };
  return table;
}

std::vector<std::string> Options::Keys() { return ConfigKeys(KeyTable()); }

bool Options::IsKeyOfLayerAbove(const std::string& key) {
  return key.rfind("target.", 0) == 0 || key.rfind("monitor.", 0) == 0;
}

Status Options::FromConfig(const Config& config, Options* options) {
  Options o;
  for (const auto& e : config.entries()) {
    bool owned = false;
    DEDUPV1_RETURN_IF_ERROR(ApplyConfigEntry(KeyTable(), config, e, &o, &owned));
    if (!owned && !IsKeyOfLayerAbove(e.key)) return UnknownConfigKey(config, e);
  }
  Status s = o.Finish();
  if (!s.ok()) return ConfigFileError(config, s);
  *options = o;
  return Status::OK();
}

Status Options::Finish() {
  if (chunking.name == FastCdcChunker::kName && !chunking_min_size_set_ &&
      chunking.min_size == ChunkerOptions().min_size) {
    // At most half the average (a small avg-size keeps the generic minimum,
    // so a config valid before stays valid).
    chunking.min_size = std::max(ChunkerOptions().min_size,
                                 std::min(FastCdcChunker::kDefaultMinSize, chunking.avg_size / 2));
  }
  std::unique_ptr<Chunker> probe;
  Status s = Chunker::Create(chunking, &probe);
  if (!s.ok()) {
    // The chunker names its fields (min_size); the user knows the config keys.
    std::string msg = s.message();
    const std::pair<const char*, const char*> names[] = {{"min_size", "chunking.min-size"},
                                                         {"avg_size", "chunking.avg-size"},
                                                         {"max_size", "chunking.max-size"}};
    for (const auto& [field, key] : names) {
      for (size_t at = msg.find(field); at != std::string::npos; at = msg.find(field, at + 1)) {
        msg.replace(at, std::strlen(field), key);
      }
    }
    return Status::InvalidArgument(msg);
  }
  if (cache_budget > 0 && cache_budget / CacheBudget::kFloorDivisor < chunk_store.container_size) {
    return Status::InvalidArgument("cache.budget (" + std::to_string(cache_budget) + ") must be at least " +
                                   std::to_string(CacheBudget::kFloorDivisor) + " containers (" +
                                   std::to_string(CacheBudget::kFloorDivisor * chunk_store.container_size) +
                                   " bytes at container.size " + std::to_string(chunk_store.container_size) +
                                   "): the read cache keeps at least an eighth of it");
  }
  if (chunking.max_size * 2 > chunk_store.container_size) {
    return Status::InvalidArgument("chunking.max-size (" + std::to_string(chunking.max_size) +
                                   ") must be at most half of container.size (" +
                                   std::to_string(chunk_store.container_size) + ")");
  }
  DEDUPV1_RETURN_IF_ERROR(CheckRequiredFilters(filter_chain));
  if (chunk_index.aux_soft_limit > chunk_index.aux_hard_limit) {
    return Status::InvalidArgument("chunk-index.aux-soft-limit is above chunk-index.aux-hard-limit");
  }
  if (log.soft_limit >= log.hard_limit) {
    return Status::InvalidArgument("log.soft-limit must be below log.hard-limit");
  }
  if (block_index.aux_soft_limit > block_index.aux_hard_limit) {
    return Status::InvalidArgument("block-index.aux-soft-limit is above block-index.aux-hard-limit");
  }
  if (write_buffer_size < 4ULL * block_size) {
    return Status::InvalidArgument("write-buffer.size must hold at least 4 blocks (" +
                                   std::to_string(4ULL * block_size) + " bytes)");
  }
  uint64_t pages = chunk_index.table.size_bytes / chunk_index.table.page_size;
  if (pages < 2) return Status::InvalidArgument("chunk-index.size must hold at least two pages");
  DEDUPV1_RETURN_IF_ERROR(FinishStorageBackend());
  chunk_store.fp_type = fingerprint;
  chunk_index.table.key_size = FingerprintSize(fingerprint);
  block_index.block_size = block_size;
  auto resolve = [this](const std::string& p, bool set, const char* def) {
    if (!set) return JoinPath(data_dir, def);
    return JoinPath(data_dir, p);  // absolute paths are kept as they are
  };
  chunk_store.dir = resolve(chunk_store.dir, chunk_store_dir_set_, "containers");
  chunk_index.table.path = resolve(chunk_index.table.path, chunk_index_path_set_, "chunk-index");
  block_index.path = resolve(block_index.path, block_index_path_set_,
                             block_index.backend == KvBackend::kLevelDb ? "block-index.leveldb"
                                                                        : "block-index.tcb");
  log.path = resolve(log.path, log_path_set_, "log");
  chunk_store_dir_set_ = chunk_index_path_set_ = block_index_path_set_ = log_path_set_ = true;
  return Status::OK();
}

Status Options::DerivePathsFrom(const std::string& dir) {
  data_dir = dir;
  chunk_store_dir_set_ = chunk_index_path_set_ = block_index_path_set_ = log_path_set_ = false;
  return Finish();
}

Status Options::FinishStorageBackend() {
  for (const auto& v : volumes) {
    if (chunk_index.cluster_scope && v.policy != DedupPolicy::kInline) {
      return Status::InvalidArgument("volume " + v.name + ": policy=" + DedupPolicyName(v.policy) +
                                     " needs storage.rados.dedup-scope = gateway (a cluster-scope store shares its "
                                     "chunk index: a copy stored again would move every gateway's entry)");
    }
  }
  if (cache_budget > 0 && storage_backend != "local") {
    return Status::InvalidArgument("cache.budget needs the chunk index table on local disk (storage.backend = local): "
                                   "a table in RADOS has no page cache to give a share to; size container.read-cache "
                                   "instead");
  }
  if (chunk_index.cluster_scope && rewrite.enabled) {
    return Status::InvalidArgument("dedup.rewrite = sparse needs storage.rados.dedup-scope = gateway (a cluster-scope "
                                   "store shares its chunk index: a rewritten copy would move every gateway's entry)");
  }
  if (chunk_index.cluster_scope && (storage_backend != "rados" || rados.gateway.empty())) {
    return Status::InvalidArgument("storage.rados.dedup-scope = cluster needs storage.backend = rados and "
                                   "storage.rados.gateway (the gateway slots of one store share its chunk index)");
  }
  if (storage_backend == "local") {
    if (!rados.gateway.empty()) {
      return Status::InvalidArgument("storage.rados.gateway = " + rados.gateway +
                                     " needs storage.backend = rados (gateway slots share one Ceph store)");
    }
    if (chunk_store.backend == "rados") {
      return Status::InvalidArgument("container.backend = rados needs storage.backend = rados (a store keeps all "
                                     "its durable state in one place)");
    }
    return Status::OK();
  }
  // rados: every durable byte in the cluster. Tokyo Cabinet does its own file
  // I/O (index/tc_kv_store.h), past the Env that maps files to RADOS objects,
  // so the block index is LevelDB there.
  if (container_backend_set_ && chunk_store.backend != "rados") {
    return Status::InvalidArgument("storage.backend = rados keeps containers in RADOS; container.backend = " +
                                   chunk_store.backend + " contradicts it (leave container.backend out)");
  }
  if (block_index_backend_set_ && block_index.backend != KvBackend::kLevelDb) {
    return Status::InvalidArgument("storage.backend = rados needs block-index.backend = leveldb (Tokyo Cabinet "
                                   "writes its file past the RADOS mapping); leave block-index.backend out");
  }
  // Gateway mode self-fences (design-15 2.2): a slot's lost lease may mean
  // another gateway took the slot over, so the lock is never re-taken and
  // every write fails from then on. The policy is not in ConnectionKey, the
  // gateway name is: every connection of a slot has it.
  if (!rados.gateway.empty()) rados.fence_on_lease_loss = true;
  chunk_store.backend = "rados";
  chunk_store.rados = rados;
  chunk_index.table_backend = "rados";
  chunk_index.rados = rados;
  block_index.backend = KvBackend::kLevelDb;
  return Status::OK();
}

std::string Options::ToString() const { return SettingsToString() + VolumesToString(); }

// A module path as the dump names it. Finish() joins a relative path with
// data_dir, so a path under a relative data_dir is named relative to it:
// read back, it is joined once more and lands where it was. Under an
// absolute data_dir the full path is kept (it reads back the same, and the
// status page shows where the files are).
std::string Options::DumpPath(const std::string& path) const {
  if (data_dir.empty() || data_dir[0] == '/') return path;
  const std::string prefix = data_dir.back() == '/' ? data_dir : data_dir + "/";
  if (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0) return path.substr(prefix.size());
  return path;
}

std::string Options::SettingsToString() const {
  std::ostringstream o;
  o << "data-dir = " << data_dir << "\n"
    << "storage.backend = " << storage_backend << "\n"
    << "storage.rados.conf = " << rados.conf_file << "\n"
    << "storage.rados.client = " << rados.client_name << "\n"
    << "storage.rados.keyring = " << rados.keyring << "\n"
    << "storage.rados.data-pool = " << rados.data_pool << "\n"
    << "storage.rados.index-pool = " << rados.index_pool << "\n"
    << "storage.rados.store = " << rados.store << "\n"
    << "storage.rados.gateway = " << rados.gateway << "\n"
    << "storage.rados.op-timeout = " << rados.op_timeout_s << "s\n"
    << "storage.rados.lock-lease = " << rados.lock_duration_s << "s\n"
    << "storage.rados.index-shards = " << chunk_index.rados_shards << "\n"
    << "storage.rados.dedup-scope = " << (chunk_index.cluster_scope ? "cluster" : "gateway") << "\n"
    << "storage.rados.claim-hold = " << chunk_index.claims.claim_hold_ms << "ms\n"
    << "storage.rados.skip-lookups-below = " << chunk_index.skip_lookups_below << "\n"
    << "block-size = " << block_size << "\n"
    << "fingerprint = " << FingerprintTypeName(fingerprint) << "\n"
    << "chunking = " << chunking.name << "\n"
    << "chunking.min-size = " << chunking.min_size << "\n"
    << "chunking.avg-size = " << chunking.avg_size << "\n"
    << "chunking.max-size = " << chunking.max_size << "\n";
  o << "filter-chain = ";
  for (size_t i = 0; i < filter_chain.size(); i++) o << (i ? "," : "") << filter_chain[i];
  o << "\n"
    << "bloom.expected-chunks = " << filters.bloom_expected_chunks << "\n"
    << "bloom.false-positive-rate = " << filters.bloom_false_positive_rate << "\n"
    << "container-cache.containers = " << filters.container_cache_containers << "\n"
    << "container.size = " << chunk_store.container_size << "\n"
    << "container.compression = " << CompressionName(chunk_store.compression) << "\n"
    << "container.open-count = " << chunk_store.open_containers << "\n"
    << "container.writer-threads = " << chunk_store.writer_threads << "\n"
    << "container.commit-timeout = " << chunk_store.commit_timeout_ms << "ms\n"
    << "container.read-cache = " << chunk_store.read_cache_containers << "\n"
    << "container.backend = " << chunk_store.backend << "\n"
    << "container.dir = " << DumpPath(chunk_store.dir) << "\n"
    << "chunk-index.path = " << DumpPath(chunk_index.table.path) << "\n"
    << "chunk-index.size = " << chunk_index.table.size_bytes << "\n"
    << "chunk-index.page-size = " << chunk_index.table.page_size << "\n"
    << "chunk-index.max-fill = " << chunk_index.table.max_fill << "\n"
    << "chunk-index.grow-at = " << chunk_index.grow_at << "\n"
    << "chunk-index.grow-factor = " << chunk_index.grow_factor << "\n"
    << "chunk-index.grow-step = " << chunk_index.grow_step_pages << "\n"
    << "chunk-index.aux-soft-limit = " << chunk_index.aux_soft_limit << "\n"
    << "chunk-index.aux-hard-limit = " << chunk_index.aux_hard_limit << "\n"
    << "block-index.backend = " << (block_index.backend == KvBackend::kLevelDb ? "leveldb" : "tokyocabinet") << "\n"
    << "block-index.path = " << DumpPath(block_index.path) << "\n"
    << "block-index.aux-soft-limit = " << block_index.aux_soft_limit << "\n"
    << "block-index.aux-hard-limit = " << block_index.aux_hard_limit << "\n"
    << "write-buffer.size = " << write_buffer_size << "\n"
    << "write-buffer.flush-delay = " << write_buffer_flush_delay_ms << "ms\n"
    << "dedup.threads = " << dedup_threads << "\n"
    << "dedup.rewrite = " << (rewrite.enabled ? "sparse" : "off") << "\n"
    << "dedup.rewrite.sparse-bytes = " << rewrite.sparse_bytes << "\n"
    << "dedup.rewrite.limit = " << rewrite.limit << "\n"
    << "dedup.selective.threshold = " << selective_threshold << "\n"
    << "cache.budget = " << cache_budget << "\n"
    << "dedup.background.rate = " << background.rate_bytes_per_s << "\n"
    << "dedup.background.period = " << background.period_ms << "ms\n"
    << "idle.throughput-threshold = " << idle.throughput_threshold << "\n"
    << "idle.period = " << idle.period_ms << "ms\n"
    << "idle.window = " << idle.window_ms << "ms\n"
    << "idle.latency-threshold = " << idle.latency_threshold_ms << "ms\n"
    << "log.path = " << DumpPath(log.path) << "\n"
    << "log.size = " << log.size_bytes << "\n"
    << "log.soft-limit = " << log.soft_limit << "\n"
    << "log.hard-limit = " << log.hard_limit << "\n";
  return o.str();
}

std::string Options::VolumesToString() const {
  std::ostringstream o;
  for (const auto& v : volumes) {
    o << "volume = " << v.name << " " << v.size;
    if (v.policy != DedupPolicy::kInline) o << " policy=" << DedupPolicyName(v.policy);
    o << "\n";
  }
  return o.str();
}

}  // namespace dedupv1
