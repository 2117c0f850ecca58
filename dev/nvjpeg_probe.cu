// Kernel lab, not part of the product (build by hand on the GPU machine):
//   nvcc -O2 -std=c++17 -arch=sm_90 dev/nvjpeg_probe.cu -lnvjpeg -o /tmp/nvjpeg_probe
//   /tmp/nvjpeg_probe FOLDER/train [BATCH [list | time [blocking | poll | priority | plain
//                                  [legacy | perthread | nonblocking]]]]
//   list: each format's decode twice, nothing else (for `ncu --kernel-name regex:'^[^b]'`, which
//   lists the kernels nvJPEG launches per format); time: the timings below, with every CUDA wait of
//   the process sleeping (blocking), the decode thread waiting by sleeping between event queries
//   (poll), or the decode stream at the device's greatest priority (priority); the last argument
//   picks the busy kernels' stream (eleventh session): the legacy default stream (default), the
//   per-thread default stream (haargrad's training stream, which synchronises with the legacy
//   one) or a non-blocking stream (which does not). Question: does nvJPEG queue something on the
//   legacy stream, so that a decode waits for all the training work queued before it?
// nvJPEG's hardware batched decode in several output formats: img/s of the decode alone, and how
// much it slows a stream of compute kernels on the legacy default stream (the training step's
// stream) while a second thread decodes in a loop on a non-blocking stream. Question behind it:
// training from JPEGs with decode: nvjpeg runs ~6% slower than from synthetic data although the
// training stream never waits for a decode; ncu shows nvJPEG launching one rgba2rgb kernel per
// image for NVJPEG_OUTPUT_RGBI (128 small launches a batch). Does another format avoid them, and
// does the interference go with them?
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)
#define NK(x)                                                                                \
  do {                                                                                       \
    nvjpegStatus_t s_ = (x);                                                                 \
    if (s_ != NVJPEG_STATUS_SUCCESS) {                                                       \
      std::fprintf(stderr, "%s:%d %s: nvjpeg status %d\n", __FILE__, __LINE__, #x, int(s_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

namespace fs = std::filesystem;
bool high_priority =
    false;  // the decode stream at the device's greatest priority (argument "priority")
cudaStream_t busy_stream = 0;  // where busy_ms queues its kernels (argument 5)
using Clock = std::chrono::steady_clock;

// ~100 us of FMAs on every SM: the stand-in for a training kernel.
__global__ void busy(float* out, int iters) {
  float a = threadIdx.x * 1e-3f, b = 1.0001f;
  for (int i = 0; i < iters; ++i) a = fmaf(a, b, 1e-7f);
  if (a == 12345.f) out[0] = a;  // never true: keeps the loop
}

// A tiny kernel: the launch storm of a training step is thousands of these.
__global__ void tiny(float* out) {
  if (threadIdx.x == 1023) out[0] = 1.f;
}

// Launches per second of `tiny` from this thread on the legacy stream, over about `secs`.
double launch_rate(float* scratch, double secs) {
  int64_t n = 0;
  const auto t0 = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - t0).count() < secs) {
    for (int i = 0; i < 1000; ++i) tiny<<<1, 32>>>(scratch);
    n += 1000;
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  CK(cudaDeviceSynchronize());
  return n / s;
}

struct Batch {
  std::vector<std::vector<unsigned char>> files;
  std::vector<int> w, h;
};

Batch read_batch(const std::string& dir, int n, nvjpegHandle_t handle) {
  Batch b;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if ((int)b.files.size() == n) break;
    std::string ext = e.path().extension().string();
    for (char& ch : ext) ch = char(std::tolower(ch));
    if (!e.is_regular_file() || (ext != ".jpg" && ext != ".jpeg")) continue;
    std::ifstream f(e.path(), std::ios::binary);
    std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(f)), {});
    int nc = 0;
    nvjpegChromaSubsampling_t css;
    int ws[NVJPEG_MAX_COMPONENT], hs[NVJPEG_MAX_COMPONENT];
    if (nvjpegGetImageInfo(handle, bytes.data(), bytes.size(), &nc, &css, ws, hs) !=
        NVJPEG_STATUS_SUCCESS)
      continue;
    if (nc != 3 || css != NVJPEG_CSS_420) continue;  // the common case only
    // baseline only (the hardware path): an SOF0 marker, no SOF2
    bool baseline = false;
    for (size_t i = 0; i + 1 < bytes.size(); ++i)
      if (bytes[i] == 0xFF && (bytes[i + 1] == 0xC0 || bytes[i + 1] == 0xC2)) {
        baseline = bytes[i + 1] == 0xC0;
        break;
      }
    if (!baseline) continue;
    b.files.push_back(std::move(bytes));
    b.w.push_back(ws[0]);
    b.h.push_back(hs[0]);
  }
  return b;
}

