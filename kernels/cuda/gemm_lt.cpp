// cuBLASLt GEMM + bias epilogue (see gemm_lt.h).
//
// Row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so cuBLASLt's first
// operand is our B and its second our A (as in matmul.cpp); the bias then runs along the rows of
// the column-major result (length N), which is what CUBLASLT_EPILOGUE_BIAS broadcasts.
// A plan (descriptors + the heuristic's candidate algorithms) is made once per shape, dtype, TF32
// switch and pointer alignment: the heuristic query costs tens of microseconds and a training step
// has a handful of distinct linear shapes. With hg::cuda::gemm_autotune() (the default) the plan's
// first call outside a graph capture times the candidates and keeps the fastest (measured on an
// H100, dev/gemm_algos: the heuristic's first answer is up to 1.27x slower than its best on
// ConvNeXt-T's MLP GEMMs, ~0.9 ms of a 23.5 ms bf16 step).
#include "kernels/cuda/gemm_lt.h"

#include <cublasLt.h>

#include <algorithm>
#include <compare>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/launch.h"

namespace hg::kernels::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(8) << 20;  // cuBLASLt's scratch (split-K, ...)
constexpr int kCandidates = 8;  // heuristic answers kept per plan (ConvNeXt-T's GEMMs get 6-8)
constexpr int kTimedRuns = 5;   // per candidate when autotuning, after one warm-up run

cublasLtHandle_t lt_handle() {
  static cublasLtHandle_t h = [] {
    cublasLtHandle_t handle;
    HG_CUBLAS_CHECK(cublasLtCreate(&handle));
    return handle;
  }();
  return h;
}

/// The largest power of two (at most 256) that divides the address: cuBLASLt picks algorithms
/// for the alignments it is told (256 bytes unless told otherwise).
uint32_t alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && v % a != 0) a /= 2;
  return a;
}

struct Key {
  cublasLtEpilogue_t epilogue;  // DEFAULT, BIAS or BGRADB
  bool ta, tb, bf16, tf32;
  int64_t M, N, K;
  uint32_t align_a, align_b, align_c, align_bias;
  uint32_t align_addend;  // 0: no addend (beta = 0)
  auto operator<=>(const Key&) const = default;
};

struct Plan {
  bool ok = false;  // cuBLASLt has an algorithm for it
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
  std::vector<cublasLtMatmulAlgo_t> algos;  // the heuristic's candidates, its best guess first
  size_t chosen = 0;                        // the one every call runs
  bool tuned = false;                       // chosen by timing (gemm_autotune)
};

template <typename V>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const V& v) {
  HG_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof v));
}

Plan make_plan(const Key& k) {
  Plan p;
  const cudaDataType_t dt = k.bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasComputeType_t ct = k.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  HG_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, ct, CUDA_R_32F));
  const cublasOperation_t op_first = k.tb ? CUBLAS_OP_T : CUBLAS_OP_N;   // our B
  const cublasOperation_t op_second = k.ta ? CUBLAS_OP_T : CUBLAS_OP_N;  // our A
  set_desc(p.op, CUBLASLT_MATMUL_DESC_TRANSA, op_first);
  set_desc(p.op, CUBLASLT_MATMUL_DESC_TRANSB, op_second);
  set_desc(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, k.epilogue);
  // column-major stored shapes: B is (N, K) with ld N, or (K, N) with ld K when transposed;
  // A is (K, M) with ld K, or (M, K) with ld M when transposed; C^T is (N, M) with ld N
  const uint64_t M = uint64_t(k.M), N = uint64_t(k.N), K = uint64_t(k.K);
  HG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.first, dt, k.tb ? K : N, k.tb ? N : K, int64_t(k.tb ? K : N)));
  HG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.second, dt, k.ta ? M : K, k.ta ? K : M, int64_t(k.ta ? M : K)));
  HG_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.out, dt, N, M, int64_t(N)));

  cublasLtMatmulPreference_t pref;
  HG_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  auto set_pref = [&](cublasLtMatmulPreferenceAttributes_t attr, auto v) {
    HG_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &v, sizeof v));
  };
  set_pref(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t(kWorkspaceBytes));
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, k.align_b);  // first operand = our B
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, k.align_a);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, k.align_addend ? k.align_addend : k.align_c);
  set_pref(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, k.align_c);
  cublasLtMatmulHeuristicResult_t results[kCandidates]{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(
      lt_handle(), p.op, p.first, p.second, p.out, p.out, pref, kCandidates, results, &found);
  HG_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || found == 0) return p;  // ok stays false
  HG_CUBLAS_CHECK(st);
  for (int i = 0; i < found; ++i) p.algos.push_back(results[i].algo);
  p.ok = true;
  return p;
}

