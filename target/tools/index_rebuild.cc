#include "target/tools/index_rebuild.h"

#include <ctime>
#include <memory>
#include <vector>

#include "core/base/config.h"
#include "core/engine/data_dir.h"
#include "index/chunk_index.h"
#include "index/disk_hash_table.h"
#include "index/growable_hash_table.h"

namespace dedupv1 {
namespace tools {
namespace {

constexpr char kTableBytesKey[] = "table-bytes";
constexpr char kReplacedKey[] = "replaced";

// Every file of a local table: the table, its journal, a growth's next
// table and journal, and the temporaries of a creation cut short.
std::vector<std::string> TableFiles(const std::string& table) {
  const std::string next = GrowableHashTable::NextPath(table);
  return {table, DiskHashTable::JournalPath(table), next, DiskHashTable::JournalPath(next), table + ".tmp",
          next + ".tmp"};
}

std::string UtcStamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// Raises |*bytes| to the size of the table at chunk-index.path if that is
// larger: a grown table's size holds its entries. A file of another
// geometry (damaged, or of another page size) is not taken.
void TakeLargerTableSize(Env* env, const Options& options, uint64_t* bytes) {
  const std::string& table = options.chunk_index.table.path;
  uint64_t size = 0;
  if (env->FileExists(table) && env->GetFileSize(table, &size).ok() && size > *bytes &&
      size % options.chunk_index.table.page_size == 0) {
    *bytes = size;
  }
}

std::string MarkerPath(const Options& options) { return JoinPath(options.data_dir, kIndexRebuildFileName); }

Status WriteMarker(Env* env, const Options& options, const IndexRebuildStart& start) {
  return WriteFileAtomically(
      env, MarkerPath(options),
      "# dedupv1_check --rebuild-index is building a new chunk index; the store opens again once it has finished.\n"
      "# Run it again if it stopped. (" + std::string(kReplacedKey) + ": where the old table went.)\n" +
          kTableBytesKey + " = " + std::to_string(start.table_bytes) + "\n" + kReplacedKey + " = " + start.replaced +
          "\n");
}

Status ReadMarker(Env* env, const std::string& path, IndexRebuildStart* start) {
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env, path, &text));
  Config c;
  Status s = Config::Parse(text, path, &c);
  if (!s.ok()) return Status::Corruption(s.message() + " (remove the file and run the rebuild again)");
  for (const auto& e : c.entries()) {
    if (e.key == kTableBytesKey) {
      if (!ParseUint(e.value, &start->table_bytes).ok() || start->table_bytes == 0) {
        return Status::Corruption(path + ":" + std::to_string(e.line) + ": " + kTableBytesKey + " '" + e.value +
                                  "' is not a size (remove the file and run the rebuild again)");
      }
    } else if (e.key == kReplacedKey) {
      start->replaced = e.value;
    }
  }
  if (start->table_bytes == 0) {
    return Status::Corruption(path + ": no " + std::string(kTableBytesKey) +
                              " line (remove the file and run the rebuild again)");
  }
  return Status::OK();
}

// Step 2: the files at the table's names go aside under one suffix. The
// marker names the suffix before the first rename, so a move cut short goes
// on under it; a name it would take that exists gets a fresh suffix.
Status MoveTableAside(Env* env, const Options& options, IndexRebuildStart* start) {
  const std::string& table = options.chunk_index.table.path;
  std::vector<std::string> present;
  for (const std::string& f : TableFiles(table)) {
    if (env->FileExists(f)) present.push_back(f);
  }
  if (present.empty()) return Status::OK();
  auto free_under = [&](const std::string& suffix) {
    for (const std::string& f : present) {
      if (env->FileExists(f + suffix)) return false;
    }
    return true;
  };
  std::string suffix;
  const std::string recorded = start->replaced.rfind(table, 0) == 0 ? start->replaced.substr(table.size()) : "";
  if (!recorded.empty() && free_under(recorded)) {
    suffix = recorded;
  } else {
    const std::string stamp = ".replaced-" + UtcStamp();
    suffix = stamp;
    for (int n = 2; !free_under(suffix); n++) {
      if (n > 1000) return Status::Aborted("cannot move " + table + " aside: " + table + stamp + "-N all exist");
      suffix = stamp + "-" + std::to_string(n);
    }
  }
  // The first run's move names the table the store had; a later one moves
  // a table put back, or a finished rebuild's whose marker outlived it.
  if (start->replaced.empty() || !env->FileExists(start->replaced)) start->replaced = table + suffix;
  DEDUPV1_RETURN_IF_ERROR(WriteMarker(env, options, *start));
  for (const std::string& f : present) DEDUPV1_RETURN_IF_ERROR(env->RenameFile(f, f + suffix));
  return env->SyncDir(DirName(table));
}

}  // namespace

