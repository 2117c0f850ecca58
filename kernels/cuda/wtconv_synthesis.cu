// The fused WTConv2d's one-pass synthesis on the GPU: the base depthwise conv of the input plus
// every level output t_l (and a level tail's term) at its position, in one launch, no
// reconstruction stored (docs/fused-wtconv.md). The forward's y and the backward's grad_x (the
// same synthesis of dL/dy with flipped filters) both run it (wtconv_fused.cu): the staged kernel
// (wtconv_staged.cuh), the 4-channel kernel (wtconv_vec.cuh) or the one-channel synth_kernel
// below, whichever takes the shape.
#include <algorithm>

#include "core/cuda_stream.h"
#include "kernels/cuda/wtconv_fused.cuh"
#include "kernels/cuda/wtconv_staged.cuh"
#include "kernels/cuda/wtconv_vec.cuh"

namespace hg::kernels::cuda::wtconv_detail {
namespace {

// ---- (b) one-pass synthesis, fused with the base depthwise conv ----
// y(b, io, jo, c) at input pixel (i, j) = (io*stride, jo*stride):
//   bf[c] + sum_k wb[k][c] x(i+kh-r, j+kw-r, c)
//         + sum_l 2^-(l+1) unhaar(t_l(i>>(l+1), j>>(l+1)), bits l).
// One thread: channel c, TQ consecutive outputs of a row (TQ > 1 only when stride == 1).
template <int KT, int TQ, typename T>
__global__ void synth_kernel(const T* __restrict__ x, int B, int H, int W, int C, int Ho, int Wo,
                             int stride, int K_rt, const float* __restrict__ wb,
                             const float* __restrict__ bf, Levels<T> lv, T* __restrict__ y) {
  constexpr int KA = KT > 0 ? KT : kMaxK;
  const int K = KT > 0 ? KT : K_rt, r = K / 2;
  const int nqb = (Wo + TQ - 1) / TQ;
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * Ho * nqb * C) return;
  const int c = int(idx % C);
  int64_t rest = idx / C;
  const int jb = int(rest % nqb);
  rest /= nqb;
  const int io = int(rest % Ho), b = int(rest / Ho);
  const int i = io * stride, j0 = jb * TQ * stride;
  float acc[TQ];
#pragma unroll
  for (int t = 0; t < TQ; ++t) acc[t] = bf ? bf[c] : 0.f;
#pragma unroll
  for (int kh = 0; kh < KA; ++kh) {
    if (kh >= K) break;
    const int ii = i + kh - r;
    if (ii < 0 || ii >= H) continue;
    const T* row = x + (int64_t(b) * H + ii) * W * C + c;
    float win[TQ + KA - 1];
#pragma unroll
    for (int m = 0; m < TQ + KA - 1; ++m)
      if (m < TQ + K - 1) {
        const int jj = j0 - r + m;
        win[m] = (jj >= 0 && jj < W) ? ld(row + int64_t(jj) * C) : 0.f;
      }
#pragma unroll
    for (int kw = 0; kw < KA; ++kw)
      if (kw < K) {
        const float wv = wb[int64_t(kh * K + kw) * C + c];
#pragma unroll
        for (int t = 0; t < TQ; ++t) acc[t] = fmaf(wv, win[t + kw], acc[t]);
      }
  }
#pragma unroll
  for (int t = 0; t < TQ; ++t) {
    const int jo = jb * TQ + t;
    if (jo >= Wo) break;
    const int j = jo * stride;
    // unrolled over the level bound so the L independent loads are in flight together
    float f = 0.5f, s = 0.f;
#pragma unroll
    for (int l = 0; l < kMaxLevels; ++l, f *= 0.5f) {
      if (l >= lv.L) break;
      const T* tp = lv.t[l] +
                    ((int64_t(b) * lv.hp[l] + (i >> (l + 1))) * lv.wp[l] + (j >> (l + 1))) * 4 * C +
                    c;
      const float4 tv = make_float4(ld(tp), ld(tp + C), ld(tp + 2 * C), ld(tp + 3 * C));  // planes
      s = fmaf(f, unhaar_at(tv, (i >> l) & 1, (j >> l) & 1), s);
    }
    st(y + ((int64_t(b) * Ho + io) * Wo + jo) * C + c, acc[t] + s);
  }
}

constexpr int kTQ = 4;  // outputs per thread along a row (register reuse of the input window)

/// Row pairs per block of the staged synthesis: more when rows are short.
inline int synth_staged_pairs(int W) { return W >= 16 ? 2 : 4; }

/// The staged synthesis (wtconv_staged.cuh: levels 1.. and the level tail, if any, summed onto
/// level 0's grid by levels_synth_kernel, or by the synthesis kernel itself where level 1 is the
/// only split level after level 0, then the staged base conv adding level 0 and that sum) when it
/// takes the shape (synth_staged_takes; stride 1, the caller's case; at least one level; the
/// folded weights, t_l aligned, as workspace tensors are). Returns false, having done nothing,
/// otherwise; a level tail (its levels are in no t_l) can only be synthesised here, so the caller
/// has checked.
template <typename T>
bool try_synth_staged(const T* in, int B, int H, int W, int C, int K, const float* wb,
                      const float* bf, const Levels<T>& lv, const LevelTail& tail, T* out) {
  const int PR = synth_staged_pairs(W);
  bool ok = lv.L >= 1 && synth_staged_takes(in, B, H, W, C, K, out) && aligned16(wb) &&
            (!bf || aligned16(bf)) && (!tail.r || (aligned16(tail.r) && tail.s == lv.L));
  for (int l = 0; l < lv.L; ++l) ok = ok && aligned4<T>(lv.t[l]);  // levels_synth's loads
  ok = ok && aligned16(lv.t[0]);                                   // staged with the rows
  if (!ok) return false;
  const int64_t groups = int64_t(B) * ((H + 2 * PR - 1) / (2 * PR));
  const int hp = lv.hp[0], wp = lv.wp[0];
  // Exactly one split level after level 0 (with or without a tail at s = 2): the kernel stages
  // t_1 and the tail's rows and forms R itself (no levels_synth launch, no R round trip).
  // (With two buffers only: the configuration measured and tested. synth_staged_smem sizes level
  // 1's rows from W, as the grids follow from it.)
  const bool level1 =
      lv.L == 2 && PR % 2 == 0 && lv.wp[1] == wtconv_level_size(wp) && aligned16(lv.t[1]) &&
      (!tail.r || (aligned16(tail.r) && tail.h == lv.hp[1] && tail.w == lv.wp[1])) &&
      synth_staged_smem<T>(K, PR, W, true, 2) <= hg::cuda::max_dynamic_smem();
  const SynthLevel1<T> l1{level1 ? lv.t[1] : nullptr, level1 ? tail.r : nullptr,
                          level1 ? lv.hp[1] : 0, level1 ? lv.wp[1] : 0};
  const int nb = level1 ? 2 : staged_buffers<T>([&](int n) {
    return synth_staged_smem<T>(K, PR, W, false, n);
  });  // > 0: synth_staged_takes
  const size_t smem = synth_staged_smem<T>(K, PR, W, level1, nb);
  // R: levels >= 1 (and the tail) on level 0's grid; none with one level and no tail. With the
  // tail at s = 1 its term is R itself (grid 1 is level 0's grid).
  Tensor R;
  const float* Rp = tail.s == 1 ? tail.r : nullptr;
  if (lv.L >= 2 && !level1) {
    R = workspace({B, hp, wp, C});
    const dim3 grid(unsigned((int64_t(wp) * (C / 4) + 255) / 256), unsigned(hp), unsigned(B));
    levels_synth_kernel<<<grid, 256, 0, hg::cuda::stream()>>>(lv, tail, hp, wp, C, R.data<float>());
    HG_CUDA_LAUNCH_CHECK();
    Rp = R.data<float>();
  }
  const SynthDims d{B, H, W, C, hp, wp};
  dispatch_k(kWTConvKs, K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (KT == 3 || KT == 5 || KT == 7) {
      const auto kernel = synth_staged<T, KT>(level1, nb);
      // as many blocks as fit the device at once, each walking its channel group's items
      const int cgroups = (C + 31) / 32;
      const int64_t fit = int64_t(hg::cuda::resident_blocks(reinterpret_cast<const void*>(kernel),
                                                            32 * kSynthWarps, smem)) *
                          hg::cuda::multiprocessor_count() / cgroups;
      const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(groups, fit));
      kernel<<<dim3(unsigned(blocks), unsigned(cgroups)), dim3(32, kSynthWarps), smem,
               hg::cuda::stream()>>>(in, wb, bf, d, PR, lv.t[0], Rp, l1, out);
      HG_CUDA_LAUNCH_CHECK();
    }
  });
  return true;
}

}  // namespace

