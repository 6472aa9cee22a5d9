// Test helpers for whole DedupSystems (gtest; header-only so the engine
// library does not depend on gtest).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/engine/dedup_system.h"

namespace dedupv1 {
namespace test {

// A small system in |dir|: 64 MiB chunk index, 16 MiB write buffer, short
// flush delay and commit timeout, so tests finish quickly. No volumes, and
// Finish() is not called: the test adds what it needs first.
inline Options SmallSystemOptions(const std::string& dir) {
  Options o;
  o.data_dir = dir;
  o.chunk_index.table.size_bytes = 64 << 20;
  o.filters.bloom_expected_chunks = 1 << 20;
  o.write_buffer_size = 16 << 20;
  o.write_buffer_flush_delay_ms = 50;
  o.chunk_store.commit_timeout_ms = 500;
  return o;
}

// Options for garbage collection tests in |dir|: 64 KiB blocks, 1 MiB
// containers (so a few MiB of data spread over many), a 32 MiB chunk index,
// and idle rounds held off (rounds run when a test says so: a stall of a few
// seconds on a loaded host must not start an idle round in the middle of
// one). No volumes; Finish() is not called.
inline Options GcTestOptions(const std::string& dir) {
  Options o;
  o.data_dir = dir;
  o.block_size = 64 << 10;
  o.chunk_index.table.size_bytes = 32 << 20;
  o.filters.bloom_expected_chunks = 1 << 18;
  o.write_buffer_size = 16 << 20;
  o.write_buffer_flush_delay_ms = 20;
  o.chunk_store.container_size = 1 << 20;
  o.chunk_store.commit_timeout_ms = 500;
  o.idle.period_ms = 3600 * 1000;
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

// The volume named |name|; a failure is a test failure (and null).
inline Volume* Vol(DedupSystem* sys, const std::string& name) {
  Volume* v = nullptr;
  Status s = sys->GetVolume(name, &v);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return v;
}

// The container store's used bytes (a failure is a test failure, and 0).
inline uint64_t UsedBytes(DedupSystem* sys) {
  uint64_t used = 0;
  Status s = sys->chunk_store()->UsedBytes(&used);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return used;
}

// Whether |v| reads |want| at |offset|: the read succeeds and every byte
// matches (the message names the first that differs).
inline ::testing::AssertionResult ReadsBack(Volume* v, uint64_t offset, const std::vector<uint8_t>& want) {
  std::vector<uint8_t> got(want.size(), 0xEE);
  Status s = v->Read(offset, got.size(), got.data());
  if (!s.ok()) return ::testing::AssertionFailure() << "read of " << v->name() << " failed: " << s.ToString();
  if (got != want) {
    size_t i = 0;
    while (got[i] == want[i]) i++;
    return ::testing::AssertionFailure() << v->name() << " differs at byte " << offset + i;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace test
}  // namespace dedupv1
