// GPU decode + transform of a staged batch (see gpu_batch.h).
#include "data/gpu_batch.h"

#include <cstring>

#include <spdlog/spdlog.h>

#include "core/memory.h"
#include "data/gpu_augment.h"
#include "data/nvjpeg_decoder.h"
#ifdef HAARGRAD_WITH_CUDA
#include "core/pinned_memory.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#endif

namespace hg::data {

DecodeBackend parse_decode_backend(const std::string& s) {
  if (s == "cpu") return DecodeBackend::cpu;
  if (s == "nvjpeg") return DecodeBackend::nvjpeg;
  if (s == "nvjpeg_gpu") return DecodeBackend::nvjpeg_gpu;
  throw Error(str("decode: expected 'cpu', 'nvjpeg' or 'nvjpeg_gpu', got '", s, "'"));
}

const char* decode_backend_name(DecodeBackend d) {
  switch (d) {
    case DecodeBackend::cpu: return "cpu";
    case DecodeBackend::nvjpeg: return "nvjpeg";
    case DecodeBackend::nvjpeg_gpu: return "nvjpeg_gpu";
  }
  return "?";
}

GpuTakes gpu_takes(DecodeBackend d) {
  if (d == DecodeBackend::nvjpeg)
    return [](const JpegHeader& h) { return h.components != 4 && !h.progressive; };
  return [](const JpegHeader& h) { return h.components != 4; };
}

#ifdef HAARGRAD_WITH_CUDA
// finish()'s timing events on the training stream, per batch: before the wait for its decodes,
// after it, after the crop kernel. A ring of kSlots: a slot is read when it comes round again,
// sixteen batches later, by which time the stream has usually passed it (a training loop's host
// runs a few steps ahead of the stream, more when the step is one CUDA graph); a slot whose events
// are not complete then is left out of the sums (counted in GpuStageTimes::dropped), never waited
// for.
struct StageEvents {
  static constexpr int kSlots = 16;
  struct Slot {
    cudaEvent_t begin = nullptr, ready = nullptr, end = nullptr;
    bool pending = false;  // recorded, not read yet
  };
  Slot slots[kSlots];
  int64_t next = 0;

  StageEvents() {
    for (Slot& s : slots)
      for (cudaEvent_t* e : {&s.begin, &s.ready, &s.end}) HG_CUDA_CHECK(cudaEventCreate(e));
  }
  ~StageEvents() {
    for (Slot& s : slots)
      for (cudaEvent_t e : {s.begin, s.ready, s.end})
        if (e && cudaEventDestroy(e) != cudaSuccess)
          spdlog::warn("gpu_augment: cudaEventDestroy failed");
  }
  StageEvents(const StageEvents&) = delete;
  StageEvents& operator=(const StageEvents&) = delete;

