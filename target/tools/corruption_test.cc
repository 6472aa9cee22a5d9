// The corruption suite (issue 19, "never silent"). Each case flips bytes in
// one persistent structure of a store written through DedupSystem and checks:
//  1. every read of every block returns the data written there or an I/O
//     error, never other data (zeros included);
//  2. the open either succeeds (then 1 holds) or refuses with a message that
//     names the damaged file;
//  3. dedupv1_check reports the damage: a problem in its report, or a refusal
//     (or a message, for the caches and hints the open rebuilds) naming the
//     damaged file;
//  4. dedupv1_check --repair followed by a GC round leaves every block that
//     was readable before readable, with the same data.
// docs/durability.md ("What each checksum covers") lists per structure which
// bytes the cases flip and why those.
//
// Four base stores are built once (in forked children) and copied for every
// case: "tc" and "leveldb" (a clean stop after GC merged containers and kept
// garbage, so every catalog file exists; block index in Tokyo Cabinet or
// LevelDB), "dirty" (the tc store, then synced writes with background replay
// paused and a SIGKILL, so the operations log holds the events) and
// "journal" (the tc store with a torn chunk-index page that
// chunk-index.journal would redo). The parent keeps a model of what every
// block holds. Damage positions are found by parsing the files (or, for
// block-index records, by searching the files for the bytes the store
// returns) and chosen with a generator seeded by the case name.
//
// Every open, read, check and GC runs in a forked child (or the real
// dedupv1_check binary), so a library that crashes on a damaged file is
// reported as a failure of its case instead of ending the suite; the parent
// never opens a store itself (LevelDB's background thread would not survive
// a fork).
//
// DEDUPV1_CORRUPTION_VERBOSE=1 prints what each case found;
// DEDUPV1_CORRUPTION_BASE=DIR keeps the base stores in DIR.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "chunkstore/container.h"
#include "chunkstore/container_summary_file.h"
#include "core/base/coding.h"
#include "core/base/config.h"
#include "core/engine/dedup_system.h"
#include "core/base/fault_injection_env.h"
#include "core/base/testutil.h"
#include "index/disk_hash_table.h"
#include "index/kv_store.h"

namespace dedupv1 {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kBlockSize = 64 << 10;
constexpr uint64_t kMiB = 1 << 20;
constexpr int kChildSeconds = 120;  // bound of every child process and binary run
// The chunk index as configured (docs/architecture.md 3.3).
constexpr uint64_t kIndexPage = 4096;
constexpr uint64_t kIndexEntry = 20 + 21;  // SHA-1 + container, usage, flags, last event
constexpr uint64_t kIndexPageHeader = 16;

// ---------------------------------------------------------------------------
// The write script and the model of what every block holds.

struct VolumeSpec {
  const char* name;
  uint64_t size;
};
const VolumeSpec kVolumes[] = {{"vol1", 8 * kMiB}, {"vol2", 2 * kMiB}};

struct ScriptOp {
  enum Kind { kWrite, kZeros, kUnmap, kSync, kGc } kind;
  int volume = 0;  // index into kVolumes
  uint64_t offset = 0, length = 0;
  uint64_t seed = 0;  // kWrite: test::RandomBytes(length, seed)
};

// Everything written to the base stores "tc" and "leveldb", in two runs of
// the system. The first writes a volume, unmaps a quarter of it (GC keeps
// that garbage in containers at least half live: containers/dead-chunks),
// then more of its upper half (GC merges those containers:
// containers/container-aliases). The second writes new unique data, a
// duplicate of it on vol2, zeros, an unaligned piece; part of vol2 is never
// written. (Two runs, so a LevelDB block index holds records both in a table,
// written when the second run opened it, and in its log.)
std::vector<ScriptOp> BaseScript(int run) {
  std::vector<ScriptOp> ops;
  if (run == 0) {
    ops.push_back({ScriptOp::kWrite, 0, 0, 8 * kMiB, 11});
    ops.push_back({ScriptOp::kSync});
    for (uint64_t off = 0; off < 8 * kMiB; off += 4 * kBlockSize) {
      ops.push_back({ScriptOp::kUnmap, 0, off, kBlockSize});
    }
    ops.push_back({ScriptOp::kSync});
    ops.push_back({ScriptOp::kGc});
    for (uint64_t off = 4 * kMiB; off < 8 * kMiB; off += 4 * kBlockSize) {
      ops.push_back({ScriptOp::kUnmap, 0, off + kBlockSize, kBlockSize + kBlockSize / 2});
    }
    ops.push_back({ScriptOp::kSync});
    ops.push_back({ScriptOp::kGc});
  } else {
    ops.push_back({ScriptOp::kWrite, 0, 1 * kMiB, 1 * kMiB, 12});
    ops.push_back({ScriptOp::kWrite, 1, 0, kMiB / 2, 12});  // the first half of the write above
    ops.push_back({ScriptOp::kZeros, 0, 7 * kMiB, kMiB / 4});
    ops.push_back({ScriptOp::kWrite, 1, kMiB / 2, kMiB / 2, 13});
    ops.push_back({ScriptOp::kWrite, 0, 5 * kMiB + 32 * 1024, 100 * 1024, 14});
    ops.push_back({ScriptOp::kSync});
  }
  return ops;
}

// What the dirty store's child writes and syncs before it is killed.
std::vector<ScriptOp> DirtyScript() {
  std::vector<ScriptOp> ops;
  for (uint64_t off = 0; off < kMiB; off += kBlockSize) {
    ops.push_back({ScriptOp::kWrite, 0, 2 * kMiB + off, kBlockSize, 100 + off / kBlockSize});
  }
  ops.push_back({ScriptOp::kWrite, 1, kMiB, kMiB / 2, 21});
  ops.push_back({ScriptOp::kSync});
  return ops;
}

// The bytes of every volume as the script leaves them.
struct Model {
  std::vector<std::vector<uint8_t>> volumes;

  Model() {
    for (const auto& v : kVolumes) volumes.emplace_back(v.size, 0);
  }
  void Apply(const std::vector<ScriptOp>& ops) {
    for (const auto& op : ops) {
      auto& vol = volumes[op.volume];
      if (op.kind == ScriptOp::kWrite) {
        auto data = test::RandomBytes(op.length, op.seed);
        std::copy(data.begin(), data.end(), vol.begin() + op.offset);
      } else if (op.kind == ScriptOp::kZeros || op.kind == ScriptOp::kUnmap) {
        std::fill(vol.begin() + op.offset, vol.begin() + op.offset + op.length, 0);
      }
    }
  }
};

// Runs |ops| on an open system; the first failure is returned.
Status RunScript(DedupSystem* sys, const std::vector<ScriptOp>& ops) {
  for (const auto& op : ops) {
    Volume* v = nullptr;
    DEDUPV1_RETURN_IF_ERROR(sys->GetVolume(kVolumes[op.volume].name, &v));
    Status s;
    switch (op.kind) {
      case ScriptOp::kWrite: {
        auto data = test::RandomBytes(op.length, op.seed);
        s = v->Write(op.offset, op.length, data.data(), false);
        break;
      }
      case ScriptOp::kZeros: {
        std::vector<uint8_t> zeros(op.length, 0);
        s = v->Write(op.offset, op.length, zeros.data(), false);
        break;
      }
      case ScriptOp::kUnmap:
        s = v->Unmap(op.offset, op.length);
        break;
      case ScriptOp::kSync:
        s = sys->Sync();
        break;
      case ScriptOp::kGc:
        s = sys->RunGc();
        break;
    }
    DEDUPV1_RETURN_IF_ERROR(s);
    // Synced one by one, so the single worker sees the writes in script
    // order and the store comes out the same every run.
    if (op.kind == ScriptOp::kWrite || op.kind == ScriptOp::kZeros) DEDUPV1_RETURN_IF_ERROR(sys->Sync());
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------
// Children.

std::string ConfigText(const std::string& data_dir, const std::string& backend) {
  std::string text = "data-dir = " + data_dir + "\n" + "block-size = " + std::to_string(kBlockSize) + "\n" +
                     "block-index.backend = " + backend + "\n" +
                     "chunk-index.size = 1M\n"
                     "bloom.expected-chunks = 64K\n"
                     // Big enough that writers never checkpoint at the log's
                     // hard limit while the dirty store's replay is paused
                     // (a small log keeps a reserve of a quarter of it).
                     "log.size = 4M\n"
                     "write-buffer.size = 8M\n"
                     "container.size = 256K\n"
                     "monitor.enabled = false\n"
                     // The same store every run: one worker filling one
                     // container, chunks and containers ended only by the
                     // data and the script's syncs, not by timers.
                     "dedup.threads = 1\n"
                     "container.open-count = 1\n"
                     "write-buffer.flush-delay = 1h\n"
                     "container.commit-timeout = 1h\n"
                     "idle.period = 1h\n";  // no idle checkpoint or GC round but the script's
  for (const auto& v : kVolumes) text += "volume = " + std::string(v.name) + " " + std::to_string(v.size) + "\n";
  return text;
}

Options OptionsFor(const std::string& data_dir, const std::string& backend) {
  Config config;
  Options options;
  EXPECT_TRUE(Config::Parse(ConfigText(data_dir, backend), "corruption.conf", &config).ok());
  Status s = Options::FromConfig(config, &options);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return options;
}

// What a child process did: its report lines, and how it ended.
struct ChildResult {
  bool exited = false;  // ended by _exit (not by a signal, not timed out)
  int code = -1;
  int signal = 0;  // the signal that ended it (a crash), 0 if none
  bool timed_out = false;
  std::string out;  // everything it reported
  std::string err;  // its stderr
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

// Waits (bounded) for |pid| to end, reading its reports from |fd| until EOF.
void CollectChild(pid_t pid, int fd, ChildResult* r) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kChildSeconds);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r->timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    r->out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status) && !r->timed_out) {
    r->exited = true;
    r->code = WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status) && !r->timed_out) r->signal = WTERMSIG(status);
}

