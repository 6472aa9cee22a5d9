// KvStore on a LevelDB database directory (an alternative to Tokyo Cabinet,
// e.g. for write-heavy volumes). Every Write is one WriteBatch written with
// sync=true, so a batch is atomic and durable when Write returns.
//
// LevelDB keeps no record count, so the store counts at open (one scan) and
// keeps the count exact by checking in Write whether each key exists; Write
// calls are serialised for that. A bloom filter makes the checks for new keys
// cheap.
//
// Every file LevelDB touches goes through our Env by way of a leveldb::Env
// adapter, so FaultInjectionEnv reaches the store's tables and logs.
//
// A write that fails with an I/O error closes the database: LevelDB would
// keep that error for good, failing every later write of the process (on
// RADOS: after any cluster outage). The next call opens it again (replaying
// LevelDB's log, counting the records again), so the store serves once the
// storage does; while it cannot be opened, calls fail naming why.
#pragma once

#include <memory>
#include <string>

#include "index/kv_store.h"

namespace dedupv1 {

// Opens or creates the LevelDB database directory |path|; LevelDB reaches
// every file through |env| (index/leveldb_env_adapter.h), which must outlive
// the store. The class itself is private to leveldb_kv_store.cc, so LevelDB's
// headers stay out of everything else.
Status OpenLevelDbKvStore(const std::string& path, Env* env, std::unique_ptr<KvStore>* out);

}  // namespace dedupv1
