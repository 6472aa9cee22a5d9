#include "index/rados_shared_chunk_table.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <functional>
#include <set>

#include "core/base/coding.h"
#include "index/rados_chunk_table.h"

namespace dedupv1 {
namespace {

// The header shares format 1's magic, so each format's opener names the
// other's version instead of calling the header damaged.
constexpr char kMagic[] = "DDV1CIT";
constexpr uint32_t kFormat = 2;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 4 + 4;

// Rounds of compare-and-set per call: each round decides every key that did
// not meet a concurrent change of its own shard, so running out means the
// shard keeps changing under us.
constexpr int kMaxRounds = 16;
// Usage keys per read of a prefix (one per slot at most).
constexpr uint64_t kUsagePage = 1024;

librados::bufferlist Bytes(const std::string& s) {
  librados::bufferlist bl;
  bl.append(s.data(), s.size());
  return bl;
}

int ShardBits(uint32_t shards) {
  int k = 0;
  while ((uint32_t{1} << k) < shards) k++;
  return k;
}

// The fingerprints of a call's items, for the checks.
template <class Item>
std::vector<Fingerprint> FpsOf(const std::vector<Item>& items) {
  std::vector<Fingerprint> fps;
  for (const Item& it : items) fps.push_back(it.fp);
  return fps;
}

}  // namespace

// Asynchronous operations on shard objects, at most |window| in flight: each
// is counted when it completes and judged by its callback in the calling
// thread; Finish waits for all and returns the first error. The operations
// (and what they read into) belong to the caller and must outlive Finish.
class RadosSharedChunkTable::ShardOps {
 public:
  using Judge = std::function<Status(int r)>;

  ShardOps(RadosCluster* cluster, size_t window, ShardLoad* load, SharedTableSteps* steps, SharedTableStep step)
      : cluster_(cluster), window_(window), load_(load), steps_(steps), step_(step) {}
  ~ShardOps() { Finish(); }

  void Read(const std::string& oid, librados::ObjectReadOperation* op, size_t keys, Judge judge) {
    load_->CountObject(oid);
    steps_->Count(step_, keys);
    Send(RadosOpKind::kOmapRead, std::move(judge), [&](librados::AioCompletion* c) {
      return cluster_->index().aio_operate(oid, c, op, nullptr);
    });
  }
  void Write(const std::string& oid, librados::ObjectWriteOperation* op, size_t keys, Judge judge) {
    load_->CountObject(oid);
    steps_->Count(step_, keys);
    Send(RadosOpKind::kOmapWrite, std::move(judge),
         [&](librados::AioCompletion* c) { return cluster_->index().aio_operate(oid, c, op); });
  }
  Status Finish() {
    while (!queue_.empty()) CompleteOldest();
    return first_;
  }

 private:
  struct Sent {
    librados::AioCompletion* completion;
    RadosOpKind kind;
    std::chrono::steady_clock::time_point at;
    Judge judge;
  };

  void Send(RadosOpKind kind, Judge judge, const std::function<int(librados::AioCompletion*)>& issue) {
    while (queue_.size() >= window_) CompleteOldest();
    Sent s{librados::Rados::aio_create_completion(), kind, std::chrono::steady_clock::now(), std::move(judge)};
    const int r = issue(s.completion);
    if (r < 0) {  // never sent: judged at once
      s.completion->release();
      Judged(s, r);
      return;
    }
    queue_.push_back(std::move(s));
  }
  void CompleteOldest() {
    Sent s = std::move(queue_.front());
    queue_.pop_front();
    s.completion->wait_for_complete();  // bounded: the connection's rados_osd_op_timeout
    const int r = s.completion->get_return_value();
    s.completion->release();
    Judged(s, r);
  }
  void Judged(const Sent& s, int r) {
    Status st = s.judge(r);
    cluster_->Record(s.kind, s.at, 0, st.ok());
    if (!st.ok() && first_.ok()) first_ = st;
  }

  RadosCluster* const cluster_;
  const size_t window_;
  ShardLoad* const load_;
  SharedTableSteps* const steps_;
  const SharedTableStep step_;
  std::deque<Sent> queue_;
  Status first_;
};

struct RadosSharedChunkTable::CasItem {
  Fingerprint fp;
  std::string expected;  // the entry's encoded value it must have; "" = absent
  SharedEntry next;      // what to store
  std::string hint;      // "z" value stored with it; "" = none
  // A claim or flip is also won when the stored entry is our claim in
  // another epoch or already flipped (by another slot on our behalf, design
  // 2.4): the same container, claimer slot and incarnation. Reporting that as
  // lost would make the caller give up a copy the entry names.
  bool ours_in_any_epoch = false;
  bool decided = false;
};

struct RadosSharedChunkTable::UsageWork {
  Fingerprint fp;
  std::vector<size_t> deltas;  // indices into the call's deltas, in their order
  bool done = false;
};

RadosSharedChunkTable::RadosSharedChunkTable(const RadosSharedChunkTableOptions& options,
                                             std::shared_ptr<RadosCluster> cluster)
    : options_(options),
      cluster_(std::move(cluster)),
      shards_(options.shards),
      shard_bits_(ShardBits(options.shards)),
      load_(options.shards) {}

Status RadosSharedChunkTable::Open(const RadosSharedChunkTableOptions& options,
                                   std::unique_ptr<RadosSharedChunkTable>* out) {
  if (options.shards == 0 || options.shards > 65536 || (options.shards & (options.shards - 1)) != 0) {
    return Status::InvalidArgument("shared chunk index: shards " + std::to_string(options.shards) +
                                   " must be a power of two from 1 to 65536");
  }
  if (options.key_size < 8 || options.key_size > Fingerprint::kMaxSize) {
    return Status::InvalidArgument("shared chunk index: key size " + std::to_string(options.key_size) +
                                   " must be 8 .. " + std::to_string(Fingerprint::kMaxSize));
  }
  if (options.max_in_flight == 0) return Status::InvalidArgument("shared chunk index: max_in_flight must be >= 1");
  std::shared_ptr<RadosCluster> cluster;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &cluster));
  std::unique_ptr<RadosSharedChunkTable> table(new RadosSharedChunkTable(options, std::move(cluster)));
  DEDUPV1_RETURN_IF_ERROR(table->OpenHeader());
  *out = std::move(table);
  return Status::OK();
}

