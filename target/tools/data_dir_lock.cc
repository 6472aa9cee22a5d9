#include "target/tools/data_dir_lock.h"

namespace dedupv1 {
namespace tools {

namespace {
// Stands for the lock the DataDirLock already holds.
class HeldLock : public FileLock {};
}  // namespace

class DataDirLock::LockHoldingEnv : public Env {
 public:
  LockHoldingEnv(Env* base, std::string lock_path) : base_(base), lock_path_(std::move(lock_path)) {}

  Status OpenFile(const std::string& path, OpenMode mode, std::unique_ptr<File>* file) override {
    return base_->OpenFile(path, mode, file);
  }
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  Status DeleteFile(const std::string& path) override { return base_->DeleteFile(path); }
  Status RenameFile(const std::string& from, const std::string& to) override {
    return base_->RenameFile(from, to);
  }
  Status LinkFile(const std::string& from, const std::string& to) override { return base_->LinkFile(from, to); }
  Status CreateDirs(const std::string& path) override { return base_->CreateDirs(path); }
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    return base_->GetChildren(dir, names);
  }
  Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }
  Status GetFileSize(const std::string& path, uint64_t* size) override {
    return base_->GetFileSize(path, size);
  }
  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override {
    if (path == lock_path_) {
      lock->reset(new HeldLock());
      return Status::OK();
    }
    return base_->LockFile(path, lock);
  }
  Status GetFreeSpace(const std::string& path, uint64_t* bytes) override {
    return base_->GetFreeSpace(path, bytes);
  }
  size_t PreferredReadSize() const override { return base_->PreferredReadSize(); }

 private:
  Env* const base_;
  const std::string lock_path_;
};

DataDirLock::DataDirLock(std::string lock_path, std::unique_ptr<FileLock> lock, std::unique_ptr<StoreEnv> store,
                         std::unique_ptr<FileLock> store_lock)
    : lock_path_(std::move(lock_path)),
      lock_(std::move(lock)),
      store_(std::move(store)),
      store_lock_(std::move(store_lock)),
      env_(std::make_unique<LockHoldingEnv>(store_->env(), lock_path_)) {}

DataDirLock::~DataDirLock() = default;

Status DataDirLock::Acquire(const Options& options, std::unique_ptr<DataDirLock>* out) {
  const std::string& data_dir = options.data_dir;
  const std::string path = JoinPath(data_dir, "LOCK");
  const std::string in_use = " is in use: another process (tgtd with bs_dedupv1, dedupv1d or another tool) holds ";
  // A rados store's gateway dir holds only runtime files and may be new.
  if (UsesRados(options)) DEDUPV1_RETURN_IF_ERROR(Env::Default()->CreateDirs(data_dir));
  std::unique_ptr<FileLock> lock;
  Status s = Env::Default()->LockFile(path, &lock);
  if (s.IsBusy()) return Status::Busy("data directory " + data_dir + in_use + path + "; stop it first");
  DEDUPV1_RETURN_IF_ERROR(s);
  std::unique_ptr<StoreEnv> store;
  DEDUPV1_RETURN_IF_ERROR(StoreEnv::Open(options, Env::Default(), &store));
  std::unique_ptr<FileLock> store_lock;
  if (UsesRados(options)) {
    s = store->env()->LockFile(path, &store_lock);
    if (s.IsBusy()) return Status::Busy("store " + options.rados.store + in_use + "its lock in RADOS (" + s.message() + ")");
    DEDUPV1_RETURN_IF_ERROR(s);
  }
  out->reset(new DataDirLock(path, std::move(lock), std::move(store), std::move(store_lock)));
  return Status::OK();
}

Env* DataDirLock::env() { return env_.get(); }

}  // namespace tools
}  // namespace dedupv1
