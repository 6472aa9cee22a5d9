#include "index/tc_kv_store.h"

#include <tcbdb.h>
#include <tcutil.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "core/base/coding.h"
#include "core/base/env.h"

namespace dedupv1 {

namespace {

// Tuning for block mappings (~0.1-1 KiB each, 12-byte keys): 64 records per
// leaf keeps a leaf page around 40 KiB, so a read of one mapping also brings
// in its neighbours (sequential backup streams read them next) without
// making every leaf write huge. 1024 cached leaves bound the cache to ~40 MiB.
constexpr int32_t kLeafMembers = 64;
constexpr int32_t kNonLeafMembers = 256;
constexpr int64_t kBuckets = 131071;  // ~1-4x the page count of a few million mappings
constexpr int8_t kAlignPow = 8;
constexpr int8_t kFreePoolPow = 10;
constexpr int32_t kCachedLeaves = 1024;
constexpr int32_t kCachedNonLeaves = 512;

// Tokyo Cabinet checks nothing it reads back: a damaged page is parsed as it
// is, so it yields wrong records, or sizes so absurd that TC's allocation
// fails and TC ends the process ("fatal error: out of memory"). So every page
// of a store this build creates (B+tree leaves and inner nodes, each a record
// of TC's hash layer) carries a CRC-32C, appended by TC's codec hook
// (BDBTEXCODEC) when written and checked when read; a page that fails is
// refused before TC parses it, and the call fails with Corruption naming the
// file. A store created before has no CRCs (TC keeps the option in the file
// header) and is read as before; a build without the hook refuses a store
// that has them (TC will not open it without a codec).
constexpr int kPageCrcBytes = 4;

// Set by DecodePage on this thread, read by TcError: TC itself reports a
// refused page only as "miscellaneous error".
thread_local bool page_damaged = false;

void* EncodePage(const void* ptr, int size, int* sp, void*) {
  char* out = static_cast<char*>(std::malloc(static_cast<size_t>(size) + kPageCrcBytes));
  if (out == nullptr) return nullptr;
  std::memcpy(out, ptr, static_cast<size_t>(size));
  EncodeFixed32(reinterpret_cast<uint8_t*>(out) + size, Crc32c(static_cast<const uint8_t*>(ptr), size));
  *sp = size + kPageCrcBytes;
  return out;
}

void* DecodePage(const void* ptr, int size, int* sp, void*) {
  const auto* p = static_cast<const uint8_t*>(ptr);
  if (size < kPageCrcBytes || Crc32c(p, size - kPageCrcBytes) != DecodeFixed32(p + size - kPageCrcBytes)) {
    page_damaged = true;
    return nullptr;
  }
  const size_t n = static_cast<size_t>(size - kPageCrcBytes);
  char* out = static_cast<char*>(std::malloc(n + 1));
  if (out == nullptr) return nullptr;
  std::memcpy(out, p, n);
  out[n] = '\0';  // as TC's own decoders leave it
  *sp = static_cast<int>(n);
  return out;
}

// The store TC's fatal errors are about (one per process: the block index).
std::mutex fatal_mu;
std::string fatal_path;

// TC ends the process after this returns; the admin learns which file.
void TcFatal(const char* message) {
  std::fprintf(stderr,
               "dedupv1: Tokyo Cabinet ends the process: %s (block index %s; a damaged file can make it read "
               "absurd sizes: run dedupv1_check)\n",
               message, fatal_path.c_str());
}

// IOError, or NoSpace if the failed call left ENOSPC in errno (TC reports
// a failed write only as "write error"), or Corruption if the call read a
// page that failed its CRC.
Status TcError(const std::string& path, const std::string& what, int ecode, int err) {
  std::string msg = path + ": " + what + ": " + tcbdberrmsg(ecode);
  if (page_damaged) {
    page_damaged = false;
    return Status::Corruption(msg + " (a B+tree page fails its checksum: the file is damaged)");
  }
  if (err == ENOSPC || err == EDQUOT) return Status::NoSpace(msg + " (no space left on device)");
  return Status::IOError(msg);
}

class TcKvStore : public KvStore {
 public:
  static Status Open(const std::string& path, Env* env, std::unique_ptr<KvStore>* out);
  ~TcKvStore() override;

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
  TcKvStore(TCBDB* db, std::string path) : db_(db), path_(std::move(path)) {}
  // IOError (NoSpace on ENOSPC) "<path>: <what>: <tcbdberrmsg>".
  Status Error(const std::string& what) const;
  // Applies |ops| inside the open transaction. Requires write_mu_.
  Status ApplyOps(const std::vector<WriteOp>& ops);
  // Commits the open transaction (aborts it on failure). Requires write_mu_.
  Status Commit();

