#include "core/rados/rados_env.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "core/rados/rados_file.h"
#include "core/rados/rados_lock.h"

namespace dedupv1 {

namespace {

// Lexical normal form: no empty or "." components, no trailing '/'.
// ".." is refused (it could leave the root).
Status Normalize(const std::string& path, std::string* out) {
  std::string result = !path.empty() && path[0] == '/' ? "/" : "";
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    const std::string part = path.substr(pos, next - pos);
    pos = next + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return Status::InvalidArgument("path " + path + ": '..' is not supported by the RADOS backend");
    if (!result.empty() && result.back() != '/') result += '/';
    result += part;
  }
  *out = result;
  return Status::OK();
}

std::string ParentOf(const std::string& rel) {
  const size_t pos = rel.rfind('/');
  return pos == std::string::npos ? "" : rel.substr(0, pos);
}

std::string NameOf(const std::string& rel) {
  const size_t pos = rel.rfind('/');
  return pos == std::string::npos ? rel : rel.substr(pos + 1);
}

// The object of directory |rel| ("" is the root).
std::string DirOid(const std::string& rel) { return rel + "/"; }

// The number after "key": in |json| at or after |from|; false if none.
bool FindJsonNumber(const std::string& json, size_t from, const std::string& key, uint64_t* v) {
  const size_t pos = json.find("\"" + key + "\":", from);
  if (pos == std::string::npos) return false;
  size_t p = pos + key.size() + 3;
  while (p < json.size() && json[p] == ' ') p++;
  uint64_t n = 0;
  bool any = false;
  for (; p < json.size() && json[p] >= '0' && json[p] <= '9'; p++) {
    n = n * 10 + static_cast<uint64_t>(json[p] - '0');
    any = true;
  }
  *v = n;
  return any;
}

class RadosEnv : public Env {
 public:
  RadosEnv(std::shared_ptr<RadosCluster> cluster, std::string root, std::string base)
      : cluster_(std::move(cluster)), root_(std::move(root)), base_(std::move(base)) {}

  Status OpenFile(const std::string& path, OpenMode mode, std::unique_ptr<File>* file) override;
  bool FileExists(const std::string& path) override;
  Status DeleteFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status LinkFile(const std::string& from, const std::string& to) override;
  Status CreateDirs(const std::string& path) override;
  Status GetChildren(const std::string& dir, std::vector<std::string>* names) override;
  Status SyncDir(const std::string& dir) override;
  Status GetFileSize(const std::string& path, uint64_t* size) override;
  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override;
  Status GetFreeSpace(const std::string& path, uint64_t* bytes) override;
  // One RADOS read is a round trip of ~0.5-1 ms here, in which ~64 KiB more
  // arrive at the cluster's read bandwidth.
  size_t PreferredReadSize() const override { return 64 << 10; }

 private:
  Status Map(const std::string& path, std::string* rel) const;
  Status MapFile(const std::string& path, std::string* rel) const;
  std::shared_ptr<RadosFileState> Live(const std::string& rel);
  Status CreateFileObject(const std::string& rel, const std::string& path, bool exclusive, RadosFileMeta* meta);
  Status Reincarnate(const std::string& rel, const std::string& path, RadosFileMeta* meta);
  Status AddEntry(const std::string& rel, const std::string& path);
  Status RemoveEntry(const std::string& rel, const std::string& path);
  Status RemoveFileObjects(const std::string& rel, const RadosFileMeta& meta);
  Status CopyFile(const std::string& from, const RadosFileMeta& meta, const std::string& to, bool exclusive);
  Status ReadStripe(const std::string& oid, uint64_t len, librados::bufferlist* bl, int* r);
  Status CurrentMeta(const std::string& rel, RadosFileMeta* meta);
  RadosCluster* cluster() { return cluster_.get(); }