struct Decoder {
  nvjpegHandle_t handle;
  nvjpegJpegState_t state;
  cudaStream_t stream;
  nvjpegOutputFormat_t fmt;
  std::vector<nvjpegImage_t> out;
  std::vector<const unsigned char*> data;
  std::vector<size_t> len;
  Decoder(nvjpegHandle_t h, const Batch& b, nvjpegOutputFormat_t f) : handle(h), fmt(f) {
    NK(nvjpegJpegStateCreate(handle, &state));
    if (high_priority) {  // nvJPEG's per-image kernels then start between the busy kernels' blocks
      int least = 0, greatest = 0;
      CK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
      CK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
    } else {
      CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    }
    const int n = (int)b.files.size();
    out.resize(n);
    for (int i = 0; i < n; ++i) {
      data.push_back(b.files[i].data());
      len.push_back(b.files[i].size());
      out[i] = nvjpegImage_t{};
      const size_t W = b.w[i], H = b.h[i];
      const int planes = (f == NVJPEG_OUTPUT_RGBI) ? 1 : (f == NVJPEG_OUTPUT_NV12 ? 2 : 3);
      for (int c = 0; c < planes; ++c) {
        const size_t pitch = (f == NVJPEG_OUTPUT_RGBI) ? 3 * W : (W + 1) / 2 * 2;
        CK(cudaMalloc(&out[i].channel[c], pitch * H));
        out[i].pitch[c] = pitch;
      }
    }
    NK(nvjpegDecodeBatchedInitialize(handle, state, n, 1, f));
  }
  bool poll = false;     // wait for the decode by sleeping between event queries, not spinning
  double call_secs = 0;  // host time inside nvjpegDecodeBatched
  int calls = 0;
  cudaEvent_t done = nullptr;
  bool decode() {
    const auto t0 = Clock::now();
    if (nvjpegDecodeBatched(handle, state, data.data(), len.data(), out.data(), stream) !=
        NVJPEG_STATUS_SUCCESS)
      return false;
    call_secs += std::chrono::duration<double>(Clock::now() - t0).count();
    ++calls;
    if (!poll) {
      CK(cudaStreamSynchronize(stream));
      return true;
    }
    if (!done) CK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    CK(cudaEventRecord(done, stream));
    while (cudaEventQuery(done) == cudaErrorNotReady)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    return true;
  }
};

