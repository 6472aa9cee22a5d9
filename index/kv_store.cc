#include "index/kv_store.h"

#include <string>

#include "core/base/env.h"
#include "index/leveldb_kv_store.h"
#include "index/tc_kv_store.h"

namespace dedupv1 {

Status ParseKvBackend(std::string_view name, KvBackend* backend) {
  if (name == "tokyocabinet") {
    *backend = KvBackend::kTokyoCabinet;
  } else if (name == "leveldb") {
    *backend = KvBackend::kLevelDb;
  } else {
    return Status::InvalidArgument("unknown key-value store backend '" + std::string(name) +
                                   "' (expected tokyocabinet or leveldb)");
  }
  return Status::OK();
}

const char* KvBackendName(KvBackend backend) {
  switch (backend) {
    case KvBackend::kTokyoCabinet: return "tokyocabinet";
    case KvBackend::kLevelDb: return "leveldb";
  }
  return "unknown";
}

Status OpenKvStore(KvBackend backend, const std::string& path, Env* env, std::unique_ptr<KvStore>* out) {
  if (path.empty()) return Status::InvalidArgument("key-value store path is empty");
  DEDUPV1_RETURN_IF_ERROR(env->CreateDirs(DirName(path)));
  switch (backend) {
    case KvBackend::kTokyoCabinet: return OpenTcKvStore(path, env, out);
    case KvBackend::kLevelDb: return OpenLevelDbKvStore(path, env, out);
  }
  return Status::InvalidArgument("unknown key-value store backend");
}

}  // namespace dedupv1
