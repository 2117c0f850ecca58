// The fused WTConv2d's split path on the GPU (docs/fused-wtconv.md, sections 7 and 11): per level,
// the Haar pass and the depthwise conv over the materialised coefficients (the forward's level
// outputs t_l), and the level gradients and folded-weight gradients of the backward, unfolded into
// the wavelet_weight and wavelet_scale gradients; the one-launch Haar + conv and Haar + weight
// gradient (bf16 and f32); and the level tail, which hands the levels from the first small LL band
// to the whole-plane kernels (wtconv_plane_host.cu). wtconv_fused.cu runs them between the fold and
// the synthesis.
#include <algorithm>
#include <cmath>

#include "core/cuda_stream.h"
#include "kernels/conv2d.h"
#include "kernels/cuda/wtconv_fused.cuh"
#include "kernels/cuda/wtconv_haar_conv.cuh"
#include "kernels/cuda/wtconv_haar_wgrad.cuh"
#include "kernels/cuda/wtconv_plane.cuh"
#include "kernels/cuda/wtconv_vec.cuh"
#include "kernels/depthwise_conv.h"

namespace hg::kernels::cuda::wtconv_detail {

// ---- the split path's level tail
// ----------------------------------------------------------------- Below the first LL band small
// enough for the whole-plane kernels (14 x 14: level 1 of a 28 x 28 map, level 2 of a 56 x 56 one),
// the split path's levels are a WTConv of their own without a base conv: the plane kernels run them
// as one launch each way (wtconv_plane.cuh, PlaneOut) instead of a Haar pass and a level conv
// (forward) or two Haar passes, a level conv and a weight gradient (backward) per level, each a
// short latency-bound launch. Their output is a term of the synthesis (wtconv_vec.cuh, LevelTail),
// which the staged and the 4-channel synthesis kernels read, so the tail runs only where one of
// them takes the shape (C % 4 == 0, aligned tensors).

namespace {

/// lp from level s on: the level tail's levels as the plane kernels number them.
LevelParams levels_from(const LevelParams& lp, int s) {
  LevelParams t{};
  for (int l = s; l < kMaxLevels; ++l) {
    t.ww[l - s] = lp.ww[l];
    t.ws[l - s] = lp.ws[l];
    t.gww[l - s] = lp.gww[l];
    t.gws[l - s] = lp.gws[l];
  }
  return t;
}

/// A tail's output r = 2^-s rec_s, f32 (B, grid s, C).
Tensor tail_output(int B, LevelGrid grid, int C, int s, LevelTail* tail) {
  Tensor r = workspace({B, grid.h, grid.w, C});
  *tail = LevelTail{r.data<float>(), s, grid.h, grid.w};
  return r;
}

}  // namespace

/// The first level s >= 1 whose LL band (grid s of d) the whole-plane kernels take as a level
/// tail of L - s levels (its geometry in *g), when the synthesis of in into out (B, grid 0, C,
/// stride 1) can read a tail's term (the staged or the 4-channel kernel); L (no tail) otherwise.
template <typename T>
int tail_level(const T* in, const T* out, int B, int C, int K, const WTConvLevels& d, int L,
               bool backward, PlaneGeom* g) {
  const LevelGrid g0 = grid_of(d, 0);
  if (!synth_staged_takes(in, B, g0.h, g0.w, C, K, out) && !synth_vec_takes(in, C, K, out))
    return L;
  for (int s = 1; s < L; ++s) {
    const LevelGrid gs = grid_of(d, s);
    if (plane_takes<T>(B, gs.h, gs.w, K, L - s, 1, backward, /*base=*/false, g)) return s;
  }
  return L;
}

// ---- the level convolutions with materialised coefficients ("split") ----------------------------
// Forming the Haar coefficients inside the conv re-forms each one K times per row and
// (TQ + K - 1) / TQ times along it; on the H200 that arithmetic, not memory traffic, bounded the
// level convs. Writing each level's coefficients once (n_l reads, n_l writes) and running the
// depthwise kernels of depthwise_conv.cu on them as a 4C-channel NHWC tensor is faster there
// (docs/fused-wtconv.md, section 7; the on-the-fly kernels are in the lab, dev/wtconv/). The
// coefficients, the level outputs and the level gradients have the layer's storage type T, as
// autocast would store these conv inputs and outputs: the bf16 level convs are the depthwise
// kernels' bf16 instantiations (f32 accumulation; their filters, the folded f32 weights, rounded
// to bf16 as kernels/conv2d.h states).

namespace {

/// The depthwise conv of one level: 4C channels (4c+s) on the (hp, wp) grid, "same" padding.
Conv2dShape level_shape(int B, int hp, int wp, int C, int K) {
  return make_conv2d_shape(B, hp, wp, 4 * C, 4 * C, K, K, 1, K / 2, 4 * C);
}

/// A level's next LL band (B, grid, C) of storage T into *band, when band is given (the callers'
/// optional outputs); its data, or null.
template <typename T>
T* ll_band(Tensor* band, int B, LevelGrid grid, int C) {
  if (band == nullptr) return nullptr;
  *band = workspace_of<T>({B, grid.h, grid.w, C});
  return typed<T>(*band);
}

// The Haar coefficients of a level, materialised, one channel per thread (the fallback of
// haar_v4_kernel): coef (B, hp, wp, 4, C) = H(src) as sub-band planes, and the (same rounded) LL
// band again as ll_next (B, hp, wp, C), the next level's input (nullptr: not written); both of
// src's storage type T, computed in f32 and rounded once.
template <typename T>
__global__ void haar_kernel(HaarSrc<T> src, int B, T* __restrict__ coef, T* __restrict__ ll_next) {
  const int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (idx >= int64_t(B) * src.hp * src.wp * src.C) return;
  const int c = int(idx % src.C);
  const int64_t pos = idx / src.C;
  const int q = int(pos % src.wp);
  const int64_t rest = pos / src.wp;
  const float4 v = src.at(int(rest / src.hp), int(rest % src.hp), q, c);
  if (coef) {
    T* o = coef + pos * 4 * src.C + c;
    st(o, v.x);
    st(o + src.C, v.y);
    st(o + 2 * src.C, v.z);
    st(o + 3 * src.C, v.w);
  }
  if (ll_next) st(ll_next + idx, v.x);
}

/// H(src) on grid `out` from src (B, in): coefficients (B, out.h, out.w, 4, C) as sub-band planes
/// (in `spare`'s memory when it holds them, see in_spare); the (rounded) LL into *ll_next if
/// given. src and both outputs have storage type T.
template <typename T>
Tensor haar(const T* src, int B, int C, LevelGrid in, LevelGrid out, Tensor* ll_next,
            const Tensor& spare = Tensor()) {
  Tensor coef = in_spare<T>(spare, {B, out.h, out.w, 4, C});
  T* lln = ll_band<T>(ll_next, B, out, C);
  T* cp = typed<T>(coef);
  if (C % 4 == 0 && aligned4<T>(src) && aligned4<T>(cp) && (!lln || aligned4<T>(lln))) {
    const int64_t n = int64_t(B) * out.h * out.w * (C / 4);
    haar_v4_kernel<T><<<blocks_for(n), 256, 0, hg::cuda::stream()>>>(src, B, in.h, in.w, C, out.h,
                                                                     out.w, cp, lln);
  } else {
    HaarSrc<T> hs{src, in.h, in.w, C, out.h, out.w};
    haar_kernel<<<blocks_for(int64_t(B) * out.h * out.w * C), 256, 0, hg::cuda::stream()>>>(
        hs, B, cp, lln);
  }
  HG_CUDA_LAUNCH_CHECK();
  return coef;
}

/// One level's Haar pass and conv in one launch (haar_conv_kernel): *t = conv(H(src), w) as
/// sub-band planes (B, out, 4, C), the coefficient planes H(src) into *coef and the LL band into
/// *ll_next when those are given (each allocated here), src (B, in, C); w the level's (4C, K*K)
/// folded filters. Taken where haar_conv_takes; returns false, having done nothing, otherwise.
template <typename T>
bool try_haar_conv(const T* src, int B, int C, int K, LevelGrid in, LevelGrid out, const float* w,
                   Tensor* t, Tensor* coef, Tensor* ll_next) {
  if (src == nullptr || !haar_conv_takes(src, B, C, K, out)) return false;
  const int hp = out.h, wp = out.w;
  const size_t smem = haar_conv_smem<T>(K, wp);
  const int64_t groups = haar_conv_groups(B, hp);
  *t = workspace_of<T>({B, hp, wp, 4, C});
  T* cp = nullptr;
  if (coef != nullptr) {
    *coef = workspace_of<T>({B, hp, wp, 4, C});
    cp = typed<T>(*coef);
  }
  T* lln = ll_band<T>(ll_next, B, out, C);
  HG_CHECK(aligned16(typed<T>(*t)) && (!cp || aligned16(cp)) && (!lln || aligned16(lln)),
           "wtconv (cuda, fused): a workspace tensor is not 16-byte aligned");
  const HaarConvDims hd{B, in.h, in.w, C, hp, wp};
  dispatch_k(kWTConvKs, K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (KT == 3 || KT == 5 || KT == 7) {
      // 8 warps a block, or 16 where only one block's tiles fit a multiprocessor
      // (kHaarConvWideWarps)
      const auto narrow = haar_conv_kernel<T, KT>;
      const auto wide = haar_conv_kernel<T, KT, kHaarConvWideWarps>;
      const bool one_block = hg::cuda::resident_blocks(reinterpret_cast<const void*>(narrow),
                                                       32 * kHaarConvWarps, smem) < 2;
      const auto kernel = one_block ? wide : narrow;
      const int warps = one_block ? kHaarConvWideWarps : kHaarConvWarps;
      hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(kernel));
      kernel<<<dim3(unsigned(groups), unsigned((C + 31) / 32)), dim3(32, warps), smem,
               hg::cuda::stream()>>>(src, hd, w, typed<T>(*t), cp, lln);
      HG_CUDA_LAUNCH_CHECK();
    }
  });
  return true;
}

