// Parameter creation helper (see module.h).
#include "layers/module.h"

#include "core/memory.h"

namespace hg {

Tensor make_parameter(const Shape& shape, DType dtype, Device device) {
  memory::CategoryScope scope(Category::parameters);
  Tensor t = Tensor::zeros(shape, dtype, device);
  t.requires_grad_(true);
  return t;
}

}  // namespace hg
