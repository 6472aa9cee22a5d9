#include "core/base/host_name.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace dedupv1 {
namespace {

TEST(HostNameTest, IsTheKernelsNameNeverEmpty) {
  char host[256] = {0};
  ASSERT_EQ(0, ::gethostname(host, sizeof(host) - 1));
  EXPECT_EQ(std::string(host), HostName());
  EXPECT_FALSE(HostName().empty());
}

}  // namespace
}  // namespace dedupv1