/// Whether the calling thread's stream is capturing a CUDA graph (no host waits allowed then).
bool capturing() {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  HG_CUDA_CHECK(cudaStreamIsCapturing(hg::cuda::stream(), &status));
  return status != cudaStreamCaptureStatusNone;
}

/// The index of the fastest of `p`'s candidates: each run once (a candidate that cuBLASLt refuses
/// is skipped), then kTimedRuns times on the stream, the median taken. Of the candidates within 2%
/// of the fastest, the heuristic's earliest wins, so near ties go the same way in most processes.
/// Every run writes the call's own output, which the caller then writes once more with the chosen
/// algorithm. Waits on the host: only on a plan's first call, outside captures.
template <class Launch>
size_t fastest(const Plan& p, const Launch& launch) {
  cudaEvent_t start, stop;
  HG_CUDA_CHECK(cudaEventCreate(&start));
  HG_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms(p.algos.size(), std::numeric_limits<float>::infinity());
  for (size_t i = 0; i < p.algos.size(); ++i) {
    if (launch(p.algos[i]) != CUBLAS_STATUS_SUCCESS) continue;
    std::vector<float> runs;
    for (int r = 0; r < kTimedRuns; ++r) {
      HG_CUDA_CHECK(cudaEventRecord(start, hg::cuda::stream()));
      HG_CUBLAS_CHECK(launch(p.algos[i]));
      HG_CUDA_CHECK(cudaEventRecord(stop, hg::cuda::stream()));
      HG_CUDA_CHECK(cudaEventSynchronize(stop));
      float t = 0;
      HG_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
      runs.push_back(t);
    }
    std::nth_element(runs.begin(), runs.begin() + kTimedRuns / 2, runs.end());
    ms[i] = runs[kTimedRuns / 2];
  }
  HG_CUDA_CHECK(cudaEventDestroy(start));
  HG_CUDA_CHECK(cudaEventDestroy(stop));
  const float best = *std::min_element(ms.begin(), ms.end());
  for (size_t i = 0; i < ms.size(); ++i)
    if (ms[i] <= 1.02f * best) return i;
  return 0;  // none ran: the caller's own call reports cuBLASLt's error
}

