#include "log/log_recovery.h"

#include <algorithm>
#include <functional>

namespace dedupv1 {
namespace {

// An intact slot found past the end of the chain, at its own position.
struct IntactSlot {
  uint64_t seq = 0;
  uint64_t id = 0;
  uint32_t generation = 0;
  uint32_t fragment_index = 0;
  bool has_watermark = false;
  uint64_t watermark = 0;
  bool marker = false;  // a sync marker: proves, but holds no event
};

// A walk along the chain: each slot must be the next fragment (slot sequence,
// event id, fragment index; type and count as in fragment 0) with a
// generation no older than its predecessor's and no newer than max_gen.
struct Walk {
  uint64_t seq = 0;        // next slot to read; where the walk stopped
  uint64_t expect_id = 0;  // event the next slot belongs to
  uint32_t prev_gen = 0;   // generation of the last slot taken (or the lower bound)
  uint64_t end_seq = 0;    // after the last complete event
  std::string why;         // why the slot at |seq| was refused; empty if the limit was reached
};

using EventFn = std::function<void(uint64_t first_seq, uint64_t slots, uint64_t id, uint16_t type)>;

Status WalkChain(LogSlotReader* reader, uint32_t payload_per_slot, uint32_t max_gen, uint64_t limit, Walk* w,
                 const EventFn& on_event) {
  uint64_t first = w->seq;
  uint32_t count = 0, next_fragment = 0;
  uint16_t type = 0;
  w->end_seq = w->seq;
  w->why.clear();
  while (w->seq < limit) {
    const uint8_t* slot = nullptr;
    DEDUPV1_RETURN_IF_ERROR(reader->Get(w->seq, limit, &slot));
    LogSlotHeader h;
    std::string why;
    if (!DecodeLogSlot(slot, payload_per_slot, &h, &why)) {
      // |why| says why (an all-zero slot: "bad slot magic").
    } else if (h.marker) {
      why = h.seq == w->seq ? "a sync marker (nothing was appended after the last sync)"
                            : "a sync marker of slot sequence " + std::to_string(h.seq);
    } else if (h.seq != w->seq) {
      why = "holds slot sequence " + std::to_string(h.seq) + " instead";
    } else if (h.id != w->expect_id || h.fragment_index != next_fragment) {
      why = "holds event " + std::to_string(h.id) + " fragment " + std::to_string(h.fragment_index) +
            ", expected event " + std::to_string(w->expect_id) + " fragment " + std::to_string(next_fragment);
    } else if (h.generation < w->prev_gen) {
      why = "generation " + std::to_string(h.generation) + " is older than " + std::to_string(w->prev_gen) +
            " before it (a stale slot of an earlier run)";
    } else if (h.generation > max_gen) {
      why = "generation " + std::to_string(h.generation) + " is newer than the superblock's " +
            std::to_string(max_gen);
    } else if (next_fragment > 0 && (h.fragment_count != count || h.type != type)) {
      why = "fragment count or type differs from the event's first fragment";
    }
    if (!why.empty()) {
      w->why = why;
      break;
    }
    if (next_fragment == 0) {
      first = w->seq;
      count = h.fragment_count;
      type = h.type;
    }
    w->prev_gen = h.generation;
    w->seq++;
    next_fragment++;
    if (next_fragment == count) {
      on_event(first, count, w->expect_id, type);
      w->expect_id++;
      next_fragment = 0;
      w->end_seq = w->seq;
    }
  }
  return Status::OK();
}

// What the slot at |seq|'s position holds, for a damaged region's listing.
Status DescribeSlot(LogSlotReader* reader, uint32_t payload_per_slot, uint64_t seq, std::string* out) {
  const uint8_t* slot = nullptr;
  DEDUPV1_RETURN_IF_ERROR(reader->Get(seq, seq + 1, &slot));
  LogSlotHeader h;
  std::string why;
  if (!DecodeLogSlot(slot, payload_per_slot, &h, &why)) {
    *out = why;
  } else if (h.marker) {
    *out = "sync marker of slot sequence " + std::to_string(h.seq) + " (watermark " + std::to_string(h.watermark) +
           ", generation " + std::to_string(h.generation) + ")";
  } else {
    *out = (h.seq == seq ? "intact, " : "holds slot sequence " + std::to_string(h.seq) + ": ") + "event " +
           std::to_string(h.id) + " fragment " + std::to_string(h.fragment_index) + " of " +
           std::to_string(h.fragment_count) + ", generation " + std::to_string(h.generation);
  }
  return Status::OK();
}

// Step 2 of recovery: every intact slot at its own position in the rest of
// the ring, [x, limit), that claims a sequence number >= x (a watermark never
// exceeds its slot's own sequence number, so older laps prove nothing and are
// not hashed). Sorted by sequence number. Raises the damage's max_seq/max_id
// and out->max_generation to cover them.
Status CollectIntactSlotsPastChain(LogSlotReader* reader, uint64_t data_slots, uint32_t payload_per_slot,
                                   uint64_t x, uint64_t limit, LogRecoveryResult* out,
                                   std::vector<IntactSlot>* intact) {
  LogDamage& d = out->damage;
  for (uint64_t seq = x; seq < limit; seq++) {
    const uint8_t* slot = nullptr;
    DEDUPV1_RETURN_IF_ERROR(reader->Get(seq, limit, &slot));
    uint64_t claimed = 0;
    if (!PeekLogSlotSequence(slot, &claimed) || claimed < x) continue;
    LogSlotHeader h;
    std::string why;
    if (!DecodeLogSlot(slot, payload_per_slot, &h, &why) || h.seq % data_slots != seq % data_slots) continue;
    intact->push_back({h.seq, h.id, h.generation, h.fragment_index, h.has_watermark, h.watermark, h.marker});
    d.max_seq = std::max(d.max_seq, h.seq);
    d.max_id = std::max(d.max_id, h.id);
    out->max_generation = std::max(out->max_generation, h.generation);
  }
  std::sort(intact->begin(), intact->end(), [](const IntactSlot& a, const IntactSlot& b) { return a.seq < b.seq; });
  return Status::OK();
}

// Step 3: the slot that proves slot x was durable (so the walk's stop is
// damage, not a torn tail), or nullptr. A newer generation than the
// superblock's names the cause (the superblock), so it is preferred over a
// watermark above x.
const IntactSlot* FindDamageProof(const std::vector<IntactSlot>& intact, uint64_t x, uint32_t generation,
                                  bool* by_generation_out) {
  const IntactSlot* by_watermark = nullptr;
  const IntactSlot* by_generation = nullptr;
  for (const IntactSlot& s : intact) {
    if (by_watermark == nullptr && s.has_watermark && s.watermark > x) by_watermark = &s;
    if (by_generation == nullptr && s.generation > generation) by_generation = &s;
  }
  *by_generation_out = by_generation != nullptr;
  return by_generation != nullptr ? by_generation : by_watermark;
}

// Where the chain can be picked up after a damaged region starting at
// |gap_seq|: the first intact first fragment at or after it, of a generation
// in [prev_gen, gen_bound] and an id not below |expect|; nullptr if none.
const IntactSlot* FindResumePoint(const std::vector<IntactSlot>& intact, uint64_t gap_seq, uint32_t prev_gen,
                                  uint32_t gen_bound, uint64_t expect) {
  for (const IntactSlot& s : intact) {
    if (s.seq >= gap_seq && !s.marker && s.fragment_index == 0 && s.generation >= prev_gen && s.generation <= gen_bound &&
        s.id >= expect) {
      return &s;
    }
  }
  return nullptr;
}

// Step 4: the damaged regions and what survived after them. Starts at the
// slot the first walk refused (|first|) and picks the chain up again after
// each damaged region; a further unusable slot is damage only if proven like
// the first. Slots of a newer generation than the superblock's belong to the
// chain here (the newer superblock copy is what is damaged), and the walk may
// go past the ring's end as seen from this superblock's head (a later lap it
// missed).
Status SalvagePastDamage(LogSlotReader* reader, uint64_t data_slots, uint32_t payload_per_slot,
                         const std::vector<IntactSlot>& intact, uint32_t gen_bound, uint64_t salvage_limit,
                         const Walk& first, LogDamage* d) {
  uint64_t gap_seq = first.seq;
  std::string gap_why = first.why;
  uint64_t expect = first.expect_id;
  uint32_t prev_gen = first.prev_gen;
  for (;;) {
    LogDamage::Gap gap;
    gap.first_seq = gap_seq;
    gap.first_lost_id = expect;
    const IntactSlot* resume = FindResumePoint(intact, gap_seq, prev_gen, gen_bound, expect);
    if (resume == nullptr) {
      gap.end_seq = gap_seq + 1;
      gap.slots.push_back({gap_seq, gap_why});
      d->gaps.push_back(std::move(gap));
      break;
    }
    gap.end_seq = resume->seq;
    gap.resumed = true;
    gap.lost_ids = resume->id - expect;
    // The refused slot itself is listed even when the chain resumes right
    // there (refused only for a generation newer than the superblock's).
    // A gap longer than the ring lists each position once: only a slot that
    // lies about its sequence number with its CRC intact (forged, or a bug)
    // makes one, and listing every number up to such a slot's ran the open
    // out of memory instead of refusing.
    const uint64_t gap_end = std::max(resume->seq, gap_seq + 1);
    const uint64_t listed_end = gap_seq + std::min(gap_end - gap_seq, data_slots);
    for (uint64_t seq = gap_seq; seq < listed_end; seq++) {
      std::string why = gap_why;
      if (seq != gap_seq) DEDUPV1_RETURN_IF_ERROR(DescribeSlot(reader, payload_per_slot, seq, &why));
      gap.slots.push_back({seq, why});
    }
    if (listed_end < gap_end) {
      gap.slots.push_back({listed_end, "and " + std::to_string(gap_end - listed_end) +
                                           " more slot sequence numbers up to " + std::to_string(gap_end) +
                                           ", at positions listed above"});
    }
    d->gaps.push_back(std::move(gap));

    Walk rest;
    rest.seq = resume->seq;
    rest.expect_id = resume->id;
    rest.prev_gen = resume->generation;
    DEDUPV1_RETURN_IF_ERROR(WalkChain(reader, payload_per_slot, gen_bound, salvage_limit, &rest,
                                      [d](uint64_t first_seq, uint64_t slots, uint64_t id, uint16_t type) {
                                        d->salvaged.push_back({id, type, first_seq, slots});
                                      }));
    if (rest.seq >= salvage_limit) break;
    const bool proven = std::any_of(intact.begin(), intact.end(), [&rest](const IntactSlot& s) {
      return s.has_watermark && s.watermark > rest.seq;
    });
    if (!proven) break;
    gap_seq = rest.seq;
    gap_why = rest.why;
    expect = rest.expect_id;
    prev_gen = rest.prev_gen;
  }
  return Status::OK();
}

}  // namespace

uint64_t LogDamage::lost_events() const {
  uint64_t n = 0;
  for (const Gap& g : gaps) n += g.lost_ids;
  return n;
}

Status RecoverLogFile(LogSlotReader* reader, uint64_t data_slots, uint32_t payload_per_slot,
                      const LogRecoveryStart& start, LogRecoveryResult* out) {
  // Step 1: the unbroken chain from the superblock's head.
  const uint64_t limit = start.head_seq + data_slots;
  Walk w;
  w.seq = start.head_seq;
  w.expect_id = start.head_id;
  w.prev_gen = start.head_min_generation;
  out->event_first_seq.clear();
  DEDUPV1_RETURN_IF_ERROR(WalkChain(reader, payload_per_slot, start.generation, limit, &w,
                                    [out](uint64_t first, uint64_t, uint64_t, uint16_t) {
                                      out->event_first_seq.push_back(first);
                                    }));
  out->last_id = w.expect_id - 1;
  out->end_seq = w.end_seq;
  out->max_generation = w.prev_gen;
  LogDamage& d = out->damage;
  d = LogDamage();
  if (w.seq >= limit) return Status::OK();  // the chain fills the ring

  // Step 2: is the slot the walk stopped at, X, proven durable? Read the rest
  // of the ring (one position per slot sequence in [X, limit)).
  const uint64_t x = w.seq;
  d.max_seq = x;
  d.max_id = out->last_id;
  std::vector<IntactSlot> intact;
  DEDUPV1_RETURN_IF_ERROR(CollectIntactSlotsPastChain(reader, data_slots, payload_per_slot, x, limit, out, &intact));
  d.max_generation = out->max_generation;

  // Step 3: the proof, or a torn tail.
  bool by_generation = false;
  const IntactSlot* proof = FindDamageProof(intact, x, start.generation, &by_generation);
  if (proof == nullptr) return Status::OK();  // a torn tail
  d.proof_seq = proof->seq;
  d.proof_id = proof->id;
  d.proof_watermark = proof->watermark;
  d.proof_generation = proof->generation;
  d.proof_by_generation = by_generation;
  d.proof_is_marker = proof->marker;

  // Step 4: the damaged regions, and the events salvaged after them.
  const uint32_t gen_bound = std::max(start.generation, out->max_generation);
  const uint64_t salvage_limit = std::max(limit, d.max_seq + 1);
  return SalvagePastDamage(reader, data_slots, payload_per_slot, intact, gen_bound, salvage_limit, w, &d);
}

}  // namespace dedupv1
