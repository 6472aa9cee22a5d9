#include "log/operations_log.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/base/coding.h"
#include "log/log_recovery.h"

namespace dedupv1 {
namespace {

// File layout constants; see docs/formats.md "Operations log".
constexpr uint64_t kSuperblockMagic = 0x474f4c504f315644ULL;  // "DV1OPLOG" little endian
constexpr uint32_t kFormatVersion = 1;
constexpr uint32_t kSuperblockBytes = 64;
constexpr uint32_t kSlotHeaderBytes = kLogSlotHeaderBytes;
constexpr uint64_t kSuperblockSlots = kLogSuperblockSlots;
constexpr uint64_t kMinDataSlots = 8;
constexpr uint32_t kMinSlotSize = 512;
constexpr uint32_t kMaxSlotSize = 64 << 10;

// Write-behind size.
constexpr size_t kMaxChunkBytes = 1 << 20;
constexpr size_t kMaxUnsyncedBytes = 8 << 20;

}  // namespace

struct OperationsLog::Superblock {
  uint64_t sequence = 0;  // newest copy wins
  uint32_t slot_size = 0;
  uint32_t generation = 0;  // of the newest open
  uint64_t slot_count = 0;  // including the two superblock slots
  uint64_t head_id = 1;
  uint64_t head_seq = 0;
  uint32_t head_min_generation = 0;

  void EncodeTo(uint8_t* p) const {
    std::memset(p, 0, kSuperblockBytes);
    EncodeFixed64(p + 0, kSuperblockMagic);
    EncodeFixed32(p + 12, kFormatVersion);
    EncodeFixed64(p + 16, sequence);
    EncodeFixed32(p + 24, slot_size);
    EncodeFixed32(p + 28, generation);
    EncodeFixed64(p + 32, slot_count);
    EncodeFixed64(p + 40, head_id);
    EncodeFixed64(p + 48, head_seq);
    EncodeFixed32(p + 56, head_min_generation);
    EncodeFixed32(p + 8, Crc32c(p + 12, kSuperblockBytes - 12));
  }