  const std::shared_ptr<RadosCluster> cluster_;
  const std::string root_;
  // The object-name form of |root_|: "" (objects named by the path relative
  // to the root, the root directory "/"), or a gateway slot's directory
  // "gw.NAME" (objects "gw.NAME/<relative path>", the root "gw.NAME/").
  // Map() returns names with it, so everything below works on full names.
  const std::string base_;
  std::mutex mu_;  // serializes namespace changes (open, delete, rename, link)
  std::map<std::string, std::weak_ptr<RadosFileState>> open_;
};

Status RadosEnv::Map(const std::string& path, std::string* rel) const {
  std::string p;
  DEDUPV1_RETURN_IF_ERROR(Normalize(path, &p));
  if (p == root_) {
    rel->clear();
  } else if (p.size() > root_.size() && p.compare(0, root_.size(), root_) == 0 &&
             (root_ == "/" || p[root_.size()] == '/')) {
    *rel = p.substr(root_ == "/" ? 1 : root_.size() + 1);
  } else {
    return Status::InvalidArgument(path + " is outside the store's directory " + root_ +
                                   " (with storage.backend = rados every file of the store is under it)");
  }
  if (rel->find('@') != std::string::npos) {
    return Status::InvalidArgument(path + ": the RADOS backend does not support '@' in file names (it names stripes)");
  }
  *rel = RadosEnvFileObject(base_, *rel);
  return Status::OK();
}

Status RadosEnv::MapFile(const std::string& path, std::string* rel) const {
  DEDUPV1_RETURN_IF_ERROR(Map(path, rel));
  if (*rel == base_) return Status::InvalidArgument(path + " is the store's directory, not a file");
  return Status::OK();
}

std::shared_ptr<RadosFileState> RadosEnv::Live(const std::string& rel) {
  auto it = open_.find(rel);
  if (it == open_.end()) return nullptr;
  std::shared_ptr<RadosFileState> state = it->second.lock();
  if (state == nullptr) open_.erase(it);
  return state;
}

// The metadata of |rel| as it is now, counting writes of open handles.
Status RadosEnv::CurrentMeta(const std::string& rel, RadosFileMeta* meta) {
  if (std::shared_ptr<RadosFileState> state = Live(rel)) DEDUPV1_RETURN_IF_ERROR(state->Sync());
  return StatRadosFile(cluster(), rel, meta);
}

Status RadosEnv::CreateFileObject(const std::string& rel, const std::string& path, bool exclusive,
                                  RadosFileMeta* meta) {
  *meta = RadosFileMeta();
  meta->id = NewRadosFileId();
  librados::ObjectWriteOperation op;
  op.create(exclusive);
  SetRadosFileMeta(*meta, &op);
  int r = 0;
  Status s = RadosOperate(cluster(), rel, &op, RadosOpKind::kWrite, 0, "create " + path, &r);
  if (r == -EEXIST) return Status::FromErrno(EEXIST, "create " + path);
  return s;
}

// Truncation on open: a new incarnation of size 0 in one operation, then the
// old incarnation's stripes go.
Status RadosEnv::Reincarnate(const std::string& rel, const std::string& path, RadosFileMeta* meta) {
  const RadosFileMeta old = *meta;
  *meta = RadosFileMeta();
  meta->id = NewRadosFileId();
  librados::ObjectWriteOperation op;
  op.assert_exists();
  op.truncate(0);
  SetRadosFileMeta(*meta, &op);
  DEDUPV1_RETURN_IF_ERROR(RadosOperate(cluster(), rel, &op, RadosOpKind::kWrite, 0, "truncate " + path));
  return RemoveRadosStripes(cluster(), rel, old.id, 1, RadosLastStripe(old, cluster_->options().stripe_size));
}

Status RadosEnv::AddEntry(const std::string& rel, const std::string& path) {
  librados::ObjectWriteOperation op;
  op.assert_exists();
  std::map<std::string, librados::bufferlist> entry;
  entry[NameOf(rel)] = librados::bufferlist();
  op.omap_set(entry);
  const std::string dir = DirOid(ParentOf(rel));
  int r = 0;
  Status s = RadosOperate(cluster(), dir, &op, RadosOpKind::kOmapWrite, 0, "add directory entry", &r);
  if (r == -ENOENT) {
    return Status::NotFound(path + ": directory " + DirName(path) + " does not exist (" +
                            cluster_->Where(cluster_->index_pool(), dir) + ")");
  }
  return s;
}

Status RadosEnv::RemoveEntry(const std::string& rel, const std::string& path) {
  librados::ObjectWriteOperation op;
  op.omap_rm_keys({NameOf(rel)});
  int r = 0;
  Status s = RadosOperate(cluster(), DirOid(ParentOf(rel)), &op, RadosOpKind::kOmapWrite, 0,
                          "remove directory entry of " + path, &r);
  return r == -ENOENT ? Status::OK() : s;
}

// Stripes >= 1 first, stripe 0 last: while stripe 0 exists the file is whole
// or being deleted; once it is gone nothing of the file is left behind.
Status RadosEnv::RemoveFileObjects(const std::string& rel, const RadosFileMeta& meta) {
  DEDUPV1_RETURN_IF_ERROR(
      RemoveRadosStripes(cluster(), rel, meta.id, 1, RadosLastStripe(meta, cluster_->options().stripe_size)));
  librados::ObjectWriteOperation op;
  op.remove();
  int r = 0;
  Status s = RadosOperate(cluster(), rel, &op, RadosOpKind::kRemove, 0, "remove", &r);
  return r == -ENOENT ? Status::OK() : s;
}

Status RadosEnv::OpenFile(const std::string& path, OpenMode mode, std::unique_ptr<File>* file) {
  std::string rel;
  DEDUPV1_RETURN_IF_ERROR(MapFile(path, &rel));
  const bool writable = mode != OpenMode::kReadOnly;
  std::lock_guard<std::mutex> l(mu_);
  std::shared_ptr<RadosFileState> state = Live(rel);
  if (state != nullptr) {
    if (mode == OpenMode::kCreateNew) return Status::FromErrno(EEXIST, "open " + path);
    if (mode == OpenMode::kTruncate) DEDUPV1_RETURN_IF_ERROR(state->Truncate(0));
    if (writable) {
      DEDUPV1_RETURN_IF_ERROR(AddEntry(rel, path));
      DEDUPV1_RETURN_IF_ERROR(state->TrimStale());  // if only readers had it open since a crash
    }
    file->reset(new RadosFile(state, path));
    return Status::OK();
  }
  RadosFileMeta meta;
  Status s = StatRadosFile(cluster(), rel, &meta);
  bool created = false;
  if (s.IsNotFound()) {
    if (mode == OpenMode::kReadOnly || mode == OpenMode::kReadWrite) return s.WithContext("open " + path);
    DEDUPV1_RETURN_IF_ERROR(CreateFileObject(rel, path, mode == OpenMode::kCreateNew, &meta));
    created = true;
  } else if (!s.ok()) {
    return s.WithContext("open " + path);
  } else if (mode == OpenMode::kCreateNew) {
    return Status::FromErrno(EEXIST, "open " + path);
  } else if (mode == OpenMode::kTruncate) {
    DEDUPV1_RETURN_IF_ERROR(Reincarnate(rel, path, &meta));
  }
  // Every open for writing (re)adds the entry: the file is listed before
  // anything written to it is acknowledged, also after a crash between the
  // creation and the entry.
  if (writable) {
    s = AddEntry(rel, path);
    if (!s.ok()) {
      if (created) RemoveFileObjects(rel, meta);
      return s;
    }
  }
  state = std::make_shared<RadosFileState>(cluster_, rel, path, meta);
  if (writable && meta.hwm > meta.size) DEDUPV1_RETURN_IF_ERROR(state->TrimStale());
  open_[rel] = state;
  file->reset(new RadosFile(state, path));
  return Status::OK();
}

// False only when RADOS says "no such object" for both the file and the
// directory object. Any other answer (a timeout, EIO, missing caps, a damaged
// file object) counts as "exists": callers take false as "create it fresh"
// (LevelDB writes a new empty database, the log a new empty log), which over
// an existing but unreadable file would throw stored data away; the open or
// read that follows reports the real error, naming pool and object.
bool RadosEnv::FileExists(const std::string& path) {
  std::string rel;
  if (!Map(path, &rel).ok()) return false;
  std::lock_guard<std::mutex> l(mu_);
  if (rel != base_) {
    if (Live(rel) != nullptr) return true;
    RadosFileMeta meta;
    Status s = StatRadosFile(cluster(), rel, &meta);
    if (!s.IsNotFound()) return true;
  }
  librados::ObjectReadOperation op;
  uint64_t size = 0;
  time_t mtime = 0;
  int stat_r = 0;
  op.stat(&size, &mtime, &stat_r);
  int r = 0;
  return !RadosOperateRead(cluster(), DirOid(rel), &op, RadosOpKind::kStat, "stat", &r).IsNotFound();
}

Status RadosEnv::DeleteFile(const std::string& path) {
  std::string rel;
  DEDUPV1_RETURN_IF_ERROR(MapFile(path, &rel));
  std::lock_guard<std::mutex> l(mu_);
  RadosFileMeta meta;
  if (std::shared_ptr<RadosFileState> state = Live(rel)) {
    state->Detach(&meta);  // the file goes: a failed flush of it does not matter
    open_.erase(rel);
  } else {
    DEDUPV1_RETURN_IF_ERROR(StatRadosFile(cluster(), rel, &meta).WithContext("delete " + path));
  }
  // The entry first: a listed name always exists.
  DEDUPV1_RETURN_IF_ERROR(RemoveEntry(rel, path));
  return RemoveFileObjects(rel, meta).WithContext("delete " + path);
}

Status RadosEnv::ReadStripe(const std::string& oid, uint64_t len, librados::bufferlist* bl, int* r) {
  librados::ObjectReadOperation op;
  int read_r = 0;
  op.read(0, len, bl, &read_r);
  return RadosOperateRead(cluster(), oid, &op, RadosOpKind::kRead, "read", r);
}

// Copies file |from| (metadata |meta|) to |to| under a fresh incarnation:
// stripes >= 1 first, then stripe 0 with data, size and id in one write, the
// moment |to| changes from its old content to the new one. |exclusive|: fail
// if |to| exists.
Status RadosEnv::CopyFile(const std::string& from, const RadosFileMeta& meta, const std::string& to, bool exclusive) {
  const uint64_t stripe = cluster_->options().stripe_size;
  RadosFileMeta target;
  target.id = NewRadosFileId();
  target.size = meta.size;
  target.hwm = meta.size;
  const uint64_t last = meta.size <= stripe ? 0 : (meta.size - 1) / stripe;
  for (uint64_t n = 1; n <= last; n++) {
    librados::bufferlist bl;
    int r = 0;
    const std::string src = RadosStripeOid(from, meta.id, n);
    Status s = ReadStripe(src, std::min(stripe, meta.size - n * stripe), &bl, &r);
    if (r == -ENOENT) continue;  // a hole stays a hole
    DEDUPV1_RETURN_IF_ERROR(s);
    const uint64_t bytes = bl.length();
    librados::ObjectWriteOperation op;
    op.write_full(bl);
    DEDUPV1_RETURN_IF_ERROR(RadosOperate(cluster(), RadosStripeOid(to, target.id, n), &op, RadosOpKind::kWrite,
                                         bytes, "copy " + src));
  }
  librados::bufferlist bl;
  DEDUPV1_RETURN_IF_ERROR(ReadStripe(from, std::min(stripe, meta.size), &bl, nullptr));
  const uint64_t bytes = bl.length();
  librados::ObjectWriteOperation op;
  if (exclusive) op.create(true);
  op.write_full(bl);
  SetRadosFileMeta(target, &op);
  int r = 0;
  Status s = RadosOperate(cluster(), to, &op, RadosOpKind::kWrite, bytes, "copy " + from, &r);
  if (!s.ok()) {
    RemoveRadosStripes(cluster(), to, target.id, 1, last);  // nobody can see them: undo
    if (r == -EEXIST) return Status::FromErrno(EEXIST, "copy to " + to);
  }
  return s;
}

Status RadosEnv::RenameFile(const std::string& from, const std::string& to) {
  std::string rf, rt;
  DEDUPV1_RETURN_IF_ERROR(MapFile(from, &rf));
  DEDUPV1_RETURN_IF_ERROR(MapFile(to, &rt));
  if (rf == rt) return Status::OK();
  const std::string what = "rename " + from + " to " + to;
  std::lock_guard<std::mutex> l(mu_);
  RadosFileMeta src;
  if (std::shared_ptr<RadosFileState> state = Live(rf)) {
    open_.erase(rf);
    DEDUPV1_RETURN_IF_ERROR(state->Detach(&src).WithContext(what));
  } else {
    DEDUPV1_RETURN_IF_ERROR(StatRadosFile(cluster(), rf, &src).WithContext(what));
  }
  RadosFileMeta old_target;
  if (std::shared_ptr<RadosFileState> state = Live(rt)) {
    open_.erase(rt);
    state->Detach(&old_target);
  }
  Status t = StatRadosFile(cluster(), rt, &old_target);
  if (!t.ok() && !t.IsNotFound()) return t.WithContext(what);
  DEDUPV1_RETURN_IF_ERROR(CopyFile(rf, src, rt, false).WithContext(what));
  DEDUPV1_RETURN_IF_ERROR(AddEntry(rt, to).WithContext(what));
  DEDUPV1_RETURN_IF_ERROR(RemoveEntry(rf, from).WithContext(what));
  DEDUPV1_RETURN_IF_ERROR(RemoveFileObjects(rf, src).WithContext(what));
  if (t.ok()) {
    // The old target's stripes >= 1 belong to its old incarnation.
    DEDUPV1_RETURN_IF_ERROR(RemoveRadosStripes(cluster(), rt, old_target.id, 1,
                                               RadosLastStripe(old_target, cluster_->options().stripe_size))
                                .WithContext(what));
  }
  return Status::OK();
}

Status RadosEnv::LinkFile(const std::string& from, const std::string& to) {
  std::string rf, rt;
  DEDUPV1_RETURN_IF_ERROR(MapFile(from, &rf));
  DEDUPV1_RETURN_IF_ERROR(MapFile(to, &rt));
  const std::string what = "link " + from + " to " + to;
  std::lock_guard<std::mutex> l(mu_);
  RadosFileMeta src, existing;
  DEDUPV1_RETURN_IF_ERROR(CurrentMeta(rf, &src).WithContext(what));
  if (Live(rt) != nullptr || StatRadosFile(cluster(), rt, &existing).ok()) return Status::FromErrno(EEXIST, what);
  DEDUPV1_RETURN_IF_ERROR(CopyFile(rf, src, rt, true).WithContext(what));
  return AddEntry(rt, to).WithContext(what);
}

Status RadosEnv::CreateDirs(const std::string& path) {
  std::string rel;
  DEDUPV1_RETURN_IF_ERROR(Map(path, &rel));
  // Each directory object is created before its parent lists it. The walk
  // starts at the root (base_): a slot's root is listed in no directory.
  std::string dir = base_;
  size_t pos = base_.empty() ? 0 : base_.size() + 1;
  for (;;) {
    librados::ObjectWriteOperation create;
    create.create(false);
    DEDUPV1_RETURN_IF_ERROR(
        RadosOperate(cluster(), DirOid(dir), &create, RadosOpKind::kWrite, 0, "create directory " + path));
    if (dir != base_) {
      librados::ObjectWriteOperation entry;
      std::map<std::string, librados::bufferlist> e;
      e[NameOf(dir)] = librados::bufferlist();
      entry.omap_set(e);
      DEDUPV1_RETURN_IF_ERROR(RadosOperate(cluster(), DirOid(ParentOf(dir)), &entry, RadosOpKind::kOmapWrite, 0,
                                           "create directory " + path));
    }
    if (pos >= rel.size()) break;
    size_t next = rel.find('/', pos);
    if (next == std::string::npos) next = rel.size();
    dir = rel.substr(0, next);
    pos = next + 1;
  }
  return Status::OK();
}

Status RadosEnv::GetChildren(const std::string& dir, std::vector<std::string>* names) {
  std::string rel;
  names->clear();
  DEDUPV1_RETURN_IF_ERROR(Map(dir, &rel));
  std::string after;
  for (bool more = true; more;) {
    std::set<std::string> keys;
    int keys_r = 0;
    librados::ObjectReadOperation op;
    op.omap_get_keys2(after, 1024, &keys, &more, &keys_r);
    DEDUPV1_RETURN_IF_ERROR(RadosOperateRead(cluster(), DirOid(rel), &op, RadosOpKind::kOmapRead,
                                             "list directory " + dir));
    if (keys.empty()) break;
    names->insert(names->end(), keys.begin(), keys.end());
    after = *keys.rbegin();
  }
  return Status::OK();
}

Status RadosEnv::SyncDir(const std::string& dir) {
  // Every operation is durable when acknowledged; only the path is checked.
  std::string rel;
  return Map(dir, &rel);
}

Status RadosEnv::GetFileSize(const std::string& path, uint64_t* size) {
  std::string rel;
  DEDUPV1_RETURN_IF_ERROR(MapFile(path, &rel));
  std::lock_guard<std::mutex> l(mu_);
  if (std::shared_ptr<RadosFileState> state = Live(rel)) {
    *size = state->Size();
    return Status::OK();
  }
  RadosFileMeta meta;
  DEDUPV1_RETURN_IF_ERROR(StatRadosFile(cluster(), rel, &meta).WithContext("size of " + path));
  *size = meta.size;
  return Status::OK();
}

Status RadosEnv::LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) {
  std::string rel;
  DEDUPV1_RETURN_IF_ERROR(MapFile(path, &rel));
  {
    // The lock file exists and is listed, as on posix.
    std::unique_ptr<File> f;
    DEDUPV1_RETURN_IF_ERROR(OpenFile(path, OpenMode::kCreate, &f));
  }
  return RadosLock::Acquire(cluster_, rel, path, lock);
}