  TCBDB* const db_;
  const std::string path_;
  std::mutex write_mu_;  // one transaction at a time; scans read chunks under it
  // Counts transactions begun (guarded by write_mu_): a scan's cursor stays
  // valid between its chunks only while this is unchanged.
  uint64_t write_generation_ = 0;
};

// A tuned, unopened database handle.
Status NewTunedDb(const std::string& path, TCBDB** out) {
  TCBDB* db = tcbdbnew();
  if (db == nullptr) return Status::IOError(path + ": tcbdbnew failed");
  // The options apply to a store being created; an existing one keeps those
  // in its header (with or without page CRCs).
  if (!tcbdbsetmutex(db) ||
      !tcbdbtune(db, kLeafMembers, kNonLeafMembers, kBuckets, kAlignPow, kFreePoolPow,
                 BDBTLARGE | BDBTEXCODEC) ||
      !tcbdbsetcodecfunc(db, EncodePage, nullptr, DecodePage, nullptr) ||
      !tcbdbsetcache(db, kCachedLeaves, kCachedNonLeaves)) {
    Status s = TcError(path, "setting up the B+tree", tcbdbecode(db), 0);
    tcbdbdel(db);
    return s;
  }
  *out = db;
  return Status::OK();
}

// Creates an empty database at |path| atomically unless one is there. Tokyo
// Cabinet writes a new B+tree's first leaf before its meta data, and a
// process killed between the two leaves a file every later open refuses
// ("invalid meta data"). So the database is made complete under a temporary
// name, synced, and given its name by a hard link, which never replaces an
// existing file (a store created meanwhile by someone else is kept and used);
// a kill leaves either no database or a whole one, and perhaps a temporary
// file the next creation removes.
Status CreateDbAtomically(Env* env, const std::string& path) {
  const std::string creating = path + ".creating";
  // A write-ahead log without its database (deleted by hand) must not be
  // replayed into the new one.
  for (const std::string& leftover : {creating, creating + ".wal", path + ".wal"}) {
    if (env->FileExists(leftover)) DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(leftover));
  }
  TCBDB* db = nullptr;
  DEDUPV1_RETURN_IF_ERROR(NewTunedDb(creating, &db));
  errno = 0;
  if (!tcbdbopen(db, creating.c_str(), BDBOWRITER | BDBOCREAT | BDBOTRUNC | BDBOLCKNB)) {
    Status s = TcError(creating, "creating the B+tree database", tcbdbecode(db), errno);
    tcbdbdel(db);
    return s;
  }
  errno = 0;
  const bool closed = tcbdbclose(db);  // writes the meta data
  const int ecode = tcbdbecode(db);
  const int err = errno;
  tcbdbdel(db);
  if (!closed) return TcError(creating, "closing the new B+tree database", ecode, err);
  std::unique_ptr<File> file;
  DEDUPV1_RETURN_IF_ERROR(env->OpenFile(creating, OpenMode::kReadWrite, &file));
  DEDUPV1_RETURN_IF_ERROR(file->Sync());
  file.reset();
  Status linked = env->LinkFile(creating, path);
  uint64_t size;
  if (!linked.ok() && !env->GetFileSize(path, &size).ok()) return linked;  // failed, and nothing is there
  DEDUPV1_RETURN_IF_ERROR(env->SyncDir(DirName(path)));
  return env->DeleteFile(creating);
}
}  // namespace

Status OpenTcKvStore(const std::string& path, Env* env, std::unique_ptr<KvStore>* out) {
  return TcKvStore::Open(path, env, out);
}

