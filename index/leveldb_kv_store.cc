#include "index/leveldb_kv_store.h"

#include <sys/resource.h>

#include <algorithm>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/filter_policy.h>
#include <leveldb/write_batch.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "core/base/env.h"
#include "index/leveldb_env_adapter.h"

namespace dedupv1 {

namespace {

constexpr size_t kBlockCacheBytes = 32 << 20;
constexpr int kBloomBitsPerKey = 10;

Status FromLevelDb(const leveldb::Status& s, const std::string& path, const std::string& what) {
  if (s.ok()) return Status::OK();
  std::string msg = path + ": " + what + ": " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsNotSupportedError()) return Status::NotSupported(msg);
  if (msg.find("No space left on device") != std::string::npos ||
      msg.find("Disk quota exceeded") != std::string::npos) {
    return Status::NoSpace(msg);
  }
  return Status::IOError(msg);
}

leveldb::ReadOptions CheckedRead() {
  leveldb::ReadOptions options;
  options.verify_checksums = true;
  return options;
}

class LevelDbKvStore : public KvStore {
 public:
  static Status Open(const std::string& path, Env* env, std::unique_ptr<KvStore>* out);
  ~LevelDbKvStore() override;

  Status Get(const std::string& key, std::string* value) override;
  Status Write(const std::vector<WriteOp>& ops) override;
  Status Scan(const std::string& begin, const std::string& end,
              const std::function<bool(const std::string&, const std::string&)>& f) override;
  Status RemoveExactThenWrite(const std::vector<Record>& records, const std::vector<WriteOp>& ops,
                              uint64_t* removed) override;
  Status Sync() override;
  uint64_t Count() override;
  uint64_t SizeBytes() override;

 private:
  LevelDbKvStore(std::string path, Env* env);
  // Opens the database (db_ must be null; requires db_mu_ exclusively) and
  // counts its records.
  Status OpenDb();
  // A shared hold of db_mu_ with an open database: reopens it first if a
  // failed write closed it (LevelDB turns a failed write of its log into a
  // permanent error of the open database; on RADOS that is what a cluster
  // outage does, so the store closes the database and the next call opens it
  // again, which replays LevelDB's log).
  Status HoldDb(std::shared_lock<std::shared_mutex>* hold);
  // After |s| from a write: on an I/O error, closes the database (see
  // HoldDb). Returns |s|. Requires write_mu_, and no hold of db_mu_.
  Status CloseAfterWriteError(Status s);
  // Adds |ops| to |batch|; *delta is the change in the record count.
  // |exists| says whether a key exists after the ops so far (filled from
  // the database on first use). Requires write_mu_.
  Status AddOps(const std::vector<WriteOp>& ops, std::unordered_map<std::string, bool>* exists,
                leveldb::WriteBatch* batch, int64_t* delta);
  // RemoveExactThenWrite with write_mu_ and a hold of the open database.
  Status RemoveExactThenWriteLocked(const std::vector<Record>& records, const std::vector<WriteOp>& ops,
                                    uint64_t* removed);

  const std::string path_;
  Env* const env_;
  std::unique_ptr<leveldb::Env> leveldb_env_;  // our Env, as LevelDB sees it
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
  leveldb::Options options_;
  std::unique_ptr<leveldb::DB> db_;  // declared last: closed first; null after a write error
  std::shared_mutex db_mu_;          // exclusive to close or open db_
  std::mutex write_mu_;              // keeps count_ exact; taken before db_mu_
  std::atomic<uint64_t> count_{0};
};

}  // namespace

Status OpenLevelDbKvStore(const std::string& path, Env* env, std::unique_ptr<KvStore>* out) {
  return LevelDbKvStore::Open(path, env, out);
}

namespace {

// Through our Env every table LevelDB keeps open holds a file descriptor
// (LevelDB's own POSIX Env maps up to 1000 tables and closes their fds). The
// store lives inside tgtd beside containers and iSCSI connections, so its
// table cache gets a fifth of the descriptor limit, as LevelDB gives its own
// unmapped files, between LevelDB's minimum and its default.
int MaxOpenTables() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1000;
  return static_cast<int>(std::clamp<rlim_t>(limit.rlim_cur / 5, 74, 1000));
}

}  // namespace

LevelDbKvStore::LevelDbKvStore(std::string path, Env* env)
    : path_(std::move(path)), env_(env), leveldb_env_(NewLevelDbEnvAdapter(env)) {}

