// Test helpers for whole DedupSystems (gtest; header-only so the engine
// library does not depend on gtest).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/dedup_system.h"

namespace dedupv1 {
namespace test {

// A small system in |dir|: 64 MiB chunk index, 16 MiB write buffer, short
// flush delay and commit timeout, so tests finish quickly. No volumes, and
// Finish() is not called: the test adds what it needs first.
inline Options SmallSystemOptions(const std::string& dir) {
  Options o;
  o.data_dir = dir;
  o.chunk_index.table.size_bytes = 64 << 20;
  o.bloom_expected_chunks = 1 << 20;
  o.write_buffer_size = 16 << 20;
  o.write_buffer_flush_delay_ms = 50;
  o.chunk_store.commit_timeout_ms = 500;
  return o;
}

// Opens the system on the default Env; a failure is a test failure (and a
// null result).
inline std::unique_ptr<DedupSystem> OpenSystemOrDie(const Options& o) {
  std::unique_ptr<DedupSystem> sys;
  Status s = DedupSystem::Open(o, Env::Default(), &sys);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return sys;
}

}  // namespace test
}  // namespace dedupv1