Status RadosSharedChunkTable::OpenHeader() {
  std::string want(kMagic, 8);
  PutFixed32(&want, kFormat);
  PutFixed32(&want, shards_);
  PutFixed32(&want, static_cast<uint32_t>(options_.key_size));
  PutFixed32(&want, Crc32c(want.data(), want.size()));
  // Create it exclusively: of gateways creating the table at once one wins,
  // the others (and every later open) compare with what the winner wrote.
  librados::ObjectWriteOperation create;
  create.create(true);
  create.write_full(Bytes(want));
  RadosOpTimer write(cluster_.get(), RadosOpKind::kWrite);
  int r = cluster_->index().operate(kHeaderObject, &create);
  write.Done(r == -EEXIST ? 0 : r, want.size());
  if (r != -EEXIST) return r < 0 ? OpError(r, "create header", kHeaderObject) : Status::OK();
  librados::bufferlist got;
  RadosOpTimer read(cluster_.get(), RadosOpKind::kRead);
  r = cluster_->index().read(kHeaderObject, got, kHeaderBytes + 1, 0);
  read.Done(r, r > 0 ? r : 0);
  if (r < 0) return OpError(r, "read header", kHeaderObject);
  const std::string h = got.to_str();
  if (h == want) return Status::OK();
  const std::string where = cluster_->Where(cluster_->index_pool(), kHeaderObject);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(h.data());
  if (h.size() != kHeaderBytes || h.compare(0, 8, want, 0, 8) != 0 ||
      DecodeFixed32(p + kHeaderBytes - 4) != Crc32c(p, kHeaderBytes - 4)) {
    return Status::Corruption("chunk index header " + where + " is damaged (" + std::to_string(h.size()) +
                              " bytes, magic or CRC wrong)");
  }
  return Status::InvalidArgument("chunk index " + where + " has format " + std::to_string(DecodeFixed32(p + 8)) +
                                 " with " + std::to_string(DecodeFixed32(p + 12)) + " shards and " +
                                 std::to_string(DecodeFixed32(p + 16)) + "-byte fingerprints; the shared table " +
                                 "is format 2 with " + std::to_string(shards_) + " shards and " +
                                 std::to_string(options_.key_size) + "-byte fingerprints");
}

std::string RadosSharedChunkTable::ShardOidOf(uint32_t shard) const {
  return RadosChunkTable::ShardObject(shard, shard_bits_);
}

std::string RadosSharedChunkTable::ShardOid(const Fingerprint& fp) const {
  return ShardOidOf(RadosChunkTable::ShardOf(fp, shard_bits_));
}

Status RadosSharedChunkTable::Corruption(const std::string& oid, const std::string& key, const std::string& what) const {
  return Status::Corruption("shared chunk index " + cluster_->Where(cluster_->index_pool(), oid) + " key " +
                            SharedKeyName(key) + ": " + what);
}

Status RadosSharedChunkTable::OpError(int r, const std::string& what, const std::string& oid) const {
  Status s = cluster_->ToStatus(r, "shared chunk index " + what, cluster_->index_pool(), oid);
  // A full pool is no fault of the keys written (as format 1): an I/O error to retry as a whole.
  return s.IsNoSpace() ? Status::IOError(s.ToString()) : s;
}

Status RadosSharedChunkTable::Located(const Status& decoded, const std::string& oid, const std::string& key) const {
  return decoded.ok() ? decoded : Corruption(oid, key, decoded.message());
}

Status RadosSharedChunkTable::CheckFps(const std::vector<Fingerprint>& fps, bool distinct) const {
  std::set<std::string> seen;
  for (const Fingerprint& fp : fps) {
    if (fp.size != options_.key_size) {
      return Status::InvalidArgument("shared chunk index: fingerprint of " + std::to_string(fp.size) +
                                     " bytes, the table's are " + std::to_string(options_.key_size));
    }
    if (distinct && !seen.insert(fp.ToBytes()).second) {
      return Status::InvalidArgument("shared chunk index: fingerprint " + fp.ToHex() + " twice in one call");
    }
  }
  return Status::OK();
}

Status RadosSharedChunkTable::CheckWrite(const std::vector<Fingerprint>& fps, bool distinct) const {
  DEDUPV1_RETURN_IF_ERROR(CheckFps(fps, distinct));
  if (options_.slot == 0) return Status::InvalidArgument("shared chunk index: opened read-only (slot 0)");
  return cluster_->CheckLease();
}

