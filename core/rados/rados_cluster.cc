#include "core/rados/rados_cluster.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <list>
#include <map>
#include <mutex>

#include "core/rados/op_result.h"

namespace dedupv1 {

namespace {

std::mutex registry_mu;
// Live connections by RadosOptions::ConnectionKey(). Weak, so the last user
// closing a store closes the connection.
std::map<std::string, std::weak_ptr<RadosCluster>>& Registry() {
  static auto* registry = new std::map<std::string, std::weak_ptr<RadosCluster>>();
  return *registry;
}

}  // namespace

const char* RadosOpKindName(RadosOpKind kind) {
  switch (kind) {
    case RadosOpKind::kRead: return "read";
    case RadosOpKind::kWrite: return "write";
    case RadosOpKind::kOmapRead: return "omap_read";
    case RadosOpKind::kOmapWrite: return "omap_write";
    case RadosOpKind::kStat: return "stat";
    case RadosOpKind::kRemove: return "remove";
    case RadosOpKind::kList: return "list";
    case RadosOpKind::kLock: return "lock";
    case RadosOpKind::kCount: break;
  }
  return "?";
}

uint64_t RadosStats::TotalOps() const {
  uint64_t n = 0;
  for (const Kind& k : kinds) n += k.ops;
  return n;
}

Status RadosCluster::Shared(const RadosOptions& options, std::shared_ptr<RadosCluster>* out) {
  std::lock_guard<std::mutex> l(registry_mu);
  const std::string key = options.ConnectionKey();
  auto it = Registry().find(key);
  if (it != Registry().end()) {
    if (std::shared_ptr<RadosCluster> live = it->second.lock()) {
      *out = live;
      return Status::OK();
    }
  }
  std::shared_ptr<RadosCluster> cluster(new RadosCluster(options));
  DEDUPV1_RETURN_IF_ERROR(cluster->Connect());
  Registry()[key] = cluster;
  *out = cluster;
  return Status::OK();
}

Status RadosCluster::Unshared(const RadosOptions& options, std::shared_ptr<RadosCluster>* out) {
  std::shared_ptr<RadosCluster> cluster(new RadosCluster(options));
  DEDUPV1_RETURN_IF_ERROR(cluster->Connect());
  *out = cluster;
  return Status::OK();
}

RadosCluster::~RadosCluster() {
  data_.close();
  index_.close();
  if (connected_) rados_.shutdown();
}

Status RadosCluster::Connect() {
  const std::string who = "Ceph cluster (conf " + (options_.conf_file.empty() ? std::string("default") : options_.conf_file) +
                          ", user " + options_.client_name + ")";
  int r = rados_.init2(options_.client_name.c_str(), "ceph", 0);
  if (r < 0) return Status::InvalidArgument(who + ": bad client name: " + std::strerror(-r));
  r = rados_.conf_read_file(options_.conf_file.empty() ? nullptr : options_.conf_file.c_str());
  if (r < 0) {
    rados_.shutdown();
    return Status::InvalidArgument(who + ": cannot read the conf file: " + std::strerror(-r));
  }
  if (!options_.keyring.empty()) rados_.conf_set("keyring", options_.keyring.c_str());
  // No call may hang on a stopped cluster: every wait ends in ETIMEDOUT.
  const std::string timeout = std::to_string(options_.op_timeout_s);
  rados_.conf_set("rados_osd_op_timeout", timeout.c_str());
  rados_.conf_set("rados_mon_op_timeout", timeout.c_str());
  rados_.conf_set("client_mount_timeout", timeout.c_str());
  // librados' own log stays out of the target's stderr.
  rados_.conf_set("log_to_stderr", "false");
  rados_.conf_set("err_to_stderr", "false");
  r = rados_.connect();
  if (r < 0) {
    rados_.shutdown();
    if (r == -ENOENT) {
      return Status::InvalidArgument(who + ": the conf names no monitor (mon_host) or the user has no keyring: " +
                                     std::strerror(-r));
    }
    if (r == -ETIMEDOUT || r == -ECONNREFUSED) {
      return Status::IOError(who + ": cluster unreachable (no monitor answered within " + timeout +
                             " s): " + std::strerror(-r));
    }
    if (r == -EPERM || r == -EACCES) {
      return Status::IOError(who + ": authentication refused (check the keyring and the user's key): " +
                             std::strerror(-r));
    }
    return Status::IOError(who + ": cannot connect: " + std::strerror(-r));
  }
  connected_ = true;
  DEDUPV1_RETURN_IF_ERROR(OpenPool(options_.data_pool, &data_));
  DEDUPV1_RETURN_IF_ERROR(OpenPool(options_.index_pool, &index_));
  return Status::OK();
}

Status RadosCluster::OpenPool(const std::string& pool, librados::IoCtx* ioctx) {
  int r = rados_.ioctx_create(pool.c_str(), *ioctx);
  if (r == -ENOENT) {
    return Status::NotFound("Ceph pool '" + pool + "' does not exist (create it: ceph osd pool create " + pool +
                            "; see docs/ceph.md)");
  }
  if (r < 0) return ToStatus(r, "open pool", pool, "");
  ioctx->set_namespace(options_.store);
  // A write to a full pool (or one over its quota) fails at once with
  // EDQUOT/ENOSPC instead of waiting for space until the op timeout (which
  // would turn "pool full" into a vague timeout), and removes still run, so
  // garbage collection can free space in a full pool.
  ioctx->set_pool_full_try();
  return Status::OK();
}

Status RadosCluster::PoolUsage(const std::string& pool, uint64_t* objects, uint64_t* bytes, int max_age_s) {
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> l(usage_mu_);
    auto it = usage_.find(pool);
    if (it != usage_.end() && now - it->second.at < std::chrono::seconds(max_age_s)) {
      if (!it->second.error.ok()) return it->second.error;
      *objects = it->second.objects;
      *bytes = it->second.bytes;
      return Status::OK();
    }
  }
  std::map<std::string, librados::pool_stat_t> stats;
  RadosOpTimer timer(this, RadosOpKind::kStat);
  std::list<std::string> pools{pool};
  int r = rados_.get_pool_stats(pools, stats);
  timer.Done(r, 0);
  if (r < 0) {
    // Not asked again for max_age_s: a monitor refreshing its page must not
    // wait for a stopped cluster's timeout on every request.
    std::lock_guard<std::mutex> l(usage_mu_);
    usage_[pool].at = now;
    usage_[pool].error = ToStatus(r, "pool stats", pool, "");
    return usage_[pool].error;
  }
  auto it = stats.find(pool);
  if (it == stats.end()) return Status::NotFound("no stats for pool " + pool);
  std::lock_guard<std::mutex> l(usage_mu_);
  PoolUsageCache& c = usage_[pool];
  c.at = now;
  c.error = Status::OK();
  c.objects = *objects = it->second.num_objects;
  c.bytes = *bytes = it->second.num_bytes;
  return Status::OK();
}

