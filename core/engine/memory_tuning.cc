#include "core/engine/memory_tuning.h"

#include <malloc.h>

namespace dedupv1 {

void TuneAllocatorForLargeBuffers() {
  // Setting M_MMAP_THRESHOLD explicitly also turns off glibc's dynamic
  // adjustment of it (and of the trim threshold).
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kLargeBufferThreshold));
}

void ReturnFreedMemory() { malloc_trim(0); }

}  // namespace dedupv1
