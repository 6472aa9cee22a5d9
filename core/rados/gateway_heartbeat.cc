#include "core/rados/gateway_heartbeat.h"

#include <cerrno>

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

constexpr uint8_t kHeartbeatVersion = 1;      // without load figures
constexpr uint8_t kHeartbeatLoadVersion = 2;  // volumes followed by the load figures
constexpr char kIncarnationXattr[] = "incarnation";
// Bounds of a decoded record: more would be a damaged length, not a slot.
constexpr uint32_t kMaxVolumes = 65536;

}  // namespace

std::string GatewayHeartbeatObject(const std::string& gateway) { return "gw." + gateway + ".state"; }

std::string EncodeGatewayHeartbeat(const std::string& gateway, const GatewayHeartbeat& hb) {
  std::string v;
  v.push_back(static_cast<char>(hb.has_load ? kHeartbeatLoadVersion : kHeartbeatVersion));
  PutFixed64(&v, hb.beat);
  PutFixed32(&v, hb.incarnation);
  PutFixed32(&v, hb.takeovers);
  PutFixed32(&v, hb.pid);
  PutString16(&v, hb.state);
  PutString16(&v, hb.host);
  PutString16(&v, hb.portal);
  PutFixed32(&v, static_cast<uint32_t>(hb.volumes.size()));
  for (const auto& name : hb.volumes) PutString16(&v, name);
  if (hb.has_load) {
    PutFixed64(&v, hb.claims_pending);
    PutFixed32(&v, hb.shards);
    PutFixed64(&v, hb.shard_ops_total);
    PutFixed64(&v, hb.shard_ops_max);
  }
  PutFixed32(&v, Crc32cKeyed(gateway, v));
  return v;
}

Status DecodeGatewayHeartbeat(const std::string& where, const std::string& gateway, const std::string& v,
                              GatewayHeartbeat* hb) {
  auto damaged = [&](const std::string& why) {
    return Status::Corruption("gateway heartbeat " + where + ": damaged record (" + why + ")");
  };
  constexpr size_t kFixed = 1 + 8 + 4 + 4 + 4;
  if (v.size() < kFixed + 3 * 2 + 4 + 4) return damaged(std::to_string(v.size()) + " bytes");
  const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
  if (DecodeFixed32(p + v.size() - 4) != Crc32cKeyed(gateway, v.substr(0, v.size() - 4))) {
    return damaged("CRC mismatch");
  }
  if (p[0] != kHeartbeatVersion && p[0] != kHeartbeatLoadVersion) {
    return damaged("unknown version " + std::to_string(p[0]));
  }
  GatewayHeartbeat out;
  out.beat = DecodeFixed64(p + 1);
  out.incarnation = DecodeFixed32(p + 9);
  out.takeovers = DecodeFixed32(p + 13);
  out.pid = DecodeFixed32(p + 17);
  size_t pos = kFixed;
  if (!GetString16(v, &pos, &out.state) || !GetString16(v, &pos, &out.host) || !GetString16(v, &pos, &out.portal) ||
      pos + 4 > v.size()) {
    return damaged("bad lengths");
  }
  const uint32_t n = DecodeFixed32(p + pos);
  pos += 4;
  if (n > kMaxVolumes) return damaged(std::to_string(n) + " volumes");
  out.volumes.resize(n);
  for (auto& name : out.volumes) {
    if (!GetString16(v, &pos, &name)) return damaged("bad volume name length");
  }
  if (p[0] == kHeartbeatLoadVersion) {
    constexpr size_t kLoad = 8 + 4 + 8 + 8;
    if (pos + kLoad + 4 > v.size()) return damaged("bad lengths");
    out.has_load = true;
    out.claims_pending = DecodeFixed64(p + pos);
    out.shards = DecodeFixed32(p + pos + 8);
    out.shard_ops_total = DecodeFixed64(p + pos + 12);
    out.shard_ops_max = DecodeFixed64(p + pos + 20);
    pos += kLoad;
  }
  if (pos + 4 != v.size()) return damaged("bad lengths");
  *hb = out;
  return Status::OK();
}

namespace {

// One write attempt: guarded by the incarnation xattr if the object exists
// (|exists|), else an exclusive create (cmpxattr on a missing object fails
// ENOENT even after create(false) in the same op). The librados result.
int TryWriteHeartbeat(RadosCluster* cluster, const std::string& oid, bool exists, const librados::bufferlist& value,
                      uint32_t incarnation) {
  librados::bufferlist inc;
  inc.append(std::to_string(incarnation));
  librados::ObjectWriteOperation op;
  if (exists) {
    // Given op stored: passes while our incarnation >= the stored one.
    op.cmpxattr(kIncarnationXattr, LIBRADOS_CMPXATTR_OP_GTE, uint64_t{incarnation});
  } else {
    op.create(true);
  }
  op.setxattr(kIncarnationXattr, inc);
  op.write_full(value);
  RadosOpTimer timer(cluster, RadosOpKind::kWrite);
  const int r = cluster->index().operate(oid, &op);
  timer.Done(r == -ECANCELED || r == -ENOENT || r == -EEXIST ? 0 : r, value.length());
  return r;
}

}  // namespace

