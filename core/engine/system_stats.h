// SystemStats are the engine's counters: plain atomics updated on the I/O
// path and read by the monitor without taking any lock.
#pragma once

#include <atomic>
#include <cstdint>

namespace dedupv1 {

struct SystemStats {
  std::atomic<uint64_t> read_ops{0}, write_ops{0}, unmap_ops{0}, sync_ops{0};
  std::atomic<uint64_t> bytes_read{0}, bytes_written{0}, bytes_unmapped{0};
  // Blocks of a many-block read read again on their own under their lock
  // (core/engine/volume.cc): a mapping changed while the request's chunks
  // were read without block locks, or that lock-free read failed.
  std::atomic<uint64_t> reads_redone{0};
  // Reads, writes and unmaps completed and their summed latency, for idle
  // detection (core/engine/idle_detector.h).
  std::atomic<uint64_t> requests_timed{0}, request_ns{0};
  // Chunking and deduplication.
  std::atomic<uint64_t> runs{0}, chunks{0}, chunks_new{0}, chunks_known{0}, chunks_zero{0};
  std::atomic<uint64_t> bytes_chunked{0};   // logical bytes that went through the chain
  std::atomic<uint64_t> bytes_new{0};       // raw bytes of new chunks (before compression)
  std::atomic<uint64_t> bytes_zero{0};
  // Known chunks stored again by container rewriting (core/engine/rewrite_policy.h).
  std::atomic<uint64_t> chunks_rewritten{0}, bytes_rewritten{0};
  // Known chunks stored again because their volume's policy is off
  // (core/engine/dedup_policy.h), or by Select-Dedupe on a selective volume.
  std::atomic<uint64_t> chunks_stored_again{0}, bytes_stored_again{0};
  // Select-Dedupe's decisions, per write request of a selective volume
  // (core/engine/select_dedupe.h), with the requests' bytes in this run.
  std::atomic<uint64_t> requests_full_dedup{0}, requests_written_in_full{0}, requests_partial_dedup{0},
      requests_all_new{0};
  std::atomic<uint64_t> bytes_full_dedup{0}, bytes_written_in_full{0}, bytes_partial_dedup{0}, bytes_all_new{0};
  std::atomic<uint64_t> mappings_skipped{0};  // a newer write raced a worker; redone later
  std::atomic<uint64_t> damaged_mappings_overwritten{0};  // whole-block writes over an unreadable stored mapping
  std::atomic<uint64_t> errors{0};
  // Where dedup workers spend their time (nanoseconds, summed over workers).
  std::atomic<uint64_t> ns_chunking{0}, ns_fingerprinting{0}, ns_filtering{0}, ns_installing{0};
  std::atomic<uint64_t> ns_claiming{0};
};

}  // namespace dedupv1
