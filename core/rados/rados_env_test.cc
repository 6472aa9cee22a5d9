// The Env contract (core/base/env.h) on RadosEnv, against a real cluster
// (DEDUPV1_TEST_CEPH_CONF). Stripes of 64 KiB so small files span several.
#include "core/rados/rados_env.h"

#include <gtest/gtest.h>
#include <sys/time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "core/base/testutil.h"
#include "core/rados/rados_env_testutil.h"

namespace dedupv1 {
namespace {

constexpr uint64_t kStripe = 64 << 10;
const std::string kRoot = "/srv/dedupv1-rados-env-test";  // need not exist locally

class RadosEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Status s = test::ConnectTestRados(&cluster_, kStripe, 3);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_TRUE(NewRadosEnv(cluster_, kRoot, &env_).ok());
    ASSERT_TRUE(env_->CreateDirs(kRoot).ok());
  }
  void TearDown() override {
    env_.reset();
    if (cluster_ != nullptr) test::RemoveIndexObjects(cluster_.get());
  }

  std::string P(const std::string& name) const { return kRoot + "/" + name; }

  std::string ReadAll(const std::string& path) {
    std::string data;
    Status s = ReadFileToString(env_.get(), path, &data);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return data;
  }

  bool ObjectExists(const std::string& oid) {
    uint64_t size;
    time_t mtime;
    return cluster_->index().stat(oid, &size, &mtime) == 0;
  }

  std::shared_ptr<RadosCluster> cluster_;
  std::unique_ptr<Env> env_;
};

std::string Pattern(size_t n, uint64_t seed) {
  std::vector<uint8_t> b = test::RandomBytes(n, seed);
  return std::string(b.begin(), b.end());
}

TEST_F(RadosEnvTest, WriteReadSizeAcrossStripes) {
  const std::string data = Pattern(3 * kStripe + 1234, 1);
  {
    std::unique_ptr<File> f;
    ASSERT_TRUE(env_->OpenFile(P("a"), OpenMode::kCreate, &f).ok());
    // Two writes, the second crossing stripe boundaries.
    ASSERT_TRUE(f->Write(0, data.data(), 1000).ok());
    ASSERT_TRUE(f->Write(1000, data.data() + 1000, data.size() - 1000).ok());
    uint64_t size = 0;
    ASSERT_TRUE(f->Size(&size).ok());
    EXPECT_EQ(data.size(), size);
    std::string back(200, '\0');
    ASSERT_TRUE(f->Read(kStripe - 100, 200, back.data()).ok());  // before Sync: waits for the writes
    EXPECT_EQ(data.substr(kStripe - 100, 200), back);
    ASSERT_TRUE(f->Sync().ok());
  }
  // A fresh Env (nothing cached) sees the same file.
  std::unique_ptr<Env> env2;
  ASSERT_TRUE(NewRadosEnv(cluster_, kRoot + "/", &env2).ok());
  uint64_t size = 0;
  ASSERT_TRUE(env2->GetFileSize(P("a"), &size).ok());
  EXPECT_EQ(data.size(), size);
  std::string back;
  ASSERT_TRUE(ReadFileToString(env2.get(), P("a"), &back).ok());
  EXPECT_EQ(data, back);
  EXPECT_TRUE(env2->FileExists(P("a")));
  EXPECT_TRUE(env2->FileExists(kRoot));
  EXPECT_FALSE(env2->FileExists(P("b")));
}

