// CPU 2-D convolution (kernels/conv2d.h): the reference loops, im2col + GEMM for dense convs, and
// channels-innermost direct loops for depthwise convs.
#include "kernels/conv2d.h"

#include <cstring>
#include <memory>
#include <tuple>

#include "core/memory.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"

namespace hg::kernels {

namespace {
auto key(const Conv2dShape& s) {
  return std::make_tuple(s.N, s.H, s.W, s.C, s.O, s.KH, s.KW, s.stride, s.pad, s.groups);
}
}  // namespace

bool Conv2dShape::operator<(const Conv2dShape& o) const { return key(*this) < key(o); }
bool Conv2dShape::operator==(const Conv2dShape& o) const { return key(*this) == key(o); }

Conv2dShape make_conv2d_shape(int64_t N, int64_t H, int64_t W, int64_t C, int64_t O, int64_t KH,
                              int64_t KW, int64_t stride, int64_t pad, int64_t groups) {
  Conv2dShape s;
  s.N = N, s.H = H, s.W = W, s.C = C, s.O = O, s.KH = KH, s.KW = KW;
  s.stride = stride, s.pad = pad, s.groups = groups;
  s.OH = (H + 2 * pad - KH) / stride + 1;
  s.OW = (W + 2 * pad - KW) / stride + 1;
  return s;
}

namespace cpu {
namespace {

// Scratch memory from the caching allocator (Category::workspace), so repeated steps reuse blocks
// instead of paying for fresh pages every call.
template <typename T>
struct Scratch {
  std::shared_ptr<void> mem;
  T* ptr;
  explicit Scratch(int64_t n) {
    memory::CategoryScope scope(Category::workspace);
    mem = memory::allocate(static_cast<size_t>(n > 0 ? n : 1) * sizeof(T), Device::cpu);
    ptr = static_cast<T*>(mem.get());
  }
};

// Index helpers for the NHWC activations and the (O, Cg, KH, KW) weight.
inline int64_t xi(const Conv2dShape& s, int64_t n, int64_t h, int64_t w, int64_t c) {
  return ((n * s.H + h) * s.W + w) * s.C + c;
}
inline int64_t yi(const Conv2dShape& s, int64_t n, int64_t h, int64_t w, int64_t o) {
  return ((n * s.OH + h) * s.OW + w) * s.O + o;
}
inline int64_t wi(const Conv2dShape& s, int64_t o, int64_t c, int64_t kh, int64_t kw) {
  return ((o * s.Cg() + c) * s.KH + kh) * s.KW + kw;
}

// A 1x1, stride 1, unpadded conv is a plain matrix product on the NHWC rows: no im2col needed.
bool is_pointwise(const Conv2dShape& s) {
  return s.KH == 1 && s.KW == 1 && s.stride == 1 && s.pad == 0;
}

// ---- dense (groups == 1): im2col + GEMM -----------------------------------------------------
// col is (M, K) with M = N*OH*OW rows and K = KH*KW*C columns ordered (kh, kw, c), so each
// (kh, kw) tap is a contiguous run of C channels of x; the weight is reordered to match:
// wr (O, KH, KW, C).

template <typename T>
void weight_to_ohwc(const Conv2dShape& s, const T* w, T* wr) {
  for (int64_t o = 0; o < s.O; ++o)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t kh = 0; kh < s.KH; ++kh)
        for (int64_t kw = 0; kw < s.KW; ++kw)
          wr[((o * s.KH + kh) * s.KW + kw) * s.C + c] = w[wi(s, o, c, kh, kw)];
}

template <typename T>
void weight_from_ohwc(const Conv2dShape& s, const T* wr, T* w) {
  for (int64_t o = 0; o < s.O; ++o)
    for (int64_t c = 0; c < s.C; ++c)
      for (int64_t kh = 0; kh < s.KH; ++kh)
        for (int64_t kw = 0; kw < s.KW; ++kw)
          w[wi(s, o, c, kh, kw)] = wr[((o * s.KH + kh) * s.KW + kw) * s.C + c];
}

template <typename T>
void im2col(const Conv2dShape& s, const T* x, T* col) {
  const int64_t K = s.KH * s.KW * s.C, rows = s.N * s.OH * s.OW;
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t ow = r % s.OW, oh = (r / s.OW) % s.OH, n = r / (s.OW * s.OH);
    T* dst = col + r * K;
    const int64_t iw0 = ow * s.stride - s.pad;
    for (int64_t kh = 0; kh < s.KH; ++kh, dst += s.KW * s.C) {
      const int64_t ih = oh * s.stride - s.pad + kh;
      if (ih < 0 || ih >= s.H) {
        std::memset(dst, 0, sizeof(T) * s.KW * s.C);
      } else if (iw0 >= 0 && iw0 + s.KW <= s.W) {
        // The whole kernel row is inside: KW*C contiguous values (all of patchify takes this path).
        std::memcpy(dst, x + xi(s, n, ih, iw0, 0), sizeof(T) * s.KW * s.C);
      } else {
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          const int64_t iw = iw0 + kw;
          if (iw < 0 || iw >= s.W)
            std::memset(dst + kw * s.C, 0, sizeof(T) * s.C);
          else
            std::memcpy(dst + kw * s.C, x + xi(s, n, ih, iw, 0), sizeof(T) * s.C);
        }
      }
    }
  }
}

