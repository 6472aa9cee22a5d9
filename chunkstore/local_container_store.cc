#include "chunkstore/local_container_store.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

constexpr int kSubDirs = 256;
constexpr char kSuffix[] = ".ctr";
constexpr char kTmpSuffix[] = ".tmp";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Parses "<16 hex digits>.ctr".
bool ParseContainerFileName(const std::string& name, ContainerId* id) {
  if (name.size() != 16 + sizeof(kSuffix) - 1 || !EndsWith(name, kSuffix)) return false;
  return ParseHex64(name.data(), 16, id);
}

std::string Name(ContainerId id) { return "container " + std::to_string(id); }

}  // namespace

Status LocalContainerStore::Open(Env* env, const std::string& dir,
                                 std::unique_ptr<LocalContainerStore>* out) {
  return OpenImpl(env, dir, /*read_only=*/false, out);
}

Status LocalContainerStore::OpenExisting(Env* env, const std::string& dir,
                                         std::unique_ptr<LocalContainerStore>* out) {
  return OpenImpl(env, dir, /*read_only=*/true, out);
}

Status LocalContainerStore::OpenImpl(Env* env, const std::string& dir, bool read_only,
                                     std::unique_ptr<LocalContainerStore>* out) {
  std::unique_ptr<LocalContainerStore> store(new LocalContainerStore(env, dir, read_only));
  if (!read_only) DEDUPV1_RETURN_IF_ERROR(env->CreateDirs(dir));
  uint64_t used = 0;
  for (int i = 0; i < kSubDirs; i++) {
    const std::string sub = store->SubDirByIndex(i);
    if (read_only && !env->FileExists(sub)) continue;
    if (!read_only) DEDUPV1_RETURN_IF_ERROR(env->CreateDirs(sub));
    std::vector<std::string> names;
    DEDUPV1_RETURN_IF_ERROR(env->GetChildren(sub, &names));
    for (const std::string& name : names) {
      const std::string path = JoinPath(sub, name);
      if (EndsWith(name, kTmpSuffix)) {
        // A Put that crashed before its rename: never acknowledged, so drop it
        // (unless only inspecting: it may be a Put in progress).
        if (!read_only) DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(path));
        continue;
      }
      ContainerId id;
      if (!ParseContainerFileName(name, &id)) continue;
      uint64_t size = 0;
      DEDUPV1_RETURN_IF_ERROR(env->GetFileSize(path, &size));
      used += size;
    }
  }
  // Make the subdirectories themselves durable.
  if (!read_only) DEDUPV1_RETURN_IF_ERROR(env->SyncDir(dir));
  store->used_bytes_ = used;
  *out = std::move(store);
  return Status::OK();
}

std::string LocalContainerStore::SubDirByIndex(int index) const {
  char buf[3];
  std::snprintf(buf, sizeof(buf), "%02x", index);
  return JoinPath(dir_, buf);
}

std::string LocalContainerStore::SubDir(ContainerId id) const {
  return SubDirByIndex(static_cast<int>(id & 0xff));
}

std::string LocalContainerStore::ContainerPath(ContainerId id) const {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%016llx%s", static_cast<unsigned long long>(id), kSuffix);
  return JoinPath(SubDir(id), buf);
}

Status LocalContainerStore::Put(ContainerId id, const std::string& bytes) {
  if (read_only_) return Status::NotSupported("container store " + dir_ + " is open for inspection only");
  const std::string path = ContainerPath(id);
  const std::string tmp = path + kTmpSuffix;
  uint64_t old_size = 0;
  if (!env_->GetFileSize(path, &old_size).ok()) old_size = 0;

  Status s;
  {
    std::unique_ptr<File> f;
    s = env_->OpenFile(tmp, OpenMode::kTruncate, &f);
    if (s.ok()) s = f->Write(0, bytes.data(), bytes.size());
    if (s.ok()) s = f->Sync();
  }
  if (s.ok()) s = env_->RenameFile(tmp, path);
  if (!s.ok()) {
    // Best effort: do not leave a partial file taking the space we lack.
    env_->DeleteFile(tmp);
    return s.WithContext("put " + Name(id));
  }
  s = env_->SyncDir(SubDir(id));
  if (!s.ok()) return s.WithContext("put " + Name(id));
  used_bytes_ += bytes.size();
  used_bytes_ -= old_size;
  return Status::OK();
}