TEST_F(RadosEnvTest, ShortReadMissingFileAndModes) {
  std::unique_ptr<File> f;
  Status s = env_->OpenFile(P("missing"), OpenMode::kReadOnly, &f);
  EXPECT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("dedupv1-index")) << s.ToString();  // names the pool
  EXPECT_TRUE(env_->OpenFile(P("missing"), OpenMode::kReadWrite, &f).IsNotFound());
  uint64_t size;
  EXPECT_TRUE(env_->GetFileSize(P("missing"), &size).IsNotFound());
  EXPECT_TRUE(env_->DeleteFile(P("missing")).IsNotFound());

  ASSERT_TRUE(env_->OpenFile(P("f"), OpenMode::kCreateNew, &f).ok());
  ASSERT_TRUE(f->Write(0, "hello", 5).ok());
  char buf[8];
  s = f->Read(2, 8, buf);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("short read")) << s.ToString();
  ASSERT_TRUE(f->Read(2, 3, buf).ok());
  EXPECT_EQ("llo", std::string(buf, 3));
  f.reset();
  EXPECT_FALSE(env_->OpenFile(P("f"), OpenMode::kCreateNew, &f).ok());
  ASSERT_TRUE(env_->OpenFile(P("f"), OpenMode::kCreate, &f).ok());  // keeps the content
  ASSERT_TRUE(f->Size(&size).ok());
  EXPECT_EQ(5u, size);
  f.reset();
  ASSERT_TRUE(env_->OpenFile(P("f"), OpenMode::kTruncate, &f).ok());
  ASSERT_TRUE(f->Size(&size).ok());
  EXPECT_EQ(0u, size);
  // A file in a directory that does not exist is NotFound, as on posix.
  EXPECT_TRUE(env_->OpenFile(P("nodir/x"), OpenMode::kCreate, &f).IsNotFound());
  EXPECT_FALSE(env_->FileExists(P("nodir/x")));
}

TEST_F(RadosEnvTest, AllocateAndHolesReadZeros) {
  std::unique_ptr<File> f;
  ASSERT_TRUE(env_->OpenFile(P("t"), OpenMode::kCreate, &f).ok());
  ASSERT_TRUE(f->Allocate(0, 5 * kStripe).ok());
  uint64_t size = 0;
  ASSERT_TRUE(f->Size(&size).ok());
  EXPECT_EQ(5 * kStripe, size);
  const std::string page = Pattern(4096, 2);
  ASSERT_TRUE(f->Write(3 * kStripe + 8192, page.data(), page.size()).ok());
  ASSERT_TRUE(f->Sync().ok());
  std::string all(5 * kStripe, 'x');
  ASSERT_TRUE(f->Read(0, all.size(), all.data()).ok());
  std::string expect(5 * kStripe, '\0');
  expect.replace(3 * kStripe + 8192, page.size(), page);
  EXPECT_EQ(expect, all);
  // Only stripe 0 and stripe 3 are objects: the rest is sparse.
  std::set<std::string> stripes;
  for (const std::string& o : test::IndexObjects(cluster_.get())) {
    if (o.rfind("t@", 0) == 0) stripes.insert(o.substr(o.find(':') + 1));
  }
  EXPECT_EQ(std::set<std::string>({"3"}), stripes);
  EXPECT_TRUE(ObjectExists("t"));
}

TEST_F(RadosEnvTest, TruncateShrinkThenGrowReadsZeros) {
  std::unique_ptr<File> f;
  ASSERT_TRUE(env_->OpenFile(P("t"), OpenMode::kCreate, &f).ok());
  const std::string data(3 * kStripe, '\xab');
  ASSERT_TRUE(f->Write(0, data.data(), data.size()).ok());
  ASSERT_TRUE(f->Truncate(kStripe + 100).ok());
  ASSERT_TRUE(f->Truncate(3 * kStripe).ok());
  std::string back(3 * kStripe, 'x');
  ASSERT_TRUE(f->Read(0, back.size(), back.data()).ok());
  std::string expect(kStripe + 100, '\xab');
  expect.resize(3 * kStripe, '\0');
  EXPECT_EQ(expect, back);
  ASSERT_TRUE(f->Truncate(10).ok());
  ASSERT_TRUE(f->Truncate(kStripe * 2).ok());
  ASSERT_TRUE(f->Read(0, 2 * kStripe, back.data()).ok());
  expect.assign(10, '\xab');
  expect.resize(2 * kStripe, '\0');
  EXPECT_EQ(expect, back.substr(0, 2 * kStripe));
}

