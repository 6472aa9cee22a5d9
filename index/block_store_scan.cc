#include "index/block_store_scan.h"

#include <set>
#include <utility>

#include <fmt/format.h>

#include "index/block_index.h"
#include "index/block_mapping.h"

namespace dedupv1 {

namespace {

std::string HexKey(const std::string& key) {
  std::string out;
  for (unsigned char c : key) out += fmt::format("{:02x}", c);
  return out;
}

// Names a raw key: "1/100", or the hex bytes of a malformed one.
std::string KeyName(const std::string& key) {
  BlockId id;
  if (DecodeBlockKey(key, &id)) return BlockIdString(id);
  return fmt::format("malformed key {} ({} bytes)", HexKey(key), key.size());
}

// Pass 1: every record classified; the problems in store order.
Status FindProblems(KvStore* store, const BlockStoreScanOptions& options, BlockStoreScan* out) {
  bool has_prev = false;
  BlockId prev;
  return store->Scan("", "", [&](const std::string& key, const std::string& value) {
    out->records++;
    BlockStoreProblem p;
    p.key = key;
    BlockMapping::RecordHeader header;
    Status readable = BlockMapping::ParseHeader(value, &header);
    if (readable.ok()) {
      p.has_owner = header.has_owner;
      p.owner = header.owner;
      p.version = header.version;
    } else {
      p.detail = readable.ToString();
    }
    if (!DecodeBlockKey(key, &p.block)) {
      p.kind = BlockStoreProblem::Kind::kMalformedKey;
      out->problems.push_back(std::move(p));
      return true;
    }
    if (options.on_key) options.on_key(p.block);
    if (!readable.ok()) {
      p.kind = BlockStoreProblem::Kind::kUnreadable;
      out->problems.push_back(std::move(p));
      return true;
    }
    if (header.has_owner && !(header.owner == p.block)) {
      // Its key was damaged (or the record moved): it is out of place by
      // definition, so it does not take part in the order check below.
      p.kind = BlockStoreProblem::Kind::kDisplaced;
      out->problems.push_back(std::move(p));
      return true;
    }
    if (!header.has_owner) out->old_format++;
    if (has_prev && !(prev < p.block)) {
      p.kind = prev == p.block ? BlockStoreProblem::Kind::kDuplicateKey : BlockStoreProblem::Kind::kOutOfOrder;
      p.previous = prev;
      out->problems.push_back(p);
    }
    has_prev = true;
    prev = p.block;
    return true;
  });
}

// The blocks the problems concern and whether their key is ambiguous.
std::map<BlockId, bool> ConcernedBlocks(const std::vector<BlockStoreProblem>& problems) {
  std::map<BlockId, bool> concerned;  // block -> ambiguous key
  auto add = [&](const BlockId& id, bool ambiguous) {
    auto [it, inserted] = concerned.emplace(id, ambiguous);
    if (!inserted && ambiguous) it->second = true;
  };
  for (const BlockStoreProblem& p : problems) {
    switch (p.kind) {
      case BlockStoreProblem::Kind::kMalformedKey:
        if (p.has_owner) add(p.owner, false);
        break;
      case BlockStoreProblem::Kind::kUnreadable:
        break;  // the block's own lookup finds it and reports it
      case BlockStoreProblem::Kind::kDisplaced:
        add(p.block, true);
        add(p.owner, false);
        break;
      case BlockStoreProblem::Kind::kDuplicateKey:
        add(p.block, true);
        break;
      case BlockStoreProblem::Kind::kOutOfOrder:
        // Either of the two may be the one out of place.
        add(p.block, true);
        add(p.previous, true);
        break;
    }
  }
  return concerned;
}

// Pass 2: the records of the concerned blocks.
Status CollectRecords(KvStore* store, const std::map<BlockId, bool>& concerned, BlockStoreScan* out) {
  for (const auto& [id, ambiguous] : concerned) out->blocks[id].ambiguous_key = ambiguous;
  Status s = store->Scan("", "", [&](const std::string& key, const std::string& value) {
    BlockId key_id;
    const bool well_formed = DecodeBlockKey(key, &key_id);
    BlockMapping::RecordHeader header;
    const bool readable = BlockMapping::ParseHeader(value, &header).ok();
    auto under_key = well_formed ? out->blocks.find(key_id) : out->blocks.end();
    if (under_key != out->blocks.end()) {
      BlockStoreResolution& r = under_key->second;
      r.records.push_back({key, value});
      if (!readable) {
        r.unrepairable = fmt::format("its key {} also holds a record that cannot be read", KeyName(key));
      } else if (!header.has_owner) {
        r.unrepairable = fmt::format("its key {} holds a record written by an older build, which carries no block id",
                                     KeyName(key));
      }
    }
    if (!readable || !header.has_owner) return true;
    auto owner = out->blocks.find(header.owner);
    if (owner == out->blocks.end()) return true;
    BlockStoreResolution& r = owner->second;
    if (owner != under_key) r.records.push_back({key, value});
    const bool own_key = well_formed && key_id == header.owner;
    // The newest version wins; on a tie the record under its own key.
    if (!r.has_newest || header.version > r.newest_version ||
        (header.version == r.newest_version && own_key)) {
      r.has_newest = true;
      r.newest_version = header.version;
      r.newest_key = key;
      r.newest = value;
    }
    return true;
  });
  DEDUPV1_RETURN_IF_ERROR(s);
  for (auto& [id, r] : out->blocks) {
    r.displaced = r.has_newest && r.newest_key != EncodeBlockKey(id);
    std::vector<std::string> parts;
    if (r.has_newest) {
      parts.push_back(fmt::format("its newest record (version {}) is under {}", r.newest_version,
                                  r.displaced ? KeyName(r.newest_key) + ", not its own key" : "its own key"));
    } else {
      parts.push_back("no record carries its id");
    }
    std::vector<std::string> others;
    for (const KvStore::Record& rec : r.records) {
      BlockMapping::RecordHeader h;
      if (rec.key == EncodeBlockKey(id) && BlockMapping::ParseHeader(rec.value, &h).ok() && h.has_owner &&
          !(h.owner == id)) {
        others.push_back(BlockIdString(h.owner));
      }
    }
    if (!others.empty()) {
      std::string list;
      for (const std::string& o : others) list += (list.empty() ? "" : ", ") + o;
      parts.push_back("its key also holds the record of block " + list);
    }
    if (r.ambiguous_key && others.empty()) {
      parts.push_back(fmt::format("its key holds {} record{} or is out of key order", r.records.size(),
                                  r.records.size() == 1 ? "" : "s"));
    }
    for (const std::string& part : parts) r.why += (r.why.empty() ? "" : "; ") + part;
  }
  // A record is removed only if every block it belongs to is repaired:
  // otherwise repairing one block would destroy another's only copy.
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [id, r] : out->blocks) {
      if (!r.unrepairable.empty()) continue;
      for (const KvStore::Record& rec : r.records) {
        BlockId key_id;
        BlockMapping::RecordHeader h;
        std::vector<BlockId> belongs;
        if (DecodeBlockKey(rec.key, &key_id)) belongs.push_back(key_id);
        if (BlockMapping::ParseHeader(rec.value, &h).ok() && h.has_owner) belongs.push_back(h.owner);
        for (const BlockId& b : belongs) {
          auto other = out->blocks.find(b);
          if (other != out->blocks.end() && !other->second.unrepairable.empty()) {
            r.unrepairable = fmt::format("a record to be moved also belongs to block {}, which cannot be repaired",
                                         BlockIdString(b));
            changed = true;
            break;
          }
        }
        if (changed) break;
      }
    }
  }
  return Status::OK();
}