// Adds every column entry back to the input pixel it was copied from. Images are independent, so
// the parallel loop over n writes disjoint memory and the order within an image is fixed.
template <typename T>
void col2im(const Conv2dShape& s, const T* col, T* gx) {
  const int64_t K = s.KH * s.KW * s.C;
  std::memset(gx, 0, sizeof(T) * s.N * s.H * s.W * s.C);
#pragma omp parallel for
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow) {
        const T* src = col + ((n * s.OH + oh) * s.OW + ow) * K;
        for (int64_t kh = 0; kh < s.KH; ++kh) {
          const int64_t ih = oh * s.stride - s.pad + kh;
          for (int64_t kw = 0; kw < s.KW; ++kw, src += s.C) {
            const int64_t iw = ow * s.stride - s.pad + kw;
            if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
            T* dst = gx + xi(s, n, ih, iw, 0);
            for (int64_t c = 0; c < s.C; ++c) dst[c] += src[c];
          }
        }
      }
}

template <typename T>
void dense_forward(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y) {
  const int64_t M = s.N * s.OH * s.OW, K = s.KH * s.KW * s.C;
  Scratch<T> wr(s.O * K);
  weight_to_ohwc(s, w, wr.ptr);
  const T* col = x;
  Scratch<T> col_mem(is_pointwise(s) ? 0 : M * K);
  if (!is_pointwise(s)) {
    im2col(s, x, col_mem.ptr);
    col = col_mem.ptr;
  }
  if (bias) {
    for (int64_t m = 0; m < M; ++m) std::memcpy(y + m * s.O, bias, sizeof(T) * s.O);
  }
  gemm<T>(false, true, M, s.O, K, T(1), col, wr.ptr, bias ? T(1) : T(0), y);  // y (+)= col wr^T
}

template <typename T>
void dense_backward_data(const Conv2dShape& s, const T* gy, const T* w, T* gx) {
  const int64_t M = s.N * s.OH * s.OW, K = s.KH * s.KW * s.C;
  Scratch<T> wr(s.O * K);
  weight_to_ohwc(s, w, wr.ptr);
  if (is_pointwise(s)) {
    gemm<T>(false, false, M, K, s.O, T(1), gy, wr.ptr, T(0), gx);
    return;
  }
  Scratch<T> gcol(M * K);
  gemm<T>(false, false, M, K, s.O, T(1), gy, wr.ptr, T(0), gcol.ptr);  // gcol = gy wr
  col2im(s, gcol.ptr, gx);
}

template <typename T>
void dense_backward_weight(const Conv2dShape& s, const T* x, const T* gy, T* gw) {
  const int64_t M = s.N * s.OH * s.OW, K = s.KH * s.KW * s.C;
  const T* col = x;
  Scratch<T> col_mem(is_pointwise(s) ? 0 : M * K);
  if (!is_pointwise(s)) {
    im2col(s, x, col_mem.ptr);
    col = col_mem.ptr;
  }
  Scratch<T> gwr(s.O * K);
  gemm<T>(true, false, s.O, K, M, T(1), gy, col, T(0), gwr.ptr);  // gwr = gy^T col
  weight_from_ohwc(s, gwr.ptr, gw);
}

// ---- depthwise (groups == C == O): direct loops, channels innermost --------------------------
// The weight (C, 1, KH, KW) is transposed to wt (KH, KW, C) so the innermost loop runs over
// contiguous channels of x, y and wt alike (vectorises).

template <typename T>
void weight_to_tap_major(const Conv2dShape& s, const T* w, T* wt) {
  for (int64_t c = 0; c < s.C; ++c)
    for (int64_t k = 0; k < s.KH * s.KW; ++k) wt[k * s.C + c] = w[c * s.KH * s.KW + k];
}

