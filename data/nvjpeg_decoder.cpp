// nvJPEG decoding: backend choice per file, the hardware batch, the GPU_HYBRID ROI decode and the
// libjpeg-turbo fallback, all into one packed device buffer (see nvjpeg_decoder.h).
#include "data/nvjpeg_decoder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <tuple>
#include <utility>

#include "core/clock.h"
#include "core/memory.h"
#include "data/image_ops.h"
#include "data/jpeg_decode.h"
#include "data/slot_ring.h"

#ifdef HAARGRAD_WITH_NVJPEG
#include <nvjpeg.h>

#include "core/pinned_memory.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#endif

namespace hg::data {

const char* nvjpeg_backend_name(NvjpegBackend b) {
  switch (b) {
    case NvjpegBackend::hardware: return "nvjpeg hardware";
    case NvjpegBackend::gpu: return "nvjpeg gpu";
    case NvjpegBackend::cpu: return "nvjpeg cpu-fallback";
  }
  return "?";
}

namespace {
// Exactly the pixels of `rect` (full scale), decoded by libjpeg-turbo: decode_jpeg may widen a region
// to its block grid, so the rows are cut to the rect. Throws CorruptImage naming `path`.
Image cpu_decode_rect(const uint8_t* data, size_t size, const std::string& path, int channels, const PixelRect& rect) {
  const JpegRegion r = decode_jpeg(data, size, path, channels, 1, rect);
  const int64_t w = rect.x1 - rect.x0, h = rect.y1 - rect.y0, C = channels;
  HG_CHECK(r.x0 <= rect.x0 && r.y0 <= rect.y0 && r.x0 + r.image.width >= rect.x1 && r.y0 + r.image.height >= rect.y1,
           "nvjpeg cpu fallback: libjpeg-turbo decoded columns [", r.x0, ", ", r.x0 + r.image.width, ") rows [", r.y0,
           ", ", r.y0 + r.image.height, ") of '", path, "', short of the region [", rect.x0, ", ", rect.x1, ") x [",
           rect.y0, ", ", rect.y1, ")");
  Image out{h, w, C, std::vector<uint8_t>(static_cast<size_t>(h * w * C))};
  for (int64_t y = 0; y < h; ++y)
    std::memcpy(out.pixels.data() + y * w * C,
                r.image.pixels.data() + ((y + rect.y0 - r.y0) * r.image.width + (rect.x0 - r.x0)) * C,
                static_cast<size_t>(w * C));
  return out;
}
}  // namespace

StoredRegion stored_region(NvjpegBackend backend, const CropRequest& req, int64_t height,
                           int64_t width, const std::string& path) {
  const CropBox& b = req.box;
  HG_CHECK(height > 0 && width > 0 && height < (1 << 30) && width < (1 << 30), "NvjpegDecoder: '",
           path, "' has the size ", height, "x", width);
  HG_CHECK(b.w > 0 && b.h > 0 && b.x < double(width) && b.y < double(height) && b.x + b.w > 0 &&
               b.y + b.h > 0,
           "NvjpegDecoder: the crop box (", b.x, ", ", b.y, ", ", b.w, ", ", b.h, ") misses the ",
           height, "x", width, " image '", path, "'");
  StoredRegion r;
  r.rect = backend == NvjpegBackend::hardware
               ? PixelRect{0, 0, width, height}
               : crop_reach_rect(b, req.out_h, req.out_w, height, width);
  HG_CHECK(!r.rect.empty(), "NvjpegDecoder: the crop box (", b.x, ", ", b.y, ", ", b.w, ", ", b.h,
           ") gives no pixels of the ", height, "x", width, " image '", path, "'");
  kernels::CropResizeItem& it = r.item;
  it.offset = 0;
  it.height = static_cast<int32_t>(r.rect.y1 - r.rect.y0);
  it.width = static_cast<int32_t>(r.rect.x1 - r.rect.x0);
  it.box_x = b.x - static_cast<double>(r.rect.x0);
  it.box_y = b.y - static_cast<double>(r.rect.y0);
  it.box_w = b.w;
  it.box_h = b.h;
  it.flip = 0;
  it.interp = static_cast<int32_t>(Interp::bilinear);
  return r;
}

#ifndef HAARGRAD_WITH_NVJPEG

bool nvjpeg_built() { return false; }
struct NvjpegDecoder::Impl {};
NvjpegDecoder::NvjpegDecoder(NvjpegOptions) {
  throw Error("decode: nvjpeg: this build has no nvJPEG (configure with CUDA and nvJPEG: -DHAARGRAD_CUDA=ON, "
              "NVJPEG_ROOT if nvjpeg.h is not in the CUDA toolkit)");
}
NvjpegDecoder::~NvjpegDecoder() = default;
bool NvjpegDecoder::hardware() const { return false; }
NvjpegBackend NvjpegDecoder::backend_for(const uint8_t*, size_t, const std::string&) { return NvjpegBackend::cpu; }
GpuImages NvjpegDecoder::decode(const std::vector<JpegJob>& jobs) { return decode_ahead(jobs); }
GpuImages NvjpegDecoder::decode_ahead(const std::vector<JpegJob>& jobs) {
  (void)cpu_decode_rect;
  (void)jobs;
  throw Error("NvjpegDecoder: this build has no nvJPEG");
}
void NvjpegDecoder::ready(GpuImages&) { throw Error("NvjpegDecoder: this build has no nvJPEG"); }
void NvjpegDecoder::reads_queued(const GpuImages&) {
  throw Error("NvjpegDecoder: this build has no nvJPEG");
}
NvjpegHostTimes NvjpegDecoder::host_times() const { return {}; }
void NvjpegDecoder::reset_host_times() {}

#else

bool nvjpeg_built() { return true; }

namespace {

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "not initialized";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG: return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "incomplete bitstream";
  }
  return "unknown status";
}