// Runs |body| in a forked child that reports through the callback it gets
// (each call one line, written at once, so a crash keeps what came before);
// the child's stderr goes to |err_path|.
ChildResult RunInChild(const std::string& err_path,
                       const std::function<void(const std::function<void(const std::string&)>& report)>& body) {
  ChildResult r;
  int fd = -1;
  const pid_t pid = test::ForkWithPipe(
      [&](int wfd) {
        const int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (e >= 0) dup2(e, 2);
        auto report = [wfd](const std::string& line) {
          const std::string l = line + "\n";
          size_t done = 0;
          while (done < l.size()) {
            const ssize_t n = write(wfd, l.data() + done, l.size() - done);
            if (n <= 0) _exit(98);
            done += static_cast<size_t>(n);
          }
        };
        body(report);
        _exit(0);
      },
      &fd);
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return r;
  }
  CollectChild(pid, fd, &r);
  r.err = ReadFile(err_path);
  return r;
}

// Runs a binary with |args|; stdout and stderr are captured.
ChildResult RunBinary(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path) {
  ChildResult r;
  int fd = -1;
  const pid_t pid = test::ForkWithPipe(
      [&](int wfd) {
        const int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        close(wfd);
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
      },
      &fd);
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return r;
  }
  CollectChild(pid, fd, &r);
  r.out = ReadFile(out_path);
  r.err = ReadFile(err_path);
  return r;
}

// Copies the data directory |from| to |to|. Container files are never
// changed in place (written under a temporary name and renamed, deleted by
// unlinking), so they are hard-linked; everything else is copied. A case
// that damages a container gives it its own copy first (Unshare).
void CopyStore(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path dest = fs::path(to) / fs::relative(it->path(), from);
    if (it->is_directory()) {
      fs::create_directories(dest);
    } else if (std::error_code ec; it->path().extension() == ".ctr") {
      fs::create_hard_link(it->path(), dest, ec);
      if (ec) fs::copy_file(it->path(), dest);  // another file system
    } else {
      fs::copy_file(it->path(), dest);
    }
  }
}

// Makes |path| a file of its own if it is hard-linked.
void Unshare(const std::string& path) {
  if (fs::hard_link_count(path) <= 1) return;
  const std::string tmp = path + ".unshare";
  fs::copy_file(path, tmp);
  fs::rename(tmp, path);
}

// Per block of a volume: 'o' read back the written data, 'e' the read failed,
// 'w' the read returned other data.
constexpr char kReadOk = 'o', kReadError = 'e', kReadWrong = 'w';

// What a child found when it opened a store and read every block.
struct ReadResult {
  ChildResult child;
  bool opened = false;
  std::string open_error;
  std::vector<std::string> states;  // per volume, one char per block
  std::vector<std::string> notes;   // first error / wrong block per volume, GC and close outcome

  size_t Count(char state) const {
    size_t n = 0;
    for (const auto& s : states) n += std::count(s.begin(), s.end(), state);
    return n;
  }
};

// Child body: reads every block of every volume and reports it.
void ReadAllBlocks(DedupSystem* sys, const Model& model, const std::function<void(const std::string&)>& report) {
  for (size_t v = 0; v < model.volumes.size(); v++) {
    const auto& want = model.volumes[v];
    Volume* vol = nullptr;
    Status s = sys->GetVolume(kVolumes[v].name, &vol);
    const uint64_t blocks = (want.size() + kBlockSize - 1) / kBlockSize;
    if (!s.ok()) {
      report("note volume " + std::string(kVolumes[v].name) + ": " + s.ToString());
      report("blocks " + std::to_string(v) + " " + std::string(blocks, kReadError));
      continue;
    }
    std::string states;
    std::vector<uint8_t> got(kBlockSize);
    bool noted_error = false, noted_wrong = false;
    for (uint64_t b = 0; b < blocks; b++) {
      const uint64_t off = b * kBlockSize;
      const uint64_t len = std::min<uint64_t>(kBlockSize, want.size() - off);
      s = vol->Read(off, len, got.data());
      if (!s.ok()) {
        states += kReadError;
        if (!noted_error) report("note " + std::string(kVolumes[v].name) + " block " + std::to_string(b) + ": " + s.ToString());
        noted_error = true;
      } else if (std::equal(got.begin(), got.begin() + len, want.begin() + off)) {
        states += kReadOk;
      } else {
        states += kReadWrong;
        if (!noted_wrong) {
          const bool zeros = std::all_of(got.begin(), got.begin() + len, [](uint8_t c) { return c == 0; });
          report("note " + std::string(kVolumes[v].name) + " block " + std::to_string(b) + " returned other data" +
                 (zeros ? " (zeros)" : ""));
        }
        noted_wrong = true;
      }
    }
    report("blocks " + std::to_string(v) + " " + states);
  }
}

// Opens the store at |options|, optionally runs a GC round and reopens,
// reads every block.
ReadResult OpenAndRead(const Options& options, const Model& model, bool gc_first, const std::string& err_path) {
  ReadResult r;
  r.child = RunInChild(err_path, [&](const auto& report) {
    std::unique_ptr<DedupSystem> sys;
    Status s = DedupSystem::Open(options, Env::Default(), &sys);
    if (s.ok() && gc_first) {
      Status gc = sys->RunGc();
      report("note gc: " + gc.ToString());
      Status closed = sys->Close();
      if (!closed.ok()) report("note close after gc: " + closed.ToString());
      sys.reset();
      s = DedupSystem::Open(options, Env::Default(), &sys);
    }
    if (!s.ok()) {
      report("open-failed " + s.ToString());
      return;
    }
    report("open-ok");
    ReadAllBlocks(sys.get(), model, report);
    Status closed = sys->Close();
    if (!closed.ok()) report("note close: " + closed.ToString());
  });
  std::istringstream in(r.child.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line == "open-ok") {
      r.opened = true;
    } else if (line.rfind("open-failed ", 0) == 0) {
      r.open_error = line.substr(12);
    } else if (line.rfind("blocks ", 0) == 0) {
      const size_t sp = line.find(' ', 7);
      r.states.push_back(line.substr(sp + 1));
    } else if (line.rfind("note ", 0) == 0) {
      r.notes.push_back(line.substr(5));
    }
  }
  return r;
}

std::string Describe(const ReadResult& r) {
  std::string s;
  if (!r.child.exited) {
    s += r.child.timed_out ? "child timed out; " : "child died of signal " + std::to_string(r.child.signal) + "; ";
  } else if (r.child.code != 0) {
    s += "child exited with code " + std::to_string(r.child.code) + "; ";
  }
  s += r.opened ? "opened" : "open failed: " + r.open_error;
  if (r.opened) {
    s += fmt::format(", blocks ok {} error {} wrong {}", r.Count(kReadOk), r.Count(kReadError), r.Count(kReadWrong));
  }
  for (const auto& n : r.notes) s += "\n  " + n;
  for (size_t v = 0; v < r.states.size(); v++) s += "\n  " + std::string(kVolumes[v].name) + ": " + r.states[v];
  return s;
}

// ---------------------------------------------------------------------------
// Base stores.

enum class Base { kTc, kLevelDb, kDirty, kJournal };

struct BaseStores {
  // DEDUPV1_CORRUPTION_BASE=DIR builds the base stores in DIR (which must
  // not exist) and keeps them, to look at with the tools.
  std::unique_ptr<test::TempDir> temp;
  std::string root;
  Model clean_model;  // tc and leveldb
  Model dirty_model;
  std::string failure;  // why building failed, empty if it did not

  std::string Path(Base b) const {
    switch (b) {
      case Base::kTc: return root + "/tc";
      case Base::kLevelDb: return root + "/leveldb";
      case Base::kDirty: return root + "/dirty";
      case Base::kJournal: return root + "/journal";
    }
    return "";
  }
  static std::string Backend(Base b) { return b == Base::kLevelDb ? "leveldb" : "tokyocabinet"; }
  const Model& ModelOf(Base b) const { return b == Base::kDirty ? dirty_model : clean_model; }
};

