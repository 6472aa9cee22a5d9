// The FIU trace format (bench/fiu_trace.h): lines parsed or refused naming
// the field, records joined into requests, content from the MD5.
#include "bench/fiu_trace.h"

#include <gtest/gtest.h>

#include <sstream>

namespace dedupv1 {
namespace bench {
namespace {

const char kA[] = "0123456789abcdef0123456789abcdef";
const char kB[] = "fedcba9876543210fedcba9876543210";

TEST(FiuTraceTest, LinesAreParsedOrRefusedNamingTheField) {
  FiuRecord r;
  ASSERT_TRUE(ParseFiuLine("89155664239022 4670 cp 1000 8 W 6 0 0123456789abcdef0123456789abcdef", &r).ok());
  EXPECT_EQ(r.timestamp, 89155664239022u);
  EXPECT_EQ(r.lba, 1000u);
  EXPECT_EQ(r.sectors, 8u);
  EXPECT_TRUE(r.write);
  EXPECT_EQ(r.md5, kA);
  EXPECT_TRUE(ParseFiuLine("1 2 p 8 8 R 6 0 " + std::string(kB), &r).ok());
  EXPECT_FALSE(r.write);
  auto refused = [](const std::string& line, const std::string& why) {
    FiuRecord x;
    Status s = ParseFiuLine(line, &x);
    EXPECT_FALSE(s.ok()) << line;
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  };
  refused("1 2 p 8 8 W 6 0", "9 fields");
  refused("1 2 p 8 8 W 6 0 " + std::string(kA) + " extra", "9 fields");
  refused("x 2 p 8 8 W 6 0 " + std::string(kA), "timestamp");
  refused("1 2 p 8 12 W 6 0 " + std::string(kA), "size '12'");
  refused("1 2 p 9 8 W 6 0 " + std::string(kA), "LBA 9");
  refused("1 2 p 8 8 D 6 0 " + std::string(kA), "op 'D'");
  refused("1 2 p 8 8 W 6 0 0123", "MD5");
}

TEST(FiuTraceTest, RecordsOfOneRequestAreJoined) {
  std::istringstream in(std::string("# a comment\n") +
                        "10 1 p 0 8 W 6 0 " + kA + "\n"     // request 1: [0, 8K)
                        "10 1 p 8 8 W 6 0 " + kB + "\n"
                        "10 1 p 32 8 W 6 0 " + kA + "\n"    // not contiguous: request 2
                        "\n"
                        "11 1 p 40 8 W 6 0 " + kA + "\n"    // a later timestamp: request 3
                        "11 1 p 48 8 R 6 0 " + kB + "\n");  // a read: request 4
  std::vector<FiuRequest> requests;
  ASSERT_TRUE(ReadFiuTrace(in, &requests).ok());
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].offset, 0u);
  EXPECT_EQ(requests[0].length, 8192u);
  EXPECT_EQ(requests[0].md5s, (std::vector<std::string>{kA, kB}));
  EXPECT_EQ(requests[1].offset, 32u * 512);
  EXPECT_EQ(requests[2].offset, 40u * 512);
  EXPECT_TRUE(requests[2].write);
  EXPECT_FALSE(requests[3].write);
  std::istringstream bad(std::string("10 1 p 0 8 W 6 0 ") + kA + "\n10 1 p 0 8 W 6 0 nope\n");
  requests.clear();
  Status s = ReadFiuTrace(bad, &requests);
  EXPECT_NE(s.message().find("trace line 2"), std::string::npos) << s.message();
}

TEST(FiuTraceTest, SameMd5SameBytesZeroMd5Zeros) {
  std::vector<uint8_t> a(4096), b(4096), c(4096), z(4096, 1);
  FillFromMd5(kA, a.data(), a.size());
  FillFromMd5(kA, b.data(), b.size());
  FillFromMd5(kB, c.data(), c.size());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  FillFromMd5(kZeroBlockMd5, z.data(), z.size());
  EXPECT_EQ(z, std::vector<uint8_t>(4096, 0));
}

}  // namespace
}  // namespace bench
}  // namespace dedupv1