// Throws hg::Error naming the call and what it was working on (a file, or "setup").
void check(nvjpegStatus_t s, const char* call, const std::string& what) {
  if (s != NVJPEG_STATUS_SUCCESS)
    throw Error(str("nvJPEG: ", call, " failed for ", what, ": ", status_name(s), " (", static_cast<int>(s), ")"));
}
// Destructors: report, never throw.
void warn_on(nvjpegStatus_t s, const char* call) {
  if (s != NVJPEG_STATUS_SUCCESS) spdlog::warn("nvJPEG: {} failed: {}", call, status_name(s));
}

}  // namespace

// nvJPEG's own buffers (its states' work memory, grown as batches need). Its default allocators are
// cudaMalloc / cudaFree and cudaHostAlloc / cudaFreeHost, and a cudaFree waits for the whole
// device while holding up other threads' CUDA calls: the training thread's launches stall and the
// GPU's queue runs dry. These keep every freed block for reuse instead (a block is reused only
// after the stream nvJPEG freed it on is done with it: a wait for that stream alone) and give the
// memory back when the decoder goes. One per decoder; nvJPEG calls it from the decoding thread.
class BlockCache {
 public:
  explicit BlockCache(bool pinned) : pinned_(pinned) {}
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;
  ~BlockCache() {
    for (const auto& [p, size] : all_) {
      (void)size;
      if ((pinned_ ? cudaFreeHost(p) : cudaFree(p)) != cudaSuccess)
        spdlog::warn("nvJPEG: freeing a cached block failed");
    }
    spdlog::debug("nvJPEG: {} {} allocations over the decoder's life", allocations_,
                  pinned_ ? "page-locked" : "device");
  }
  // A cached block of at least `size` bytes (at most twice that), else a new one. 0 = success.
  int get(void** ptr, size_t size) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first <= 2 * std::max<size_t>(size, 1)) {
      *ptr = it->second;
      free_.erase(it);
      return 0;
    }
    const cudaError_t e =
        pinned_ ? cudaHostAlloc(ptr, size, cudaHostAllocDefault) : cudaMalloc(ptr, size);
    if (e != cudaSuccess) return 1;
    all_[*ptr] = size;
    ++allocations_;
    return 0;
  }
  int put(void* ptr, cudaStream_t stream) {
    if (cudaStreamSynchronize(stream) != cudaSuccess) return 1;  // its queued readers are done
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = all_.find(ptr);
    if (it == all_.end()) return 1;
    free_.emplace(it->second, ptr);
    return 0;
  }
  static int dev_malloc(void* c, void** p, size_t size, cudaStream_t) {
    return static_cast<BlockCache*>(c)->get(p, size);
  }
  static int dev_free(void* c, void* p, size_t, cudaStream_t s) {
    return static_cast<BlockCache*>(c)->put(p, s);
  }

 private:
  bool pinned_;
  std::mutex mu_;
  std::multimap<size_t, void*> free_;  // size -> block
  std::map<void*, size_t> all_;        // every block made, for the destructor
  int64_t allocations_ = 0;
};