Status RadosEnv::GetFreeSpace(const std::string& path, uint64_t* bytes) {
  std::string rel;
  DEDUPV1_RETURN_IF_ERROR(Map(path, &rel));
  const std::string& pool = cluster_->index_pool();
  librados::bufferlist in, out;
  std::string outs;
  RadosOpTimer timer(cluster(), RadosOpKind::kStat);
  const std::string df = R"({"prefix": "df", "detail": "detail", "format": "json"})";  // detail: the quota
  const int r = cluster_->rados().mon_command(df, in, &out, &outs);
  timer.Done(r, 0);
  if (r < 0) return cluster_->ToStatus(r, "ceph df (" + outs + ")", pool, "");
  const std::string json = out.to_str();
  size_t at = json.find("\"name\":\"" + pool + "\"");
  uint64_t max_avail = 0, stored = 0, quota = 0;
  // Only this pool's part of the answer (up to the next pool's name).
  const std::string mine = at == std::string::npos ? "" : json.substr(at, json.find("\"name\":", at + 1) - at);
  at = 0;
  if (mine.empty() || !FindJsonNumber(mine, at, "max_avail", &max_avail)) {
    return Status::IOError("ceph df: no max_avail for pool " + pool);
  }
  *bytes = max_avail;
  if (FindJsonNumber(mine, at, "quota_bytes", &quota) && quota > 0 && FindJsonNumber(mine, at, "stored", &stored)) {
    *bytes = std::min(max_avail, quota > stored ? quota - stored : 0);
  }
  return Status::OK();
}

}  // namespace

