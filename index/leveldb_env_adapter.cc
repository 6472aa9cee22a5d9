#include "index/leveldb_env_adapter.h"

#include <sys/time.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/env.h"

namespace dedupv1 {

namespace {

// LevelDB's own POSIX files buffer appends in 64 KiB; so do these. A table
// is written in pieces of up to 1 MiB (one RADOS round trip each).
constexpr size_t kWriteBufferBytes = 64 << 10;
constexpr size_t kTableBufferBytes = 1 << 20;

leveldb::Status ToLevelDb(const Status& s) {
  if (s.ok()) return leveldb::Status::OK();
  if (s.IsNotFound()) return leveldb::Status::NotFound(s.ToString());
  if (s.IsNoSpace()) {
    // leveldb_kv_store.cc recognises a full disk by this text.
    return leveldb::Status::IOError(s.ToString(), "No space left on device");
  }
  return leveldb::Status::IOError(s.ToString());
}

std::string BaseName(const std::string& path) {
  size_t pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

// Sequential reads (write-ahead logs and the MANIFEST at open). Our File
// refuses reads past the end, so each read is cut to the current size, and a
// read at the end returns nothing, as LevelDB expects.
class SequentialFileAdapter : public leveldb::SequentialFile {
 public:
  explicit SequentialFileAdapter(std::unique_ptr<File> file) : file_(std::move(file)) {}

  leveldb::Status Read(size_t n, leveldb::Slice* result, char* scratch) override {
    uint64_t size = 0;
    Status s = file_->Size(&size);
    if (!s.ok()) return ToLevelDb(s);
    const size_t len = pos_ >= size ? 0 : static_cast<size_t>(std::min<uint64_t>(n, size - pos_));
    if (len > 0) {
      s = file_->Read(pos_, len, scratch);
      if (!s.ok()) return ToLevelDb(s);
    }
    pos_ += len;
    *result = leveldb::Slice(scratch, len);
    return leveldb::Status::OK();
  }

  leveldb::Status Skip(uint64_t n) override {
    pos_ += n;
    return leveldb::Status::OK();
  }

 private:
  std::unique_ptr<File> file_;
  uint64_t pos_ = 0;
};

// Positional reads of table files. A table never changes once written, so
// its size is taken once at open; reads are cut to it like pread would.
class RandomAccessFileAdapter : public leveldb::RandomAccessFile {
 public:
  RandomAccessFileAdapter(std::unique_ptr<File> file, uint64_t size) : file_(std::move(file)), size_(size) {}

  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result, char* scratch) const override {
    const size_t len = offset >= size_ ? 0 : static_cast<size_t>(std::min<uint64_t>(n, size_ - offset));
    if (len > 0) {
      Status s = file_->Read(offset, len, scratch);
      if (!s.ok()) return ToLevelDb(s);
    }
    *result = leveldb::Slice(scratch, len);
    return leveldb::Status::OK();
  }

 private:
  const std::unique_ptr<File> file_;  // File::Read is thread-safe
  const uint64_t size_;
};

// Appends (tables, logs, MANIFEST, CURRENT's temporary file, the info LOG),
// buffered until Flush, Sync, Close or a full buffer. Syncing a MANIFEST also
// syncs its directory, so a new MANIFEST's name is durable before CURRENT
// points at it (as LevelDB's POSIX environment does).
//
// A table (.ldb, .sst) ignores Flush: LevelDB flushes after every 4 KiB
// block it adds to a table, but reads a table only after it synced and
// closed it, so the blocks can wait for Sync, Close or a full buffer. On
// RADOS (core/rados/rados_env.h) every write is a round trip; a 2 MiB table
// was ~500 of them.
class WritableFileAdapter : public leveldb::WritableFile {
 public:
  WritableFileAdapter(Env* env, std::unique_ptr<File> file, uint64_t offset)
      : env_(env), file_(std::move(file)), offset_(offset),
        is_manifest_(BaseName(file_->path()).rfind("MANIFEST", 0) == 0),
        is_table_(EndsWith(file_->path(), ".ldb") || EndsWith(file_->path(), ".sst")) {}
  ~WritableFileAdapter() override {
    if (file_ != nullptr) Close();
  }

