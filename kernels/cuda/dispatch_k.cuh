// The one filter-size dispatch of the CUDA convolution kernels. Their windows live in registers
// and their taps are unrolled, so a kernel is compiled for each filter size K of a list; every
// other odd K runs the same kernels' run-time-K code (KT = 0: slower, the same results). Which
// kernels exist for which K: kernels/wtconv.h ("CUDA limits").
#pragma once

#include <type_traits>

namespace hg::kernels::cuda {

/// A list of filter sizes with compiled kernels.
template <int... Ks>
struct CompiledKs {};
/// The depthwise convolution's (forward, backward data, weight gradient; also WTConv's level
/// convolutions on written coefficients and its base weight gradient).
inline constexpr CompiledKs<3, 5, 7> kDepthwiseKs{};
/// The WTConv kernels' (synthesis, Haar + conv, whole-plane, weight gradients; kernels that exist
/// for fewer sizes take their own KT == 0 path for the rest).
inline constexpr CompiledKs<1, 3, 5, 7, 9> kWTConvKs{};

/// Calls f(std::integral_constant<int, KT>{}) once: KT = K when K is in the list, else KT = 0.
template <int... Ks, class F>
void dispatch_k(CompiledKs<Ks...>, int K, F&& f) {
  const bool compiled = ((K == Ks) || ...);
  if (!compiled) {
    f(std::integral_constant<int, 0>{});
    return;
  }
  // the first (only) Ks equal to K; || stops there
  (void)((K == Ks && (f(std::integral_constant<int, Ks>{}), true)) || ...);
}

}  // namespace hg::kernels::cuda
