// A leveldb::Env whose file operations go through our Env (core/base/env.h), so
// that every file LevelDB reads or writes for the block index store (tables,
// write-ahead logs, MANIFEST, CURRENT, LOCK, the info LOG) passes the same
// Env as the rest of the engine, and a FaultInjectionEnv reaches it.
//
// Everything that is not a file (background threads, the clock, sleeping) is
// LevelDB's default environment: the adapter is a leveldb::EnvWrapper over
// leveldb::Env::Default() that overrides every file method. Two exceptions
// stay LevelDB's own, because our Env has no such operation and the block
// index never needs them: RemoveDir (only leveldb::DestroyDB calls it) and
// GetTestDirectory (LevelDB's own tests).
//
// Errors keep their meaning across the border: a missing file is
// leveldb::Status::NotFound (LevelDB relies on that when it looks for
// CURRENT), every other failure an IOError whose message carries our
// Status's text ("No space left on device" for NoSpace, which
// leveldb_kv_store.cc turns back into NoSpace).
//
// Only index/ includes this header (it pulls in LevelDB's).
#pragma once

#include <leveldb/env.h>

#include <memory>

namespace dedupv1 {

class Env;

// Returns a leveldb::Env over |env|, which must outlive it (and the adapter
// must outlive every leveldb::DB opened with it).
std::unique_ptr<leveldb::Env> NewLevelDbEnvAdapter(Env* env);

}  // namespace dedupv1
