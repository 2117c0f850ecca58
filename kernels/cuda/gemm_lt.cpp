// cuBLASLt GEMM + bias epilogue (see gemm_lt.h).
//
// Row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, so cuBLASLt's first
// operand is our B and its second our A (as in matmul.cpp); the bias then runs along the rows of
// the column-major result (length N), which is what CUBLASLT_EPILOGUE_BIAS broadcasts.
// A plan (descriptors + the heuristic's algorithm) is made once per shape, dtype, TF32 switch and
// pointer alignment: the heuristic query costs tens of microseconds and a training step has a
// handful of distinct linear shapes.
#include "kernels/cuda/gemm_lt.h"

#include <cublasLt.h>

#include <compare>
#include <map>
#include <memory>
#include <mutex>

#include "kernels/cuda/check.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/launch.h"

namespace hg::kernels::cuda {
namespace {

constexpr size_t kWorkspaceBytes = size_t(8) << 20;  // cuBLASLt's scratch (split-K, ...)

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
  cublasLtEpilogue_t epilogue;  // BIAS or BGRADB
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
  cublasLtMatmulAlgo_t algo{};
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
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt_handle(), p.op, p.first, p.second, p.out,
                                                           p.out, pref, 1, &result, &found);
  HG_CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || found == 0) return p;  // ok stays false
  HG_CUBLAS_CHECK(st);
  p.algo = result.algo;
  p.ok = true;
  return p;
}

/// Runs C = op(A) op(B) (+ addend, when not nullptr: cuBLASLt's beta = 1 input, of C's shape)
/// with the epilogue of `epilogue`, whose vector (bias in, or bias gradient out) is `vec`; false
/// when cuBLASLt has no algorithm for it.
template <typename T>
bool run_epilogue(cublasLtEpilogue_t epilogue, bool ta, bool tb, int64_t M, int64_t N, int64_t K,
                  const T* A, const T* B, const void* vec, const T* addend, T* C) {
  if (M == 0 || N == 0 || K == 0) return false;
  // the vector's alignment is not a heuristic input; cuBLASLt needs the element size
  if (reinterpret_cast<uintptr_t>(vec) % 16 != 0) return false;
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
  const Plan& p = it->second;
  if (!p.ok) return false;
  set_desc(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, vec);
  const std::shared_ptr<void> ws = scratch(kWorkspaceBytes);
  const float alpha = 1.0f, beta = addend ? 1.0f : 0.0f;
  HG_CUBLAS_CHECK(cublasLtMatmul(lt_handle(), p.op, &alpha, B, p.first, A, p.second, &beta,
                                 addend ? addend : C, p.out, C, p.out, &p.algo, ws.get(),
                                 kWorkspaceBytes, hg::cuda::stream()));
  return true;
}

}  // namespace

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