Status RadosSharedChunkTable::LookupMany(const std::vector<Fingerprint>& fps,
                                         std::vector<std::optional<SharedEntry>>* entries) {
  DEDUPV1_RETURN_IF_ERROR(CheckFps(fps, false));
  entries->assign(fps.size(), std::nullopt);
  struct Shard {
    std::vector<size_t> items;
    librados::ObjectReadOperation op;
    std::map<std::string, librados::bufferlist> vals;
    int rval = 0;
  };
  std::map<uint32_t, Shard> shards;
  for (size_t i = 0; i < fps.size(); i++) shards[RadosChunkTable::ShardOf(fps[i], shard_bits_)].items.push_back(i);
  ShardOps ops(cluster_.get(), options_.max_in_flight, &load_, &steps_, SharedTableStep::kLookup);
  for (auto& [shard, s] : shards) {
    std::set<std::string> keys;
    for (size_t i : s.items) keys.insert(SharedEntryKey(fps[i]));
    s.op.omap_get_vals_by_keys(keys, &s.vals, &s.rval);
    const std::string oid = ShardOidOf(shard);
    ops.Read(oid, &s.op, keys.size(), [this, &s, &fps, entries, oid](int r) {
      if (r == -ENOENT) return Status::OK();  // no claim ever reached this shard
      if (r >= 0) r = s.rval;
      if (r < 0) return OpError(r, "lookup of " + std::to_string(s.items.size()) + " keys", oid);
      for (size_t i : s.items) {
        const std::string key = SharedEntryKey(fps[i]);
        auto it = s.vals.find(key);
        if (it == s.vals.end()) continue;
        SharedEntry e;
        DEDUPV1_RETURN_IF_ERROR(Located(DecodeSharedEntry(key, it->second.to_str(), fps[i].size, &e), oid, key));
        (*entries)[i] = e;
      }
      return Status::OK();
    });
  }
  return ops.Finish();
}

Status RadosSharedChunkTable::CasMany(SharedTableStep step, std::vector<CasItem>* items,
                                     std::vector<SharedCasResult>* results) {
  results->assign(items->size(), SharedCasResult());
  for (int round = 0; round < kMaxRounds; round++) {
    // Each round may take up to the op timeout, longer than a lease: a
    // gateway fenced meanwhile must not send the next round.
    if (round > 0) DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
    struct Shard {
      std::string oid;
      std::vector<size_t> items;
      librados::ObjectWriteOperation write;
      int cmp_rval = 0;
      bool cancelled = false;
      librados::ObjectReadOperation read;
      std::map<std::string, librados::bufferlist> vals;
      int read_rval = 0;
    };
    std::map<uint32_t, Shard> shards;
    for (size_t i = 0; i < items->size(); i++) {
      if (!(*items)[i].decided) shards[RadosChunkTable::ShardOf((*items)[i].fp, shard_bits_)].items.push_back(i);
    }
    if (shards.empty()) return Status::OK();
    // 1. One compare-and-set per shard over all its undecided keys.
    ShardOps writes(cluster_.get(), options_.max_in_flight, &load_, &steps_, step);
    for (auto& [shard, s] : shards) {
      s.oid = ShardOidOf(shard);
      std::map<std::string, std::pair<librados::bufferlist, int>> cmp;
      std::map<std::string, librados::bufferlist> sets;
      for (size_t i : s.items) {
        const CasItem& it = (*items)[i];
        cmp[SharedEntryKey(it.fp)] = {Bytes(it.expected), LIBRADOS_CMPXATTR_OP_EQ};
        sets[SharedEntryKey(it.fp)] = Bytes(EncodeSharedEntry(it.fp, it.next));
        if (!it.hint.empty()) sets[SharedHintKey(it.fp)] = Bytes(it.hint);
      }
      s.write.create(false);
      s.write.omap_cmp(cmp, &s.cmp_rval);
      s.write.omap_set(sets);
      writes.Write(s.oid, &s.write, sets.size(), [this, &s, items, results](int r) {
        if (r == -ECANCELED) {  // some key changed: nothing applied (design 0)
          s.cancelled = true;
          return Status::OK();
        }
        if (r >= 0) r = s.cmp_rval;
        if (r < 0) return OpError(r, "compare-and-set of " + std::to_string(s.items.size()) + " keys", s.oid);
        for (size_t i : s.items) {
          (*items)[i].decided = true;
          (*results)[i] = SharedCasResult{true, (*items)[i].next};
        }
        return Status::OK();
      });
    }
    DEDUPV1_RETURN_IF_ERROR(writes.Finish());
    // 2. The cancelled shards' keys read again: who beat whom.
    ShardOps reads(cluster_.get(), options_.max_in_flight, &load_, &steps_, step);
    for (auto& [shard, s] : shards) {
      if (!s.cancelled) continue;
      std::set<std::string> keys;
      for (size_t i : s.items) keys.insert(SharedEntryKey((*items)[i].fp));
      s.read.omap_get_vals_by_keys(keys, &s.vals, &s.read_rval);
      reads.Read(s.oid, &s.read, keys.size(), [this, &s, items, results](int r) {
        if (r >= 0) r = s.read_rval;
        if (r < 0 && r != -ENOENT) return OpError(r, "re-read after a lost race", s.oid);
        for (size_t i : s.items) {
          CasItem& it = (*items)[i];
          const std::string key = SharedEntryKey(it.fp);
          auto v = s.vals.find(key);
          const std::string stored = v == s.vals.end() ? "" : v->second.to_str();
          if (stored == it.expected) continue;  // another key of the shard lost: retry
          it.decided = true;
          SharedCasResult& res = (*results)[i];
          res.won = stored == EncodeSharedEntry(it.fp, it.next);  // an earlier attempt of ours was applied
          if (stored.empty()) continue;
          SharedEntry e;
          DEDUPV1_RETURN_IF_ERROR(Located(DecodeSharedEntry(key, stored, it.fp.size, &e), s.oid, key));
          res.current = e;
          if (it.ours_in_any_epoch && e.state != SharedEntry::State::kDead && e.container == it.next.container &&
              e.claimer_slot == it.next.claimer_slot && e.claimer_incarnation == it.next.claimer_incarnation &&
              (it.next.state == SharedEntry::State::kUncommitted || e.state == it.next.state)) {
            res.won = true;
          }
        }
        return Status::OK();
      });
    }
    DEDUPV1_RETURN_IF_ERROR(reads.Finish());
  }
  for (const CasItem& it : *items) {
    if (!it.decided) {
      return Status::Busy("shared chunk index " + cluster_->Where(cluster_->index_pool(), ShardOid(it.fp)) +
                          ": compare-and-set of " + SharedKeyName(SharedEntryKey(it.fp)) + " lost " +
                          std::to_string(kMaxRounds) + " rounds to concurrent changes");
    }
  }
  return Status::OK();
}

