// Rows of an NHWC image staged in shared memory, and the sliding register window over them: the
// building blocks of the stride-1 "staged" depthwise kernels (kernels/cuda/depthwise_conv.cu: the
// forward, backward data and weight gradient) and of the fused WTConv synthesis
// (kernels/cuda/wtconv_staged.cuh). A block is 32 channels (one per lane) x some warps; it
// copies the input rows its outputs read, over the padded width, into shared memory with 16-byte
// loads (zeros outside the image): stage_rows (loads through registers, then stores) or
// stage_rows_async (cp.async, for kernels that stage the next rows while computing), and each
// thread then slides a (K + 1) x K window along its column strip: K + 1 shared-memory reads per
// column feed two output rows of K x K taps.
// Compiled as C++17 by nvcc: include only core/tensor.h, core/error.h, kernels/*.h,
// kernels/cuda/*.h.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>

#include "kernels/cuda/context.h"

namespace hg::kernels::cuda {

/// Warps per staged block (block shape (32, kStagedWarps)).
constexpr int kStagedWarps = 4;

/// A staged element as f32 (bf16 widens exactly: its 16 bits are the top of an f32).
template <typename T>
__device__ __forceinline__ float staged_value(const T* p) {
  if constexpr (std::is_same_v<T, float>)
    return *p;
  else
    return __uint_as_float(uint32_t(*reinterpret_cast<const unsigned short*>(p)) << 16);
}

/// A thread's place in a staging walk over [nrows][ncols][VPP] 16-byte vectors that visits
/// vectors tid, tid + kThreads, ...: (m, n) = the staged row and column of its current vector (its
/// channel vector tid % VPP never changes: kThreads is a multiple of VPP). A step is a few adds;
/// deriving (m, n) from each vector's index took two divisions by the runtime ncols, ~40
/// instructions per 16-byte copy with the addressing (SASS of the WTConv synthesis).
template <int VPP, int kThreads>
struct StageWalk {
  static_assert(kThreads % VPP == 0, "a thread keeps its channel vector");
  int m, n, dm, dn;
  __device__ __forceinline__ StageWalk(int tid, int ncols)
      : m(tid / VPP / ncols),
        n(tid / VPP % ncols),
        dm(kThreads / VPP / ncols),
        dn(kThreads / VPP % ncols) {}
  __device__ __forceinline__ void next(int ncols) {
    m += dm;
    n += dn;
    if (n >= ncols) {
      n -= ncols;
      ++m;
    }
  }
};

/// Copies rows [row0, row0 + nrows) x columns [col0, col0 + ncols) x channels [c0, c0 + 32) of the
/// NHWC image `img` (rows H, columns W, channels C) into dst[nrows][ncols][32], zeros outside.
/// 16-byte vectors: needs C a multiple of 16 / sizeof(T) and a 16-byte aligned img. Every thread of
/// the (32, kStagedWarps) block takes part; the caller synchronises before reading dst.
/// Each thread issues kStageBatch loads before it stores any: a block stages 2-3 times the rows
/// it computes, and with one load in flight per thread (a load, its store, the next load) the
/// staging waited one L2/HBM latency per vector, ~20 of them per thread at 56 x 56.
template <typename T>
__device__ __forceinline__ void stage_rows(const T* __restrict__ img, int H, int W, int C, int row0,
                                           int nrows, int col0, int ncols, int c0, uint4* dst) {
  constexpr int VE = 16 / int(sizeof(T)), VPP = 32 / VE;  // elements per vector, vectors per pixel
  constexpr int kStageBatch = 8, kThreads = 32 * kStagedWarps;
  const int n = nrows * ncols * VPP, tid = threadIdx.y * 32 + threadIdx.x;
  const int cc = c0 + tid % VPP * VE;
  StageWalk<VPP, kThreads> at(tid, ncols);
  for (int e0 = tid; e0 < n; e0 += kStageBatch * kThreads) {
    uint4 val[kStageBatch];
#pragma unroll
    for (int u = 0; u < kStageBatch; ++u) {
      const int r = row0 + at.m, col = col0 + at.n;
      val[u] = make_uint4(0, 0, 0, 0);
      if (e0 + u * kThreads < n && r >= 0 && r < H && col >= 0 && col < W && cc < C)
        val[u] = __ldg(reinterpret_cast<const uint4*>(img + (int64_t(r) * W + col) * C + cc));
      at.next(ncols);
    }
#pragma unroll
    for (int u = 0; u < kStageBatch; ++u)
      if (e0 + u * kThreads < n) dst[e0 + u * kThreads] = val[u];
  }
}

/// Starts a 16-byte copy from global `src` to shared `dst` without waiting for it (cp.async,
/// sm_80 and later; a plain copy before); zeros instead when !valid (nothing is read then, but
/// src must still be a mapped address). The copies a thread started land at async_wait.
__device__ __forceinline__ void copy16_async(void* dst, const void* src, bool valid) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
#else
  *static_cast<uint4*>(dst) = valid ? *static_cast<const uint4*>(src) : make_uint4(0, 0, 0, 0);
#endif
}
/// Closes the group of copies this thread started since the last commit.
__device__ __forceinline__ void async_commit() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
/// Waits until at most N of this thread's committed groups are still in flight (the newest N);
/// other threads' copies need a __syncthreads after it.
template <int N>
__device__ __forceinline__ void async_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/// The StageWalk of this thread (threadIdx.y * 32 + threadIdx.x of kThreads) over rows of ncols
/// staged columns of T, at its start: made once per kernel by the kernels that stage item after
/// item (its construction divides by the runtime ncols four times, ~100 instructions: built per
/// staging call, it was ~11% of the WTConv synthesis's instructions, Nsight, twentieth session).
template <typename T, int kThreads>
__device__ __forceinline__ StageWalk<32 / (16 / int(sizeof(T))), kThreads> stage_walk(int ncols) {
  return StageWalk<32 / (16 / int(sizeof(T))), kThreads>(int(threadIdx.y * 32 + threadIdx.x),
                                                         ncols);
}