// Builds a clean base store in a child: runs the script, closes cleanly.
std::string BuildClean(const std::string& path, const std::string& backend, const std::string& err_path) {
  const Options options = OptionsFor(path, backend);
  ChildResult c = RunInChild(err_path, [&](const auto& report) {
    Status s;
    for (int run = 0; run < 2 && s.ok(); run++) {
      std::unique_ptr<DedupSystem> sys;
      s = DedupSystem::Open(options, Env::Default(), &sys);
      if (s.ok()) s = RunScript(sys.get(), BaseScript(run));
      if (s.ok() && run == 0) {
        const GcStats gc = sys->gc_stats();
        if (gc.containers_merged == 0 || sys->chunk_store()->stats().dead_chunks_marked == 0) {
          s = Status::Corruption(fmt::format("the script left no merged container ({}) or no dead mark ({})",
                                             gc.containers_merged, sys->chunk_store()->stats().dead_chunks_marked));
        }
      }
      Status closed = sys ? sys->Close() : Status::OK();
      if (s.ok()) s = closed;
    }
    report(s.ok() ? "built" : "failed " + s.ToString());
  });
  if (c.out != "built\n") return "building " + path + ": " + c.out + c.err;
  for (const char* f : {"bloom", "containers/container-aliases", "containers/dead-chunks",
                        "containers/container-summaries", "containers/container-id"}) {
    if (!fs::exists(fs::path(path) / f)) return "building " + path + ": no " + f;
  }
  return "";
}

// Builds the dirty store from a copy of the tc store: a child writes
// DirtyScript with background replay paused, syncs, and is killed.
std::string BuildDirty(const std::string& from, const std::string& path, const std::string& err_path) {
  CopyStore(from, path);
  const Options options = OptionsFor(path, "tokyocabinet");
  int fd = -1;
  const pid_t pid = test::ForkWithPipe(
      [&](int wfd) {
        const int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (e >= 0) dup2(e, 2);
        std::unique_ptr<DedupSystem> sys;
        if (!DedupSystem::Open(options, Env::Default(), &sys).ok()) _exit(10);
        sys->PauseReplay(true);
        if (!RunScript(sys.get(), DirtyScript()).ok()) _exit(11);
        char c = 'S';
        if (write(wfd, &c, 1) != 1) _exit(12);
        for (;;) pause();
      },
      &fd);
  if (pid < 0) return "fork failed";
  pollfd p{fd, POLLIN, 0};
  char c = 0;
  const bool synced = poll(&p, 1, kChildSeconds * 1000) == 1 && read(fd, &c, 1) == 1 && c == 'S';
  close(fd);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!synced) return "the dirty store's writer failed: " + ReadFile(err_path);
  if (fs::exists(fs::path(path) / "clean")) return "the dirty store was stopped cleanly";
  return "";
}

// Builds the journal store from a copy of the tc store: a child changes one
// chunk-index entry (its last event id, which nothing reads after a clean
// stop) through the table on an Env that tears the in-place page write, so
// the table holds a torn page and chunk-index.journal the complete batch that
// the next open redoes.
std::string BuildJournal(const std::string& from, const std::string& path, const std::string& err_path) {
  CopyStore(from, path);
  const Options options = OptionsFor(path, "tokyocabinet");
  ChildResult c = RunInChild(err_path, [&](const auto& report) {
    FaultInjectionEnv env(Env::Default());
    std::unique_ptr<DiskHashTable> table;
    Status s = DiskHashTable::Open(options.chunk_index.table, &env, &table);
    std::vector<DiskHashTable::Op> ops;
    uint64_t pages = 0;
    if (s.ok()) {
      s = table->Verify(&pages, [&](const Fingerprint& fp, const ChunkIndexEntry& e) {
        if (ops.empty()) ops.push_back({fp, e, false});
      });
    }
    if (s.ok() && ops.empty()) s = Status::NotFound("no chunk index entry");
    if (!s.ok()) {
      report("failed " + s.ToString());
      return;
    }
    ops[0].entry.last_event_id++;
    // The journal's write goes through; of the page's only its new CRC lands.
    env.AddRule({FaultInjectionEnv::Op::kWrite, "chunk-index", FaultInjectionEnv::Fault::kTorn, 1, -1, 4});
    s = table->Apply(ops);
    report(s.ok() ? "the page write was not torn" : "built");
    _exit(0);  // leaves the journal as a crash would
  });
  if (c.out != "built\n") return "building " + path + ": " + c.out + c.err;
  // The table's copy of the journal's page must differ from the image.
  const std::string journal = ReadFile(JoinPath(path, "chunk-index.journal"));
  if (journal.size() < 32 + kIndexPage) return "building " + path + ": the journal holds no page";
  const uint64_t page = DecodeFixed64(reinterpret_cast<const uint8_t*>(journal.data()) + 24);
  if (ReadFile(JoinPath(path, "chunk-index")).compare(page * kIndexPage, kIndexPage, journal, 32, kIndexPage) == 0) {
    return "building " + path + ": the page in the table is not torn";
  }
  return "";
}

BaseStores* bases = nullptr;

// ---------------------------------------------------------------------------
// Damage: where a case flips bytes.

struct Flip {
  uint64_t offset;
  uint8_t mask;  // XORed into the byte
};

struct Damage {
  std::string file;   // the damaged file
  std::string names;  // what a refusal or check report must mention: the file's path, or "container N"
  std::string what;   // which field, for messages
  std::vector<Flip> flips;
};

std::string RelPath(const std::string& dir, const std::string& path) {
  return fs::relative(path, dir).string();
}

// A nonzero mask from |rng|.
uint8_t Mask(std::mt19937_64& rng) { return static_cast<uint8_t>(1 + rng() % 255); }

// |n| bytes flipped from |offset| on, each with its own mask.
std::vector<Flip> Range(uint64_t offset, size_t n, std::mt19937_64& rng) {
  std::vector<Flip> flips;
  for (size_t i = 0; i < n; i++) flips.push_back({offset + i, Mask(rng)});
  return flips;
}

// A byte at a uniformly chosen offset in [begin, end).
std::vector<Flip> OneIn(uint64_t begin, uint64_t end, std::mt19937_64& rng) {
  return {{begin + rng() % (end - begin), Mask(rng)}};
}

// Context a locator gets: the copy to damage and a seeded generator.
struct Target {
  std::string data_dir;
  std::mt19937_64 rng;
};

using Locator = std::function<Status(Target& t, Damage* d)>;

// Containers --------------------------------------------------------------

struct ContainerFile {
  ContainerId id = 0;
  std::string path;
  size_t fp_size = 0;
  uint16_t version = 0;
  uint32_t items = 0, aliases = 0;
  uint64_t data_size = 0;
  uint64_t ItemsBegin() const { return Container::kHeaderSize + 8ull * aliases; }
  uint64_t ItemSize() const { return Container::ItemSize(fp_size, version); }
  uint64_t DataBegin() const { return ItemsBegin() + uint64_t{items} * ItemSize(); }
};

std::vector<ContainerFile> ListContainers(const std::string& data_dir) {
  std::vector<ContainerFile> out;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(data_dir) / "containers")) {
    if (e.path().extension() != ".ctr") continue;
    const std::string bytes = ReadFile(e.path());
    if (bytes.size() < Container::kHeaderSize) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
    ContainerFile c;
    c.path = e.path();
    c.id = DecodeFixed64(p + 16);
    c.fp_size = p[14];
    c.version = DecodeFixed16(p + 12);
    c.items = DecodeFixed32(p + 24);
    c.aliases = DecodeFixed32(p + 28);
    c.data_size = DecodeFixed64(p + 32);
    out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return out;
}

// Which container a case damages.
enum class Pick {
  kAny,     // chosen by rng
  kMerged,  // one that answers to old ids (chosen by rng)
  kNewest,  // the highest id: in the dirty store, committed after the last checkpoint
};

Status PickContainer(Target& t, Pick pick, ContainerFile* c) {
  auto all = ListContainers(t.data_dir);
  if (pick == Pick::kMerged) {
    all.erase(std::remove_if(all.begin(), all.end(), [](const auto& f) { return f.aliases == 0; }), all.end());
  }
  if (all.empty()) return Status::NotFound("no such container");
  *c = pick == Pick::kNewest ? all.back() : all[t.rng() % all.size()];
  return Status::OK();
}

// |n| bytes at |offset| of a container's header.
Locator ContainerHeader(uint64_t offset, size_t n, Pick pick = Pick::kAny) {
  return [=](Target& t, Damage* d) {
    ContainerFile c;
    DEDUPV1_RETURN_IF_ERROR(PickContainer(t, pick, &c));
    d->file = c.path;
    d->names = "container " + std::to_string(c.id);
    d->flips = Range(offset, n, t.rng);
    return Status::OK();
  };
}

Locator ContainerAlias() {
  return [](Target& t, Damage* d) {
    ContainerFile c;
    DEDUPV1_RETURN_IF_ERROR(PickContainer(t, Pick::kMerged, &c));
    d->file = c.path;
    d->names = "container " + std::to_string(c.id);
    d->flips = {{Container::kHeaderSize + 8 * (t.rng() % c.aliases), 0x01}};
    return Status::OK();
  };
}

