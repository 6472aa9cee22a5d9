#include "core/engine/slot_takeover.h"

#include <chrono>
#include <set>
#include <sstream>
#include <thread>

#include "core/rados/rados_env.h"
#include "core/rados/rados_file.h"
#include "core/rados/rados_lock.h"
#include "index/rados_chunk_table.h"

namespace dedupv1 {

namespace {

using Clock = std::chrono::steady_clock;

// Bounds of the object walk. A slot with more objects than kMaxTouched is
// refused, not fenced in part: an object left untouched (the container id
// mark, a log stripe) could still take a late write of the fenced gateway.
constexpr int kMaxDepth = 4;
constexpr size_t kMaxTouched = size_t{1} << 18;
constexpr auto kPollInterval = std::chrono::milliseconds(100);

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The objects of one slot that a fence touches and the lock objects in it.
struct SlotObjects {
  std::vector<std::string> touch;
  std::vector<std::string> locks;  // every file named LOCK (the slot's, LevelDB's)
};

class SlotWalker {
 public:
  SlotWalker(RadosCluster* cluster, Env* env, const Options& options, SlotObjects* out)
      : cluster_(cluster), env_(env), options_(options), dir_(options.rados.GatewayDir()), out_(out) {}

  // Every file and directory object under the slot's root (stripes too),
  // then the slot's chunk table header and shards. The names are RadosEnv's
  // and RadosChunkTable's own, so the walk cannot drift from them.
  Status Walk() {
    Add(RadosEnvDirObject(dir_, ""));  // the root directory object
    DEDUPV1_RETURN_IF_ERROR(WalkDir(options_.data_dir, "", 0));
    Add(RadosChunkTable::HeaderObjectOf(options_.rados));
    const int bits = RadosChunkTable::ShardBits(options_.chunk_index.rados_shards);
    for (uint32_t s = 0; s < options_.chunk_index.rados_shards && !overflow_; s++) {
      Add(RadosChunkTable::ShardObjectOf(options_.rados, s, bits));
    }
    if (options_.chunk_index.cluster_scope) {
      // The store's shared chunk index (design-15 2.4): the victim's late
      // claims, flips and usage writes go there, not under its slot.
      RadosOptions store = options_.rados;
      store.gateway.clear();
      Add(RadosChunkTable::HeaderObjectOf(store));
      for (uint32_t s = 0; s < options_.chunk_index.rados_shards && !overflow_; s++) {
        Add(RadosChunkTable::ShardObjectOf(store, s, bits));
      }
    }
    if (overflow_) {
      return Status::Aborted("gateway slot " + dir_ + " has more than " + std::to_string(kMaxTouched) +
                             " objects to fence; refusing to take it over with some of them untouched");
    }
    return Status::OK();
  }

 private:
  void Add(const std::string& oid) {
    if (out_->touch.size() >= kMaxTouched) {
      overflow_ = true;
      return;
    }
    if (seen_.insert(oid).second) out_->touch.push_back(oid);
  }

  Status WalkDir(const std::string& dir, const std::string& rel_dir, int depth) {
    std::vector<std::string> names;
    Status s = env_->GetChildren(dir, &names);
    if (s.IsNotFound()) return Status::OK();  // gone meanwhile, or a slot never opened: nothing to touch
    DEDUPV1_RETURN_IF_ERROR(s);
    for (const std::string& name : names) {
      if (overflow_) break;
      const std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
      std::vector<std::string> below;
      if (depth < kMaxDepth && env_->GetChildren(JoinPath(dir, name), &below).ok() && !below.empty()) {
        Add(RadosEnvDirObject(dir_, rel));
        DEDUPV1_RETURN_IF_ERROR(WalkDir(JoinPath(dir, name), rel, depth + 1));
        continue;
      }
      DEDUPV1_RETURN_IF_ERROR(AddFile(RadosEnvFileObject(dir_, rel)));
      if (name == "LOCK") out_->locks.push_back(RadosEnvFileObject(dir_, rel));
    }
    return Status::OK();
  }