/// stage_rows, asynchronously: starts the copies (copy16_async) and returns; the block's
/// kThreads threads (threadIdx.y * 32 + threadIdx.x) take part, `at` being each one's
/// stage_walk<T, kThreads>(ncols). Offsets in the image are int32: needs H * W * C < 2^31. The
/// rows land once every thread has waited for its copies (async_commit, async_wait) and the block
/// has synchronised.
template <typename T, int kThreads>
__device__ __forceinline__ void stage_rows_async(
    const T* __restrict__ img, int H, int W, int C, int row0, int nrows, int col0, int ncols,
    int c0, uint4* dst, StageWalk<32 / (16 / int(sizeof(T))), kThreads> at) {
  constexpr int VE = 16 / int(sizeof(T)), VPP = 32 / VE;  // elements per vector, vectors per pixel
  const int n = nrows * ncols * VPP, tid = threadIdx.y * 32 + threadIdx.x;
  const int cc = c0 + tid % VPP * VE;
  const bool cok = cc < C;
  // The source row and column of this thread's vector, and its offset in the image, all stepped
  // with the walk: + (dm rows, dn columns) a step, + (1 row, -ncols columns) at a wrap. Unsigned:
  // positions outside the image may wrap around, and a valid one's offset is exact (< 2^31).
  // (Recomputing the offset per copy was ~23 instructions a 16-byte copy.)
  int r = row0 + at.m, col = col0 + at.n;
  const int col_end = col0 + ncols;
  unsigned off = (unsigned(r) * unsigned(W) + unsigned(col)) * unsigned(C) + unsigned(cc);
  const unsigned step = unsigned((at.dm * W + at.dn) * C), wrap = unsigned((W - ncols) * C);
  for (int e = tid; e < n; e += kThreads) {
    const bool ok = cok && unsigned(r) < unsigned(H) && unsigned(col) < unsigned(W);
    copy16_async(dst + e, img + (ok ? off : 0u), ok);
    r += at.dm;
    col += at.dn;
    off += step;
    if (col >= col_end) {
      col -= ncols;
      ++r;
      off += wrap;
    }
  }
}

