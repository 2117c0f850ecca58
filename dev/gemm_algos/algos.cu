// Kernel lab (not the product): how far cuBLASLt's first heuristic answer is from its best
// algorithm on ConvNeXt-T's MLP GEMMs (bf16, f32 sums, B = 128, 224 px), per stage. For each of a
// block's six GEMMs (fc1 and fc2: forward with the bias epilogue (fc2 also adding the residual),
// input gradient, weight gradient with the bias-gradient epilogue as the product runs them) it asks
// cuBLASLt for up to 16 algorithms, times each (CUDA events, median of `reps`), and prints the
// heuristic's first, the best and its rank; the input gradients also with cublasGemmEx's default
// (what kernels/cuda/matmul.cpp calls).
//
// Usage: gemm_algos_lab [reps]
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dev/lab_util.cuh"

namespace {

using bf = __nv_bfloat16;
constexpr size_t kWorkspace = size_t(8) << 20;  // the product's (gemm_lt.cpp)

struct Gemm {
  const char* name;
  bool ta, tb;  // row-major C (M, N) = op(A) op(B), A (M, K) or (K, M) when ta, B (K, N) or (N, K)
  int64_t M, N, K;
  cublasLtEpilogue_t epilogue;
  bool addend;  // beta = 1 with C's shape (fc2's residual)
};

struct Buffers {
  bf *A, *B, *C, *D, *vec;
};

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T (gemm_lt.cpp's convention).
struct Desc {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t first{}, second{}, out{};
};

Desc make_desc(const Gemm& g) {
  Desc d;
  CB(cublasLtMatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t of = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                          os = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  CB(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &of, sizeof of));
  CB(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &os, sizeof os));
  CB(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &g.epilogue,
                                    sizeof g.epilogue));
  const uint64_t M = g.M, N = g.N, K = g.K;
  CB(cublasLtMatrixLayoutCreate(&d.first, CUDA_R_16BF, g.tb ? K : N, g.tb ? N : K,
                                int64_t(g.tb ? K : N)));
  CB(cublasLtMatrixLayoutCreate(&d.second, CUDA_R_16BF, g.ta ? M : K, g.ta ? K : M,
                                int64_t(g.ta ? M : K)));
  CB(cublasLtMatrixLayoutCreate(&d.out, CUDA_R_16BF, N, M, int64_t(N)));
  return d;
}

// false when cuBLASLt refuses the algorithm at run time
bool run_gemm(cublasLtHandle_t lt, const Gemm& g, const Desc& d, const cublasLtMatmulAlgo_t& algo,
              const Buffers& b, void* ws) {
  if (g.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    const void* vec = b.vec;
    CB(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &vec, sizeof vec));
  }
  const float alpha = 1.0f, beta = g.addend ? 1.0f : 0.0f;
  return cublasLtMatmul(lt, d.op, &alpha, b.B, d.first, b.A, d.second, &beta, g.addend ? b.D : b.C,
                        d.out, b.C, d.out, &algo, ws, kWorkspace,
                        cudaStreamPerThread) == CUBLAS_STATUS_SUCCESS;
}

