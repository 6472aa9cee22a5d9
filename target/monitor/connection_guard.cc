#include "target/monitor/connection_guard.h"

#include <sys/socket.h>

namespace dedupv1 {

ConnectionGuard::ConnectionGuard(unsigned max_idle) : max_idle_(max_idle) {}

void ConnectionGuard::Opened(const void* connection, int fd) {
  std::lock_guard<std::mutex> l(mu_);
  if (!connections_.emplace(connection, Entry{fd, false, tick_++}).second) return;
  idle_++;
  EvictLocked(connection);
}

void ConnectionGuard::Closed(const void* connection) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = connections_.find(connection);
  if (it == connections_.end()) return;
  if (!it->second.busy && it->second.fd >= 0) idle_--;
  connections_.erase(it);
}

void ConnectionGuard::Busy(const void* connection) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = connections_.find(connection);
  if (it == connections_.end() || it->second.busy || it->second.fd < 0) return;
  it->second.busy = true;
  idle_--;
}

void ConnectionGuard::Idle(const void* connection) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = connections_.find(connection);
  if (it == connections_.end() || !it->second.busy || it->second.fd < 0) return;
  it->second.busy = false;
  it->second.idle_since = tick_++;
  idle_++;
  EvictLocked(connection);
}

// Shuts down the longest-idle connections (never |keep|) until at most
// max_idle_ are idle. An evicted connection stays in the map with fd -1 until
// the server reports it Closed, counted neither idle nor busy.
void ConnectionGuard::EvictLocked(const void* keep) {
  while (idle_ > max_idle_) {
    auto oldest = connections_.end();
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
      if (it->second.busy || it->second.fd < 0 || it->first == keep) continue;
      if (oldest == connections_.end() || it->second.idle_since < oldest->second.idle_since) oldest = it;
    }
    if (oldest == connections_.end()) return;
    ::shutdown(oldest->second.fd, SHUT_RDWR);
    oldest->second.fd = -1;  // shut down: neither idle nor evictable any more
    idle_--;
    evicted_++;
  }
}

size_t ConnectionGuard::open() const {
  std::lock_guard<std::mutex> l(mu_);
  return connections_.size();
}

size_t ConnectionGuard::idle() const {
  std::lock_guard<std::mutex> l(mu_);
  return idle_;
}

uint64_t ConnectionGuard::evicted() const {
  std::lock_guard<std::mutex> l(mu_);
  return evicted_;
}

}  // namespace dedupv1
