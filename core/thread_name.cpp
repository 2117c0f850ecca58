// Thread names (see thread_name.h): pthread_setname_np / pthread_getname_np on Linux.
#include "core/thread_name.h"

#ifdef __linux__
#include <pthread.h>
#endif

namespace hg {

void name_this_thread(const std::string& name) {
#ifdef __linux__
  // The kernel's limit is 16 bytes with the terminating zero; a longer name is refused (ERANGE).
  (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
#else
  (void)name;
#endif
}

std::string this_thread_name() {
#ifdef __linux__
  char buf[16] = {};
  if (pthread_getname_np(pthread_self(), buf, sizeof(buf)) == 0) return buf;
#endif
  return "";
}

}  // namespace hg