Status WriteGatewayHeartbeat(RadosCluster* cluster, const std::string& gateway, const GatewayHeartbeat& hb) {
  const std::string oid = GatewayHeartbeatObject(gateway);
  librados::bufferlist value;
  value.append(EncodeGatewayHeartbeat(gateway, hb));
  // Exists almost always; a lost create race (EEXIST) or a removal in
  // between (ENOENT) flips the guess, at most a few times.
  int r = -ENOENT;
  bool exists = true;
  for (int attempt = 0; attempt < 4; attempt++) {
    r = TryWriteHeartbeat(cluster, oid, exists, value, hb.incarnation);
    if (r != -ENOENT && r != -EEXIST) break;
    exists = r == -EEXIST;
  }
  if (r == -ECANCELED) {
    return Status::Aborted("gateway heartbeat " + cluster->Where(cluster->index_pool(), oid) +
                           ": a newer incarnation than " + std::to_string(hb.incarnation) + " owns it");
  }
  if (r < 0) return cluster->ToStatus(r, "write gateway heartbeat", cluster->index_pool(), oid);
  return Status::OK();
}

Status ReadGatewayHeartbeat(RadosCluster* cluster, const std::string& gateway, GatewayHeartbeat* hb) {
  const std::string oid = GatewayHeartbeatObject(gateway);
  librados::bufferlist bl;
  RadosOpTimer timer(cluster, RadosOpKind::kRead);
  const int r = cluster->index().read(oid, bl, 0, 0);
  timer.Done(r == -ENOENT ? 0 : r, r > 0 ? r : 0);
  if (r == -ENOENT || r == 0) {
    return Status::NotFound("gateway " + gateway + " wrote no heartbeat (" +
                            cluster->Where(cluster->index_pool(), oid) + ")");
  }
  if (r < 0) return cluster->ToStatus(r, "read gateway heartbeat", cluster->index_pool(), oid);
  return DecodeGatewayHeartbeat(cluster->Where(cluster->index_pool(), oid), gateway, bl.to_str(), hb);
}

GatewayHeartbeatWriter::GatewayHeartbeatWriter(std::shared_ptr<RadosCluster> cluster, std::string gateway,
                                               GatewayHeartbeat first, std::chrono::milliseconds interval)
    : cluster_(std::move(cluster)), gateway_(std::move(gateway)), interval_(interval), next_(std::move(first)) {}

Status GatewayHeartbeatWriter::Start(std::shared_ptr<RadosCluster> cluster, const std::string& gateway,
                                     GatewayHeartbeat first, std::chrono::milliseconds interval,
                                     std::unique_ptr<GatewayHeartbeatWriter>* out) {
  if (interval.count() <= 0) return Status::InvalidArgument("heartbeat interval must be positive");
  std::unique_ptr<GatewayHeartbeatWriter> w(
      new GatewayHeartbeatWriter(std::move(cluster), gateway, std::move(first), interval));
  // The first beat before the thread: a slot that cannot write its
  // heartbeat at all says so to the opener.
  DEDUPV1_RETURN_IF_ERROR(w->Beat(""));
  w->thread_ = std::thread([raw = w.get()] { raw->Loop(); });
  *out = std::move(w);
  return Status::OK();
}

GatewayHeartbeatWriter::~GatewayHeartbeatWriter() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GatewayHeartbeatWriter::SetVolumes(std::vector<std::string> volumes) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (next_.volumes == volumes) return;
    next_.volumes = std::move(volumes);
    nudged_ = true;
  }
  cv_.notify_all();
}

void GatewayHeartbeatWriter::SetLoadSource(LoadSource source) {
  std::lock_guard<std::mutex> l(source_mu_);
  source_ = std::move(source);
}

Status GatewayHeartbeatWriter::Stop(const std::string& final_state) {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  return Beat(final_state);
}

uint64_t GatewayHeartbeatWriter::beats() const {
  std::lock_guard<std::mutex> l(mu_);
  return written_;
}

Status GatewayHeartbeatWriter::last_error() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_error_;
}

Status GatewayHeartbeatWriter::Beat(const std::string& state) {
  GatewayHeartbeat hb;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (superseded_) return last_error_;
    next_.beat++;
    hb = next_;
  }
  {
    std::lock_guard<std::mutex> l(source_mu_);
    if (source_) source_(&hb);
  }
  // A lapsed lease (fenced with fence_on_lease_loss) is said, never hidden:
  // the watchers and the cluster view show it.
  hb.state = !state.empty() ? state : cluster_->CheckLease().ok() ? kHeartbeatServing : kHeartbeatFenced;
  Status s = WriteGatewayHeartbeat(cluster_.get(), gateway_, hb);
  std::lock_guard<std::mutex> l(mu_);
  last_error_ = s;
  if (s.ok()) written_++;
  if (s.IsAborted()) superseded_ = true;
  // A fenced holder beats no more: a beat that keeps changing would look
  // alive to the watchers, and the slot would never be taken over.
  if (s.ok() && hb.state == kHeartbeatFenced) fenced_said_ = true;
  return s;
}

void GatewayHeartbeatWriter::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_ && !superseded_ && !fenced_said_) {
    cv_.wait_for(l, interval_, [this] { return stop_ || nudged_; });
    if (stop_) break;
    nudged_ = false;
    l.unlock();
    Beat("");
    l.lock();
  }
}

}  // namespace dedupv1