  leveldb::Status Append(const leveldb::Slice& data) override {
    const size_t limit = is_table_ ? kTableBufferBytes : kWriteBufferBytes;
    if (buffer_.size() + data.size() > limit) {
      leveldb::Status s = WriteBuffered();
      if (!s.ok()) return s;
      if (data.size() > limit) return WriteAt(data.data(), data.size());
    }
    buffer_.append(data.data(), data.size());
    return leveldb::Status::OK();
  }

  leveldb::Status Flush() override {
    if (is_table_) return leveldb::Status::OK();
    return WriteBuffered();
  }

  leveldb::Status Sync() override {
    leveldb::Status s = WriteBuffered();
    if (!s.ok()) return s;
    if (is_manifest_) {
      s = ToLevelDb(env_->SyncDir(DirName(file_->path())));
      if (!s.ok()) return s;
    }
    return ToLevelDb(file_->Sync());
  }

  leveldb::Status Close() override {
    if (file_ == nullptr) return leveldb::Status::OK();
    leveldb::Status s = WriteBuffered();
    file_.reset();
    return s;
  }

 private:
  static bool EndsWith(const std::string& s, const char* suffix) {
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
  }

  leveldb::Status WriteBuffered() {
    if (buffer_.empty()) return leveldb::Status::OK();
    leveldb::Status s = WriteAt(buffer_.data(), buffer_.size());
    buffer_.clear();
    return s;
  }

  leveldb::Status WriteAt(const char* data, size_t n) {
    Status s = file_->Write(offset_, data, n);
    if (!s.ok()) return ToLevelDb(s);
    offset_ += n;
    return leveldb::Status::OK();
  }

  Env* const env_;
  std::unique_ptr<File> file_;
  uint64_t offset_;
  const bool is_manifest_;
  const bool is_table_;  // Flush waits for Sync, Close or a full buffer
  std::string buffer_;
};

// LevelDB's info log (the LOG file in the database directory): one line per
// message with a time stamp and the thread, written through the adapter's
// file so it goes through our Env too.
class LoggerAdapter : public leveldb::Logger {
 public:
  explicit LoggerAdapter(std::unique_ptr<WritableFileAdapter> file) : file_(std::move(file)) {}

  void Logv(const char* format, std::va_list ap) override {
    struct timeval now;
    ::gettimeofday(&now, nullptr);
    struct tm t;
    ::localtime_r(&now.tv_sec, &t);
    char prefix[64];
    std::snprintf(prefix, sizeof(prefix), "%04d/%02d/%02d-%02d:%02d:%02d.%06d %zx ", t.tm_year + 1900,
                  t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, static_cast<int>(now.tv_usec),
                  std::hash<std::thread::id>()(std::this_thread::get_id()));
    std::va_list copy;
    va_copy(copy, ap);
    const int n = std::vsnprintf(nullptr, 0, format, copy);
    va_end(copy);
    std::string line(prefix);
    if (n > 0) {
      std::vector<char> text(static_cast<size_t>(n) + 1);
      std::vsnprintf(text.data(), text.size(), format, ap);
      line.append(text.data(), static_cast<size_t>(n));
    }
    if (line.back() != '\n') line.push_back('\n');
    std::lock_guard<std::mutex> lock(mu_);
    // The info log is advice for people; a failed write of it fails nothing.
    file_->Append(line);
    file_->Flush();
  }

 private:
  std::mutex mu_;
  std::unique_ptr<WritableFileAdapter> file_;
};

class FileLockAdapter : public leveldb::FileLock {
 public:
  explicit FileLockAdapter(std::unique_ptr<dedupv1::FileLock> lock) : lock_(std::move(lock)) {}

 private:
  std::unique_ptr<dedupv1::FileLock> lock_;  // released when destroyed
};

class LevelDbEnvAdapter : public leveldb::EnvWrapper {
 public:
  // (Inside this class "Env" is leveldb::Env, so ours is spelled in full.)
  explicit LevelDbEnvAdapter(dedupv1::Env* env) : leveldb::EnvWrapper(leveldb::Env::Default()), env_(env) {}

