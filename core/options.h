// Options is the validated form of a dedupv1 configuration: every key of the
// config file maps to one field here. FromConfig refuses unknown keys, bad
// values and impossible combinations, naming the key and the line.
// docs/configuration.md lists every key with its default; keep them in sync
// (options_test checks that every key is documented).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chunkstore/chunk_store.h"
#include "core/chunker.h"
#include "core/config.h"
#include "core/fingerprint.h"
#include "index/block_index.h"
#include "index/chunk_index.h"
#include "core/idle_detector.h"
#include "filters/filter_registry.h"
#include "log/operations_log.h"

namespace dedupv1 {

struct VolumeOptions {
  std::string name;
  uint64_t size = 0;  // bytes, a multiple of 512
};

struct Options {
  std::string data_dir = "/var/lib/dedupv1";
  uint32_t block_size = 128 << 10;
  FingerprintType fingerprint = FingerprintType::kSha1;
  ChunkerOptions chunking;
  std::vector<std::string> filter_chain = DefaultFilterChain();  // names: filters/filter_registry.cc
  uint64_t bloom_expected_chunks = 16 << 20;
  double bloom_false_positive_rate = 0.01;
  size_t container_cache_containers = 1024;
  ChunkStoreOptions chunk_store;    // dir filled from data_dir unless set
  ChunkIndexOptions chunk_index;    // path filled from data_dir unless set
  BlockIndexOptions block_index;    // path filled from data_dir unless set
  OperationsLogOptions log;         // path filled from data_dir unless set
  uint64_t write_buffer_size = 64 << 20;
  uint64_t write_buffer_flush_delay_ms = 500;
  int dedup_threads = 2;
  IdleOptions idle;  // when background work (replay, write-back, GC) runs
  std::vector<VolumeOptions> volumes;
  // The dedupv1_mon HTTP status server (target/monitor).
  bool monitor_enabled = true;
  std::string monitor_host = "127.0.0.1";
  uint16_t monitor_port = 9001;
  std::string monitor_token;  // required for control endpoints when not on loopback
  // The iSCSI target dedupv1d sets up in tgtd (target/dedupv1d_main.cc); the
  // engine ignores these. Validated here so a bad value is refused before
  // anything starts.
  std::string target_iqn = "iqn.2026-11.org.dedupv1:storage";
  std::string target_portal = "0.0.0.0:3260";  // ADDR:PORT, IPv6 as [ADDR]:PORT
  uint32_t target_control_port = 0;            // tgtd -C N: socket /var/run/tgtd/socket.N
  // Initiators admitted: an address (IP or CIDR) in the first list OR a name
  // in the second (tgt's rule). Both empty means every initiator (ALL).
  std::vector<std::string> target_initiator_addresses;
  std::vector<std::string> target_initiator_names;
  std::string target_chap_user, target_chap_password;  // incoming CHAP: both or neither
  // With CHAP: discovery (SendTargets) needs the account too, so the target
  // is not listed to initiators without credentials.
  bool target_discovery_auth = true;

  // Defaults for everything; paths derived from data_dir by Finish().
  Options();
  // Parses and validates |config|. Later entries override earlier ones (so a
  // command-line override appended with Config::Set wins), except "volume",
  // which accumulates.
  static Status FromConfig(const Config& config, Options* options);
  // Resolves relative and default paths against data_dir and checks
  // cross-key constraints. FromConfig calls it; call it after changing fields
  // by hand.
  Status Finish();
  // Every key FromConfig understands.
  static std::vector<std::string> Keys();
  // The effective configuration as "key = value" lines (for the monitor).
  std::string ToString() const;

  // Whether a path was given explicitly (else it is derived from data_dir).
  bool chunk_store_dir_set_ = false, chunk_index_path_set_ = false, block_index_path_set_ = false,
       log_path_set_ = false;
};

}  // namespace dedupv1