void RadosCluster::LeaseRenewed(const void* lock, std::chrono::steady_clock::time_point began) {
  std::lock_guard<std::mutex> l(lease_mu_);
  leases_[lock] = began;
}

void RadosCluster::LeaseReleased(const void* lock) {
  std::lock_guard<std::mutex> l(lease_mu_);
  leases_.erase(lock);
}

namespace {

Status FencedStatus(const std::string& why) { return Status::IOError("gateway lost its store lock (fenced): " + why); }

}  // namespace

Status RadosCluster::CheckLease() {
  std::lock_guard<std::mutex> l(lease_mu_);
  if (!fenced_why_.empty()) return FencedStatus(fenced_why_);
  const auto now = std::chrono::steady_clock::now();
  const auto lease = std::chrono::seconds(options_.lock_duration_s);
  for (const auto& [lock, began] : leases_) {
    if (now - began >= lease) {
      const auto ago = std::chrono::duration_cast<std::chrono::milliseconds>(now - began).count();
      const std::string renewed = "the store's lock in RADOS (" + Where(options_.index_pool, "") +
                                  ") was last renewed " + std::to_string(ago / 1000.0).substr(0, 5) +
                                  " s ago, longer than its lease of " + std::to_string(options_.lock_duration_s) + " s";
      if (options_.fence_on_lease_loss) {
        // Another gateway may have taken over and recovered meanwhile: a
        // later successful renewal must not make this process a writer again.
        fenced_why_ = renewed;
        return FencedStatus(fenced_why_);
      }
      return Status::IOError(renewed +
                             ": writes are refused, since another gateway may hold the store now (renewal goes on; "
                             "if it keeps failing, restart the target)");
    }
  }
  return Status::OK();
}

void RadosCluster::SetFenced(const std::string& why) {
  std::lock_guard<std::mutex> l(lease_mu_);
  if (fenced_why_.empty()) fenced_why_ = why.empty() ? "unknown reason" : why;
}

bool RadosCluster::fenced() const {
  std::lock_guard<std::mutex> l(lease_mu_);
  return !fenced_why_.empty();
}

Status RadosCluster::CheckFenced() const {
  std::lock_guard<std::mutex> l(lease_mu_);
  return fenced_why_.empty() ? Status::OK() : FencedStatus(fenced_why_);
}

std::string RadosCluster::Where(const std::string& pool, const std::string& object) const {
  return "rados:" + pool + "/" + options_.store + (object.empty() ? "" : "/" + object);
}

Status RadosCluster::IndexObjectExists(const std::string& object, const std::string& what, bool* exists) {
  uint64_t size = 0;
  time_t mtime = 0;
  RadosOpTimer timer(this, RadosOpKind::kStat);
  const int r = index_.stat(object, &size, &mtime);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  *exists = r >= 0;
  if (r < 0 && r != -ENOENT) return ToStatus(r, what, options_.index_pool, object);
  return Status::OK();
}