struct NvjpegDecoder::Impl {
  // Declared first, so destroyed last: nvJPEG's objects (destroyed in ~Impl) free into them.
  BlockCache device_blocks{false}, pinned_blocks{true};
  nvjpegDevAllocatorV2_t device_allocator{&BlockCache::dev_malloc, &BlockCache::dev_free,
                                          &device_blocks};
  nvjpegPinnedAllocatorV2_t pinned_allocator{&BlockCache::dev_malloc, &BlockCache::dev_free,
                                             &pinned_blocks};
  NvjpegOptions opts;
  nvjpegOutputFormat_t format = NVJPEG_OUTPUT_RGBI;
  bool hardware = false;
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t batch_state = nullptr;  // the hardware batch
  nvjpegJpegDecoder_t gpu_decoder = nullptr;  // GPU_HYBRID, decoupled phases
  nvjpegJpegState_t gpu_state = nullptr;
  nvjpegBufferPinned_t pinned = nullptr;
  nvjpegBufferDevice_t device = nullptr;
  nvjpegDecodeParams_t params = nullptr;
  nvjpegJpegStream_t stream = nullptr;
  int64_t warnings = 0;  // failures logged at warn level (the first few), then at debug
  mutable std::mutex times_mu;  // decode_ahead (GPU thread) adds, host_times() (any thread) reads
  NvjpegHostTimes times;
  // The output buffers (see nvjpeg_decoder.h): slot i's bytes, and the event recorded after the
  // queued readers of its current contents. ring_mu guards the ring: decode_ahead (the loader's GPU
  // thread) and reads_queued (the training thread) use it at the same time.
  std::mutex ring_mu;
  SlotRing ring{2};
  std::vector<Tensor> buffers = std::vector<Tensor>(2);
  std::vector<cudaEvent_t> read_done = std::vector<cudaEvent_t>(2, nullptr);
  cudaEvent_t drained = nullptr;  // drain()'s event (the GPU thread's only)
  // The decodes run on a stream of their own that does not synchronise with the training stream
  // (non-blocking): waiting for a decode (GPU_HYBRID's pinned buffer, see decode_gpu) then waits
  // for that decode alone, not for the queued training step. The training stream waits for
  // decoded[slot] (recorded after the slot's decodes) before it reads the pixels.
  cudaStream_t decode_stream = nullptr;
  std::vector<cudaEvent_t> decoded = std::vector<cudaEvent_t>(2, nullptr);

  void failed(const std::string& msg) {
    if (warnings++ < 5) spdlog::warn("nvJPEG: {}", msg);
    else spdlog::debug("nvJPEG: {}", msg);
  }

