// For tests that run the same assertions against every storage backend
// (value-parameterized over the names in chunkstore/storage_backend_registry.h):
// a fixture that opens the backend on a fresh temporary directory and
// reopens it, and frees a memory backend's storage afterwards.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "chunkstore/memory_storage_backend.h"
#include "chunkstore/storage_backend_registry.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace test {

class StorageBackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  StorageBackendTest() {
    options_.backend = GetParam();
    options_.dir = dir_.Sub("containers");
  }
  ~StorageBackendTest() override { DropMemoryStorage(options_.dir); }

  // Opens (again) the backend on options_.dir, replacing storage_.
  void Reopen() {
    storage_ = StorageBackend();
    Status s = OpenStorageBackend(options_, Env::Default(), StorageOpenMode::kCreate, &storage_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  TempDir dir_;
  ChunkStoreOptions options_;
  StorageBackend storage_;
};

// The backends these tests run over: every registered one that needs no Ceph
// cluster. Backends needing one (rados) are covered by the *rados*_test.cc
// tests, which run where a cluster is (the rados_tests binary).
inline std::vector<std::string> BackendsWithoutCluster() {
  std::vector<std::string> names;
  for (const std::string& name : StorageBackendNames()) {
    if (!StorageBackendNeedsCluster(name)) names.push_back(name);
  }
  return names;
}

// The test name suffix: the backend's name.
inline std::string BackendName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

}  // namespace test
}  // namespace dedupv1
