// Test helpers for crash tests of whole systems (gtest; in the test library).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/engine/dedup_system.h"

namespace dedupv1 {

// Every usage count in the chunk index equals a recount from the block
// mappings of every volume (test failures otherwise); |expect_entries|: at
// least one entry must have been compared.
void ExpectUsageMatchesRecount(DedupSystem* sys, bool expect_entries = true);

// The kill -9 test's volume is cut into slots of this size (not a multiple of
// the block size: slots straddle blocks); version 0 is zeros, the others
// pseudo-random, a few versions sharing content so writes deduplicate.
constexpr uint64_t kCrashSlot = 48 << 10;
std::vector<uint8_t> CrashSlotData(uint64_t slot, uint64_t version);

// Options of the kill -9 test: a 30 MiB volume "crash" in |dir|, small
// buffers and timeouts (Finish() called). A test changes the storage
// backend on the result and calls Finish() again.
Options KillNineOptions(const std::string& dir);

// Runs up to |cycles| kill -9 cycles on the store |o| (opened with
// DedupSystem::OpenStore, so a rados store too), within |budget_s| seconds;
// failures are test failures. Returns the cycles completed. |after_kill|, if
// given, runs after each kill, before the store is opened again.
// What the cycles did that a test may want to see happen (not only pass).
struct KillNineTotals {
  uint64_t chunks_rewritten = 0;   // stored again by the children (rewriting or policy off), up to their last sync
  uint64_t spare_copies_dead = 0;  // by the parent's GC rounds
  uint64_t blocks_remapped = 0;    // by the children's out-of-band passes
};
uint64_t RunKillNineCycles(const Options& o, uint64_t cycles, uint64_t budget_s,
                           const std::function<void(uint64_t cycle)>& after_kill = nullptr,
                           KillNineTotals* totals = nullptr);

}  // namespace dedupv1