Status RadosSharedChunkTable::ClaimMany(const std::vector<SharedClaim>& claims, uint64_t epoch,
                                        std::vector<SharedCasResult>* results) {
  DEDUPV1_RETURN_IF_ERROR(CheckWrite(FpsOf(claims), true));
  std::vector<CasItem> items(claims.size());
  for (size_t i = 0; i < claims.size(); i++) {
    items[i].fp = claims[i].fp;
    items[i].next = SharedEntry{SharedEntry::State::kUncommitted, claims[i].container, options_.slot,
                                options_.incarnation, epoch};
    if (options_.claim_hints) {
      items[i].hint = EncodeSharedHint(claims[i].fp, kSharedHintClaimed, options_.slot, epoch);
    }
    items[i].ours_in_any_epoch = true;
  }
  return CasMany(SharedTableStep::kClaim, &items, results);
}

Status RadosSharedChunkTable::FlipMany(const std::vector<SharedFlip>& flips, uint64_t epoch,
                                       std::vector<SharedCasResult>* results) {
  DEDUPV1_RETURN_IF_ERROR(CheckWrite(FpsOf(flips), true));
  std::vector<CasItem> items(flips.size());
  for (size_t i = 0; i < flips.size(); i++) {
    if (flips[i].claimed.state != SharedEntry::State::kUncommitted) {
      return Status::InvalidArgument("shared chunk index: flip of " + flips[i].fp.ToHex() + " from " +
                                     flips[i].claimed.ToString() + ", not a U value");
    }
    items[i].fp = flips[i].fp;
    items[i].expected = EncodeSharedEntry(flips[i].fp, flips[i].claimed);
    items[i].next = flips[i].claimed;
    items[i].next.state = SharedEntry::State::kCommitted;
    // Never below the claim's epoch: a flip by a slot (or GC) whose epoch
    // lags must not make the entry look older to GC than the claim is
    // (design-15 2.4: the claimer trusts its own claim from memory).
    items[i].next.epoch = std::max(epoch, flips[i].claimed.epoch);
    items[i].ours_in_any_epoch = true;
  }
  return CasMany(SharedTableStep::kFlip, &items, results);
}

Status RadosSharedChunkTable::CasOne(const Fingerprint& fp, const std::string& expected, const SharedEntry& next,
                                     SharedCasResult* result) {
  DEDUPV1_RETURN_IF_ERROR(CheckWrite({fp}, false));
  std::vector<CasItem> items(1);
  items[0].fp = fp;
  items[0].expected = expected;
  items[0].next = next;
  // A take-over is a claim: hinted, unless the claimer journals its claims
  // (it takes over only inside a journaled claim call, ChunkClaims::Claim).
  if (next.state == SharedEntry::State::kUncommitted && options_.claim_hints) {
    items[0].hint = EncodeSharedHint(fp, kSharedHintClaimed, options_.slot, next.epoch);
  }
  std::vector<SharedCasResult> results;
  DEDUPV1_RETURN_IF_ERROR(CasMany(SharedTableStep::kOtherCas, &items, &results));
  *result = results[0];
  return Status::OK();
}

Status RadosSharedChunkTable::TakeOver(const Fingerprint& fp, const SharedEntry& expected, uint64_t container,
                                       uint64_t epoch, SharedCasResult* result) {
  if (expected.state != SharedEntry::State::kUncommitted) {
    return Status::InvalidArgument("shared chunk index: take-over of " + fp.ToHex() + " from " +
                                   expected.ToString() + ", not a claim (U)");
  }
  const SharedEntry next{SharedEntry::State::kUncommitted, container, options_.slot, options_.incarnation, epoch};
  return CasOne(fp, EncodeSharedEntry(fp, expected), next, result);
}

Status RadosSharedChunkTable::Revive(const Fingerprint& fp, const SharedEntry& expected, uint64_t epoch,
                                     SharedCasResult* result) {
  if (expected.state != SharedEntry::State::kDead) {
    return Status::InvalidArgument("shared chunk index: revive of " + fp.ToHex() + " from " + expected.ToString() +
                                   ", not a dead entry (D)");
  }
  SharedEntry next = expected;
  next.state = SharedEntry::State::kCommitted;
  next.epoch = epoch;
  return CasOne(fp, EncodeSharedEntry(fp, expected), next, result);
}

Status RadosSharedChunkTable::Replace(const Fingerprint& fp, const SharedEntry& expected, const SharedEntry& next,
                                      SharedCasResult* result) {
  return CasOne(fp, EncodeSharedEntry(fp, expected), next, result);
}

