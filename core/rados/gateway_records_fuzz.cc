// Fuzz harness of the gateway records (core/rados/gateway_registry.h,
// core/rados/gateway_heartbeat.h; core/base/fuzz_check.h): the registry
// record of a slot says whom a takeover fences (the holder's address) and
// which container ids are the slot's; the heartbeat is what the watchers
// judge a slot's liveness by. Read as another record, a damaged one could
// make a takeover fence the wrong client or take a live gateway's volumes.
//
// The input is the slot's name and a value (test::KeyValueInput), decoded
// as the record its flags byte names (bits 1-2: registry record, heartbeat,
// or the registry's "#next" slot number, whose key is always "#next"):
//  - with the CRC as the damage left it (flag bit 0 clear), a record that
//    decodes is exactly one the real encoder wrote (a seed) under its name;
//  - with the CRC recomputed over the damaged name and body (flag bit 0),
//    a record that decodes keeps its bounds (a registry slot number in
//    1..kMaxGatewaySlot) and encodes back to the same value.
// The CRC covers name and body as one stream, so a changed length byte that
// moves bytes between the two keeps it valid: such an input is refused by
// the record's own structure (version, string lengths), which the "exactly
// a seed" check then tests as well.
#include <string>
#include <vector>

#include "core/base/fuzz_check.h"
#include "core/rados/gateway_heartbeat.h"
#include "core/rados/gateway_registry.h"

namespace dedupv1 {
namespace {

enum Kind : uint8_t { kRegistry = 0, kHeartbeat = 1, kNext = 2 };

struct SeedRecord {
  Kind kind;
  std::string name;
  std::string value;
};

std::vector<SeedRecord> SeedRecords() {
  std::vector<SeedRecord> out;
  const GatewayRecord records[] = {{1, 0, 0, 0, "", ""},
                                   {2, 7, 1, 4242, "127.0.0.1:0/3141592653", "gw-host-b"},
                                   {kMaxGatewaySlot, 0xffffffffu, 3, 1, "v2:[::1]:6800/1", "h"}};
  const char* names[] = {"gw-a", "gw-b", "backup-gateway-3"};
  for (size_t i = 0; i < 3; i++) out.push_back({kRegistry, names[i], GatewayRegistry::Encode(names[i], records[i])});
  GatewayHeartbeat plain;
  plain.beat = 1;
  plain.incarnation = 1;
  plain.state = kHeartbeatStopped;
  GatewayHeartbeat loaded;
  loaded.beat = 123456789;
  loaded.incarnation = 9;
  loaded.takeovers = 2;
  loaded.pid = 77;
  loaded.state = kHeartbeatServing;
  loaded.host = "gw-host-a";
  loaded.portal = "127.0.0.1:3260";
  loaded.volumes = {"backup", "mail", "vm-images"};
  loaded.has_load = true;
  loaded.claims_pending = 5;
  loaded.shards = 64;
  loaded.shard_ops_total = 1000;
  loaded.shard_ops_max = 30;
  GatewayHeartbeat fenced = loaded;
  fenced.state = kHeartbeatFenced;
  fenced.has_load = false;
  fenced.claims_pending = fenced.shards = fenced.shard_ops_total = fenced.shard_ops_max = 0;
  const GatewayHeartbeat beats[] = {plain, loaded, fenced};
  for (size_t i = 0; i < 3; i++) out.push_back({kHeartbeat, names[i], EncodeGatewayHeartbeat(names[i], beats[i])});
  for (uint32_t next : {1u, 3u, 65535u}) {
    out.push_back({kNext, GatewayRegistry::kNextKey, GatewayRegistry::EncodeNext(next)});
  }
  return out;
}

bool IsSeed(Kind kind, const std::string& name, const std::string& value) {
  static const std::vector<SeedRecord> seeds = SeedRecords();
  for (const SeedRecord& s : seeds) {
    // "#next" is read under its fixed key whatever the input's name says.
    if (s.kind == kind && (kind == kNext || s.name == name) && s.value == value) return true;
  }
  return false;
}

void CheckRecord(Kind kind, const std::string& name, std::string value, bool reseal) {
  if (reseal) value = test::ResealKeyed(kind == kNext ? GatewayRegistry::kNextKey : name, std::move(value));
  Status s;
  std::string again;
  if (kind == kRegistry) {
    GatewayRecord r;
    s = GatewayRegistry::Decode("(fuzz)", name, value, &r);
    if (s.ok()) {
      FUZZ_CHECK(r.slot >= 1 && r.slot <= kMaxGatewaySlot, "a slot number " + std::to_string(r.slot));
      again = GatewayRegistry::Encode(name, r);
    }
  } else if (kind == kHeartbeat) {
    GatewayHeartbeat hb;
    s = DecodeGatewayHeartbeat("(fuzz)", name, value, &hb);
    if (s.ok()) again = EncodeGatewayHeartbeat(name, hb);
  } else {
    uint32_t next = 0;
    s = GatewayRegistry::DecodeNext("(fuzz)", value, &next);
    if (s.ok()) again = GatewayRegistry::EncodeNext(next);
  }
  FUZZ_CHECK(s.ok() || s.IsCorruption(), "a decoder's error other than Corruption: " + s.ToString());
  if (!s.ok()) return;
  FUZZ_CHECK(again == value, "a decoded record that does not encode back to its value");
  if (!reseal) FUZZ_CHECK(IsSeed(kind, name, value), "a damaged record decoded as another one without an error");
}

}  // namespace

namespace test {

void DedupV1FuzzSeeds(std::vector<std::string>* seeds) {
  for (const SeedRecord& r : SeedRecords()) {
    AddSeedBothWays(seeds, static_cast<uint8_t>(r.kind << 1), 1, KeyValueInput(r.name, r.value));
  }
}

}  // namespace test
}  // namespace dedupv1

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace dedupv1;
  uint8_t flags = 0;
  std::string name, value;
  if (!test::SplitKeyValueInput(data, size, &flags, &name, &value)) return 0;
  CheckRecord(static_cast<Kind>(((flags >> 1) & 3) % 3), name, std::move(value), (flags & 1) != 0);
  return 0;
}
