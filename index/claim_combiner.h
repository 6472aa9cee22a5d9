// ClaimCombiner sends the claims of concurrent runs in one
// RadosSharedChunkTable::ClaimMany (group commit, docs/design-15.md 2.4
// "Claims combined across runs"): a run whose claims arrive while another
// round is in flight waits for it, and the next round carries every claim
// queued meanwhile, one operation per shard for all of them. An operation
// costs about as much as 25 keys (design-15 2.4's fit), so with several
// runs in flight this cuts the claim operations per GiB by about the number
// of runs that meet; a run alone goes at once and waits for nothing.
//
// Invariants: a round carries claims of one GC epoch only (each claim's
// epoch is the one its caller asked for) and every fingerprint at most once
// (a request that repeats a fingerprint of the round waits for the next, so
// it meets the first claim as the entry that beat it, as two separate calls
// would); each caller gets exactly its own results, or the round's error (a
// round that lost too many races, Busy, is sent again request by request;
// a request the table refuses goes alone).
// The queue is served oldest first, so every request is sent.
//
// With a claim journal (index/claim_journal.h) each request's fingerprints
// become one record, and every record of a round is appended in one write
// before the round's claims; a failed append fails the round with nothing
// claimed.
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "index/claim_journal.h"
#include "index/rados_shared_chunk_table.h"

namespace dedupv1 {

class ClaimCombiner {
 public:
  // |journal| (optional): where each request is recorded before its claims.
  explicit ClaimCombiner(RadosSharedChunkTable* table, RadosClaimJournal* journal = nullptr)
      : table_(table), journal_(journal) {}

  // As table->ClaimMany(claims, epoch, results), possibly in one round with
  // other callers' claims. With a journal, |journal_key| (optional) gets the
  // key of this request's record once it was written ("" if none was).
  Status ClaimMany(const std::vector<SharedClaim>& claims, uint64_t epoch, std::vector<SharedCasResult>* results,
                   std::string* journal_key = nullptr);

  // Rounds sent and requests they carried (requests / rounds = runs per
  // claim operation).
  uint64_t rounds() const;
  uint64_t requests() const;

 private:
  struct Request {
    const std::vector<SharedClaim>* claims;
    uint64_t epoch;
    std::vector<SharedCasResult>* results;
    std::string* journal_key;
    Status status;
    bool done = false;
  };

  RadosSharedChunkTable* const table_;
  RadosClaimJournal* const journal_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request*> queue_;  // waiting for a round, oldest first
  bool sending_ = false;        // a round is in flight
  uint64_t rounds_ = 0;
  uint64_t requests_ = 0;
};

}  // namespace dedupv1
