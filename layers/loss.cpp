// cross_entropy with autograd and the top-k accuracy helper (see loss.h).
#include "layers/loss.h"

#include <cmath>
#include <vector>

#include "core/autograd.h"
#include "kernels/cross_entropy.h"

namespace hg {
namespace {
void check_logits_labels(const char* op, const Tensor& logits, const Tensor& labels) {
  HG_CHECK(logits.ndim() == 2, op, ": logits must be (N, classes), got ", logits.describe());
  HG_CHECK(labels.ndim() == 1 && labels.size(0) == logits.size(0), op, ": labels must be (",
           logits.size(0), ") for logits ", logits.describe(), ", got ", labels.describe());
  HG_CHECK(labels.dtype() == DType::i64, op, ": labels must be i64, got ", labels.describe());
  HG_CHECK(logits.device() == labels.device(), op, ": logits ", logits.describe(), " and labels ",
           labels.describe(), " are on different devices");
  HG_CHECK(logits.size(0) > 0 && logits.size(1) > 0, op, ": empty logits ", logits.describe());
}
}  // namespace

Tensor cross_entropy(const Tensor& logits_in, const Tensor& labels_in, double s) {
  // mixed precision: softmax and the loss in f32 (bf16 logits widened once; their gradient comes
  // back through the cast, rounded to bf16)
  if (logits_in.dtype() == DType::bf16)
    return cross_entropy(logits_in.to(DType::f32), labels_in, s);
  check_logits_labels("cross_entropy", logits_in, labels_in);
  HG_CHECK(s >= 0.0 && s <= 1.0, "cross_entropy: label_smoothing must be in [0, 1], got ", s);
  const Tensor logits = logits_in.contiguous(), labels = labels_in.contiguous();
  const int64_t N = logits.size(0), K = logits.size(1);
  Tensor stats = Tensor::empty({N, 2}, logits.dtype(), logits.device());  // max, log sum
  Tensor loss = Tensor::empty({}, logits.dtype(), logits.device());
  if (logits.device() == Device::cuda) {
    check_dtype("cross_entropy", logits, DType::f32);
    kernels::cuda::cross_entropy_forward(logits.data<float>(), labels.data<int64_t>(),
                                         stats.data<float>(), loss.data<float>(), N, K,
                                         static_cast<float>(s));
  } else {
    const int64_t* y = labels.data<int64_t>();
    for (int64_t i = 0; i < N; ++i)
      HG_CHECK(y[i] >= 0 && y[i] < K, "cross_entropy: label ", y[i], " of sample ", i,
               " out of range [0, ", K, ") for logits ", logits.describe());
    HG_DISPATCH_FLOAT(logits.dtype(), "cross_entropy", [&] {
      kernels::cpu::cross_entropy_forward(logits.data<scalar_t>(), y, stats.data<scalar_t>(),
                                          loss.data<scalar_t>(), N, K, s);
    });
  }
  autograd::record(
      "cross_entropy", {logits_in}, {loss},
      [logits, labels, stats, N, K, s](autograd::Backward& g) {
        const Tensor gl = g.grad_output(0).contiguous();
        Tensor dz = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
        if (logits.device() == Device::cuda) {
          kernels::cuda::cross_entropy_backward(logits.data<float>(), labels.data<int64_t>(),
                                                stats.data<float>(), gl.data<float>(),
                                                dz.data<float>(), N, K, static_cast<float>(s));
        } else {
          HG_DISPATCH_FLOAT(logits.dtype(), "cross_entropy backward", [&] {
            kernels::cpu::cross_entropy_backward(logits.data<scalar_t>(), labels.data<int64_t>(),
                                                 stats.data<scalar_t>(), gl.data<scalar_t>(),
                                                 dz.data<scalar_t>(), N, K, s);
          });
        }
        return std::vector<Tensor>{dz};
      });
  return loss;
}

Tensor soft_target_cross_entropy(const Tensor& logits_in, const Tensor& targets_in) {
  const char* op = "soft_target_cross_entropy";
  if (logits_in.dtype() == DType::bf16 &&
      (targets_in.dtype() == DType::bf16 || targets_in.dtype() == DType::f32))  // as cross_entropy
    return soft_target_cross_entropy(logits_in.to(DType::f32), targets_in.to(DType::f32));
  HG_CHECK(logits_in.ndim() == 2 && logits_in.size(0) > 0 && logits_in.size(1) > 0, op,
           ": logits must be non-empty (N, classes), got ", logits_in.describe());
  HG_CHECK(targets_in.shape() == logits_in.shape(), op, ": targets must have the logits' shape ",
           shape_str(logits_in.shape()), ", got ", targets_in.describe());
  HG_CHECK(targets_in.dtype() == logits_in.dtype(), op, ": targets ", targets_in.describe(),
           " must have the logits' dtype (", logits_in.describe(), ")");
  HG_CHECK(targets_in.device() == logits_in.device(), op, ": logits ", logits_in.describe(),
           " and targets ", targets_in.describe(), " are on different devices");
  const Tensor logits = logits_in.contiguous(), targets = targets_in.contiguous();
  const int64_t N = logits.size(0), K = logits.size(1);
  Tensor stats = Tensor::empty({N, 2}, logits.dtype(), logits.device());  // max, log sum
  Tensor loss = Tensor::empty({}, logits.dtype(), logits.device());
  if (logits.device() == Device::cuda) {
    check_dtype(op, logits, DType::f32);
    kernels::cuda::soft_cross_entropy_forward(logits.data<float>(), targets.data<float>(),
                                              stats.data<float>(), loss.data<float>(), N, K);
  } else {
    HG_DISPATCH_FLOAT(logits.dtype(), op, [&] {
      kernels::cpu::soft_cross_entropy_forward(logits.data<scalar_t>(), targets.data<scalar_t>(),
                                               stats.data<scalar_t>(), loss.data<scalar_t>(), N, K);
    });
  }
  autograd::record(op, {logits_in}, {loss}, [logits, targets, stats, N, K](autograd::Backward& g) {
    const Tensor gl = g.grad_output(0).contiguous();
    Tensor dz = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
    if (logits.device() == Device::cuda) {
      kernels::cuda::soft_cross_entropy_backward(logits.data<float>(), targets.data<float>(),
                                                 stats.data<float>(), gl.data<float>(),
                                                 dz.data<float>(), N, K);
    } else {
      HG_DISPATCH_FLOAT(logits.dtype(), "soft_target_cross_entropy backward", [&] {
        kernels::cpu::soft_cross_entropy_backward(logits.data<scalar_t>(), targets.data<scalar_t>(),
                                                  stats.data<scalar_t>(), gl.data<scalar_t>(),
                                                  dz.data<scalar_t>(), N, K);
      });
    }
    return std::vector<Tensor>{dz};
  });
  return loss;
}

int64_t correct_topk(const Tensor& logits, const Tensor& labels, int64_t k) {
  check_logits_labels("correct_topk", logits, labels);
  const int64_t N = logits.size(0), K = logits.size(1);
  HG_CHECK(k >= 1 && k <= K, "correct_topk: k = ", k, " must be in [1, ", K, "] for logits ",
           logits.describe());
  const std::vector<double> z = logits.to_vector<double>();
  const std::vector<int64_t> y = labels.to_vector<int64_t>();
  int64_t correct = 0;
  for (int64_t i = 0; i < N; ++i) {
    const int64_t label = y[static_cast<size_t>(i)];
    HG_CHECK(label >= 0 && label < K, "correct_topk: label ", label, " of sample ", i,
             " out of range [0, ", K, ")");
    const double target = z[static_cast<size_t>(i * K + label)];
    // rank of the label's logit: how many logits come before it, a tie going to the lower index
    // (a tie in its favour gave a model of equal logits 100% top-1, best for good)
    int64_t before = 0;
    bool finite = true;  // NaN compares false with everything: without this a NaN row ranks first
    for (int64_t j = 0; j < K; ++j) {
      const double v = z[static_cast<size_t>(i * K + j)];
      before += v > target || (v == target && j < label);
      finite = finite && std::isfinite(v);
    }
    correct += finite && before < k;
  }
  return correct;
}

int64_t nonfinite_rows(const Tensor& logits) {
  HG_CHECK(logits.ndim() == 2, "nonfinite_rows: expected logits (N, K), got ", logits.describe());
  const int64_t N = logits.size(0), K = logits.size(1);
  const std::vector<double> z = logits.to_vector<double>();
  int64_t rows = 0;
  for (int64_t i = 0; i < N; ++i) {
    bool finite = true;
    for (int64_t j = 0; j < K && finite; ++j) finite = std::isfinite(z[static_cast<size_t>(i * K + j)]);
    rows += !finite;
  }
  return rows;
}

double accuracy_topk(const Tensor& logits, const Tensor& labels, int64_t k) {
  return static_cast<double>(correct_topk(logits, labels, k)) / static_cast<double>(logits.size(0));
}

}  // namespace hg
