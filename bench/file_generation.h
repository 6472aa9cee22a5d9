// FileGeneration is a backup generation of real data: the bytes of a file
// (a tar of a tree, say), so benchmarks can feed the engine, an iSCSI LUN
// and peer tools the same real bytes. The file is mapped read-only when
// opened; its size is rounded up to whole 4 KiB blocks with zeros, because
// volumes and LUNs take whole blocks (file_bytes() is the file's own size).
// The file must not change while it is read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bench/generation_source.h"
#include "core/base/status.h"

namespace dedupv1 {
namespace bench {

class FileGeneration : public GenerationSource {
 public:
  static constexpr uint64_t kBlock = 4096;

  // InvalidArgument for an empty file, IOError naming |path| if it cannot
  // be opened or mapped.
  static Status Open(const std::string& path, std::unique_ptr<FileGeneration>* out);
  ~FileGeneration() override;
  FileGeneration(const FileGeneration&) = delete;
  FileGeneration& operator=(const FileGeneration&) = delete;

  uint64_t size() const override { return size_; }
  void Read(uint64_t offset, size_t len, uint8_t* out) const override;
  uint64_t file_bytes() const { return file_bytes_; }
  const std::string& path() const { return path_; }

 private:
  FileGeneration(std::string path, const uint8_t* data, uint64_t file_bytes);

  std::string path_;
  const uint8_t* data_;  // the mapping, file_bytes_ long
  uint64_t file_bytes_;
  uint64_t size_;        // file_bytes_ rounded up to kBlock
};

}  // namespace bench
}  // namespace dedupv1