template <typename T>
void depthwise_forward(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y) {
  const int64_t C = s.C;
  Scratch<T> wt(s.KH * s.KW * C);
  weight_to_tap_major(s, w, wt.ptr);
#pragma omp parallel for
  for (int64_t r = 0; r < s.N * s.OH; ++r) {
    const int64_t n = r / s.OH, oh = r % s.OH;
    for (int64_t ow = 0; ow < s.OW; ++ow) {
      T* out = y + yi(s, n, oh, ow, 0);
      for (int64_t c = 0; c < C; ++c) out[c] = bias ? bias[c] : T(0);
      for (int64_t kh = 0; kh < s.KH; ++kh) {
        const int64_t ih = oh * s.stride - s.pad + kh;
        if (ih < 0 || ih >= s.H) continue;
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          const int64_t iw = ow * s.stride - s.pad + kw;
          if (iw < 0 || iw >= s.W) continue;
          const T* in = x + xi(s, n, ih, iw, 0);
          const T* tap = wt.ptr + (kh * s.KW + kw) * C;
          for (int64_t c = 0; c < C; ++c) out[c] += in[c] * tap[c];
        }
      }
    }
  }
}

// Gather form: each input pixel collects the output pixels that read it, so rows are independent.
template <typename T>
void depthwise_backward_data(const Conv2dShape& s, const T* gy, const T* w, T* gx) {
  const int64_t C = s.C;
  Scratch<T> wt(s.KH * s.KW * C);
  weight_to_tap_major(s, w, wt.ptr);
#pragma omp parallel for
  for (int64_t r = 0; r < s.N * s.H; ++r) {
    const int64_t n = r / s.H, ih = r % s.H;
    for (int64_t iw = 0; iw < s.W; ++iw) {
      T* out = gx + xi(s, n, ih, iw, 0);
      for (int64_t c = 0; c < C; ++c) out[c] = T(0);
      for (int64_t kh = 0; kh < s.KH; ++kh) {
        const int64_t th = ih + s.pad - kh;  // = oh * stride when output row oh reads ih via kh
        if (th < 0 || th % s.stride != 0 || th / s.stride >= s.OH) continue;
        const int64_t oh = th / s.stride;
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          const int64_t tw = iw + s.pad - kw;
          if (tw < 0 || tw % s.stride != 0 || tw / s.stride >= s.OW) continue;
          const T* g = gy + yi(s, n, oh, tw / s.stride, 0);
          const T* tap = wt.ptr + (kh * s.KW + kw) * C;
          for (int64_t c = 0; c < C; ++c) out[c] += g[c] * tap[c];
        }
      }
    }
  }
}

// One tap per parallel iteration: each (kh, kw) row of the gradient is summed by one thread in a
// fixed order, so the result does not depend on the thread count.
template <typename T>
void depthwise_backward_weight(const Conv2dShape& s, const T* x, const T* gy, T* gw) {
  const int64_t C = s.C, taps = s.KH * s.KW;
  Scratch<T> gwt(taps * C);
#pragma omp parallel for
  for (int64_t k = 0; k < taps; ++k) {
    const int64_t kh = k / s.KW, kw = k % s.KW;
    T* acc = gwt.ptr + k * C;
    for (int64_t c = 0; c < C; ++c) acc[c] = T(0);
    for (int64_t n = 0; n < s.N; ++n)
      for (int64_t oh = 0; oh < s.OH; ++oh) {
        const int64_t ih = oh * s.stride - s.pad + kh;
        if (ih < 0 || ih >= s.H) continue;
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          const int64_t iw = ow * s.stride - s.pad + kw;
          if (iw < 0 || iw >= s.W) continue;
          const T* in = x + xi(s, n, ih, iw, 0);
          const T* g = gy + yi(s, n, oh, ow, 0);
          for (int64_t c = 0; c < C; ++c) acc[c] += g[c] * in[c];
        }
      }
  }
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < taps; ++k) gw[c * taps + k] = gwt.ptr[k * C + c];
}

}  // namespace

// ---- reference ---------------------------------------------------------------------------------

template <typename T>
void conv2d_forward_reference(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y) {
  const int64_t Cg = s.Cg(), Og = s.Og();
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow)
        for (int64_t o = 0; o < s.O; ++o) {
          const int64_t g = o / Og;
          T acc = bias ? bias[o] : T(0);
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t ih = oh * s.stride - s.pad + kh, iw = ow * s.stride - s.pad + kw;
              if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;  // zero padding
              for (int64_t c = 0; c < Cg; ++c)
                acc += x[xi(s, n, ih, iw, g * Cg + c)] * w[wi(s, o, c, kh, kw)];
            }
          y[yi(s, n, oh, ow, o)] = acc;
        }
}

