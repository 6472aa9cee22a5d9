#include "index/rados_chunk_table.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <set>

#include "core/base/coding.h"
#include "core/rados/op_result.h"

namespace dedupv1 {
namespace {

constexpr uint32_t kFormatVersion = 1;
constexpr char kHeaderMagic[] = "DDV1CIT";  // 7 bytes + NUL: the header object's first 8 bytes
constexpr size_t kHeaderSize = 8 + 4 + 4 + 4 + 4;
// Omap value: version (1), flags (1), container (8), usage (4), last event (8), CRC (4).
constexpr uint8_t kValueVersion = 1;
constexpr size_t kValueSize = 1 + 1 + 8 + 4 + 8 + 4;
constexpr uint8_t kFlagCommitted = 1;
constexpr size_t kCountSize = 8 + 4;
// Omap entries per read of a scan (Verify, ForEachEntry).
constexpr uint64_t kScanPage = 1024;

std::string Hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

int Log2(uint32_t v) {
  int k = 0;
  while ((uint32_t{1} << k) < v) k++;
  return k;
}

librados::bufferlist ToBufferlist(const std::string& s) {
  librados::bufferlist bl;
  bl.append(s.data(), s.size());
  return bl;
}

std::string FingerprintName(size_t key_size) {
  if (key_size == 20) return "20-byte fingerprints (SHA-1)";
  if (key_size == 32) return "32-byte fingerprints (SHA-256)";
  return std::to_string(key_size) + "-byte fingerprints";
}

}  // namespace

RadosChunkTable::RadosChunkTable(const RadosChunkTableOptions& options, std::shared_ptr<RadosCluster> cluster)
    : options_(options), cluster_(std::move(cluster)), shards_(options.shards), shard_bits_(ShardBits(options.shards)),
      prefix_(options.rados.ObjectPrefix()), header_(HeaderObjectOf(options.rados)), counts_(options.shards, 0) {}

Status RadosChunkTable::Open(const RadosChunkTableOptions& options, std::unique_ptr<RadosChunkTable>* out) {
  if (options.shards == 0 || options.shards > 65536 || (options.shards & (options.shards - 1)) != 0) {
    return Status::InvalidArgument("chunk index shards " + std::to_string(options.shards) +
                                   " must be a power of two from 1 to 65536");
  }
  if (options.key_size < 8 || options.key_size > Fingerprint::kMaxSize) {
    return Status::InvalidArgument("chunk index key size " + std::to_string(options.key_size) +
                                   " must be 8 .. " + std::to_string(Fingerprint::kMaxSize));
  }
  if (options.max_in_flight == 0) return Status::InvalidArgument("chunk index: max_in_flight must be at least 1");
  std::shared_ptr<RadosCluster> cluster;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &cluster));
  std::unique_ptr<RadosChunkTable> table(new RadosChunkTable(options, std::move(cluster)));
  DEDUPV1_RETURN_IF_ERROR(table->OpenHeader());
  DEDUPV1_RETURN_IF_ERROR(table->LoadCounts());
  *out = std::move(table);
  return Status::OK();
}

uint32_t RadosChunkTable::ShardOf(const Fingerprint& fp, int shard_bits) {
  if (shard_bits == 0) return 0;
  uint64_t prefix = 0;
  for (int i = 0; i < 8; i++) prefix = (prefix << 8) | (i < fp.size ? fp.bytes[i] : 0);
  return static_cast<uint32_t>(prefix >> (64 - shard_bits));
}

std::string RadosChunkTable::ShardObject(uint32_t shard, int shard_bits) {
  static const char digits[] = "0123456789abcdef";
  const int width = shard_bits == 0 ? 1 : (shard_bits + 3) / 4;
  std::string hex(width, '0');
  for (int i = width - 1; i >= 0; i--, shard >>= 4) hex[i] = digits[shard & 15];
  return "ci." + hex;
}

int RadosChunkTable::ShardBits(uint32_t shards) { return Log2(shards); }

std::string RadosChunkTable::HeaderObjectOf(const RadosOptions& rados) { return rados.ObjectPrefix() + kHeaderObject; }

std::string RadosChunkTable::ShardObjectOf(const RadosOptions& rados, uint32_t shard, int shard_bits) {
  return rados.ObjectPrefix() + ShardObject(shard, shard_bits);
}