void RadosSharedChunkTable::GuardOf(const Fingerprint& fp, const SharedRecord& seen,
                                    const std::vector<uint16_t>& slots,
                                    std::map<std::string, std::pair<librados::bufferlist, int>>* cmp,
                                    std::set<std::string>* keys) const {
  const int kEq = LIBRADOS_CMPXATTR_OP_EQ;
  const std::string ekey = SharedEntryKey(fp), zkey = SharedHintKey(fp);
  (*cmp)[ekey] = {Bytes(seen.entry ? EncodeSharedEntry(fp, *seen.entry) : ""), kEq};
  *keys = {ekey, zkey};
  if (!seen.hint.empty()) (*cmp)[zkey] = {Bytes(seen.hint), kEq};
  for (const auto& [slot, usage] : seen.usage) {
    const std::string ukey = SharedUsageKey(fp, slot);
    (*cmp)[ukey] = {Bytes(EncodeSharedUsage(ukey, usage)), kEq};
    keys->insert(ukey);
  }
  for (uint16_t slot : slots) {
    if (seen.usage.count(slot) == 0) (*cmp)[SharedUsageKey(fp, slot)] = {librados::bufferlist(), kEq};  // still none
  }
}

Status RadosSharedChunkTable::GuardedWrite(const Fingerprint& fp, librados::ObjectWriteOperation* op,
                                           const int* cmp_rval, const std::string& what, bool* done) {
  *done = false;
  const std::string oid = ShardOid(fp);
  load_.CountObject(oid);
  steps_.Count(SharedTableStep::kGc, 1);
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kOmapWrite);
  int r = cluster_->index().operate(oid, op);
  timer.Done(r == -ECANCELED ? 0 : r, 0);
  if (r == -ECANCELED) return Status::OK();
  if (r >= 0) r = *cmp_rval;
  if (r < 0) return OpError(r, what + " " + SharedKeyName(SharedEntryKey(fp)), oid);
  *done = true;
  return Status::OK();
}

Status RadosSharedChunkTable::ReplaceIfUnchanged(const Fingerprint& fp, const SharedRecord& seen,
                                                 const std::vector<uint16_t>& slots,
                                                 const std::optional<SharedEntry>& next, bool* done) {
  *done = false;
  DEDUPV1_RETURN_IF_ERROR(CheckWrite({fp}, false));
  std::map<std::string, std::pair<librados::bufferlist, int>> cmp;
  std::set<std::string> rms;
  GuardOf(fp, seen, slots, &cmp, &rms);
  // The hint was never compared here before: a rewritten hint alone (same
  // entry and usage) does not stop a replace or erase.
  cmp.erase(SharedHintKey(fp));
  librados::ObjectWriteOperation op;
  int cmp_rval = 0;
  op.create(false);
  op.omap_cmp(cmp, &cmp_rval);
  if (next) {
    op.omap_set({{SharedEntryKey(fp), Bytes(EncodeSharedEntry(fp, *next))}});
  } else {
    op.omap_rm_keys(rms);
  }
  return GuardedWrite(fp, &op, &cmp_rval, next ? "guarded replace of" : "guarded erase of", done);
}

Status RadosSharedChunkTable::DropHintIfUnchanged(const Fingerprint& fp, const SharedRecord& seen,
                                                  const std::vector<uint16_t>& slots, bool* done) {
  *done = false;
  std::vector<bool> dropped;
  std::vector<size_t> cancelled;  // the one item, if it changed
  DEDUPV1_RETURN_IF_ERROR(DropHintsIfUnchanged({{fp, seen}}, slots, &dropped, &cancelled));
  *done = dropped[0];
  return Status::OK();
}

Status RadosSharedChunkTable::AddHints(const std::vector<Fingerprint>& fps, uint64_t epoch, SharedTableStep step) {
  DEDUPV1_RETURN_IF_ERROR(CheckWrite(fps, false));
  struct Shard {
    std::map<std::string, librados::bufferlist> sets;
    librados::ObjectWriteOperation op;
  };
  std::map<uint32_t, Shard> shards;
  for (const Fingerprint& fp : fps) {
    shards[RadosChunkTable::ShardOf(fp, shard_bits_)].sets[SharedHintKey(fp)] =
        Bytes(EncodeSharedHint(fp, kSharedHintClaimed, options_.slot, epoch));
  }
  ShardOps ops(cluster_.get(), options_.max_in_flight, &load_, &steps_, step);
  for (auto& [shard, s] : shards) {
    const std::string oid = ShardOidOf(shard);
    s.op.create(false);  // a claim that never reached its shard: the hint finds no entry and goes
    s.op.omap_set(s.sets);
    ops.Write(oid, &s.op, s.sets.size(), [this, &s, oid](int r) {
      if (r < 0) return OpError(r, "write of " + std::to_string(s.sets.size()) + " GC hints", oid);
      return Status::OK();
    });
  }
  return ops.Finish();
}

Status RadosSharedChunkTable::ReadHints(uint32_t shard, const std::string& after, uint64_t max,
                                        std::vector<SharedHint>* hints, std::string* last, bool* more,
                                        std::vector<std::string>* damaged) {
  hints->clear();
  *last = after;
  *more = false;
  if (shard >= shards_) {
    return Status::InvalidArgument("shared chunk index: shard " + std::to_string(shard) + " of " +
                                   std::to_string(shards_));
  }
  if (max == 0) return Status::InvalidArgument("shared chunk index: hint page of 0 keys");
  const std::string oid = ShardOidOf(shard);
  load_.CountObject(oid);
  steps_.Count(SharedTableStep::kGc, max);
  librados::ObjectReadOperation op;
  std::map<std::string, librados::bufferlist> vals;
  int rval = 0;
  op.omap_get_vals2(after, std::string(1, kSharedHintType), max, &vals, more, &rval);
  RadosOpTimer timer(cluster_.get(), RadosOpKind::kOmapRead);
  int r = cluster_->index().operate(oid, &op, nullptr);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r == -ENOENT) {  // no claim ever reached this shard
    *more = false;
    return Status::OK();
  }
  if (r >= 0) r = rval;
  if (r < 0) return OpError(r, "read of GC hints", oid);
  for (auto& [key, bl] : vals) {
    SharedHint h;
    Status check = Located(DecodeSharedHint(key, bl.to_str(), options_.key_size, &h), oid, key);
    if (!check.ok()) {
      if (damaged == nullptr) return check;
      damaged->push_back(check.ToString());  // skipped: the page goes on past it
      *last = key;
      continue;
    }
    hints->push_back(h);
    *last = key;
  }
  if (vals.empty()) *more = false;
  return Status::OK();
}