// ms per busy kernel over `reps` launches on the legacy stream.
double busy_ms(float* scratch, int iters, int reps) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a, busy_stream));
  for (int r = 0; r < reps; ++r) busy<<<132 * 8, 256, 0, busy_stream>>>(scratch, iters);
  CK(cudaEventRecord(b, busy_stream));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  return ms / reps;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [BATCH]\n", argv[0]);
    return 2;
  }
  const int n = argc > 2 ? std::atoi(argv[2]) : 128;
  const bool list = argc > 3 && std::string(argv[3]) == "list";
  const bool poll = argc > 4 && std::string(argv[4]) == "poll";
  high_priority = argc > 4 && std::string(argv[4]) == "priority";
  if (argc > 4 && std::string(argv[4]) == "blocking")
    CK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
  const std::string bs = argc > 5 ? argv[5] : "legacy";
  if (bs == "perthread") busy_stream = cudaStreamPerThread;
  if (bs == "nonblocking") CK(cudaStreamCreateWithFlags(&busy_stream, cudaStreamNonBlocking));
  std::printf("busy kernels on the %s stream\n", bs.c_str());
  nvjpegHandle_t handle;
  NK(nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, 0, &handle));
  const Batch b = read_batch(argv[1], n, handle);
  std::printf("batch: %zu baseline 4:2:0 files\n", b.files.size());
  const std::pair<nvjpegOutputFormat_t, const char*> fmts[] = {{NVJPEG_OUTPUT_RGBI, "RGBI"},
                                                               {NVJPEG_OUTPUT_NV12, "NV12"},
                                                               {NVJPEG_OUTPUT_YUV, "YUV"},
                                                               {NVJPEG_OUTPUT_RGB, "RGB"}};
  if (list) {
    for (const auto& [f, name] : fmts) {
      Decoder d(handle, b, f);
      d.decode();
      d.decode();
      std::printf("%s decoded twice\n", name);
    }
    return 0;
  }
  float* scratch;
  CK(cudaMalloc(&scratch, 4));
  const int iters = 20000;
  busy_ms(scratch, iters, 20);  // warm-up
  const double alone = busy_ms(scratch, iters, 5000);
  std::printf("busy kernel alone: %.4f ms\n", alone);
  launch_rate(scratch, 0.2);
  const double storm_alone = launch_rate(scratch, 1.0);
  for (const auto& [f, name] : fmts) {
    Decoder d(handle, b, f);
    d.poll = poll;
    if (!d.decode()) {  // warm-up
      std::printf("%-5s decode failed\n", name);
      continue;
    }
    const auto t0 = Clock::now();
    const int reps = 10;
    for (int r = 0; r < reps; ++r) d.decode();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    // the decode in a loop beside the busy kernels, throttled to the training's need (one batch
    // per `gap` ms) and flat out
    for (double gap_ms : {38.0, 0.0}) {
      std::atomic<bool> stop{false};
      std::atomic<int> batches{0};
      std::thread t([&] {
        while (!stop) {
          const auto s0 = Clock::now();
          d.decode();
          ++batches;
          while (!stop &&
                 std::chrono::duration<double, std::milli>(Clock::now() - s0).count() < gap_ms)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const auto c0 = Clock::now();
      const double with = busy_ms(scratch, iters, 5000);
      const double secs = std::chrono::duration<double>(Clock::now() - c0).count();
      stop = true;
      t.join();
      std::printf(
          "%-5s decode %7.0f img/s alone; beside busy kernels (one batch per %2.0f ms): busy %.4f "
          "ms (%+.1f%%), %.1f batches/s\n",
          name, reps * b.files.size() / s, gap_ms, with, 100 * (with / alone - 1), batches / secs);
    }
    // the host side: launches/s of tiny kernels beside the decode thread (one batch per 38 ms)
    {
      std::atomic<bool> stop{false};
      std::thread t([&] {
        while (!stop) {
          const auto s0 = Clock::now();
          d.decode();
          while (!stop && std::chrono::duration<double, std::milli>(Clock::now() - s0).count() < 38)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
      });
      const double with = launch_rate(scratch, 1.0);
      stop = true;
      t.join();
      std::printf(
          "%-5s tiny launches: %.0f /s alone, %.0f /s beside decodes (%+.1f%%); %.2f ms a batch "
          "inside nvjpegDecodeBatched\n",
          name, storm_alone, with, 100 * (with / storm_alone - 1),
          1e3 * d.call_secs / std::max(d.calls, 1));
    }
  }
  return 0;
}