  bool DecodeFrom(const uint8_t* p, std::string* why) {
    if (DecodeFixed64(p) != kSuperblockMagic) {
      *why = "bad magic";
      return false;
    }
    if (Crc32c(p + 12, kSuperblockBytes - 12) != DecodeFixed32(p + 8)) {
      *why = "checksum mismatch";
      return false;
    }
    uint32_t version = DecodeFixed32(p + 12);
    if (version != kFormatVersion) {
      *why = "unsupported format version " + std::to_string(version);
      return false;
    }
    sequence = DecodeFixed64(p + 16);
    slot_size = DecodeFixed32(p + 24);
    generation = DecodeFixed32(p + 28);
    slot_count = DecodeFixed64(p + 32);
    head_id = DecodeFixed64(p + 40);
    head_seq = DecodeFixed64(p + 48);
    head_min_generation = DecodeFixed32(p + 56);
    if (slot_size < kMinSlotSize || slot_size > kMaxSlotSize || (slot_size & (slot_size - 1)) ||
        slot_count < kSuperblockSlots + kMinDataSlots || head_id == 0) {
      *why = "bad geometry or head";
      return false;
    }
    return true;
  }
};

OperationsLog::OperationsLog(const OperationsLogOptions& options, Env* env,
                             std::unique_ptr<File> file)
    : options_(options),
      env_(env),
      file_(std::move(file)),
      slot_size_(options.slot_size),
      payload_per_slot_(options.slot_size - kSlotHeaderBytes),
      data_slots_(options.size_bytes / options.slot_size - kSuperblockSlots),
      hard_slots_(static_cast<uint64_t>(options.hard_limit * static_cast<double>(data_slots_))),
      chunk_bytes_(std::max<uint64_t>(1, std::min<uint64_t>(kMaxChunkBytes / options.slot_size,
                                                            data_slots_ / 4)) *
                   options.slot_size),
      max_unsynced_bytes_(kMaxUnsyncedBytes) {}

OperationsLog::~OperationsLog() { Close(); }

uint64_t OperationsLog::SlotOffset(uint64_t seq) const {
  return (kSuperblockSlots + seq % data_slots_) * slot_size_;
}

Status OperationsLog::ValidateOptions(const OperationsLogOptions& o) {
  if (o.path.empty()) return Status::InvalidArgument("operations log: empty path");
  if (o.slot_size < kMinSlotSize || o.slot_size > kMaxSlotSize ||
      (o.slot_size & (o.slot_size - 1)) != 0) {
    return Status::InvalidArgument("operations log " + o.path + ": slot size " +
                                   std::to_string(o.slot_size) +
                                   " is not a power of two in [512, 65536]");
  }
  if (o.size_bytes / o.slot_size < kSuperblockSlots + kMinDataSlots) {
    return Status::InvalidArgument("operations log " + o.path + ": size " +
                                   std::to_string(o.size_bytes) + " holds fewer than " +
                                   std::to_string(kSuperblockSlots + kMinDataSlots) + " slots");
  }
  if (!(o.soft_limit > 0 && o.soft_limit <= 1) || !(o.hard_limit > 0 && o.hard_limit <= 1) ||
      o.soft_limit > o.hard_limit) {
    return Status::InvalidArgument("operations log " + o.path +
                                   ": limits must satisfy 0 < soft <= hard <= 1 (soft " +
                                   std::to_string(o.soft_limit) + ", hard " +
                                   std::to_string(o.hard_limit) + ")");
  }
  uint64_t data_slots = o.size_bytes / o.slot_size - kSuperblockSlots;
  if (static_cast<uint64_t>(o.hard_limit * static_cast<double>(data_slots)) == 0) {
    return Status::InvalidArgument("operations log " + o.path +
                                   ": hard limit leaves no usable slot");
  }
  return Status::OK();
}

Status OperationsLog::CreateFile(const OperationsLogOptions& o, Env* env) {
  // Built under a temporary name and renamed into place, so the log file
  // exists only once its superblocks are valid.
  const std::string tmp = o.path + ".tmp";
  const uint64_t slot_count = o.size_bytes / o.slot_size;
  {
    std::unique_ptr<File> f;
    DEDUPV1_RETURN_IF_ERROR(env->OpenFile(tmp, OpenMode::kTruncate, &f));
    DEDUPV1_RETURN_IF_ERROR(f->Allocate(0, slot_count * o.slot_size)
                                .WithContext("operations log: preallocating " +
                                             std::to_string(slot_count * o.slot_size) + " bytes"));
    Superblock sb;
    sb.slot_size = o.slot_size;
    sb.slot_count = slot_count;
    uint8_t buf[kSuperblockBytes];
    for (uint64_t seq : {1, 2}) {
      sb.sequence = seq;
      sb.EncodeTo(buf);
      DEDUPV1_RETURN_IF_ERROR(f->Write((seq % 2) * o.slot_size, buf, sizeof(buf)));
    }
    DEDUPV1_RETURN_IF_ERROR(f->Sync());
  }
  DEDUPV1_RETURN_IF_ERROR(env->RenameFile(tmp, o.path));
  return env->SyncDir(DirName(o.path));
}

Status OperationsLog::ReadSuperblock(Superblock* out) {
  uint8_t buf[kSuperblockBytes];
  Superblock a, b;
  std::string why_a, why_b = "not found";
  bool a_ok = false, b_ok = false;
  Status s = file_->Read(0, sizeof(buf), buf);
  if (s.ok()) {
    a_ok = a.DecodeFrom(buf, &why_a);
  } else {
    why_a = s.ToString();
  }
  // Copy B is the second slot; its offset depends on the slot size of the
  // file, which copy A tells unless it is the one that is damaged.
  for (uint32_t ss = kMinSlotSize; ss <= kMaxSlotSize && !b_ok; ss *= 2) {
    if (a_ok && ss != a.slot_size) continue;
    if (!file_->Read(ss, sizeof(buf), buf).ok()) continue;
    std::string why;
    if (b.DecodeFrom(buf, &why) && b.slot_size == ss) {
      b_ok = true;
    } else if (a_ok) {
      why_b = why;
    }
  }
  if (!a_ok && !b_ok) {
    return Status::Corruption("operations log " + path() + ": no valid superblock (copy A: " +
                              why_a + "; copy B: " + why_b + ")");
  }
  *out = (a_ok && (!b_ok || a.sequence > b.sequence)) ? a : b;
  return Status::OK();
}

Status OperationsLog::Open(const OperationsLogOptions& options, Env* env,
                           std::unique_ptr<OperationsLog>* out) {
  DEDUPV1_RETURN_IF_ERROR(ValidateOptions(options));
  if (!env->FileExists(options.path)) DEDUPV1_RETURN_IF_ERROR(CreateFile(options, env));
  std::unique_ptr<File> file;
  DEDUPV1_RETURN_IF_ERROR(env->OpenFile(options.path, OpenMode::kReadWrite, &file));
  std::unique_ptr<OperationsLog> log(new OperationsLog(options, env, std::move(file)));

  Superblock sb;
  DEDUPV1_RETURN_IF_ERROR(log->ReadSuperblock(&sb));
  const std::string name = "operations log " + options.path;
  if (sb.slot_size != options.slot_size) {
    return Status::InvalidArgument(name + ": slot size " + std::to_string(options.slot_size) +
                                   " in the options does not match slot size " +
                                   std::to_string(sb.slot_size) + " of the file");
  }
  const uint64_t want_slots = options.size_bytes / options.slot_size;
  if (sb.slot_count != want_slots) {
    return Status::InvalidArgument(
        name + ": size " + std::to_string(want_slots * options.slot_size) + " bytes (" +
        std::to_string(want_slots) + " slots) in the options does not match size " +
        std::to_string(sb.slot_count * sb.slot_size) + " bytes (" +
        std::to_string(sb.slot_count) + " slots) of the file");
  }
  uint64_t file_size = 0;
  DEDUPV1_RETURN_IF_ERROR(log->file_->Size(&file_size));
  if (file_size < sb.slot_count * sb.slot_size) {
    return Status::Corruption(name + ": file has " + std::to_string(file_size) +
                              " bytes, the superblock says " +
                              std::to_string(sb.slot_count * sb.slot_size));
  }

  DEDUPV1_RETURN_IF_ERROR(log->Recover(sb));
  // Make what recovery saw durable before this open's generation writes
  // behind it: a slot found invalid must stay invalid after a power loss.
  DEDUPV1_RETURN_IF_ERROR(log->file_->Sync().WithContext(name));
  {
    std::lock_guard<std::mutex> sl(log->sb_mu_);
    log->sb_sequence_ = sb.sequence;
    // While damage is pending nothing is written: the file stays as it was
    // found until DiscardDamaged writes this open's superblock.
    if (!log->damage_pending_) {
      DEDUPV1_RETURN_IF_ERROR(
          log->WriteSuperblock(sb.head_id, sb.head_seq, sb.head_min_generation));
    }
  }
  // The recovered events are durable: say so behind them, once the
  // superblock of this generation is (a marker of a generation whose
  // superblock is not durable would look like a damaged superblock).
  if (!log->damage_pending_ && log->next_seq_ < log->head_seq_ + log->data_slots_) {
    std::lock_guard<std::mutex> io(log->io_mu_);
    log->WriteSyncMarker(log->next_seq_, log->generation_);
  }
  *out = std::move(log);
  return Status::OK();
}

Status OperationsLog::Recover(const Superblock& sb) {
  LogRecoveryStart start;
  start.head_id = sb.head_id;
  start.head_seq = sb.head_seq;
  start.head_min_generation = sb.head_min_generation;
  start.generation = sb.generation;
  LogSlotReader reader(file_.get(), slot_size_, data_slots_);
  LogRecoveryResult r;
  DEDUPV1_RETURN_IF_ERROR(RecoverLogFile(&reader, data_slots_, payload_per_slot_, start, &r));
  if (r.damage.damaged() && !options_.accept_damage) {
    return Status::Corruption(DescribeDamage(r.damage));
  }

  std::lock_guard<std::mutex> l(mu_);
  head_id_ = sb.head_id;
  head_seq_ = sb.head_seq;
  last_id_ = r.last_id;
  next_seq_ = r.end_seq;
  recovered_events_ = r.event_first_seq.size();
  event_first_seq_ = std::move(r.event_first_seq);
  session_first_id_ = last_id_ + 1;
  active_start_seq_ = written_seq_ = durable_seq_ = next_seq_;
  written_id_ = durable_id_ = last_id_;
  // Above every generation in the file: with a damaged newer superblock
  // copy, slots of a newer generation than the superblock's may exist.
  generation_ = std::max(sb.generation, r.max_generation) + 1;
  damage_ = std::move(r.damage);
  damage_pending_ = damage_.damaged();
  return Status::OK();
}

std::string OperationsLog::DescribeDamage(const LogDamage& d) const {
  const LogDamage::Gap& gap = d.gaps.front();
  const LogDamage::Slot& bad = gap.slots.front();
  std::string out = "operations log " + path() + " is damaged: slot " +
                    std::to_string(kSuperblockSlots + bad.seq % data_slots_) + " (slot sequence " +
                    std::to_string(bad.seq) + ", offset " + std::to_string(SlotOffset(bad.seq)) +
                    "): " + bad.why + "; events from " + std::to_string(gap.first_lost_id) +
                    " on were not recovered, but ";
  if (d.proof_by_generation) {
    out += "slot sequence " + std::to_string(d.proof_seq) + " (event " + std::to_string(d.proof_id) +
           ") is intact with generation " + std::to_string(d.proof_generation) +
           ", newer than the superblock's: the newer superblock copy is damaged";
  } else if (d.proof_is_marker) {
    out += "the sync marker at slot sequence " + std::to_string(d.proof_seq) + " after it says slots below " +
           std::to_string(d.proof_watermark) + " were durable";
  } else {
    out += "slot sequence " + std::to_string(d.proof_seq) + " (event " + std::to_string(d.proof_id) +
           ") after it is intact and was written once slots below " + std::to_string(d.proof_watermark) +
           " were durable";
  }
  out += ". Not started; dedupv1_replay --accept-log-damage lists what is lost and recovers the rest";
  return out;
}

Status OperationsLog::WriteSuperblock(uint64_t head_id, uint64_t head_seq,
                                      uint32_t head_min_generation) {
  Superblock sb;
  sb.sequence = sb_sequence_ + 1;
  sb.slot_size = slot_size_;
  {
    std::lock_guard<std::mutex> l(mu_);
    sb.generation = generation_;
  }
  sb.slot_count = data_slots_ + kSuperblockSlots;
  sb.head_id = head_id;
  sb.head_seq = head_seq;
  sb.head_min_generation = head_min_generation;
  uint8_t buf[kSuperblockBytes];
  sb.EncodeTo(buf);
  // Alternate between the copies; the sequence only advances once a copy is
  // durable, so a failed write is retried on the same copy and the other one
  // stays intact.
  Status s = file_->Write((sb.sequence % 2) * slot_size_, buf, sizeof(buf));
  if (s.ok()) s = file_->Sync();
  if (!s.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    RecordErrorLocked(s);
    return s.WithContext("operations log " + path() + ": superblock");
  }
  sb_sequence_ = sb.sequence;
  return Status::OK();
}

void OperationsLog::SealActiveLocked(uint64_t complete_id) {
  if (active_.empty()) return;
  auto c = std::make_shared<Chunk>();
  c->start_seq = active_start_seq_;
  c->data = std::move(active_);
  c->complete_id = complete_id;
  sealed_.push_back(std::move(c));
  active_ = std::string();
  active_.reserve(chunk_bytes_);
  active_start_seq_ = next_seq_;
}

uint64_t OperationsLog::MemoryFrontSeqLocked() const {
  return sealed_.empty() ? active_start_seq_ : sealed_.front()->start_seq;
}

bool OperationsLog::CopySlotFromMemoryLocked(uint64_t seq, std::string* out) const {
  if (seq >= active_start_seq_ && seq < next_seq_) {
    out->assign(active_.data() + (seq - active_start_seq_) * slot_size_, slot_size_);
    return true;
  }
  for (const auto& c : sealed_) {
    uint64_t n = c->data.size() / slot_size_;
    if (seq >= c->start_seq && seq < c->start_seq + n) {
      out->assign(c->data.data() + (seq - c->start_seq) * slot_size_, slot_size_);
      return true;
    }
  }
  return false;
}

void OperationsLog::RecordErrorLocked(const Status& s) { last_error_ = s.ToString(); }

Status OperationsLog::Append(LogEventType type, const std::string& payload, uint64_t* id) {
  const uint64_t fragments =
      payload.empty() ? 1 : (payload.size() + payload_per_slot_ - 1) / payload_per_slot_;
  if (fragments > hard_slots_) {
    return Status::InvalidArgument(
        "operations log " + path() + ": event of " + std::to_string(payload.size()) +
        " bytes needs " + std::to_string(fragments) + " slots, more than the " +
        std::to_string(hard_slots_) + " slots the hard limit allows");
  }
  // The payload CRCs do not depend on the slot position: compute them
  // before taking the lock.
  std::vector<uint32_t> crcs(fragments);
  for (uint64_t i = 0; i < fragments; i++) {
    size_t off = i * payload_per_slot_;
    size_t len = std::min<size_t>(payload_per_slot_, payload.size() - off);
    crcs[i] = Crc32c(payload.data() + off, len);
  }

  std::unique_lock<std::mutex> l(mu_);
  if (closed_) return Status::Aborted("operations log " + path() + " is closed");
  if (damage_pending_) return DamagePendingError();
  auto fits = [&] { return next_seq_ - head_seq_ + fragments <= hard_slots_; };
  if (!fits()) {
    throttled_appends_++;
    auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.append_wait_ms);
    if (!space_cv_.wait_until(l, deadline, [&] { return closed_ || fits(); })) {
      return Status::Busy("operations log " + path() + " full: " +
                          std::to_string(next_seq_ - head_seq_) + " of " +
                          std::to_string(data_slots_) + " slots used, the event needs " +
                          std::to_string(fragments) + ", hard limit " +
                          std::to_string(hard_slots_) + " slots; no trim within " +
                          std::to_string(options_.append_wait_ms) + " ms");
    }
    if (closed_) return Status::Aborted("operations log " + path() + " is closed");
  }

