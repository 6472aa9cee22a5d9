#include "filters/filter.h"

namespace dedupv1 {

const char* FilterResultName(FilterResult r) {
  switch (r) {
    case FilterResult::kExisting: return "EXISTING";
    case FilterResult::kStrongMaybe: return "STRONG-MAYBE";
    case FilterResult::kWeakMaybe: return "WEAK-MAYBE";
    case FilterResult::kNotExisting: return "NOT-EXISTING";
    case FilterResult::kError: return "ERROR";
  }
  return "?";
}

void FilterCounters::Count(FilterResult r) {
  switch (r) {
    case FilterResult::kExisting: existing++; break;
    case FilterResult::kStrongMaybe: strong_maybe++; break;
    case FilterResult::kWeakMaybe: weak_maybe++; break;
    case FilterResult::kNotExisting: not_existing++; break;
    case FilterResult::kError: error++; break;
  }
}

}  // namespace dedupv1
