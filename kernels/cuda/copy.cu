// Strided copy and fill on the GPU (see copy.h).
#include <cstdint>
#include <cstring>

#include "core/cuda_stream.h"
#include "kernels/cuda/bf16.cuh"
#include "kernels/cuda/check.h"
#include "kernels/cuda/copy.h"
#include "kernels/cuda/launch.h"

namespace hg::kernels::cuda {
namespace {

constexpr int kMaxDims = 8;
struct Layout {
  int ndim;
  int64_t shape[kMaxDims];
  int64_t dst_strides[kMaxDims];
  int64_t src_strides[kMaxDims];
};

template <typename T>
__global__ void strided_copy_kernel(T* dst, const T* src, Layout l, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, d_off = 0, s_off = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      int64_t idx = rem % l.shape[d];
      rem /= l.shape[d];
      d_off += idx * l.dst_strides[d];
      s_off += idx * l.src_strides[d];
    }
    dst[d_off] = src[s_off];
  }
}

template <typename T>
__global__ void fill_kernel(T* dst, T value, Layout l, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, d_off = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
      d_off += (rem % l.shape[d]) * l.dst_strides[d];
      rem /= l.shape[d];
    }
    dst[d_off] = value;
  }
}

Layout make_layout(const Tensor& dst, const Tensor* src) {
  HG_CHECK(dst.ndim() <= kMaxDims, "cuda copy: at most ", kMaxDims, " dims, got ", dst.describe());
  Layout l{};
  l.ndim = dst.ndim();
  for (int d = 0; d < l.ndim; ++d) {
    l.shape[d] = dst.shape()[d];
    l.dst_strides[d] = dst.strides()[d];
    l.src_strides[d] = src ? src->strides()[d] : 0;
  }
  return l;
}

template <typename D, typename S>
__global__ void convert_kernel(D* dst, const S* src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dst[i] = from_f32<D>(to_f32(src[i]));
}

// copy_many's table: items, and the first block of each (block b copies chunk b - first[i] of the
// item i with first[i] <= b < first[i + 1]). ~3.6 KB, within the 4 KB of kernel parameters every
// CUDA version takes.
constexpr int kCopyItems = 128;
constexpr int64_t kCopyChunk = 64 * 1024;  // bytes a block: 256 threads x 16 B x 16
struct CopyTable {
  CopyItem item[kCopyItems];
  int first[kCopyItems + 1];
  int n;
};

__global__ void copy_many_kernel(const __grid_constant__ CopyTable t) {
  const int b = int(blockIdx.x);
  int lo = 0, hi = t.n - 1;  // the last item whose first block is <= b
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (t.first[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  const CopyItem c = t.item[lo];
  const int64_t begin = int64_t(b - t.first[lo]) * kCopyChunk;
  const int64_t end = begin + kCopyChunk < c.bytes ? begin + kCopyChunk : c.bytes;
  const auto* src = static_cast<const unsigned char*>(c.src);
  auto* dst = static_cast<unsigned char*>(c.dst);
  int64_t done = begin;  // where the byte loop starts
  if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15) == 0) {
    const int64_t end16 = end / 16 * 16;  // chunks start at multiples of 16
    for (int64_t i = begin + 16 * int64_t(threadIdx.x); i < end16; i += 16 * int64_t(blockDim.x))
      *reinterpret_cast<uint4*>(dst + i) = *reinterpret_cast<const uint4*>(src + i);
    done = end16;
  }
  for (int64_t i = done + threadIdx.x; i < end; i += blockDim.x) dst[i] = src[i];
}

}  // namespace

void copy_many(const std::vector<CopyItem>& items) {
  CopyTable table{};
  int blocks = 0;
  auto launch = [&] {
    if (table.n == 0) return;
    table.first[table.n] = blocks;
    copy_many_kernel<<<unsigned(blocks), 256, 0, hg::cuda::stream()>>>(table);
    HG_CUDA_LAUNCH_CHECK();
    table.n = 0;
    blocks = 0;
  };
  for (const CopyItem& c : items) {
    HG_CHECK(c.bytes >= 0 && (c.bytes == 0 || (c.dst && c.src)), "copy_many: bad item of ", c.bytes,
             " bytes");
    if (c.bytes == 0) continue;
    const int64_t chunks = (c.bytes + kCopyChunk - 1) / kCopyChunk;
    HG_CHECK(chunks <= (int64_t(1) << 30), "copy_many: an item of ", c.bytes,
             " bytes is too large");
    if (table.n == kCopyItems || blocks + chunks > (int64_t(1) << 30)) launch();
    table.item[table.n] = c;
    table.first[table.n] = blocks;
    ++table.n;
    blocks += int(chunks);
  }
  launch();
}