  const uint64_t event_id = ++last_id_;
  event_first_seq_.push_back(next_seq_);
  for (uint64_t i = 0; i < fragments; i++) {
    size_t off = i * payload_per_slot_;
    size_t len = std::min<size_t>(payload_per_slot_, payload.size() - off);
    size_t pos = active_.size();
    active_.resize(pos + slot_size_);  // zero padding after the payload
    uint8_t* slot = reinterpret_cast<uint8_t*>(active_.data()) + pos;
    if (len > 0) std::memcpy(slot + kSlotHeaderBytes, payload.data() + off, len);
    LogSlotHeader h;
    h.seq = next_seq_;
    h.id = event_id;
    h.generation = generation_;
    // Every slot below durable_seq_ is durable now: recovery uses this to
    // tell damage to an earlier slot from a torn tail.
    h.has_watermark = true;
    h.watermark = durable_seq_;
    h.type = static_cast<uint16_t>(type);
    h.fragment_index = static_cast<uint32_t>(i);
    h.fragment_count = static_cast<uint32_t>(fragments);
    h.payload_length = static_cast<uint32_t>(len);
    EncodeLogSlotHeader(slot, h, crcs[i]);
    next_seq_++;
    if (active_.size() >= chunk_bytes_) {
      SealActiveLocked(i + 1 == fragments ? event_id : event_id - 1);
    }
  }
  appended_events_++;
  appended_bytes_ += payload.size();
  *id = event_id;
  const bool write_behind = written_seq_ < active_start_seq_;
  l.unlock();
  if (write_behind) WriteBehind();
  return Status::OK();
}

