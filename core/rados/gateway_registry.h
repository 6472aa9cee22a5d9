// GatewayRegistry: the gateway slots of one store (RadosOptions::gateway),
// kept in the index-pool object "gateways" of the store's namespace. Each
// slot is one omap key, the gateway's name, whose value is a GatewayRecord:
// its slot number (fixed for ever; container ids of the slot are
// (number << 48) + sequence), and who serves it now: the incarnation (+1 on
// every open of the slot), the holder's client address (what a fence
// blocklists), host and pid, and how often the slot was taken over.
//
// Invariants:
//  - Slot numbers are unique and never reused: they come from the key
//    kNextKey ("#next", not a valid gateway name), which every registration
//    compares and raises in the same operation that adds the name
//    (omap_cmp + omap_set, atomic; a lost race fails the whole operation
//    with -ECANCELED and nothing is applied, and the registration retries).
//    Numbers start at 1: ids below 1 << 48 are those of a store without
//    slots.
//  - Every change of a record is a compare-and-set against the value read
//    before it, so two writers never lose each other's update.
//  - Values are versioned binary records with a CRC32C over key and value;
//    a damaged one is Corruption naming the object and the key.
//
// Every call goes through the RadosCluster (counted, errors naming pool and
// object). Thread-safe (no state besides the connection).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>

#include "core/base/status.h"
#include "core/rados/rados_cluster.h"

namespace dedupv1 {

struct GatewayRecord {
  uint16_t slot = 0;         // 1 .. kMaxGatewaySlot
  uint32_t incarnation = 0;  // opens of the slot so far (0: registered, never opened)
  uint32_t takeovers = 0;    // opens that took the slot over from another holder
  uint32_t pid = 0;          // of the current (or last) holder
  std::string address;       // client address of the current (or last) holder
  std::string host;          // host name of the current (or last) holder

  bool operator==(const GatewayRecord& o) const {
    return slot == o.slot && incarnation == o.incarnation && takeovers == o.takeovers && pid == o.pid &&
           address == o.address && host == o.host;
  }
};

// Slot numbers above this are refused (the top one's ids would reach
// kZeroContainer).
constexpr uint16_t kMaxGatewaySlot = 65534;

// The first container id of slot |slot| (0 for a store without slots: ids
// start at 1 there as before) and the end of its range.
inline uint64_t GatewaySlotIdBase(uint16_t slot) { return static_cast<uint64_t>(slot) << 48; }
inline uint64_t GatewaySlotIdEnd(uint16_t slot) { return (static_cast<uint64_t>(slot) + 1) << 48; }

class GatewayRegistry {
 public:
  static constexpr char kObject[] = "gateways";
  static constexpr char kNextKey[] = "#next";

  explicit GatewayRegistry(std::shared_ptr<RadosCluster> cluster) : cluster_(std::move(cluster)) {}

  // The record of |name|, registering it with the next free slot number if
  // it has none (a registered name keeps its number). InvalidArgument for a
  // name that is not a gateway name.
  Status Register(const std::string& name, GatewayRecord* record);
  // The record of |name|: NotFound naming the object if it is not registered.
  Status Lookup(const std::string& name, GatewayRecord* record);
  // Every registered slot by name.
  Status List(std::map<std::string, GatewayRecord>* records);
  // A new incarnation of registered slot |name|, served by this process:
  // incarnation + 1, this client's address, host and pid (and takeovers + 1
  // if |takeover|). Retries a lost race; |record| is what was stored.
  Status BeginIncarnation(const std::string& name, bool takeover, GatewayRecord* record);
  // Replaces the record of |name| with |next| if it still is |expected|:
  // Aborted (nothing changed) if another writer changed it in between.
  Status CompareAndSet(const std::string& name, const GatewayRecord& expected, const GatewayRecord& next);

  // The stored value of |record| under key |name|, and the inverse
  // (Corruption naming |where| and the key).
  static std::string Encode(const std::string& name, const GatewayRecord& record);
  static Status Decode(const std::string& where, const std::string& name, const std::string& value,
                       GatewayRecord* record);
  // The value of kNextKey (the slot number the next registration takes),
  // and the inverse (Corruption naming |where| and the key).
  static std::string EncodeNext(uint32_t next);
  static Status DecodeNext(const std::string& where, const std::string& value, uint32_t* next);

 private:
  // The values of |keys| (absent keys are left out).
  Status ReadKeys(const std::set<std::string>& keys, std::map<std::string, std::string>* values);
  // Sets |set| if every key of |expect| holds exactly its value (an absent
  // key compares as ""), in one atomic op (creating the object first if
  // |create|). Aborted with |lost| if a value differed, else what librados
  // said, naming |what|.
  Status GuardedSet(const std::map<std::string, std::string>& expect, const std::map<std::string, std::string>& set,
                    bool create, const std::string& what, const std::string& lost);
  // One registration attempt: Aborted if another registration won the race.
  Status TryRegister(const std::string& name, GatewayRecord* record);
  std::string Where() const;

  const std::shared_ptr<RadosCluster> cluster_;
};

}  // namespace dedupv1