void convert(const Tensor& dst, const Tensor& src) {
  HG_CHECK(dst.shape() == src.shape() && dst.is_contiguous() && src.is_contiguous(),
           "cuda convert: ", dst.describe(), " <- ", src.describe());
  const int64_t n = dst.numel();
  if (n == 0) return;
  if (dst.dtype() == DType::bf16 && src.dtype() == DType::f32)
    convert_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(dev(dst.data<bf16>()),
                                                                          src.data<float>(), n);
  else if (dst.dtype() == DType::f32 && src.dtype() == DType::bf16)
    convert_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(dst.data<float>(),
                                                                          dev(src.data<bf16>()), n);
  else
    throw Error(str("cuda convert: ", dtype_name(src.dtype()), " -> ", dtype_name(dst.dtype()),
                    " not supported (f32 <-> bf16)"));
  HG_CUDA_LAUNCH_CHECK();
}

void convert(const float* src, hg::bf16* dst, int64_t n) {
  if (n == 0) return;
  convert_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(dev(dst), src, n);
  HG_CUDA_LAUNCH_CHECK();
}

void convert(const hg::bf16* src, float* dst, int64_t n) {
  if (n == 0) return;
  convert_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(dst, dev(src), n);
  HG_CUDA_LAUNCH_CHECK();
}

void strided_copy(const Tensor& dst, const Tensor& src) {
  HG_CHECK(dst.shape() == src.shape() && dst.dtype() == src.dtype(),
           "cuda strided_copy: ", dst.describe(), " <- ", src.describe());
  const int64_t n = dst.numel();
  if (n == 0) return;
  Layout l = make_layout(dst, &src);
  switch (dtype_size(dst.dtype())) {
    case 1:
      strided_copy_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(
          (uint8_t*)dst.data_ptr(), (const uint8_t*)src.data_ptr(), l, n);
      break;
    case 2:
      strided_copy_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(
          (uint16_t*)dst.data_ptr(), (const uint16_t*)src.data_ptr(), l, n);
      break;
    case 4:
      strided_copy_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(
          (uint32_t*)dst.data_ptr(), (const uint32_t*)src.data_ptr(), l, n);
      break;
    default:
      strided_copy_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(
          (uint64_t*)dst.data_ptr(), (const uint64_t*)src.data_ptr(), l, n);
      break;
  }
  HG_CUDA_LAUNCH_CHECK();
}

void fill(const Tensor& dst, double value) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  Layout l = make_layout(dst, nullptr);
  switch (dst.dtype()) {
    case DType::f32:
      fill_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>((float*)dst.data_ptr(),
                                                                         float(value), l, n);
      break;
    case DType::f64:
      fill_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>((double*)dst.data_ptr(),
                                                                         value, l, n);
      break;
    case DType::i64:
      fill_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>((int64_t*)dst.data_ptr(),
                                                                         int64_t(value), l, n);
      break;
    case DType::i32:
      fill_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>((int32_t*)dst.data_ptr(),
                                                                         int32_t(value), l, n);
      break;
    case DType::u8:
    case DType::boolean:
      fill_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>((uint8_t*)dst.data_ptr(),
                                                                         uint8_t(value), l, n);
      break;
    case DType::bf16:
      fill_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(
          (uint16_t*)dst.data_ptr(), f32_to_bf16(float(value)), l, n);
      break;
    case DType::f16:
      fill_kernel<<<grid_stride_blocks(n), 256, 0, hg::cuda::stream()>>>(
          (uint16_t*)dst.data_ptr(), f32_to_f16(float(value)), l, n);
      break;
  }
  HG_CUDA_LAUNCH_CHECK();
}

}  // namespace hg::kernels::cuda
