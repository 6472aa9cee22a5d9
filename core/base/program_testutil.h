// Test helper: runs a program of the build (a tool such as dedupv1_check)
// from a test, bounded in time.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace dedupv1 {
namespace test {

// The path of program |name| built next to the running test binary (both
// land in build/bin).
std::string BuiltProgram(const std::string& name);

// Runs the program |argv| (argv[0] its path) with stdout and stderr in the
// file |out_path|, whose content |*output| gets; killed after |limit|. Its
// exit code; -1 if it could not start (|*output| says why), was killed or
// ended by a signal.
int RunProgram(const std::vector<std::string>& argv, const std::string& out_path, std::chrono::seconds limit,
               std::string* output);

}  // namespace test
}  // namespace dedupv1