Status OperationsLog::WriteChunk(const Chunk& c) {
  uint64_t seq = c.start_seq;
  uint64_t n = c.data.size() / slot_size_;
  const char* p = c.data.data();
  // A chunk may wrap around the end of the file (even several times in a tiny
  // log); pieces are written in sequence order so the newest slot wins.
  while (n > 0) {
    uint64_t k = std::min(n, data_slots_ - seq % data_slots_);
    DEDUPV1_RETURN_IF_ERROR(file_->Write(SlotOffset(seq), p, k * slot_size_));
    seq += k;
    n -= k;
    p += k * slot_size_;
  }
  return Status::OK();
}

Status OperationsLog::WriteUnwrittenChunks() {
  for (;;) {
    std::shared_ptr<const Chunk> c;
    {
      std::lock_guard<std::mutex> l(mu_);
      for (const auto& x : sealed_) {
        if (x->start_seq == written_seq_) {
          c = x;
          break;
        }
      }
    }
    if (!c) return Status::OK();
    Status s = WriteChunk(*c);
    std::lock_guard<std::mutex> l(mu_);
    if (!s.ok()) {
      RecordErrorLocked(s);
      return s;
    }
    written_seq_ = c->start_seq + c->data.size() / slot_size_;
    written_id_ = std::max(written_id_, c->complete_id);
  }
}