Status LocalContainerStore::Get(ContainerId id, std::string* bytes) {
  Status s = ReadFileToString(env_, ContainerPath(id), bytes);
  if (s.IsNotFound()) return Status::NotFound(Name(id) + " is not in the container store");
  return s.WithContext("get " + Name(id));
}

Status LocalContainerStore::OpenForRead(ContainerId id, std::unique_ptr<File>* f, uint64_t* size) {
  Status s = env_->OpenFile(ContainerPath(id), OpenMode::kReadOnly, f);
  if (s.IsNotFound()) return Status::NotFound(Name(id) + " is not in the container store");
  if (s.ok()) s = (*f)->Size(size);
  if (!s.ok()) f->reset();  // a later range of |id| tries again
  return s.WithContext("read from " + Name(id));
}

Status LocalContainerStore::ReadOpen(File* f, uint64_t size, ContainerId id, uint64_t offset, size_t n, bool exact,
                                     std::string* bytes, char* into) {
  if (offset > size) offset = size;
  if (exact && n > size - offset) {
    return Status::Corruption(Name(id) + " has " + std::to_string(size) + " bytes, less than its metadata says");
  }
  n = static_cast<size_t>(std::min<uint64_t>(n, size - offset));
  if (into == nullptr) {
    bytes->resize(n);
    into = bytes->data();
  }
  if (n == 0) return Status::OK();
  return f->Read(offset, n, into).WithContext("read from " + Name(id));
}

Status LocalContainerStore::ReadPart(ContainerId id, uint64_t offset, size_t n, bool exact,
                                     std::string* bytes) {
  std::unique_ptr<File> f;
  uint64_t size = 0;
  DEDUPV1_RETURN_IF_ERROR(OpenForRead(id, &f, &size));
  return ReadOpen(f.get(), size, id, offset, n, exact, bytes, nullptr);
}

// Reads straight into the caller's memory where it asks, and opens a
// container once for the ranges of it that follow each other in |reads|.
void LocalContainerStore::GetRanges(std::vector<RangeRead>* reads) {
  std::unique_ptr<File> f;  // of container |open_id|; none after a failed open
  uint64_t size = 0;
  ContainerId open_id = kNoContainer;
  for (RangeRead& r : *reads) {
    r.bytes.clear();
    if (f == nullptr || open_id != r.id) {
      open_id = r.id;
      r.status = OpenForRead(r.id, &f, &size);
      if (!r.status.ok()) continue;
    }
    r.status = ReadOpen(f.get(), size, r.id, r.offset, r.n, /*exact=*/true, &r.bytes, r.into);
  }
}

Status LocalContainerStore::GetHead(ContainerId id, size_t n, std::string* bytes) {
  return ReadPart(id, 0, n, /*exact=*/false, bytes);
}

Status LocalContainerStore::GetRange(ContainerId id, uint64_t offset, size_t n, std::string* bytes) {
  return ReadPart(id, offset, n, /*exact=*/true, bytes);
}

Status LocalContainerStore::Delete(ContainerId id) {
  if (read_only_) return Status::NotSupported("container store " + dir_ + " is open for inspection only");
  const std::string path = ContainerPath(id);
  uint64_t size = 0;
  Status s = env_->GetFileSize(path, &size);
  if (s.IsNotFound()) return Status::NotFound(Name(id) + " is not in the container store");
  if (s.ok()) s = env_->DeleteFile(path);
  if (s.ok()) s = env_->SyncDir(SubDir(id));
  if (!s.ok()) return s.WithContext("delete " + Name(id));
  used_bytes_ -= size;
  return Status::OK();
}

Status LocalContainerStore::List(std::vector<ContainerId>* ids) {
  ids->clear();
  for (int i = 0; i < kSubDirs; i++) {
    if (read_only_ && !env_->FileExists(SubDirByIndex(i))) continue;
    std::vector<std::string> names;
    DEDUPV1_RETURN_IF_ERROR(env_->GetChildren(SubDirByIndex(i), &names));
    for (const std::string& name : names) {
      ContainerId id;
      if (ParseContainerFileName(name, &id)) ids->push_back(id);
    }
  }
  return Status::OK();
}

Status LocalContainerStore::UsedBytes(uint64_t* bytes) {
  *bytes = used_bytes_.load();
  return Status::OK();
}

}  // namespace dedupv1