double RadosChunkTable::GetManyCost(size_t keys) const {
  const double s = shards_;
  return s * (1.0 - std::pow(1.0 - 1.0 / s, static_cast<double>(keys)));
}

std::string RadosChunkTable::Where() const {
  return cluster_->Where(cluster_->index_pool(), prefix_ + "ci.*") + " (" + std::to_string(shards_) + " shards)";
}

Status RadosChunkTable::ShardError(int r, const std::string& what, uint32_t shard) const {
  Status s = cluster_->ToStatus(r, "chunk index " + what, cluster_->index_pool(), ShardOid(shard));
  // A full pool or quota is no fault of the entries being written: ChunkIndex
  // retries I/O errors as a whole instead of parking entries one by one.
  if (s.IsNoSpace()) return Status::IOError(s.ToString());
  return s;
}

Status RadosChunkTable::ShardCorruption(uint32_t shard, const std::string& key, const std::string& what) const {
  return Status::Corruption("chunk index shard " + cluster_->Where(cluster_->index_pool(), ShardOid(shard)) +
                            (key.empty() ? "" : " key " + Hex(key)) + ": " + what);
}

Status RadosChunkTable::CheckKey(const Fingerprint& fp) const {
  if (fp.size != options_.key_size) {
    return Status::InvalidArgument("fingerprint size " + std::to_string(fp.size) + " does not match chunk index key size " +
                                   std::to_string(options_.key_size));
  }
  return Status::OK();
}

Status RadosChunkTable::Exists(const RadosChunkTableOptions& options, bool* exists) {
  std::shared_ptr<RadosCluster> cluster;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &cluster));
  return cluster->IndexObjectExists(HeaderObjectOf(options.rados), "stat chunk index header", exists);
}

Status RadosChunkTable::OpenHeader() {
  std::string want(kHeaderMagic, 8);
  PutFixed32(&want, kFormatVersion);
  PutFixed32(&want, shards_);
  PutFixed32(&want, static_cast<uint32_t>(options_.key_size));
  PutFixed32(&want, Crc32c(want.data(), want.size()));
  librados::IoCtx& io = cluster_->index();
  const std::string where = cluster_->Where(cluster_->index_pool(), header_);
  for (int attempt = 0; attempt < 2; attempt++) {
    librados::bufferlist bl;
    int r;
    {
      RadosOpTimer t(cluster_.get(), RadosOpKind::kRead);
      r = io.read(header_, bl, 0, 0);
      t.Done(r == -ENOENT ? 0 : r, r > 0 ? r : 0);
    }
    if (r == -ENOENT) {
      // Exclusive create: two gateways creating the table at once agree on one header.
      librados::ObjectWriteOperation op;
      op.create(true);
      op.write_full(ToBufferlist(want));
      RadosOpTimer t(cluster_.get(), RadosOpKind::kWrite);
      r = io.operate(header_, &op);
      t.Done(r == -EEXIST ? 0 : r, want.size());
      if (r == -EEXIST) continue;  // someone else created it: read theirs
      if (r < 0) return cluster_->ToStatus(r, "create chunk index header", cluster_->index_pool(), header_);
      return Status::OK();
    }
    if (r < 0) return cluster_->ToStatus(r, "read chunk index header", cluster_->index_pool(), header_);
    const std::string got = bl.to_str();
    if (got.size() != kHeaderSize || got.compare(0, 8, std::string(kHeaderMagic, 8)) != 0 ||
        DecodeFixed32(reinterpret_cast<const uint8_t*>(got.data()) + kHeaderSize - 4) !=
            Crc32c(got.data(), kHeaderSize - 4)) {
      return Status::Corruption("chunk index header " + where + " is damaged (size " + std::to_string(got.size()) +
                                ", magic or CRC wrong)");
    }
    const uint8_t* p = reinterpret_cast<const uint8_t*>(got.data()) + 8;
    const uint32_t version = DecodeFixed32(p), shards = DecodeFixed32(p + 4), key_size = DecodeFixed32(p + 8);
    if (version != kFormatVersion) {
      return Status::InvalidArgument("chunk index " + where + " has format version " + std::to_string(version) +
                                     ", this build reads " + std::to_string(kFormatVersion));
    }
    if (shards != shards_ || key_size != options_.key_size) {
      return Status::InvalidArgument("chunk index " + where + " was created with " + std::to_string(shards) +
                                     " shards and " + FingerprintName(key_size) + "; the configuration asks for " +
                                     std::to_string(shards_) + " shards and " + FingerprintName(options_.key_size));
    }
    return Status::OK();
  }
  return Status::Aborted("chunk index header " + where + " was created and removed while opening");
}

