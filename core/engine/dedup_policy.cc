#include "core/engine/dedup_policy.h"

namespace dedupv1 {

Status ParseDedupPolicy(const std::string& volume, const std::string& value, DedupPolicy* policy) {
  if (value == "inline") {
    *policy = DedupPolicy::kInline;
  } else if (value == "off") {
    *policy = DedupPolicy::kOff;
  } else if (value == "selective" || value == "out-of-band") {
    return Status::InvalidArgument("volume " + volume + ": policy=" + value +
                                " is not built yet (docs/design-18.md); use inline or off");
  } else {
    return Status::InvalidArgument("volume " + volume + ": policy must be inline or off, got '" + value + "'");
  }
  return Status::OK();
}

const char* DedupPolicyName(DedupPolicy policy) { return policy == DedupPolicy::kOff ? "off" : "inline"; }

}  // namespace dedupv1