// A writer that dies before its size reaches stripe 0 leaves data past the
// size; the next writer's open cuts it, so a later extension reads zeros.
TEST_F(RadosEnvTest, DataPastSizeFromACrashIsCut) {
  {
    std::unique_ptr<File> f;
    ASSERT_TRUE(env_->OpenFile(P("c"), OpenMode::kCreate, &f).ok());
    ASSERT_TRUE(f->Write(0, "head", 4).ok());
    ASSERT_TRUE(f->Sync().ok());
    const std::string tail(2 * kStripe, '\x5a');
    ASSERT_TRUE(f->Write(kStripe, tail.data(), tail.size()).ok());
    // "Crash": the handle is never closed, so the size is never written.
    f.release();  // NOLINT: the state lives on (as a dead process's would not matter)
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the leaked writes land
  std::unique_ptr<Env> env2;
  ASSERT_TRUE(NewRadosEnv(cluster_, kRoot, &env2).ok());
  uint64_t size = 0;
  ASSERT_TRUE(env2->GetFileSize(P("c"), &size).ok());
  EXPECT_EQ(4u, size);
  std::unique_ptr<File> f;
  ASSERT_TRUE(env2->OpenFile(P("c"), OpenMode::kReadWrite, &f).ok());
  ASSERT_TRUE(f->Truncate(3 * kStripe).ok());
  std::string back(3 * kStripe, 'x');
  ASSERT_TRUE(f->Read(0, back.size(), back.data()).ok());
  std::string expect = "head";
  expect.resize(3 * kStripe, '\0');
  EXPECT_EQ(expect, back);
}

TEST_F(RadosEnvTest, HandlesOfOneFileShareWrites) {
  std::unique_ptr<File> w, r;
  ASSERT_TRUE(env_->OpenFile(P("s"), OpenMode::kCreate, &w).ok());
  ASSERT_TRUE(env_->OpenFile(P("s"), OpenMode::kReadOnly, &r).ok());
  ASSERT_TRUE(w->Write(kStripe * 2, "xyz", 3).ok());
  uint64_t size = 0;
  ASSERT_TRUE(r->Size(&size).ok());
  EXPECT_EQ(kStripe * 2 + 3, size);
  char buf[3];
  ASSERT_TRUE(r->Read(kStripe * 2, 3, buf).ok());
  EXPECT_EQ("xyz", std::string(buf, 3));
  ASSERT_TRUE(env_->GetFileSize(P("s"), &size).ok());
  EXPECT_EQ(kStripe * 2 + 3, size);
}

// File is thread-safe for Read/Write at different offsets (pread/pwrite).
TEST_F(RadosEnvTest, ConcurrentWritersAndReaders) {
  std::unique_ptr<File> f;
  ASSERT_TRUE(env_->OpenFile(P("pages"), OpenMode::kCreate, &f).ok());
  ASSERT_TRUE(f->Allocate(0, 4 * 100 * 4096).ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; t++) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; i++) {
        const uint64_t page = uint64_t(i) * 4 + t;
        const std::string data = Pattern(4096, page);
        if (!f->Write(page * 4096, data.data(), data.size()).ok()) failures++;
        std::string back(4096, '\0');
        if (!f->Read(page * 4096, 4096, back.data()).ok() || back != data) failures++;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(0, failures.load());
  ASSERT_TRUE(f->Sync().ok());
  f.reset();
  const std::string all = ReadAll(P("pages"));
  ASSERT_EQ(400u * 4096, all.size());
  for (uint64_t page = 0; page < 400; page++) {
    ASSERT_EQ(Pattern(4096, page), all.substr(page * 4096, 4096)) << page;
  }
}

TEST_F(RadosEnvTest, WriteFileAtomicallyReplacesWhole) {
  ASSERT_TRUE(WriteFileAtomically(env_.get(), P("meta"), "old content").ok());
  EXPECT_EQ("old content", ReadAll(P("meta")));
  const std::string big = Pattern(4 * kStripe + 17, 3);
  ASSERT_TRUE(WriteFileAtomically(env_.get(), P("meta"), big).ok());
  EXPECT_EQ(big, ReadAll(P("meta")));
  ASSERT_TRUE(WriteFileAtomically(env_.get(), P("meta"), "short again").ok());
  EXPECT_EQ("short again", ReadAll(P("meta")));
  EXPECT_FALSE(env_->FileExists(P("meta.tmp")));
  std::vector<std::string> names;
  ASSERT_TRUE(env_->GetChildren(kRoot, &names).ok());
  EXPECT_EQ(std::vector<std::string>({"meta"}), names);
  // No stripe of an old incarnation or of the temporary file is left.
  for (const std::string& o : test::IndexObjects(cluster_.get())) {
    EXPECT_TRUE(o == "meta" || o == "/") << o;
  }
}

TEST_F(RadosEnvTest, RenameMovesAndReplaces) {
  const std::string a = Pattern(2 * kStripe + 5, 4), b = Pattern(3 * kStripe, 5);
  ASSERT_TRUE(env_->CreateDirs(P("d")).ok());
  ASSERT_TRUE(WriteFileAtomically(env_.get(), P("a"), a).ok());
  ASSERT_TRUE(WriteFileAtomically(env_.get(), P("d/b"), b).ok());
  ASSERT_TRUE(env_->RenameFile(P("a"), P("d/b")).ok());
  EXPECT_FALSE(env_->FileExists(P("a")));
  EXPECT_EQ(a, ReadAll(P("d/b")));
  EXPECT_TRUE(env_->RenameFile(P("a"), P("x")).IsNotFound());
  ASSERT_TRUE(env_->LinkFile(P("d/b"), P("c")).ok());
  EXPECT_EQ(a, ReadAll(P("c")));
  EXPECT_FALSE(env_->LinkFile(P("d/b"), P("c")).ok());  // never replaces
  std::vector<std::string> names;
  ASSERT_TRUE(env_->GetChildren(kRoot, &names).ok());
  EXPECT_EQ(std::vector<std::string>({"c", "d"}), names);
}

TEST_F(RadosEnvTest, DirectoriesChildrenAndDelete) {
  ASSERT_TRUE(env_->CreateDirs(P("x/y/z")).ok());
  ASSERT_TRUE(env_->CreateDirs(P("x/y")).ok());  // again: fine
  EXPECT_TRUE(env_->FileExists(P("x/y")));
  for (int i = 0; i < 1600; i += 100) {
    ASSERT_TRUE(WriteFileAtomically(env_.get(), P("x/f" + std::to_string(i)), std::string(kStripe + i, 'q')).ok());
  }
  std::vector<std::string> names;
  ASSERT_TRUE(env_->GetChildren(P("x"), &names).ok());
  EXPECT_EQ(17u, names.size());  // 16 files and y
  ASSERT_TRUE(env_->GetChildren(P("x/y"), &names).ok());
  EXPECT_EQ(std::vector<std::string>({"z"}), names);
  EXPECT_TRUE(env_->GetChildren(P("nope"), &names).IsNotFound());
  ASSERT_TRUE(env_->DeleteFile(P("x/f100")).ok());
  EXPECT_FALSE(env_->FileExists(P("x/f100")));
  ASSERT_TRUE(env_->GetChildren(P("x"), &names).ok());
  EXPECT_EQ(16u, names.size());
  for (const std::string& o : test::IndexObjects(cluster_.get())) {
    EXPECT_TRUE(o != "x/f100" && o.rfind("x/f100@", 0) != 0) << "left behind: " << o;
  }
  EXPECT_TRUE(env_->SyncDir(P("x")).ok());
}

TEST_F(RadosEnvTest, PathsOutsideTheRootAreRefused) {
  std::unique_ptr<File> f;
  Status s = env_->OpenFile("/elsewhere/file", OpenMode::kCreate, &f);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find(kRoot)) << s.ToString();
  EXPECT_TRUE(env_->OpenFile(kRoot + "/../x", OpenMode::kCreate, &f).IsInvalidArgument());
  EXPECT_TRUE(env_->OpenFile(kRoot + "-sibling/x", OpenMode::kCreate, &f).IsInvalidArgument());
  EXPECT_TRUE(env_->OpenFile(kRoot, OpenMode::kCreate, &f).IsInvalidArgument());
  EXPECT_TRUE(env_->CreateDirs("/tmp/other").IsInvalidArgument());
  EXPECT_FALSE(env_->FileExists("/etc/passwd"));
  std::unique_ptr<FileLock> lock;
  EXPECT_TRUE(env_->LockFile("/tmp/LOCK", &lock).IsInvalidArgument());
}