// A field of a metadata item: |field| bytes at |at| into the item.
Locator ContainerItem(uint64_t at, size_t n) {
  return [=](Target& t, Damage* d) {
    ContainerFile c;
    DEDUPV1_RETURN_IF_ERROR(PickContainer(t, Pick::kAny, &c));
    if (c.items == 0) return Status::NotFound("empty container");
    d->file = c.path;
    d->names = "container " + std::to_string(c.id);
    const uint64_t item = c.ItemsBegin() + (t.rng() % c.items) * c.ItemSize();
    d->flips = Range(item + at, n, t.rng);
    return Status::OK();
  };
}

Locator ContainerData(Pick pick = Pick::kAny) {
  return [=](Target& t, Damage* d) {
    ContainerFile c;
    DEDUPV1_RETURN_IF_ERROR(PickContainer(t, pick, &c));
    if (c.data_size == 0) return Status::NotFound("container without data");
    d->file = c.path;
    d->names = "container " + std::to_string(c.id);
    d->flips = OneIn(c.DataBegin(), c.DataBegin() + c.data_size, t.rng);
    return Status::OK();
  };
}

// Chunk index ---------------------------------------------------------------


std::string IndexPath(const Target& t) { return JoinPath(t.data_dir, "chunk-index"); }

Locator IndexHeader(uint64_t offset, size_t n) {
  return [=](Target& t, Damage* d) {
    d->file = d->names = IndexPath(t);
    d->flips = Range(offset, n, t.rng);
    return Status::OK();
  };
}

// A bucket page holding entries (or, with |empty|, one never written).
Status PickIndexPage(Target& t, bool empty, uint64_t* page, uint16_t* count) {
  const std::string bytes = ReadFile(IndexPath(t));
  std::vector<std::pair<uint64_t, uint16_t>> pages;
  for (uint64_t p = 1; (p + 1) * kIndexPage <= bytes.size(); p++) {
    const uint16_t n = DecodeFixed16(reinterpret_cast<const uint8_t*>(bytes.data()) + p * kIndexPage + 4);
    if ((n == 0) == empty) pages.emplace_back(p, n);
  }
  if (pages.empty()) return Status::NotFound("no such chunk index page");
  const auto& chosen = pages[t.rng() % pages.size()];
  *page = chosen.first;
  *count = chosen.second;
  return Status::OK();
}

// |n| bytes at |offset| of a page with entries; offset kEntryField + x means
// byte x of an entry chosen by rng; kSlack a byte after the last entry.
constexpr uint64_t kEntryField = 1 << 20;
constexpr uint64_t kSlack = 2 << 20;
Locator IndexPage(uint64_t offset, size_t n) {
  return [=](Target& t, Damage* d) {
    uint64_t page;
    uint16_t count;
    DEDUPV1_RETURN_IF_ERROR(PickIndexPage(t, false, &page, &count));
    d->file = d->names = IndexPath(t);
    const uint64_t base = page * kIndexPage;
    if (offset == kSlack) {
      const uint64_t end = kIndexPageHeader + count * kIndexEntry;
      if (end >= kIndexPage) return Status::NotFound("full page");
      d->flips = OneIn(base + end, base + kIndexPage, t.rng);
    } else if (offset >= kEntryField) {
      const uint64_t entry = base + kIndexPageHeader + (t.rng() % count) * kIndexEntry;
      d->flips = Range(entry + offset - kEntryField, n, t.rng);
    } else {
      d->flips = Range(base + offset, n, t.rng);
    }
    return Status::OK();
  };
}

Locator IndexEmptyPage() {
  return [](Target& t, Damage* d) {
    uint64_t page;
    uint16_t count;
    DEDUPV1_RETURN_IF_ERROR(PickIndexPage(t, true, &page, &count));
    d->file = d->names = IndexPath(t);
    d->flips = OneIn(page * kIndexPage, (page + 1) * kIndexPage, t.rng);
    return Status::OK();
  };
}

// Whole files at an offset --------------------------------------------------

// |n| bytes at |offset| of the file |rel| in the data directory; a negative
// offset counts from the end.
Locator FileBytes(const std::string& rel, int64_t offset, size_t n) {
  return [=](Target& t, Damage* d) {
    d->file = d->names = JoinPath(t.data_dir, rel);
    const uint64_t size = FileSize(d->file);
    const int64_t at = offset < 0 ? static_cast<int64_t>(size) + offset : offset;
    if (size == 0 || at < 0 || static_cast<uint64_t>(at) + n > size) {
      return Status::NotFound(fmt::format("{} has {} bytes", rel, size));
    }
    d->flips = Range(static_cast<uint64_t>(at), n, t.rng);
    return Status::OK();
  };
}

// One byte anywhere in [begin, size - end_margin) of the file.
Locator FileByteIn(const std::string& rel, uint64_t begin, uint64_t end_margin) {
  return [=](Target& t, Damage* d) {
    d->file = d->names = JoinPath(t.data_dir, rel);
    const uint64_t size = FileSize(d->file);
    if (size <= begin + end_margin) return Status::NotFound(rel + " is too small");
    d->flips = OneIn(begin, size - end_margin, t.rng);
    return Status::OK();
  };
}

// The first occurrence of |text| at or after the start of line |line| (0-based)
// of a text file; |mask| is XORed into its byte |index|.
Locator TextByte(const std::string& rel, int line, const std::string& text, size_t index, uint8_t mask) {
  return [=](Target& t, Damage* d) {
    d->file = d->names = JoinPath(t.data_dir, rel);
    const std::string bytes = ReadFile(d->file);
    size_t at = 0;
    for (int i = 0; i < line; i++) {
      at = bytes.find('\n', at);
      if (at == std::string::npos) return Status::NotFound(rel + " has too few lines");
      at++;
    }
    at = bytes.find(text, at);
    if (at == std::string::npos) return Status::NotFound("no '" + text + "' in " + rel);
    d->flips = {{at + index, mask}};
    return Status::OK();
  };
}

// Block index records -------------------------------------------------------

std::string ToHex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

