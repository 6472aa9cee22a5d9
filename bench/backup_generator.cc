#include "bench/backup_generator.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/base/split_mix64.h"

namespace dedupv1 {
namespace bench {
void FillSource(uint64_t source, uint64_t offset, size_t len, uint8_t* out) {
  const uint64_t key = dedupv1::SplitMix64(source);
  uint64_t word = offset / 8;
  size_t skip = offset % 8;
  size_t done = 0;
  if (skip != 0) {
    uint64_t v = dedupv1::SplitMix64(key ^ word++);
    size_t n = std::min(len, 8 - skip);
    std::memcpy(out, reinterpret_cast<uint8_t*>(&v) + skip, n);
    done = n;
  }
  for (; done + 8 <= len; done += 8) {
    uint64_t v = dedupv1::SplitMix64(key ^ word++);
    std::memcpy(out + done, &v, 8);
  }
  if (done < len) {
    uint64_t v = dedupv1::SplitMix64(key ^ word);
    std::memcpy(out + done, &v, len - done);
  }
}

void Generation::Append(uint64_t source, uint64_t source_offset, uint64_t length) {
  if (length == 0) return;
  if (!extents_.empty()) {
    Extent& last = extents_.back();
    if (last.source == source && last.source_offset + last.length == source_offset) {
      last.length += length;
      size_ += length;
      return;
    }
  }
  extents_.push_back({source, source_offset, size_, length});
  size_ += length;
}

size_t Generation::Find(uint64_t offset) const {
  auto it = std::upper_bound(extents_.begin(), extents_.end(), offset,
                             [](uint64_t off, const Extent& e) { return off < e.start; });
  return static_cast<size_t>(it - extents_.begin()) - 1;
}

void Generation::AppendSlice(const Generation& from, uint64_t offset, uint64_t len) {
  size_t i = from.Find(offset);
  while (len > 0 && i < from.extents_.size()) {
    const Extent e = from.extents_[i];  // a copy: |from| may be this generation, growing
    uint64_t in = offset - e.start;
    uint64_t n = std::min(len, e.length - in);
    Append(e.source, e.source_offset + in, n);
    offset += n;
    len -= n;
    i++;
  }
}

void Generation::Read(uint64_t offset, size_t len, uint8_t* out) const {
  if (len == 0) return;
  size_t i = Find(offset);
  size_t done = 0;
  while (done < len && i < extents_.size()) {
    const Extent& e = extents_[i];
    uint64_t in = offset + done - e.start;
    size_t n = static_cast<size_t>(std::min<uint64_t>(len - done, e.length - in));
    FillSource(e.source, e.source_offset + in, n, out + done);
    done += n;
    i++;
  }
  if (done < len) std::memset(out + done, 0, len - done);
}

uint64_t BackupGenerator::RunLength(uint64_t mean, uint64_t remaining) {
  std::exponential_distribution<double> d(1.0 / static_cast<double>(mean));
  uint64_t n = static_cast<uint64_t>(d(rng_)) + 512;
  return std::min(n, remaining);
}

Generation BackupGenerator::First(uint64_t size) {
  Generation g;
  g.number_ = 1;
  std::uniform_real_distribution<double> coin(0, 1);
  while (g.size_ < size) {
    uint64_t len = RunLength(params_.gen1_run_mean, size - g.size_);
    if (g.size_ > len && coin(rng_) < params_.internal_redundancy) {
      uint64_t from = std::uniform_int_distribution<uint64_t>(0, g.size_ - len)(rng_);
      g.AppendSlice(g, from, len);
      g.truth_.internal_redundant_bytes += len;
    } else {
      g.Append(NewSource(), 0, len);
      g.truth_.unique_bytes += len;
    }
  }
  return g;
}

Generation BackupGenerator::Next(const Generation& prev) {
  enum State { kTR, kU, kIR } state = kTR;
  Generation g;
  g.number_ = prev.number_ + 1;
  std::uniform_real_distribution<double> coin(0, 1);
  const uint64_t size = prev.size_;
  uint64_t cursor = 0;  // position in the previous generation
  while (g.size_ < size) {
    uint64_t len;
    switch (state) {
      case kTR:
        len = RunLength(params_.tr_run_mean, std::min(size - g.size_, size - cursor));
        g.AppendSlice(prev, cursor, len);
        g.truth_.temporal_redundant_bytes += len;
        break;
      case kU:
        len = RunLength(params_.u_run_mean, size - g.size_);
        g.Append(NewSource(), 0, len);
        g.truth_.unique_bytes += len;
        break;
      case kIR:
        len = RunLength(params_.ir_run_mean, size - g.size_);
        if (g.size_ > len) {
          uint64_t from = std::uniform_int_distribution<uint64_t>(0, g.size_ - len)(rng_);
          g.AppendSlice(g, from, len);
          g.truth_.internal_redundant_bytes += len;
        } else {
          g.Append(NewSource(), 0, len);
          g.truth_.unique_bytes += len;
        }
        break;
    }
    // New and repeated data replace what stood there in the previous
    // generation, so the cursor moves on in every state.
    cursor = std::min(size, cursor + len);
    if (cursor >= size) cursor = 0;
    double r = coin(rng_);
    switch (state) {
      case kTR: state = r < params_.tr_to_u ? kU : (r < params_.tr_to_u + params_.tr_to_ir ? kIR : kTR); break;
      case kU: state = r < params_.u_to_tr ? kTR : (r < params_.u_to_tr + params_.u_to_ir ? kIR : kU); break;
      case kIR: state = r < params_.ir_to_tr ? kTR : (r < params_.ir_to_tr + params_.ir_to_u ? kU : kIR); break;
    }
  }
  return g;
}

}  // namespace bench
}  // namespace dedupv1