  ~Impl() {
    // nvJPEG's objects first: their buffers go back to the BlockCaches, whose put() waits for the
    // stream they were used on, the decode stream, which must still exist then.
    if (stream) warn_on(nvjpegJpegStreamDestroy(stream), "nvjpegJpegStreamDestroy");
    if (params) warn_on(nvjpegDecodeParamsDestroy(params), "nvjpegDecodeParamsDestroy");
    if (gpu_state) warn_on(nvjpegJpegStateDestroy(gpu_state), "nvjpegJpegStateDestroy");
    if (device) warn_on(nvjpegBufferDeviceDestroy(device), "nvjpegBufferDeviceDestroy");
    if (pinned) warn_on(nvjpegBufferPinnedDestroy(pinned), "nvjpegBufferPinnedDestroy");
    if (gpu_decoder) warn_on(nvjpegDecoderDestroy(gpu_decoder), "nvjpegDecoderDestroy");
    if (batch_state) warn_on(nvjpegJpegStateDestroy(batch_state), "nvjpegJpegStateDestroy");
    if (handle) warn_on(nvjpegDestroy(handle), "nvjpegDestroy");
    for (cudaEvent_t e : decoded)
      if (e && cudaEventDestroy(e) != cudaSuccess) spdlog::warn("nvJPEG: cudaEventDestroy failed");
    if (decode_stream && cudaStreamDestroy(decode_stream) != cudaSuccess)
      spdlog::warn("nvJPEG: cudaStreamDestroy failed");
    for (cudaEvent_t e : read_done)
      if (e && cudaEventDestroy(e) != cudaSuccess) spdlog::warn("nvJPEG: cudaEventDestroy failed");
    if (drained && cudaEventDestroy(drained) != cudaSuccess)
      spdlog::warn("nvJPEG: cudaEventDestroy failed");
  }

  // Waits on the host until the work queued on `stream` so far is done, sleeping between queries
  // (this runs in the loader's GPU thread, and a spinning CUDA wait there slows the training
  // thread's launches: hg::cuda::wait_polling).
  void drain(cudaStream_t stream) {
    HG_CUDA_CHECK(cudaEventRecord(drained, stream));
    cuda::wait_polling(drained);
  }

  // Sets the decode parameters for `rect` (the output format never changes).
  void set_roi(const PixelRect& rect, const std::string& path) {
    check(nvjpegDecodeParamsSetOutputFormat(params, format), "nvjpegDecodeParamsSetOutputFormat", path);
    check(nvjpegDecodeParamsSetROI(params, static_cast<int>(rect.x0), static_cast<int>(rect.y0),
                                   static_cast<int>(rect.x1 - rect.x0), static_cast<int>(rect.y1 - rect.y0)),
          "nvjpegDecodeParamsSetROI", path);
  }

  // A view of `bytes` of the next output buffer, safe to write outside stream order (the readers of
  // its previous contents are done: host wait; a new block has no queued user left: device sync),
  // and the ticket of this use.
  std::pair<Tensor, int64_t> output_buffer(int64_t bytes) {
    SlotUse u;
    {
      std::lock_guard<std::mutex> lock(ring_mu);
      u = ring.acquire(bytes);
    }
    const auto k = static_cast<size_t>(u.slot);
    // Sleeping waits: this runs in the loader's GPU thread, often for most of a training step, and
    // a spinning CUDA wait there slows the training thread's kernel launches
    // (hg::cuda::wait_polling).
    if (u.wait == SlotUse::Wait::reads) cuda::wait_polling(read_done[k]);
    // The legacy stream: the work queued so far on every thread's stream (the training thread's
    // stream is a blocking one, core/cuda_stream.h).
    if (u.wait == SlotUse::Wait::stream) drain(cudaStreamLegacy);
    if (u.grow_to > 0) {
      memory::CategoryScope scope(Category::workspace);
      buffers[k] = Tensor::empty({u.grow_to}, DType::u8, Device::cuda);
      std::lock_guard<std::mutex> lock(ring_mu);
      ring.grown(u.slot, u.grow_to);
      HG_CUDA_CHECK(cudaDeviceSynchronize());
    }
    return {buffers[k].slice(0, 0, std::max<int64_t>(bytes, 1)), u.ticket};
  }