/// Whether the 4-channel synthesis (synth_v4_kernel, stride 1) takes in and out of storage T, C
/// channels, base filters of size K: C % 4 == 0, K 3 .. 9, both aligned to 4 elements.
template <typename T>
bool synth_vec_takes(const T* in, int C, int K, const T* out) {
  return C % 4 == 0 && K >= 3 && K <= 9 && aligned4<T>(in) && aligned4<T>(out);
}

/// Whether the staged synthesis (try_synth_staged) takes a stride-1 synthesis of `in` into `out`,
/// both (B, H, W, C) of storage T, with level-0 filters of size K: K = 3, 5 or 7, C a multiple of
/// 16 bytes' elements, 16-byte aligned tensors, staged rows within the device's shared memory.
/// f32 too since the thirty-second session: in the fifth it had lost to synth_v4_kernel in fp32
/// (H200, 96/56/5 train 1.181 -> 1.247 ms: f32 rows take twice the shared memory), but the kernel
/// has since been pipelined (a second buffer, its level-0 rows staged); on an H100 (B = 64, K = 5)
/// with one f32 buffer fp32 96/56/5 0.858 -> 0.802 ms and 192/28/4 0.518 -> 0.432
/// (docs/fused-wtconv.md section 20), with two where they fit 0.768 and 0.416 (section 21); one
/// where two do not (staged_buffers).
template <typename T>
bool synth_staged_takes(const T* in, int B, int H, int W, int C, int K, const T* out) {
  const int PR = synth_staged_pairs(W);
  const int64_t groups = int64_t(B) * ((H + 2 * PR - 1) / (2 * PR));
  return (K == 3 || K == 5 || K == 7) && C % (16 / int(sizeof(T))) == 0 && aligned16(in) &&
         aligned16(out) &&
         staged_buffers<T>([&](int n) { return synth_staged_smem<T>(K, PR, W, false, n); }) > 0 &&
         groups <= INT32_MAX && (C + 31) / 32 <= 65535 &&
         int64_t(H) * W * C < INT32_MAX &&  // stage_rows_async's offsets in one image
         B <= 65535 && H <= 131070;         // levels_synth_kernel's grid: (.., hp, B)
}

