// DedupPolicy is how a volume's writes are deduplicated (issue 18,
// docs/design-18.md), chosen per volume in the config:
// `volume = NAME SIZE [policy=inline|selective|out-of-band|off]`.
//  - inline (the default, the backup path): every chunk is looked up and a
//    known one is not stored again;
//  - off: every chunk is stored, known ones too, next to the volume's new
//    data, so its reads stay in its own containers (except a chunk found in
//    a container not committed yet, stored moments ago, which is shared).
//    The chunk index then names the newest copy (ChunkIndex::Move, as
//    container rewriting does); older copies are spare copies that GC gives
//    back once no mapping names them (the copy moved off is queued for GC:
//    UsageCounter::NoteCopyReplaced). Lookups still happen (they find which
//    chunks have an entry to move); zero chunks stay holes. Every write of
//    such a volume moves entries: the chunk index writes back as fast as
//    the volume writes.
//  - selective (POD's Select-Dedupe, core/engine/select_dedupe.h): chunked
//    statically at 4 KiB volume offsets; per write request, a request with
//    a few scattered known chunks (fewer than dedup.selective.threshold) is
//    written in full, its known chunks stored again as off stores them; a
//    fully known request (an identical rewrite of the same address) costs
//    no container write; the rest is deduplicated as inline.
//  - out-of-band (DEDIS, DeDe; core/engine/background_dedup.h): a known
//    chunk with a committed copy is stored again beside it, like off, but
//    the chunk index keeps naming the old copy; a background pass later
//    remaps the volume's blocks that are no longer hot (DEDIS's hotspot
//    rule) to the copies the index names, and GC gives the volume's own
//    copies back. Writes land unshared; sharing comes later.
#pragma once

#include <string>

#include "core/base/status.h"

namespace dedupv1 {

enum class DedupPolicy { kInline, kSelective, kOff, kOutOfBand };

// "inline", "selective", "out-of-band" or "off"; InvalidArgument naming
// |volume| and the value for anything else.
Status ParseDedupPolicy(const std::string& volume, const std::string& value, DedupPolicy* policy);
const char* DedupPolicyName(DedupPolicy policy);

}  // namespace dedupv1