/// The slices of a level's folded-weight gradient, summed by level_grads_split with the other
/// levels' in one launch (reduce_slices): `partial` keeps them alive until then (undefined when
/// they lie in the spare memory).
struct LevelSlices {
  Tensor partial;
  SliceSum<float> sum;
};

/// `bytes` of spare's memory from byte *used on (16-byte aligned; *used advanced past them), or
/// null when spare does not hold them.
float* spare_floats(const Tensor& spare, size_t* used, size_t bytes) {
  const size_t at = (*used + 15) / 16 * 16;
  if (!spare.defined() || !spare.is_contiguous() || !aligned16(spare.data_ptr()) ||
      spare.nbytes() < at + bytes)
    return nullptr;
  *used = at + bytes;
  return reinterpret_cast<float*>(static_cast<char*>(spare.data_ptr()) + at);
}

/// A level's folded-weight gradient into sums (4C, K*K), from xsrc = ll_l and gsrc = gR_l (B, in,
/// C) in one launch (haar_wgrad_kernel), its slices to be summed appended to *pending, and x's
/// next LL band into *xnext when given (allocated here). Where haar_wgrad_takes only. The slices
/// go into spare's memory past byte *spare_used when it holds them (memory free until the
/// caller's synthesis: they are summed before the level tail, which puts its own slices there
/// from byte 0), else into a new workspace tensor.
template <typename T>
void haar_wgrad(const T* xsrc, const T* gsrc, int B, int C, int K, LevelGrid in, LevelGrid out,
                float* sums, Tensor* xnext, std::vector<LevelSlices>* pending, const Tensor& spare,
                size_t* spare_used) {
  const int hp = out.h, wp = out.w, KK = K * K, chunks = (C + 31) / 32;
  const size_t smem = haar_wgrad_smem<T>(K, wp);
  const int64_t groups = haar_wgrad_groups(B, hp);
  T* lln = ll_band<T>(xnext, B, out, C);
  HG_CHECK(!lln || aligned16(lln),
           "wtconv (cuda, fused): a workspace tensor is not 16-byte aligned");
  const HaarConvDims hd{B, in.h, in.w, C, hp, wp};
  dispatch_k(kWTConvKs, K, [&](auto kt) {
    constexpr int KT = decltype(kt)::value;
    if constexpr (KT == 3 || KT == 5 || KT == 7) {
      const auto kernel = haar_wgrad_kernel<T, KT>;
      hg::cuda::allow_max_dynamic_smem(reinterpret_cast<const void*>(kernel));
      // Slices: one wave of the blocks that fit at once, each walking a run of groups (its
      // x rows kept from group to group); measured against two and four waves (more blocks,
      // staggered starts), which were 0.3% slower on WTConvNeXt-T (docs/perf-notes.md,
      // twenty-eighth session). A function of the shape and the device only, so the sums are
      // added in the same order run to run.
      const int per_sm =
          std::max(1, hg::cuda::resident_blocks(reinterpret_cast<const void*>(kernel),
                                                32 * kHaarWgradWarps, smem));
      const int64_t want =
          std::max<int64_t>(1, int64_t(per_sm) * hg::cuda::multiprocessor_count() / chunks);
      const int64_t per = (groups + std::min(groups, want) - 1) / std::min(groups, want);
      const int slices = int((groups + per - 1) / per);
      const int64_t n = int64_t(4) * C * KK;
      Tensor partial;
      float* part = spare_floats(spare, spare_used, sizeof(float) * size_t(slices) * size_t(n));
      if (part == nullptr) {
        partial = workspace({slices, 4 * C, KK});
        part = partial.data<float>();
      }
      kernel<<<dim3(unsigned(slices), unsigned(chunks)), dim3(32, kHaarWgradWarps), smem,
               hg::cuda::stream()>>>(xsrc, gsrc, hd, int(per), part, lln);
      HG_CUDA_LAUNCH_CHECK();
      pending->push_back({partial, {part, slices, n, sums}});
    }
  });
}

