#include "index/tc_kv_store_testutil.h"

#include <tcbdb.h>
#include <tcutil.h>

#include <utility>
#include <vector>

#include "core/base/env.h"
#include "index/kv_store.h"

namespace dedupv1 {
namespace test {

Status RewriteTcStoreWithoutPageChecksums(Env* env, const std::string& path) {
  std::vector<std::pair<std::string, std::string>> records;
  {
    std::unique_ptr<KvStore> store;
    DEDUPV1_RETURN_IF_ERROR(OpenKvStore(KvBackend::kTokyoCabinet, path, env, &store));
    DEDUPV1_RETURN_IF_ERROR(store->Scan("", "", [&](const std::string& k, const std::string& v) {
      records.emplace_back(k, v);
      return true;
    }));
  }
  const std::string tmp = path + ".without-page-checksums";
  TCBDB* db = tcbdbnew();
  bool ok = tcbdbtune(db, 64, 256, 131071, 8, 10, BDBTLARGE) &&
            tcbdbopen(db, tmp.c_str(), BDBOWRITER | BDBOCREAT | BDBOTRUNC);
  for (size_t i = 0; ok && i < records.size(); i++) {
    const auto& [k, v] = records[i];
    ok = tcbdbput(db, k.data(), static_cast<int>(k.size()), v.data(), static_cast<int>(v.size()));
  }
  const std::string why = ok ? "" : tcbdberrmsg(tcbdbecode(db));
  ok = tcbdbclose(db) && ok;
  tcbdbdel(db);
  if (!ok) return Status::IOError(tmp + ": " + why);
  return env->RenameFile(tmp, path);
}

}  // namespace test
}  // namespace dedupv1
