// RunBounded: a blocking call that has no timeout of its own, made with one.
//
// Most librados calls end after rados_osd_op_timeout / rados_mon_op_timeout
// (RadosCluster sets both to RadosOptions::op_timeout_s), but not all: on
// Ceph 16 Rados::wait_for_latest_osdmap() waits for the monitors' answer
// without any bound. RunBounded runs such a call on a helper thread and
// waits for it at most |limit|. When the limit passes first, the helper is
// detached and finishes (or hangs) on its own: |work| must therefore own
// everything it touches (capture shared_ptrs or handles, never the caller's
// stack), and its result is dropped.
#pragma once

#include <chrono>
#include <functional>

namespace dedupv1 {

// Runs |work| and stores its result in |*result|: true if it returned within
// |limit|, false (|*result| untouched) if not.
bool RunBounded(std::function<int()> work, std::chrono::milliseconds limit, int* result);

}  // namespace dedupv1