/// One level of level_grads_split: gsrc = gR_l and xsrc = ll_l (B, grid l of d); wlf the level's
/// folded weights flipped (4C, K*K), only with gt; sums where its folded-weight gradient goes
/// (4C, K*K). The level gradient gt = conv^T(gc, w~) is the forward conv with the flipped filters:
/// at K = 3, 5, 7 the very staged kernel backward data runs, and in every variant one tap order
/// (row-major over the flipped filter), which the bf16 CPU reference reproduces before it rounds gt
/// (kernels/cpu/wtconv_fused.cpp; f32 needs no such care, nothing rounds between the taps);
/// backward data's tile kernel sums the taps in the opposite order. (f32 ran the depthwise backward
/// data with the plain filters until the twenty-ninth session, when f32 began to take the Haar
/// kernels.) Where haar_wgrad_takes (with gt), the weight gradient forms H(xsrc) and H(gsrc)
/// itself and neither is stored. Otherwise H(xsrc), which only the weight gradient reads, goes into
/// `spare` when it fits (grad_x, written only by the synthesis after every level: at level 0 that
/// saves an N-element tensor of the backward's peak, where gt_0, H(G) and H(x) live at once).
/// The Haar weight gradient's slices are left in *pending to be summed (in spare past byte
/// *spare_used when they fit).
template <typename T>
void level_grads_split_one(const T* gsrc, const T* xsrc, int B, int C, int K, int l,
                           const WTConvLevels& d, const float* wlf, Tensor* gt, Tensor* gnext,
                           Tensor* xnext, float* sums, const Tensor& spare,
                           std::vector<LevelSlices>* pending, size_t* spare_used) {
  const LevelGrid in = grid_of(d, l), out = grid_of(d, l + 1);
  const int hp = out.h, wp = out.w;
  const Conv2dShape cs = level_shape(B, hp, wp, C, K);
  // with grad_x: gt and G's next LL band in one launch over G, and the weight gradient in
  // one launch over x and G that forms both coefficient sets on the fly: neither H(G) nor H(x) is
  // stored (2 N elements less at level 0)
  if (gt != nullptr && wlf != nullptr && haar_conv_takes(gsrc, B, C, K, out) &&
      haar_wgrad_takes(xsrc, gsrc, B, C, K, out)) {
    HG_CHECK(try_haar_conv(gsrc, B, C, K, in, out, wlf, gt, nullptr, gnext),
             "wtconv (cuda, fused): haar_conv_kernel refused a level it takes");
    haar_wgrad(xsrc, gsrc, B, C, K, in, out, sums, xnext, pending, spare, spare_used);
    return;
  }
  Tensor gc;
  // where only haar_conv takes the level: gc = H(gR_l) and gt in one launch (gc still written:
  // the weight gradient reads it)
  const bool fused =
      gt != nullptr && wlf != nullptr && try_haar_conv(gsrc, B, C, K, in, out, wlf, gt, &gc, gnext);
  if (!fused) {
    gc = haar(gsrc, B, C, in, out, gnext);
    if (gt != nullptr) {
      *gt = workspace_of<T>({B, hp, wp, 4, C});
      depthwise_conv_forward(cs, host_typed<T>(gc), wlf, nullptr, host_typed<T>(*gt));
    }
  }
  // (not over an earlier level's slices, which are summed after the last level)
  const Tensor xcoef = haar(xsrc, B, C, in, out, xnext, *spare_used == 0 ? spare : Tensor());
  depthwise_conv_backward_weight(cs, host_typed<T>(xcoef), host_typed<T>(gc), sums, nullptr);
}

}  // namespace

