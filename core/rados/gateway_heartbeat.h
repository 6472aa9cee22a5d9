// GatewayHeartbeat: what the gateway serving a slot says about itself, for
// the watchers and the cluster view (design-15 2.2 "Automatic", 2.7), in
// the index-pool object "gw.NAME.state" of the store's namespace: a beat
// counter, the incarnation, the state (serving, stopped, fenced), host, pid,
// portal, the volumes it serves and the slot's takeovers.
//
// Liveness: the writer's clock means nothing to a reader on another machine,
// so the record carries no time. A reader judges a slot by whether |beat|
// CHANGES between two of its own reads (GatewayHeartbeatWriter writes every
// interval, lease/3 in the target), together with whether the slot's lock is
// held (list_lockers): a dead holder's lock runs out and its beat stops.
//
// Invariants:
//  - Written only by the slot's holder, and never over a newer incarnation:
//    every write compares the object's xattr "incarnation" (decimal, absent
//    = 0) with its own in the same atomic op (cmpxattr GTE + setxattr +
//    write_full), so a fenced or paused old holder that wakes up can at most
//    rewrite its own incarnation's record, never the taker's (Aborted).
//  - The value is versioned and carries a CRC32C over the gateway name and
//    the body: a damaged one is Corruption naming the object.
//
// Every call goes through the RadosCluster (counted; errors name pool and
// object; bounded by its op timeout). GatewayHeartbeatWriter is
// thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

// The states a heartbeat names.
constexpr char kHeartbeatServing[] = "serving";  // the holder serves and its lease is current
constexpr char kHeartbeatStopped[] = "stopped";  // closed cleanly by its holder (an admin's stop)
constexpr char kHeartbeatFenced[] = "fenced";    // the holder lost its lease for good (core/rados/rados_lock.h)

struct GatewayHeartbeat {
  uint64_t beat = 0;         // +1 per write of this incarnation
  uint32_t incarnation = 0;  // of the registry record (core/rados/gateway_registry.h) the holder opened
  uint32_t takeovers = 0;    // the slot's takeovers as the holder's open recorded them
  uint32_t pid = 0;
  std::string state;         // kHeartbeatServing, kHeartbeatStopped or kHeartbeatFenced
  std::string host;
  std::string portal;        // ADDR:PORT initiators log in to ("" if the holder does not know it)
  std::vector<std::string> volumes;  // served now (LUNs), in name order
  // The load figures (record version 2; a version-1 record, written without
  // them, decodes with has_load false and zeros). Cluster scope only:
  bool has_load = false;
  uint64_t claims_pending = 0;   // own U entries of the shared chunk index not flipped yet
  uint32_t shards = 0;           // shards of the chunk index table
  uint64_t shard_ops_total = 0;  // operations this holder sent to them since open
  uint64_t shard_ops_max = 0;    // ... to the busiest one

  // max / mean of the shard operations; 0 without any.
  double ShardMaxOverMean() const {
    return shard_ops_total == 0 || shards == 0 ? 0.0 : static_cast<double>(shard_ops_max) * shards / shard_ops_total;
  }
  bool operator==(const GatewayHeartbeat& o) const {
    return beat == o.beat && incarnation == o.incarnation && takeovers == o.takeovers && pid == o.pid &&
           state == o.state && host == o.host && portal == o.portal && volumes == o.volumes &&
           has_load == o.has_load && claims_pending == o.claims_pending && shards == o.shards &&
           shard_ops_total == o.shard_ops_total && shard_ops_max == o.shard_ops_max;
  }
};

// "gw.NAME.state".
std::string GatewayHeartbeatObject(const std::string& gateway);

// The stored value of |hb| for slot |gateway|, and the inverse (Corruption
// naming |where| for a damaged value). Version 1 without load figures,
// version 2 with them (has_load); both decode.
std::string EncodeGatewayHeartbeat(const std::string& gateway, const GatewayHeartbeat& hb);
Status DecodeGatewayHeartbeat(const std::string& where, const std::string& gateway, const std::string& value,
                              GatewayHeartbeat* hb);

// Writes |hb| as slot |gateway|'s heartbeat unless a newer incarnation wrote
// one (Aborted naming the object then, nothing changed).
Status WriteGatewayHeartbeat(RadosCluster* cluster, const std::string& gateway, const GatewayHeartbeat& hb);
// The heartbeat of slot |gateway|: NotFound if the slot never wrote one.
Status ReadGatewayHeartbeat(RadosCluster* cluster, const std::string& gateway, GatewayHeartbeat* hb);

// Writes the heartbeat of the slot this process holds from a thread of its
// own: once at Start, then every |interval|, each time with beat + 1 and the
// state the connection is in (serving while RadosCluster::CheckLease is OK,
// else fenced). Stop writes a last beat with a final state (stopped after a
// clean close). A failed write is kept as last_error() and retried at the
// next beat; an Aborted one (a newer incarnation owns the slot) ends the
// beating: this process is no longer the holder.
class GatewayHeartbeatWriter {
 public:
  static Status Start(std::shared_ptr<RadosCluster> cluster, const std::string& gateway, GatewayHeartbeat first,
                      std::chrono::milliseconds interval, std::unique_ptr<GatewayHeartbeatWriter>* out);
  // Stops the thread (no final beat).
  ~GatewayHeartbeatWriter();
  GatewayHeartbeatWriter(const GatewayHeartbeatWriter&) = delete;
  GatewayHeartbeatWriter& operator=(const GatewayHeartbeatWriter&) = delete;

  // The volumes of the next beats; a change is written at once (a beat
  // ahead of time), so a view right after a LUN was added shows it.
  void SetVolumes(std::vector<std::string> volumes);
  // Fills the load figures of every later beat (called on the writer's
  // thread, before each write); nullptr stops it. Setting waits for a call
  // in progress, so the source's owner may go once this returned.
  using LoadSource = std::function<void(GatewayHeartbeat* hb)>;
  void SetLoadSource(LoadSource source);
  // Stops the thread, then writes one last beat in |final_state|.
  Status Stop(const std::string& final_state);

  uint64_t beats() const;   // written successfully so far
  const std::shared_ptr<RadosCluster>& cluster() const { return cluster_; }
  Status last_error() const;  // of the last write (OK if it succeeded)

 private:
  GatewayHeartbeatWriter(std::shared_ptr<RadosCluster> cluster, std::string gateway, GatewayHeartbeat first,
                         std::chrono::milliseconds interval);
  // One write of the next beat in |state| ("" = judged from the lease).
  Status Beat(const std::string& state);
  void Loop();

  const std::shared_ptr<RadosCluster> cluster_;
  const std::string gateway_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  GatewayHeartbeat next_;   // guarded by mu_: the record of the next beat
  uint64_t written_ = 0;    // guarded by mu_
  Status last_error_;       // guarded by mu_
  bool stop_ = false;       // guarded by mu_
  bool nudged_ = false;     // guarded by mu_: beat now, the volumes changed
  bool superseded_ = false; // guarded by mu_: a newer incarnation owns the heartbeat
  bool fenced_said_ = false; // guarded by mu_: "fenced" was written; the loop beats no more
  std::mutex source_mu_;     // held while the load source runs
  LoadSource source_;        // guarded by source_mu_
  std::thread thread_;
};

}  // namespace dedupv1
