// KvStore is the ordered byte-string key-value store under the persistent
// block index (paper section 3.5: a B+tree, so the mappings of consecutive
// blocks sit next to each other and one read fetches several of them). The
// interface is narrow on purpose so the backend can be swapped: Tokyo Cabinet
// B+tree (the paper's choice) or LevelDB.
//
// Keys compare as unsigned byte strings (memcmp order, shorter first on a
// common prefix). All methods are thread-safe.
//
// File access: LevelDB's file I/O goes through our Env (a leveldb::Env
// adapter, index/leveldb_env_adapter.h), so FaultInjectionEnv reaches it.
// Tokyo Cabinet offers no such hook: its own reads and writes of the database
// file bypass our Env (see index/tc_kv_store.h); everything our code does
// around it (existence checks, creation, removal, links) goes through Env.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"

namespace dedupv1 {

class Env;

class KvStore {
 public:
  virtual ~KvStore() = default;

  // Reads the value of |key|; NotFound if there is none.
  virtual Status Get(const std::string& key, std::string* value) = 0;

  struct WriteOp {
    std::string key;
    std::string value;
    bool erase = false;  // remove |key| (no error if it does not exist)
  };
  // Applies |ops| in order, atomically and durably: after a crash either all
  // ops of the batch are visible or none, and once Write returns OK they
  // survive a crash (TC: tcbdbtranbegin/trancommit with BDBOTSYNC; LevelDB:
  // WriteBatch with sync=true).
  virtual Status Write(const std::vector<WriteOp>& ops) = 0;

  // Calls f(key, value) for the keys in [begin, end) in key order until f
  // returns false. An empty |end| means "to the last key". Records written
  // while the scan runs may or may not be seen, but none is seen twice; f may
  // call other methods of the store. Without concurrent writes the scan
  // visits the records exactly in the store's own order, also where that
  // order is broken (a damaged page: a key out of order, two records under
  // one key): each record once, none skipped (until a key at or past |end|).
  virtual Status Scan(const std::string& begin, const std::string& end,
                      const std::function<bool(const std::string& key,
                                               const std::string& value)>& f) = 0;

  struct Record {
    std::string key;
    std::string value;
  };
  // Removes every record equal to one of |records| (key and value alike)
  // wherever the store's own order has it, then applies |ops| as Write does;
  // all in one atomic, durable write. A store whose B+tree page was damaged
  // can hold two records under one key, or a record out of key order, where
  // a lookup by key finds the wrong one or none; this walks the whole store
  // instead, so it removes exactly the records meant (a repair tool's
  // operation, not for the request path). *removed: how many were removed.
  // If one of |records| is not in the store (it changed since the caller
  // read it), nothing is written and the result is Aborted.
  virtual Status RemoveExactThenWrite(const std::vector<Record>& records, const std::vector<WriteOp>& ops,
                                      uint64_t* removed) = 0;

  // Makes everything written so far durable.
  virtual Status Sync() = 0;
  // Number of records.
  virtual uint64_t Count() = 0;
  // Bytes the store occupies on disk.
  virtual uint64_t SizeBytes() = 0;
};

enum class KvBackend { kTokyoCabinet, kLevelDb };

// "tokyocabinet" | "leveldb".
Status ParseKvBackend(std::string_view name, KvBackend* backend);
const char* KvBackendName(KvBackend backend);

// Opens (creating if missing) the store at |path|: a single file for Tokyo
// Cabinet, a directory for LevelDB. Missing parent directories are created.
// Only one process may hold a store open (both backends lock it). Files are
// reached through |env| as far as the backend allows (see above); |env| must
// outlive the store.
Status OpenKvStore(KvBackend backend, const std::string& path, Env* env, std::unique_ptr<KvStore>* out);

}  // namespace dedupv1
