// NameThisThread: gives the calling thread a name that `top -H`, `ps -L` and
// perf show, so an admin can tell the engine's dedup workers, checkpointer
// and container writers apart from tgtd's own threads.
#pragma once

#include <string>

namespace dedupv1 {

// Linux keeps 15 bytes of a thread's name; longer names are cut there.
// Failing to name a thread is harmless and not reported.
void NameThisThread(const std::string& name);

}  // namespace dedupv1
