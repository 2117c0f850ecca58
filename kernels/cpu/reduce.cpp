// CPU reference of kernels/reduce.h.
#include "kernels/reduce.h"

namespace hg::kernels::cpu {

template <typename T>
double sum_squares(const T* x, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

template double sum_squares<float>(const float*, int64_t);
template double sum_squares<double>(const double*, int64_t);

}  // namespace hg::kernels::cpu
