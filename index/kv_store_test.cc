#include "index/kv_store.h"

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <tcbdb.h>
#include <tcutil.h>

#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/base/env.h"
#include "core/base/testutil.h"

namespace dedupv1 {
namespace {

KvStore::WriteOp Put(const std::string& key, const std::string& value) {
  KvStore::WriteOp op;
  op.key = key;
  op.value = value;
  return op;
}

KvStore::WriteOp Erase(const std::string& key) {
  KvStore::WriteOp op;
  op.key = key;
  op.erase = true;
  return op;
}

using Records = std::vector<std::pair<std::string, std::string>>;

Records ScanAll(KvStore* store, const std::string& begin = "", const std::string& end = "") {
  Records out;
  Status s = store->Scan(begin, end, [&](const std::string& k, const std::string& v) {
    out.emplace_back(k, v);
    return true;
  });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

TEST(KvBackendTest, ParsesNames) {
  KvBackend b;
  ASSERT_TRUE(ParseKvBackend("leveldb", &b).ok());
  EXPECT_EQ(b, KvBackend::kLevelDb);
  ASSERT_TRUE(ParseKvBackend("tokyocabinet", &b).ok());
  EXPECT_EQ(b, KvBackend::kTokyoCabinet);
  EXPECT_TRUE(ParseKvBackend("sqlite", &b).IsInvalidArgument());
  EXPECT_STREQ(KvBackendName(KvBackend::kLevelDb), "leveldb");
  std::unique_ptr<KvStore> store;
  EXPECT_TRUE(OpenKvStore(KvBackend::kLevelDb, "", Env::Default(), &store).IsInvalidArgument());
}

class KvStoreTest : public ::testing::TestWithParam<KvBackend> {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    store_.reset();
    Status s = OpenKvStore(GetParam(), path_, Env::Default(), &store_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  test::TempDir dir_;
  // In a missing subdirectory: OpenKvStore creates it.
  const std::string path_ = dir_.Sub("sub/store");
  std::unique_ptr<KvStore> store_;
};

TEST_P(KvStoreTest, PutGetErase) {
  std::string v;
  EXPECT_TRUE(store_->Get("a", &v).IsNotFound());
  EXPECT_EQ(store_->Count(), 0u);
  ASSERT_TRUE(store_->Write({Put("a", "1"), Put("b", std::string("\0\xff", 2))}).ok());
  ASSERT_TRUE(store_->Get("a", &v).ok());
  EXPECT_EQ(v, "1");
  ASSERT_TRUE(store_->Get("b", &v).ok());
  EXPECT_EQ(v, std::string("\0\xff", 2));
  EXPECT_EQ(store_->Count(), 2u);
  // Overwrite, erase, erase of a missing key, all in one batch, in order.
  ASSERT_TRUE(store_->Write({Put("a", "2"), Erase("b"), Erase("zz"), Put("c", ""), Erase("c"),
                             Put("c", "3")})
                  .ok());
  ASSERT_TRUE(store_->Get("a", &v).ok());
  EXPECT_EQ(v, "2");
  EXPECT_TRUE(store_->Get("b", &v).IsNotFound());
  ASSERT_TRUE(store_->Get("c", &v).ok());
  EXPECT_EQ(v, "3");
  EXPECT_EQ(store_->Count(), 2u);
  ASSERT_TRUE(store_->Write({}).ok());
  ASSERT_TRUE(store_->Sync().ok());
  EXPECT_GT(store_->SizeBytes(), 0u);
}

TEST_P(KvStoreTest, ScanIsInUnsignedByteOrder) {
  std::map<std::string, std::string> expected;
  std::vector<KvStore::WriteOp> ops;
  std::mt19937 rng(7);
  for (int i = 0; i < 1000; i++) {
    std::string key(1 + rng() % 6, '\0');
    for (char& c : key) c = static_cast<char>(rng() % 4 == 0 ? 0xff : rng());
    std::string value = "v" + std::to_string(i);
    expected[key] = value;  // std::string compares bytes as unsigned
    ops.push_back(Put(key, value));
  }
  ASSERT_TRUE(store_->Write(ops).ok());
  EXPECT_EQ(store_->Count(), expected.size());
  Records all = ScanAll(store_.get());
  EXPECT_EQ(all, Records(expected.begin(), expected.end()));

  // A range [begin, end).
  const std::string begin("\x40", 1), end("\xc0\x01", 2);
  Records range = ScanAll(store_.get(), begin, end);
  EXPECT_EQ(range, Records(expected.lower_bound(begin), expected.lower_bound(end)));
  EXPECT_FALSE(range.empty());

  // Stopping early.
  int seen = 0;
  ASSERT_TRUE(store_->Scan("", "", [&](const std::string&, const std::string&) {
                      return ++seen < 10;
                    })
                  .ok());
  EXPECT_EQ(seen, 10);
  EXPECT_TRUE(ScanAll(store_.get(), "\xff\xff\xff\xff\xff\xff\xff", "").empty());
}

// Writes from inside the scan callback: no record is seen twice and the
// order holds (the TC store reads in chunks and must resume correctly).
TEST_P(KvStoreTest, ScanToleratesWritesFromTheCallback) {
  std::vector<KvStore::WriteOp> ops;
  for (int i = 0; i < 1500; i += 2) {
    char key[16];
    snprintf(key, sizeof(key), "k%06d", i);
    ops.push_back(Put(key, "x"));
  }
  ASSERT_TRUE(store_->Write(ops).ok());
  std::string last;
  int seen = 0;
  Status s = store_->Scan("", "", [&](const std::string& k, const std::string&) {
    EXPECT_GT(k, last);
    last = k;
    seen++;
    if (seen % 50 == 0) {
      // Insert just behind and far ahead of the cursor, erase the next even key.
      int n = std::stoi(k.substr(1));
      char behind[16], ahead[16], next[16];
      snprintf(behind, sizeof(behind), "k%06d", n - 1);
      snprintf(ahead, sizeof(ahead), "k%06d", n + 401);
      snprintf(next, sizeof(next), "k%06d", n + 2);
      EXPECT_TRUE(store_->Write({Put(behind, "b"), Put(ahead, "a"), Erase(next)}).ok());
    }
    return true;
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(seen, 600);
}

// A repair's removal: exactly the records named (key and value), then the
// writes, atomically; a record that is not there (the store changed) aborts
// the whole write.
TEST_P(KvStoreTest, RemoveExactThenWrite) {
  std::vector<KvStore::WriteOp> ops;
  for (int i = 0; i < 600; i++) ops.push_back(Put("k" + std::to_string(1000 + i), "v" + std::to_string(i)));
  ASSERT_TRUE(store_->Write(ops).ok());
  uint64_t removed = 0;
  ASSERT_TRUE(store_->RemoveExactThenWrite({{"k1003", "v3"}, {"k1500", "v500"}}, {Put("k1003", "new"), Put("zz", "z")},
                                           &removed)
                  .ok());
  EXPECT_EQ(removed, 2u);
  std::string v;
  ASSERT_TRUE(store_->Get("k1003", &v).ok());
  EXPECT_EQ(v, "new");
  EXPECT_TRUE(store_->Get("k1500", &v).IsNotFound());
  ASSERT_TRUE(store_->Get("zz", &v).ok());
  EXPECT_EQ(store_->Count(), 600u);
  // The value differs: nothing is written.
  Status s = store_->RemoveExactThenWrite({{"k1004", "v3"}}, {Put("k1005", "changed")}, &removed);
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  ASSERT_TRUE(store_->Get("k1004", &v).ok());
  EXPECT_EQ(v, "v4");
  ASSERT_TRUE(store_->Get("k1005", &v).ok());
  EXPECT_EQ(v, "v5");
  EXPECT_EQ(store_->Count(), 600u);
  Reopen();
  EXPECT_EQ(store_->Count(), 600u);
  EXPECT_TRUE(store_->Get("k1500", &v).IsNotFound());
}

TEST_P(KvStoreTest, ReopenKeepsData) {
  std::vector<KvStore::WriteOp> ops;
  for (int i = 0; i < 300; i++) ops.push_back(Put("key" + std::to_string(i), std::string(i, 'v')));
  ASSERT_TRUE(store_->Write(ops).ok());
  ASSERT_TRUE(store_->Write({Erase("key7")}).ok());
  Reopen();
  EXPECT_EQ(store_->Count(), 299u);
  std::string v;
  ASSERT_TRUE(store_->Get("key123", &v).ok());
  EXPECT_EQ(v, std::string(123, 'v'));
  EXPECT_TRUE(store_->Get("key7", &v).IsNotFound());
  EXPECT_EQ(ScanAll(store_.get()).size(), 299u);
}

// Tokyo Cabinet stores are created under path + ".creating" and linked into
// place: leftovers of a killed creation (a half-made temporary file, a second
// name of the store) never replace or disturb an existing store.
TEST(TcKvStoreTest, LeftoversOfAKilledCreationAreRemovedAndTheStoreKept) {
  test::TempDir dir;
  const std::string path = dir.Sub("store");
  {
    std::unique_ptr<KvStore> store;
    ASSERT_TRUE(OpenKvStore(KvBackend::kTokyoCabinet, path, Env::Default(), &store).ok());
    ASSERT_TRUE(store->Write({{"key", "value", false}}).ok());
  }
  EXPECT_FALSE(Env::Default()->FileExists(path + ".creating")) << "the temporary name outlived the creation";
  ASSERT_TRUE(WriteFileAtomically(Env::Default(), path + ".creating", "half a database").ok());
  std::unique_ptr<KvStore> store;
  Status s = OpenKvStore(KvBackend::kTokyoCabinet, path, Env::Default(), &store);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::string v;
  ASSERT_TRUE(store->Get("key", &v).ok());
  EXPECT_EQ(v, "value");
  EXPECT_FALSE(Env::Default()->FileExists(path + ".creating"));
}

// Tokyo Cabinet checks nothing it reads back, so its pages carry a CRC: a
// damaged value is Corruption naming the file, not a wrong value, and a
// damaged record size in a leaf is Corruption too, where TC used to parse the
// leaf on and end the process on an absurd allocation ("fatal error: out of
// memory"; found by the corruption suite). The reads run in a forked child,
// so such an exit fails the test instead of ending it.
TEST(TcKvStoreTest, DamagedPageIsCorruptionNotWrongDataOrAnExit) {
  test::TempDir dir;
  const std::string path = dir.Sub("store");
  const std::string key = "key031";
  std::string value;
  {
    std::unique_ptr<KvStore> store;
    ASSERT_TRUE(OpenKvStore(KvBackend::kTokyoCabinet, path, Env::Default(), &store).ok());
    std::vector<KvStore::WriteOp> ops;
    for (int i = 0; i < 64; i++) {
      auto bytes = test::RandomBytes(300, i);
      ops.push_back(Put(fmt::format("key{:03d}", i), std::string(bytes.begin(), bytes.end())));
    }
    value = ops[31].value;
    ASSERT_TRUE(store->Write(ops).ok());
  }
  std::string clean;
  ASSERT_TRUE(ReadFileToString(Env::Default(), path, &clean).ok());
  const size_t at = clean.find(key + value);
  ASSERT_NE(at, std::string::npos) << "the record's bytes are not in the file as written";
  // In a leaf a record is: key size, value size (two bytes here), duplicate
  // count as varints, then key and value.
  for (size_t offset : {at + key.size() + 100, at - 3}) {
    SCOPED_TRACE("byte " + std::to_string(offset));
    std::string damaged = clean;
    damaged[offset] ^= 0x01;
    ASSERT_TRUE(WriteFileAtomically(Env::Default(), path, damaged).ok());
    int fd = -1;
    const pid_t pid = test::ForkWithPipe(
        [&](int wfd) {
          std::unique_ptr<KvStore> store;
          Status s = OpenKvStore(KvBackend::kTokyoCabinet, path, Env::Default(), &store);
          std::string got;
          if (s.ok()) s = store->Get(key, &got);
          const std::string line = s.ok() ? (got == value ? "intact" : "wrong value") : s.ToString();
          if (write(wfd, line.data(), line.size()) < 0) _exit(3);
          _exit(0);
        },
        &fd);
    ASSERT_GE(pid, 0);
    std::string out;
    char buf[512];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
    close(fd);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the reader ended with status " << status;
    EXPECT_NE(out.find("corruption: " + path), std::string::npos) << out;
    EXPECT_NE(out.find("checksum"), std::string::npos) << out;
  }
}

// A store created without page CRCs (by an earlier build) is read as before.
TEST(TcKvStoreTest, StoreWithoutPageChecksumsIsReadAsBefore) {
  test::TempDir dir;
  const std::string path = dir.Sub("store");
  {
    TCBDB* db = tcbdbnew();
    ASSERT_TRUE(tcbdbtune(db, 64, 256, 131071, 8, 10, BDBTLARGE));
    ASSERT_TRUE(tcbdbopen(db, path.c_str(), BDBOWRITER | BDBOCREAT));
    ASSERT_TRUE(tcbdbput(db, "key", 3, "value", 5));
    ASSERT_TRUE(tcbdbclose(db));
    tcbdbdel(db);
  }
  std::unique_ptr<KvStore> store;
  ASSERT_TRUE(OpenKvStore(KvBackend::kTokyoCabinet, path, Env::Default(), &store).ok());
  std::string v;
  ASSERT_TRUE(store->Get("key", &v).ok());
  EXPECT_EQ(v, "value");
  ASSERT_TRUE(store->Write({Put("key2", "value2")}).ok());
  store.reset();
  ASSERT_TRUE(OpenKvStore(KvBackend::kTokyoCabinet, path, Env::Default(), &store).ok());
  ASSERT_TRUE(store->Get("key2", &v).ok());
  EXPECT_EQ(v, "value2");
}

// Runs in a child process started by WrittenBatchSurvivesExitWithoutClose
// (skipped otherwise): writes a batch and exits without closing the store.
TEST(KvStoreChild, WriteAndExitWithoutClose) {
  const char* path = std::getenv("DEDUPV1_KV_CHILD_PATH");
  const char* backend_name = std::getenv("DEDUPV1_KV_CHILD_BACKEND");
  if (path == nullptr || backend_name == nullptr) GTEST_SKIP() << "only run as a child process";
  KvBackend backend;
  if (!ParseKvBackend(backend_name, &backend).ok()) _exit(2);
  std::unique_ptr<KvStore> store;
  if (!OpenKvStore(backend, path, Env::Default(), &store).ok()) _exit(3);
  std::vector<KvStore::WriteOp> ops;
  for (int i = 0; i < 100; i++) ops.push_back(Put("key" + std::to_string(i), "value"));
  if (!store->Write(ops).ok()) _exit(4);
  store.release();  // never closed: simulates a crash
  _exit(0);
}

// A batch whose Write returned OK survives the process dying without
// closing the store. The child is a fresh exec of this test binary (not a
// bare fork, which is unsafe once LevelDB's background thread exists).
TEST_P(KvStoreTest, WrittenBatchSurvivesExitWithoutClose) {
  store_.reset();
  std::string exe(4096, '\0');
  ssize_t n = readlink("/proc/self/exe", exe.data(), exe.size() - 1);
  ASSERT_GT(n, 0);
  exe.resize(static_cast<size_t>(n));
  std::string filter = "--gtest_filter=KvStoreChild.WriteAndExitWithoutClose";
  std::string path_env = "DEDUPV1_KV_CHILD_PATH=" + path_;
  std::string backend_env = std::string("DEDUPV1_KV_CHILD_BACKEND=") + KvBackendName(GetParam());
  char* argv[] = {exe.data(), filter.data(), nullptr};
  char* envp[] = {path_env.data(), backend_env.data(), nullptr};
  pid_t pid;
  ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  Reopen();
  EXPECT_EQ(store_->Count(), 100u);
  std::string v;
  ASSERT_TRUE(store_->Get("key99", &v).ok());
  EXPECT_EQ(v, "value");
}

INSTANTIATE_TEST_SUITE_P(Backends, KvStoreTest,
                         ::testing::Values(KvBackend::kTokyoCabinet, KvBackend::kLevelDb),
                         [](const ::testing::TestParamInfo<KvBackend>& info) {
                           return std::string(KvBackendName(info.param));
                         });

}  // namespace
}  // namespace dedupv1
