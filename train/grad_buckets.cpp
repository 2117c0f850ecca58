// Gradient bucket planning and the bucket-view gradients (see grad_buckets.h).
#include "train/grad_buckets.h"

#include <algorithm>

#include "core/autograd.h"
#include "core/memory.h"

namespace hg::train {

std::vector<GradBucket> plan_buckets(const std::vector<Tensor>& params, double cap_bytes,
                                     int world) {
  HG_CHECK(cap_bytes > 0, "plan_buckets: the bucket size must be > 0 bytes, got ", cap_bytes);
  HG_CHECK(world >= 1, "plan_buckets: world size must be >= 1, got ", world);
  std::vector<GradBucket> out;
  GradBucket cur;
  auto close = [&] {
    if (cur.entries.empty()) return;
    cur.world = world;
    cur.padded = (cur.numel + world - 1) / world * world;
    out.push_back(std::move(cur));
    cur = GradBucket();
  };
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    HG_CHECK(p.defined() && p.is_contiguous(), "plan_buckets: parameter ", i,
             " must be defined and contiguous");
    if (!cur.entries.empty()) {
      const Tensor& first = params[cur.entries.front().param];
      const double bytes = static_cast<double>((cur.numel + p.numel()) *
                                               static_cast<int64_t>(dtype_size(p.dtype())));
      if (first.dtype() != p.dtype() || first.device() != p.device() || bytes > cap_bytes) close();
    }
    cur.entries.push_back({i, cur.numel, p.numel()});
    cur.numel += p.numel();
  }
  close();
  return out;
}

void attach_bucket_grads(std::vector<GradBucket>& buckets, const std::vector<Tensor>& params) {
  autograd::NoGradGuard no_grad;  // views of the buffer are not recorded
  memory::CategoryScope scope(Category::gradients);
  for (GradBucket& b : buckets) {
    const Tensor& first = params.at(b.entries.front().param);
    b.flat = Tensor::zeros({b.padded}, first.dtype(), first.device());
    for (const BucketEntry& e : b.entries) {
      const Tensor& p = params.at(e.param);
      Tensor view = b.flat.slice(0, e.offset, e.offset + e.numel).reshape(p.shape());
      auto slot = p.grad_slot();
      HG_CHECK(slot != nullptr, "attach_bucket_grads: parameter ", e.param, " ", p.describe(),
               " does not require grad");
      if (slot->grad.defined() && !slot->stale) view.copy_(slot->grad);
      slot->grad = view;
      slot->stale = false;  // the new buffer holds zeros or the copied gradient
    }
  }
}

ChunkRange chunk_part(const GradBucket& b, const BucketEntry& e, int r) {
  const int64_t begin = static_cast<int64_t>(r) * b.chunk(), end = begin + b.chunk();
  ChunkRange c{std::max(begin, e.offset), std::min(end, e.offset + e.numel)};
  if (c.lo > c.hi) c.hi = c.lo;
  return c;
}

}  // namespace hg::train