TEST_F(RadosEnvTest, LockIsExclusiveAndReleased) {
  std::unique_ptr<FileLock> lock;
  ASSERT_TRUE(env_->LockFile(P("LOCK"), &lock).ok());
  std::unique_ptr<Env> other;
  ASSERT_TRUE(NewRadosEnv(cluster_, kRoot, &other).ok());
  std::unique_ptr<FileLock> second;
  const auto start = std::chrono::steady_clock::now();
  Status s = other->LockFile(P("LOCK"), &second);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("cookie")) << s.ToString();  // names the holder
  // The holder renewed its 3 s lease while the other one waited it out.
  EXPECT_GE(waited, 3.0);
  EXPECT_LT(waited, 6.0);
  lock.reset();
  ASSERT_TRUE(other->LockFile(P("LOCK"), &second).ok());
  std::vector<std::string> names;
  ASSERT_TRUE(env_->GetChildren(kRoot, &names).ok());
  EXPECT_EQ(std::vector<std::string>({"LOCK"}), names);
}

// A holder killed with kill -9 leaves a lease nobody renews: the next
// LockFile gets the lock once it runs out.
TEST_F(RadosEnvTest, LockOfADeadHolderExpires) {
  std::unique_ptr<File> f;
  ASSERT_TRUE(env_->OpenFile(P("LOCK"), OpenMode::kCreate, &f).ok());
  struct timeval lease = {2, 0};
  ASSERT_EQ(0, cluster_->index().lock_exclusive("LOCK", "dedupv1.store", "dead-process", "", &lease, 0));
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<FileLock> lock;
  Status s = env_->LockFile(P("LOCK"), &lock);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GE(waited, 1.0);
  EXPECT_LT(waited, 4.0);
}