Status LevelDbKvStore::Open(const std::string& path, Env* env, std::unique_ptr<KvStore>* out) {
  std::unique_ptr<LevelDbKvStore> store(new LevelDbKvStore(path, env));
  store->cache_.reset(leveldb::NewLRUCache(kBlockCacheBytes));
  store->filter_.reset(leveldb::NewBloomFilterPolicy(kBloomBitsPerKey));
  leveldb::Options& options = store->options_;
  options.env = store->leveldb_env_.get();
  options.create_if_missing = true;
  options.paranoid_checks = true;
  options.block_cache = store->cache_.get();
  options.filter_policy = store->filter_.get();
  options.max_open_files = MaxOpenTables();
  // A table block is LevelDB's unit of reading: scans (the record count
  // below, compactions) read every block, one read each. On RADOS 4 KiB
  // blocks made a fresh gateway's open of a 10 GiB store 21,640 reads.
  // Each table records its own block boundaries, so tables written with
  // another size stay readable.
  options.block_size = std::max<size_t>(options.block_size, env->PreferredReadSize());
  {
    std::unique_lock<std::shared_mutex> l(store->db_mu_);
    DEDUPV1_RETURN_IF_ERROR(store->OpenDb());
  }
  *out = std::move(store);
  return Status::OK();
}

Status LevelDbKvStore::OpenDb() {
  leveldb::DB* db = nullptr;
  DEDUPV1_RETURN_IF_ERROR(FromLevelDb(leveldb::DB::Open(options_, path_, &db), path_, "opening the database"));
  db_.reset(db);
  // LevelDB keeps no record count: count at every open, then keep it exact
  // in Write. (After a reopen a batch whose write failed may have reached
  // LevelDB's log and been replayed, so the count is taken again.)
  leveldb::ReadOptions scan = CheckedRead();
  scan.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(scan));
  uint64_t count = 0;
  for (it->SeekToFirst(); it->Valid(); it->Next()) count++;
  Status s = FromLevelDb(it->status(), path_, "counting records");
  it.reset();
  if (!s.ok()) {
    db_.reset();
    return s;
  }
  count_ = count;
  return Status::OK();
}

Status LevelDbKvStore::HoldDb(std::shared_lock<std::shared_mutex>* hold) {
  *hold = std::shared_lock<std::shared_mutex>(db_mu_);
  if (db_ != nullptr) return Status::OK();
  hold->unlock();
  {
    std::unique_lock<std::shared_mutex> l(db_mu_);
    if (db_ == nullptr) {
      Status s = OpenDb();
      if (!s.ok()) return s.WithContext("reopening after a failed write");
    }
  }
  hold->lock();
  if (db_ == nullptr) return Status::IOError(path_ + ": the database was closed again after a failed write");
  return Status::OK();
}

Status LevelDbKvStore::CloseAfterWriteError(Status s) {
  if (s.IsIOError()) {
    std::unique_lock<std::shared_mutex> l(db_mu_);
    db_.reset();
  }
  return s;
}

LevelDbKvStore::~LevelDbKvStore() {
  db_.reset();  // before the cache, filter policy and Env it uses
}

Status LevelDbKvStore::Get(const std::string& key, std::string* value) {
  std::shared_lock<std::shared_mutex> hold;
  DEDUPV1_RETURN_IF_ERROR(HoldDb(&hold));
  leveldb::Status s = db_->Get(CheckedRead(), key, value);
  if (s.IsNotFound()) return Status::NotFound(path_ + ": key not found");
  return FromLevelDb(s, path_, "get");
}

Status LevelDbKvStore::AddOps(const std::vector<WriteOp>& ops, std::unordered_map<std::string, bool>* exists,
                              leveldb::WriteBatch* batch, int64_t* delta) {
  for (const WriteOp& op : ops) {
    auto it = exists->find(op.key);
    bool existed;
    if (it != exists->end()) {
      existed = it->second;
    } else {
      std::string ignored;
      leveldb::Status s = db_->Get(CheckedRead(), op.key, &ignored);
      if (!s.ok() && !s.IsNotFound()) return FromLevelDb(s, path_, "get before write");
      existed = s.ok();
    }
    if (op.erase) {
      batch->Delete(op.key);
      if (existed) (*delta)--;
    } else {
      batch->Put(op.key, op.value);
      if (!existed) (*delta)++;
    }
    (*exists)[op.key] = !op.erase;
  }
  return Status::OK();
}

