// CompoundResult: the outcome of a compound RADOS operation (an
// ObjectReadOperation or ObjectWriteOperation with several sub-operations,
// each given an rval pointer).
//
// The operation's own result says whether it ran; each sub-operation's rval
// says whether that part did. The OSD fails the whole operation with the
// first failing sub-operation unless the op asks otherwise, but a caller
// must not rely on it: an omap read whose rval is an error has an empty
// output map, which read as a success would be taken for "no such key" (an
// absent slot, an absent chunk). So every caller folds the rvals in.
#pragma once

#include <initializer_list>

namespace dedupv1 {

// |r| if it is an error, else the first error among |rvals|, else |r|.
inline int CompoundResult(int r, std::initializer_list<int> rvals) {
  if (r < 0) return r;
  for (int rval : rvals) {
    if (rval < 0) return rval;
  }
  return r;
}

}  // namespace dedupv1
