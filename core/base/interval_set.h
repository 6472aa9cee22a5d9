// IntervalSet is a set of disjoint, non-adjacent half-open byte ranges
// [begin, end) kept in order; adding merges, removing splits. Small and
// header-only: a block rarely has more than a handful of dirty ranges.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace dedupv1 {

class IntervalSet {
 public:
  using Range = std::pair<uint32_t, uint32_t>;

  void Add(uint32_t begin, uint32_t end) {
    if (begin >= end) return;
    std::vector<Range> out;
    out.reserve(ranges_.size() + 1);
    bool placed = false;
    for (const auto& r : ranges_) {
      if (r.second < begin) {
        out.push_back(r);
      } else if (r.first > end) {
        if (!placed) out.emplace_back(begin, end), placed = true;
        out.push_back(r);
      } else {
        begin = std::min(begin, r.first);
        end = std::max(end, r.second);
      }
    }
    if (!placed) out.emplace_back(begin, end);
    ranges_.swap(out);
  }

  void Remove(uint32_t begin, uint32_t end) {
    if (begin >= end) return;
    std::vector<Range> out;
    out.reserve(ranges_.size() + 1);
    for (const auto& r : ranges_) {
      if (r.second <= begin || r.first >= end) {
        out.push_back(r);
        continue;
      }
      if (r.first < begin) out.emplace_back(r.first, begin);
      if (r.second > end) out.emplace_back(end, r.second);
    }
    ranges_.swap(out);
  }

  bool Covers(uint32_t begin, uint32_t end) const {
    for (const auto& r : ranges_) {
      if (r.first <= begin && r.second >= end) return true;
    }
    return false;
  }

  bool Intersects(uint32_t begin, uint32_t end) const {
    for (const auto& r : ranges_) {
      if (r.first < end && r.second > begin) return true;
    }
    return false;
  }

  uint64_t bytes() const {
    uint64_t n = 0;
    for (const auto& r : ranges_) n += r.second - r.first;
    return n;
  }
  bool empty() const { return ranges_.empty(); }
  const std::vector<Range>& ranges() const { return ranges_; }

 private:
  std::vector<Range> ranges_;
};

}  // namespace dedupv1