  void drop_pending() {
    for (Slot& s : slots) s.pending = false;
  }
  // The next slot, its previous batch's times added to `t` when they are complete.
  Slot& take(GpuStageTimes& t) {
    Slot& s = slots[next++ % kSlots];
    if (!s.pending) return s;
    s.pending = false;
    const cudaError_t q = cudaEventQuery(s.end);
    if (q == cudaErrorNotReady) {
      ++t.dropped;
      return s;
    }
    HG_CUDA_CHECK(q);
    float wait_ms = 0, transform_ms = 0;
    HG_CUDA_CHECK(cudaEventElapsedTime(&wait_ms, s.begin, s.ready));
    HG_CUDA_CHECK(cudaEventElapsedTime(&transform_ms, s.ready, s.end));
    t.decode_wait_seconds += 1e-3 * wait_ms;
    t.transform_seconds += 1e-3 * transform_ms;
    ++t.batches;
    return s;
  }
};
#else
struct StageEvents {  // never made: the constructor throws without CUDA
  void drop_pending() {}
};
#endif

GpuBatchMaker::GpuBatchMaker(const Transform& t, DecodeBackend decode, int64_t channels, DType dtype)
    : transform_(t), decode_(decode), channels_(channels), dtype_(dtype) {
  HG_CHECK(channels == 1 || channels == 3, "gpu_augment: channels must be 1 or 3, got ", channels);
  HG_CHECK(static_cast<int64_t>(t.options().mean.size()) == channels, "gpu_augment: the transform has ",
           t.options().mean.size(), " channels, the data ", channels);
  HG_CHECK(dtype == DType::f32 || dtype == DType::bf16, "gpu_augment: dtype must be f32 or bf16, got ",
           dtype_name(dtype));
  // the device first: on a machine without one, what else the transform asks is beside the point
  const std::string keys = decode == DecodeBackend::cpu
                               ? std::string("gpu_augment: false")
                               : std::string("decode: cpu (nvjpeg decoding implies gpu_augment)");
#ifndef HAARGRAD_WITH_CUDA
  throw Error(
      str("gpu_augment: this build has no CUDA backend (configure with -DHAARGRAD_CUDA=ON), "
          "so the batch cannot be made on a GPU; set ",
          keys));
#else
  HG_CHECK(cuda::available(),
           "gpu_augment: no usable CUDA device, so the batch cannot be made on a "
           "GPU; set ",
           keys);
  check_gpu_augment(t.options());
  events_ = std::make_unique<StageEvents>();
  if (decode != DecodeBackend::cpu) {
    NvjpegOptions o;
    o.channels = static_cast<int>(channels);
    o.hardware = decode == DecodeBackend::nvjpeg;
    nvjpeg_ = std::make_unique<NvjpegDecoder>(o);
  }
#endif
}

Tensor GpuBatchMaker::make(StagedBatch& staged, std::map<std::string, int64_t>& decoded) {
  if (!staged.prepared) prepare(staged);
  return finish(staged, decoded);
}

#ifndef HAARGRAD_WITH_CUDA
struct PreparedBatch {};
void GpuBatchMaker::prepare(StagedBatch&) {
  throw Error("gpu_augment: this build has no CUDA backend");
}
Tensor GpuBatchMaker::finish(StagedBatch&, std::map<std::string, int64_t>&) {
  throw Error("gpu_augment: this build has no CUDA backend");
}
#else

// What prepare() leaves for finish(): the nvJPEG output and the CPU-decoded pixels, page-locked.
struct PreparedBatch {
  std::vector<size_t> jpeg_idx, image_idx;  // samples handed over as JPEG bytes / as pixels
  GpuImages gpu;                            // jpeg_idx's pixels, decoded (nvjpeg modes)
  Tensor host;                              // image_idx's pixels back to back (page-locked)
  int64_t host_bytes = 0;
};

void GpuBatchMaker::prepare(StagedBatch& staged) {
  const int64_t C = channels_;
  memory::CategoryScope scope(Category::workspace);
  auto p = std::make_shared<PreparedBatch>();
  std::vector<JpegJob> jobs;
  for (size_t i = 0; i < staged.samples.size(); ++i) {
    const StagedSample& s = staged.samples[i];
    if (!s.jpeg.empty()) {
      HG_CHECK(nvjpeg_ != nullptr, "gpu_augment: '", s.path, "' was handed over undecoded but decode is cpu");
      jobs.push_back(JpegJob{s.jpeg.data(), s.jpeg.size(), s.path, s.request});
      p->jpeg_idx.push_back(i);
    } else {
      HG_CHECK(s.image.channels == C && s.image.height > 0 && s.image.width > 0 &&
                   s.image.pixels.size() == static_cast<size_t>(s.image.height * s.image.width * C),
               "gpu_augment: sample ", i, " ('", s.path, "') is ", s.image.height, "x", s.image.width, "x",
               s.image.channels, "; expected ", C, " channels");
      p->image_idx.push_back(i);
      p->host_bytes += static_cast<int64_t>(s.image.pixels.size());
    }
  }
  if (!jobs.empty()) p->gpu = nvjpeg_->decode_ahead(jobs);
  if (!p->image_idx.empty()) {
    p->host = Tensor::empty_pinned({std::max<int64_t>(p->host_bytes, 1)}, DType::u8);
    auto* h = static_cast<uint8_t*>(p->host.data_ptr());
    int64_t at = 0;
    for (size_t i : p->image_idx) {
      const auto& px = staged.samples[i].image.pixels;
      std::memcpy(h + at, px.data(), px.size());
      at += static_cast<int64_t>(px.size());
    }
  }
  staged.prepared = std::move(p);
}

Tensor GpuBatchMaker::finish(StagedBatch& staged, std::map<std::string, int64_t>& decoded) {
  HG_CHECK(staged.prepared != nullptr, "gpu_augment: finish() of a batch that was not prepared");
  PreparedBatch& p = *staged.prepared;
  const TransformOptions& o = transform_.options();
  const int64_t C = channels_, N = static_cast<int64_t>(staged.samples.size());
  memory::CategoryScope scope(Category::workspace);
  const bool jpegs = !p.jpeg_idx.empty();
  StageEvents::Slot& ev = events_->take(times_);
  HG_CUDA_CHECK(cudaEventRecord(ev.begin, cuda::stream()));
  if (jpegs)
    nvjpeg_->ready(p.gpu);  // the stream waits for the decodes (and queues CPU fallbacks' copies)
  HG_CUDA_CHECK(cudaEventRecord(ev.ready, cuda::stream()));
  const int64_t gpu_bytes = jpegs ? p.gpu.pixels.numel() : 0;
  // One device buffer: the nvJPEG output as it is (when it is all), else both parts copied together.
  Tensor pixels;
  if (p.image_idx.empty()) {
    pixels = p.gpu.pixels;
  } else {
    pixels =
        Tensor::empty({std::max<int64_t>(gpu_bytes + p.host_bytes, 1)}, DType::u8, Device::cuda);
    auto* base = static_cast<uint8_t*>(pixels.data_ptr());
    if (gpu_bytes > 0)
      HG_CUDA_CHECK(cudaMemcpyAsync(base, p.gpu.pixels.data_ptr(), static_cast<size_t>(gpu_bytes),
                                    cudaMemcpyDeviceToDevice, cuda::stream()));
    HG_CUDA_CHECK(cudaMemcpyAsync(base + gpu_bytes, p.host.data_ptr(),
                                  static_cast<size_t>(p.host_bytes), cudaMemcpyHostToDevice,
                                  cuda::stream()));
    memory::record_pinned_use(p.host.data_ptr());
  }
  // The kernel items, in batch order.
  std::vector<kernels::CropResizeItem> items(static_cast<size_t>(N));
  for (size_t k = 0; k < p.jpeg_idx.size(); ++k) {
    const StagedSample& s = staged.samples[p.jpeg_idx[k]];
    kernels::CropResizeItem it = p.gpu.items[k];
    it.flip = s.plan.flip ? 1 : 0;
    it.interp = static_cast<int32_t>(s.plan.interp);
    set_padding(it, s.plan.pad);
    items[p.jpeg_idx[k]] = it;
    ++decoded[nvjpeg_backend_name(p.gpu.backends[k])];
  }
  int64_t at = gpu_bytes;
  for (size_t i : p.image_idx) {
    const StagedSample& s = staged.samples[i];
    items[i] = crop_item(s.plan, s.image.height, s.image.width, at);
    at += static_cast<int64_t>(s.image.pixels.size());
    ++decoded[s.decoded_as];
  }
  Tensor out = Tensor::empty({N, o.img_size, o.img_size, C}, dtype_, Device::cuda);
  resample_on_gpu(pixels, items, transform_, out);
  HG_CUDA_CHECK(cudaEventRecord(ev.end, cuda::stream()));
  ev.pending = true;
  // The decoder's buffer is read by the copy above and the kernel: a later decode into it waits for
  // them.
  if (jpegs) nvjpeg_->reads_queued(p.gpu);
  staged.prepared.reset();
  return out;
}
#endif

GpuBatchMaker::~GpuBatchMaker() = default;

GpuStageTimes GpuBatchMaker::times() const {
  GpuStageTimes t = times_;
  if (nvjpeg_) t.decoder = nvjpeg_->host_times();
  return t;
}

void GpuBatchMaker::reset_times() {
  times_ = GpuStageTimes{};
  events_->drop_pending();
  if (nvjpeg_) nvjpeg_->reset_host_times();
}

}  // namespace hg::data