  // One image through GPU_HYBRID's three phases into `dst` (pitch: the rect's row bytes). False (and
  // a warning naming the file) when nvJPEG fails: the caller decodes it on the CPU instead.
  bool decode_gpu(const JpegJob& job, const PixelRect& rect, uint8_t* dst) {
    const std::string& path = job.path;
    const int64_t C = opts.channels;
    nvjpegImage_t out{};
    out.channel[0] = dst;
    out.pitch[0] = static_cast<size_t>((rect.x1 - rect.x0) * C);
    set_roi(rect, path);
    nvjpegStatus_t s = nvjpegJpegStreamParse(handle, job.data, job.size, 0, 0, stream);
    if (s == NVJPEG_STATUS_SUCCESS) s = nvjpegDecodeJpegHost(handle, gpu_decoder, gpu_state, params, stream);
    if (s == NVJPEG_STATUS_SUCCESS)
      s = nvjpegDecodeJpegTransferToDevice(handle, gpu_decoder, gpu_state, stream, decode_stream);
    if (s == NVJPEG_STATUS_SUCCESS)
      s = nvjpegDecodeJpegDevice(handle, gpu_decoder, gpu_state, &out, decode_stream);
    // The next image's host phase rewrites the pinned buffer this one's copy reads: wait for it
    // (for this decode only: the training work queued on the default stream goes on).
    drain(decode_stream);
    if (s != NVJPEG_STATUS_SUCCESS) {
      failed(str("GPU decode of '", path, "' failed (", status_name(s), "): decoding it with libjpeg-turbo"));
      return false;
    }
    return true;
  }

  // The hardware batch: whole images into their slots. False (with a warning naming the first file)
  // when the batch fails: the caller decodes those files on the CPU.
  bool decode_hardware(const std::vector<const JpegJob*>& jobs, const std::vector<uint8_t*>& dst,
                       const std::vector<int64_t>& widths) {
    const auto n = static_cast<int>(jobs.size());
    std::vector<const unsigned char*> data(jobs.size());
    std::vector<size_t> lengths(jobs.size());
    std::vector<nvjpegImage_t> out(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) {
      data[i] = jobs[i]->data;
      lengths[i] = jobs[i]->size;
      out[i] = nvjpegImage_t{};
      out[i].channel[0] = dst[i];
      out[i].pitch[0] = static_cast<size_t>(widths[i] * opts.channels);
    }
    const std::string what = str("a batch of ", n, " files from '", jobs[0]->path, "'");
    check(nvjpegDecodeBatchedInitialize(handle, batch_state, n, 1, format), "nvjpegDecodeBatchedInitialize", what);
    const nvjpegStatus_t s = nvjpegDecodeBatched(handle, batch_state, data.data(), lengths.data(),
                                                 out.data(), decode_stream);
    if (s != NVJPEG_STATUS_SUCCESS) {
      failed(str("hardware decode of ", what, " failed (", status_name(s), "): decoding them with libjpeg-turbo"));
      drain(decode_stream);
      return false;
    }
    return true;
  }
};