TEST_F(RadosEnvTest, AnObjectWithoutFileMetadataIsCorruption) {
  librados::bufferlist bl;
  bl.append("not written through RadosEnv");
  ASSERT_EQ(0, cluster_->index().write_full("bad", bl));
  std::unique_ptr<File> f;
  Status s = env_->OpenFile(P("bad"), OpenMode::kReadOnly, &f);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("rados:dedupv1-index/")) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("/bad")) << s.ToString();
}

TEST_F(RadosEnvTest, EveryOperationIsCounted) {
  const RadosStats before = cluster_->stats();
  ASSERT_TRUE(WriteFileAtomically(env_.get(), P("m"), std::string(2 * kStripe, 'm')).ok());
  EXPECT_EQ(std::string(2 * kStripe, 'm'), ReadAll(P("m")));
  const RadosStats after = cluster_->stats();
  auto delta = [&](RadosOpKind k) {
    return after.kinds[static_cast<int>(k)].ops - before.kinds[static_cast<int>(k)].ops;
  };
  EXPECT_GE(delta(RadosOpKind::kWrite), 3u);   // create, data, rename copy
  EXPECT_GE(delta(RadosOpKind::kRead), 2u);    // rename copy, ReadFileToString
  EXPECT_GE(delta(RadosOpKind::kStat), 2u);
  EXPECT_GE(delta(RadosOpKind::kOmapWrite), 2u);
  EXPECT_GE(delta(RadosOpKind::kRemove), 1u);
  std::printf("WriteFileAtomically of 128 KiB + ReadFileToString: %llu RADOS ops\n",
              static_cast<unsigned long long>(after.TotalOps() - before.TotalOps()));
}

