#include "bench/traffic_target.h"

#include <errno.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "bench/iscsi_traffic_target.h"
#include "core/base/env.h"

namespace dedupv1 {
namespace bench {
namespace {

// A stream whose requests complete inside Start*: depth 1, Reap hands back
// the one tag.
class SyncStream : public TrafficStream {
 public:
  int depth() const override { return 1; }
  Status StartWrite(uint64_t offset, const uint8_t* data, size_t len, void* tag) override {
    return Finish(Write(offset, data, len), tag);
  }
  Status StartRead(uint64_t offset, uint8_t* data, size_t len, void* tag) override {
    return Finish(Read(offset, data, len), tag);
  }
  Status Reap(std::vector<void*>* done) override {
    if (!pending_) return Status::InvalidArgument("Reap without a started request");
    pending_ = false;
    done->push_back(tag_);
    return Status::OK();
  }

 protected:
  virtual Status Write(uint64_t offset, const uint8_t* data, size_t len) = 0;
  virtual Status Read(uint64_t offset, uint8_t* data, size_t len) = 0;

 private:
  Status Finish(Status s, void* tag) {
    if (!s.ok()) return s;
    pending_ = true;
    tag_ = tag;
    return Status::OK();
  }
  bool pending_ = false;
  void* tag_ = nullptr;
};

// --- a file or block device --------------------------------------------------

class FileStream : public SyncStream {
 public:
  explicit FileStream(File* file) : file_(file) {}

 protected:
  Status Write(uint64_t offset, const uint8_t* data, size_t len) override {
    return file_->Write(offset, data, len);
  }
  Status Read(uint64_t offset, uint8_t* data, size_t len) override {
    return file_->Read(offset, len, data);
  }

 private:
  File* const file_;
};

class FileTarget : public TrafficTarget {
 public:
  FileTarget(std::string path, std::unique_ptr<File> file, bool truncate)
      : path_(std::move(path)), file_(std::move(file)), truncate_(truncate) {}
  uint64_t capacity() const override { return 0; }
  uint32_t block_size() const override { return 1; }
  Status Prepare(uint64_t size) override {
    std::error_code ec;
    // Only a regular file is cut to size: a block device keeps its length,
    // and a file longer than the generation would otherwise keep an old tail.
    if (truncate_ && std::filesystem::is_regular_file(path_, ec)) return file_->Truncate(size);
    return Status::OK();
  }
  Status OpenStream(int index, std::unique_ptr<TrafficStream>* stream) override {
    stream->reset(new FileStream(file_.get()));
    return Status::OK();
  }
  Status Sync() override { return file_->Sync(); }
  const std::string& name() const override { return path_; }

 private:
  const std::string path_;
  std::unique_ptr<File> file_;
  const bool truncate_;
};

// --- standard output / input ---------------------------------------------------

class StdioStream : public SyncStream {
 protected:
  Status Write(uint64_t offset, const uint8_t* data, size_t len) override {
    while (len > 0) {
      ssize_t n = ::write(STDOUT_FILENO, data, len);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "writing to standard output");
      }
      data += n;
      len -= static_cast<size_t>(n);
    }
    return Status::OK();
  }
  Status Read(uint64_t offset, uint8_t* data, size_t len) override {
    size_t done = 0;
    while (done < len) {
      ssize_t n = ::read(STDIN_FILENO, data + done, len - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "reading standard input");
      }
      if (n == 0) {
        return Status::IOError("standard input ended " + std::to_string(len - done) +
                               " bytes before the end of the request at byte " +
                               std::to_string(offset));
      }
      done += static_cast<size_t>(n);
    }
    return Status::OK();
  }
};

class StdioTarget : public TrafficTarget {
 public:
  uint64_t capacity() const override { return 0; }
  uint32_t block_size() const override { return 1; }
  bool sequential() const override { return true; }
  Status OpenStream(int index, std::unique_ptr<TrafficStream>* stream) override {
    if (index != 0) return Status::InvalidArgument("standard streams take one stream only");
    stream->reset(new StdioStream());
    return Status::OK();
  }
  Status Sync() override {
    // A pipe or terminal cannot be synced; a redirected file can.
    if (::fdatasync(STDOUT_FILENO) != 0 && errno != EINVAL && errno != EROFS && errno != EBADF) {
      return Status::FromErrno(errno, "syncing standard output");
    }
    return Status::OK();
  }
  const std::string& name() const override { return name_; }

 private:
  const std::string name_ = "-";
};

// --- null: the generator alone ------------------------------------------------------

class NullStream : public SyncStream {
 protected:
  Status Write(uint64_t offset, const uint8_t* data, size_t len) override { return Status::OK(); }
  Status Read(uint64_t offset, uint8_t* data, size_t len) override {
    return Status::InvalidArgument("null: cannot be read back");
  }
};

class NullTarget : public TrafficTarget {
 public:
  uint64_t capacity() const override { return 0; }
  uint32_t block_size() const override { return 1; }
  Status OpenStream(int index, std::unique_ptr<TrafficStream>* stream) override {
    stream->reset(new NullStream());
    return Status::OK();
  }
  Status Sync() override { return Status::OK(); }
  const std::string& name() const override { return name_; }

 private:
  const std::string name_ = "null:";
};

}  // namespace

Status OpenTrafficTarget(const std::string& name, const TargetOptions& options,
                         std::unique_ptr<TrafficTarget>* target) {
  if (name.rfind("iscsi://", 0) == 0) return OpenIscsiTarget(name, options, target);
  if (name == "-") {
    target->reset(new StdioTarget());
    return Status::OK();
  }
  if (name == "null:") {
    if (!options.for_write) return Status::InvalidArgument("null: cannot be read back");
    target->reset(new NullTarget());
    return Status::OK();
  }
  if (name.empty()) return Status::InvalidArgument("empty target name");
  std::unique_ptr<File> file;
  Status s = Env::Default()->OpenFile(name, options.for_write ? OpenMode::kCreate : OpenMode::kReadOnly, &file);
  if (!s.ok()) return s;
  target->reset(new FileTarget(name, std::move(file), options.truncate));
  return Status::OK();
}

}  // namespace bench
}  // namespace dedupv1