Status RadosSharedChunkTable::AddUsageMany(const std::vector<SharedUsageDelta>& deltas, uint64_t epoch,
                                           std::vector<SharedUsageOutcome>* outcomes) {
  DEDUPV1_RETURN_IF_ERROR(CheckWrite(FpsOf(deltas), false));
  for (const SharedUsageDelta& d : deltas) {
    // Id 0 would always be skipped (ids at or below a key's last are), so a
    // change without a log event id would vanish silently.
    if (d.event_id == 0) {
      return Status::InvalidArgument("shared chunk index: usage change of " + d.fp.ToHex() +
                                     " without an event id of this slot's log");
    }
  }
  outcomes->assign(deltas.size(), SharedUsageOutcome::kAlreadyCounted);
  std::vector<UsageWork> work;
  std::map<std::string, size_t> by_fp;
  for (size_t i = 0; i < deltas.size(); i++) {
    auto [it, added] = by_fp.emplace(deltas[i].fp.ToBytes(), work.size());
    if (added) work.push_back(UsageWork{deltas[i].fp, {}, false});
    work[it->second].deltas.push_back(i);
  }
  for (int round = 0; round < kMaxRounds; round++) {
    bool pending = false;
    for (const UsageWork& w : work) pending |= !w.done;
    if (!pending) return Status::OK();
    if (round > 0) DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());  // as in CasMany
    DEDUPV1_RETURN_IF_ERROR(UsageRound(deltas, &work, epoch, outcomes));
  }
  for (const UsageWork& w : work) {
    if (!w.done) {
      return Status::Busy("shared chunk index " + cluster_->Where(cluster_->index_pool(), ShardOid(w.fp)) +
                          ": usage of " + SharedKeyName(SharedUsageKey(w.fp, options_.slot)) + " lost " +
                          std::to_string(kMaxRounds) + " rounds to concurrent changes");
    }
  }
  return Status::OK();
}

Status RadosSharedChunkTable::UsageRound(const std::vector<SharedUsageDelta>& deltas, std::vector<UsageWork>* work,
                                         uint64_t epoch, std::vector<SharedUsageOutcome>* outcomes) {
  struct Shard {
    std::string oid;
    std::vector<UsageWork*> work, writing;
    librados::ObjectReadOperation read;
    std::map<std::string, librados::bufferlist> vals;
    int read_rval = 0;
    librados::ObjectWriteOperation write;
    int cmp_rval = 0;
  };
  std::map<uint32_t, Shard> shards;
  for (UsageWork& w : *work) {
    if (!w.done) shards[RadosChunkTable::ShardOf(w.fp, shard_bits_)].work.push_back(&w);
  }
  // 1. Per shard: the entries and this slot's usage keys of its fingerprints.
  ShardOps reads(cluster_.get(), options_.max_in_flight, &load_, &steps_, SharedTableStep::kUsageRead);
  for (auto& [shard, s] : shards) {
    s.oid = ShardOidOf(shard);
    std::set<std::string> keys;
    for (UsageWork* w : s.work) {
      keys.insert(SharedEntryKey(w->fp));
      keys.insert(SharedUsageKey(w->fp, options_.slot));
    }
    s.read.omap_get_vals_by_keys(keys, &s.vals, &s.read_rval);
    reads.Read(s.oid, &s.read, keys.size(), [this, &s](int r) {
      if (r == -ENOENT) return Status::OK();  // no entries: every usage is of a missing entry
      if (r >= 0) r = s.read_rval;
      return r < 0 ? OpError(r, "read before a usage update", s.oid) : Status::OK();
    });
  }
  DEDUPV1_RETURN_IF_ERROR(reads.Finish());
  // 2. Per shard one write of the counts that change, each compared with the
  // value read, each asserting its entry exists.
  ShardOps writes(cluster_.get(), options_.max_in_flight, &load_, &steps_, SharedTableStep::kUsageWrite);
  for (auto& [shard, s] : shards) {
    std::map<std::string, std::pair<librados::bufferlist, int>> cmp;
    std::map<std::string, librados::bufferlist> sets;
    for (UsageWork* w : s.work) {
      const std::string ekey = SharedEntryKey(w->fp), ukey = SharedUsageKey(w->fp, options_.slot);
      auto e = s.vals.find(ekey);
      if (e == s.vals.end()) {
        for (size_t i : w->deltas) (*outcomes)[i] = SharedUsageOutcome::kUsageOfMissingEntry;
        w->done = true;
        continue;
      }
      SharedEntry entry;
      DEDUPV1_RETURN_IF_ERROR(Located(DecodeSharedEntry(ekey, e->second.to_str(), w->fp.size, &entry), s.oid, ekey));
      auto u = s.vals.find(ukey);
      const std::string old = u == s.vals.end() ? "" : u->second.to_str();
      SharedSlotUsage usage;
      uint16_t slot = 0;
      if (!old.empty()) {
        DEDUPV1_RETURN_IF_ERROR(Located(DecodeSharedUsage(ukey, old, w->fp.size, &slot, &usage), s.oid, ukey));
      }
      bool applied = false, decremented = false;
      for (size_t i : w->deltas) {
        if (deltas[i].event_id <= usage.last_event_id) {
          (*outcomes)[i] = SharedUsageOutcome::kAlreadyCounted;
          continue;
        }
        usage.count += deltas[i].delta;
        usage.last_event_id = deltas[i].event_id;
        (*outcomes)[i] = SharedUsageOutcome::kApplied;  // unless the write below loses: then the next round decides
        applied = true;
        decremented |= deltas[i].delta < 0;
      }
      if (!applied) {
        w->done = true;
        continue;
      }
      cmp[ekey] = {librados::bufferlist(), LIBRADOS_CMPXATTR_OP_GT};  // present
      cmp[ukey] = {Bytes(old), LIBRADOS_CMPXATTR_OP_EQ};
      sets[ukey] = Bytes(EncodeSharedUsage(ukey, usage));
      if (decremented) sets[SharedHintKey(w->fp)] = Bytes(EncodeSharedHint(w->fp, kSharedHintDecremented, options_.slot, epoch));
      s.writing.push_back(w);
    }
    if (s.writing.empty()) continue;
    s.write.create(false);
    s.write.omap_cmp(cmp, &s.cmp_rval);
    s.write.omap_set(sets);
    writes.Write(s.oid, &s.write, sets.size(), [this, &s](int r) {
      if (r == -ECANCELED) return Status::OK();  // an entry went or a count changed: the next round reads again
      if (r >= 0) r = s.cmp_rval;
      if (r < 0) return OpError(r, "usage update of " + std::to_string(s.writing.size()) + " keys", s.oid);
      for (UsageWork* w : s.writing) w->done = true;
      return Status::OK();
    });
  }
  return writes.Finish();
}

