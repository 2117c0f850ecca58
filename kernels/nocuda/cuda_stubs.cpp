// The CUDA kernel entry points of kernels/*.h for a build without CUDA (HAARGRAD_CUDA=OFF or no
// nvcc): each throws "built without CUDA". The layers then need no #ifdef around their CUDA
// branches: a CPU-only build compiles and links the same dispatch code, and a CUDA tensor can never
// exist there (Tensor::empty on Device::cuda throws first), so these are never reached in practice.
// Compiled only when the CUDA part is not (CMakeLists.txt).
#include "core/dtype.h"
#include "core/error.h"
#include "kernels/conv2d.h"
#include "kernels/cross_entropy.h"
#include "kernels/drop_path.h"
#include "kernels/elementwise.h"
#include "kernels/ema.h"
#include "kernels/gelu.h"
#include "kernels/layer_scale.h"
#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "kernels/matmul.h"
#include "kernels/optimizer.h"
#include "kernels/pool.h"
#include "kernels/reduce.h"
#include "kernels/wtconv.h"

namespace hg::kernels::cuda {
namespace {
[[noreturn]] void no_cuda(const char* fn) {
  throw Error(str(fn, ": haargrad was built without CUDA (configure with -DHAARGRAD_CUDA=ON where nvcc exists)"));
}
}  // namespace

// Every template below is instantiated for the CUDA storage types, float and hg::bf16.
#define HG_STUB(fn) no_cuda(#fn)
#define HG_FOR_TYPES(X) X(float) X(hg::bf16)

template <typename T> void add(const T*, const T*, T*, int64_t) { HG_STUB(add); }
template <typename T> void sub(const T*, const T*, T*, int64_t) { HG_STUB(sub); }
template <typename T> void mul(const T*, const T*, T*, int64_t) { HG_STUB(mul); }
template <typename T> void scale(const T*, float, T*, int64_t) { HG_STUB(scale); }
template <typename T> void axpy(float, const T*, T*, int64_t) { HG_STUB(axpy); }
template <typename T>
void gemm(bool, bool, int64_t, int64_t, int64_t, float, const T*, const T*, float, T*) { HG_STUB(gemm); }
template <typename T> void gelu_forward(const T*, T*, int64_t) { HG_STUB(gelu_forward); }
template <typename T> void gelu_backward(const T*, const T*, T*, int64_t) { HG_STUB(gelu_backward); }
template <typename T>
void gelu_forward_backward(const T*, const T*, T*, T*, int64_t) { HG_STUB(gelu_forward_backward); }
template <typename T>
void linear_forward(int64_t, int64_t, int64_t, const T*, const T*, const T*, T*) { HG_STUB(linear_forward); }
template <typename T>
void linear_backward_input(int64_t, int64_t, int64_t, const T*, const T*, T*) { HG_STUB(linear_backward_input); }
template <typename T>
void linear_backward_weight(int64_t, int64_t, int64_t, const T*, const T*, T*) { HG_STUB(linear_backward_weight); }
template <typename T>
void linear_backward_weight_bias(int64_t, int64_t, int64_t, const T*, const T*, T*, T*) {
  HG_STUB(linear_backward_weight_bias);
}
template <typename T, typename G>
void bias_grad_rows(int64_t, int64_t, const T*, G*) { HG_STUB(bias_grad_rows); }
template <typename T>
void layernorm_forward(const T*, const float*, const float*, T*, float*, float*, int64_t, int64_t, float) {
  HG_STUB(layernorm_forward);
}
template <typename T>
void layernorm_backward(const T*, const float*, const float*, const float*, const T*, T*, float*, float*,
                        int64_t, int64_t) {
  HG_STUB(layernorm_backward);
}
template <typename T>
void layer_scale_forward(const T*, const float*, T*, int64_t, int64_t) { HG_STUB(layer_scale_forward); }
template <typename T>
void residual_layer_scale_forward(const T*, const T*, const float*, T*, int64_t, int64_t) {
  HG_STUB(residual_layer_scale_forward);
}
template <typename T>
void layer_scale_grad_gamma(const T*, const T*, float*, int64_t, int64_t) { HG_STUB(layer_scale_grad_gamma); }
template <typename T>
void layer_scale_fold(const float*, const float*, const float*, T*, T*, int64_t, int64_t) {
  HG_STUB(layer_scale_fold);
}
template <typename T>
void layer_scale_unfold(const T*, const T*, const float*, const float*, const float*, float*,
                        float*, float*, int64_t, int64_t) {
  HG_STUB(layer_scale_unfold);
}
template <typename T>
void linear_forward_add(int64_t, int64_t, int64_t, const T*, const T*, const T*, const T*, T*) {
  HG_STUB(linear_forward_add);
}
template <typename T> void scale_rows(const T*, const float*, T*, int64_t, int64_t) { HG_STUB(scale_rows); }
template <typename T>
void add_scaled_rows(const T*, const T*, const float*, T*, int64_t, int64_t) {
  HG_STUB(add_scaled_rows);
}
template <typename T>
void global_avg_pool_forward(int64_t, int64_t, int64_t, const T*, T*) {
  HG_STUB(global_avg_pool_forward);
}
template <typename T>
void global_avg_pool_backward(int64_t, int64_t, int64_t, const T*, T*) { HG_STUB(global_avg_pool_backward); }
template <typename T>
void conv2d_forward(const Conv2dShape&, const T*, const float*, const float*, T*, Conv2dBackend) {
  HG_STUB(conv2d_forward);
}
template <typename T>
void conv2d_backward_data(const Conv2dShape&, const T*, const float*, T*, Conv2dBackend) {
  HG_STUB(conv2d_backward_data);
}
template <typename T>
void conv2d_backward_weight(const Conv2dShape&, const T*, const T*, float*, Conv2dBackend) {
  HG_STUB(conv2d_backward_weight);
}
template <typename T>
void conv2d_backward_bias(const Conv2dShape&, const T*, float*) { HG_STUB(conv2d_backward_bias); }
template <typename T>
void conv2d_backward_weight_bias(const Conv2dShape&, const T*, const T*, float*, float*,
                                 Conv2dBackend) {
  HG_STUB(conv2d_backward_weight_bias);
}

void conv2d_clear_algorithm_cache() {}  // no cuDNN plans exist

void cross_entropy_forward(const float*, const int64_t*, float*, float*, int64_t, int64_t, float) {
  HG_STUB(cross_entropy_forward);
}
void cross_entropy_backward(const float*, const int64_t*, const float*, const float*, float*,
                            int64_t, int64_t, float) {
  HG_STUB(cross_entropy_backward);
}
void soft_cross_entropy_forward(const float*, const float*, float*, float*, int64_t, int64_t) {
  HG_STUB(soft_cross_entropy_forward);
}
void soft_cross_entropy_backward(const float*, const float*, const float*, const float*, float*,
                                 int64_t, int64_t) {
  HG_STUB(soft_cross_entropy_backward);
}
void ema_update(const EmaChunk*, int64_t, float) { HG_STUB(ema_update); }
void adamw_update(float*, const float*, float*, float*, int64_t, const AdamWHyper&) {
  HG_STUB(adamw_update);
}
void adamw_update_multi(const std::vector<AdamWTensor>&, const float*, const float*, double) {
  HG_STUB(adamw_update_multi);
}
void sgd_update(float*, const float*, float*, int64_t, const SGDHyper&) { HG_STUB(sgd_update); }
void clip_scale(float*, int64_t, const float*, double) { HG_STUB(clip_scale); }
void sum_squares(const std::vector<const float*>&, const std::vector<int64_t>&, float*) {
  HG_STUB(sum_squares);
}
void l2_norm(const std::vector<const float*>&, const std::vector<int64_t>&, float*) {
  HG_STUB(l2_norm);
}
void sum_rows(const float*, int64_t, int64_t, float*) { HG_STUB(sum_rows); }
void sum_rows(const float*, int64_t, int64_t, hg::bf16*) { HG_STUB(sum_rows); }
Tensor wtconv_forward(const Tensor&, const WTConvWeights&, int, WTConvMode, const Tensor&,
                      WTConvSaved*) {
  HG_STUB(wtconv_forward);
}
WTConvGrads wtconv_backward(const Tensor&, const WTConvWeights&, const Tensor&, int, bool,
                            WTConvMode, const Tensor&, const WTConvSaved*) {
  HG_STUB(wtconv_backward);
}
bool wtconv_plane_path(const Shape&, int, int, int, DType, bool) { return false; }
int wtconv_tail_level(const Shape&, int, int levels, DType, bool) { return levels; }

#define HG_INSTANTIATE(T)                                                                         \
  template void add<T>(const T*, const T*, T*, int64_t);                                          \
  template void sub<T>(const T*, const T*, T*, int64_t);                                          \
  template void mul<T>(const T*, const T*, T*, int64_t);                                          \
  template void scale<T>(const T*, float, T*, int64_t);                                           \
  template void axpy<T>(float, const T*, T*, int64_t);                                            \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, float, const T*, const T*, float,  \
                        T*);                                                                      \
  template void gelu_forward<T>(const T*, T*, int64_t);                                           \
  template void gelu_backward<T>(const T*, const T*, T*, int64_t);                                \
  template void gelu_forward_backward<T>(const T*, const T*, T*, T*, int64_t);                    \
  template void linear_forward<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*, T*);   \
  template void linear_backward_input<T>(int64_t, int64_t, int64_t, const T*, const T*, T*);      \
  template void linear_backward_weight<T>(int64_t, int64_t, int64_t, const T*, const T*, T*);     \
  template void linear_backward_weight_bias<T>(int64_t, int64_t, int64_t, const T*, const T*, T*, \
                                               T*);                                               \
  template void bias_grad_rows<T, T>(int64_t, int64_t, const T*, T*);                             \
  template void layernorm_forward<T>(const T*, const float*, const float*, T*, float*, float*,    \
                                     int64_t, int64_t, float);                                    \
  template void layernorm_backward<T>(const T*, const float*, const float*, const float*,         \
                                      const T*, T*, float*, float*, int64_t, int64_t);            \
  template void layer_scale_forward<T>(const T*, const float*, T*, int64_t, int64_t);             \
  template void residual_layer_scale_forward<T>(const T*, const T*, const float*, T*, int64_t,    \
                                                int64_t);                                         \
  template void layer_scale_grad_gamma<T>(const T*, const T*, float*, int64_t, int64_t);          \
  template void layer_scale_fold<T>(const float*, const float*, const float*, T*, T*, int64_t,    \
                                    int64_t);                                                     \
  template void layer_scale_unfold<T>(const T*, const T*, const float*, const float*,             \
                                      const float*, float*, float*, float*, int64_t, int64_t);    \
  template void linear_forward_add<T>(int64_t, int64_t, int64_t, const T*, const T*, const T*,    \
                                      const T*, T*);                                              \
  template void scale_rows<T>(const T*, const float*, T*, int64_t, int64_t);                      \
  template void add_scaled_rows<T>(const T*, const T*, const float*, T*, int64_t, int64_t);       \
  template void global_avg_pool_forward<T>(int64_t, int64_t, int64_t, const T*, T*);              \
  template void global_avg_pool_backward<T>(int64_t, int64_t, int64_t, const T*, T*);             \
  template void conv2d_forward<T>(const Conv2dShape&, const T*, const float*, const float*, T*,   \
                                  Conv2dBackend);                                                 \
  template void conv2d_backward_data<T>(const Conv2dShape&, const T*, const float*, T*,           \
                                        Conv2dBackend);                                           \
  template void conv2d_backward_weight<T>(const Conv2dShape&, const T*, const T*, float*,         \
                                          Conv2dBackend);                                         \
  template void conv2d_backward_bias<T>(const Conv2dShape&, const T*, float*);                    \
  template void conv2d_backward_weight_bias<T>(const Conv2dShape&, const T*, const T*, float*,    \
                                               float*, Conv2dBackend);
HG_FOR_TYPES(HG_INSTANTIATE)
#undef HG_INSTANTIATE
template void bias_grad_rows<hg::bf16, float>(int64_t, int64_t, const hg::bf16*, float*);

}  // namespace hg::kernels::cuda
