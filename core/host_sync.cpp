// The host-wait counter (see host_sync.h).
#include "core/host_sync.h"

#include <atomic>

namespace hg {

namespace {
std::atomic<int64_t> g_host_syncs{0};
}  // namespace

void note_host_sync() { g_host_syncs.fetch_add(1, std::memory_order_relaxed); }
int64_t host_syncs() { return g_host_syncs.load(std::memory_order_relaxed); }

}  // namespace hg