Status RadosChunkTable::RunAsync(size_t n, RadosOpKind kind,
                                 const std::function<int(size_t, librados::AioCompletion*)>& start,
                                 const std::function<Status(size_t, int)>& finish) {
  struct InFlight {
    size_t i;
    librados::AioCompletion* c;
    std::chrono::steady_clock::time_point start;
  };
  std::deque<InFlight> in_flight;
  Status first;
  auto wait_oldest = [&] {
    InFlight f = in_flight.front();
    in_flight.pop_front();
    f.c->wait_for_complete();
    const int r = f.c->get_return_value();
    f.c->release();
    Status s = finish(f.i, r);
    cluster_->Record(kind, f.start, 0, s.ok());
    if (!s.ok() && first.ok()) first = s;
  };
  for (size_t i = 0; i < n; i++) {
    if (in_flight.size() >= options_.max_in_flight) wait_oldest();
    librados::AioCompletion* c = librados::Rados::aio_create_completion();
    const auto t0 = std::chrono::steady_clock::now();
    const int r = start(i, c);
    if (r < 0) {
      c->release();
      Status s = finish(i, r);
      cluster_->Record(kind, t0, 0, s.ok());
      if (!s.ok() && first.ok()) first = s;
      continue;
    }
    in_flight.push_back({i, c, t0});
  }
  while (!in_flight.empty()) wait_oldest();
  return first;
}

Status RadosChunkTable::LoadCounts() {
  std::vector<librados::bufferlist> headers(shards_);
  std::vector<int> rvals(shards_, 0);
  std::vector<librados::ObjectReadOperation> ops(shards_);
  std::lock_guard<std::mutex> l(apply_mu_);
  Status s = RunAsync(
      shards_, RadosOpKind::kOmapRead,
      [&](size_t i, librados::AioCompletion* c) {
        ops[i].omap_get_header(&headers[i], &rvals[i]);
        return cluster_->index().aio_operate(ShardOid(i), c, &ops[i], nullptr);
      },
      [&](size_t i, int r) {
        r = CompoundResult(r, {rvals[i]});
        if (r == -ENOENT) return Status::OK();  // a shard object appears with its first entry
        if (r < 0) return ShardError(r, "read entry count", i);
        return DecodeCountOf(i, headers[i].to_str(), &counts_[i]);
      });
  DEDUPV1_RETURN_IF_ERROR(s);
  uint64_t total = 0;
  for (uint64_t c : counts_) total += c;
  entry_count_ = total;
  return Status::OK();
}

std::string RadosChunkTable::EncodeCount(uint64_t count) {
  std::string s;
  PutFixed64(&s, count);
  PutFixed32(&s, Crc32c(s.data(), s.size()));
  return s;
}