NvjpegDecoder::NvjpegDecoder(NvjpegOptions opts) : impl_(std::make_unique<Impl>()) {
  HG_CHECK(opts.channels == 1 || opts.channels == 3, "NvjpegDecoder: channels must be 1 or 3, got ", opts.channels);
  HG_CHECK(cuda::available(), "NvjpegDecoder: no usable CUDA device");
  Impl& m = *impl_;
  m.opts = opts;
  m.format = opts.channels == 1 ? NVJPEG_OUTPUT_Y : NVJPEG_OUTPUT_RGBI;
  if (opts.hardware) {
    const nvjpegStatus_t s = nvjpegCreateExV2(NVJPEG_BACKEND_HARDWARE, &m.device_allocator,
                                              &m.pinned_allocator, 0, &m.handle);
    if (s == NVJPEG_STATUS_SUCCESS) {
      m.hardware = true;
    } else {
      m.handle = nullptr;
      spdlog::info("nvJPEG: no hardware decoder on this GPU ({}): GPU_HYBRID and libjpeg-turbo decode", status_name(s));
    }
  }
  if (!m.handle)
    check(nvjpegCreateExV2(NVJPEG_BACKEND_DEFAULT, &m.device_allocator, &m.pinned_allocator, 0,
                           &m.handle),
          "nvjpegCreateExV2", "setup");
  if (m.hardware) check(nvjpegJpegStateCreate(m.handle, &m.batch_state), "nvjpegJpegStateCreate", "setup");
  check(nvjpegDecoderCreate(m.handle, NVJPEG_BACKEND_GPU_HYBRID, &m.gpu_decoder), "nvjpegDecoderCreate", "setup");
  check(nvjpegDecoderStateCreate(m.handle, m.gpu_decoder, &m.gpu_state), "nvjpegDecoderStateCreate", "setup");
  check(nvjpegBufferPinnedCreateV2(m.handle, &m.pinned_allocator, &m.pinned),
        "nvjpegBufferPinnedCreateV2", "setup");
  check(nvjpegBufferDeviceCreateV2(m.handle, &m.device_allocator, &m.device),
        "nvjpegBufferDeviceCreateV2", "setup");
  check(nvjpegStateAttachPinnedBuffer(m.gpu_state, m.pinned), "nvjpegStateAttachPinnedBuffer", "setup");
  check(nvjpegStateAttachDeviceBuffer(m.gpu_state, m.device), "nvjpegStateAttachDeviceBuffer", "setup");
  check(nvjpegDecodeParamsCreate(m.handle, &m.params), "nvjpegDecodeParamsCreate", "setup");
  check(nvjpegJpegStreamCreate(m.handle, &m.stream), "nvjpegJpegStreamCreate", "setup");
  for (cudaEvent_t& e : m.read_done)
    HG_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  HG_CUDA_CHECK(cudaEventCreateWithFlags(&m.drained, cudaEventDisableTiming));
  // The decode stream at the device's greatest priority: nvJPEG's hardware path launches one small
  // kernel per image on it, and nvjpegDecodeBatched blocks its thread (slowing the training
  // thread's launches) until they ran. At normal priority they wait behind the training kernels'
  // blocks (a decode call 55-100 ms instead of 5.6 ms, dev/nvjpeg_probe.cu); at high priority they
  // start between them.
  int least = 0, greatest = 0;
  HG_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  HG_CUDA_CHECK(cudaStreamCreateWithPriority(&m.decode_stream, cudaStreamNonBlocking, greatest));
  for (cudaEvent_t& e : m.decoded)
    HG_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
}

NvjpegDecoder::~NvjpegDecoder() = default;

bool NvjpegDecoder::hardware() const { return impl_->hardware; }