Status TcKvStore::Open(const std::string& path, Env* env, std::unique_ptr<KvStore>* out) {
  // Only a store that is certainly missing is created (an error other than
  // ENOENT, say EIO, is reported, not taken for "missing").
  uint64_t size;
  Status exists = env->GetFileSize(path, &size);
  if (exists.IsNotFound()) {
    DEDUPV1_RETURN_IF_ERROR(CreateDbAtomically(env, path));
  } else if (!exists.ok()) {
    return exists.WithContext("block index store");
  } else if (env->FileExists(path + ".creating")) {
    // A creation killed after the link: a second name of this store, or a
    // creation that lost to another one. Either way not needed.
    DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(path + ".creating"));
  }
  {
    std::lock_guard<std::mutex> l(fatal_mu);
    fatal_path = path;
    tcfatalfunc = TcFatal;
  }
  TCBDB* db = nullptr;
  DEDUPV1_RETURN_IF_ERROR(NewTunedDb(path, &db));
  // BDBOTSYNC: every committed transaction is synced; BDBOLCKNB: a second
  // process fails at once instead of blocking on the file lock.
  errno = 0;
  if (!tcbdbopen(db, path.c_str(), BDBOWRITER | BDBOTSYNC | BDBOLCKNB)) {
    Status s = TcError(path, "opening the B+tree database", tcbdbecode(db), errno);
    tcbdbdel(db);
    return s;
  }
  out->reset(new TcKvStore(db, path));
  return Status::OK();
}

TcKvStore::~TcKvStore() {
  // tcbdbdel closes the database (writing back cached pages) if it is open.
  tcbdbclose(db_);
  tcbdbdel(db_);
}

Status TcKvStore::Error(const std::string& what) const {
  return TcError(path_, what, tcbdbecode(db_), errno);
}

Status TcKvStore::Get(const std::string& key, std::string* value) {
  page_damaged = false;
  int size = 0;
  void* v = tcbdbget(db_, key.data(), static_cast<int>(key.size()), &size);
  if (v == nullptr) {
    if (tcbdbecode(db_) == TCENOREC) return Status::NotFound(path_ + ": key not found");
    return Error("get");
  }
  value->assign(static_cast<const char*>(v), static_cast<size_t>(size));
  std::free(v);
  return Status::OK();
}

Status TcKvStore::ApplyOps(const std::vector<WriteOp>& ops) {
  for (const WriteOp& op : ops) {
    bool ok;
    errno = 0;
    if (op.erase) {
      ok = tcbdbout(db_, op.key.data(), static_cast<int>(op.key.size())) ||
           tcbdbecode(db_) == TCENOREC;
    } else {
      ok = tcbdbput(db_, op.key.data(), static_cast<int>(op.key.size()), op.value.data(),
                    static_cast<int>(op.value.size()));
    }
    if (!ok) return Error(op.erase ? "erase" : "put");
  }
  return Status::OK();
}

Status TcKvStore::Commit() {
  errno = 0;
  if (!tcbdbtrancommit(db_)) {
    Status s = Error("committing a transaction");
    tcbdbtranabort(db_);  // may fail if TC already ended the transaction; s says why
    return s;
  }
  return Status::OK();
}

Status TcKvStore::Write(const std::vector<WriteOp>& ops) {
  page_damaged = false;
  if (ops.empty()) return Status::OK();
  std::lock_guard<std::mutex> lock(write_mu_);
  errno = 0;
  if (!tcbdbtranbegin(db_)) return Error("beginning a transaction");
  write_generation_++;
  Status s = ApplyOps(ops);
  if (!s.ok()) {
    tcbdbtranabort(db_);
    return s;
  }
  return Commit();
}

Status TcKvStore::RemoveExactThenWrite(const std::vector<Record>& records, const std::vector<WriteOp>& ops,
                                       uint64_t* removed) {
  page_damaged = false;
  *removed = 0;
  std::set<std::pair<std::string, std::string>> wanted;
  for (const Record& r : records) wanted.emplace(r.key, r.value);
  std::lock_guard<std::mutex> lock(write_mu_);
  errno = 0;
  if (!tcbdbtranbegin(db_)) return Error("beginning a transaction");
  write_generation_++;
  // A cursor walks the leaves in their chained order and removes the record
  // it stands on, so the record meant is removed even where a lookup by key
  // would find another one or none.
  Status s;
  uint64_t n = 0;
  std::set<std::pair<std::string, std::string>> found;
  if (!wanted.empty()) {
    BDBCUR* cur = tcbdbcurnew(db_);
    if (cur == nullptr) {
      s = Error("creating a cursor");
    } else {
      TCXSTR* kx = tcxstrnew();
      TCXSTR* vx = tcxstrnew();
      bool positioned = tcbdbcurfirst(cur);
      if (!positioned && tcbdbecode(db_) != TCENOREC) s = Error("positioning a cursor");
      while (s.ok() && positioned) {
        tcxstrclear(kx);
        tcxstrclear(vx);
        if (!tcbdbcurrec(cur, kx, vx)) {
          if (tcbdbecode(db_) != TCENOREC) s = Error("reading at a cursor");
          break;
        }
        std::pair<std::string, std::string> record(
            std::string(static_cast<const char*>(tcxstrptr(kx)), tcxstrsize(kx)),
            std::string(static_cast<const char*>(tcxstrptr(vx)), tcxstrsize(vx)));
        if (wanted.count(record) != 0) {
          // Moves the cursor to the next record, if there is one.
          if (!tcbdbcurout(cur)) {
            s = Error("removing a record at a cursor");
            break;
          }
          found.insert(std::move(record));
          n++;
          continue;
        }
        positioned = tcbdbcurnext(cur);
        if (!positioned && tcbdbecode(db_) != TCENOREC) s = Error("moving a cursor");
      }
      tcxstrdel(vx);
      tcxstrdel(kx);
      tcbdbcurdel(cur);
    }
  }
  if (s.ok() && found.size() != wanted.size()) {
    s = Status::Aborted(path_ + ": " + std::to_string(wanted.size() - found.size()) + " of " +
                        std::to_string(wanted.size()) + " records to remove are not in the store (it changed)");
  }
  if (s.ok()) s = ApplyOps(ops);
  if (!s.ok()) {
    tcbdbtranabort(db_);
    return s;
  }
  DEDUPV1_RETURN_IF_ERROR(Commit());
  *removed = n;
  return Status::OK();
}