/// Runs C = op(A) op(B) (+ addend, when not nullptr: cuBLASLt's beta = 1 input, of C's shape)
/// with the epilogue of `epilogue`, whose vector (bias in, or bias gradient out) is `vec`; false
/// when cuBLASLt has no algorithm for it.
template <typename T>
bool run_epilogue(cublasLtEpilogue_t epilogue, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                  const T* A, const T* B, const void* vec, const T* addend, T* C) {
  if (M == 0 || N == 0 || K == 0) return false;
  // the vector's alignment is not a heuristic input; cuBLASLt needs the element size
  if (vec != nullptr && reinterpret_cast<uintptr_t>(vec) % 16 != 0) return false;
  const Key key{epilogue,
                ta,
                tb,
                std::is_same_v<T, hg::bf16>,
                std::is_same_v<T, float> && hg::cuda::allow_tf32(),
                M,
                N,
                K,
                alignment(A),
                alignment(B),
                alignment(C),
                16,
                addend ? alignment(addend) : 0u};
  static std::map<Key, Plan> plans;  // kept for the process: a run has few shapes
  // The map, and the plan's descriptor (its bias pointer is set per call), are shared by every
  // thread: one call at a time (enqueueing the GEMM takes microseconds).
  static std::mutex plans_mu;
  std::lock_guard<std::mutex> lock(plans_mu);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make_plan(key)).first;
  Plan& p = it->second;
  if (!p.ok) return false;
  if (vec != nullptr) set_desc(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, vec);
  const std::shared_ptr<void> ws = scratch(kWorkspaceBytes);
  const float alpha = 1.0f, beta = addend ? 1.0f : 0.0f;
  const auto launch = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(lt_handle(), p.op, &alpha, B, p.first, A, p.second, &beta,
                          addend ? addend : C, p.out, C, p.out, &algo, ws.get(), kWorkspaceBytes,
                          hg::cuda::stream());
  };
  const bool autotune = hg::cuda::gemm_autotune();  // read per call: bench toggles it per row
  if (autotune && !p.tuned && p.algos.size() > 1 && !capturing()) {
    p.chosen = fastest(p, launch);
    p.tuned = true;
  }
  HG_CUBLAS_CHECK(launch(p.algos[autotune ? p.chosen : 0]));
  return true;
}

}  // namespace

template <typename T>
bool gemm_plain(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C) {
  return run_epilogue<T>(CUBLASLT_EPILOGUE_DEFAULT, ta, tb, M, N, K, A, B, nullptr, nullptr, C);
}

template <typename T>
bool gemm_bias(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, const T* B,
               const T* bias, T* C) {
  return run_epilogue<T>(CUBLASLT_EPILOGUE_BIAS, ta, tb, M, N, K, A, B, bias, nullptr, C);
}

template <typename T>
bool gemm_bias_add(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, const T* B,
                   const T* bias, const T* addend, T* C) {
  return run_epilogue<T>(CUBLASLT_EPILOGUE_BIAS, ta, tb, M, N, K, A, B, bias, addend, C);
}

// C (M, N) = A^T B. In cuBLASLt's column-major terms D (N, M) = B^T-view x A-view, its second
// operand is our A, and BGRADB reduces that operand over k: the bias gradient has D's column
// count, M.
template <typename T>
bool gemm_bias_grad(int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C, T* grad_bias) {
  return run_epilogue<T>(CUBLASLT_EPILOGUE_BGRADB, true, false, M, N, K, A, B, grad_bias, nullptr,
                         C);
}

template bool gemm_plain<float>(bool, bool, int64_t, int64_t, int64_t, const float*, const float*,
                                float*);
template bool gemm_plain<hg::bf16>(bool, bool, int64_t, int64_t, int64_t, const hg::bf16*,
                                   const hg::bf16*, hg::bf16*);
template bool gemm_bias<float>(bool, bool, int64_t, int64_t, int64_t, const float*, const float*,
                               const float*, float*);
template bool gemm_bias<hg::bf16>(bool, bool, int64_t, int64_t, int64_t, const hg::bf16*,
                                  const hg::bf16*, const hg::bf16*, hg::bf16*);
template bool gemm_bias_add<float>(bool, bool, int64_t, int64_t, int64_t, const float*,
                                   const float*, const float*, const float*, float*);
template bool gemm_bias_add<hg::bf16>(bool, bool, int64_t, int64_t, int64_t, const hg::bf16*,
                                      const hg::bf16*, const hg::bf16*, const hg::bf16*, hg::bf16*);
template bool gemm_bias_grad<hg::bf16>(int64_t, int64_t, int64_t, const hg::bf16*, const hg::bf16*,
                                       hg::bf16*, hg::bf16*);

}  // namespace hg::kernels::cuda
