// Host-drawn step values (see host_drawn.h).
#include "core/host_drawn.h"

#include "core/error.h"
#include "core/memory.h"

namespace hg {
namespace {

thread_local HostDrawnLog* t_log = nullptr;  // HostDrawnCapture's log on this thread, if any

// `values` as a CPU tensor of `dtype`, page-locked when it is bound for the GPU.
Tensor staged(const std::vector<double>& values, DType dtype, Device device) {
  const auto n = static_cast<int64_t>(values.size());
  if (device == Device::cpu) return Tensor::from_vector<double>({n}, values).to(dtype);
  Tensor t = Tensor::empty_pinned({n}, dtype);
  if (dtype == DType::f32)
    for (int64_t i = 0; i < n; ++i)
      t.data<float>()[i] = static_cast<float>(values[static_cast<size_t>(i)]);
  else
    for (int64_t i = 0; i < n; ++i) t.data<double>()[i] = values[static_cast<size_t>(i)];
  return t;
}

}  // namespace

Tensor host_drawn(int64_t n, DType dtype, Device device, const DrawFn& draw) {
  HG_CHECK(n >= 0 && (dtype == DType::f32 || dtype == DType::f64),
           "host_drawn: n >= 0 and dtype f32 or f64, got ", n, ", ", dtype_name(dtype));
  if (t_log) {  // (captures are of GPU steps; the CPU takes this path only in tests)
    // refill() writes the buffer before each launch of the graph, so no kernel of the graph may
    // write its memory: not a block of the captured step's private pool, which can have served a
    // temporary earlier in the same step (whose kernels run again at every replay, after the
    // upload: the masks were overwritten by, e.g., a LayerNorm's statistics, and a graphed step
    // with layer scale and drop path trained on them). The shared allocator's persistent pool
    // instead: the graph writes only its private pool, and the buffer lives as long as the log.
    memory::PrivatePoolScope shared(nullptr);
    memory::CategoryScope persistent(Category::parameters);
    HostDrawnLog::Entry e{Tensor::empty({n}, dtype, device), draw};
    t_log->entries_.push_back(e);
    return e.buffer;
  }
  std::vector<double> values(static_cast<size_t>(n));
  draw(values);
  Tensor t = staged(values, dtype, device);
  return device == Device::cpu ? t : t.to(device);  // from page-locked memory: queued, no wait
}

void HostDrawnLog::refill() {
  for (Entry& e : entries_) {
    std::vector<double> values(static_cast<size_t>(e.buffer.numel()));
    e.draw(values);
    e.buffer.copy_(staged(values, e.buffer.dtype(), e.buffer.device()));
  }
}

HostDrawnCapture::HostDrawnCapture(HostDrawnLog& log) : saved_(t_log) { t_log = &log; }
HostDrawnCapture::~HostDrawnCapture() { t_log = saved_; }

}  // namespace hg