bool FromHex(const std::string& hex, std::string* out) {
  if (hex.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = std::isxdigit(static_cast<unsigned char>(hex[i])) ? std::stoi(hex.substr(i, 1), nullptr, 16) : -1;
    const int lo = std::isxdigit(static_cast<unsigned char>(hex[i + 1])) ? std::stoi(hex.substr(i + 1, 1), nullptr, 16) : -1;
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

// A block index record's key and value, as stored.
struct Record {
  std::string key, value;
};

// The block index records of |data_dir|, read in a child from a scratch
// copy (opening a LevelDB store moves its log into a new compressed table,
// where a record's bytes can no longer be found).
Status ReadRecords(const std::string& data_dir, const std::string& backend, std::vector<Record>* records) {
  const std::string scratch = data_dir + ".records";
  CopyStore(data_dir, scratch);
  const Options options = OptionsFor(scratch, backend);
  ChildResult c = RunInChild(scratch + ".err", [&](const auto& report) {
    std::unique_ptr<KvStore> store;
    Status s = OpenKvStore(options.block_index.backend, options.block_index.path, Env::Default(), &store);
    if (s.ok()) {
      s = store->Scan("", "", [&](const std::string& k, const std::string& v) {
        report(ToHex(k) + " " + ToHex(v));
        return true;
      });
    }
    report(s.ok() ? "done" : "failed " + s.ToString());
  });
  std::istringstream in(c.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line == "done") return Status::OK();
    const size_t sp = line.find(' ');
    if (sp == std::string::npos) return Status::IOError("reading the block index: " + line + c.err);
    Record r;
    if (!FromHex(line.substr(0, sp), &r.key) || !FromHex(line.substr(sp + 1), &r.value)) {
      return Status::IOError("bad record line " + line);
    }
    records->push_back(std::move(r));
  }
  return Status::IOError("reading the block index failed: " + c.out + c.err);
}

// Files of the block index store (one file, or LevelDB's directory).
std::vector<std::string> StoreFiles(const std::string& data_dir, bool leveldb) {
  if (!leveldb) return {JoinPath(data_dir, "block-index.tcb")};
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(fs::path(data_dir) / "block-index.leveldb")) {
    files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Where a record's bytes are: the file holding |needle| once, and the offset.
bool FindOnce(const std::vector<std::string>& files, const std::string& needle, std::string* file, uint64_t* at) {
  for (const auto& f : files) {
    const std::string bytes = ReadFile(f);
    const size_t pos = bytes.find(needle);
    if (pos == std::string::npos) continue;
    if (bytes.find(needle, pos + 1) != std::string::npos) return false;
    *file = f;
    *at = pos;
    return true;
  }
  return false;
}

// Which part of a record a case flips.
enum class RecordPart { kKeyVolume, kKeyBlockHigh, kKeyBlockLow, kValueFormat, kValueVersion, kValueBlockSize,
                        kValueItemCount, kValueItemFp, kValueItemContainer, kValueItemSize, kValueCrc,
                        kTcKeySize, kTcValueSize, kTcDuplicates };

Locator BlockRecord(RecordPart part, bool leveldb) {
  return [=](Target& t, Damage* d) {
    std::vector<Record> records;
    DEDUPV1_RETURN_IF_ERROR(ReadRecords(t.data_dir, leveldb ? "leveldb" : "tokyocabinet", &records));
    // Records whose first item is a chunk (not zeros) and whose bytes are
    // found in the files: the value once, and its key just before it (TC
    // leaves store key then value; LevelDB's log and uncompressed tables key,
    // length varint, value).
    struct Found {
      std::string file;
      uint64_t key_at, value_at, value_size;
    };
    std::vector<Found> found;
    const auto files = StoreFiles(t.data_dir, leveldb);
    for (const Record& r : records) {
      if (r.value.size() < 17 + 37 + 4 || (static_cast<uint8_t>(r.value[17]) & 0x80) != 0) continue;
      Found f;
      if (!FindOnce(files, r.value, &f.file, &f.value_at)) continue;
      const std::string bytes = ReadFile(f.file);
      const size_t k = bytes.rfind(r.key, f.value_at);
      if (k == std::string::npos || f.value_at - k > r.key.size() + 4) continue;
      f.key_at = k;
      f.value_size = r.value.size();
      found.push_back(f);
    }
    if (found.empty()) {
      return Status::NotFound(fmt::format("none of {} records found in the store's files", records.size()));
    }
    const Found& f = found[t.rng() % found.size()];
    d->file = f.file;
    d->names = leveldb ? JoinPath(t.data_dir, "block-index.leveldb") : f.file;
    const uint64_t k = f.key_at, v = f.value_at;
    switch (part) {
      case RecordPart::kKeyVolume: d->flips = {{k + 3, 0x03}}; break;      // volume 1 <-> 2
      case RecordPart::kKeyBlockHigh: d->flips = {{k + 4, 0x01}}; break;   // a block far beyond the volume
      case RecordPart::kKeyBlockLow: d->flips = {{k + 11, 0x01}}; break;   // the neighbour block
      case RecordPart::kValueFormat: d->flips = {{v, Mask(t.rng)}}; break;
      case RecordPart::kValueVersion: d->flips = Range(v + 1, 2, t.rng); break;
      case RecordPart::kValueBlockSize: d->flips = {{v + 11, 0x01}}; break;
      case RecordPart::kValueItemCount: d->flips = {{v + 13, 0x01}}; break;
      case RecordPart::kValueItemFp: d->flips = Range(v + 18 + t.rng() % 20, 1, t.rng); break;
      case RecordPart::kValueItemContainer: d->flips = {{v + 38, 0x01}}; break;
      case RecordPart::kValueItemSize: d->flips = {{v + 50, 0x01}}; break;
      case RecordPart::kValueCrc: d->flips = Range(v + f.value_size - 4, 1, t.rng); break;
      // A Tokyo Cabinet leaf stores per record: key size, value size (two
      // bytes here) and duplicate count as varints, then key and value.
      case RecordPart::kTcKeySize: d->flips = {{k - 4, 0x01}}; break;
      case RecordPart::kTcValueSize: d->flips = {{k - 3, 0x01}}; break;
      case RecordPart::kTcDuplicates: d->flips = {{k - 1, 0x01}}; break;
    }
    return Status::OK();
  };
}

// A file of the LevelDB store whose name contains |part| (".ldb", "MANIFEST",
// "CURRENT"): one byte in its first |share|th.
Locator LevelDbFile(const std::string& part, uint64_t share) {
  return [=](Target& t, Damage* d) {
    for (const auto& f : StoreFiles(t.data_dir, true)) {
      if (fs::path(f).filename().string().find(part) == std::string::npos) continue;
      d->file = f;
      d->names = JoinPath(t.data_dir, "block-index.leveldb");
      const uint64_t size = FileSize(f);
      if (size < share) return Status::NotFound(f + " is too small");
      d->flips = OneIn(0, size / share, t.rng);
      return Status::OK();
    }
    return Status::NotFound("no LevelDB file named *" + part + "*");
  };
}

// The container watermark in "checkpoint" made higher or lower: the first
// of its digits (from the most significant) that can be.
Locator Watermark(bool higher) {
  return [=](Target& t, Damage* d) {
    d->file = d->names = JoinPath(t.data_dir, "checkpoint");
    const std::string text = ReadFile(d->file);
    const size_t eq = text.find("= ");
    if (eq == std::string::npos) return Status::NotFound("no watermark in " + text);
    for (size_t at = eq + 2; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])); at++) {
      const int digit = text[at] - '0';
      for (uint8_t mask = 1; mask < 16; mask++) {
        const int changed = digit ^ mask;
        if (changed > 9 || (changed > digit) != higher) continue;
        d->flips = {{at, mask}};
        return Status::OK();
      }
    }
    return Status::NotFound("no such digit in " + text);
  };
}

// Operations log ------------------------------------------------------------

constexpr uint64_t kLogMagic = 0x474f4c504f315644ULL;
constexpr uint32_t kSlotMagic = 0x534c5644;
constexpr uint64_t kSlotHeader = 48;

struct LogSlot {
  uint64_t seq = 0, offset = 0, event = 0;
  uint16_t type = 0;
  uint32_t length = 0;  // payload bytes
};

struct LogLayout {
  uint64_t slot_size = 0;
  uint64_t newer = 0, older = 0;  // offsets of the superblock copies by sequence
  std::vector<LogSlot> live;      // the slots recovery would walk, in order
};

Status ReadLog(const std::string& path, LogLayout* log) {
  const std::string bytes = ReadFile(path);
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < 4096 || DecodeFixed64(p) != kLogMagic) return Status::Corruption("log superblock A");
  log->slot_size = DecodeFixed32(p + 24);
  const uint64_t slots = DecodeFixed64(p + 32);
  const uint64_t b = log->slot_size;
  if (b < 512 || bytes.size() < slots * b || DecodeFixed64(p + b) != kLogMagic) {
    return Status::Corruption("log superblock B");
  }
  const bool a_newer = DecodeFixed64(p + 16) > DecodeFixed64(p + b + 16);
  log->newer = a_newer ? 0 : b;
  log->older = a_newer ? b : 0;
  const uint64_t data_slots = slots - 2;
  uint64_t seq = DecodeFixed64(p + log->newer + 48);
  for (uint64_t i = 0; i < data_slots; i++, seq++) {
    const uint64_t off = (2 + seq % data_slots) * b;
    const uint8_t* slot = p + off;
    if (DecodeFixed32(slot) != kSlotMagic || DecodeFixed64(slot + 8) != seq) break;
    LogSlot s;
    s.seq = seq;
    s.offset = off;
    s.event = DecodeFixed64(slot + 16);
    s.type = DecodeFixed16(slot + 28);
    s.length = DecodeFixed32(slot + 40);
    log->live.push_back(s);
  }
  return Status::OK();
}

std::string LogPath(const Target& t) { return JoinPath(t.data_dir, "log"); }

// |n| bytes at |offset| of the newer (or older) superblock copy.
Locator Superblock(bool newer, uint64_t offset, size_t n) {
  return [=](Target& t, Damage* d) {
    LogLayout log;
    d->file = d->names = LogPath(t);
    DEDUPV1_RETURN_IF_ERROR(ReadLog(d->file, &log));
    d->flips = Range((newer ? log.newer : log.older) + offset, n, t.rng);
    return Status::OK();
  };
}

// Which live slot a case damages.
enum class SlotChoice { kMiddleMapping, kLastMapping, kMiddleRecord, kFirst, kLast };
constexpr uint64_t kPayload = 1 << 20;  // offset: a byte of the payload

// |n| bytes at |offset| of a live slot (kPayload: a payload byte).
Locator LogSlotBytes(SlotChoice choice, uint64_t offset, size_t n) {
  return [=](Target& t, Damage* d) {
    LogLayout log;
    d->file = d->names = LogPath(t);
    DEDUPV1_RETURN_IF_ERROR(ReadLog(d->file, &log));
    std::vector<LogSlot> mappings, records;
    for (const auto& s : log.live) {
      (s.type == 20 || s.type == 21 ? mappings : records).push_back(s);
    }
    if (mappings.size() < 4 || records.size() < 4) {
      return Status::NotFound(fmt::format("the log holds {} mapping and {} record slots", mappings.size(),
                                          records.size()));
    }
    LogSlot s;
    switch (choice) {
      case SlotChoice::kMiddleMapping: s = mappings[mappings.size() / 2]; break;
      case SlotChoice::kLastMapping: s = mappings.back(); break;
      case SlotChoice::kMiddleRecord: s = records[records.size() / 2]; break;
      case SlotChoice::kFirst: s = log.live.front(); break;
      case SlotChoice::kLast: s = log.live.back(); break;
    }
    if (offset == kPayload) {
      d->flips = OneIn(s.offset + kSlotHeader, s.offset + kSlotHeader + s.length, t.rng);
    } else {
      d->flips = Range(s.offset + offset, n, t.rng);
    }
    d->what = fmt::format("slot seq {} event {} type {}", s.seq, s.event, s.type);
    return Status::OK();
  };
}

