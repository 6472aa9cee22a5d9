#include "bench/file_generation.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace dedupv1 {
namespace bench {

Status FileGeneration::Open(const std::string& path, std::unique_ptr<FileGeneration>* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("cannot open generation file " + path + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return Status::IOError("cannot stat generation file " + path + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument("generation file " + path + " is not a regular file");
  }
  if (st.st_size <= 0) {
    ::close(fd);
    return Status::InvalidArgument("generation file " + path + " is empty");
  }
  void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);  // the mapping keeps the file
  if (map == MAP_FAILED) return Status::IOError("cannot map generation file " + path + ": " + std::strerror(e));
  // Read front to back by every consumer.
  ::madvise(map, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
  out->reset(new FileGeneration(path, static_cast<const uint8_t*>(map), static_cast<uint64_t>(st.st_size)));
  return Status::OK();
}

FileGeneration::FileGeneration(std::string path, const uint8_t* data, uint64_t file_bytes)
    : path_(std::move(path)),
      data_(data),
      file_bytes_(file_bytes),
      size_((file_bytes + kBlock - 1) / kBlock * kBlock) {}

FileGeneration::~FileGeneration() { ::munmap(const_cast<uint8_t*>(data_), static_cast<size_t>(file_bytes_)); }

void FileGeneration::Read(uint64_t offset, size_t len, uint8_t* out) const {
  const uint64_t from_file = offset < file_bytes_ ? std::min<uint64_t>(len, file_bytes_ - offset) : 0;
  if (from_file > 0) std::memcpy(out, data_ + offset, static_cast<size_t>(from_file));
  std::memset(out + from_file, 0, len - static_cast<size_t>(from_file));  // the padding to a whole block
}

}  // namespace bench
}  // namespace dedupv1
