// hg::Tensor: an n-dimensional array of one dtype on one device.
//
// A Tensor is a handle (shared ownership, like torch.Tensor): copies share the same data and the
// same autograd state. Storage is contiguous bytes with shared ownership; a Tensor is a view into
// it (shape, strides in elements, offset in elements), so reshape / permute / slice are cheap. Ops
// that need dense data call contiguous(), which copies only when the view is not dense.
//
// Layout convention: activations are NHWC (channels-last), see README "Design". Parameters keep
// PyTorch's layouts (conv weight (O, I/groups, KH, KW), linear weight (out, in)) so checkpoints
// move between haargrad and PyTorch unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "core/memory.h"

namespace hg {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& s);
/// Row-major (C-contiguous) strides of a shape, in elements.
Shape contiguous_strides(const Shape& s);

namespace autograd {
struct GradSlot;
}

class Tensor {
 public:
  Tensor() = default;  ///< undefined tensor (defined() == false)

  // ---- creation (memory comes from memory::allocate in the current category) ----
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
                     Device device = Device::cpu);
  /// A CPU tensor in page-locked memory when a GPU is usable (core/pinned_memory.h), else an
  /// ordinary CPU tensor: to(Device::cuda) from it queues an asynchronous copy.
  static Tensor empty_pinned(const Shape& shape, DType dtype = DType::f32);
  /// Copies `values` (row-major, size == numel) into a new tensor of T's dtype.
  template <typename T>
  static Tensor from_vector(const Shape& shape, const std::vector<T>& values,
                            Device device = Device::cpu);
  /// Wraps raw bytes (copied) of a given dtype: used by the safetensors reader.
  static Tensor from_bytes(const Shape& shape, DType dtype, const void* bytes, Device device);

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& strides() const;
  int64_t offset() const;
  /// Size of dimension `d`; negative counts from the end. Throws on a bad dimension.
  int64_t size(int d) const;
  int ndim() const;
  int64_t numel() const;
  DType dtype() const;
  Device device() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }
  bool is_contiguous() const;
  /// "f32[2, 3] cpu" for messages.
  std::string describe() const;

  // ---- data access ----
  /// Pointer to the first element; throws unless dtype matches T. Use on contiguous tensors.
  template <typename T>
  T* data() const;
  void* data_ptr() const;
  /// Copies the elements (any layout, any device) into a host vector, converting to T.
  template <typename T>
  std::vector<T> to_vector() const;
  /// The value of a one-element tensor as double.
  double item() const;

  // ---- views and copies (recorded by autograd when the tensor requires grad) ----
  Tensor reshape(const Shape& shape) const;  ///< one dim may be -1; view when dense, else copy
  Tensor permute(const std::vector<int>& dims) const;       ///< a view
  Tensor slice(int dim, int64_t begin, int64_t end) const;  ///< a view, [begin, end)
  Tensor contiguous() const;                                ///< itself if dense, else a dense copy
  Tensor clone() const;                                     ///< always a dense copy
  /// To another device. From a pinned CPU tensor to cuda the copy is queued on the default stream
  /// and the call returns at once (later GPU work is ordered after it); other copies block.
  Tensor to(Device device) const;
  Tensor to(DType dtype) const;  ///< converts through double on the host path

  // ---- in place (never recorded: use on parameters, buffers, gradients) ----
  void copy_(const Tensor& src);  ///< same shape; any dtype/device/layout
  void fill_(double value);
  void zero_() { fill_(0.0); }

  // ---- autograd ----
  bool requires_grad() const;
  /// Marks a leaf tensor (parameter) as needing a gradient.
  Tensor& requires_grad_(bool on = true);
  bool is_leaf() const;
  /// The accumulated gradient (undefined until backward reached this tensor).
  Tensor grad() const;
  /// Sets the gradient to zero, keeping its memory (steady state does not allocate). Lazily: the
  /// buffer is marked, the next backward overwrites it, and grad() fills zeros only if it is read
  /// before any backward reached the tensor (no kernel per parameter in a training step).
  void zero_grad() const;
  /// Drops the gradient (set_to_none).
  void clear_grad() const;
  std::shared_ptr<autograd::GradSlot> grad_slot() const;
  void set_grad_slot(std::shared_ptr<autograd::GradSlot> slot) const;
  /// Identity of the shared state, e.g. to key optimizer state.
  const void* id() const { return impl_.get(); }

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  const Impl& impl() const;  // throws on an undefined tensor
  Tensor make_view(const Shape& shape, const Shape& strides, int64_t offset) const;
  static Tensor dense_copy(const Tensor& t);  // not recorded
  // A contiguous tensor whose storage comes from alloc(bytes, device); op names it in errors.
  static Tensor with_storage(const char* op, const Shape& shape, DType dtype, Device device,
                             std::shared_ptr<void> (*alloc)(size_t, Device));
};

/// dst[i].copy_(src[i]) for every i; the pairs that are dense, on the GPU and of one dtype are
/// copied together, in one kernel launch per up to 128 of them, instead of a cudaMemcpyAsync each
/// (kernels/cuda/copy.h, copy_many), after the other pairs. dst and src: equal lengths; each pair
/// as copy_ takes it; no dst may overlap another dst or any src (the order of the copies is not
/// the list's).
void copy_many(const std::vector<Tensor>& dst, const std::vector<Tensor>& src);

/// Throws hg::Error "<op>: expected <what> ..., got ..." unless the condition holds.
void check_same_shape(const char* op, const Tensor& a, const Tensor& b);
void check_same_dtype_device(const char* op, const Tensor& a, const Tensor& b);
void check_dtype(const char* op, const Tensor& t, DType dtype);
void check_ndim(const char* op, const Tensor& t, int ndim);

}  // namespace hg
