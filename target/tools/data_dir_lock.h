// DataDirLock holds a data directory's LOCK file (the flock DedupSystem takes)
// for an offline tool's whole run, so no other process (tgtd with the
// bs_dedupv1 module, dedupv1d, another tool) can open the store between the
// tool's steps: reading the log before DedupSystem opens, the open system
// itself, and repairs applied after it closed.
//
// flock locks belong to an open file description, so DedupSystem::Open
// taking the same lock again would fail against our own lock. env() is
// therefore an Env that forwards everything to the store's Env (a StoreEnv,
// core/engine/store_env.h) except LockFile on this LOCK path, which succeeds
// without locking (the lock is already held, by this object): pass it to
// DedupSystem::Open and to the components a tool opens directly.
//
// A rados store (storage.backend = rados) is locked twice: the local LOCK of
// the gateway's data dir (against a target on this machine) and the store's
// lock in RADOS (against a target anywhere, core/rados/rados_env.h).
#pragma once

#include <memory>
#include <string>

#include "core/base/env.h"
#include "core/base/status.h"
#include "core/engine/options.h"
#include "core/engine/store_env.h"

namespace dedupv1 {
namespace tools {

class DataDirLock {
 public:
  // Takes DATA_DIR/LOCK (and the store's lock in RADOS for a rados store).
  // Busy naming the directory or store if another process has it open.
  static Status Acquire(const Options& options, std::unique_ptr<DataDirLock>* out);
  ~DataDirLock();

  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

  // Valid as long as this object lives.
  Env* env();
  const std::string& lock_path() const { return lock_path_; }

 private:
  class LockHoldingEnv;
  DataDirLock(std::string lock_path, std::unique_ptr<FileLock> lock, std::unique_ptr<StoreEnv> store,
              std::unique_ptr<FileLock> store_lock);

  const std::string lock_path_;
  std::unique_ptr<FileLock> lock_;
  std::unique_ptr<StoreEnv> store_;
  std::unique_ptr<FileLock> store_lock_;  // the lock in RADOS; null for a local store
  std::unique_ptr<LockHoldingEnv> env_;
};

}  // namespace tools
}  // namespace dedupv1