Status OperationsLog::WriteAndSync(bool seal_active) {
  if (seal_active) {
    std::lock_guard<std::mutex> l(mu_);
    SealActiveLocked(last_id_);
  }
  DEDUPV1_RETURN_IF_ERROR(WriteUnwrittenChunks());
  uint64_t seq, id;
  {
    std::lock_guard<std::mutex> l(mu_);
    seq = written_seq_;
    id = written_id_;
    if (seq == durable_seq_) {
      durable_id_ = std::max(durable_id_, id);
      return Status::OK();
    }
  }
  Status s = file_->Sync();
  std::unique_lock<std::mutex> l(mu_);
  if (!s.ok()) {
    // After a failed fdatasync the kernel may have dropped the dirty pages:
    // write everything since the last durable point again next time.
    written_seq_ = durable_seq_;
    written_id_ = durable_id_;
    RecordErrorLocked(s);
    return s;
  }
  syncs_++;
  durable_seq_ = seq;
  durable_id_ = std::max(durable_id_, id);
  while (!sealed_.empty() &&
         sealed_.front()->start_seq + sealed_.front()->data.size() / slot_size_ <= durable_seq_) {
    sealed_.pop_front();
  }
  // Not where a live slot is (a full ring): the marker would overwrite it.
  const bool marker = seq < head_seq_ + data_slots_;
  const uint32_t generation = generation_;
  l.unlock();
  if (marker) WriteSyncMarker(seq, generation);
  return Status::OK();
}

