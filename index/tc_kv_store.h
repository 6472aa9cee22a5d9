// KvStore on a Tokyo Cabinet B+tree database file (the paper's block index
// store). Every Write is one TC transaction on a database opened with
// BDBOTSYNC, so a batch is atomic and synced when Write returns; TC's
// write-ahead log rolls back a transaction cut short by a crash.
//
// Thread-safety: the database object is opened with tcbdbsetmutex; Write calls
// are additionally serialised here because TC allows one transaction per
// database object; scans read in chunks under the same lock because a TC
// cursor's position is undefined after a change. Point reads during a
// transaction may see its records before the commit; the block index never
// reads keys it is writing back, so it does not care.
#pragma once

#include <memory>
#include <string>

#include "index/kv_store.h"

namespace dedupv1 {

// Opens or creates the Tokyo Cabinet B+tree file |path| (its directory must
// exist). The class itself is private to tc_kv_store.cc, so TC's headers stay
// out of everything else.
Status OpenTcKvStore(const std::string& path, std::unique_ptr<KvStore>* out);

}  // namespace dedupv1