Status RadosChunkTable::DecodeCount(const std::string& header, uint64_t* count) {
  if (header.empty()) {  // an object with keys always has its count; this one has neither yet
    *count = 0;
    return Status::OK();
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(header.data());
  if (header.size() != kCountSize || DecodeFixed32(p + 8) != Crc32c(p, 8)) {
    return Status::Corruption("entry count (omap header) damaged");
  }
  *count = DecodeFixed64(p);
  return Status::OK();
}

Status RadosChunkTable::DecodeCountOf(uint32_t shard, const std::string& header, uint64_t* count) const {
  Status s = DecodeCount(header, count);
  return s.ok() ? s : ShardCorruption(shard, "", s.message());
}

std::string RadosChunkTable::EncodeValue(const Fingerprint& fp, const ChunkIndexEntry& entry) {
  std::string v;
  v.push_back(static_cast<char>(kValueVersion));
  v.push_back(static_cast<char>(entry.committed ? kFlagCommitted : 0));
  PutFixed64(&v, entry.container);
  PutFixed32(&v, entry.usage_count);
  PutFixed64(&v, entry.last_event_id);
  // The key is covered too: a value under the wrong key does not check out.
  PutFixed32(&v, Crc32cKeyed(std::string_view(reinterpret_cast<const char*>(fp.bytes), fp.size), v));
  return v;
}

Status RadosChunkTable::DecodeValue(const std::string& key, const std::string& value, size_t key_size,
                                    ChunkIndexEntry* entry) {
  if (key.size() != key_size) {
    return Status::Corruption("key of " + std::to_string(key.size()) + " bytes, expected " + std::to_string(key_size));
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(value.data());
  if (value.size() != kValueSize) {
    return Status::Corruption("value of " + std::to_string(value.size()) + " bytes, expected " +
                              std::to_string(kValueSize));
  }
  const uint32_t crc = Crc32cKeyed(key, std::string_view(value).substr(0, kValueSize - 4));
  if (DecodeFixed32(p + kValueSize - 4) != crc) return Status::Corruption("value CRC mismatch");
  if (p[0] != kValueVersion) return Status::Corruption("unknown value version " + std::to_string(p[0]));
  // EncodeValue sets no other flag: one is a writer's error, not a meaning.
  if ((p[1] & ~kFlagCommitted) != 0) return Status::Corruption("unknown value flags " + std::to_string(p[1]));
  entry->committed = (p[1] & kFlagCommitted) != 0;
  entry->container = DecodeFixed64(p + 2);
  entry->usage_count = DecodeFixed32(p + 10);
  entry->last_event_id = DecodeFixed64(p + 14);
  return Status::OK();
}

Status RadosChunkTable::DecodeValueOf(uint32_t shard, const std::string& key, const std::string& value,
                                      ChunkIndexEntry* entry) const {
  Status s = DecodeValue(key, value, options_.key_size, entry);
  return s.ok() ? s : ShardCorruption(shard, key, s.message());
}

Status RadosChunkTable::Get(const Fingerprint& fp, ChunkIndexEntry* entry) {
  std::vector<ChunkIndexEntry> entries;
  std::vector<bool> found;
  DEDUPV1_RETURN_IF_ERROR(GetMany({fp}, &entries, &found));
  if (!found[0]) return Status::NotFound("fingerprint not in chunk index");
  *entry = entries[0];
  return Status::OK();
}

Status RadosChunkTable::GetMany(const std::vector<Fingerprint>& fps, std::vector<ChunkIndexEntry>* entries,
                                std::vector<bool>* found) {
  entries->assign(fps.size(), ChunkIndexEntry());
  found->assign(fps.size(), false);
  // Keys grouped per shard, in shard order.
  std::map<uint32_t, std::vector<size_t>> by_shard;
  for (size_t i = 0; i < fps.size(); i++) {
    DEDUPV1_RETURN_IF_ERROR(CheckKey(fps[i]));
    by_shard[ShardOf(fps[i], shard_bits_)].push_back(i);
  }
  struct ShardRead {
    uint32_t shard;
    const std::vector<size_t>* items;
    librados::ObjectReadOperation op;
    std::map<std::string, librados::bufferlist> vals;
    int rval = 0;
  };
  std::vector<ShardRead> reads(by_shard.size());
  size_t n = 0;
  for (auto& [shard, items] : by_shard) {
    reads[n].shard = shard;
    reads[n].items = &items;
    n++;
  }
  return RunAsync(
      reads.size(), RadosOpKind::kOmapRead,
      [&](size_t i, librados::AioCompletion* c) {
        ShardRead& r = reads[i];
        std::set<std::string> keys;
        for (size_t item : *r.items) keys.insert(fps[item].ToBytes());
        r.op.omap_get_vals_by_keys(keys, &r.vals, &r.rval);
        return cluster_->index().aio_operate(ShardOid(r.shard), c, &r.op, nullptr);
      },
      [&](size_t i, int result) {
        ShardRead& r = reads[i];
        result = CompoundResult(result, {r.rval});
        if (result == -ENOENT) return Status::OK();  // the shard has no entries yet
        if (result < 0) return ShardError(result, "read " + std::to_string(r.items->size()) + " keys", r.shard);
        for (size_t item : *r.items) {
          const std::string key = fps[item].ToBytes();
          auto it = r.vals.find(key);
          if (it == r.vals.end()) continue;
          DEDUPV1_RETURN_IF_ERROR(DecodeValueOf(r.shard, key, it->second.to_str(), &(*entries)[item]));
          (*found)[item] = true;
        }
        return Status::OK();
      });
}

// Two phases (the shards' counts and existing keys, then one write per
// shard), so the counts stay exact without reading whole shards.
Status RadosChunkTable::Apply(const std::vector<Op>& ops) {
  for (const Op& op : ops) DEDUPV1_RETURN_IF_ERROR(CheckKey(op.fp));
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  std::lock_guard<std::mutex> l(apply_mu_);
  struct ShardBatch {
    uint32_t shard = 0;
    std::map<std::string, const Op*> last;  // key -> its last op in the batch
    librados::ObjectReadOperation read;
    librados::bufferlist header;
    std::map<std::string, librados::bufferlist> existing;
    int rval_header = 0, rval_keys = 0;
    librados::ObjectWriteOperation write;
    uint64_t new_count = 0;
    bool writes = false;
    Status refused;  // the lease check that kept the write from being sent
  };
  std::map<uint32_t, ShardBatch> by_shard;
  for (const Op& op : ops) {
    const uint32_t shard = ShardOf(op.fp, shard_bits_);
    ShardBatch& b = by_shard[shard];
    b.shard = shard;
    b.last[op.fp.ToBytes()] = &op;
  }
  std::vector<ShardBatch*> batches;
  for (auto& [shard, b] : by_shard) batches.push_back(&b);

  // 1. Per shard: its count and which of the batch's keys it holds.
  Status s = RunAsync(
      batches.size(), RadosOpKind::kOmapRead,
      [&](size_t i, librados::AioCompletion* c) {
        ShardBatch& b = *batches[i];
        std::set<std::string> keys;
        for (const auto& [key, op] : b.last) keys.insert(key);
        b.read.omap_get_header(&b.header, &b.rval_header);
        b.read.omap_get_vals_by_keys(keys, &b.existing, &b.rval_keys);
        return cluster_->index().aio_operate(ShardOid(b.shard), c, &b.read, nullptr);
      },
      [&](size_t i, int r) {
        ShardBatch& b = *batches[i];
        // A failed sub-op leaves its map empty: read as success, every key
        // would count as new and the shard's count would drift.
        r = CompoundResult(r, {b.rval_header, b.rval_keys});
        if (r == -ENOENT) {
          b.header.clear();
          b.existing.clear();
          r = 0;
        }
        if (r < 0) return ShardError(r, "read before write", b.shard);
        return DecodeCountOf(b.shard, b.header.to_str(), &b.new_count);
      });
  DEDUPV1_RETURN_IF_ERROR(s);

  // 2. Per shard one atomic write: puts, erases of keys it holds, new count.
  for (ShardBatch* bp : batches) {
    ShardBatch& b = *bp;
    std::map<std::string, librados::bufferlist> sets;
    std::set<std::string> rms;
    for (const auto& [key, op] : b.last) {
      const bool exists = b.existing.count(key) > 0;
      if (op->erase) {
        if (!exists) continue;
        rms.insert(key);
        if (b.new_count > 0) b.new_count--;  // a count already wrong (Verify reports it) stays >= 0
      } else {
        sets[key] = ToBufferlist(EncodeValue(op->fp, op->entry));
        if (!exists) b.new_count++;
      }
    }
    if (sets.empty() && rms.empty()) continue;
    if (!sets.empty()) b.write.omap_set(sets);
    if (!rms.empty()) b.write.omap_rm_keys(rms);
    b.write.omap_set_header(ToBufferlist(EncodeCount(b.new_count)));
    b.writes = true;
  }
  std::vector<ShardBatch*> writes;
  for (ShardBatch* b : batches) {
    if (b->writes) writes.push_back(b);
  }
  // In gateway mode an Apply may outlast the lease (op timeout 30 s > lease
  // 20 s by default): each shard's write is checked against it when it is
  // sent, not only the batch at its start (a local clock check).
  const bool check_each = cluster_->options().fence_on_lease_loss;
  s = RunAsync(
      writes.size(), RadosOpKind::kOmapWrite,
      [&](size_t i, librados::AioCompletion* c) {
        if (check_each) {
          writes[i]->refused = cluster_->CheckLease();
          if (!writes[i]->refused.ok()) return -ECANCELED;  // not sent; finish returns |refused|
        }
        return cluster_->index().aio_operate(ShardOid(writes[i]->shard), c, &writes[i]->write);
      },
      [&](size_t i, int r) {
        ShardBatch& b = *writes[i];
        if (!b.refused.ok()) return b.refused.WithContext("chunk index shard " + ShardOid(b.shard) + " not written");
        if (r < 0) return ShardError(r, "write " + std::to_string(b.last.size()) + " keys", b.shard);
        entry_count_ += b.new_count - counts_[b.shard];  // unsigned wrap-around adds the difference
        counts_[b.shard] = b.new_count;
        return Status::OK();
      });
  return s;
}

Status RadosChunkTable::ScanShards(bool check_count, uint64_t* pages, const Visitor& visit) {
  struct Cursor {
    uint32_t shard = 0;
    std::string after;  // last key read
    bool done = false;
    bool first = true;
    uint64_t seen = 0, stored = 0;
    std::unique_ptr<librados::ObjectReadOperation> op;
    std::map<std::string, librados::bufferlist> vals;
    librados::bufferlist header;
    int rval = 0, rval_header = 0;
    bool more = false;
  };
  std::vector<Cursor> cursors(shards_);
  for (uint32_t s = 0; s < shards_; s++) cursors[s].shard = s;
  // Rounds of one page read per unfinished shard, all in flight at once;
  // entries are visited in this thread as the pages arrive.
  for (;;) {
    std::vector<Cursor*> active;
    for (Cursor& c : cursors) {
      if (!c.done) active.push_back(&c);
    }
    if (active.empty()) break;
    DEDUPV1_RETURN_IF_ERROR(RunAsync(
        active.size(), RadosOpKind::kOmapRead,
        [&](size_t i, librados::AioCompletion* completion) {
          Cursor& c = *active[i];
          c.op = std::make_unique<librados::ObjectReadOperation>();
          c.vals.clear();
          c.header.clear();
          if (c.first && check_count) c.op->omap_get_header(&c.header, &c.rval_header);
          c.op->omap_get_vals2(c.after, kScanPage, &c.vals, &c.more, &c.rval);
          return cluster_->index().aio_operate(ShardOid(c.shard), completion, c.op.get(), nullptr);
        },
        [&](size_t i, int r) {
          Cursor& c = *active[i];
          (*pages)++;
          c.done = true;
          r = CompoundResult(r, {c.rval, c.first && check_count ? c.rval_header : 0});
          if (r == -ENOENT) return Status::OK();  // no entries ever
          if (r < 0) return ShardError(r, "scan", c.shard);
          if (c.first && check_count) DEDUPV1_RETURN_IF_ERROR(DecodeCountOf(c.shard, c.header.to_str(), &c.stored));
          c.first = false;
          for (auto& [key, bl] : c.vals) {
            ChunkIndexEntry entry;
            DEDUPV1_RETURN_IF_ERROR(DecodeValueOf(c.shard, key, bl.to_str(), &entry));
            Fingerprint fp(reinterpret_cast<const uint8_t*>(key.data()), key.size());
            if (ShardOf(fp, shard_bits_) != c.shard) return ShardCorruption(c.shard, key, "key belongs to another shard");
            c.seen++;
            if (visit) visit(fp, entry);
          }
          if (c.more && !c.vals.empty()) {
            c.after = c.vals.rbegin()->first;
            c.done = false;
          }
          return Status::OK();
        }));
  }
  if (!check_count) return Status::OK();
  for (const Cursor& c : cursors) {
    if (c.seen != c.stored) {
      return ShardCorruption(c.shard, "", "holds " + std::to_string(c.seen) + " entries, its count says " +
                                              std::to_string(c.stored));
    }
  }
  return Status::OK();
}

Status RadosChunkTable::Verify(uint64_t* pages_checked, const Visitor& visit) {
  std::lock_guard<std::mutex> l(apply_mu_);
  *pages_checked = 1;  // the header, checked at Open
  return ScanShards(true, pages_checked, visit);
}

Status RadosChunkTable::ForEachEntry(const Visitor& visit) {
  uint64_t pages = 0;
  return ScanShards(false, &pages, visit);
}

}  // namespace dedupv1
