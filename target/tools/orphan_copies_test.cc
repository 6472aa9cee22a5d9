#include "target/tools/orphan_copies.h"

#include <gtest/gtest.h>

#include <string>

namespace dedupv1 {
namespace tools {
namespace {

Fingerprint Fp(uint8_t n) {
  uint8_t bytes[20] = {};
  bytes[0] = n;
  bytes[19] = static_cast<uint8_t>(255 - n);
  return Fingerprint(bytes, sizeof(bytes));
}

TEST(OrphanCopiesTest, CopiesNothingReachesAreOrphans) {
  OrphanCopies o;
  o.AddContainer(1, 100, {{Fp(3), 300}, {Fp(1), 100}, {Fp(2), 200}});
  o.AddContainer(2, 200, {{Fp(1), 100}, {Fp(4), 400}});
  o.Reach(100, Fp(1));  // a mapping
  o.Reach(100, Fp(3));  // the entry
  o.Reach(200, Fp(4));
  auto found = o.Find();
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].container, 100u);
  EXPECT_EQ(found[0].slot, 1u);
  EXPECT_EQ(found[0].fp, Fp(2));
  EXPECT_EQ(found[0].bytes, 200u);
  // The entry names container 100: slot 2's copy of the same chunk is one.
  EXPECT_EQ(found[1].container, 200u);
  EXPECT_EQ(found[1].slot, 2u);
  EXPECT_EQ(found[1].fp, Fp(1));
  EXPECT_EQ(found[1].bytes, 100u);
}

// Two references to one copy are one; a reference to another listed copy
// leaves this one an orphan.
TEST(OrphanCopiesTest, ReachesAreMatchedByContainerAndFingerprint) {
  OrphanCopies o;
  o.AddContainer(1, 100, {{Fp(1), 10}, {Fp(2), 20}});
  o.AddContainer(1, 101, {{Fp(1), 10}});
  o.Reach(101, Fp(1));
  o.Reach(100, Fp(2));
  o.Reach(100, Fp(2));
  o.Reach(100, Fp(7));
  auto found = o.Find();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].container, 100u);
  EXPECT_EQ(found[0].fp, Fp(1));
  o.Reach(100, Fp(1));
  EXPECT_TRUE(o.Find().empty());
  EXPECT_EQ(o.containers(), 2u);
  EXPECT_TRUE(o.Listed(101));
  EXPECT_FALSE(o.Listed(999));
  EXPECT_TRUE(o.Holds(100, Fp(2)));
  EXPECT_FALSE(o.Holds(101, Fp(2)));
  EXPECT_FALSE(o.Holds(999, Fp(1)));
}

// A reference to an id no listing has (a merge source not deleted yet, a
// container that could not be read) could resolve to any copy: every copy of
// that fingerprint stays.
TEST(OrphanCopiesTest, ReachOfAnUnlistedIdKeepsEveryCopy) {
  OrphanCopies o;
  o.AddContainer(1, 100, {{Fp(1), 10}, {Fp(2), 20}});
  o.AddContainer(2, 200, {{Fp(1), 10}});
  o.Reach(999, Fp(1));
  auto found = o.Find();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].fp, Fp(2));
}

TEST(OrphanCopiesTest, EmptyContainerListsNothing) {
  OrphanCopies o;
  o.AddContainer(1, 100, {});
  EXPECT_TRUE(o.Find().empty());
}

}  // namespace
}  // namespace tools
}  // namespace dedupv1
