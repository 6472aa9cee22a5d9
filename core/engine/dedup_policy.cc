#include "core/engine/dedup_policy.h"

namespace dedupv1 {

Status ParseDedupPolicy(const std::string& volume, const std::string& value, DedupPolicy* policy) {
  if (value == "inline") {
    *policy = DedupPolicy::kInline;
  } else if (value == "selective") {
    *policy = DedupPolicy::kSelective;
  } else if (value == "off") {
    *policy = DedupPolicy::kOff;
  } else if (value == "out-of-band") {
    *policy = DedupPolicy::kOutOfBand;
  } else {
    return Status::InvalidArgument("volume " + volume + ": policy must be inline, selective, out-of-band or off, got '" +
                                   value + "'");
  }
  return Status::OK();
}

const char* DedupPolicyName(DedupPolicy policy) {
  switch (policy) {
    case DedupPolicy::kInline: return "inline";
    case DedupPolicy::kSelective: return "selective";
    case DedupPolicy::kOff: return "off";
    case DedupPolicy::kOutOfBand: return "out-of-band";
  }
  return "?";
}

}  // namespace dedupv1
