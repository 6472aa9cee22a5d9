#include "core/rados/rados_fence.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <list>
#include <memory>

#include "core/rados/bounded_call.h"

namespace dedupv1 {

namespace {

Status BlocklistStatus(RadosCluster* cluster, int r, const std::string& addr) {
  const std::string what = "blocklisting client " + addr + " (to fence it) in the cluster of " +
                           cluster->Where(cluster->index_pool(), "");
  if (r == -EACCES || r == -EPERM) {
    return Status::IOError(what + ": " + std::strerror(-r) + " (user " + cluster->options().client_name +
                           " lacks the mon cap to fence another gateway: it needs mon 'allow r, allow command " +
                           "\"osd blocklist\"' (or mon 'profile rbd'); docs/ceph.md)");
  }
  if (r == -EINVAL) return Status::InvalidArgument(what + ": not a client address: " + std::strerror(-r));
  if (r == -ETIMEDOUT) {
    return Status::IOError(what + ": " + std::strerror(-r) + " (no monitor answered within " +
                           std::to_string(cluster->options().op_timeout_s) + " s)");
  }
  return Status::IOError(what + ": " + std::strerror(-r));
}

// One stat per object, up to kTouchWindow in flight (a slot's objects can be
// many thousands; the objecter would only queue the rest); the first error
// other than ENOENT.
constexpr size_t kTouchWindow = 256;

Status TouchAll(RadosCluster* cluster, const std::vector<std::string>& objects) {
  struct Touch {
    std::unique_ptr<librados::AioCompletion> done;
    uint64_t size = 0;
    time_t mtime = 0;
  };
  Status first;
  for (size_t base = 0; base < objects.size() && first.ok(); base += kTouchWindow) {
    const size_t end = std::min(objects.size(), base + kTouchWindow);
    std::vector<Touch> touches(end - base);
    const auto start = std::chrono::steady_clock::now();
    size_t sent = 0;
    for (; base + sent < end; sent++) {
      Touch& t = touches[sent];
      t.done.reset(librados::Rados::aio_create_completion());
      const int r = cluster->index().aio_stat(objects[base + sent], t.done.get(), &t.size, &t.mtime);
      if (r < 0) {
        first = cluster->ToStatus(r, "stat (fence touch)", cluster->index_pool(), objects[base + sent]);
        break;
      }
    }
    for (size_t i = 0; i < sent; i++) {
      touches[i].done->wait_for_complete();
      const int r = touches[i].done->get_return_value();
      cluster->Record(RadosOpKind::kStat, start, 0, r >= 0 || r == -ENOENT);
      if (r < 0 && r != -ENOENT && first.ok()) {
        first = cluster->ToStatus(r, "stat (fence touch)", cluster->index_pool(), objects[base + i]);
      }
    }
  }
  return first;
}

// The OSDs hear of the new epoch lazily; once this client has it, every op
// of ours carries it, so the touched objects' OSDs catch up before answering.
// Ceph 16's wait_for_latest_osdmap has no timeout (the monitors not
// answering would hang the takeover): it runs bounded by op_timeout_s, on a
// handle of its own to the connection, which stays valid if it outlives this
// call.
Status WaitForLatestOsdMap(RadosCluster* cluster, const std::string& client_addr) {
  const uint32_t limit_s = cluster->options().op_timeout_s;
  auto handle = std::make_shared<librados::Rados>(cluster->index());
  RadosOpTimer timer(cluster, RadosOpKind::kLock);
  int r = 0;
  if (!RunBounded([handle] { return handle->wait_for_latest_osdmap(); }, std::chrono::seconds(limit_s), &r)) {
    timer.Done(-ETIMEDOUT, 0);
    return Status::IOError("fencing client " + client_addr + ": the cluster of " +
                           cluster->Where(cluster->index_pool(), "") + " did not send the newest OSD map (the one " +
                           "that blocklists the client) within " + std::to_string(limit_s) +
                           " s (storage.rados.op-timeout); the client is blocklisted, but not yet known to be "
                           "refused everywhere: not taking over");
  }
  timer.Done(r, 0);
  if (r < 0) {
    return cluster->ToStatus(r, "waiting for the OSD map after blocklisting " + client_addr, cluster->index_pool(), "");
  }
  return Status::OK();
}

}  // namespace

std::string BareAddress(const std::string& addr) {
  for (const char* type : {"v1:", "v2:", "any:"}) {
    if (addr.rfind(type, 0) == 0) return addr.substr(std::strlen(type));
  }
  return addr;
}

Status Fence(RadosCluster* cluster, const std::string& client_addr, uint32_t expire_s,
             const std::vector<std::string>& touch_index_objects) {
  if (BareAddress(client_addr) == BareAddress(cluster->client_address())) {
    return Status::InvalidArgument("refusing to fence client " + client_addr + ": it is this process' own connection");
  }
  {
    RadosOpTimer timer(cluster, RadosOpKind::kLock);
    const int r = cluster->rados().blocklist_add(client_addr, expire_s);
    timer.Done(r, 0);
    if (r < 0) return BlocklistStatus(cluster, r, client_addr);
  }
  DEDUPV1_RETURN_IF_ERROR(WaitForLatestOsdMap(cluster, client_addr));
  return TouchAll(cluster, touch_index_objects);
}

Status ListLockHolders(RadosCluster* cluster, const std::string& object, const std::string& lock_name,
                       std::vector<RadosLockHolder>* holders) {
  holders->clear();
  int exclusive = 0;
  std::string tag;
  std::list<librados::locker_t> lockers;
  RadosOpTimer timer(cluster, RadosOpKind::kLock);
  const int r = cluster->index().list_lockers(object, lock_name, &exclusive, &tag, &lockers);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r == -ENOENT) return Status::OK();
  if (r < 0) return cluster->ToStatus(r, "list lockers of " + lock_name, cluster->index_pool(), object);
  for (const librados::locker_t& l : lockers) holders->push_back(RadosLockHolder{l.client, l.cookie, l.address});
  return Status::OK();
}

Status BreakLock(RadosCluster* cluster, const std::string& object, const std::string& lock_name,
                 const RadosLockHolder& holder) {
  RadosOpTimer timer(cluster, RadosOpKind::kLock);
  const int r = cluster->index().break_lock(object, lock_name, holder.client, holder.cookie);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r < 0 && r != -ENOENT) {
    return cluster->ToStatus(r, "break lock " + lock_name + " of " + holder.client + " (cookie " + holder.cookie + ")",
                             cluster->index_pool(), object);
  }
  return Status::OK();
}

Status FenceLockHolder(RadosCluster* cluster, const std::string& object, const std::string& lock_name,
                       uint32_t expire_s, const std::vector<std::string>& touch_index_objects,
                       std::vector<RadosLockHolder>* fenced) {
  std::vector<RadosLockHolder> holders;
  DEDUPV1_RETURN_IF_ERROR(ListLockHolders(cluster, object, lock_name, &holders));
  std::vector<std::string> touch = touch_index_objects;
  touch.push_back(object);
  for (const RadosLockHolder& h : holders) {
    // Fenced before its lock is broken: between the two it could otherwise
    // still write while the caller already believes the store is its own.
    DEDUPV1_RETURN_IF_ERROR(Fence(cluster, h.address, expire_s, touch));
    DEDUPV1_RETURN_IF_ERROR(BreakLock(cluster, object, lock_name, h));
    if (fenced != nullptr) fenced->push_back(h);
  }
  return Status::OK();
}

}  // namespace dedupv1
