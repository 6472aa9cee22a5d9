// Process-wide allocator settings for a long-running dedup system.
//
// The engine allocates and frees multi-MiB buffers all the time (container
// data sections, serialized containers, read-cache entries, write-buffer
// runs). glibc serves such buffers with mmap only up to a threshold that it
// raises by itself the first time a large mmapped buffer is freed; after that
// they come from the heap arenas of the allocating threads, and memory freed
// there is rarely given back. The result is an RSS that keeps growing with the
// data written although the engine's own structures are bounded. Fixing the
// threshold keeps large buffers mmapped, so freeing them returns the memory.
#pragma once

#include <cstddef>

namespace dedupv1 {

// Buffers of at least this size are mmapped and unmapped on free.
constexpr size_t kLargeBufferThreshold = 1 << 20;

// Applies the settings above. Idempotent. Called when a DedupSystem opens
// (there is one per process); it changes the process's allocator, which the
// host process (tgtd, a tool) shares.
void TuneAllocatorForLargeBuffers();

// Gives the pages of freed heap memory back to the system (malloc_trim).
// A checkpoint writes the auxiliary indexes back and frees hundreds of
// thousands of small nodes at once; glibc keeps their pages, and the holes
// they leave in the arenas are reused only in part, so the RSS crept upwards
// with the data written although the live heap stayed flat. Called after
// each checkpoint of the checkpoint thread (a few ms per call).
void ReturnFreedMemory();

}  // namespace dedupv1
