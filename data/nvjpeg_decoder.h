// GPU JPEG decoding with NVIDIA's nvJPEG (config `decode: nvjpeg` / `nvjpeg_gpu`), for the GPU
// transform (data/gpu_augment.h): compressed bytes go to the GPU, uint8 pixels stay there.
//
// Which decoder takes a file (NvjpegDecoder::backend_for, per file, from its parsed header):
//   1. hardware: the GPU's JPEG engines (NVJPEG_BACKEND_HARDWARE, batched), when the handle could
//      be made with it (A100, H100/H200, ...) and nvjpegDecodeBatchedSupported accepts the file:
//      baseline single-scan JPEG (not 4:1:0 / 4:1:1). The whole image is decoded; the crop is read
//      from it by the resize kernel (this backend has no ROI).
//   2. gpu: nvJPEG's GPU-assisted decoder (NVJPEG_BACKEND_GPU_HYBRID, one image at a time) when
//      nvjpegDecoderJpegSupported accepts it, decoding only the crop's region
//      (nvjpegDecodeParamsSetROI).
//   3. cpu: libjpeg-turbo (data/jpeg_decode.h) at full scale, the crop's region only, copied up:
//      4-component files (CMYK / YCCK: their Adobe inversion and PIL's conversion are ours, not
//      nvJPEG's), files neither GPU decoder accepts (progressive ones where GPU_HYBRID declines
//      them, odd subsampling), and any file a GPU decode fails on (the failure is logged with the
//      file's name).
// All three decode at full scale (no DCT downscaling), so the pixels agree with libjpeg-turbo's
// full decode (JpegDecoder::turbo_full) up to IDCT and chroma-upsampling rounding
// (tests/gpu/nvjpeg_test.cpp states the tolerance). One channel = luma (NVJPEG_OUTPUT_Y), three =
// interleaved RGB (RGBI).
//
// Threads: decode_ahead may run in one thread (the loader's GPU thread) while another (the training
// thread) calls ready() and reads_queued() for earlier batches; decode() is both in one thread. At
// most two decodes may be outstanding (decoded, their readers not yet marked by reads_queued): a
// third would wait for readers that are not queued yet. The decodes run on a stream of their own;
// ready() makes the default CUDA stream, the training stream, wait for them.
//
// Where the pixels go: the hardware decoder writes its output when nvjpegDecodeBatched is called,
// not in stream order after the work already queued (data/slot_ring.h), so its output must never
// be a block of the caching allocator, which hands out memory freed by kernels still queued (a
// backward's activation gradients: written over, they gave NaN weights after a training run). The
// decoder keeps two buffers of its own and writes them in turn; before writing one it waits on the
// host for the readers of its previous contents, which the caller marks with reads_queued().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/image_region.h"
#include "kernels/crop_resize.h"