// An asynchronous write the OSD refuses (past osd_max_object_size, 128 MiB
// by default) is reported by the next Sync, naming pool and object, once,
// as Linux reports a writeback error to fsync.
TEST_F(RadosEnvTest, FailedAsyncWriteIsReportedBySyncOnce) {
  std::shared_ptr<RadosCluster> cluster;
  ASSERT_TRUE(test::ConnectTestRados(&cluster, uint64_t{1} << 30, 3).ok());
  std::unique_ptr<Env> env;
  ASSERT_TRUE(NewRadosEnv(cluster, kRoot, &env).ok());
  ASSERT_TRUE(env->CreateDirs(kRoot).ok());
  std::unique_ptr<File> f;
  ASSERT_TRUE(env->OpenFile(P("big"), OpenMode::kCreate, &f).ok());
  ASSERT_TRUE(f->Write(0, "ok", 2).ok());
  ASSERT_TRUE(f->Write(uint64_t{512} << 20, "refused", 7).ok());  // submitted; fails at the OSD
  Status s = f->Sync();
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("rados:dedupv1-index/")) << s.ToString();
  EXPECT_TRUE(f->Sync().ok());  // reported once
  char buf[2];
  ASSERT_TRUE(f->Read(0, 2, buf).ok());
  EXPECT_EQ("ok", std::string(buf, 2));
  f.reset();
  env.reset();
  test::RemoveIndexObjects(cluster.get());
}

TEST_F(RadosEnvTest, GetFreeSpaceOfThePool) {
  uint64_t bytes = 0;
  Status s = env_->GetFreeSpace(kRoot, &bytes);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GT(bytes, 0u);
  std::printf("free space of the index pool: %llu bytes\n", static_cast<unsigned long long>(bytes));
}

// Not a benchmark: the operation count of a typical log pattern, printed for
// the report (and bounded, so a change that adds a round trip per append
// shows up).
TEST_F(RadosEnvTest, SequentialAppendsCostOneOpEach) {
  for (uint64_t stripe : {uint64_t{64} << 10, uint64_t{4} << 20}) {
    std::shared_ptr<RadosCluster> cluster;
    ASSERT_TRUE(test::ConnectTestRados(&cluster, stripe, 3).ok());
    std::unique_ptr<Env> env;
    ASSERT_TRUE(NewRadosEnv(cluster, kRoot, &env).ok());
    ASSERT_TRUE(env->CreateDirs(kRoot).ok());
    std::unique_ptr<File> f;
    ASSERT_TRUE(env->OpenFile(P("log"), OpenMode::kCreate, &f).ok());
    const std::string page = Pattern(4096, 6);
    const uint64_t before = cluster->stats().TotalOps();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; i++) ASSERT_TRUE(f->Write(uint64_t(i) * 4096, page.data(), page.size()).ok());
    ASSERT_TRUE(f->Sync().ok());
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const uint64_t ops = cluster->stats().TotalOps() - before;
    std::printf("stripe %llu KiB: 1000 sequential 4 KiB appends + Sync: %llu RADOS ops, %.3f s (%.0f appends/s)\n",
                static_cast<unsigned long long>(stripe >> 10), static_cast<unsigned long long>(ops), secs,
                1000 / secs);
    EXPECT_LE(ops, 1000u + 40u);
    f.reset();
    env.reset();
    test::RemoveIndexObjects(cluster.get());
  }
}

}  // namespace
}  // namespace dedupv1