void OperationsLog::WriteSyncMarker(uint64_t seq, uint32_t generation) {
  // Every slot below |seq| is durable. Slot |seq| is not written yet (the
  // caller holds io_mu_); the append that takes it overwrites the marker.
  // Not synced: after a kill the page cache writes it out, after a power
  // loss it may be lost, which only weakens the damage check to what the
  // watermarks of later slots prove. A failed write is of no consequence.
  std::string slot(slot_size_, '\0');
  LogSlotHeader h;
  h.marker = true;
  h.seq = seq;
  h.generation = generation;
  h.watermark = seq;
  EncodeLogSlotHeader(reinterpret_cast<uint8_t*>(slot.data()), h, Crc32c(slot.data(), 0));
  file_->Write(SlotOffset(seq), slot.data(), slot.size());
}

void OperationsLog::WriteBehind() {
  std::unique_lock<std::mutex> io(io_mu_, std::try_to_lock);
  if (!io.owns_lock()) return;  // the thread holding it writes our chunk too
  if (!WriteUnwrittenChunks().ok()) return;  // recorded; Sync retries and reports
  bool sync;
  {
    std::lock_guard<std::mutex> l(mu_);
    sync = (written_seq_ - durable_seq_) * slot_size_ >= max_unsynced_bytes_;
  }
  if (sync) WriteAndSync(/*seal_active=*/false);
}

Status OperationsLog::Sync() {
  uint64_t target;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return Status::Aborted("operations log " + path() + " is closed");
    target = last_id_;
    if (durable_id_ >= target) return Status::OK();
  }
  // Group commit: whoever holds io_mu_ writes and syncs everything appended
  // so far; callers queued behind it usually find their events durable.
  std::lock_guard<std::mutex> io(io_mu_);
  {
    std::lock_guard<std::mutex> l(mu_);
    if (durable_id_ >= target) return Status::OK();
  }
  return WriteAndSync(/*seal_active=*/true).WithContext("operations log sync");
}

uint64_t OperationsLog::head_id() const {
  std::lock_guard<std::mutex> l(mu_);
  return head_id_;
}

uint64_t OperationsLog::last_id() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_id_;
}

uint64_t OperationsLog::durable_id() const {
  std::lock_guard<std::mutex> l(mu_);
  return durable_id_;
}