  // Stripe 0 and the stripes that may hold data (the log's are where the
  // victim writes next).
  Status AddFile(const std::string& oid) {
    Add(oid);
    RadosFileMeta meta;
    Status s = StatRadosFile(cluster_, oid, &meta);
    if (s.IsNotFound() || s.IsCorruption()) return Status::OK();  // no striped file (a lock object), or not ours
    DEDUPV1_RETURN_IF_ERROR(s);
    const uint64_t last = RadosLastStripe(meta, options_.rados.stripe_size);
    for (uint64_t n = 1; n <= last && !overflow_; n++) Add(RadosStripeOid(oid, meta.id, n));
    return Status::OK();
  }

  RadosCluster* const cluster_;
  Env* const env_;
  const Options& options_;
  const std::string dir_;  // the slot's object directory, "gw.NAME"
  SlotObjects* const out_;
  std::set<std::string> seen_;
  bool overflow_ = false;  // an object was not added: the walk fails
};

Status ListSlotObjects(const std::shared_ptr<RadosCluster>& cluster, const Options& options, SlotObjects* out) {
  std::unique_ptr<Env> env;
  DEDUPV1_RETURN_IF_ERROR(NewRadosEnv(cluster, options.data_dir, options.rados.GatewayDir(), &env));
  const std::string lock = RadosEnvFileObject(options.rados.GatewayDir(), "LOCK");
  out->locks.push_back(lock);
  SlotWalker walker(cluster.get(), env.get(), options, out);
  Status s = walker.Walk();
  if (!s.ok()) return s.WithContext("listing the objects of gateway slot " + options.rados.gateway);
  // The slot's lock first: FenceLockHolder and the wait look at it.
  std::vector<std::string> locks = {lock};
  for (const std::string& l : out->locks) {
    if (l != lock) locks.push_back(l);
  }
  out->locks = locks;
  return Status::OK();
}

std::string DescribeHolders(const std::vector<RadosLockHolder>& holders) {
  std::string out;
  for (const RadosLockHolder& h : holders) {
    if (!out.empty()) out += ", ";
    out += h.client + " at " + h.address + " (cookie " + h.cookie + ")";
  }
  return out;
}

// The takeover of one slot, step by step (see the header).
class Takeover {
 public:
  Takeover(const Options& options, std::shared_ptr<RadosCluster> cluster, TakeoverReport* report)
      : options_(options), cluster_(std::move(cluster)), report_(report),
        lock_oid_(RadosEnvFileObject(options.rados.GatewayDir(), "LOCK")) {}

  Status Run(bool force) {
    Clock::time_point t = Clock::now();
    GatewayRegistry registry(cluster_);
    DEDUPV1_RETURN_IF_ERROR(registry.Lookup(options_.rados.gateway, &report_->previous));
    DEDUPV1_RETURN_IF_ERROR(ListLockHolders(cluster_.get(), lock_oid_, RadosLock::kLockName, &report_->holders));
    report_->read_ms = MsSince(t);
    if (!report_->holders.empty() && !force) {
      t = Clock::now();
      Status s = WaitForLeaseEnd();
      report_->wait_ms = MsSince(t);
      DEDUPV1_RETURN_IF_ERROR(s);
    }
    t = Clock::now();
    Status s = FenceAll(force);
    report_->fence_ms = MsSince(t);
    return s;
  }