Status TcKvStore::Scan(const std::string& begin, const std::string& end,
                       const std::function<bool(const std::string&, const std::string&)>& f) {
  page_damaged = false;
  // The records are read in chunks under write_mu_ and f runs without any
  // lock held. A TC cursor's position is undefined once the database
  // changes: while no write came in between, the next chunk continues with
  // the same cursor (so a damaged store, whose keys are not in order, is
  // still walked record by record); after a write it jumps past the last
  // key seen.
  constexpr size_t kChunk = 256;
  BDBCUR* cur = tcbdbcurnew(db_);
  if (cur == nullptr) return Error("creating a cursor");
  TCXSTR* kx = tcxstrnew();
  TCXSTR* vx = tcxstrnew();
  struct Cleanup {
    BDBCUR* cur;
    TCXSTR* kx;
    TCXSTR* vx;
    ~Cleanup() {
      tcxstrdel(vx);
      tcxstrdel(kx);
      tcbdbcurdel(cur);
    }
  } cleanup{cur, kx, vx};
  std::string from = begin;
  bool first = true;
  uint64_t generation = 0;
  std::vector<std::pair<std::string, std::string>> records;
  for (;;) {
    records.clear();
    bool at_end = false;
    {
      std::lock_guard<std::mutex> lock(write_mu_);
      bool positioned = true;
      if (first || generation != write_generation_) {
        positioned = tcbdbcurjump(cur, from.data(), static_cast<int>(from.size()));
        if (!positioned && tcbdbecode(db_) != TCENOREC) return Error("positioning a cursor");
      }
      first = false;
      generation = write_generation_;
      while (positioned && records.size() < kChunk) {
        tcxstrclear(kx);
        tcxstrclear(vx);
        if (!tcbdbcurrec(cur, kx, vx)) {
          if (tcbdbecode(db_) != TCENOREC) return Error("reading at a cursor");
          positioned = false;
          break;
        }
        std::string key(static_cast<const char*>(tcxstrptr(kx)), tcxstrsize(kx));
        if (!end.empty() && key >= end) {
          positioned = false;
          break;
        }
        records.emplace_back(std::move(key), std::string(static_cast<const char*>(tcxstrptr(vx)),
                                                         tcxstrsize(vx)));
        positioned = tcbdbcurnext(cur);
        if (!positioned && tcbdbecode(db_) != TCENOREC) return Error("moving a cursor");
      }
      at_end = !positioned;
    }
    for (const auto& [key, value] : records) {
      if (!f(key, value)) return Status::OK();
    }
    if (at_end || records.empty()) return Status::OK();
    // Where to jump if a write invalidates the cursor: past the last key seen.
    from = records.back().first;
    from.push_back('\0');
  }
}

Status TcKvStore::Sync() {
  std::lock_guard<std::mutex> lock(write_mu_);
  errno = 0;
  if (!tcbdbsync(db_)) return Error("sync");
  return Status::OK();
}

uint64_t TcKvStore::Count() { return tcbdbrnum(db_); }

uint64_t TcKvStore::SizeBytes() { return tcbdbfsiz(db_); }

}  // namespace dedupv1
