// Select-Dedupe (POD, seed 002; docs/design-18.md section 3): on a volume of
// policy selective, each write request is deduplicated or written in full by
// how many of its chunks are known already:
//  - all known (zero chunks count as known): fully redundant, deduplicated;
//    an identical rewrite of the same address costs no container write;
//  - some known, fewer than the threshold (default 3, the paper's): a few
//    scattered duplicates, written in full (its known chunks are stored
//    again next to its new ones), so a later read of the request stays in
//    one place instead of jumping to old containers for little space;
//  - at least the threshold known: the known chunks deduplicated, the new
//    ones stored;
//  - none known: all new, stored.
// The write buffer keeps where requests began and ended (WriteBuffer's
// request edges); a run's chunks are grouped into requests by those edges,
// a chunk belonging to the request in which it starts. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dedupv1 {

constexpr uint32_t kDefaultSelectiveThreshold = 3;
// A selective volume's chunks: 4 KiB at volume offsets that are multiples of
// 4 KiB (SplitAtAlignedOffsets), so chunks line up with requests and an
// identical rewrite of an address gives the same chunks.
constexpr uint32_t kSelectiveChunkSize = 4096;

enum class RequestCategory { kAllNew, kFullDedup, kWrittenInFull, kPartialDedup };
const char* RequestCategoryName(RequestCategory category);

// The category of a request of |chunks| chunks of which |known| are known,
// |zero| of those all zeros. |threshold| >= 1. Zero chunks count as known
// for a fully known request (all zeros: holes, nothing written), but not
// toward the threshold: a hole fragments no read, so a request of zeros and
// new chunks is all new, and its zeros stay holes.
RequestCategory ClassifyRequest(size_t chunks, size_t known, size_t zero, uint32_t threshold);

// For a run at absolute offset |run_start| whose chunk i ends at
// run_start + ends[i]: the request of every chunk, numbered from 0 in the
// run's order. |edges| are absolute offsets where a request began or ended,
// sorted; a chunk belongs to the request in which it starts (the stretch
// between the edges around its first byte).
std::vector<uint32_t> RequestOfChunks(uint64_t run_start, const std::vector<size_t>& ends,
                                      const std::vector<uint64_t>& edges);

}  // namespace dedupv1
