#include "core/base/host_name.h"

#include <unistd.h>

namespace dedupv1 {

std::string HostName() {
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "unknown-host";
  return host;
}

}  // namespace dedupv1