NvjpegBackend NvjpegDecoder::backend_for(const uint8_t* data, size_t size, const std::string& path) {
  Impl& m = *impl_;
  // The header alone (the markers up to the first scan): a full parse reads every entropy-coded
  // byte, and the loader's GPU thread does this for a whole batch per step (bench-data nvjpeg with
  // header-only parses: 10,766 img/s on the H200, eleventh session; 8,005-8,102 before). A file
  // damaged past its header is caught by the decode itself: a failing hardware or GPU_HYBRID decode
  // sends it to libjpeg-turbo, which names it.
  if (nvjpegJpegStreamParseHeader(m.handle, data, size, m.stream) != NVJPEG_STATUS_SUCCESS)
    return NvjpegBackend::cpu;
  unsigned components = 0, width = 0, height = 0;
  check(nvjpegJpegStreamGetComponentsNum(m.stream, &components), "nvjpegJpegStreamGetComponentsNum", path);
  check(nvjpegJpegStreamGetFrameDimensions(m.stream, &width, &height), "nvjpegJpegStreamGetFrameDimensions", path);
  // CMYK / YCCK: libjpeg-turbo undoes Adobe's inversion and converts as PIL does; nvJPEG would not match.
  if ((components != 1 && components != 3) || width == 0 || height == 0) return NvjpegBackend::cpu;
  int unsupported = 1;  // nvJPEG's convention: 0 = supported
  if (m.hardware) {
    check(nvjpegDecodeBatchedSupported(m.handle, m.stream, &unsupported), "nvjpegDecodeBatchedSupported", path);
    if (unsupported == 0) return NvjpegBackend::hardware;
  }
  // GPU_HYBRID with a whole-image ROI: whether the decoder takes this kind of file at all.
  m.set_roi(PixelRect{0, 0, int64_t(width), int64_t(height)}, path);
  unsupported = 1;
  check(nvjpegDecoderJpegSupported(m.gpu_decoder, m.stream, m.params, &unsupported), "nvjpegDecoderJpegSupported", path);
  return unsupported == 0 ? NvjpegBackend::gpu : NvjpegBackend::cpu;
}

GpuImages NvjpegDecoder::decode(const std::vector<JpegJob>& jobs) {
  GpuImages out = decode_ahead(jobs);
  ready(out);
  return out;
}

GpuImages NvjpegDecoder::decode_ahead(const std::vector<JpegJob>& jobs) {
  Impl& m = *impl_;
  const auto started = std::chrono::steady_clock::now();
  // Not while another thread captures a CUDA graph: output_buffer's device-wide and legacy-stream
  // waits would invalidate the capture (kernels/cuda/context.h, capture_mutex).
  std::shared_lock<std::shared_mutex> no_capture(cuda::capture_mutex());
  const int64_t C = m.opts.channels;
  const size_t n = jobs.size();
  GpuImages out;
  out.items.resize(n);
  out.backends.resize(n);
  // 1. Per job: its backend and the pixels it stores (whole image for hardware, else the crop's reach).
  std::vector<PixelRect> rects(n);
  int64_t bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const JpegJob& job = jobs[i];
    HG_CHECK(job.data != nullptr && job.size > 0, "NvjpegDecoder: no data for '", job.path, "'");
    const JpegHeader h = read_jpeg_header(job.data, job.size, job.path);  // the size the crop was chosen for
    out.backends[i] = backend_for(job.data, job.size, job.path);
    const StoredRegion r = stored_region(out.backends[i], job.request, h.height, h.width, job.path);
    rects[i] = r.rect;
    out.items[i] = r.item;
    out.items[i].offset = bytes;
    bytes += int64_t(r.item.height) * r.item.width * C;
  }
  const auto buffer_asked = std::chrono::steady_clock::now();
  std::tie(out.pixels, out.ticket) = m.output_buffer(bytes);
  const double buffer_wait = seconds_since(buffer_asked);
  auto* base = static_cast<uint8_t*>(out.pixels.data_ptr());
  // 2. The hardware batch.
  std::vector<size_t> to_cpu;
  {
    std::vector<const JpegJob*> hw;
    std::vector<uint8_t*> dst;
    std::vector<int64_t> widths;
    std::vector<size_t> idx;
    for (size_t i = 0; i < n; ++i)
      if (out.backends[i] == NvjpegBackend::hardware) {
        hw.push_back(&jobs[i]);
        dst.push_back(base + out.items[i].offset);
        widths.push_back(out.items[i].width);
        idx.push_back(i);
      }
    if (!hw.empty() && !m.decode_hardware(hw, dst, widths))
      for (size_t i : idx) to_cpu.push_back(i);
  }
  // 3. GPU_HYBRID, one ROI at a time.
  for (size_t i = 0; i < n; ++i)
    if (out.backends[i] == NvjpegBackend::gpu && !m.decode_gpu(jobs[i], rects[i], base + out.items[i].offset))
      to_cpu.push_back(i);
  // ready() makes the training stream (the fallback copies, the crop kernel) wait for this.
  HG_CUDA_CHECK(cudaEventRecord(m.decoded[static_cast<size_t>(out.ticket % m.ring.slots())],
                                m.decode_stream));
  // 4. libjpeg-turbo for the rest, staged in one page-locked buffer that ready() copies up.
  for (size_t i = 0; i < n; ++i)
    if (out.backends[i] == NvjpegBackend::cpu) to_cpu.push_back(i);
  if (!to_cpu.empty()) {
    int64_t staged = 0;
    for (size_t i : to_cpu) staged += int64_t(out.items[i].height) * out.items[i].width * C;
    out.fallback = Tensor::empty_pinned({std::max<int64_t>(staged, 1)}, DType::u8);
    auto* h = static_cast<uint8_t*>(out.fallback.data_ptr());
    int64_t at = 0;
    for (size_t i : to_cpu) {
      const Image img = cpu_decode_rect(jobs[i].data, jobs[i].size, jobs[i].path, static_cast<int>(C), rects[i]);
      std::memcpy(h + at, img.pixels.data(), img.pixels.size());
      out.fallback_at.push_back(at);
      out.fallback_offset.push_back(out.items[i].offset);
      out.fallback_bytes.push_back(static_cast<int64_t>(img.pixels.size()));
      at += static_cast<int64_t>(img.pixels.size());
      out.backends[i] = NvjpegBackend::cpu;
    }
  }
  std::lock_guard<std::mutex> lock(m.times_mu);
  m.times.buffer_wait_seconds += buffer_wait;
  m.times.decode_seconds += seconds_since(started) - buffer_wait;
  ++m.times.batches;
  return out;
}