/// Whether haar_conv_kernel takes a level: src (B, in, C) of storage T, the level grid out, filters
/// of size K. K = 3, 5, 7, C % 8 == 0 and a 16-byte aligned src (a null src stands for an aligned
/// one), with the four staged tiles within the shared memory: bf16 or f32 (f32's tiles are twice
/// bf16's: at a 28-wide level grid one block a multiprocessor, and still 12% faster than a Haar
/// pass and a conv, twenty-ninth session).
template <typename T>
bool haar_conv_takes(const T* src, int B, int C, int K, LevelGrid out) {
  return (K == 3 || K == 5 || K == 7) && C % 8 == 0 && (src == nullptr || aligned16(src)) &&
         haar_conv_smem<T>(K, out.w) <= hg::cuda::max_dynamic_smem() &&
         haar_conv_groups(B, out.h) <= INT32_MAX && (C + 31) / 32 <= 65535;
}

/// Whether haar_wgrad_kernel takes a level's weight gradient: x's and G's level inputs of storage
/// T (16-byte aligned), the level grid out, filters of size K: K = 3, 5, 7, C % 8 == 0, the tiles
/// within the shared memory (bf16 or f32).
template <typename T>
bool haar_wgrad_takes(const T* xsrc, const T* gsrc, int B, int C, int K, LevelGrid out) {
  return (K == 3 || K == 5 || K == 7) && C % 8 == 0 && aligned16(xsrc) && aligned16(gsrc) &&
         haar_wgrad_smem<T>(K, out.w) <= hg::cuda::max_dynamic_smem() &&
         haar_wgrad_groups(B, out.h) <= INT32_MAX && (C + 31) / 32 <= 65535;
}