 private:
  // Polls the slot's lock until nobody holds it, for at most two leases.
  Status WaitForLeaseEnd() {
    const auto limit = std::chrono::seconds(2 * static_cast<uint64_t>(options_.rados.lock_duration_s));
    const Clock::time_point deadline = Clock::now() + limit;
    std::vector<RadosLockHolder> holders = report_->holders;
    while (!holders.empty()) {
      if (Clock::now() >= deadline) {
        const GatewayRecord& r = report_->previous;
        return Status::Busy("gateway slot " + options_.rados.gateway + " (" +
                            cluster_->Where(cluster_->index_pool(), lock_oid_) + ") is still held by " +
                            DescribeHolders(holders) + "; its last incarnation " + std::to_string(r.incarnation) +
                            " was host " + r.host + " pid " + std::to_string(r.pid) + " address " + r.address +
                            ": the lease (" + std::to_string(options_.rados.lock_duration_s) +
                            " s) did not end within " + std::to_string(limit.count()) +
                            " s, so the holder is alive; stop it, or take over with --force to fence it");
      }
      std::this_thread::sleep_for(kPollInterval);
      DEDUPV1_RETURN_IF_ERROR(ListLockHolders(cluster_.get(), lock_oid_, RadosLock::kLockName, &holders));
    }
    return Status::OK();
  }

  bool Fenced(const std::string& addr) const { return fenced_.count(BareAddress(addr)) != 0; }

  Status FenceAddress(const std::string& addr, const SlotObjects& objects) {
    DEDUPV1_RETURN_IF_ERROR(Fence(cluster_.get(), addr, kTakeoverFenceExpireS, objects.touch));
    fenced_.insert(BareAddress(addr));
    report_->fenced.push_back(addr);
    return Status::OK();
  }

  // With |force| every holder of a lock of the slot is fenced and its lock
  // broken; then the recorded address of the last incarnation is fenced, and
  // locks still held by a fenced address are broken (they would only make
  // the open wait for their lease).
  Status FenceAll(bool force) {
    SlotObjects objects;
    DEDUPV1_RETURN_IF_ERROR(ListSlotObjects(cluster_, options_, &objects));
    report_->touched_objects = objects.touch.size();
    const std::string own = BareAddress(cluster_->client_address());
    if (force) {
      std::vector<RadosLockHolder> fenced;
      DEDUPV1_RETURN_IF_ERROR(FenceLockHolder(cluster_.get(), lock_oid_, RadosLock::kLockName, kTakeoverFenceExpireS,
                                              objects.touch, &fenced));
      for (const RadosLockHolder& h : fenced) {
        fenced_.insert(BareAddress(h.address));
        report_->fenced.push_back(h.address);
      }
    }
    const std::string& recorded = report_->previous.address;
    if (recorded.empty()) {
      report_->not_fenced = "the slot has no recorded address (never opened)";
    } else if (BareAddress(recorded) == own) {
      report_->not_fenced = "the recorded address " + recorded + " is this process' own connection";
    } else if (Fenced(recorded)) {
      report_->not_fenced = "the recorded address " + recorded + " was fenced as the lock's holder";
    } else {
      DEDUPV1_RETURN_IF_ERROR(FenceAddress(recorded, objects));
    }
    // A holder seen before its lease ended may be a gateway that took the
    // lock and was paused before it recorded its address: the recorded one
    // is then an older incarnation's, so it is fenced as well.
    for (const RadosLockHolder& h : report_->holders) {
      if (h.address.empty() || BareAddress(h.address) == own || Fenced(h.address)) continue;
      DEDUPV1_RETURN_IF_ERROR(FenceAddress(h.address, objects));
    }
    return BreakFencedLocks(force, own, objects);
  }

  Status BreakFencedLocks(bool force, const std::string& own, const SlotObjects& objects) {
    for (const std::string& lock : objects.locks) {
      std::vector<RadosLockHolder> holders;
      DEDUPV1_RETURN_IF_ERROR(ListLockHolders(cluster_.get(), lock, RadosLock::kLockName, &holders));
      for (const RadosLockHolder& h : holders) {
        if (BareAddress(h.address) == own) continue;
        if (!Fenced(h.address)) {
          if (!force) continue;  // its lease ends on its own; the open waits for it
          DEDUPV1_RETURN_IF_ERROR(FenceAddress(h.address, objects));
        }
        DEDUPV1_RETURN_IF_ERROR(BreakLock(cluster_.get(), lock, RadosLock::kLockName, h));
      }
    }
    return Status::OK();
  }

