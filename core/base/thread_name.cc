#include "core/base/thread_name.h"

#include <pthread.h>

namespace dedupv1 {

void NameThisThread(const std::string& name) {
  // pthread_setname_np refuses names over 15 bytes rather than cutting them.
  ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str());
}

}  // namespace dedupv1