/// t_l = conv(H(ll_l), s_l w_l) for the levels l < s, ll_0 = in, t_l (B, hp, wp, 4, C) of storage
/// T; with a level tail (s < L, of geometry tg) levels s .. L-1 as one plane launch over ll_s into
/// the returned tail output (described in *tail; none: an undefined tensor and tail->r null).
/// f: the forward's folded weights, with the level filters the levels need (f.levels for l < s,
/// f.plane for a tail).
template <typename T>
Tensor analysis_convs_split(const T* in, int B, int C, int K, const WTConvLevels& d,
                            const Folded& f, int L, int s, const PlaneGeom& tg,
                            std::vector<Tensor>& t, LevelTail* tail) {
  const int KK = K * K;
  t.assign(s, Tensor());
  *tail = LevelTail{};
  if (L == 0) return Tensor();
  Tensor ll;  // keeps the current level's input (levels >= 1) alive; after the loop, ll_s
  for (int l = 0; l < s; ++l) {
    Tensor next;
    const T* src = l == 0 ? in : typed<T>(ll);
    const float* wll = f.levels.data<float>() + int64_t(l) * 4 * C * KK;
    const LevelGrid gin = grid_of(d, l), gout = grid_of(d, l + 1);
    if (!try_haar_conv(src, B, C, K, gin, gout, wll, &t[l], nullptr, l + 1 < L ? &next : nullptr)) {
      const Tensor coef = haar(src, B, C, gin, gout, l + 1 < L ? &next : nullptr);
      t[l] = workspace_of<T>({B, gout.h, gout.w, 4, C});
      depthwise_conv_forward(level_shape(B, gout.h, gout.w, C, K), host_typed<T>(coef), wll,
                             nullptr, host_typed<T>(t[l]));
    }
    ll = next;
  }
  if (s == L) return Tensor();
  const Tensor r = tail_output(B, grid_of(d, s), C, s, tail);
  plane_forward<T>(typed<T>(ll), B, C, tg, nullptr, nullptr,
                   typed<T>(f.plane) + int64_t(s) * KK * 4 * C,
                   PlaneOut<T>{nullptr, r.data<float>(), std::ldexp(1.f, -s)});
  return r;
}

