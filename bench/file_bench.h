// dedupv1_bench files: the engine in process fed with real data. Each FILE
// (a tar of one backup generation, say) is written as one generation into a
// volume of its own of a fresh store, in 1 MiB requests with a sync at the
// end, the way a backup client writes a weekly full backup; bench/real-data-
// bench.sh feeds it the same files borg and restic back up. Per generation:
// MB/s (including the sync), CPU seconds, the bytes of new chunks stored;
// beside them the chunk+hash ceiling on the first file (the cores' limit).
// The dedup ratio is measured, not known: real data has no ground truth.
#pragma once

#include <string>
#include <vector>

#include "bench/engine_runs.h"

namespace dedupv1 {
namespace bench {

struct FileBenchArgs {
  StoreArgs store;                 // store.size is taken from the largest file
  std::vector<std::string> files;  // generation 1, 2, ...
  bool json = false;
  bool keep = false;
};

// Runs the bench; prints a table (or JSON). Returns the exit code (2: a
// file that cannot be read, 1: the store failed).
int RunFileBench(const FileBenchArgs& args);

}  // namespace bench
}  // namespace dedupv1
