#include "target/port_owner.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <system_error>

namespace dedupv1 {
namespace {

// Inodes of the sockets listening (state 0A) on |port| in a /proc/net table.
void ListeningInodes(const std::string& table, uint16_t port, std::set<std::string>* inodes) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state, queues, timer, retrans, uid, timeout, inode;
    if (!(f >> slot >> local >> remote >> state >> queues >> timer >> retrans >> uid >> timeout >> inode)) continue;
    const size_t colon = local.rfind(':');
    if (state != "0A" || colon == std::string::npos) continue;
    if (std::stoul(local.substr(colon + 1), nullptr, 16) == port) inodes->insert(inode);
  }
}

}  // namespace

std::string TcpPortOwner(uint16_t port) {
  std::set<std::string> inodes;
  ListeningInodes("/proc/net/tcp", port, &inodes);
  ListeningInodes("/proc/net/tcp6", port, &inodes);
  if (inodes.empty()) return "";
  std::error_code ec;
  for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fd_ec;
    for (const auto& fd : std::filesystem::directory_iterator(proc.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      const std::string target = std::filesystem::read_symlink(fd.path(), link_ec).string();
      if (link_ec || target.rfind("socket:[", 0) != 0) continue;
      if (inodes.count(target.substr(8, target.size() - 9)) == 0) continue;
      std::string comm;
      std::getline(std::ifstream(proc.path() / "comm"), comm);
      return "pid " + pid + " (" + comm + ")";
    }
  }
  return "";
}

}  // namespace dedupv1
