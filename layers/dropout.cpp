// dropout with autograd (see dropout.h): the mask drawn on the host, as drop path's, so that a
// seeded Generator gives the same mask on any device and a captured step draws a new one at every
// replay (core/host_drawn.h); the product is ops::mul's, whose backward is dy * mask.
#include "layers/dropout.h"

#include <vector>

#include "core/error.h"
#include "core/host_drawn.h"
#include "core/ops.h"

namespace hg {

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  HG_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0.0) return x;
  const double keep = 1.0 - p;
  // bf16 activations: the mask in f32 (1 / keep is not a bf16 number), the product rounded once
  const DType math = x.dtype() == DType::bf16 ? DType::f32 : x.dtype();
  const Tensor mask = host_drawn(x.numel(), math, x.device(), [&gen, keep](std::vector<double>& m) {
                        for (double& v : m) v = gen.uniform() < keep ? 1.0 / keep : 0.0;
                      }).reshape(x.shape());
  if (math == x.dtype()) return ops::mul(x, mask);
  return ops::mul(x.to(math), mask).to(x.dtype());
}

}  // namespace hg
