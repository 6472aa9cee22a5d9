// RadosContainerStore's foreign aliases (ContainerStore::PutAlias): object
// "ca.<from as 16 hex digits>" in the data pool and the store's namespace,
// holding the target id (8 bytes little-endian) and a CRC32C over the source
// and target ids (4 bytes), so a damaged or misplaced alias is Corruption
// rather than a read of the wrong container.
#include <cerrno>
#include <cstdio>

#include "chunkstore/rados_container_store.h"
#include "core/base/coding.h"

namespace dedupv1 {
namespace {

constexpr size_t kAliasBytes = 12;

uint32_t AliasCrc(ContainerId from, ContainerId to) {
  uint8_t ids[16];
  EncodeFixed64(ids, from);
  EncodeFixed64(ids + 8, to);
  return Crc32c(ids, sizeof(ids));
}

}  // namespace

std::string RadosContainerStore::AliasObjectName(ContainerId from) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "ca.%016llx", static_cast<unsigned long long>(from));
  return buf;
}

Status RadosContainerStore::PutAlias(ContainerId from, ContainerId to) {
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  std::string v;
  PutFixed64(&v, to);
  PutFixed32(&v, AliasCrc(from, to));
  const std::string object = AliasObjectName(from);
  librados::ObjectWriteOperation op;
  librados::bufferlist bl;
  bl.append(v);
  op.write_full(bl);
  RadosOpTimer t(cluster_.get(), RadosOpKind::kWrite);
  const int r = cluster_->data().operate(object, &op);
  t.Done(r, v.size());
  if (r < 0) return cluster_->ToStatus(r, "write the alias to " + std::to_string(to), cluster_->data_pool(), object);
  return Status::OK();
}

Status RadosContainerStore::GetAlias(ContainerId from, ContainerId* to) {
  const std::string object = AliasObjectName(from);
  librados::bufferlist bl;
  RadosOpTimer t(cluster_.get(), RadosOpKind::kRead);
  const int r = cluster_->data().read(object, bl, kAliasBytes + 1, 0);
  t.Done(r == -ENOENT ? 0 : r, bl.length());
  if (r == -ENOENT) return Status::NotFound("no foreign alias of " + Where(from) + " (" + object + ")");
  if (r < 0) return cluster_->ToStatus(r, "read the alias", cluster_->data_pool(), object);
  const std::string v = bl.to_str();
  if (v.size() != kAliasBytes ||
      DecodeFixed32(reinterpret_cast<const uint8_t*>(v.data()) + 8) !=
          AliasCrc(from, DecodeFixed64(reinterpret_cast<const uint8_t*>(v.data())))) {
    return Status::Corruption("foreign alias " + cluster_->Where(cluster_->data_pool(), object) + " is damaged (" +
                              std::to_string(v.size()) + " bytes or a checksum mismatch)");
  }
  *to = DecodeFixed64(reinterpret_cast<const uint8_t*>(v.data()));
  return Status::OK();
}

Status RadosContainerStore::DeleteAlias(ContainerId from) {
  DEDUPV1_RETURN_IF_ERROR(cluster_->CheckLease());
  const std::string object = AliasObjectName(from);
  RadosOpTimer t(cluster_.get(), RadosOpKind::kRemove);
  const int r = cluster_->data().remove(object);
  t.Done(r == -ENOENT ? 0 : r, 0);
  if (r < 0 && r != -ENOENT) return cluster_->ToStatus(r, "remove the alias", cluster_->data_pool(), object);
  return Status::OK();
}

}  // namespace dedupv1