Status OperationsLog::Replay(uint64_t from, const std::function<Status(const LogEvent&)>& f) {
  uint64_t last, start;
  {
    std::lock_guard<std::mutex> l(mu_);
    last = last_id_;
    start = std::max(from, head_id_);
  }
  LogSlotReader reader(file_.get(), slot_size_, data_slots_);
  std::string mem_slot;
  for (uint64_t id = start; id <= last; id++) {
    uint64_t first, end;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (id < head_id_) {
        return Status::Aborted("operations log " + path() + ": event " + std::to_string(id) +
                               " was trimmed during replay");
      }
      size_t i = id - head_id_;
      first = event_first_seq_[i];
      end = i + 1 < event_first_seq_.size() ? event_first_seq_[i + 1] : next_seq_;
    }
    LogEvent ev;
    ev.id = id;
    ev.payload.reserve((end - first) * payload_per_slot_);
    for (uint64_t seq = first; seq < end; seq++) {
      // Slots below the memory front are written and durable; the rest are
      // still buffered (possibly not written yet).
      const uint8_t* slot = nullptr;
      uint64_t front;
      bool in_memory;
      {
        std::lock_guard<std::mutex> l(mu_);
        front = MemoryFrontSeqLocked();
        in_memory = seq >= front && CopySlotFromMemoryLocked(seq, &mem_slot);
      }
      if (in_memory) {
        slot = reinterpret_cast<const uint8_t*>(mem_slot.data());
      } else {
        DEDUPV1_RETURN_IF_ERROR(reader.Get(seq, std::max(front, seq + 1), &slot));
      }
      LogSlotHeader h;
      std::string why;
      bool ok = DecodeLogSlot(slot, payload_per_slot_, &h, &why);
      if (ok && (h.marker || h.seq != seq || h.id != id || h.fragment_index != seq - first ||
                 h.fragment_count != end - first ||
                 (seq > first && h.type != static_cast<uint16_t>(ev.type)))) {
        ok = false;
        why = "holds slot sequence " + std::to_string(h.seq) + ", event " +
              std::to_string(h.id) + " fragment " + std::to_string(h.fragment_index) + " of " +
              std::to_string(h.fragment_count);
      }
      if (!ok) {
        std::lock_guard<std::mutex> l(mu_);
        if (id < head_id_) {
          return Status::Aborted("operations log " + path() + ": event " + std::to_string(id) +
                                 " was trimmed during replay");
        }
        return Status::Corruption("operations log " + path() + ": slot " +
                                  std::to_string(kSuperblockSlots + seq % data_slots_) +
                                  " (slot sequence " + std::to_string(seq) + ") of event " +
                                  std::to_string(id) + ": " + why);
      }
      if (seq == first) ev.type = static_cast<LogEventType>(h.type);
      ev.payload.append(reinterpret_cast<const char*>(slot) + kSlotHeaderBytes, h.payload_length);
    }
    Status s = f(ev);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status OperationsLog::Trim(uint64_t new_head) {
  std::lock_guard<std::mutex> sl(sb_mu_);
  uint64_t head_seq;
  uint32_t min_gen;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return Status::Aborted("operations log " + path() + " is closed");
    if (damage_pending_) return DamagePendingError();
    if (new_head <= head_id_) return Status::OK();
    if (new_head > last_id_ + 1) {
      return Status::InvalidArgument("operations log " + path() + ": cannot trim to " +
                                     std::to_string(new_head) + ", last event is " +
                                     std::to_string(last_id_));
    }
    head_seq = new_head <= last_id_ ? event_first_seq_[new_head - head_id_] : next_seq_;
    // A head event appended by this open may not be durable yet: after a
    // crash its slot may hold a stale slot of an older generation, which must
    // not be taken for it. Recovered events are durable (synced at Open).
    min_gen = new_head >= session_first_id_ ? generation_ : 0;
  }
  DEDUPV1_RETURN_IF_ERROR(WriteSuperblock(new_head, head_seq, min_gen));
  {
    std::lock_guard<std::mutex> l(mu_);
    event_first_seq_.erase(event_first_seq_.begin(),
                           event_first_seq_.begin() + static_cast<ptrdiff_t>(new_head - head_id_));
    head_id_ = new_head;
    head_seq_ = head_seq;
  }
  space_cv_.notify_all();
  return Status::OK();
}

Status OperationsLog::DamagePendingError() const {
  return Status::Corruption("operations log " + path() +
                            " is damaged: nothing is appended or trimmed until the damage is accepted");
}

const LogDamage& OperationsLog::damage() const {
  std::lock_guard<std::mutex> l(mu_);
  return damage_;
}

