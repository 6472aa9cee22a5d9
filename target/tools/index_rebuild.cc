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

// Every file of the local table: the table, its journal, a growth's next
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

// The marker of a rebuild under way: the new table's size and where the old
// one went.
Status ReadMarker(Env* env, const std::string& path, IndexRebuildStart* start) {
  std::string text;
  DEDUPV1_RETURN_IF_ERROR(ReadFileToString(env, path, &text));
  Config c;
  Status s = Config::Parse(text, path, &c);
  if (!s.ok()) return Status::Corruption(s.message());
  for (const auto& e : c.entries()) {
    if (e.key == kTableBytesKey) {
      if (!ParseUint(e.value, &start->table_bytes).ok() || start->table_bytes == 0) {
        return Status::Corruption(path + ":" + std::to_string(e.line) + ": " + kTableBytesKey + " '" + e.value +
                                  "' is not a size");
      }
    } else if (e.key == kReplacedKey) {
      start->replaced = e.value;
    }
  }
  if (start->table_bytes == 0) return Status::Corruption(path + ": no " + std::string(kTableBytesKey) + " line");
  return Status::OK();
}

}  // namespace

Status StartIndexRebuild(Env* env, const Options& options, IndexRebuildStart* start) {
  *start = IndexRebuildStart();
  if (options.chunk_index.cluster_scope || options.chunk_index.table_backend != "disk") {
    return Status::NotSupported("--rebuild-index rebuilds a chunk index table on local disk; this store's is " +
                                ChunkIndex::TableWhere(options.chunk_index) + ", which it does not rebuild");
  }
  const std::string& dir = options.data_dir;
  // A store, not an empty or foreign directory: its system file says so.
  if (!env->FileExists(JoinPath(dir, kSystemFileName))) {
    return Status::NotFound(dir + " holds no dedupv1 store (" + JoinPath(dir, kSystemFileName) + " is missing)");
  }
  const std::string& table = options.chunk_index.table.path;
  const std::string marker = JoinPath(dir, kIndexRebuildFileName);
  if (env->FileExists(marker)) {
    // An earlier run stopped after step 2: the table files are its own.
    DEDUPV1_RETURN_IF_ERROR(ReadMarker(env, marker, start));
    start->resumed = true;
    for (const std::string& f : TableFiles(table)) {
      if (env->FileExists(f)) DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(f));
    }
  } else {
    start->table_bytes = options.chunk_index.table.size_bytes;
    // One suffix for all the table's files; "-N" after a rebuild of the
    // same second.
    const std::string stamp = ".replaced-" + UtcStamp();
    std::string suffix = stamp;
    for (int n = 2; env->FileExists(table + suffix) || env->FileExists(DiskHashTable::JournalPath(table) + suffix); n++) {
      if (n > 1000) return Status::Aborted("cannot move " + table + " aside: " + table + stamp + "-N all exist");
      suffix = stamp + "-" + std::to_string(n);
    }
    for (const std::string& f : TableFiles(table)) {
      if (!env->FileExists(f)) continue;
      if (f == table) {
        uint64_t bytes = 0;
        DEDUPV1_RETURN_IF_ERROR(env->GetFileSize(f, &bytes));
        // A grown table's size holds its entries; one of another geometry
        // (damaged header, changed page size) is not taken.
        if (bytes > start->table_bytes && bytes % options.chunk_index.table.page_size == 0) {
          start->table_bytes = bytes;
        }
        start->replaced = f + suffix;
      }
      if (env->FileExists(f + suffix)) return Status::Aborted("cannot move " + f + " aside: " + f + suffix + " exists");
      DEDUPV1_RETURN_IF_ERROR(env->RenameFile(f, f + suffix));
    }
    DEDUPV1_RETURN_IF_ERROR(env->SyncDir(DirName(table)));
    DEDUPV1_RETURN_IF_ERROR(WriteFileAtomically(
        env, marker,
        "# dedupv1_check --rebuild-index is filling a new chunk index; the store opens once it has finished\n" +
            std::string(kTableBytesKey) + " = " + std::to_string(start->table_bytes) + "\n" + kReplacedKey + " = " +
            start->replaced + "\n"));
  }
  ChunkIndexOptions index_options = options.chunk_index;
  index_options.table.size_bytes = start->table_bytes;
  index_options.grow_in_background = false;
  std::unique_ptr<ChunkTable> created;
  Status s = ChunkIndex::OpenTable(index_options, env, &created);
  if (s.ok()) s = created->Sync();
  if (!s.ok()) return s.WithContext("create the new chunk index table " + table);
  return Status::OK();
}

Status FinishIndexRebuild(Env* env, const Options& options) {
  const std::string marker = JoinPath(options.data_dir, kIndexRebuildFileName);
  DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(marker));
  return env->SyncDir(options.data_dir);
}

}  // namespace tools
}  // namespace dedupv1
