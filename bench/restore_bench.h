// dedupv1_bench restore: how fast a backup restores, and how that ages.
//
// Writes |generations| weekly full backups (bench/backup_generator.h, each
// generation the next over the last) into one volume of a fresh store. After
// generation 1, every |every|-th and the last it restores the volume twice:
// warm (right after the write, the page cache holding what it can) and cold
// (engine closed and reopened, page cache dropped). Each restore reads the
// volume in order in 512 KiB requests on |readers| threads, as an initiator
// with that queue depth does, and is then compared with the generation
// (untimed). Per restore: MB/s, the chunk store's reads, and the restore
// speed factor (MiB restored per read of container data: a range, a single
// chunk or a whole container; metadata heads are counted apart; the measure
// Destor prints).
//
// Side by side in the same run: the same bytes as a plain file on the same
// file system, read the same way warm and cold: what a store without dedup
// (tgt's rdwr) reads at most.
#pragma once

#include <cstdint>

#include "bench/engine_runs.h"

namespace dedupv1 {
namespace bench {

struct RestoreArgs {
  StoreArgs store;
  int generations = 20;
  int every = 1;
  int readers = 2;
  uint64_t seed = 1;
  bool cold = true;  // cold restores (root: the page cache is dropped)
  bool json = false;
  bool keep = false;
};

// Runs the restore bench; prints a table (or JSON). Returns the exit code.
int RunRestoreBench(const RestoreArgs& args);

}  // namespace bench
}  // namespace dedupv1
