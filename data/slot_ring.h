// The bookkeeping of output buffers that something writes outside CUDA stream order: nvJPEG's
// hardware decoder (nvjpegDecodeBatched with NVJPEG_BACKEND_HARDWARE) writes its output when it is
// called, not after the work already queued on the stream it is given (measured here on the H200
// with nvJPEG 13.0, driver 580.159.04; reported elsewhere for H100 with nvJPEG 12.3 to 13.2, where
// a cudaStreamWaitEvent did not gate it either, only a wait on the host did). A buffer from the
// caching allocator may be a block freed by a step whose kernels are still queued (a backward's
// activation gradients): the decoder would write pixels into memory those kernels have yet to read
// or write. So the decoder keeps its own buffers, round robin, and before writing into one waits
// on the host for exactly the work that reads its previous contents.
//
// SlotRing is that policy without CUDA (so CPU tests check it); NvjpegDecoder
// (data/nvjpeg_decoder.h) does what it says with CUDA events and tensors. Per call of
// acquire(bytes), in this order:
//   1. wait: none (the slot was never written), reads (a host wait on the event recorded after the
//      slot's last reader: reads_queued), stream (its readers were never marked: drain the stream);
//   2. grow_to > 0: replace the slot's buffer by one of grow_to bytes and call grown(), then
//      synchronise the device (the new block may itself have been freed by work still queued);
//   3. write the slot; the ticket names this use of it.
// The caller queues the readers of a use, then calls reads_queued(ticket) (records the event).
#pragma once

#include <cstdint>
#include <vector>

namespace hg::data {

struct SlotUse {
  enum class Wait { none, reads, stream };
  int slot = 0;
  Wait wait = Wait::none;
  int64_t grow_to = 0;  ///< bytes of the new buffer, 0 = keep the slot's buffer
  int64_t ticket = 0;   ///< this use's number (0, 1, 2, ... over the ring's life)
};

class SlotRing {
 public:
  /// `slots` >= 1 buffers used in turn: with 2, a write waits for the readers of the use before the
  /// previous one (the batch before last), which are long done in a training loop.
  explicit SlotRing(int slots = 2);

  /// The next slot in turn for `bytes` (>= 0) and what to do before writing it (see the file
  /// comment). A buffer grows to bytes plus a quarter (at least 1 MiB), so a run of slowly growing
  /// batches replaces it a few times, not every batch.
  SlotUse acquire(int64_t bytes);
  /// The buffer of `slot` now holds `bytes` (after a grow_to: a failed allocation leaves the old
  /// size).
  void grown(int slot, int64_t bytes);
  /// The readers of use `ticket` are queued and an event was recorded after them. Throws hg::Error
  /// when that use's slot was acquired again since (its pixels were overwritten: the caller read
  /// stale data) or the ticket was never handed out.
  void reads_queued(int64_t ticket);

  int slots() const { return static_cast<int>(slots_.size()); }
  int64_t capacity(int slot) const;

 private:
  struct Slot {
    int64_t capacity = 0;
    int64_t ticket = -1;  // the last use, -1 = never used
    bool marked = false;  // reads_queued was called for that use
  };
  std::vector<Slot> slots_;
  int64_t next_ticket_ = 0;
};

}  // namespace hg::data
