// HostName: this machine's name, as the gateway registry records a slot's
// holder and the store lock's cookie and description carry it
// (core/rados/gateway_registry.h, core/rados/rados_lock.h): one function,
// so the registry and the lock name a host the same way.
#pragma once

#include <string>

namespace dedupv1 {

// gethostname(), or "unknown-host" if that fails (never empty: the name is
// part of lock cookies and of messages naming a holder).
std::string HostName();

}  // namespace dedupv1