Status RadosSharedChunkTable::ReadRecord(const Fingerprint& fp, SharedRecord* record) {
  DEDUPV1_RETURN_IF_ERROR(CheckFps({fp}, false));
  *record = SharedRecord();
  const std::string oid = ShardOid(fp), prefix = SharedUsagePrefix(fp);
  std::string after;
  // Page 0 reads the entry and the hint too; more pages only with more than
  // kUsagePage slots using the chunk.
  for (uint64_t page = 0; page <= 65536 / kUsagePage; page++) {
    librados::ObjectReadOperation op;
    std::map<std::string, librados::bufferlist> fixed, usage;
    int fixed_rval = 0, usage_rval = 0;
    bool more = false;
    if (page == 0) op.omap_get_vals_by_keys({SharedEntryKey(fp), SharedHintKey(fp)}, &fixed, &fixed_rval);
    op.omap_get_vals2(after, prefix, kUsagePage, &usage, &more, &usage_rval);
    load_.CountObject(oid);
    steps_.Count(SharedTableStep::kGc, 2);
    RadosOpTimer timer(cluster_.get(), RadosOpKind::kOmapRead);
    int r = cluster_->index().operate(oid, &op, nullptr);
    timer.Done(r == -ENOENT ? 0 : r, 0);
    if (r == -ENOENT) return Status::OK();
    if (r >= 0) r = fixed_rval < 0 ? fixed_rval : usage_rval;
    if (r < 0) return OpError(r, "read of " + SharedKeyName(SharedEntryKey(fp)) + " and its usage", oid);
    DEDUPV1_RETURN_IF_ERROR(DecodeRecord(oid, fp, fixed, usage, record, &after));
    if (!more || usage.empty()) return Status::OK();
  }
  return Corruption(oid, prefix, "more usage keys than slots");
}

Status RadosSharedChunkTable::DecodeRecord(const std::string& oid, const Fingerprint& fp,
                                           const std::map<std::string, librados::bufferlist>& fixed,
                                           const std::map<std::string, librados::bufferlist>& usage,
                                           SharedRecord* record, std::string* last_usage_key) const {
  const std::string ekey = SharedEntryKey(fp), zkey = SharedHintKey(fp);
  for (const auto& [key, bl] : fixed) {
    if (key == ekey) {
      SharedEntry e;
      DEDUPV1_RETURN_IF_ERROR(Located(DecodeSharedEntry(key, bl.to_str(), fp.size, &e), oid, key));
      record->entry = e;
    } else if (key == zkey) {
      SharedHint h;
      DEDUPV1_RETURN_IF_ERROR(Located(DecodeSharedHint(key, bl.to_str(), fp.size, &h), oid, key));
      record->hinted = true;
      record->hint = h.value;
    }
  }
  for (const auto& [key, bl] : usage) {
    uint16_t slot = 0;
    SharedSlotUsage u;
    DEDUPV1_RETURN_IF_ERROR(Located(DecodeSharedUsage(key, bl.to_str(), fp.size, &slot, &u), oid, key));
    record->usage[slot] = u;
    *last_usage_key = key;
  }
  return Status::OK();
}