bool OperationsLog::damage_pending() const {
  std::lock_guard<std::mutex> l(mu_);
  return damage_pending_;
}

Status OperationsLog::ReplaySalvaged(const std::function<Status(const LogEvent&)>& f) {
  std::vector<LogDamage::Event> events;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!damage_pending_) {
      return Status::InvalidArgument("operations log " + path() + ": no damage pending, nothing salvaged");
    }
    events = damage_.salvaged;
  }
  // Nothing is written while damage is pending: the slots are as recovery
  // found them. They are checked again all the same.
  LogSlotReader reader(file_.get(), slot_size_, data_slots_);
  for (const LogDamage::Event& e : events) {
    LogEvent ev;
    ev.id = e.id;
    ev.type = static_cast<LogEventType>(e.type);
    const uint64_t limit = e.first_seq + e.slots;
    for (uint64_t seq = e.first_seq; seq < limit; seq++) {
      const uint8_t* slot = nullptr;
      DEDUPV1_RETURN_IF_ERROR(reader.Get(seq, limit, &slot));
      LogSlotHeader h;
      std::string why;
      if (DecodeLogSlot(slot, payload_per_slot_, &h, &why) &&
          (h.marker || h.seq != seq || h.id != e.id || h.fragment_index != seq - e.first_seq || h.type != e.type)) {
        why = "changed since the open";
      }
      if (!why.empty()) {
        return Status::Corruption("operations log " + path() + ": slot sequence " + std::to_string(seq) +
                                  " of salvaged event " + std::to_string(e.id) + ": " + why);
      }
      ev.payload.append(reinterpret_cast<const char*>(slot) + kSlotHeaderBytes, h.payload_length);
    }
    DEDUPV1_RETURN_IF_ERROR(f(ev));
  }
  return Status::OK();
}

Status OperationsLog::DiscardDamaged(uint64_t min_next_id) {
  std::lock_guard<std::mutex> sl(sb_mu_);
  uint64_t head_id, head_seq;
  uint32_t generation;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return Status::Aborted("operations log " + path() + " is closed");
    if (!damage_pending_) {
      return Status::InvalidArgument("operations log " + path() + ": no damage pending, nothing to discard");
    }
    // Above every id and slot sequence in the file: no slot of the damaged
    // log can be taken for one of the new chain, nor prove it damaged
    // (a watermark never exceeds its slot's sequence number).
    head_id = std::max({min_next_id, last_id_ + 1, damage_.max_id + 1});
    head_seq = std::max(next_seq_, damage_.max_seq + 1);
    generation = generation_;
  }
  // The head is the empty position after the last event: the current
  // generation, so no stale slot there is taken for a new event.
  DEDUPV1_RETURN_IF_ERROR(WriteSuperblock(head_id, head_seq, generation));
  {
    std::lock_guard<std::mutex> l(mu_);
    head_id_ = head_id;
    last_id_ = head_id - 1;
    head_seq_ = next_seq_ = active_start_seq_ = written_seq_ = durable_seq_ = head_seq;
    written_id_ = durable_id_ = last_id_;
    session_first_id_ = head_id;
    event_first_seq_.clear();
    damage_pending_ = false;
  }
  space_cv_.notify_all();
  return Status::OK();
}

bool OperationsLog::IsAboveSoftLimit() const {
  std::lock_guard<std::mutex> l(mu_);
  return static_cast<double>(next_seq_ - head_seq_) >=
         options_.soft_limit * static_cast<double>(data_slots_);
}

OperationsLogStats OperationsLog::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  OperationsLogStats s;
  s.head_id = head_id_;
  s.last_id = last_id_;
  s.durable_id = durable_id_;
  s.slots = data_slots_;
  s.used_slots = next_seq_ - head_seq_;
  s.appended_events = appended_events_;
  s.appended_bytes = appended_bytes_;
  s.syncs = syncs_;
  s.throttled_appends = throttled_appends_;
  s.recovered_events = recovered_events_;
  s.fill = static_cast<double>(s.used_slots) / static_cast<double>(data_slots_);
  s.last_error = last_error_;
  return s;
}

Status OperationsLog::Close() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return Status::OK();
  }
  Status s = Sync();
  {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
  }
  space_cv_.notify_all();
  return s;
}

}  // namespace dedupv1