Status RadosCluster::ReadIndexOmapPage(const std::string& object, const std::string& after, size_t max,
                                       std::map<std::string, librados::bufferlist>* page, const std::string& what) {
  page->clear();
  librados::ObjectReadOperation op;
  bool more = false;
  int rval = 0;
  op.omap_get_vals2(after, max, page, &more, &rval);
  RadosOpTimer timer(this, RadosOpKind::kOmapRead);
  int r = index_.operate(object, &op, nullptr);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r == -ENOENT) {  // nothing was ever written
    page->clear();
    return Status::OK();
  }
  r = CompoundResult(r, {rval});
  if (r < 0) return ToStatus(r, what, options_.index_pool, object);
  return Status::OK();
}

Status RadosCluster::SetIndexOmapKeys(const std::string& object,
                                      const std::map<std::string, librados::bufferlist>& keys,
                                      const std::string& what) {
  DEDUPV1_RETURN_IF_ERROR(CheckLease());
  librados::ObjectWriteOperation op;
  op.create(false);
  op.omap_set(keys);
  RadosOpTimer timer(this, RadosOpKind::kOmapWrite);
  const int r = index_.operate(object, &op);
  timer.Done(r, 0);
  if (r < 0) return ToStatus(r, what, options_.index_pool, object);
  return Status::OK();
}

Status RadosCluster::RemoveIndexOmapKeys(const std::string& object, const std::set<std::string>& keys,
                                         const std::string& what) {
  DEDUPV1_RETURN_IF_ERROR(CheckLease());
  librados::ObjectWriteOperation op;
  op.omap_rm_keys(keys);
  RadosOpTimer timer(this, RadosOpKind::kOmapWrite);
  const int r = index_.operate(object, &op);
  timer.Done(r == -ENOENT ? 0 : r, 0);
  if (r < 0 && r != -ENOENT) return ToStatus(r, what, options_.index_pool, object);
  return Status::OK();
}

Status RadosCluster::ToStatus(int r, const std::string& what, const std::string& pool, const std::string& object) const {
  const std::string msg = what + " " + Where(pool, object) + ": " + std::strerror(-r);
  switch (-r) {
    case ENOENT: return Status::NotFound(msg);
    case ENOSPC:
    case EDQUOT: return Status::NoSpace(msg + " (pool '" + pool + "' is full or over its quota)");
    case EPERM:
    case EACCES:
      return Status::IOError(msg + " (user " + options_.client_name + " lacks the caps for pool '" + pool +
                             "': it needs 'osd allow rwx pool=" + pool + "')");
    case ETIMEDOUT:
      return Status::IOError(msg + " (the cluster did not answer within " + std::to_string(options_.op_timeout_s) +
                             " s)");
    case EBUSY: return Status::Busy(msg);
    case ESHUTDOWN:
      // EBLOCKLISTED: another gateway fenced this client (core/rados/rados_fence.h).
      return Status::IOError(msg + " (this client " + client_address() +
                             " is blocklisted: another gateway fenced it and took over the store)");
    case EOPNOTSUPP:
      return Status::NotSupported(msg + " (pool '" + pool + "' does not support this operation: the index pool must " +
                                  "be replicated, since erasure-coded pools have no omap; docs/ceph.md)");
    case EEXIST: return Status::Aborted(msg);
    case EINVAL: return Status::InvalidArgument(msg);
    default: return Status::IOError(msg);
  }
}

void RadosCluster::Record(RadosOpKind kind, std::chrono::steady_clock::time_point start, uint64_t bytes, bool ok) {
  const uint64_t us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  RadosOpCounters& c = counters_[static_cast<int>(kind)];
  c.ops.fetch_add(1, std::memory_order_relaxed);
  if (!ok) c.errors.fetch_add(1, std::memory_order_relaxed);
  c.bytes.fetch_add(bytes, std::memory_order_relaxed);
  c.latency_us_total.fetch_add(us, std::memory_order_relaxed);
  uint64_t max = c.latency_us_max.load(std::memory_order_relaxed);
  while (us > max && !c.latency_us_max.compare_exchange_weak(max, us, std::memory_order_relaxed)) {
  }
}

RadosStats RadosCluster::stats() const {
  RadosStats s;
  for (int i = 0; i < static_cast<int>(RadosOpKind::kCount); i++) {
    const RadosOpCounters& c = counters_[i];
    s.kinds[i].ops = c.ops.load(std::memory_order_relaxed);
    s.kinds[i].errors = c.errors.load(std::memory_order_relaxed);
    s.kinds[i].bytes = c.bytes.load(std::memory_order_relaxed);
    s.kinds[i].latency_us_total = c.latency_us_total.load(std::memory_order_relaxed);
    s.kinds[i].latency_us_max = c.latency_us_max.load(std::memory_order_relaxed);
  }
  return s;
}

}  // namespace dedupv1
