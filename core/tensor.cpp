// Tensor: storage, views, host/device copies, and the autograd hooks of the view ops.
#include "core/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/autograd.h"
#include "core/host_sync.h"
#include "core/pinned_memory.h"
#ifdef HAARGRAD_WITH_CUDA
#include "kernels/cuda/copy.h"
#endif

#ifdef HAARGRAD_WITH_CUDA
#include <cuda_runtime.h>

#include "core/cuda_stream.h"
#endif

namespace hg {

struct Tensor::Impl {
  std::shared_ptr<void> storage;  // the allocation; a view shares it
  Shape shape, strides;
  int64_t offset = 0;  // elements
  DType dtype = DType::f32;
  Device device = Device::cpu;
  bool requires_grad = false;
  std::shared_ptr<autograd::GradSlot> slot;  // set when requires_grad
};

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      u = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  uint32_t mant = u & 0x7fffffu;
  if (((u >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));
  if (exp >= 31) return uint16_t(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1))) ++half;
  return uint16_t(half);
}

namespace {

double load_as_double(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(base)[i];
    case DType::f64: return static_cast<const double*>(base)[i];
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::i64: return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case DType::i32: return static_cast<const int32_t*>(base)[i];
    case DType::u8: return static_cast<const uint8_t*>(base)[i];
    case DType::boolean: return static_cast<const uint8_t*>(base)[i] ? 1.0 : 0.0;
  }
  return 0;
}

void store_double(void* base, DType t, int64_t i, double v) {
  switch (t) {
    case DType::f32: static_cast<float*>(base)[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(base)[i] = v; break;
    case DType::bf16: static_cast<uint16_t*>(base)[i] = f32_to_bf16(static_cast<float>(v)); break;
    case DType::f16: static_cast<uint16_t*>(base)[i] = f32_to_f16(static_cast<float>(v)); break;
    case DType::i64: static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v); break;
    case DType::i32: static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v); break;
    case DType::u8: static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v); break;
    case DType::boolean: static_cast<uint8_t*>(base)[i] = v != 0.0; break;
  }
}

// Visits every element of a (shape, strides) view in row-major order, calling f(linear, strided).
template <typename F>
void for_each_index(const Shape& shape, const Shape& strides, F&& f) {
  const int64_t n = shape_numel(shape);
  if (n == 0) return;
  const size_t nd = shape.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t lin = 0; lin < n; ++lin) {
    f(lin, off);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < shape[d]) {
        off += strides[d];
        break;
      }
      off -= strides[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

void device_memcpy(void* dst, Device dd, const void* src, Device sd, size_t bytes) {
  if (bytes == 0) return;
  if (dd == Device::cpu && sd == Device::cpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef HAARGRAD_WITH_CUDA
  cudaMemcpyKind kind = sd == Device::cpu   ? cudaMemcpyHostToDevice
                        : dd == Device::cpu ? cudaMemcpyDeviceToHost
                                            : cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyHostToDevice && memory::is_pinned(src)) {
    // Queued on the thread's stream, like every kernel, so later work sees the bytes; the pinned
    // pool keeps the source block until the copy is done.
    cudaError_t err = cudaMemcpyAsync(dst, src, bytes, kind, cuda::stream());
    HG_CHECK(err == cudaSuccess, "cudaMemcpyAsync of ", bytes,
             " bytes failed: ", cudaGetErrorString(err));
    memory::record_pinned_use(src);
    return;
  }
  // Device to device: queued. To the host, or from pageable host memory: a host wait for the
  // thread's stream (the source or destination is host memory the caller uses next).
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, kind, cuda::stream());
  if (err == cudaSuccess && kind != cudaMemcpyDeviceToDevice) {
    note_host_sync();
    err = cudaStreamSynchronize(cuda::stream());
  }
  HG_CHECK(err == cudaSuccess, "cudaMemcpy of ", bytes, " bytes failed: ", cudaGetErrorString(err));
#else
  throw Error("this haargrad was built without CUDA: cannot copy to or from a cuda tensor");
#endif
}

}  // namespace

// ---- creation ----------------------------------------------------------------------------------