namespace hg::data {

enum class NvjpegBackend { hardware, gpu, cpu };
/// "nvjpeg hardware", "nvjpeg gpu", "nvjpeg cpu-fallback" (the keys of LoaderStats::decoded).
const char* nvjpeg_backend_name(NvjpegBackend b);

/// True when this build has nvJPEG (CMake found it: HAARGRAD_WITH_NVJPEG).
bool nvjpeg_built();

struct NvjpegOptions {
  int channels = 3;       ///< 1 (luma) or 3 (RGB)
  bool hardware = true;   ///< try the hardware backend first; false = GPU_HYBRID, then the CPU
};

/// One file to decode: its bytes (alive until decode returns) and the crop its transform reads.
struct JpegJob {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string path;      ///< names the file in errors
  CropRequest request;   ///< box in full-size pixels, and the output size (for the filter's reach)
};

/// A decoded batch on the GPU: job i's pixels ((items[i].height, items[i].width, channels) uint8) at
/// byte items[i].offset of `pixels`, a region of the image or all of it, with items[i]'s box = the
/// job's box in that region's pixels (flip 0, bilinear: the caller sets flip and filter).
struct GpuImages {
  Tensor pixels;  ///< CUDA u8, packed: a view of one of the decoder's two buffers (file comment)
  std::vector<kernels::CropResizeItem> items;
  std::vector<NvjpegBackend> backends;  ///< what decoded each job
  int64_t ticket = -1;  ///< which use of the decoder's buffers this is (for reads_queued)
  /// decode_ahead: the libjpeg-turbo fallbacks' pixels, page-locked, that ready() copies up: copy i
  /// takes fallback_bytes[i] bytes from fallback_at[i] of `fallback` to fallback_offset[i] of
  /// pixels.
  Tensor fallback;
  std::vector<int64_t> fallback_at, fallback_offset, fallback_bytes;
  bool queued = false;  ///< ready() was called: the training stream reads it in order
};

/// What decode() stores for one job and how the crop kernel reads it: the whole (height, width)
/// image for the hardware backend (it has no ROI), else the pixels resampling the box may read
/// (crop_reach_rect); item: offset 0, (height, width) of `rect`, the request's box in rect's
/// pixels, flip 0, bilinear. Throws hg::Error naming `path` when the box misses the image.
struct StoredRegion {
  PixelRect rect;
  kernels::CropResizeItem item;
};
StoredRegion stored_region(NvjpegBackend backend, const CropRequest& request, int64_t height,
                           int64_t width, const std::string& path);

/// Host time of decode_ahead calls (the loader's GPU thread), s: getting the output buffer, which
/// is mostly waiting for its readers (the training stream had not yet read the batch before last:
/// the decodes are as far ahead as the two buffers allow), and the rest (parsing, the engines'
/// batch, GPU_HYBRID, libjpeg-turbo fallbacks).
struct NvjpegHostTimes {
  double buffer_wait_seconds = 0, decode_seconds = 0;
  int64_t batches = 0;
};

class NvjpegDecoder {
 public:
  /// Creates the nvJPEG handle (hardware backend when asked and available, else the default one),
  /// the GPU_HYBRID decoder and their states. Throws hg::Error when the build lacks nvJPEG or CUDA, no
  /// GPU is usable, channels is not 1 or 3, or an nvJPEG call fails (the message names the call).
  explicit NvjpegDecoder(NvjpegOptions opts = {});
  ~NvjpegDecoder();
  NvjpegDecoder(const NvjpegDecoder&) = delete;
  NvjpegDecoder& operator=(const NvjpegDecoder&) = delete;

  /// Whether the hardware backend is in use (asked for, and the GPU and driver have it).
  bool hardware() const;
  /// The decoder decode() uses for this file (parses its header). Throws nothing for bad data: a
  /// file nvJPEG cannot parse goes to the CPU, where libjpeg-turbo names the problem.
  NvjpegBackend backend_for(const uint8_t* data, size_t size, const std::string& path);
  /// Decodes the jobs (hardware ones in one batch) into the decoder's next buffer and makes the
  /// training stream wait for them: decode_ahead + ready. The pixels stay valid until the decode()
  /// after next.
  GpuImages decode(const std::vector<JpegJob>& jobs);
  /// The host side of decode(), touching nothing queued on the training stream: first waits on the
  /// host for the readers of the next buffer's previous contents (marked by reads_queued, else for
  /// the whole default stream), then decodes on the GPU (hardware batch, GPU_HYBRID) on the
  /// decoder's own stream and the rest with libjpeg-turbo into page-locked memory. Throws
  /// CorruptImage naming the file when libjpeg-turbo, the last resort, cannot decode it; hg::Error
  /// naming the file for a failing CUDA call.
  GpuImages decode_ahead(const std::vector<JpegJob>& jobs);
  /// Call in the thread that queues the readers, before them: the training stream waits for the
  /// GPU decodes of `images` and copies its fallback pixels up. Throws hg::Error when called twice.
  void ready(GpuImages& images);
  /// Call once the GPU work that reads `images.pixels` is queued (the crop kernel): records an
  /// event after it on the default stream, which the decode() that reuses the buffer waits for.
  /// Throws hg::Error when the buffer was already written again (the pixels were read stale).
  void reads_queued(const GpuImages& images);
  /// decode_ahead's host times since the last reset_host_times() (any thread may ask).
  NvjpegHostTimes host_times() const;
  void reset_host_times();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hg::data
