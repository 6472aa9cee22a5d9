// Runs a tool binary for the tools' tests: its stdout and stderr go to a
// file, it is killed (and the test failed) after a bound, and the result is
// its exit code and what it printed.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace dedupv1 {
namespace test {

struct ToolRun {
  int code = -1;  // exit code; -1 if killed
  std::string out;
};

// Runs |binary| with |args|, output in |out_path|, |timeout_s| at most.
inline ToolRun RunTool(const std::string& binary, const std::vector<std::string>& args, const std::string& out_path,
                       int timeout_s = 120) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  ToolRun r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << binary << " timed out";
      break;
    }
    usleep(10000);
  }
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  std::ifstream in(out_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.out = ss.str();
  return r;
}

}  // namespace test
}  // namespace dedupv1
