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
//
// File access: Tokyo Cabinet opens, reads, writes, maps and syncs the
// database file and its write-ahead log (<path>.wal) itself, with its own
// system calls; its API takes a path and offers no hook for file I/O (the
// page codec hook in tc_kv_store.cc sees page contents only, never a file).
// So those reads and writes cannot go through our Env, and FaultInjectionEnv
// cannot reach them; tests meet TC's reads and writes under real conditions
// instead (damaged files in the index tests and the corruption suite; a full
// file system under the whole engine in target/tests/dedupv1d-full-disk-test.sh).
// Everything this file does around the library goes through the Env it is
// given: the existence check, the removal of leftovers, the sync and link of
// a newly created database, the directory sync.
#pragma once

#include <memory>
#include <string>

#include "index/kv_store.h"

namespace dedupv1 {

// Opens or creates the Tokyo Cabinet B+tree file |path| (its directory must
// exist); the file handling around TC goes through |env| (see above). The
// class itself is private to tc_kv_store.cc, so TC's headers stay out of
// everything else.
Status OpenTcKvStore(const std::string& path, Env* env, std::unique_ptr<KvStore>* out);

}  // namespace dedupv1