/// Level weight gradients (and, with gt, the level gradients dL/dc_l the synthesis of grad_x
/// needs), one level at a time so only one level's coefficient tensors live at once: gc_l = H(gR_l)
/// = dL/dt_l, gt_l = conv^T(gc_l, w~_l), dL/dw~_l = wgrad(H(ll_l), gc_l), for the levels l < s;
/// with a level tail (s < L, of geometry tg) levels s .. L-1 as one plane launch over ll_s and
/// gR_s (and its reduction), whose term of the G synthesis (when gt is given) is the returned
/// tail output, described in *tail. x and G are the layer's input and output gradient; every
/// tensor here has their storage T. `spare`: memory free until the caller's synthesis (grad_x, or
/// undefined), where each level's H(ll_l) goes when it fits. The split levels' folded-weight
/// gradients go to *ls, for base_grads to unfold with the base path's in one launch (the Haar
/// weight gradients' slices summed here in one launch after the last split level).
template <typename T>
Tensor level_grads_split(const T* x, const T* G, int B, int C, int K, const WTConvLevels& d,
                         const WTConvWeights& w, const Folded& f, int s, const PlaneGeom& tg,
                         std::vector<Tensor>* gt, WTConvGrads& g, LevelTail* tail,
                         const Tensor& spare, SplitLevelSums* ls) {
  const int L = w.levels(), KK = K * K;
  const int64_t per = int64_t(4) * C * KK;  // one level's folded weights
  if (gt != nullptr) gt->assign(s, Tensor());
  *tail = LevelTail{};
  *ls = SplitLevelSums{};
  if (L == 0) return Tensor();
  const LevelParams lp = level_params(w, &g);  // every level's gradient tensors
  // the level gradients' filters (f.levels, folded and flipped for this pass)
  const float* levels = gt != nullptr ? f.levels.data<float>() : nullptr;
  const Tensor sums = workspace({s, 4 * C, KK});
  std::vector<LevelSlices> pending;  // the Haar weight gradients' slices, summed after the loop
  size_t spare_used = 0;             // bytes of spare they take
  Tensor gR, ll;  // keep the current level's inputs alive; after the loop, gR_s and ll_s
  for (int l = 0; l < s; ++l) {
    Tensor gnext, xnext;
    Tensor* gtl = gt != nullptr ? &(*gt)[l] : nullptr;
    Tensor* gn = l + 1 < L ? &gnext : nullptr;
    Tensor* xn = l + 1 < L ? &xnext : nullptr;
    const float* wlf = levels ? levels + l * per : nullptr;
    float* sl = sums.data<float>() + l * per;
    level_grads_split_one(l == 0 ? G : typed<T>(gR), l == 0 ? x : typed<T>(ll), B, C, K, l, d, wlf,
                          gtl, gn, xn, sl, spare, &pending, &spare_used);
    gR = gnext;
    ll = xnext;
  }
  std::vector<SliceSum<float>> slice_sums;
  for (const LevelSlices& p : pending) slice_sums.push_back(p.sum);
  reduce_slices(slice_sums);
  *ls = SplitLevelSums{sums, s, lp};
  if (s == L) return Tensor();
  const Tensor r = gt != nullptr ? tail_output(B, grid_of(d, s), C, s, tail) : Tensor();
  plane_backward<T>(
      typed<T>(ll), typed<T>(gR), B, C, tg, nullptr, typed<T>(f.plane) + int64_t(s) * KK * 4 * C,
      PlaneOut<T>{nullptr, r.defined() ? r.data<float>() : nullptr, std::ldexp(1.f, -s)},
      levels_from(lp, s), PlaneBaseGrads{}, spare);
  return r;
}

#define HG_INSTANTIATE(T)                                                                          \
  template int tail_level<T>(const T*, const T*, int, int, int, const WTConvLevels&, int, bool,    \
                             PlaneGeom*);                                                          \
  template bool haar_conv_takes<T>(const T*, int, int, int, LevelGrid);                            \
  template bool haar_wgrad_takes<T>(const T*, const T*, int, int, int, LevelGrid);                 \
  template Tensor analysis_convs_split<T>(const T*, int, int, int, const WTConvLevels&,            \
                                          const Folded&, int, int, const PlaneGeom&,               \
                                          std::vector<Tensor>&, LevelTail*);                       \
  template Tensor level_grads_split<T>(const T*, const T*, int, int, int, const WTConvLevels&,     \
                                       const WTConvWeights&, const Folded&, int, const PlaneGeom&, \
                                       std::vector<Tensor>*, WTConvGrads&, LevelTail*,             \
                                       const Tensor&, SplitLevelSums*);
HG_INSTANTIATE(float)
HG_INSTANTIATE(__nv_bfloat16)
#undef HG_INSTANTIATE

}  // namespace hg::kernels::cuda::wtconv_detail