  const Options& options_;
  const std::shared_ptr<RadosCluster> cluster_;
  TakeoverReport* const report_;
  const std::string lock_oid_;
  std::set<std::string> fenced_;  // bare addresses
};

Status CheckTakeoverOptions(const Options& options) {
  if (options.storage_backend != "rados" || options.rados.gateway.empty()) {
    return Status::InvalidArgument("a takeover needs a gateway slot: storage.backend = rados and "
                                   "storage.rados.gateway = NAME");
  }
  return Status::OK();
}

}  // namespace

std::string TakeoverReport::ToString() const {
  std::ostringstream o;
  o << "takeover of gateway slot " << gateway << " (slot " << previous.slot << ", last incarnation "
    << previous.incarnation << " by host " << previous.host << " pid " << previous.pid << " address "
    << previous.address << ")\n";
  o << "  read record and lock: " << read_ms << " ms; lock held by "
    << (holders.empty() ? std::string("nobody") : DescribeHolders(holders)) << "\n";
  o << "  waited for the lease: " << wait_ms << " ms\n";
  o << "  fenced:";
  for (const std::string& a : fenced) o << " " << a;
  if (fenced.empty()) o << " nobody";
  if (!not_fenced.empty()) o << " (recorded address not fenced: " << not_fenced << ")";
  o << "; " << touched_objects << " objects touched; " << fence_ms << " ms\n";
  if (taken.incarnation != 0) {
    o << "  opened as incarnation " << taken.incarnation << " (takeover " << taken.takeovers << "): " << open_ms
      << " ms\n";
  }
  return o.str();
}

Status TakeOverSlot(const Options& options, bool force, TakeoverReport* report) {
  *report = TakeoverReport();
  report->gateway = options.rados.gateway;
  DEDUPV1_RETURN_IF_ERROR(CheckTakeoverOptions(options));
  std::shared_ptr<RadosCluster> cluster;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &cluster));
  Takeover takeover(options, cluster, report);
  return takeover.Run(force);
}

Status CountTakeover(const Options& options, GatewayRecord* record) {
  DEDUPV1_RETURN_IF_ERROR(CheckTakeoverOptions(options));
  std::shared_ptr<RadosCluster> cluster;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &cluster));
  GatewayRegistry registry(cluster);
  Status s;
  for (int attempt = 0; attempt < 16; attempt++) {
    GatewayRecord now;
    DEDUPV1_RETURN_IF_ERROR(registry.Lookup(options.rados.gateway, &now));
    GatewayRecord next = now;
    next.takeovers++;
    s = registry.CompareAndSet(options.rados.gateway, now, next);
    if (s.ok()) {
      *record = next;
      return s;
    }
    if (!s.IsAborted()) return s;
  }
  return s;
}

Status OpenTakenOverSlot(const Options& options, bool force, Env* local, std::unique_ptr<DedupSystem>* out,
                         TakeoverReport* report) {
  DEDUPV1_RETURN_IF_ERROR(CheckTakeoverOptions(options));
  // Held across both steps: the open uses the same connection, so the
  // address fenced can never be this process' own.
  std::shared_ptr<RadosCluster> cluster;
  DEDUPV1_RETURN_IF_ERROR(RadosCluster::Shared(options.rados, &cluster));
  DEDUPV1_RETURN_IF_ERROR(TakeOverSlot(options, force, report));
  Options taking = options;
  taking.gateway_takeover = true;
  const Clock::time_point t = Clock::now();
  DEDUPV1_RETURN_IF_ERROR(DedupSystem::OpenStore(taking, local, out));
  report->open_ms = MsSince(t);
  report->taken = (*out)->gateway_record();
  return Status::OK();
}

}  // namespace dedupv1
