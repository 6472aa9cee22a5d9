// POSIX implementation of Env: pread/pwrite on file descriptors.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <dirent.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/env.h"

namespace dedupv1 {
namespace {

class PosixFile : public File {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override { ::close(fd_); }

  Status Read(uint64_t offset, size_t n, void* buf) override {
    char* p = static_cast<char*>(buf);
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "read " + path_);
      }
      if (r == 0) {
        return Status::IOError("short read of " + path_ + " at offset " +
                               std::to_string(offset + done));
      }
      done += static_cast<size_t>(r);
    }
    return Status::OK();
  }

  Status Write(uint64_t offset, const void* data, size_t n) override {
    const char* p = static_cast<const char*>(data);
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pwrite(fd_, p + done, n - done, static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "write " + path_);
      }
      done += static_cast<size_t>(r);
    }
    return Status::OK();
  }

  Status Sync() override {
    if (::fdatasync(fd_) != 0) return Status::FromErrno(errno, "sync " + path_);
    return Status::OK();
  }

  Status Size(uint64_t* size) override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Status::FromErrno(errno, "stat " + path_);
    *size = static_cast<uint64_t>(st.st_size);
    return Status::OK();
  }

  Status Truncate(uint64_t size) override {
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return Status::FromErrno(errno, "truncate " + path_);
    }
    return Status::OK();
  }

  Status Allocate(uint64_t offset, uint64_t len) override {
    int r = ::posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(len));
    if (r != 0) return Status::FromErrno(r, "allocate " + path_);
    return Status::OK();
  }

  const std::string& path() const override { return path_; }

 private:
  int fd_;
  std::string path_;
};

class PosixFileLock : public FileLock {
 public:
  explicit PosixFileLock(int fd) : fd_(fd) {}
  ~PosixFileLock() override {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_;
};

class PosixEnv : public Env {
 public:
  Status OpenFile(const std::string& path, OpenMode mode, std::unique_ptr<File>* file) override {
    int flags = O_CLOEXEC;
    switch (mode) {
      case OpenMode::kReadOnly: flags |= O_RDONLY; break;
      case OpenMode::kReadWrite: flags |= O_RDWR; break;
      case OpenMode::kCreate: flags |= O_RDWR | O_CREAT; break;
      case OpenMode::kCreateNew: flags |= O_RDWR | O_CREAT | O_EXCL; break;
      case OpenMode::kTruncate: flags |= O_RDWR | O_CREAT | O_TRUNC; break;
    }
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    file->reset(new PosixFile(fd, path));
    return Status::OK();
  }

  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Status::FromErrno(errno, "delete " + path);
    return Status::OK();
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Status::FromErrno(errno, "rename " + from + " to " + to);
    }
    return Status::OK();
  }

  Status LinkFile(const std::string& from, const std::string& to) override {
    if (::link(from.c_str(), to.c_str()) != 0) return Status::FromErrno(errno, "link " + from + " to " + to);
    return Status::OK();
  }

  Status CreateDirs(const std::string& path) override {
    if (path.empty()) return Status::OK();
    std::string partial;
    size_t pos = 0;
    while (pos != std::string::npos) {
      pos = path.find('/', pos + 1);
      partial = path.substr(0, pos);
      if (partial.empty()) continue;
      if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
        return Status::FromErrno(errno, "create directory " + partial);
      }
    }
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::IOError(path + " exists and is not a directory");
    }
    return Status::OK();
  }

  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override {
    names->clear();
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Status::FromErrno(errno, "list directory " + dir);
    while (struct dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      names->emplace_back(e->d_name);
    }
    ::closedir(d);
    return Status::OK();
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "open directory " + dir);
    int r = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (r != 0) return Status::FromErrno(err, "sync directory " + dir);
    return Status::OK();
  }

  Status GetFileSize(const std::string& path, uint64_t* size) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
    *size = static_cast<uint64_t>(st.st_size);
    return Status::OK();
  }

  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno(errno, "open lock file " + path);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int err = errno;
      ::close(fd);
      if (err == EWOULDBLOCK) {
        return Status::Busy(path + " is locked: another process has this data directory open");
      }
      return Status::FromErrno(err, "lock " + path);
    }
    lock->reset(new PosixFileLock(fd));
    return Status::OK();
  }

  Status GetFreeSpace(const std::string& path, uint64_t* bytes) override {
    struct statvfs st;
    if (::statvfs(path.c_str(), &st) != 0) return Status::FromErrno(errno, "statvfs " + path);
    *bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    return Status::OK();
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv();
  return env;
}

std::string DirName(const std::string& path) {
  size_t pos = path.find_last_of('/');
  if (pos == std::string::npos) return ".";
  if (pos == 0) return "/";
  return path.substr(0, pos);
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (!b.empty() && b[0] == '/') return b;
  if (a.back() == '/') return a + b;
  return a + "/" + b;
}

Status WriteFileAtomically(Env* env, const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp";
  std::unique_ptr<File> f;
  DEDUPV1_RETURN_IF_ERROR(env->OpenFile(tmp, OpenMode::kTruncate, &f));
  DEDUPV1_RETURN_IF_ERROR(f->Write(0, data.data(), data.size()));
  DEDUPV1_RETURN_IF_ERROR(f->Sync());
  f.reset();
  DEDUPV1_RETURN_IF_ERROR(env->RenameFile(tmp, path));
  return env->SyncDir(DirName(path));
}

Status ReadFileToString(Env* env, const std::string& path, std::string* data) {
  std::unique_ptr<File> f;
  DEDUPV1_RETURN_IF_ERROR(env->OpenFile(path, OpenMode::kReadOnly, &f));
  uint64_t size = 0;
  DEDUPV1_RETURN_IF_ERROR(f->Size(&size));
  data->resize(size);
  if (size == 0) return Status::OK();
  return f->Read(0, size, data->data());
}

}  // namespace dedupv1
