// Gradient buckets for data-parallel training: parameters grouped, in the order the backward
// finishes their gradients, into flat buffers of at most `cap` bytes; each parameter's gradient
// becomes a view into its bucket's buffer (PyTorch DDP's gradient_as_bucket_view), so a bucket is
// reduced in place with one collective and no copies.
//
// Shapes: a bucket of parameters p_0 .. p_k (numel n_i) holds them back to back, p_i at element
// offset o_i = n_0 + ... + n_(i-1); numel = sum n_i; `padded` rounds numel up to a multiple of the
// world size R, so the buffer splits into R equal chunks of chunk() elements (ZeRO-1: rank r owns
// chunk r, [r * chunk, (r + 1) * chunk), and the parts of parameters that fall into it).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace hg::train {

struct BucketEntry {
  size_t param = 0;    ///< index into the parameter list the buckets were planned from
  int64_t offset = 0;  ///< first element of the parameter in the bucket
  int64_t numel = 0;
};

struct GradBucket {
  std::vector<BucketEntry> entries;
  int64_t numel = 0;   ///< elements of the parameters
  int64_t padded = 0;  ///< numel rounded up to a multiple of the world size
  int world = 1;
  Tensor flat;  ///< (padded,) gradients, dtype and device of the parameters (Category::gradients)
  int64_t chunk() const { return padded / world; }
};

/// Groups `params` (in the given order) into buckets: a bucket is closed before a parameter that
/// would take it past `cap_bytes`, or that differs from it in dtype or device; a parameter larger
/// than the cap gets a bucket of its own. Plans only (no memory). Throws hg::Error for an
/// undefined or non-contiguous parameter, cap_bytes <= 0 or world < 1.
std::vector<GradBucket> plan_buckets(const std::vector<Tensor>& params, double cap_bytes,
                                     int world);

/// Allocates each bucket's flat buffer (zeros) and makes every parameter's gradient the view of
/// its slice (a gradient it already had is copied in). Afterwards backward() accumulates straight
/// into the buckets, and zero_grad() keeps the views.
void attach_bucket_grads(std::vector<GradBucket>& buckets, const std::vector<Tensor>& params);

/// The part of `e` that falls into chunk `r` of `b`: [lo, hi) in bucket elements (lo == hi: none).
struct ChunkRange {
  int64_t lo = 0, hi = 0;
  bool empty() const { return lo >= hi; }
};
ChunkRange chunk_part(const GradBucket& b, const BucketEntry& e, int r);

}  // namespace hg::train