// Catalog files -------------------------------------------------------------

const std::string kAliases = "containers/container-aliases";
const std::string kDeadChunks = "containers/dead-chunks";
const std::string kSummaries = "containers/container-summaries";
const std::string kIdMark = "containers/container-id";

// A decimal digit of a merge line's ids, turned into another digit.
Locator AliasDigit() {
  return [](Target& t, Damage* d) {
    d->file = d->names = JoinPath(t.data_dir, kAliases);
    const std::string text = ReadFile(d->file);
    std::vector<uint64_t> digits;
    size_t line = 0;
    while (line < text.size()) {
      size_t end = text.find('\n', line);
      if (end == std::string::npos) end = text.size();
      if (text.compare(line, 6, "merge ") == 0) {
        for (size_t i = line + 6; i < end; i++) {
          if (std::isdigit(static_cast<unsigned char>(text[i]))) digits.push_back(i);
        }
      }
      line = end + 1;
    }
    if (digits.empty()) return Status::NotFound("no merge line");
    d->flips = {{digits[t.rng() % digits.size()], 0x01}};  // '0'<->'1', '2'<->'3', ...
    return Status::OK();
  };
}

// Byte |at| of a record of containers/container-summaries chosen by rng.
Locator SummaryRecord(uint64_t at, size_t n) {
  return [=](Target& t, Damage* d) {
    d->file = d->names = JoinPath(t.data_dir, kSummaries);
    const uint64_t records = FileSize(d->file) / ContainerSummaryFile::kRecordSize;
    if (records == 0) return Status::NotFound("no summary record");
    d->flips = Range((t.rng() % records) * ContainerSummaryFile::kRecordSize + at, n, t.rng);
    return Status::OK();
  };
}

// ---------------------------------------------------------------------------
// The cases.

// What dedupv1_check must do about a case's damage.
enum class CheckMust {
  kReport,      // list a problem, or refuse to open naming the file
  kNameFile,    // a cache or hint the open rebuilds: name the file in what it prints
  kNothing,     // nothing to report: the damage looks exactly like what a crash leaves
};

