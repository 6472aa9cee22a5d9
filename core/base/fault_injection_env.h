// FaultInjectionEnv wraps another Env and makes chosen operations fail, so
// tests can prove that every write site turns ENOSPC, EIO and torn writes into
// a clear error or a clean recovery. Faults are rules matched against the
// operation kind and a substring of the file path; each rule fires after
// |skip| matching operations and then |count| times (-1: forever).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/env.h"

namespace dedupv1 {

class FaultInjectionEnv : public Env {
 public:
  enum class Op { kRead, kWrite, kSync, kOpen, kRename, kAllocate };
  enum class Fault {
    kEIO,     // the operation fails with an I/O error
    kENOSPC,  // the operation fails with "no space left on device"
    kTorn,    // a write stores only its first |torn_bytes| bytes, then fails with EIO
  };
  struct Rule {
    Op op;
    std::string path_substring;  // empty matches every file
    Fault fault = Fault::kEIO;
    int skip = 0;     // matching operations let through before the rule fires
    int count = -1;   // times the rule fires; -1 = forever
    size_t torn_bytes = 0;
  };

  explicit FaultInjectionEnv(Env* base) : base_(base) {}

  void AddRule(const Rule& rule);
  void ClearRules();
  // Number of times any rule fired.
  int faults_fired() const { return fired_.load(); }

  // Returns the fault to apply to this operation, if any (consumes the rule).
  bool Check(Op op, const std::string& path, Fault* fault, size_t* torn_bytes);

  Status OpenFile(const std::string& path, OpenMode mode, std::unique_ptr<File>* file) override;
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  Status DeleteFile(const std::string& path) override { return base_->DeleteFile(path); }
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status LinkFile(const std::string& from, const std::string& to) override;  // faults as a rename of |to|
  Status CreateDirs(const std::string& path) override { return base_->CreateDirs(path); }
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    return base_->GetChildren(dir, names);
  }
  Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }
  Status GetFileSize(const std::string& path, uint64_t* size) override {
    return base_->GetFileSize(path, size);
  }
  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override {
    return base_->LockFile(path, lock);
  }
  Status GetFreeSpace(const std::string& path, uint64_t* bytes) override {
    return base_->GetFreeSpace(path, bytes);
  }
  size_t PreferredReadSize() const override { return base_->PreferredReadSize(); }

  static Status FaultStatus(Fault fault, const std::string& what);

 private:
  struct ActiveRule {
    Rule rule;
    int seen = 0;
    int fired = 0;
  };
  Env* base_;
  std::mutex mu_;
  std::vector<ActiveRule> rules_;
  std::atomic<int> fired_{0};
};

}  // namespace dedupv1
