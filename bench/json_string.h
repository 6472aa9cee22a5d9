// JsonString: a string as a JSON string literal, for the reports the bench
// tools print (paths and target names: quotes, backslashes and control
// bytes escaped).
#pragma once

#include <string>

namespace dedupv1 {
namespace bench {

std::string JsonString(const std::string& s);

}  // namespace bench
}  // namespace dedupv1