  leveldb::Status NewSequentialFile(const std::string& fname, leveldb::SequentialFile** result) override {
    *result = nullptr;
    std::unique_ptr<File> file;
    Status s = env_->OpenFile(fname, OpenMode::kReadOnly, &file);
    if (!s.ok()) return ToLevelDb(s);
    *result = new SequentialFileAdapter(std::move(file));
    return leveldb::Status::OK();
  }

  leveldb::Status NewRandomAccessFile(const std::string& fname, leveldb::RandomAccessFile** result) override {
    *result = nullptr;
    std::unique_ptr<File> file;
    Status s = env_->OpenFile(fname, OpenMode::kReadOnly, &file);
    uint64_t size = 0;
    if (s.ok()) s = file->Size(&size);
    if (!s.ok()) return ToLevelDb(s);
    *result = new RandomAccessFileAdapter(std::move(file), size);
    return leveldb::Status::OK();
  }

  leveldb::Status NewWritableFile(const std::string& fname, leveldb::WritableFile** result) override {
    *result = nullptr;
    std::unique_ptr<WritableFileAdapter> file;
    leveldb::Status s = OpenForAppend(fname, OpenMode::kTruncate, &file);
    if (s.ok()) *result = file.release();
    return s;
  }

  leveldb::Status NewAppendableFile(const std::string& fname, leveldb::WritableFile** result) override {
    *result = nullptr;
    std::unique_ptr<WritableFileAdapter> file;
    leveldb::Status s = OpenForAppend(fname, OpenMode::kCreate, &file);
    if (s.ok()) *result = file.release();
    return s;
  }

  bool FileExists(const std::string& fname) override { return env_->FileExists(fname); }

  leveldb::Status GetChildren(const std::string& dir, std::vector<std::string>* result) override {
    result->clear();
    return ToLevelDb(env_->GetChildren(dir, result));
  }

  leveldb::Status RemoveFile(const std::string& fname) override { return ToLevelDb(env_->DeleteFile(fname)); }

  leveldb::Status CreateDir(const std::string& dirname) override { return ToLevelDb(env_->CreateDirs(dirname)); }

  leveldb::Status GetFileSize(const std::string& fname, uint64_t* file_size) override {
    *file_size = 0;
    return ToLevelDb(env_->GetFileSize(fname, file_size));
  }

  leveldb::Status RenameFile(const std::string& src, const std::string& target) override {
    return ToLevelDb(env_->RenameFile(src, target));
  }

  leveldb::Status LockFile(const std::string& fname, leveldb::FileLock** lock) override {
    *lock = nullptr;
    std::unique_ptr<dedupv1::FileLock> held;
    Status s = env_->LockFile(fname, &held);
    if (!s.ok()) return leveldb::Status::IOError(s.ToString());  // Busy included
    *lock = new FileLockAdapter(std::move(held));
    return leveldb::Status::OK();
  }

  leveldb::Status UnlockFile(leveldb::FileLock* lock) override {
    delete lock;
    return leveldb::Status::OK();
  }

  leveldb::Status NewLogger(const std::string& fname, leveldb::Logger** result) override {
    *result = nullptr;
    std::unique_ptr<WritableFileAdapter> file;
    leveldb::Status s = OpenForAppend(fname, OpenMode::kTruncate, &file);
    if (s.ok()) *result = new LoggerAdapter(std::move(file));
    return s;
  }

 private:
  // Opens |fname| with |mode| for appending at its current end.
  leveldb::Status OpenForAppend(const std::string& fname, OpenMode mode, std::unique_ptr<WritableFileAdapter>* out) {
    std::unique_ptr<File> file;
    Status s = env_->OpenFile(fname, mode, &file);
    uint64_t size = 0;
    if (s.ok()) s = file->Size(&size);
    if (!s.ok()) return ToLevelDb(s);
    out->reset(new WritableFileAdapter(env_, std::move(file), size));
    return leveldb::Status::OK();
  }

  dedupv1::Env* const env_;
};

}  // namespace

std::unique_ptr<leveldb::Env> NewLevelDbEnvAdapter(Env* env) { return std::make_unique<LevelDbEnvAdapter>(env); }

}  // namespace dedupv1
