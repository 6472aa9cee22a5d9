#include "chunkstore/memory_container_store.h"

#include <algorithm>

namespace dedupv1 {
namespace {

Status Missing(ContainerId id) {
  return Status::NotFound("container " + std::to_string(id) + " is not in the container store");
}

}  // namespace

MemoryContainerStore::MemoryContainerStore(std::string name, std::shared_ptr<Contents> contents)
    : name_(std::move(name)), contents_(contents ? std::move(contents) : std::make_shared<Contents>()) {}

Status MemoryContainerStore::Put(ContainerId id, const std::string& bytes) {
  std::lock_guard<std::mutex> l(contents_->mu);
  std::string& slot = contents_->containers[id];
  contents_->used_bytes -= slot.size();
  slot = bytes;
  contents_->used_bytes += bytes.size();
  return Status::OK();
}

Status MemoryContainerStore::Get(ContainerId id, std::string* bytes) {
  std::lock_guard<std::mutex> l(contents_->mu);
  auto it = contents_->containers.find(id);
  if (it == contents_->containers.end()) return Missing(id);
  *bytes = it->second;
  return Status::OK();
}

Status MemoryContainerStore::GetHead(ContainerId id, size_t n, std::string* bytes) {
  std::lock_guard<std::mutex> l(contents_->mu);
  auto it = contents_->containers.find(id);
  if (it == contents_->containers.end()) return Missing(id);
  bytes->assign(it->second, 0, std::min(n, it->second.size()));
  return Status::OK();
}

Status MemoryContainerStore::GetRange(ContainerId id, uint64_t offset, size_t n, std::string* bytes) {
  std::lock_guard<std::mutex> l(contents_->mu);
  auto it = contents_->containers.find(id);
  if (it == contents_->containers.end()) return Missing(id);
  const std::string& all = it->second;
  if (offset > all.size() || n > all.size() - offset) {
    return Status::Corruption("container " + std::to_string(id) + " has " + std::to_string(all.size()) +
                              " bytes, less than its metadata says");
  }
  bytes->assign(all, offset, n);
  return Status::OK();
}

Status MemoryContainerStore::Delete(ContainerId id) {
  std::lock_guard<std::mutex> l(contents_->mu);
  auto it = contents_->containers.find(id);
  if (it == contents_->containers.end()) return Missing(id);
  contents_->used_bytes -= it->second.size();
  contents_->containers.erase(it);
  return Status::OK();
}

Status MemoryContainerStore::List(std::vector<ContainerId>* ids) {
  std::lock_guard<std::mutex> l(contents_->mu);
  ids->clear();
  for (const auto& [id, _] : contents_->containers) ids->push_back(id);
  return Status::OK();
}

Status MemoryContainerStore::UsedBytes(uint64_t* bytes) {
  std::lock_guard<std::mutex> l(contents_->mu);
  *bytes = contents_->used_bytes;
  return Status::OK();
}

std::string MemoryContainerStore::Where(ContainerId id) const {
  return "memory:" + name_ + "/container " + std::to_string(id);
}

}  // namespace dedupv1
