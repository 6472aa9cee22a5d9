// ConnectionGuard keeps idle and slow clients of the monitor from starving the
// others. The HTTP server has a limit of connections (each holds a thread);
// without the guard, 64 clients that open a connection and send half a
// request occupied every slot until the server's timeout, and every other
// client was turned away. A per-address limit does not help on loopback,
// where all clients share 127.0.0.1, and any limit can be filled. So the
// guard evicts instead: at most |max_idle| connections may wait without a
// request being handled (still sending its request, or between requests of a
// keep-alive connection); when a new connection makes one more, the one idle
// the longest is shut down. A client that sends a whole request at once is
// handled at once; a slow one loses its connection only when others come.
//
// The server calls Opened/Closed for each connection (Closed before the
// socket is closed, as libmicrohttpd's notifier does), Busy when a complete
// request is being handled and Idle when its response is done. Eviction is
// shutdown(2) of the socket under the guard's lock: the socket is still open
// (Closed not called yet), so no other connection can own the descriptor,
// and the server sees end-of-file and closes the connection itself.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

namespace dedupv1 {

class ConnectionGuard {
 public:
  explicit ConnectionGuard(unsigned max_idle);

  // A new connection on socket |fd|, idle until Busy. May evict others.
  void Opened(const void* connection, int fd);
  void Closed(const void* connection);
  void Busy(const void* connection);
  void Idle(const void* connection);

  size_t open() const;
  size_t idle() const;
  uint64_t evicted() const;

 private:
  struct Entry {
    int fd;             // -1 once evicted
    bool busy;
    uint64_t idle_since;  // tick_ when it last became idle: lower = idle longer
  };
  void EvictLocked(const void* keep);

  const unsigned max_idle_;
  mutable std::mutex mu_;
  std::map<const void*, Entry> connections_;
  uint64_t tick_ = 0;
  size_t idle_ = 0;
  uint64_t evicted_ = 0;
};

}  // namespace dedupv1
