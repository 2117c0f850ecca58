// Round-robin output buffers written outside stream order (see slot_ring.h).
#include "data/slot_ring.h"

#include <algorithm>

#include "core/error.h"

namespace hg::data {

SlotRing::SlotRing(int slots) {
  HG_CHECK(slots >= 1, "SlotRing: needs at least 1 slot, got ", slots);
  slots_.resize(static_cast<size_t>(slots));
}

SlotUse SlotRing::acquire(int64_t bytes) {
  HG_CHECK(bytes >= 0, "SlotRing::acquire: negative size ", bytes);
  SlotUse u;
  u.ticket = next_ticket_++;
  u.slot = static_cast<int>(u.ticket % static_cast<int64_t>(slots_.size()));
  Slot& s = slots_[static_cast<size_t>(u.slot)];
  if (s.ticket >= 0) u.wait = s.marked ? SlotUse::Wait::reads : SlotUse::Wait::stream;
  if (bytes > s.capacity || s.capacity == 0)
    u.grow_to = std::max(bytes + bytes / 4, int64_t(1) << 20);
  s.ticket = u.ticket;
  s.marked = false;
  return u;
}

void SlotRing::reads_queued(int64_t ticket) {
  HG_CHECK(ticket >= 0 && ticket < next_ticket_, "SlotRing::reads_queued: ticket ", ticket,
           " was never handed out (", next_ticket_, " so far)");
  Slot& s = slots_[static_cast<size_t>(ticket % static_cast<int64_t>(slots_.size()))];
  HG_CHECK(s.ticket == ticket, "SlotRing::reads_queued: the buffer of use ", ticket,
           " was written again by use ", s.ticket,
           ": its pixels were read after they were overwritten");
  s.marked = true;
}

void SlotRing::grown(int slot, int64_t bytes) {
  HG_CHECK(slot >= 0 && slot < slots() && bytes >= 0, "SlotRing::grown: slot ", slot, " of ",
           slots(), ", ", bytes, " bytes");
  slots_[static_cast<size_t>(slot)].capacity = bytes;
}

int64_t SlotRing::capacity(int slot) const {
  HG_CHECK(slot >= 0 && slot < slots(), "SlotRing::capacity: slot ", slot, " outside [0, ", slots(),
           ")");
  return slots_[static_cast<size_t>(slot)].capacity;
}

}  // namespace hg::data
