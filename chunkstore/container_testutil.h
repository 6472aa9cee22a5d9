// Test helper: a container as a build before container format 2 wrote it.
#pragma once

#include <string>

namespace dedupv1 {
namespace test {

// |bytes|, a serialized format 2 container, rewritten in format 1: version 1
// in the header, every item without its trailing crc, meta_crc computed
// again (the data section and data_crc are the same in both formats).
std::string ContainerInFormatOne(const std::string& bytes);

}  // namespace test
}  // namespace dedupv1
