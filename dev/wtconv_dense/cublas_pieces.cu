// Kernel lab (twenty-ninth session): the dense small-map WTConv (README.md) with every product on
// cuBLAS instead of hand-written mma kernels, timed piece by piece. The lab's earlier rounds read
// NHWC directly and lost in the layout (per-lane 32-bit words, M re-read per 16-32 images) and in
// the weight gradient's contraction lists. Here the activations are first transposed to per-channel
// planes [C][B][HWp] (HWp = H W rounded up to 8, zero padded), so that every product is a plain
// (strided batched) GEMM:
//   M      (HWp^2 x C)  = E (HWp^2 x P8) . W~ (P8 x C)                 bf16 in, f32 sums, bf16 out
//   Y_c    (HWp x B)    = M_c (HWp x HWp) . X_c (HWp x B)               batched over c
//   GX_c   (HWp x B)    = M_c^T . G_c                                    batched over c
//   dM_c   (HWp x HWp)  = G_c . X_c^T                                    batched, f32 out
//   dW~    (P8 x C)     = E^T (P8 x HWp^2) . dM (HWp^2 x C)               TF32 (E is exact in it)
// Values are random: this file measures time only (the product's tests check the values).
//
// Usage: build/dev/wtconv_dense/wtconv_cublas_pieces [reps] (a line per shape: each piece's median
// us over reps). The twenty-ninth session's run (H100) had no opt-in for the transpositions' shared
// memory above 48 KB: its 28 x 28 rows' to_planes / from_planes launches failed and the program
// stopped before B = 128; the opt-in below, and the timing through dev/lab_util.cuh (the same
// medians of CUDA-event times, on cudaStreamPerThread), are added since, not yet run.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "dev/lab_util.cuh"

using bf16 = __nv_bfloat16;

// NHWC [B][HW][C] -> planes [C][B][HWp]; block: image blockIdx.y, channels 32 blockIdx.x.
__global__ void to_planes(const bf16* __restrict__ x, int B, int HW, int HWp, int C,
                          bf16* __restrict__ out) {
  extern __shared__ bf16 s[];  // [32][HWp + 2]
  const int b = blockIdx.y, c0 = blockIdx.x * 32, pitch = HWp + 2;
  for (int i = threadIdx.x; i < HW * 16; i += blockDim.x) {
    const int q = i / 16, cp = i % 16;
    const __nv_bfloat162 v =
        *reinterpret_cast<const __nv_bfloat162*>(x + (size_t(b) * HW + q) * C + c0 + 2 * cp);
    s[(2 * cp) * pitch + q] = v.x;
    s[(2 * cp + 1) * pitch + q] = v.y;
  }
  __syncthreads();
  const int h2 = HWp / 2;
  for (int i = threadIdx.x; i < 32 * h2; i += blockDim.x) {
    const int c = i / h2, q = 2 * (i % h2);
    __nv_bfloat162 v;
    v.x = q < HW ? s[c * pitch + q] : __float2bfloat16(0.f);
    v.y = q + 1 < HW ? s[c * pitch + q + 1] : __float2bfloat16(0.f);
    *reinterpret_cast<__nv_bfloat162*>(out + (size_t(c0 + c) * B + b) * HWp + q) = v;
  }
}

// planes [C][B][HWp] (+ bias[c]) -> NHWC.
__global__ void from_planes(const bf16* __restrict__ in, const float* __restrict__ bias, int B,
                            int HW, int HWp, int C, bf16* __restrict__ y) {
  extern __shared__ bf16 s[];
  const int b = blockIdx.y, c0 = blockIdx.x * 32, pitch = HWp + 2;
  const int h2 = HWp / 2;
  for (int i = threadIdx.x; i < 32 * h2; i += blockDim.x) {
    const int c = i / h2, q = 2 * (i % h2);
    const __nv_bfloat162 v =
        *reinterpret_cast<const __nv_bfloat162*>(in + (size_t(c0 + c) * B + b) * HWp + q);
    s[c * pitch + q] = v.x;
    s[c * pitch + q + 1] = v.y;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < HW * 16; i += blockDim.x) {
    const int q = i / 16, cp = i % 16, c = c0 + 2 * cp;
    __nv_bfloat162 v;
    v.x = __float2bfloat16(__bfloat162float(s[(2 * cp) * pitch + q]) + bias[c]);
    v.y = __float2bfloat16(__bfloat162float(s[(2 * cp + 1) * pitch + q]) + bias[c + 1]);
    *reinterpret_cast<__nv_bfloat162*>(y + (size_t(b) * HW + q) * C + c) = v;
  }
}

// Deterministic pseudo-random values in [-scale, scale) (a hash of the index: fast for the
// 28 x 28 basis's 265 M entries).
template <typename T>
__global__ void fill(T* p, size_t n, float scale, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    unsigned h = unsigned(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    p[i] = T(scale * (float(h & 0xffffff) / 8388608.f - 1.f));
  }
}

template <typename T>
T* dev_random(size_t n, float scale, unsigned seed) {
  T* p;
  CK(cudaMalloc(&p, n * sizeof(T)));
  fill<<<1024, 256, 0, cudaStreamPerThread>>>(p, n, scale, seed);
  CK(cudaGetLastError());
  return p;
}