// Rewrites the format-1 records in format 2, batch by batch.
Status UpgradeOldRecords(KvStore* store, size_t batch_size, BlockStoreScan* out) {
  std::string from;
  for (;;) {
    std::vector<KvStore::WriteOp> batch;
    std::string last;
    bool more = false;
    Status s = store->Scan(from, "", [&](const std::string& key, const std::string& value) {
      last = key;
      if (batch.size() >= batch_size) {
        more = true;
        return false;
      }
      BlockId id;
      BlockMapping::RecordHeader header;
      if (!DecodeBlockKey(key, &id) || !BlockMapping::ParseHeader(value, &header).ok() || header.has_owner) {
        return true;
      }
      BlockMapping mapping;
      // A record whose items break an invariant stays as it is: reading it
      // reports it.
      if (!BlockMapping::Parse(value, id, &mapping).ok()) return true;
      KvStore::WriteOp op;
      op.key = key;
      mapping.Serialize(id, &op.value);
      batch.push_back(std::move(op));
      return true;
    });
    DEDUPV1_RETURN_IF_ERROR(s);
    if (!batch.empty()) {
      DEDUPV1_RETURN_IF_ERROR(store->Write(batch));
      out->upgraded += batch.size();
      out->old_format -= std::min<uint64_t>(out->old_format, batch.size());
      from = batch.back().key;
      from.push_back('\0');
    }
    if (!more) return Status::OK();
  }
}

}  // namespace