Status RadosSharedChunkTable::ReadRecords(const std::vector<Fingerprint>& fps, std::vector<SharedRecord>* records,
                                          std::vector<Status>* statuses) {
  DEDUPV1_RETURN_IF_ERROR(CheckFps(fps, false));
  records->assign(fps.size(), SharedRecord());
  statuses->assign(fps.size(), Status::OK());
  struct One {
    std::map<std::string, librados::bufferlist> usage;
    bool more = false;
    int rval = 0;
  };
  struct Shard {
    std::string oid;
    std::vector<size_t> items;
    librados::ObjectReadOperation op;
    std::map<std::string, librados::bufferlist> fixed;
    int fixed_rval = 0;
    std::vector<One> ones;
  };
  std::map<uint32_t, Shard> shards;
  for (size_t i = 0; i < fps.size(); i++) shards[RadosChunkTable::ShardOf(fps[i], shard_bits_)].items.push_back(i);
  std::vector<size_t> paged;  // more usage keys than one page: read alone
  ShardOps ops(cluster_.get(), options_.max_in_flight, &load_, &steps_, SharedTableStep::kGc);
  for (auto& [shard, s] : shards) {
    s.oid = ShardOidOf(shard);
    std::set<std::string> keys;
    for (size_t i : s.items) {
      keys.insert(SharedEntryKey(fps[i]));
      keys.insert(SharedHintKey(fps[i]));
    }
    s.op.omap_get_vals_by_keys(keys, &s.fixed, &s.fixed_rval);
    s.ones.resize(s.items.size());  // never resized again: the op writes into them
    for (size_t j = 0; j < s.items.size(); j++) {
      One& one = s.ones[j];
      s.op.omap_get_vals2("", SharedUsagePrefix(fps[s.items[j]]), kUsagePage, &one.usage, &one.more, &one.rval);
    }
    ops.Read(s.oid, &s.op, keys.size() + s.items.size(), [this, &s, &fps, records, statuses, &paged](int r) {
      if (r == -ENOENT) return Status::OK();  // no claim ever reached this shard: no records
      if (r >= 0) r = s.fixed_rval;
      for (const One& one : s.ones) {
        if (r >= 0) r = one.rval;
      }
      if (r < 0) return OpError(r, "read of " + std::to_string(s.items.size()) + " records", s.oid);
      for (size_t j = 0; j < s.items.size(); j++) {
        const size_t i = s.items[j];
        if (s.ones[j].more) {
          paged.push_back(i);
          continue;
        }
        std::string last;
        (*statuses)[i] = DecodeRecord(s.oid, fps[i], s.fixed, s.ones[j].usage, &(*records)[i], &last);
      }
      return Status::OK();
    });
  }
  DEDUPV1_RETURN_IF_ERROR(ops.Finish());
  for (size_t i : paged) {
    (*records)[i] = SharedRecord();
    (*statuses)[i] = ReadRecord(fps[i], &(*records)[i]);
    if (!(*statuses)[i].ok() && !(*statuses)[i].IsCorruption()) return (*statuses)[i];
  }
  return Status::OK();
}

Status RadosSharedChunkTable::DropHintsIfUnchanged(const std::vector<std::pair<Fingerprint, SharedRecord>>& seen,
                                                   const std::vector<uint16_t>& slots, std::vector<bool>* done,
                                                   std::vector<size_t>* cancelled) {
  done->assign(seen.size(), false);
  cancelled->clear();
  std::vector<Fingerprint> fps;
  for (const auto& [fp, record] : seen) {
    if (record.hint.empty()) return Status::InvalidArgument("shared chunk index: no hint of " + fp.ToHex() + " to drop");
    fps.push_back(fp);
  }
  DEDUPV1_RETURN_IF_ERROR(CheckWrite(fps, true));
  struct Shard {
    std::string oid;
    std::vector<size_t> items;
    librados::ObjectWriteOperation op;
    int cmp_rval = 0;
    bool cancelled = false;
  };
  std::map<uint32_t, Shard> shards;
  for (size_t i = 0; i < seen.size(); i++) shards[RadosChunkTable::ShardOf(fps[i], shard_bits_)].items.push_back(i);
  ShardOps ops(cluster_.get(), options_.max_in_flight, &load_, &steps_, SharedTableStep::kGc);
  for (auto& [shard, s] : shards) {
    s.oid = ShardOidOf(shard);
    // Each item's comparisons are the single drop's; their keys are the
    // item's own, so the union asks exactly what each would.
    std::map<std::string, std::pair<librados::bufferlist, int>> cmp;
    std::set<std::string> rms;
    for (size_t i : s.items) {
      std::map<std::string, std::pair<librados::bufferlist, int>> one;
      std::set<std::string> keys;
      GuardOf(fps[i], seen[i].second, slots, &one, &keys);
      cmp.insert(one.begin(), one.end());
      rms.insert(SharedHintKey(fps[i]));
    }
    s.op.create(false);
    s.op.omap_cmp(cmp, &s.cmp_rval);
    s.op.omap_rm_keys(rms);
    ops.Write(s.oid, &s.op, rms.size(), [this, &s, &fps, done](int r) {
      if (r == -ECANCELED) {  // one of them changed: nothing applied, the caller decides
        s.cancelled = true;
        return Status::OK();
      }
      if (r >= 0) r = s.cmp_rval;
      if (r < 0) {
        const std::string what = s.items.size() == 1 ? "guarded hint drop of " + SharedKeyName(SharedEntryKey(fps[s.items[0]]))
                                                     : "guarded drop of " + std::to_string(s.items.size()) + " hints";
        return OpError(r, what, s.oid);
      }
      for (size_t i : s.items) (*done)[i] = true;
      return Status::OK();
    });
  }
  DEDUPV1_RETURN_IF_ERROR(ops.Finish());
  for (const auto& [shard, s] : shards) {
    if (s.cancelled) cancelled->insert(cancelled->end(), s.items.begin(), s.items.end());
  }
  return Status::OK();
}

Status RadosSharedChunkTable::UsageSum(const Fingerprint& fp, int64_t* sum,
                                       std::map<uint16_t, SharedSlotUsage>* per_slot) {
  SharedRecord record;
  DEDUPV1_RETURN_IF_ERROR(ReadRecord(fp, &record));
  *sum = 0;
  for (const auto& [slot, u] : record.usage) *sum += u.count;
  if (per_slot != nullptr) *per_slot = record.usage;
  return Status::OK();
}

}  // namespace dedupv1