/// Buffers of staged rows for staged_items<NB> in the kernels that walk their items (the depthwise
/// weight gradient, the WTConv synthesis) of storage T, given the shared memory `smem_of(nb)` of
/// nb buffers: two where they fit a block, so that the next item's rows are in flight while the
/// block computes this one (in f32 too: one f32 buffer kept more blocks resident at 56 x 56, but
/// two measured faster, docs/fused-wtconv.md section 21); else, in f32, one, so that wide rows
/// (the K = 5 synthesis at W > ~67, the 7x7 weight gradient at OW > ~86: 384 px inputs) keep the
/// staged kernels, as they did with one f32 buffer before; else 0: the caller takes another
/// kernel. bf16 rows that wide take the other kernels, as they always have (one bf16 buffer has
/// never been measured).
template <typename T, typename SmemOf>
int staged_buffers(SmemOf&& smem_of) {
  const size_t max = hg::cuda::max_dynamic_smem();
  if (smem_of(2) <= max) return 2;
  return sizeof(T) == 4 && smem_of(1) <= max ? 1 : 0;
}

/// The block's loop over its work items first, first + step, ... < end, each item's rows staged
/// (stage(item, buf): cp.async copies into buffer buf, e.g. stage_rows_async) and then computed
/// (compute(item, buf), every thread of the block taking part in both). With NB = 2 buffers the
/// next item's copies are in flight while the block computes this one, so staging and computing
/// overlap within a block; with NB = 1 an item is staged, waited for and computed in turn. The
/// waits and barriers between the two are here, in one place: a buffer is restaged only after
/// every thread is done computing from it.
template <int NB, typename Stage, typename Compute>
__device__ __forceinline__ void staged_items(int64_t first, int64_t step, int64_t end,
                                             Stage&& stage, Compute&& compute) {
  static_assert(NB == 1 || NB == 2, "one or two buffers");
  if (first < end) stage(first, 0);
  async_commit();
  int k = 0;
  for (int64_t item = first; item < end; item += step, ++k) {
    const int buf = NB == 2 ? (k & 1) : 0;
    if constexpr (NB == 2) {
      if (item + step < end) stage(item + step, buf ^ 1);
      async_commit();
      async_wait<1>();  // this item's copies: all but the group just started
    } else {
      async_wait<0>();
    }
    __syncthreads();
    compute(item, buf);
    __syncthreads();  // every thread is done with this buffer before it is restaged
    if constexpr (NB == 1) {
      if (item + step < end) stage(item + step, 0);
      async_commit();
    }
  }
}

/// The (K + 1) x K window slid along a column strip of staged rows (xr: staged row 0 at this
/// thread's channel; WS staged columns of 32 channels): win[m][q] = staged row m, column j + q.
/// window_start sets it "at j = ja - 1" (slots q >= 1); window_advance moves it to column j (the
/// shifts become register renames once unrolled) and reads the new column j + K - 1.
template <typename T, int K>
__device__ __forceinline__ void window_start(const T* xr, int WS, int ja, float (&win)[K + 1][K]) {
#pragma unroll
  for (int m = 0; m < K + 1; ++m)
#pragma unroll
    for (int q = 1; q < K; ++q) win[m][q] = staged_value(xr + (m * WS + ja - 1 + q) * 32);
}
template <typename T, int K>
__device__ __forceinline__ void window_advance(const T* xr, int WS, int j, float (&win)[K + 1][K]) {
#pragma unroll
  for (int m = 0; m < K + 1; ++m) {
#pragma unroll
    for (int q = 0; q + 1 < K; ++q) win[m][q] = win[m][q + 1];
    win[m][K - 1] = staged_value(xr + (m * WS + j + K - 1) * 32);
  }
}

/// The K x K taps w at the window's column for both rows of a pair: a0 += sum w[p][q] win[p][q]
/// (the pair's first output row), a1 += sum w[p][q] win[p + 1][q] (its second): 2 K^2 FMAs on the
/// window's K + 1 rows, in row-major tap order.
template <int K>
__device__ __forceinline__ void pair_taps(const float (&w)[K][K], const float (&win)[K + 1][K],
                                          float& a0, float& a1) {
#pragma unroll
  for (int p = 0; p < K; ++p)
#pragma unroll
    for (int q = 0; q < K; ++q) {
      a0 = fmaf(w[p][q], win[p][q], a0);
      a1 = fmaf(w[p][q], win[p + 1][q], a1);
    }
}

}  // namespace hg::kernels::cuda
