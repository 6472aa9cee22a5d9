// Who listens on a TCP port of this host: the pid and command name of the
// process holding the listening socket, read from /proc/net/tcp{,6} and
// /proc/PID/fd (needs root to see other users' processes). dedupv1d names it
// when a port it needs (portal, monitor) is taken, so the admin knows which
// program to look at.
#pragma once

#include <cstdint>
#include <string>

namespace dedupv1 {

// "pid 4711 (tgtd)", or "" when no listener (or no owner) is found.
std::string TcpPortOwner(uint16_t port);

}  // namespace dedupv1