NvjpegHostTimes NvjpegDecoder::host_times() const {
  std::lock_guard<std::mutex> lock(impl_->times_mu);
  return impl_->times;
}

void NvjpegDecoder::reset_host_times() {
  std::lock_guard<std::mutex> lock(impl_->times_mu);
  impl_->times = NvjpegHostTimes{};
}

void NvjpegDecoder::ready(GpuImages& images) {
  Impl& m = *impl_;
  HG_CHECK(!images.queued, "NvjpegDecoder::ready: batch ", images.ticket, " is queued already");
  HG_CHECK(images.ticket >= 0, "NvjpegDecoder::ready: not a decoded batch");
  HG_CUDA_CHECK(cudaStreamWaitEvent(
      cuda::stream(), m.decoded[static_cast<size_t>(images.ticket % m.ring.slots())], 0));
  if (!images.fallback_at.empty()) {
    auto* base = static_cast<uint8_t*>(images.pixels.data_ptr());
    const auto* h = static_cast<const uint8_t*>(images.fallback.data_ptr());
    for (size_t i = 0; i < images.fallback_at.size(); ++i)
      HG_CUDA_CHECK(cudaMemcpyAsync(base + images.fallback_offset[i], h + images.fallback_at[i],
                                    static_cast<size_t>(images.fallback_bytes[i]),
                                    cudaMemcpyHostToDevice, cuda::stream()));
    memory::record_pinned_use(images.fallback.data_ptr());  // not reused before the copies are done
  }
  images.queued = true;
}

void NvjpegDecoder::reads_queued(const GpuImages& images) {
  Impl& m = *impl_;
  HG_CHECK(images.queued, "NvjpegDecoder::reads_queued: batch ", images.ticket,
           " was never made ready()");
  std::lock_guard<std::mutex> lock(m.ring_mu);
  m.ring.reads_queued(images.ticket);  // throws for a buffer written again since
  HG_CUDA_CHECK(cudaEventRecord(m.read_done[static_cast<size_t>(images.ticket % m.ring.slots())],
                                cuda::stream()));
}

#endif  // HAARGRAD_WITH_NVJPEG

}  // namespace hg::data