Status LevelDbKvStore::Write(const std::vector<WriteOp>& ops) {
  if (ops.empty()) return Status::OK();
  std::lock_guard<std::mutex> lock(write_mu_);
  Status s;
  {
    std::shared_lock<std::shared_mutex> hold;
    DEDUPV1_RETURN_IF_ERROR(HoldDb(&hold));
    std::unordered_map<std::string, bool> exists;
    int64_t delta = 0;
    leveldb::WriteBatch batch;
    DEDUPV1_RETURN_IF_ERROR(AddOps(ops, &exists, &batch, &delta));
    leveldb::WriteOptions options;
    options.sync = true;
    s = FromLevelDb(db_->Write(options, &batch), path_, "write");
    if (s.ok()) count_ += static_cast<uint64_t>(delta);  // wraps correctly for negative deltas
  }
  return CloseAfterWriteError(s);
}

Status LevelDbKvStore::RemoveExactThenWrite(const std::vector<Record>& records, const std::vector<WriteOp>& ops,
                                            uint64_t* removed) {
  *removed = 0;
  std::lock_guard<std::mutex> lock(write_mu_);
  Status s;
  {
    std::shared_lock<std::shared_mutex> hold;
    DEDUPV1_RETURN_IF_ERROR(HoldDb(&hold));
    s = RemoveExactThenWriteLocked(records, ops, removed);
  }
  return CloseAfterWriteError(s);
}

Status LevelDbKvStore::RemoveExactThenWriteLocked(const std::vector<Record>& records,
                                                  const std::vector<WriteOp>& ops, uint64_t* removed) {
  // LevelDB keeps one value per key in key order (its blocks carry their
  // own checksums), so the record meant is the one a lookup finds.
  std::unordered_map<std::string, bool> exists;
  int64_t delta = 0;
  uint64_t n = 0;
  leveldb::WriteBatch batch;
  for (const Record& r : records) {
    auto it = exists.find(r.key);
    if (it != exists.end() && !it->second) continue;  // removed already
    std::string value;
    leveldb::Status s = db_->Get(CheckedRead(), r.key, &value);
    if (!s.ok() && !s.IsNotFound()) return FromLevelDb(s, path_, "get before removal");
    if (!s.ok() || value != r.value) {
      return Status::Aborted(path_ + ": a record to remove is not in the store (it changed)");
    }
    batch.Delete(r.key);
    exists[r.key] = false;
    delta--;
    n++;
  }
  DEDUPV1_RETURN_IF_ERROR(AddOps(ops, &exists, &batch, &delta));
  leveldb::WriteOptions options;
  options.sync = true;
  DEDUPV1_RETURN_IF_ERROR(FromLevelDb(db_->Write(options, &batch), path_, "write"));
  count_ += static_cast<uint64_t>(delta);
  *removed = n;
  return Status::OK();
}

Status LevelDbKvStore::Scan(const std::string& begin, const std::string& end,
                            const std::function<bool(const std::string&, const std::string&)>& f) {
  std::shared_lock<std::shared_mutex> hold;
  DEDUPV1_RETURN_IF_ERROR(HoldDb(&hold));
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(CheckedRead()));
  for (it->Seek(begin); it->Valid(); it->Next()) {
    std::string key = it->key().ToString();
    if (!end.empty() && key >= end) break;
    if (!f(key, it->value().ToString())) break;
  }
  return FromLevelDb(it->status(), path_, "scan");
}

Status LevelDbKvStore::Sync() {
  // Every Write is already synced; an empty synced batch also syncs the log
  // in case that ever changes.
  std::lock_guard<std::mutex> lock(write_mu_);
  Status s;
  {
    std::shared_lock<std::shared_mutex> hold;
    DEDUPV1_RETURN_IF_ERROR(HoldDb(&hold));
    leveldb::WriteOptions options;
    options.sync = true;
    leveldb::WriteBatch empty;
    s = FromLevelDb(db_->Write(options, &empty), path_, "sync");
  }
  return CloseAfterWriteError(s);
}

uint64_t LevelDbKvStore::Count() { return count_.load(); }

uint64_t LevelDbKvStore::SizeBytes() {
  std::vector<std::string> names;
  if (!env_->GetChildren(path_, &names).ok()) return 0;
  uint64_t total = 0;
  for (const std::string& name : names) {
    uint64_t size = 0;
    if (env_->GetFileSize(JoinPath(path_, name), &size).ok()) total += size;
  }
  return total;
}

}  // namespace dedupv1