void run(cublasHandle_t h, int B, int H, int W, int C, int K, int L, int reps) {
  const int HW = H * W, HWp = (HW + 7) / 8 * 8, P = K * K * (1 + 4 * L), P8 = (P + 7) / 8 * 8;
  const long long HW2 = (long long)HWp * HWp;
  bf16* x = dev_random<bf16>(size_t(B) * HW * C, 1.f, 1);
  bf16* g = dev_random<bf16>(size_t(B) * HW * C, 1.f, 2);
  bf16* Eb = dev_random<bf16>(size_t(HW2) * P8, 0.1f, 3);
  float* Ef = dev_random<float>(size_t(HW2) * P8, 0.1f, 4);
  bf16* Wt = dev_random<bf16>(size_t(P8) * C, 0.1f, 5);
  float* bias = dev_random<float>(C, 0.1f, 6);
  bf16 *xp, *gp, *yp, *M, *y, *dMb;
  float *dM, *dW;
  const size_t planes = size_t(C) * B * HWp;
  CK(cudaMalloc(&xp, planes * 2));
  CK(cudaMalloc(&gp, planes * 2));
  CK(cudaMalloc(&yp, planes * 2));
  CK(cudaMalloc(&y, size_t(B) * HW * C * 2));
  CK(cudaMalloc(&M, size_t(HW2) * C * 2));
  CK(cudaMalloc(&dM, size_t(HW2) * C * 4));
  CK(cudaMalloc(&dMb, size_t(HW2) * C * 2));
  CK(cudaMalloc(&dW, size_t(P8) * C * 4));
  const float one = 1.f, zero = 0.f;
  const size_t smem = 32 * (HWp + 2) * 2;
  const dim3 tg(C / 32, B);
  CK(cudaFuncSetAttribute(to_planes, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  CK(cudaFuncSetAttribute(from_planes, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  auto t_in = [&] { to_planes<<<tg, 256, smem, cudaStreamPerThread>>>(x, B, HW, HWp, C, xp); };
  auto t_out = [&] {
    from_planes<<<tg, 256, smem, cudaStreamPerThread>>>(yp, bias, B, HW, HWp, C, y);
  };
  auto mbuild = [&] {
    CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, int(HW2), C, P8, &one, Eb, CUDA_R_16BF, int(HW2),
                    Wt, CUDA_R_16BF, P8, &zero, M, CUDA_R_16BF, int(HW2), CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT));
  };
  auto apply = [&](cublasOperation_t op, const bf16* in, bf16* out) {
    CB(cublasGemmStridedBatchedEx(h, op, CUBLAS_OP_N, HWp, B, HWp, &one, M, CUDA_R_16BF, HWp, HW2,
                                  in, CUDA_R_16BF, HWp, (long long)B * HWp, &zero, out, CUDA_R_16BF,
                                  HWp, (long long)B * HWp, C, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
  };
  auto dm = [&] {
    CB(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, HWp, HWp, B, &one, gp, CUDA_R_16BF,
                                  HWp, (long long)B * HWp, xp, CUDA_R_16BF, HWp, (long long)B * HWp,
                                  &zero, dM, CUDA_R_32F, HWp, HW2, C, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
  };
  auto dm_bf16 = [&] {
    CB(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_T, HWp, HWp, B, &one, gp, CUDA_R_16BF,
                                  HWp, (long long)B * HWp, xp, CUDA_R_16BF, HWp, (long long)B * HWp,
                                  &zero, dMb, CUDA_R_16BF, HWp, HW2, C, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
  };
  auto contract = [&] {
    CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, P8, C, int(HW2), &one, Ef, CUDA_R_32F, int(HW2),
                    dM, CUDA_R_32F, int(HW2), &zero, dW, CUDA_R_32F, P8,
                    CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
  };
  auto contract_bf16 = [&] {
    CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, P8, C, int(HW2), &one, Eb, CUDA_R_16BF, int(HW2),
                    dMb, CUDA_R_16BF, int(HW2), &zero, dW, CUDA_R_32F, P8, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT));
  };
  CK(cudaMemset(gp, 0, planes * 2));
  t_in();
  float r[10];
  r[0] = 1000.f * median_ms(t_in, reps);
  r[1] = 1000.f * median_ms(t_out, reps);
  r[2] = 1000.f * median_ms(mbuild, reps);
  r[3] = 1000.f * median_ms([&] { apply(CUBLAS_OP_N, xp, yp); }, reps);
  r[4] = 1000.f * median_ms([&] { apply(CUBLAS_OP_T, gp, yp); }, reps);
  r[5] = 1000.f * median_ms(dm, reps);
  r[6] = 1000.f * median_ms(contract, reps);
  r[7] = 1000.f * median_ms(dm_bf16, reps);
  r[8] = 1000.f * median_ms(contract_bf16, reps);
  const float fwd = r[0] + r[2] + r[3] + r[1];
  const float bwd = r[0] + r[2] + r[4] + r[1] + r[0] + r[5] + r[6];
  std::printf(
      "C %4d HxW %2dx%-2d L %d B %3d | to_planes %6.1f from_planes %6.1f M %6.1f apply %6.1f "
      "applyT %6.1f dM %6.1f contract(tf32) %6.1f | dM bf16 %6.1f contract bf16 %6.1f | fwd ~%6.1f "
      "bwd ~%6.1f train ~%6.1f us\n",
      C, H, W, L, B, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], fwd, bwd, fwd + bwd);
  for (void* p : {(void*)x, (void*)g, (void*)Eb, (void*)Ef, (void*)Wt, (void*)bias, (void*)xp,
                  (void*)gp, (void*)yp, (void*)y, (void*)M, (void*)dM, (void*)dMb, (void*)dW})
    CK(cudaFree(p));
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s\n", prop.name);
  cublasHandle_t h;
  CB(cublasCreate(&h));
  CB(cublasSetStream(h, cudaStreamPerThread));  // the stream lab_util.cuh times
  for (int B : {64, 128}) {
    run(h, B, 14, 14, 384, 5, 3, reps);
    run(h, B, 7, 7, 768, 5, 2, reps);
    run(h, B, 28, 28, 192, 5, 4, reps);
  }
  CB(cublasDestroy(h));
  return 0;
}