/// base conv of `in` + one-pass synthesis of t (and of the level tail, if any) into out (B, Ho, Wo,
/// C); in, out and t[l], the level outputs (B, hp, wp, 4, C), of storage T.
template <typename T>
void synthesis(const T* in, int B, int H, int W, int C, int Ho, int Wo, int stride, int K,
               const Folded& f, const std::vector<Tensor>& t, const LevelTail& tail, T* out) {
  Levels<T> lv{};
  lv.L = static_cast<int>(t.size());
  for (int l = 0; l < lv.L; ++l) {
    lv.t[l] = typed<T>(t[l]);
    lv.hp[l] = static_cast<int>(t[l].size(1));
    lv.wp[l] = static_cast<int>(t[l].size(2));
  }
  const float* bf = f.base_b.defined() ? f.base_b.data<float>() : nullptr;
  if (stride == 1 && try_synth_staged(in, B, H, W, C, K, f.base_w.data<float>(), bf, lv, tail, out))
    return;
  bool vec = stride == 1 && synth_vec_takes(in, C, K, out) && aligned16(f.base_w.data<float>()) &&
             (!bf || aligned16(bf)) && (!tail.r || aligned16(tail.r));
  for (int l = 0; l < lv.L; ++l) vec = vec && aligned4<T>(lv.t[l]);
  HG_CHECK(vec || tail.r == nullptr, "wtconv (cuda, fused): a level tail for a synthesis that ",
           "neither the staged nor the 4-channel kernel takes (B ", B, ", H ", H, ", W ", W, ", C ",
           C, ", K ", K, ")");
  dispatch_k(kWTConvKs, K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (KT >= 3) {
      if (vec) {
        const VecLaunch v = vec_launch(C, int64_t(B) * H * ((W + kSynthTW - 1) / kSynthTW));
        const size_t smem = sizeof(float) * KT * KT * v.block.x * 4;
        synth_v4_kernel<KT, T><<<v.grid, v.block, smem, hg::cuda::stream()>>>(
            in, B, H, W, C, f.base_w.data<float>(), bf, lv, tail, out);
        HG_CUDA_LAUNCH_CHECK();
        return;
      }
    }
    if (stride == 1) {
      const int64_t n = int64_t(B) * Ho * ((Wo + kTQ - 1) / kTQ) * C;
      synth_kernel<KT, kTQ, T><<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(
          in, B, H, W, C, Ho, Wo, 1, K, f.base_w.data<float>(), bf, lv, out);
    } else {
      const int64_t n = int64_t(B) * Ho * Wo * C;
      synth_kernel<KT, 1, T><<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(
          in, B, H, W, C, Ho, Wo, stride, K, f.base_w.data<float>(), bf, lv, out);
    }
    HG_CUDA_LAUNCH_CHECK();
  });
}

#define HG_INSTANTIATE(T)                                                                     \
  template bool synth_vec_takes<T>(const T*, int, int, const T*);                             \
  template bool synth_staged_takes<T>(const T*, int, int, int, int, int, const T*);           \
  template void synthesis<T>(const T*, int, int, int, int, int, int, int, int, const Folded&, \
                             const std::vector<Tensor>&, const LevelTail&, T*);
HG_INSTANTIATE(float)
HG_INSTANTIATE(__nv_bfloat16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda::wtconv_detail
