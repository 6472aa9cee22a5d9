// Env is the narrow interface through which the engine touches files. Every
// component takes an Env* so tests can substitute FaultInjectionEnv and inject
// torn writes, ENOSPC and EIO at any write site. Env::Default() is the POSIX
// implementation; it is stateless and shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace dedupv1 {

// A file opened for positional I/O. Thread-safe for concurrent Read/Write at
// different offsets (pread/pwrite semantics).
class File {
 public:
  virtual ~File() = default;
  // Reads exactly |n| bytes at |offset|. A read past the end of the file is an
  // IOError naming the file ("short read"), never silently zero-filled.
  virtual Status Read(uint64_t offset, size_t n, void* buf) = 0;
  // Writes exactly |n| bytes at |offset|, extending the file if needed.
  virtual Status Write(uint64_t offset, const void* data, size_t n) = 0;
  // Makes all written data durable (fdatasync).
  virtual Status Sync() = 0;
  virtual Status Size(uint64_t* size) = 0;
  virtual Status Truncate(uint64_t size) = 0;
  // Reserves space for [offset, offset+len) so later writes cannot fail with
  // ENOSPC (posix_fallocate).
  virtual Status Allocate(uint64_t offset, uint64_t len) = 0;
  virtual const std::string& path() const = 0;
};

// Holds an exclusive advisory lock on a file until destroyed.
class FileLock {
 public:
  virtual ~FileLock() = default;
};

enum class OpenMode {
  kReadOnly,      // must exist
  kReadWrite,     // must exist
  kCreate,        // read-write, created if missing
  kCreateNew,     // read-write, fails if it exists
  kTruncate,      // read-write, created if missing, truncated to zero
};

class Env {
 public:
  virtual ~Env() = default;
  // The process-wide POSIX Env. Never deleted.
  static Env* Default();

  virtual Status OpenFile(const std::string& path, OpenMode mode, std::unique_ptr<File>* file) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  virtual Status DeleteFile(const std::string& path) = 0;
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Gives |from| the second name |to| (a hard link); fails if |to| exists, so
  // unlike RenameFile it never replaces a file.
  virtual Status LinkFile(const std::string& from, const std::string& to) = 0;
  // Creates |path| and any missing parents (mkdir -p).
  virtual Status CreateDirs(const std::string& path) = 0;
  // Names (not paths) of the entries of |dir|, without "." and "..".
  virtual Status GetChildren(const std::string& dir, std::vector<std::string>* names) = 0;
  // fsync on a directory, so a rename or create in it is durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  virtual Status GetFileSize(const std::string& path, uint64_t* size) = 0;
  // Takes an exclusive lock so two processes never open one data directory.
  virtual Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) = 0;
  // Free bytes on the file system holding |path|.
  virtual Status GetFreeSpace(const std::string& path, uint64_t* bytes) = 0;
  // The smallest read worth making: about what one read costs in time,
  // expressed in bytes. Local files (page cache, SSD) read a page cheaply;
  // where every read is a network round trip, a read of 4 KiB costs about as
  // much as one of 64 KiB. Formats that choose their own read unit (LevelDB's
  // table blocks) size it from this; it never changes what is stored.
  virtual size_t PreferredReadSize() const { return 4096; }
};

// Writes |data| to |path| so that after a crash the file holds either the old
// or the new content: temp file, sync, rename, sync directory.
Status WriteFileAtomically(Env* env, const std::string& path, const std::string& data);
// Reads a whole file.
Status ReadFileToString(Env* env, const std::string& path, std::string* data);
// Directory part of |path| ("." if none).
std::string DirName(const std::string& path);
// Joins two path components with exactly one '/'.
std::string JoinPath(const std::string& a, const std::string& b);

}  // namespace dedupv1