struct Case {
  std::string name;
  Base base;
  Locator locate;
  CheckMust check = CheckMust::kReport;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> Cases() {
  std::vector<Case> c;
  auto add = [&c](std::string name, Base base, Locator l, CheckMust m = CheckMust::kReport) {
    c.push_back({std::move(name), base, std::move(l), m});
  };
  // Containers: every byte is covered (header and items by meta_crc, data by
  // data_crc and each chunk by its fingerprint; magic, the CRCs themselves).
  add("ContainerMagic", Base::kTc, ContainerHeader(0, 1));
  add("ContainerMetaCrc", Base::kTc, ContainerHeader(4, 1));
  add("ContainerDataCrc", Base::kTc, ContainerHeader(8, 1));
  add("ContainerVersion", Base::kTc, ContainerHeader(12, 1));
  add("ContainerFpSize", Base::kTc, ContainerHeader(14, 1));
  add("ContainerReserved", Base::kTc, ContainerHeader(15, 1));
  add("ContainerId", Base::kTc, ContainerHeader(16, 1));
  add("ContainerItemCount", Base::kTc, ContainerHeader(24, 1));
  add("ContainerAliasCount", Base::kTc, ContainerHeader(28, 1));
  add("ContainerDataSize", Base::kTc, ContainerHeader(32, 1));
  add("ContainerAlias", Base::kTc, ContainerAlias());
  add("ContainerItemFingerprint", Base::kTc, ContainerItem(3, 1));
  add("ContainerItemOffset", Base::kTc, ContainerItem(20, 1));
  add("ContainerItemStoredSize", Base::kTc, ContainerItem(24, 1));
  add("ContainerItemRawSize", Base::kTc, ContainerItem(28, 1));
  add("ContainerItemCompression", Base::kTc, ContainerItem(32, 1));
  for (int i = 0; i < 4; i++) add("ContainerData" + std::to_string(i), Base::kTc, ContainerData());
  // In the dirty store the newest container was committed after the last
  // checkpoint: the open re-imports its metadata into the chunk index.
  add("DirtyNewestContainerMagic", Base::kDirty, ContainerHeader(0, 1, Pick::kNewest));
  add("DirtyNewestContainerItemCount", Base::kDirty, ContainerHeader(24, 1, Pick::kNewest));
  add("DirtyNewestContainerData", Base::kDirty, ContainerData(Pick::kNewest));

  // Chunk index: header [0, 60) (CRC over [0, 56)); bucket pages whole
  // (CRC over [4, page size)), entries and the zeros after them included.
  add("IndexHeaderMagic", Base::kTc, IndexHeader(0, 1));
  add("IndexHeaderVersion", Base::kTc, IndexHeader(8, 1));
  add("IndexHeaderPageSize", Base::kTc, IndexHeader(13, 1));
  add("IndexHeaderKeySize", Base::kTc, IndexHeader(16, 1));
  add("IndexHeaderProbePages", Base::kTc, IndexHeader(20, 1));
  add("IndexHeaderBucketCount", Base::kTc, IndexHeader(24, 1));
  add("IndexHeaderFileSize", Base::kTc, IndexHeader(34, 1));
  add("IndexHeaderEntryCount", Base::kTc, IndexHeader(40, 1));
  add("IndexHeaderZero", Base::kTc, IndexHeader(48, 1));
  add("IndexHeaderCrc", Base::kTc, IndexHeader(56, 1));
  add("IndexPageCrc", Base::kTc, IndexPage(0, 1));
  add("IndexPageCount", Base::kTc, IndexPage(4, 1));
  add("IndexPageFlags", Base::kTc, IndexPage(6, 1));
  add("IndexPageNumber", Base::kTc, IndexPage(8, 1));
  add("IndexEntryFingerprint", Base::kTc, IndexPage(kEntryField + 5, 1));
  add("IndexEntryContainer", Base::kTc, IndexPage(kEntryField + 20, 1));
  add("IndexEntryUsage", Base::kTc, IndexPage(kEntryField + 28, 1));
  add("IndexEntryFlags", Base::kTc, IndexPage(kEntryField + 32, 1));
  add("IndexEntryLastEvent", Base::kTc, IndexPage(kEntryField + 33, 1));
  add("IndexPageSlack", Base::kTc, IndexPage(kSlack, 1));
  add("IndexEmptyPage", Base::kTc, IndexEmptyPage());
  // A dirty start reads the whole table (it rebuilds the bloom filter).
  add("DirtyIndexPageCrc", Base::kDirty, IndexPage(0, 1));
  add("DirtyIndexEntryContainer", Base::kDirty, IndexPage(kEntryField + 20, 1));
  // chunk-index.journal holding a batch whose page write was torn (the
  // journal store): magic, page size, page count, page number, image, CRC
  // (over everything before it). A journal that fails a check is discarded
  // as torn, so the torn page it would have redone must be found instead.
  add("JournalMagic", Base::kJournal, FileBytes("chunk-index.journal", 0, 1));
  add("JournalPageSize", Base::kJournal, FileBytes("chunk-index.journal", 9, 1));
  add("JournalPageCount", Base::kJournal, FileBytes("chunk-index.journal", 16, 1));
  add("JournalPageNumber", Base::kJournal, FileBytes("chunk-index.journal", 24, 1));
  add("JournalImage", Base::kJournal, FileByteIn("chunk-index.journal", 32, 4));
  add("JournalCrc", Base::kJournal, FileBytes("chunk-index.journal", -4, 1));

  // Block index records, both backends: the key and every field of the value
  // (the mapping's own CRC covers the value; Tokyo Cabinet pages carry a CRC
  // over the whole leaf, LevelDB log records and table blocks their own).
  for (bool leveldb : {false, true}) {
    const std::string p = leveldb ? "LevelDb" : "Tc";
    const Base b = leveldb ? Base::kLevelDb : Base::kTc;
    add(p + "KeyVolume", b, BlockRecord(RecordPart::kKeyVolume, leveldb));
    add(p + "KeyBlockHigh", b, BlockRecord(RecordPart::kKeyBlockHigh, leveldb));
    add(p + "KeyBlockLow", b, BlockRecord(RecordPart::kKeyBlockLow, leveldb));
    add(p + "ValueFormat", b, BlockRecord(RecordPart::kValueFormat, leveldb));
    add(p + "ValueVersion", b, BlockRecord(RecordPart::kValueVersion, leveldb));
    add(p + "ValueBlockSize", b, BlockRecord(RecordPart::kValueBlockSize, leveldb));
    add(p + "ValueItemCount", b, BlockRecord(RecordPart::kValueItemCount, leveldb));
    add(p + "ValueItemFingerprint", b, BlockRecord(RecordPart::kValueItemFp, leveldb));
    add(p + "ValueItemContainer", b, BlockRecord(RecordPart::kValueItemContainer, leveldb));
    add(p + "ValueItemSize", b, BlockRecord(RecordPart::kValueItemSize, leveldb));
    add(p + "ValueCrc", b, BlockRecord(RecordPart::kValueCrc, leveldb));
  }
  // Tokyo Cabinet's own structure, which has no checksum: a record's sizes
  // in its leaf, and bytes anywhere (header, hash buckets, leaf and inner
  // node records; most of the file is the hash bucket array, read only by
  // lookups that land there). A library crash or a wrong answer is a
  // failure; without a checksum there is nothing the check must find.
  add("TcRecordKeySize", Base::kTc, BlockRecord(RecordPart::kTcKeySize, false));
  add("TcRecordValueSize", Base::kTc, BlockRecord(RecordPart::kTcValueSize, false));
  add("TcRecordDuplicates", Base::kTc, BlockRecord(RecordPart::kTcDuplicates, false));
  add("TcHeader", Base::kTc, FileBytes("block-index.tcb", 32, 1));
  for (int i = 0; i < 4; i++) {
    add("TcFile" + std::to_string(i), Base::kTc, FileByteIn("block-index.tcb", 256, 0), CheckMust::kNothing);
  }
  // LevelDB's own files: a table (data blocks, in the first quarter of the
  // file; each block has a CRC), the manifest (CRC per record), CURRENT (no
  // CRC: names the manifest).
  for (int i = 0; i < 3; i++) add("LevelDbTable" + std::to_string(i), Base::kLevelDb, LevelDbFile(".ldb", 4));
  add("LevelDbManifest", Base::kLevelDb, LevelDbFile("MANIFEST", 1));
  add("LevelDbCurrent", Base::kLevelDb, LevelDbFile("CURRENT", 1));

  // Operations log (the dirty store): superblock [0, 64) of both copies
  // (CRC over [12, 64)); data slots: header [0, 48) and payload (CRC), not
  // the zero padding after the payload, which nothing reads.
  // A damaged older copy looks exactly like the newer copy's write torn by a
  // crash (copies are written alternately), so the check need not report it.
  for (bool newer : {true, false}) {
    const std::string p = newer ? "LogNewerSuperblock" : "LogOlderSuperblock";
    const CheckMust m = newer ? CheckMust::kReport : CheckMust::kNothing;
    add(p + "Magic", Base::kDirty, Superblock(newer, 0, 1), m);
    add(p + "Crc", Base::kDirty, Superblock(newer, 8, 1), m);
    add(p + "Sequence", Base::kDirty, Superblock(newer, 16, 1), m);
    add(p + "Generation", Base::kDirty, Superblock(newer, 28, 1), m);
    add(p + "HeadId", Base::kDirty, Superblock(newer, 40, 1), m);
    add(p + "HeadSlot", Base::kDirty, Superblock(newer, 48, 1), m);
  }
  add("LogNewerSuperblockVersion", Base::kDirty, Superblock(true, 12, 1));
  add("LogNewerSuperblockSlotSize", Base::kDirty, Superblock(true, 25, 1));
  add("LogNewerSuperblockSlotCount", Base::kDirty, Superblock(true, 32, 1));
  add("LogNewerSuperblockHeadGeneration", Base::kDirty, Superblock(true, 56, 1));
  add("LogNewerSuperblockReserved", Base::kDirty, Superblock(true, 60, 1));
  add("LogSlotMagic", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, 0, 1));
  add("LogSlotCrc", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, 4, 1));
  add("LogSlotSequence", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, 8, 1));
  add("LogSlotEventId", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, 16, 1));
  add("LogSlotGeneration", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, 24, 1));
  add("LogSlotType", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, 28, 1));
  add("LogSlotFragmentIndex", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, 32, 1));
  add("LogSlotFragmentCount", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, 36, 1));
  add("LogSlotLength", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, 40, 1));
  add("LogSlotPayload", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleMapping, kPayload, 1));
  add("LogFirstSlotPayload", Base::kDirty, LogSlotBytes(SlotChoice::kFirst, kPayload, 1));
  add("LogLastMappingSlotPayload", Base::kDirty, LogSlotBytes(SlotChoice::kLastMapping, kPayload, 1));
  add("LogRecordSlotPayload", Base::kDirty, LogSlotBytes(SlotChoice::kMiddleRecord, kPayload, 1));
  add("LogLastSlotPayload", Base::kDirty, LogSlotBytes(SlotChoice::kLast, kPayload, 1), CheckMust::kNothing);

  // checkpoint: "container-watermark = N" (text, no CRC, so nothing for the
  // check to report): a dirty start re-imports the containers above N into
  // the chunk index. Too low (or the key unreadable: 0) re-imports more than
  // needed; too high leaves chunks without an entry until replayed mappings
  // count them, which the check's coverage test would name.
  add("CheckpointWatermarkHigher", Base::kDirty, Watermark(true), CheckMust::kNothing);
  add("CheckpointWatermarkLower", Base::kDirty, Watermark(false), CheckMust::kNothing);
  add("CheckpointKey", Base::kDirty, TextByte("checkpoint", 0, "container", 0, 0x01), CheckMust::kNothing);

  // volumes: "id name size" per line; system: "key = value" per line.
  add("VolumesIdOfAnother", Base::kTc, TextByte("volumes", 0, "1 ", 0, 0x03));  // vol1's id 1 -> 2
  add("VolumesIdNew", Base::kTc, TextByte("volumes", 0, "1 ", 0, 0x02));        // vol1's id 1 -> 3
  add("VolumesName", Base::kTc, TextByte("volumes", 0, "vol1", 3, 0x01));       // vol1 -> vol0
  add("VolumesSizeSmaller", Base::kTc, TextByte("volumes", 0, "838", 0, 0x01));  // 8388608 -> 9388608
  add("VolumesSeparator", Base::kTc, TextByte("volumes", 1, " ", 0, 0x0c));      // ' ' -> ','
  add("SystemFormat", Base::kTc, TextByte("system", 0, "2", 0, 0x01));           // 2 -> 3
  add("SystemFormatOlder", Base::kTc, TextByte("system", 0, "2", 0, 0x03));      // 2 -> 1
  add("SystemBlockSize", Base::kTc, TextByte("system", 1, "65536", 1, 0x01));    // 65536 -> 64536
  add("SystemFingerprint", Base::kTc, TextByte("system", 2, "sha1", 3, 0x02));   // sha1 -> sha3
  add("SystemKey", Base::kTc, TextByte("system", 1, "block", 0, 0x01));          // block-size -> clock-size

  // containers/: container-id (12 bytes, CRC over the first 8);
  // container-aliases (text, CRC line over the rest); dead-chunks (records
  // with a CRC over the payload); container-summaries (36-byte records, CRC
  // over the first 32).
  add("ContainerIdMarkValue", Base::kTc, FileBytes(kIdMark, 1, 1));
  add("ContainerIdMarkCrc", Base::kTc, FileBytes(kIdMark, 8, 1));
  add("AliasesComment", Base::kTc, TextByte(kAliases, 0, "container", 0, 0x01));
  add("AliasesKeyword", Base::kTc, TextByte(kAliases, 1, "merge", 0, 0x01));
  add("AliasesDigit0", Base::kTc, AliasDigit());
  add("AliasesDigit1", Base::kTc, AliasDigit());
  add("AliasesCrc", Base::kTc, TextByte(kAliases, 0, "crc ", 4, 0x01));
  add("DeadChunksLength", Base::kTc, FileBytes(kDeadChunks, 0, 1), CheckMust::kNameFile);
  add("DeadChunksCrc", Base::kTc, FileBytes(kDeadChunks, 4, 1), CheckMust::kNameFile);
  add("DeadChunksContainer", Base::kTc, FileBytes(kDeadChunks, 8, 1), CheckMust::kNameFile);
  add("DeadChunksCount", Base::kTc, FileBytes(kDeadChunks, 16, 1), CheckMust::kNameFile);
  add("DeadChunksFingerprint", Base::kTc, FileByteIn(kDeadChunks, 20, 0), CheckMust::kNameFile);
  add("DeadChunksLastByte", Base::kTc, FileBytes(kDeadChunks, -1, 1), CheckMust::kNameFile);
  add("SummaryId", Base::kTc, SummaryRecord(0, 1), CheckMust::kNameFile);
  add("SummaryFootprint", Base::kTc, SummaryRecord(9, 1), CheckMust::kNameFile);
  add("SummarySize", Base::kTc, SummaryRecord(17, 1), CheckMust::kNameFile);
  add("SummaryLiveCount", Base::kTc, SummaryRecord(24, 1), CheckMust::kNameFile);
  add("SummaryDeadCount", Base::kTc, SummaryRecord(28, 1), CheckMust::kNameFile);
  add("SummaryCrc", Base::kTc, SummaryRecord(32, 1), CheckMust::kNameFile);

  // bloom: header [0, 40) (CRC over [0, 36)), bit array (its own CRC).
  add("BloomMagic", Base::kTc, FileBytes("bloom", 0, 1), CheckMust::kNameFile);
  add("BloomVersion", Base::kTc, FileBytes("bloom", 8, 1), CheckMust::kNameFile);
  add("BloomHashCount", Base::kTc, FileBytes("bloom", 12, 1), CheckMust::kNameFile);
  add("BloomBitCount", Base::kTc, FileBytes("bloom", 17, 1), CheckMust::kNameFile);
  add("BloomEntries", Base::kTc, FileBytes("bloom", 24, 1), CheckMust::kNameFile);
  add("BloomBitsCrc", Base::kTc, FileBytes("bloom", 32, 1), CheckMust::kNameFile);
  add("BloomHeaderCrc", Base::kTc, FileBytes("bloom", 36, 1), CheckMust::kNameFile);
  add("BloomBits", Base::kTc, FileByteIn("bloom", 40, 0), CheckMust::kNameFile);
  return c;
}

