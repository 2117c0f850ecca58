// The GPU half of a batch when the loader runs its transform on the GPU
// (LoaderOptions::gpu_augment): workers hand over each sample as uint8 (a region decoded on the
// CPU) or, with an nvJPEG decode mode, as the JPEG file's bytes; GpuBatchMaker decodes the JPEGs on
// the GPU (data/nvjpeg_decoder.h) and runs the batched crop + resize + flip + normalise kernel
// (data/gpu_augment.h) on the training stream, giving the batch as a CUDA tensor (N, S, S, C) of
// f32 or bf16.
//
// In two halves, so that the slow host part runs beside the training step: prepare() (nvJPEG's
// decode, which blocks the calling thread while the JPEG engines work, and the page-locked staging
// of CPU-decoded pixels) in the loader's GPU thread, then finish() (what is queued on the training
// stream) in the thread that takes the batch.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/dataset.h"
#include "data/image_region.h"
#include "data/nvjpeg_decoder.h"
#include "data/transforms.h"

namespace hg::data {

/// Where JPEG files are decoded (config key `decode`): cpu = the loader's workers with libjpeg-turbo
/// (jpeg_decoder); nvjpeg = nvJPEG's hardware decoder, then its GPU decoder, then libjpeg-turbo per
/// file (nvjpeg_decoder.h); nvjpeg_gpu = the same without the hardware decoder.
enum class DecodeBackend { cpu, nvjpeg, nvjpeg_gpu };
/// Parses "cpu" | "nvjpeg" | "nvjpeg_gpu"; throws hg::Error naming the value otherwise.
DecodeBackend parse_decode_backend(const std::string& s);
const char* decode_backend_name(DecodeBackend d);
/// The JPEG files the workers hand over undecoded for `d` (an nvjpeg mode); they decode the rest
/// themselves with libjpeg-turbo. Never 4-component files (CMYK / YCCK: nvJPEG's conversion is
/// not PIL's). With the hardware decoder (nvjpeg) not progressive files either: the hardware
/// cannot take them and nvJPEG's GPU decoder does them one at a time in the GPU thread (327 img/s
/// on the H200), while the workers decode them in parallel, at reduced scale where the crop allows.
GpuTakes gpu_takes(DecodeBackend d);

/// One sample as a worker hands it over.
struct StagedSample {
  Image image;                ///< decoded on the CPU (jpeg empty): the pixels plan.box reads
  std::vector<uint8_t> jpeg;  ///< else the whole JPEG file, decoded by the GPU stage
  std::string path;           ///< the file, for errors
  CropPlan plan;              ///< box in image's pixels, or in the JPEG's full-size pixels
  CropRequest request;        ///< jpeg: the chooser's request (box == plan.box)
  std::string decoded_as;     ///< image: its DecodeInfo::key()
};

struct PreparedBatch;  // prepare()'s result (gpu_batch.cpp)
struct StageEvents;    // finish()'s CUDA events (gpu_batch.cpp)

/// Training-stream time of the GPU stage, summed over the batches measured: what the loader's host
/// wait cannot see, because finish() queues its work and returns.
struct GpuStageTimes {
  /// the stream stalled for nvJPEG decodes not done yet (and queued the few CPU-fallback files'
  /// uploads), s
  double decode_wait_seconds = 0;
  double transform_seconds = 0;  ///< the stage's copies and crop kernel on the stream, s
  int64_t batches = 0;           ///< batches these sums cover (read a few batches late)
  /// batches left out because their events were not complete when read (the stream was more than
  /// sixteen batches behind): a share well above 0 means the sums lean to the faster batches
  int64_t dropped = 0;
  /// nvjpeg modes: the decoder thread's host time (NvjpegDecoder::host_times)
  NvjpegHostTimes decoder;
};

struct StagedBatch {
  std::vector<StagedSample> samples;
  std::shared_ptr<PreparedBatch> prepared;  ///< set by GpuBatchMaker::prepare
};

class GpuBatchMaker {
 public:
  /// `t`: the transform whose plans the samples carry (check_gpu_augment must pass); channels: 1 or 3;
  /// dtype: f32 or bf16. Creates the nvJPEG decoder for an nvjpeg mode. Throws hg::Error when the build
  /// lacks CUDA (or nvJPEG for an nvjpeg mode) or no GPU is usable.
  GpuBatchMaker(const Transform& t, DecodeBackend decode, int64_t channels, DType dtype);
  ~GpuBatchMaker();
  GpuBatchMaker(const GpuBatchMaker&) = delete;
  GpuBatchMaker& operator=(const GpuBatchMaker&) = delete;

  /// The batch's images as a CUDA tensor (N, img_size, img_size, C) of the dtype, queued on the
  /// default stream; adds one count per sample to `decoded` (nvjpeg_backend_name or the CPU decode
  /// key). prepare() (unless done already) then finish().
  Tensor make(StagedBatch& staged, std::map<std::string, int64_t>& decoded);
  /// The host half: decodes the JPEGs (nvjpeg modes) and stages the CPU-decoded pixels in
  /// page-locked memory; queues nothing on the training stream. May run in another thread than
  /// finish(), one batch at a time, at most two batches ahead of the last finish() (the decoder's
  /// two buffers). Throws as make().
  void prepare(StagedBatch& staged);
  /// The training-stream half of a prepared batch: waits for its decode, copies the pixels up, runs
  /// the kernel. Throws hg::Error for a batch not prepared.
  Tensor finish(StagedBatch& staged, std::map<std::string, int64_t>& decoded);
  /// The stage's training-stream times since the last reset_times(). They are read from CUDA
  /// events a few finish() calls after they were recorded, when they are complete (never a host
  /// wait), so the last few batches are not in them yet.
  GpuStageTimes times() const;
  void reset_times();

 private:
  const Transform& transform_;
  DecodeBackend decode_;
  int64_t channels_;
  DType dtype_;
  std::unique_ptr<NvjpegDecoder> nvjpeg_;
  std::unique_ptr<StageEvents> events_;  // finish()'s events, read later (made by the constructor)
  GpuStageTimes times_;
};

}  // namespace hg::data