const char* BlockStoreProblemKindName(BlockStoreProblem::Kind kind) {
  switch (kind) {
    case BlockStoreProblem::Kind::kMalformedKey: return "malformed-key";
    case BlockStoreProblem::Kind::kUnreadable: return "unreadable";
    case BlockStoreProblem::Kind::kDisplaced: return "displaced";
    case BlockStoreProblem::Kind::kDuplicateKey: return "duplicate-key";
    case BlockStoreProblem::Kind::kOutOfOrder: return "out-of-order";
  }
  return "unknown";
}

std::string DescribeBlockStoreProblem(const BlockStoreProblem& p) {
  switch (p.kind) {
    case BlockStoreProblem::Kind::kMalformedKey:
      return fmt::format("{} is not a block key; its record {}", KeyName(p.key),
                         p.has_owner ? fmt::format("belongs to block {} (version {})", BlockIdString(p.owner), p.version)
                                     : "cannot be read either: " + p.detail);
    case BlockStoreProblem::Kind::kUnreadable:
      return fmt::format("the record under key {} cannot be read: {}", BlockIdString(p.block), p.detail);
    case BlockStoreProblem::Kind::kDisplaced:
      return fmt::format("key {} holds the record of block {} (version {})", BlockIdString(p.block),
                         BlockIdString(p.owner), p.version);
    case BlockStoreProblem::Kind::kDuplicateKey:
      return fmt::format("key {} holds more than one record", BlockIdString(p.block));
    case BlockStoreProblem::Kind::kOutOfOrder:
      return fmt::format("key {} follows key {} in the store's order", BlockIdString(p.block),
                         BlockIdString(p.previous));
  }
  return "unknown problem";
}

std::string BlockIdString(const BlockId& id) { return fmt::format("{}/{}", id.volume, id.block); }

Status ScanBlockStore(KvStore* store, const BlockStoreScanOptions& options, BlockStoreScan* out) {
  *out = BlockStoreScan();
  Status s = FindProblems(store, options, out);
  if (!s.ok()) return s.WithContext("block index: scanning the store");
  const std::map<BlockId, bool> concerned = ConcernedBlocks(out->problems);
  if (!concerned.empty()) {
    s = CollectRecords(store, concerned, out);
    if (!s.ok()) return s.WithContext("block index: collecting the records of damaged blocks");
  }
  bool in_order = true;
  for (const BlockStoreProblem& p : out->problems) {
    if (p.kind != BlockStoreProblem::Kind::kUnreadable) in_order = false;
  }
  if (options.upgrade_old_records && out->old_format > 0 && in_order) {
    s = UpgradeOldRecords(store, std::max<size_t>(1, options.upgrade_batch), out);
    if (!s.ok()) return s.WithContext("block index: rewriting old-format records");
  }
  return Status::OK();
}

Status RepairBlockStore(KvStore* store, const BlockStoreScan& scan, std::vector<BlockId>* repaired) {
  repaired->clear();
  std::vector<KvStore::Record> remove;
  std::set<std::pair<std::string, std::string>> removing;
  std::vector<KvStore::WriteOp> puts;
  for (const auto& [id, r] : scan.blocks) {
    if (!r.unrepairable.empty()) continue;
    for (const KvStore::Record& rec : r.records) {
      if (removing.emplace(rec.key, rec.value).second) remove.push_back(rec);
    }
    if (r.has_newest) {
      KvStore::WriteOp op;
      op.key = EncodeBlockKey(id);
      op.value = r.newest;
      puts.push_back(std::move(op));
    }
    repaired->push_back(id);
  }
  if (repaired->empty()) return Status::OK();
  uint64_t removed = 0;
  Status s = store->RemoveExactThenWrite(remove, puts, &removed);
  if (!s.ok()) {
    repaired->clear();
    return s.WithContext("block index: repairing the store");
  }
  return Status::OK();
}

}  // namespace dedupv1
