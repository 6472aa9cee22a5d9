// TargetOptions: the iSCSI target dedupv1d sets up in tgtd (the target.*
// keys of the config file). The engine never reads them; dedupv1d validates
// them with the rest of the file (ServiceOptions) before anything starts, so
// a bad value is refused naming the key and line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/config_keys.h"
#include "core/base/status.h"

namespace dedupv1 {

struct TargetOptions {
  std::string iqn = "iqn.2026-11.org.dedupv1:storage";
  std::string portal = "0.0.0.0:3260";  // ADDR:PORT, IPv6 as [ADDR]:PORT
  uint32_t control_port = 0;            // tgtd -C N: socket /var/run/tgtd/socket.N
  // Initiators admitted: an address (IP or CIDR) in the first list OR a name
  // in the second (tgt's rule). Both empty means every initiator (ALL).
  std::vector<std::string> initiator_addresses;
  std::vector<std::string> initiator_names;
  std::string chap_user, chap_password;  // incoming CHAP: both or neither
  // With CHAP: discovery (SendTargets) needs the account too, so the target
  // is not listed to initiators without credentials.
  bool discovery_auth = true;

  // The target.* keys and their parsers (each checks its own value).
  static const ConfigKeyTable<TargetOptions>& KeyTable();
  // Checks the rules across keys (CHAP user and password go together; ALL
  // excludes initiator names).
  Status Finish() const;
  // "key = value" lines of every target.* key; the CHAP password shows as
  // "(set)".
  std::string ToString() const;
};

}  // namespace dedupv1
