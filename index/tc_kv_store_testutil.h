// Test support: turns a Tokyo Cabinet block index store into the form a
// build before page checksums (index/tc_kv_store.cc) left it in, so tests can
// damage bytes of such a store the way a store in the field may be damaged
// (without page checksums TC reads a damaged page as it is; the block index's
// own record checks are then all that stands between it and wrong data).
#pragma once

#include <string>

#include "core/base/status.h"

namespace dedupv1 {

class Env;

namespace test {

// Rewrites the store at |path| (every record, same keys and values) as a
// Tokyo Cabinet B+tree without page checksums. The rename into place goes
// through |env|; TC writes the new file itself.
Status RewriteTcStoreWithoutPageChecksums(Env* env, const std::string& path);

}  // namespace test
}  // namespace dedupv1