Tensor Tensor::with_storage(const char* op, const Shape& shape, DType dtype, Device device,
                            std::shared_ptr<void> (*alloc)(size_t, Device)) {
  for (int64_t d : shape) HG_CHECK(d >= 0, op, ": negative size in shape ", shape_str(shape));
  Tensor t;
  t.impl_ = std::make_shared<Impl>();
  t.impl_->shape = shape;
  t.impl_->strides = contiguous_strides(shape);
  t.impl_->dtype = dtype;
  t.impl_->device = device;
  t.impl_->storage = alloc(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  return t;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  return with_storage("Tensor::empty", shape, dtype, device, memory::allocate);
}

Tensor Tensor::empty_pinned(const Shape& shape, DType dtype) {
  return with_storage("Tensor::empty_pinned", shape, dtype, Device::cpu,
                      [](size_t bytes, Device) { return memory::allocate_pinned(bytes); });
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(0.0);
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

template <typename T>
Tensor Tensor::from_vector(const Shape& shape, const std::vector<T>& values, Device device) {
  HG_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
           "Tensor::from_vector: ", values.size(), " values for shape ", shape_str(shape));
  return from_bytes(shape, dtype_of<T>(), values.data(), device);
}
template Tensor Tensor::from_vector<float>(const Shape&, const std::vector<float>&, Device);
template Tensor Tensor::from_vector<double>(const Shape&, const std::vector<double>&, Device);
template Tensor Tensor::from_vector<int64_t>(const Shape&, const std::vector<int64_t>&, Device);
template Tensor Tensor::from_vector<int32_t>(const Shape&, const std::vector<int32_t>&, Device);
template Tensor Tensor::from_vector<uint8_t>(const Shape&, const std::vector<uint8_t>&, Device);

Tensor Tensor::from_bytes(const Shape& shape, DType dtype, const void* bytes, Device device) {
  Tensor t = empty(shape, dtype, device);
  device_memcpy(t.data_ptr(), device, bytes, Device::cpu, t.nbytes());
  return t;
}

// ---- metadata ----------------------------------------------------------------------------------

const Tensor::Impl& Tensor::impl() const {
  HG_CHECK(impl_ != nullptr, "use of an undefined Tensor");
  return *impl_;
}
const Shape& Tensor::shape() const { return impl().shape; }
const Shape& Tensor::strides() const { return impl().strides; }
int64_t Tensor::offset() const { return impl().offset; }
int Tensor::ndim() const { return static_cast<int>(shape().size()); }
int64_t Tensor::numel() const { return shape_numel(shape()); }
DType Tensor::dtype() const { return impl().dtype; }
Device Tensor::device() const { return impl().device; }

int64_t Tensor::size(int d) const {
  int n = ndim();
  HG_CHECK(d >= -n && d < n, "Tensor::size: dim ", d, " out of range for shape ",
           shape_str(shape()));
  return shape()[static_cast<size_t>(d < 0 ? d + n : d)];
}

bool Tensor::is_contiguous() const {
  const Impl& m = impl();
  int64_t expect = 1;
  for (size_t i = m.shape.size(); i-- > 0;) {
    if (m.shape[i] != 1 && m.strides[i] != expect) return false;
    expect *= m.shape[i];
  }
  return true;
}

std::string Tensor::describe() const {
  if (!defined()) return "undefined";
  return str(dtype_name(dtype()), shape_str(shape()), ' ', device_name(device()));
}

// ---- data access -------------------------------------------------------------------------------

void* Tensor::data_ptr() const {
  const Impl& m = impl();
  return static_cast<char*>(m.storage.get()) + m.offset * static_cast<int64_t>(dtype_size(m.dtype));
}

template <typename T>
T* Tensor::data() const {
  HG_CHECK(dtype() == dtype_of<T>(), "Tensor::data: tensor is ", describe(), ", asked for ",
           dtype_name(dtype_of<T>()));
  return static_cast<T*>(data_ptr());
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template int64_t* Tensor::data<int64_t>() const;
template int32_t* Tensor::data<int32_t>() const;
template uint8_t* Tensor::data<uint8_t>() const;
template bf16* Tensor::data<bf16>() const;

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = device() == Device::cpu ? *this : to(Device::cpu);
  std::vector<T> out(static_cast<size_t>(numel()));
  const void* base = static_cast<const char*>(host.impl_->storage.get());
  DType t = dtype();
  for_each_index(host.shape(), host.strides(), [&](int64_t lin, int64_t off) {
    out[static_cast<size_t>(lin)] = static_cast<T>(load_as_double(base, t, host.offset() + off));
  });
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;

double Tensor::item() const {
  HG_CHECK(numel() == 1, "Tensor::item: tensor ", describe(), " has ", numel(), " elements, not 1");
  return to_vector<double>()[0];
}

// ---- views -------------------------------------------------------------------------------------

Tensor Tensor::make_view(const Shape& shape, const Shape& strides, int64_t offset) const {
  Tensor v;
  v.impl_ = std::make_shared<Impl>();
  v.impl_->storage = impl_->storage;
  v.impl_->shape = shape;
  v.impl_->strides = strides;
  v.impl_->offset = offset;
  v.impl_->dtype = impl_->dtype;
  v.impl_->device = impl_->device;
  return v;
}

Tensor Tensor::reshape(const Shape& new_shape_in) const {
  Shape ns = new_shape_in;
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (ns[i] == -1) {
      HG_CHECK(infer < 0, "reshape: more than one -1 in ", shape_str(new_shape_in));
      infer = static_cast<int>(i);
    } else {
      HG_CHECK(ns[i] >= 0, "reshape: bad size in ", shape_str(new_shape_in));
      known *= ns[i];
    }
  }
  if (infer >= 0) {
    HG_CHECK(known > 0 && numel() % known == 0, "reshape: cannot reshape ", describe(), " to ",
             shape_str(new_shape_in));
    ns[static_cast<size_t>(infer)] = numel() / known;
  }
  HG_CHECK(shape_numel(ns) == numel(), "reshape: cannot reshape ", describe(), " (", numel(),
           " elements) to ", shape_str(new_shape_in));
  Tensor src = is_contiguous() ? *this : dense_copy(*this);
  Tensor out = src.make_view(ns, contiguous_strides(ns), src.offset());
  Shape old_shape = shape();
  autograd::record("reshape", {*this}, {out}, [old_shape](autograd::Backward& g) {
    return std::vector<Tensor>{g.grad_output(0).reshape(old_shape)};
  });
  return out;
}

Tensor Tensor::permute(const std::vector<int>& dims) const {
  const int n = ndim();
  HG_CHECK(static_cast<int>(dims.size()) == n, "permute: ", dims.size(), " dims for tensor ",
           describe());
  std::vector<bool> seen(static_cast<size_t>(n), false);
  Shape ns(static_cast<size_t>(n)), st(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    int d = dims[static_cast<size_t>(i)];
    HG_CHECK(d >= 0 && d < n && !seen[static_cast<size_t>(d)], "permute: bad dims ",
             shape_str(dims), " for tensor ", describe());
    seen[static_cast<size_t>(d)] = true;
    ns[static_cast<size_t>(i)] = shape()[static_cast<size_t>(d)];
    st[static_cast<size_t>(i)] = strides()[static_cast<size_t>(d)];
  }
  Tensor out = make_view(ns, st, offset());
  std::vector<int> inverse(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) inverse[static_cast<size_t>(dims[static_cast<size_t>(i)])] = i;
  autograd::record("permute", {*this}, {out}, [inverse](autograd::Backward& g) {
    return std::vector<Tensor>{g.grad_output(0).permute(inverse).contiguous()};
  });
  return out;
}

Tensor Tensor::slice(int dim, int64_t begin, int64_t end) const {
  const int n = ndim();
  HG_CHECK(dim >= -n && dim < n, "slice: dim ", dim, " out of range for ", describe());
  size_t d = static_cast<size_t>(dim < 0 ? dim + n : dim);
  HG_CHECK(0 <= begin && begin <= end && end <= shape()[d], "slice: [", begin, ", ", end,
           ") out of range for dim ", d, " of ", describe());
  Shape ns = shape();
  ns[d] = end - begin;
  Tensor out = make_view(ns, strides(), offset() + begin * strides()[d]);
  Shape full_shape = shape();
  DType dt = dtype();
  Device dev = device();
  autograd::record("slice", {*this}, {out}, [=](autograd::Backward& g) {
    Tensor gx = Tensor::zeros(full_shape, dt, dev);
    gx.slice(static_cast<int>(d), begin, end).copy_(g.grad_output(0));
    return std::vector<Tensor>{gx};
  });
  return out;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::dense_copy(const Tensor& t) {
  Tensor out = Tensor::empty(t.shape(), t.dtype(), t.device());
  out.copy_(t);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = dense_copy(*this);
  autograd::record("clone", {*this}, {out},
                   [](autograd::Backward& g) { return std::vector<Tensor>{g.grad_output(0)}; });
  return out;
}

Tensor Tensor::to(Device d) const {
  if (d == device()) return *this;
  Tensor src = is_contiguous() ? *this : dense_copy(*this);
  Tensor out = Tensor::empty(shape(), dtype(), d);
  device_memcpy(out.data_ptr(), d, src.data_ptr(), src.device(), nbytes());
  Device from = device();
  autograd::record("to_device", {*this}, {out}, [from](autograd::Backward& g) {
    return std::vector<Tensor>{g.grad_output(0).to(from)};
  });
  return out;
}

Tensor Tensor::to(DType t) const {
  if (t == dtype()) return *this;
  Tensor out = Tensor::empty(shape(), t, device());
  out.copy_(*this);
  DType from = dtype();
  autograd::record("to_dtype", {*this}, {out}, [from](autograd::Backward& g) {
    return std::vector<Tensor>{g.grad_output(0).to(from)};
  });
  return out;
}

// ---- in place ----------------------------------------------------------------------------------

void Tensor::copy_(const Tensor& src) {
  HG_CHECK(src.shape() == shape(), "copy_: source ", src.describe(), " does not match destination ",
           describe());
  if (device() == Device::cpu && src.device() == Device::cpu) {
    if (is_contiguous() && src.is_contiguous() && dtype() == src.dtype()) {
      std::memcpy(data_ptr(), src.data_ptr(), nbytes());
      return;
    }
    // general case: strided and/or converting, through double
    std::vector<int64_t> dst_offsets(static_cast<size_t>(numel()));
    for_each_index(shape(), strides(), [&](int64_t lin, int64_t off) {
      dst_offsets[static_cast<size_t>(lin)] = offset() + off;
    });
    void* dbase = impl_->storage.get();
    const void* sbase = src.impl_->storage.get();
    DType dt = dtype(), st = src.dtype();
    int64_t soff = src.offset();
    for_each_index(src.shape(), src.strides(), [&](int64_t lin, int64_t off) {
      store_double(dbase, dt, dst_offsets[static_cast<size_t>(lin)],
                   load_as_double(sbase, st, soff + off));
    });
    return;
  }
  // a device is involved
  if (dtype() == src.dtype() && is_contiguous() && src.is_contiguous()) {
    device_memcpy(data_ptr(), device(), src.data_ptr(), src.device(), nbytes());
    return;
  }
  if (device() == Device::cuda && src.device() == Device::cuda && dtype() == src.dtype()) {
#ifdef HAARGRAD_WITH_CUDA
    kernels::cuda::strided_copy(*this, src);
    return;
#endif
  }
  const auto is_f32_bf16 = [](DType t) { return t == DType::f32 || t == DType::bf16; };
  if (device() == Device::cuda && src.device() == Device::cuda && is_f32_bf16(dtype()) &&
      is_f32_bf16(src.dtype())) {
#ifdef HAARGRAD_WITH_CUDA
    // f32 <-> bf16 on the GPU (mixed precision casts every step: never through the host)
    const Tensor s = src.contiguous();
    if (is_contiguous()) {
      kernels::cuda::convert(*this, s);
    } else {
      Tensor dense = Tensor::empty(shape(), dtype(), device());
      kernels::cuda::convert(dense, s);
      kernels::cuda::strided_copy(*this, dense);
    }
    return;
#endif
  }
  // mixed: stage through the host
  Tensor host_src = src.device() == Device::cpu ? src : src.to(Device::cpu);
  if (device() == Device::cpu) {
    copy_(host_src);
  } else {
    Tensor staged = Tensor::empty(shape(), dtype(), Device::cpu);
    staged.copy_(host_src);
    copy_(staged);
  }
}

void copy_many(const std::vector<Tensor>& dst, const std::vector<Tensor>& src) {
  HG_CHECK(dst.size() == src.size(), "copy_many: ", dst.size(), " destinations for ", src.size(),
           " sources");
#ifdef HAARGRAD_WITH_CUDA
  std::vector<kernels::cuda::CopyItem> items;
#endif
  for (size_t i = 0; i < dst.size(); ++i) {
    Tensor d = dst[i];  // a handle: copy_ writes into dst[i]'s storage
    const Tensor& s = src[i];
#ifdef HAARGRAD_WITH_CUDA
    if (d.device() == Device::cuda && s.device() == Device::cuda && d.dtype() == s.dtype() &&
        d.shape() == s.shape() && d.is_contiguous() && s.is_contiguous()) {
      items.push_back({d.data_ptr(), s.data_ptr(), int64_t(d.nbytes())});
      continue;
    }
#endif
    d.copy_(s);
  }
#ifdef HAARGRAD_WITH_CUDA
  kernels::cuda::copy_many(items);
#endif
}

void Tensor::fill_(double value) {
  if (device() == Device::cuda) {
#ifdef HAARGRAD_WITH_CUDA
    kernels::cuda::fill(*this, value);
    return;
#else
    throw Error("fill_: built without CUDA");
#endif
  }
  void* base = impl_->storage.get();
  DType t = dtype();
  if (is_contiguous() && t == DType::f32) {
    std::fill_n(data<float>(), numel(), static_cast<float>(value));
    return;
  }
  for_each_index(shape(), strides(),
                 [&](int64_t, int64_t off) { store_double(base, t, offset() + off, value); });
}

// ---- autograd state ----------------------------------------------------------------------------

bool Tensor::requires_grad() const { return defined() && impl_->requires_grad; }

Tensor& Tensor::requires_grad_(bool on) {
  impl();
  HG_CHECK(!on || is_floating(dtype()),
           "requires_grad_: only floating tensors can require grad, got ", describe());
  impl_->requires_grad = on;
  if (on && !impl_->slot) impl_->slot = std::make_shared<autograd::GradSlot>();
  if (!on) impl_->slot.reset();
  return *this;
}

bool Tensor::is_leaf() const { return !impl_ || !impl_->slot || impl_->slot->is_leaf; }

Tensor Tensor::grad() const {
  if (!impl_ || !impl_->slot) return Tensor();
  autograd::GradSlot& slot = *impl_->slot;
  if (slot.stale) {  // zeroed but not reached since: the zeros are written now
    slot.grad.fill_(0.0);
    slot.stale = false;
  }
  return slot.grad;
}

void Tensor::zero_grad() const {
  if (impl_ && impl_->slot && impl_->slot->grad.defined()) impl_->slot->stale = true;
}

void Tensor::clear_grad() const {
  if (impl_ && impl_->slot) {
    impl_->slot->grad = Tensor();
    impl_->slot->stale = false;
  }
}

std::shared_ptr<autograd::GradSlot> Tensor::grad_slot() const {
  return impl_ ? impl_->slot : nullptr;
}

void Tensor::set_grad_slot(std::shared_ptr<autograd::GradSlot> slot) const {
  impl();
  impl_->slot = std::move(slot);
  impl_->requires_grad = impl_->slot != nullptr;
}

// ---- checks ------------------------------------------------------------------------------------

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  HG_CHECK(a.shape() == b.shape(), op, ": shapes differ: ", a.describe(), " vs ", b.describe());
}
void check_same_dtype_device(const char* op, const Tensor& a, const Tensor& b) {
  HG_CHECK(a.dtype() == b.dtype() && a.device() == b.device(), op,
           ": dtype/device differ: ", a.describe(), " vs ", b.describe());
}
void check_dtype(const char* op, const Tensor& t, DType dtype) {
  HG_CHECK(t.dtype() == dtype, op, ": expected dtype ", dtype_name(dtype), ", got ", t.describe());
}
void check_ndim(const char* op, const Tensor& t, int ndim) {
  HG_CHECK(t.ndim() == ndim, op, ": expected a ", ndim, "-d tensor, got ", t.describe());
}

}  // namespace hg
