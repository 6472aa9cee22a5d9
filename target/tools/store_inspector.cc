#include "target/tools/store_inspector.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "chunkstore/storage_backend_registry.h"
#include "index/block_index.h"
#include "index/block_mapping.h"
#include "index/chunk_index.h"
#include "index/disk_hash_table.h"
#include "log/operations_log.h"
#include "target/tools/container_dump.h"
#include "target/tools/log_damage_report.h"
#include "target/tools/log_summary.h"
#include "target/tools/progress.h"
#include "target/tools/volume_table.h"

namespace dedupv1 {
namespace tools {

namespace {

// The containers and the catalog, through the backend the config names
// (the local one: NotFound if there is no container directory).
Status OpenStorage(const Options& options, Env* env, StorageBackend* storage) {
  return OpenStorageBackend(options.chunk_store, env, StorageOpenMode::kExisting, storage);
}

// A damaged log opens too (and then writes nothing): it is shown as found.
Status OpenLog(const Options& options, Env* env, std::unique_ptr<OperationsLog>* log) {
  if (!env->FileExists(options.log.path)) return Status::NotFound("no operations log " + options.log.path);
  OperationsLogOptions log_options = options.log;
  log_options.accept_damage = true;
  Status s = OperationsLog::Open(log_options, env, log);
  if (!s.ok()) return s.WithContext("open operations log " + options.log.path);
  return Status::OK();
}

Status OpenBlockIndex(const Options& options, Env* env, std::unique_ptr<BlockIndex>* index) {
  if (!env->FileExists(options.block_index.path)) {
    return Status::NotFound("no block index " + options.block_index.path);
  }
  BlockIndexOptions o = options.block_index;
  o.before_write_back = nullptr;  // nothing is written
  Status s = BlockIndex::Open(o, env, nullptr, index);
  if (!s.ok()) return s.WithContext("open block index " + options.block_index.path);
  return Status::OK();
}

// GC's dead marks (containers/dead-chunks): chunks kept in their container as
// garbage. An unreadable part is reported and treated as empty.
DeadMarks ReadDeadMarks(ContainerCatalog* catalog, std::ostream& out) {
  DeadMarks marks;
  bool intact = true;
  Status s = catalog->ReadDeadMarks(&marks, &intact);
  if (!s.ok()) out << "  (cannot read GC's dead marks: " << s.ToString() << ")\n";
  if (s.ok() && !intact) {
    out << "  (" << catalog->Where(CatalogPart::kDeadMarks) << " ends in a torn record; the marks before it are shown)\n";
  }
  return marks;
}

bool IsMarkedDead(const DeadMarks& marks, ContainerId id, const Fingerprint& fp) {
  auto it = marks.find(id);
  return it != marks.end() && std::find(it->second.begin(), it->second.end(), fp) != it->second.end();
}

constexpr char kKeptGarbage[] = " [garbage kept in place: containers/dead-chunks]";

}  // namespace

Status StoreInspector::PrintContainer(ContainerId id) {
  StorageBackend storage;
  DEDUPV1_RETURN_IF_ERROR(OpenStorage(options_, env_, &storage));
  const std::string path = storage.containers->Where(id);
  std::string bytes;
  Status s = storage.containers->Get(id, &bytes);
  if (s.IsNotFound()) {
    out_ << fmt::format("container {}: does not exist (no file {})\n", id, path);
    return Status::NotFound(fmt::format("container {} does not exist", id));
  }
  if (!s.ok()) return s.WithContext(fmt::format("read container {}", id));
  const ContainerDump dump = DumpContainer(id, bytes);
  out_ << fmt::format("container {} ({})\n", id, path);
  PrintContainerDump(dump, out_);
  const DeadMarks marks = ReadDeadMarks(storage.catalog.get(), out_);
  auto dead = marks.find(id);
  if (dead != marks.end() && !dead->second.empty()) {
    out_ << fmt::format("  gc garbage:   {} of the items are garbage kept in place (containers/dead-chunks; a "
                        "merge leaves them out)\n",
                        dead->second.size());
    for (const Fingerprint& fp : dead->second) out_ << "    fp " << fp.ToHex() << "\n";
  }
  return dump.verdict;
}

Status StoreInspector::PrintChunk(const Fingerprint& fp) {
  ChunkIndexOptions index_options = options_.chunk_index;
  index_options.grow_in_background = false;  // reads the store as it is
  if (index_options.table_backend == "disk" && !env_->FileExists(index_options.table.path)) {
    return Status::NotFound("no chunk index " + index_options.table.path);
  }
  std::unique_ptr<ChunkTable> table;
  Status s = ChunkIndex::OpenTable(index_options, env_, &table);
  if (!s.ok()) return s.WithContext("open chunk index");
  ChunkIndexEntry entry;
  s = table->Get(fp, &entry);
  table.reset();
  StorageBackend storage;
  DEDUPV1_RETURN_IF_ERROR(OpenStorage(options_, env_, &storage));
  ContainerStore* store = storage.containers.get();
  out_ << fmt::format("chunk {}\n", fp.ToHex());
  if (s.ok()) {
    out_ << fmt::format("  chunk index:  container {}, usage count {} (counted up to log event {}), {}\n",
                        entry.container, entry.usage_count, entry.last_event_id,
                        entry.committed ? "committed" : "NOT committed");
    std::string bytes;
    Status g = store->Get(entry.container, &bytes);
    if (!g.ok()) {
      out_ << fmt::format("  container {}: {}{}\n", entry.container, g.ToString(),
                          g.IsNotFound() ? " (a GC merge may have folded it into a newer container: see "
                                           "containers/container-aliases)"
                                         : "");
      return Status::OK();
    }
    const ContainerDump dump = DumpContainer(entry.container, bytes);
    const ContainerDumpItem* item = FindItem(dump, fp);
    out_ << fmt::format("  container {}: {}\n", entry.container,
                        dump.verdict.ok() ? "good" : dump.verdict.ToString());
    out_ << "  item:         " << (item ? DescribeItem(*item) : "the container does not hold this chunk") << "\n";
    if (IsMarkedDead(ReadDeadMarks(storage.catalog.get(), out_), entry.container, fp)) {
      out_ << "  gc:           also marked as garbage in containers/dead-chunks although the chunk index names it "
              "(the next open's first GC round removes the mark)\n";
    }
    return Status::OK();
  }
  if (!s.IsNotFound()) return s;
  out_ << "  chunk index:  no entry in the table (after an unclean stop the next open re-imports chunks of "
          "containers committed since the last checkpoint)\n";
  // Search the containers.
  std::vector<ContainerId> ids;
  DEDUPV1_RETURN_IF_ERROR(store->List(&ids));
  std::sort(ids.begin(), ids.end());
  const DeadMarks marks = ReadDeadMarks(storage.catalog.get(), out_);
  Progress progress("searching containers", ids.size(), "containers", progress_);
  size_t found = 0;
  for (ContainerId id : ids) {
    progress.Add();
    std::string bytes;
    if (!store->Get(id, &bytes).ok()) continue;
    const ContainerDump dump = DumpContainer(id, bytes);
    if (const ContainerDumpItem* item = FindItem(dump, fp)) {
      found++;
      out_ << fmt::format("  container {}{}: {}{}\n", id, dump.verdict.ok() ? "" : " (DAMAGED)", DescribeItem(*item),
                          IsMarkedDead(marks, id, fp) ? kKeptGarbage : "");
    }
  }
  progress.Finish();
  if (found == 0) out_ << fmt::format("  containers:   none of {} holds it\n", ids.size());
  return Status::NotFound("chunk " + fp.ToHex() + " has no chunk index entry");
}

Status StoreInspector::PrintBlock(const std::string& volume_name, uint64_t block) {
  std::vector<VolumeEntry> volumes;
  DEDUPV1_RETURN_IF_ERROR(ReadVolumeTable(env_, options_, &volumes));
  VolumeEntry volume;
  DEDUPV1_RETURN_IF_ERROR(FindVolume(volumes, volume_name, &volume));
  const uint64_t block_size = options_.block_size;
  const uint64_t blocks = (volume.size + block_size - 1) / block_size;
  if (block >= blocks) {
    return Status::InvalidArgument(fmt::format("block {} is beyond the end of volume {} ({} blocks of {} bytes)",
                                               block, volume.name, blocks, block_size));
  }
  const BlockId id{volume.id, block};
  out_ << fmt::format("volume {} (id {}) block {} (volume bytes [{}, {}))\n", volume.name, volume.id, block,
                      block * block_size, (block + 1) * block_size);
  std::unique_ptr<BlockIndex> index;
  DEDUPV1_RETURN_IF_ERROR(OpenBlockIndex(options_, env_, &index));
  BlockMapping mapping;
  Status s = index->Get(id, &mapping);
  index->Close();
  if (s.IsNotFound()) {
    out_ << "  block index:  no mapping (never written: reads as zeros)\n";
  } else if (!s.ok()) {
    out_ << "  block index:  " << s.ToString() << "\n";
  } else {
    out_ << fmt::format("  block index:  version {}, {} item{}\n", mapping.version(), mapping.items().size(),
                        mapping.items().size() == 1 ? "" : "s");
    uint64_t pos = 0;
    for (const auto& item : mapping.items()) {
      if (item.IsZero()) {
        out_ << fmt::format("    [{}, {}) zeros\n", pos, pos + item.size);
      } else {
        out_ << fmt::format("    [{}, {}) chunk {} container {} chunk bytes [{}, {})\n", pos, pos + item.size,
                            item.fp.ToHex(), item.container, item.chunk_offset, item.chunk_offset + item.size);
      }
      pos += item.size;
    }
  }
  // Mapping events of this block the log still holds (after an unclean stop
  // they are newer than the block index).
  std::unique_ptr<OperationsLog> log;
  Status l = OpenLog(options_, env_, &log);
  if (!l.ok()) {
    out_ << "  operations log: " << l.ToString() << "\n";
    return s.IsNotFound() ? Status::OK() : s;
  }
  std::vector<std::string> lines;
  const char* note = "";
  auto collect = [&](const LogEvent& e) {
    BlockId b;
    if (LogEventBlock(e, &b) && b == id) {
      lines.push_back(fmt::format("    #{} {} {}{}", e.id, LogEventTypeName(e.type), DescribeLogEvent(e), note));
    }
    return Status::OK();
  };
  if (log->last_id() >= log->head_id()) l = log->Replay(log->head_id(), collect);
  if (l.ok() && log->damage_pending()) {
    out_ << "  operations log: DAMAGED (dedupv1_debug log shows where); events after the damage are marked\n";
    note = " (intact, after the damage)";
    l = log->ReplaySalvaged(collect);
  }
  log->Close();
  if (!l.ok()) {
    out_ << "  operations log: " << l.ToString() << "\n";
  } else if (lines.empty()) {
    out_ << "  operations log: no events for this block\n";
  } else {
    out_ << fmt::format("  operations log: {} event{} for this block not yet checkpointed (newest last):\n",
                        lines.size(), lines.size() == 1 ? "" : "s");
    for (const auto& line : lines) out_ << line << "\n";
  }
  return s.IsNotFound() ? Status::OK() : s;
}

Status StoreInspector::PrintLog(uint64_t from, uint64_t to) {
  std::unique_ptr<OperationsLog> log;
  DEDUPV1_RETURN_IF_ERROR(OpenLog(options_, env_, &log));
  const OperationsLogStats st = log->stats();
  out_ << fmt::format("operations log {}\n", log->path());
  out_ << fmt::format("  slots:    {} of {} used ({:.1f}%), {} payload bytes per slot\n", st.used_slots, st.slots,
                      st.fill * 100, log->payload_per_slot());
  Status damage;
  if (log->damage_pending()) {
    // Slot by slot where and why, the lost ids and the intact events after
    // the damage; the chain before it follows as usual.
    damage = PrintLogDamage(log.get(), out_);
    if (damage.ok()) {
      damage = Status::Corruption("operations log " + log->path() +
                                  " is damaged (shown above); dedupv1_replay --accept-log-damage recovers what is intact");
    }
    out_ << "events before the damage:\n";
  }
  if (st.last_id < st.head_id) {
    out_ << fmt::format("  events:   none (empty; the next event gets id {})\n", st.head_id);
    log->Close();
    return damage;
  }
  out_ << fmt::format("  events:   {}..{} ({} live)\n", st.head_id, st.last_id, st.last_id - st.head_id + 1);
  if (from < st.head_id) {
    if (from > 0) out_ << fmt::format("  (events before {} were trimmed by a checkpoint)\n", st.head_id);
    from = st.head_id;
  }
  if (to == 0 || to > st.last_id) to = st.last_id;
  LogEventCounts counts;
  Status s;
  if (from <= to) {
    s = log->Replay(from, [&](const LogEvent& e) {
      if (e.id > to) return Status::Aborted("past the requested range");
      counts[LogEventTypeName(e.type)]++;
      out_ << fmt::format("#{} {} {}\n", e.id, LogEventTypeName(e.type), DescribeLogEvent(e));
      return Status::OK();
    });
    // Replay hands back our own stop signal; anything else is real.
    if (s.IsAborted() && s.message() == "past the requested range") s = Status::OK();
  }
  log->Close();
  out_ << fmt::format("shown: events {}..{}: {}\n", from, to, FormatLogEventCounts(counts));
  return s.ok() ? damage : s;
}

Status StoreInspector::PrintVolumes() {
  std::vector<VolumeEntry> volumes;
  DEDUPV1_RETURN_IF_ERROR(ReadVolumeTable(env_, options_, &volumes));
  std::unique_ptr<BlockIndex> index;
  Status open = OpenBlockIndex(options_, env_, &index);
  out_ << fmt::format("{:>4}  {:<24} {:>16}  {:<32}  {:<12} {}\n", "id", "name", "size", "uid", "config",
                      "blocks mapped");
  Status result;
  for (const auto& v : volumes) {
    std::string mapped = "?";
    if (open.ok()) {
      uint64_t n = 0;
      Status s = index->ForEachBlock(v.id, [&n](uint64_t, const BlockMapping&) {
        n++;
        return true;
      });
      mapped = s.ok() ? std::to_string(n) : fmt::format("{} then error: {}", n, s.ToString());
      if (!s.ok() && result.ok()) result = s;
    }
    out_ << fmt::format("{:>4}  {:<24} {:>16}  {:<32}  {:<12} {}\n", v.id, v.name, v.size,
                        v.uid.empty() ? "- (made at the next open)" : v.uid,
                        v.configured ? "configured" : "not served", mapped);
  }
  for (const auto& c : options_.volumes) {
    bool known = std::any_of(volumes.begin(), volumes.end(), [&](const VolumeEntry& v) { return v.name == c.name; });
    if (!known) out_ << fmt::format("   -  {:<24} {:>16}  {:<32}  {:<12} -\n", c.name, c.size, "-", "not created");
  }
  if (open.ok()) {
    index->Close();
    out_ << fmt::format("block size {}; mapped blocks are those in the block index store (after an unclean stop "
                        "the log may hold newer ones)\n",
                        options_.block_size);
  } else {
    out_ << "block index: " << open.ToString() << "\n";
  }
  return result;
}

}  // namespace tools
}  // namespace dedupv1