void measure(cublasLtHandle_t lt, cublasHandle_t blas, const Gemm& g, const Buffers& b, void* ws,
             int reps) {
  const Desc d = make_desc(g);
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t wsb = kWorkspace;
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb,
                                          sizeof wsb));
  std::vector<cublasLtMatmulHeuristicResult_t> res(16);
  int found = 0;
  CB(cublasLtMatmulAlgoGetHeuristic(lt, d.op, d.first, d.second, d.out, d.out, pref, 16, res.data(),
                                    &found));
  float first = 0, best = 1e30f;
  int best_i = -1;
  int refused = 0;
  for (int i = 0; i < found; ++i) {
    if (!run_gemm(lt, g, d, res[size_t(i)].algo, b, ws)) {
      ++refused;
      continue;
    }
    const float ms = median_ms([&] { run_gemm(lt, g, d, res[size_t(i)].algo, b, ws); }, reps);
    if (i == 0) first = ms;
    if (ms < best) best = ms, best_i = i;
  }
  const double flops = 2.0 * double(g.M) * double(g.N) * double(g.K);
  std::printf(
      "  %-10s M %7lld N %5lld K %7lld: %2d algorithms (%d refused); first %.4f ms (%.0f "
      "TFLOP/s), best %.4f ms (#%d, %.0f TFLOP/s): first / best %.2f",
      g.name, (long long)g.M, (long long)g.N, (long long)g.K, found, refused, first,
      flops / (first * 1e9), best, best_i, flops / (best * 1e9), first / best);
  if (g.epilogue == CUBLASLT_EPILOGUE_DEFAULT && !g.ta && !g.addend) {
    // the product's input gradient: cublasGemmEx, row-major C = A B as column-major C^T = B^T A^T
    const float alpha = 1.0f, beta = 0.0f;
    const float ms = median_ms(
        [&] {
          CB(cublasGemmEx(blas, g.tb ? CUBLAS_OP_T : CUBLAS_OP_N, CUBLAS_OP_N, int(g.N), int(g.M),
                          int(g.K), &alpha, b.B, CUDA_R_16BF, int(g.tb ? g.K : g.N), b.A,
                          CUDA_R_16BF, int(g.K), &beta, b.C, CUDA_R_16BF, int(g.N),
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        },
        reps);
    std::printf("; cublasGemmEx %.4f ms", ms);
  }
  std::printf("\n");
  CB(cublasLtMatmulPreferenceDestroy(pref));
}

bf* alloc_random(size_t n, uint32_t seed) {
  std::vector<uint16_t> h(n);
  uint32_t s = seed;
  for (auto& e : h) {
    s = s * 1664525u + 1013904223u;
    const float v = (float(s >> 8) / float(1 << 24) - 0.5f) * 0.2f;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    e = uint16_t(bits >> 16);
  }
  bf* p = nullptr;
  CK(cudaMalloc(&p, n * 2));
  CK(cudaMemcpy(p, h.data(), n * 2, cudaMemcpyHostToDevice));
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  cublasLtHandle_t lt;
  cublasHandle_t blas;
  CB(cublasLtCreate(&lt));
  CB(cublasCreate(&blas));
  CB(cublasSetStream(blas, cudaStreamPerThread));
  void* ws = nullptr;
  CK(cudaMalloc(&ws, kWorkspace));
  const int64_t Ms[4] = {128 * 56 * 56, 128 * 28 * 28, 128 * 14 * 14, 128 * 7 * 7};
  const int64_t Cs[4] = {96, 192, 384, 768};
  for (int s = 0; s < 4; ++s) {
    const int64_t M = Ms[s], C = Cs[s], H = 4 * C;
    std::printf("stage %d: M %lld, C %lld, hidden %lld (bf16)\n", s + 1, (long long)M, (long long)C,
                (long long)H);
    const size_t big = size_t(M) * size_t(H);
    Buffers b{alloc_random(big, 1), alloc_random(big, 2), alloc_random(big, 3),
              alloc_random(big, 4), alloc_random(size_t(H), 5)};
    const Gemm gemms[] = {
        {"fc1 fwd", false, true, M, H, C, CUBLASLT_EPILOGUE_BIAS, false},
        {"fc1 dgrad", false, false, M, C, H, CUBLASLT_EPILOGUE_DEFAULT, false},
        {"fc1 wgrad", true, false, H, C, M, CUBLASLT_EPILOGUE_BGRADB, false},
        {"fc2 fwd", false, true, M, C, H, CUBLASLT_EPILOGUE_BIAS, true},
        {"fc2 dgrad", false, false, M, H, C, CUBLASLT_EPILOGUE_DEFAULT, false},
        {"fc2 wgrad", true, false, C, H, M, CUBLASLT_EPILOGUE_BGRADB, false},
    };
    for (const Gemm& g : gemms) measure(lt, blas, g, b, ws, reps);
    for (bf* p : {b.A, b.B, b.C, b.D, b.vec}) CK(cudaFree(p));
  }
  return 0;
}
