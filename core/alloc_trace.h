// Allocation traces: what a program asked of a device's allocator, in order -- every allocation's
// bytes and category, every free, the end of every training step's backward -- recorded from a real
// run (memory::start_trace) and replayed against the allocator's own policy code
// (core/block_cache.h) with a faked system allocation. The replay reports, per step, the peak of
// live bytes, the bytes held from the system and the system allocations, so the allocator's policy
// can be measured and tested on the CPU for the GPU's sizes: a trace recorded at two small batches
// is extrapolated to a large one (extrapolate_trace), since a training step's requests are the same
// at every batch and their sizes are affine in it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"

namespace hg {

struct AllocEvent {
  enum class Kind : uint8_t { alloc, free, step_end };
  Kind kind = Kind::alloc;
  Category category = Category::activations;  ///< alloc: the allocation's category
  int64_t id = 0;     ///< alloc, free: the allocation's number in the trace, from 1
  int64_t bytes = 0;  ///< alloc: bytes asked of the allocator (a multiple of 256)
};

/// Events in the order the allocator saw them (one device). Allocations alive when the recording
/// started are not in it, and those alive when it stopped have no free event.
struct AllocTrace {
  std::string note;  ///< what was recorded, one line (model, batch, ...)
  std::vector<AllocEvent> events;
  int64_t steps() const;  ///< number of step_end events
};

namespace memory {
/// Starts recording every allocation, free and step end on `device` (memory::allocate, its frees,
/// memory::step_done). Throws hg::Error when a recording is already running there.
void start_trace(Device device);
/// Stops the recording started by start_trace and returns it (empty when none was running).
AllocTrace stop_trace(Device device);
}  // namespace memory

/// The text form, one event per line ("a ID BYTES CATEGORY", "f ID", "s"), after a header.
std::string trace_to_text(const AllocTrace& trace);
/// Parses trace_to_text's form; throws hg::Error naming `source` and the line when it is malformed.
AllocTrace trace_from_text(const std::string& text, const std::string& source);
/// Writes the text form atomically (io::write_file_atomic) / reads it; hg::Error names the file.
void save_trace(const AllocTrace& trace, const std::string& path);
AllocTrace load_trace(const std::string& path);

/// The batch `trace`'s note records: its last "batch N" (train::record_training_steps writes
/// "MODEL PRECISION batch N @IMG ...", extrapolate_trace appends "extrapolated to batch X ...");
/// none when the note names no batch (a trace written by hand).
std::optional<int64_t> recorded_batch(const AllocTrace& trace);

/// The trace at batch `x` from traces `a` and `b` of the same run at batches `xa` != `xb`: every
/// allocation's bytes are extended along the line through (xa, a's bytes) and (xb, b's bytes),
/// rounded up to 256 and at least 256 (parameters, whose bytes do not change, stay as they are).
/// Throws hg::Error when the two traces differ in anything but bytes (event kinds, order, ids,
/// categories), naming the first event that differs.
AllocTrace extrapolate_trace(const AllocTrace& a, double xa, const AllocTrace& b, double xb,
                             double x);

/// Figures of one step of a replay, in bytes (system_allocs is a count). Step k is everything after
/// the k-th step end up to and including the (k+1)-th (step 0 also holds what came before the
/// first training step, e.g. building the model); events after the last step end are one more step.
struct ReplayStep {
  int64_t live_peak = 0;      ///< peak of live bytes (all categories, earlier steps' included)
  int64_t reserved_peak = 0;  ///< peak of bytes held from the (fake) system
  int64_t reserved_end = 0;   ///< bytes held at the step's end
  int64_t system_allocs = 0;  ///< system allocations during the step
};

/// Replays `trace` against a fresh allocator (the policy of memory::allocate on every device) whose
/// system allocation is faked (addresses handed out, never touched: any size replays). Throws
/// hg::Error when the trace frees an id it never allocated or allocates an id twice.
std::vector<ReplayStep> replay_trace(const AllocTrace& trace);

}  // namespace hg
