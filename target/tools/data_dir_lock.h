// DataDirLock holds a data directory's LOCK file (the flock DedupSystem takes)
// for an offline tool's whole run, so no other process (tgtd with the
// bs_dedupv1 module, dedupv1d, another tool) can open the store between the
// tool's steps: reading the log before DedupSystem opens, the open system
// itself, and repairs applied after it closed.
//
// flock locks belong to an open file description, so DedupSystem::Open
// taking the same lock again would fail against our own lock. env() is
// therefore an Env that forwards everything to Env::Default() except
// LockFile on this LOCK path, which succeeds without locking (the lock is
// already held, by this object): pass it to DedupSystem::Open and to the
// components a tool opens directly.
#pragma once

#include <memory>
#include <string>

#include "core/base/env.h"
#include "core/base/status.h"

namespace dedupv1 {
namespace tools {

class DataDirLock {
 public:
  // Takes DATA_DIR/LOCK. Busy naming the directory if another process has
  // it open.
  static Status Acquire(const std::string& data_dir, std::unique_ptr<DataDirLock>* out);
  ~DataDirLock();

  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

  // Valid as long as this object lives.
  Env* env();
  const std::string& lock_path() const { return lock_path_; }

 private:
  class LockHoldingEnv;
  DataDirLock(std::string lock_path, std::unique_ptr<FileLock> lock);

  const std::string lock_path_;
  std::unique_ptr<FileLock> lock_;
  std::unique_ptr<LockHoldingEnv> env_;
};

}  // namespace tools
}  // namespace dedupv1
