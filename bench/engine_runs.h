// What dedupv1_bench's modes share: a fresh store's options, opening it, and
// writing a backup generation into a volume the way a backup client does
// (1 MiB requests, a sync at the end), with wall-clock and CPU time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/backup_generator.h"
#include "core/base/chunker.h"
#include "core/engine/dedup_system.h"

namespace dedupv1 {
namespace bench {

using Clock = std::chrono::steady_clock;

// Seconds since |since|.
double Seconds(Clock::time_point since);
// CPU seconds (user + system) of this process so far.
double CpuSeconds();
// A progress line on stderr ("\r"-updated; a newline when done == total);
// nothing if |json|.
void Progress(bool json, const char* what, uint64_t done, uint64_t total, double secs);

// Writes |gen| into |vol| in 1 MiB requests and syncs; returns MB/s
// (including the final sync). Exits the process on an error.
double WriteGeneration(Volume* vol, const GenerationSource& gen, bool json, const char* label);

// Chunking (|chunking|) + SHA-1 of |gen| on |threads| threads, each taking
// 8 MiB stretches, as the engine's workers do: the speed limit of the cores.
// MB/s.
double ChunkHashCeilingMBs(const GenerationSource& gen, const ChunkerOptions& chunking, int threads);

// Where and how big a bench's fresh store is.
struct StoreArgs {
  uint64_t size = 1ULL << 30;  // per volume
  std::string data_dir;        // empty: a temporary directory
  std::vector<std::pair<std::string, std::string>> overrides;  // --set key=value
};

// A fresh store for one run: |dir| (args.data_dir, or a temporary directory
// named after |name|, then |*temp| is set) emptied, volumes of args.size
// named |volumes|, the chunk index sized to the data, args' --set overrides.
// Prints the error and returns false if the options do not check out.
bool FreshStoreOptions(const StoreArgs& args, const char* name, const std::vector<std::string>& volumes,
                       std::string* dir, bool* temp, uint64_t* vol_size, Options* options);

// DedupSystem::OpenStore; prints the error and returns false if it fails.
bool OpenSystem(const Options& options, std::unique_ptr<DedupSystem>* sys);

// sync, then empties the page cache (root), as after a reboot. False (with a
// warning printed) if it could not.
bool DropPageCache();

}  // namespace bench
}  // namespace dedupv1
