// One check macro family for CUDA runtime, cuBLAS and cuDNN status codes. Each throws hg::Error
// with file:line, the expression and the library's own error string. HG_CUDA_LAUNCH_CHECK() goes
// after every kernel launch. The _NOTHROW variants print instead (for destructors).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>

#include "core/error.h"

namespace hg::cuda_detail {
const char* cublas_status_string(cublasStatus_t s);
}  // namespace hg::cuda_detail

#define HG_CUDA_CHECK(expr)                                                                      \
  do {                                                                                           \
    cudaError_t hg_err_ = (expr);                                                                \
    if (hg_err_ != cudaSuccess)                                                                  \
      throw ::hg::Error(::hg::str(__FILE__, ":", __LINE__, ": CUDA error in `", #expr, "`: ",    \
                                  cudaGetErrorString(hg_err_)));                                 \
  } while (0)

#define HG_CUBLAS_CHECK(expr)                                                                    \
  do {                                                                                           \
    cublasStatus_t hg_st_ = (expr);                                                              \
    if (hg_st_ != CUBLAS_STATUS_SUCCESS)                                                         \
      throw ::hg::Error(::hg::str(__FILE__, ":", __LINE__, ": cuBLAS error in `", #expr, "`: ",  \
                                  ::hg::cuda_detail::cublas_status_string(hg_st_)));             \
  } while (0)

#define HG_CUDNN_CHECK(expr)                                                                     \
  do {                                                                                           \
    cudnnStatus_t hg_st_ = (expr);                                                               \
    if (hg_st_ != CUDNN_STATUS_SUCCESS)                                                          \
      throw ::hg::Error(::hg::str(__FILE__, ":", __LINE__, ": cuDNN error in `", #expr, "`: ",   \
                                  cudnnGetErrorString(hg_st_)));                                 \
  } while (0)

/// After every kernel launch: reports launch-configuration errors at the launch site.
#define HG_CUDA_LAUNCH_CHECK() HG_CUDA_CHECK(cudaGetLastError())

#define HG_CUDA_CHECK_NOTHROW(expr)                                                              \
  do {                                                                                           \
    cudaError_t hg_err_ = (expr);                                                                \
    if (hg_err_ != cudaSuccess)                                                                  \
      std::fprintf(stderr, "%s:%d: CUDA error in `%s`: %s\n", __FILE__, __LINE__, #expr,         \
                   cudaGetErrorString(hg_err_));                                                 \
  } while (0)
#define HG_CUDNN_CHECK_NOTHROW(expr)                                                             \
  do {                                                                                           \
    cudnnStatus_t hg_st_ = (expr);                                                               \
    if (hg_st_ != CUDNN_STATUS_SUCCESS)                                                          \
      std::fprintf(stderr, "%s:%d: cuDNN error in `%s`: %s\n", __FILE__, __LINE__, #expr,        \
                   cudnnGetErrorString(hg_st_));                                                 \
  } while (0)