std::string RadosEnvFileObject(const std::string& object_dir, const std::string& rel) {
  if (object_dir.empty()) return rel;
  return rel.empty() ? object_dir : object_dir + "/" + rel;
}

std::string RadosEnvDirObject(const std::string& object_dir, const std::string& rel) {
  return DirOid(RadosEnvFileObject(object_dir, rel));
}

Status NewRadosEnv(std::shared_ptr<RadosCluster> cluster, const std::string& root, std::unique_ptr<Env>* out) {
  return NewRadosEnv(std::move(cluster), root, "", out);
}

Status NewRadosEnv(std::shared_ptr<RadosCluster> cluster, const std::string& root, const std::string& object_dir,
                   std::unique_ptr<Env>* out) {
  std::string normal;
  DEDUPV1_RETURN_IF_ERROR(Normalize(root, &normal));
  if (normal.empty()) return Status::InvalidArgument("RADOS backend: the store's directory is empty");
  if (object_dir.find_first_of("/@") != std::string::npos || object_dir == "." || object_dir == "..") {
    return Status::InvalidArgument("RADOS backend: object directory '" + object_dir + "' must be one name");
  }
  out->reset(new RadosEnv(std::move(cluster), normal, object_dir));
  return Status::OK();
}

}  // namespace dedupv1