std::string IndexRebuildWorkPath(const std::string& table) { return table + ".new"; }

Options RebuildOptions(const Options& options) {
  Options o = options;
  o.chunk_index.table.path = IndexRebuildWorkPath(options.chunk_index.table.path);
  o.index_rebuild = true;
  return o;
}

Status CheckRebuildable(const Options& options) {
  if (options.chunk_index.cluster_scope || options.chunk_index.table_backend != "disk") {
    return Status::NotSupported("--rebuild-index rebuilds a chunk index table on local disk; this store's is " +
                                ChunkIndex::TableWhere(options.chunk_index) + ", which it does not rebuild");
  }
  return Status::OK();
}

Status StartIndexRebuild(Env* env, const Options& options, IndexRebuildStart* start) {
  *start = IndexRebuildStart();
  DEDUPV1_RETURN_IF_ERROR(CheckRebuildable(options));
  const std::string& table = options.chunk_index.table.path;
  const std::string marker = MarkerPath(options);
  const std::string work = IndexRebuildWorkPath(table);
  const bool resumed = env->FileExists(marker);
  if (resumed) {
    DEDUPV1_RETURN_IF_ERROR(ReadMarker(env, marker, start));
    start->resumed = true;
  } else {
    // Files under the work names that no rebuild made: not ours to delete.
    for (const std::string& f : TableFiles(work)) {
      if (env->FileExists(f)) {
        return Status::Aborted(f + " exists, but no rebuild is under way (" + marker +
                               " is missing): move it away first; the rebuild builds its table there");
      }
    }
    start->table_bytes = options.chunk_index.table.size_bytes;
  }
  // Also on a resumed run: a table put back at the path may be larger.
  TakeLargerTableSize(env, options, &start->table_bytes);
  // Room for the new table before anything moves (a resumed run's own work
  // files go, so their bytes count as free).
  const std::string dir = DirName(table);
  uint64_t free_bytes = 0;
  DEDUPV1_RETURN_IF_ERROR(env->GetFreeSpace(dir, &free_bytes));
  for (const std::string& f : TableFiles(work)) {
    uint64_t bytes = 0;
    if (resumed && env->FileExists(f) && env->GetFileSize(f, &bytes).ok()) free_bytes += bytes;
  }
  if (free_bytes < start->table_bytes) {
    return Status::NoSpace("the new chunk index table needs " + std::to_string(start->table_bytes) + " bytes in " +
                           dir + ", " + std::to_string(free_bytes) + " are free" +
                           (start->replaced.empty() ? "" : "; the old table is kept as " + start->replaced) +
                           " (free space, or point chunk-index.path at a larger disk, then run the rebuild again)");
  }
  if (!resumed) DEDUPV1_RETURN_IF_ERROR(WriteMarker(env, options, *start));
  DEDUPV1_RETURN_IF_ERROR(MoveTableAside(env, options, start));
  for (const std::string& f : TableFiles(work)) {
    if (env->FileExists(f)) DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(f));
  }
  const std::string kept = start->replaced.empty() ? "" : "; the old table is kept as " + start->replaced;
  ChunkIndexOptions index_options = RebuildOptions(options).chunk_index;
  index_options.table.size_bytes = start->table_bytes;
  index_options.grow_in_background = false;
  std::unique_ptr<ChunkTable> created;
  Status s = ChunkIndex::OpenTable(index_options, env, &created);
  if (s.ok()) s = created->Sync();
  if (!s.ok()) return s.WithContext("create the new chunk index table " + work + kept);
  return Status::OK();
}

Status FinishIndexRebuild(Env* env, const Options& options) {
  const std::string& table = options.chunk_index.table.path;
  const std::vector<std::string> from = TableFiles(IndexRebuildWorkPath(table));
  const std::vector<std::string> to = TableFiles(table);
  for (size_t i = 0; i < from.size(); i++) {
    if (env->FileExists(to[i])) {
      return Status::Aborted(to[i] + " appeared during the rebuild; run the rebuild again (it moves it aside)");
    }
  }
  // The table first, then its journal and a growth's files: a run after a
  // crash in between moves the renamed table aside and deletes the rest,
  // which still carry the work names (a growth's next file never has the
  // table's names without its table).
  for (size_t i = 0; i < from.size(); i++) {
    if (env->FileExists(from[i])) DEDUPV1_RETURN_IF_ERROR(env->RenameFile(from[i], to[i]));
  }
  DEDUPV1_RETURN_IF_ERROR(env->SyncDir(DirName(table)));
  DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(MarkerPath(options)));
  return env->SyncDir(options.data_dir);
}

}  // namespace tools
}  // namespace dedupv1