template <typename T>
void conv2d_backward_data_reference(const Conv2dShape& s, const T* gy, const T* w, T* gx) {
  const int64_t Cg = s.Cg(), Og = s.Og();
  std::memset(gx, 0, sizeof(T) * s.N * s.H * s.W * s.C);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t oh = 0; oh < s.OH; ++oh)
      for (int64_t ow = 0; ow < s.OW; ++ow)
        for (int64_t o = 0; o < s.O; ++o) {
          const int64_t g = o / Og;
          const T go = gy[yi(s, n, oh, ow, o)];
          for (int64_t kh = 0; kh < s.KH; ++kh)
            for (int64_t kw = 0; kw < s.KW; ++kw) {
              const int64_t ih = oh * s.stride - s.pad + kh, iw = ow * s.stride - s.pad + kw;
              if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
              for (int64_t c = 0; c < Cg; ++c)
                gx[xi(s, n, ih, iw, g * Cg + c)] += go * w[wi(s, o, c, kh, kw)];
            }
        }
}

template <typename T>
void conv2d_backward_weight_reference(const Conv2dShape& s, const T* x, const T* gy, T* gw) {
  const int64_t Cg = s.Cg(), Og = s.Og();
  for (int64_t o = 0; o < s.O; ++o)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t kh = 0; kh < s.KH; ++kh)
        for (int64_t kw = 0; kw < s.KW; ++kw) {
          const int64_t g = o / Og;
          T acc = 0;
          for (int64_t n = 0; n < s.N; ++n)
            for (int64_t oh = 0; oh < s.OH; ++oh)
              for (int64_t ow = 0; ow < s.OW; ++ow) {
                const int64_t ih = oh * s.stride - s.pad + kh, iw = ow * s.stride - s.pad + kw;
                if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) continue;
                acc += gy[yi(s, n, oh, ow, o)] * x[xi(s, n, ih, iw, g * Cg + c)];
              }
          gw[wi(s, o, c, kh, kw)] = acc;
        }
}

// ---- dispatch ----------------------------------------------------------------------------------

template <typename T>
void conv2d_forward(const Conv2dShape& s, const T* x, const T* w, const T* bias, T* y) {
  if (s.groups == 1)
    dense_forward(s, x, w, bias, y);
  else if (s.depthwise())
    depthwise_forward(s, x, w, bias, y);
  else
    conv2d_forward_reference(s, x, w, bias, y);
}

template <typename T>
void conv2d_backward_data(const Conv2dShape& s, const T* gy, const T* w, T* gx) {
  if (s.groups == 1)
    dense_backward_data(s, gy, w, gx);
  else if (s.depthwise())
    depthwise_backward_data(s, gy, w, gx);
  else
    conv2d_backward_data_reference(s, gy, w, gx);
}

template <typename T>
void conv2d_backward_weight(const Conv2dShape& s, const T* x, const T* gy, T* gw) {
  if (s.groups == 1)
    dense_backward_weight(s, x, gy, gw);
  else if (s.depthwise())
    depthwise_backward_weight(s, x, gy, gw);
  else
    conv2d_backward_weight_reference(s, x, gy, gw);
}

template <typename T>
void conv2d_backward_bias(const Conv2dShape& s, const T* gy, T* gb) {
  bias_grad_rows<T>(s.N * s.OH * s.OW, s.O, gy, gb);
}

#define HG_INSTANTIATE_CONV2D(T)                                                                   \
  template void conv2d_forward<T>(const Conv2dShape&, const T*, const T*, const T*, T*);           \
  template void conv2d_backward_data<T>(const Conv2dShape&, const T*, const T*, T*);               \
  template void conv2d_backward_weight<T>(const Conv2dShape&, const T*, const T*, T*);             \
  template void conv2d_backward_bias<T>(const Conv2dShape&, const T*, T*);                         \
  template void conv2d_forward_reference<T>(const Conv2dShape&, const T*, const T*, const T*, T*); \
  template void conv2d_backward_data_reference<T>(const Conv2dShape&, const T*, const T*, T*);     \
  template void conv2d_backward_weight_reference<T>(const Conv2dShape&, const T*, const T*, T*);
HG_INSTANTIATE_CONV2D(float)
HG_INSTANTIATE_CONV2D(double)
#undef HG_INSTANTIATE_CONV2D

}  // namespace cpu
}  // namespace hg::kernels
