#include "core/base/program_testutil.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dedupv1 {
namespace test {

std::string BuiltProgram(const std::string& name) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? name : (self.parent_path() / name).string();
}

int RunProgram(const std::vector<std::string>& argv, const std::string& out_path, std::chrono::seconds limit,
               std::string* output) {
  output->clear();
  if (argv.empty() || access(argv[0].c_str(), X_OK) != 0) {
    *output = (argv.empty() ? std::string("no program") : argv[0] + " is missing") + ": build it (cmake --build build)";
    return -1;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  bool killed = false;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      killed = true;
      break;
    }
    usleep(10000);
  }
  std::ifstream in(out_path);
  std::stringstream ss;
  ss << in.rdbuf();
  *output = ss.str();
  if (killed) *output += "\n(killed after " + std::to_string(limit.count()) + " s)";
  return !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace test
}  // namespace dedupv1