// ---------------------------------------------------------------------------
// The test.

class CorruptionTest : public ::testing::TestWithParam<Case> {
 public:
  static inline std::chrono::steady_clock::time_point suite_start;

  static void SetUpTestSuite() {
    suite_start = std::chrono::steady_clock::now();
    // On tmpfs when there is one and TMPDIR does not say otherwise: the
    // suite checks what damage does, not durability against power loss, and
    // each case creates and removes two data directories of 256
    // subdirectories, which takes about a second on a disk.
    const char* tmpdir = std::getenv("TMPDIR");
    if ((tmpdir == nullptr || *tmpdir == '\0') && access("/dev/shm", W_OK) == 0) setenv("TMPDIR", "/dev/shm", 1);
    bases = new BaseStores;
    const char* keep = std::getenv("DEDUPV1_CORRUPTION_BASE");
    if (keep != nullptr && *keep != '\0') {
      bases->root = keep;
      fs::create_directories(bases->root);
    } else {
      bases->temp = std::make_unique<test::TempDir>();
      bases->root = bases->temp->path();
    }
    const auto start = std::chrono::steady_clock::now();
    bases->clean_model.Apply(BaseScript(0));
    bases->clean_model.Apply(BaseScript(1));
    bases->dirty_model = bases->clean_model;
    bases->dirty_model.Apply(DirtyScript());
    std::string& f = bases->failure;
    f = BuildClean(bases->Path(Base::kTc), "tokyocabinet", bases->root + "/build-tc.err");
    if (f.empty()) f = BuildClean(bases->Path(Base::kLevelDb), "leveldb", bases->root + "/build-leveldb.err");
    if (f.empty()) f = BuildDirty(bases->Path(Base::kTc), bases->Path(Base::kDirty), bases->root + "/build-dirty.err");
    if (f.empty()) {
      f = BuildJournal(bases->Path(Base::kTc), bases->Path(Base::kJournal), bases->root + "/build-journal.err");
    }
    std::fprintf(stderr, "corruption suite: base stores built in %.1f s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  static void TearDownTestSuite() {
    std::fprintf(stderr, "corruption suite: %.1f s in all\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - suite_start).count());
    delete bases;
    bases = nullptr;
  }
};

// What dedupv1_check printed and whether it reported |d|.
struct CheckResult {
  ChildResult run;
  nlohmann::json report;  // null if it printed no report
};

CheckResult RunCheck(const std::string& config, const std::string& dir, const std::string& tag) {
  CheckResult r;
  r.run = RunBinary({DEDUPV1_CHECK_BINARY, "--config", config, "--repair", "--json"}, dir + "/" + tag + ".out",
                    dir + "/" + tag + ".err");
  if (!r.run.out.empty()) r.report = nlohmann::json::parse(r.run.out, nullptr, false);
  return r;
}

bool Mentions(const std::string& text, const Damage& d) { return text.find(d.names) != std::string::npos; }

TEST_P(CorruptionTest, NeverSilent) {
  const Case& c = GetParam();
  ASSERT_NE(bases, nullptr);
  ASSERT_EQ(bases->failure, "");
  const std::string backend = BaseStores::Backend(c.base);
  const Model& model = bases->ModelOf(c.base);

  // Two identical damaged copies: A is opened and read as it is, B checked,
  // repaired and collected.
  test::TempDir work;
  const std::string a = work.Sub("a"), b = work.Sub("b");
  CopyStore(bases->Path(c.base), a);
  Target target{a, std::mt19937_64(std::hash<std::string>()(c.name))};
  Damage d;
  Status located = c.locate(target, &d);
  ASSERT_TRUE(located.ok()) << located.ToString();
  ASSERT_FALSE(d.flips.empty());
  Unshare(d.file);
  {
    std::fstream f(d.file, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good()) << d.file;
    for (const Flip& flip : d.flips) {
      char byte = 0;
      f.seekg(static_cast<std::streamoff>(flip.offset));
      f.read(&byte, 1);
      byte = static_cast<char>(byte ^ flip.mask);
      f.seekp(static_cast<std::streamoff>(flip.offset));
      f.write(&byte, 1);
    }
    ASSERT_TRUE(f.good());
  }
  CopyStore(a, b);
  // The damage, for every message below.
  std::string what = RelPath(a, d.file) + " byte";
  for (const Flip& flip : d.flips) what += fmt::format(" {} ^ 0x{:02x}", flip.offset, flip.mask);
  if (!d.what.empty()) what += " (" + d.what + ")";
  SCOPED_TRACE(what);
  // B's own names for what a message must mention.
  Damage d_b = d;
  if (d_b.names.rfind(a, 0) == 0) d_b.names = b + d_b.names.substr(a.size());

  // 1 and 2: open and read A.
  const ReadResult before = OpenAndRead(OptionsFor(a, backend), model, false, work.Sub("a.err"));
  // A child ends with exit code 0 unless a library ended the process (Tokyo
  // Cabinet exits on a failed allocation, say): that is a crash too.
  ASSERT_TRUE(before.child.exited && before.child.code == 0)
      << "open and read: " << Describe(before) << "\n" << before.child.err;
  if (before.opened) {
    EXPECT_EQ(before.Count(kReadWrong), 0u) << "reads returned other data: " << Describe(before);
  } else {
    EXPECT_TRUE(Mentions(before.open_error, d)) << "the refusal does not name " << d.names << ": " << before.open_error;
  }

  // 3: dedupv1_check --repair on B reports the damage.
  const std::string config_b = work.Sub("b.conf");
  std::ofstream(config_b) << ConfigText(b, backend);
  const CheckResult check = RunCheck(config_b, work.path(), "check");
  ASSERT_TRUE(check.run.exited) << "dedupv1_check crashed or hung: " << check.run.out << check.run.err;
  const bool listed = check.report.is_object() && !check.report["problems"].empty();
  const bool named = Mentions(check.run.out + check.run.err, d_b);
  if (c.check == CheckMust::kNothing) {
    // Nothing to require.
  } else if (c.check == CheckMust::kReport) {
    EXPECT_TRUE(listed || (check.run.code != 0 && named))
        << "dedupv1_check did not report the damage (exit " << check.run.code << "):\n"
        << check.run.out << check.run.err;
  } else {
    EXPECT_TRUE(listed || named) << "dedupv1_check did not mention " << d_b.names << " (exit " << check.run.code
                                 << "):\n" << check.run.out << check.run.err;
  }

  // 4: a GC round after the repair, then every block read again.
  const ReadResult after = OpenAndRead(OptionsFor(b, backend), model, true, work.Sub("b.err"));
  ASSERT_TRUE(after.child.exited && after.child.code == 0)
      << "GC and read after repair: " << Describe(after) << "\n" << after.child.err;
  if (after.opened) {
    EXPECT_EQ(after.Count(kReadWrong), 0u) << "after repair and GC reads returned other data: " << Describe(after);
  }
  if (test::EnvKnob("DEDUPV1_CORRUPTION_VERBOSE", 0) != 0) {
    std::string problems;
    if (check.report.is_object()) {
      for (const auto& p : check.report["problems"]) problems += " " + p["kind"].get<std::string>();
    }
    std::fprintf(stderr, "%s: %s\n  before: %s\n  check: exit %d,%s%s\n  after repair and GC: %s\n", c.name.c_str(),
                 what.c_str(), Describe(before).c_str(), check.run.code, problems.empty() ? " no problems" : problems.c_str(),
                 named ? ", names the file" : "", Describe(after).c_str());
  }
  size_t lost = 0;
  std::string lost_blocks;
  for (size_t v = 0; v < before.states.size(); v++) {
    for (size_t blk = 0; blk < before.states[v].size(); blk++) {
      if (before.states[v][blk] != kReadOk) continue;
      if (after.opened && v < after.states.size() && after.states[v][blk] == kReadOk) continue;
      if (lost++ < 8) lost_blocks += fmt::format(" {}:{}", kVolumes[v].name, blk);
    }
  }
  EXPECT_EQ(lost, 0u) << "blocks readable before --repair and GC are not after:" << lost_blocks << "\nbefore: "
                      << Describe(before) << "\nafter: " << Describe(after) << "\ncheck: " << check.run.out
                      << check.run.err;
}

INSTANTIATE_TEST_SUITE_P(Structures, CorruptionTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace dedupv1
