// dtype conversions: f16 / bf16 <-> f32 over every bit pattern against an independent ldexp
// reference (round to nearest even, subnormals, overflow, inf, nan), and Tensor::to(DType).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/autograd.h"
#include "core/dtype.h"
#include "core/ops.h"
#include "test_util.h"

using namespace hg;

namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE binary16 / bfloat16 value of a bit pattern, from the definition (sign, biased exponent,
// fraction), computed in double; NaN patterns give NaN.
double half_value(uint16_t h, int exp_bits, int frac_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t exp = (h >> frac_bits) & ((1u << exp_bits) - 1), frac = h & ((1u << frac_bits) - 1);
  const double sign = (h >> 15) ? -1.0 : 1.0;
  if (exp == (1u << exp_bits) - 1) return frac ? std::nan("") : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(frac, 1 - bias - frac_bits);  // subnormal (or zero)
  return sign * std::ldexp(double((1u << frac_bits) | frac), int(exp) - bias - frac_bits);
}
double f16_value(uint16_t h) { return half_value(h, 5, 10); }
double bf16_value(uint16_t h) { return half_value(h, 8, 7); }

bool is_nan_pattern(uint16_t h, int exp_bits, int frac_bits) {
  const uint32_t exp = (h >> frac_bits) & ((1u << exp_bits) - 1), frac = h & ((1u << frac_bits) - 1);
  return exp == (1u << exp_bits) - 1 && frac != 0;
}

// For each pair of adjacent non-negative finite values (h, h+1) of a 16-bit format, the midpoint
// must round to the one with the even pattern, and the floats just below / above it to h / h+1.
// Covers the subnormal range, the subnormal-normal boundary, and overflow to inf at the top
// (the pair (max finite, inf)). Mirrored for negative values.
template <typename ToHalf, typename Value>
void check_round_to_nearest_even(ToHalf to_half, Value value, uint16_t inf_pattern) {
  for (uint32_t h = 0; h < inf_pattern; ++h) {
    const double lo = value(uint16_t(h));
    // The next value up; for the largest finite one, where the exponent range would continue.
    const double hi = h + 1 < inf_pattern ? value(uint16_t(h + 1)) : 2 * lo - value(uint16_t(h - 1));
    const float mid = static_cast<float>((lo + hi) / 2);  // exact: one more bit than the format
    ASSERT_EQ(double(mid), (lo + hi) / 2);
    const uint16_t even = (h & 1) ? uint16_t(h + 1) : uint16_t(h);
    for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
      const float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(to_half(s * mid), uint16_t(even | sign)) << "tie at " << s * mid;
      ASSERT_EQ(to_half(s * std::nextafter(mid, 0.0f)), uint16_t(h | sign)) << "below " << s * mid;
      ASSERT_EQ(to_half(s * std::nextafter(mid, INFINITY)), uint16_t((h + 1) | sign)) << "above " << s * mid;
      ASSERT_EQ(to_half(s * static_cast<float>(lo)), uint16_t(h | sign)) << "exact " << s * lo;
    }
  }
}

}  // namespace

// ---- f16 ------------------------------------------------------------------------------------------

TEST(DType, F16ToF32EveryPattern) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float got = f16_to_f32(uint16_t(h));
    const double want = f16_value(uint16_t(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
    } else {
      ASSERT_EQ(double(got), want) << std::hex << h;
      ASSERT_EQ(std::signbit(got), bool(h & 0x8000)) << std::hex << h;  // -0 stays -0
    }
  }
}

TEST(DType, F16RoundTripEveryPattern) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t back = f32_to_f16(f16_to_f32(uint16_t(h)));
    if (is_nan_pattern(uint16_t(h), 5, 10))
      EXPECT_TRUE(is_nan_pattern(back, 5, 10)) << std::hex << h << " -> " << back;
    else
      ASSERT_EQ(back, uint16_t(h)) << std::hex << h;
  }
}

TEST(DType, F16RoundsToNearestEvenIncludingSubnormalsAndOverflow) {
  check_round_to_nearest_even(f32_to_f16, f16_value, 0x7c00);
  // Beyond the pairs: far below the smallest subnormal -> signed zero; far above -> inf.
  EXPECT_EQ(f32_to_f16(1e-30f), 0x0000);
  EXPECT_EQ(f32_to_f16(-1e-30f), 0x8000);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);           // half the smallest subnormal: tie -> 0
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);                       // largest finite
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                       // tie with "65536" -> inf
  EXPECT_EQ(f32_to_f16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_f16(-1e10f), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::numeric_limits<float>::max()), 0x7c00);
}

TEST(DType, F16InfAndNan) {
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
  EXPECT_EQ(f32_to_f16(-INFINITY), 0xfc00);
  EXPECT_TRUE(std::isinf(f16_to_f32(0x7c00)) && f16_to_f32(0x7c00) > 0);
  EXPECT_TRUE(std::isinf(f16_to_f32(0xfc00)) && f16_to_f32(0xfc00) < 0);
  // Every NaN stays NaN, including payloads that live only in the low bits f16 drops.
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7f802000u}) {
    uint16_t h = f32_to_f16(float_of(nan));
    EXPECT_TRUE(is_nan_pattern(h, 5, 10)) << std::hex << nan << " -> " << h;
    EXPECT_EQ(bool(h & 0x8000), bool(nan & 0x80000000u)) << std::hex << nan;
  }
}

// ---- bf16 -----------------------------------------------------------------------------------------

TEST(DType, BF16ToF32EveryPatternAndRoundTrip) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float got = bf16_to_f32(uint16_t(h));
    const double want = bf16_value(uint16_t(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
      EXPECT_TRUE(is_nan_pattern(f32_to_bf16(got), 8, 7)) << std::hex << h;
    } else {
      ASSERT_EQ(double(got), want) << std::hex << h;
      ASSERT_EQ(f32_to_bf16(got), uint16_t(h)) << std::hex << h;
    }
  }
}

TEST(DType, BF16RoundsToNearestEvenIncludingSubnormalsAndOverflow) {
  check_round_to_nearest_even(f32_to_bf16, bf16_value, 0x7f80);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // above the last midpoint
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie, 1.0 is even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie, up to even
}

TEST(DType, BF16InfAndNan) {
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xff80);
  // A NaN whose payload is only in the low 16 bits must not truncate to inf.
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x7f80ffffu}) {
    uint16_t h = f32_to_bf16(float_of(nan));
    EXPECT_TRUE(is_nan_pattern(h, 8, 7)) << std::hex << nan << " -> " << h;
    EXPECT_EQ(bool(h & 0x8000), bool(nan & 0x80000000u)) << std::hex << nan;
  }
  EXPECT_EQ(bits_of(bf16_to_f32(0x7f80)), 0x7f800000u);
}

// ---- Tensor::to(DType) ----------------------------------------------------------------------------

TEST(DType, TensorToFloatingRoundTrips) {
  autograd::NoGradGuard no_grad;
  Tensor x64 = test::random({4, 5}, 21, DType::f64, -3e4, 3e4);
  std::vector<double> v = x64.to_vector<double>();

  // f64 -> f32 rounds each value like a cast; f32 -> f64 -> f32 is exact.
  Tensor x32 = x64.to(DType::f32);
  EXPECT_EQ(x32.dtype(), DType::f32);
  std::vector<float> v32 = x32.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v32[i], static_cast<float>(v[i]));
  EXPECT_EQ(x32.to(DType::f64).to(DType::f32).to_vector<float>(), v32);

  // f32 -> f16 / bf16 rounds like the scalar conversions; values already in the format survive.
  for (DType half : {DType::f16, DType::bf16}) {
    Tensor h = x32.to(half);
    EXPECT_EQ(h.dtype(), half);
    std::vector<float> back = h.to(DType::f32).to_vector<float>();
    for (size_t i = 0; i < v32.size(); ++i) {
      float want = half == DType::f16 ? f16_to_f32(f32_to_f16(v32[i])) : bf16_to_f32(f32_to_bf16(v32[i]));
      EXPECT_EQ(back[i], want) << dtype_name(half) << " " << v32[i];
    }
    Tensor again = h.to(DType::f64).to(half);
    EXPECT_EQ(std::memcmp(again.data_ptr(), h.data_ptr(), h.nbytes()), 0) << dtype_name(half);
  }

  // A non-contiguous view converts in its own row-major order.
  Tensor t = x64.permute({1, 0});
  std::vector<float> tv = t.to(DType::f32).to_vector<float>();
  for (int r = 0; r < 5; ++r)
    for (int c = 0; c < 4; ++c) EXPECT_EQ(tv[size_t(r * 4 + c)], static_cast<float>(v[size_t(c * 5 + r)]));
  // Same dtype: the same tensor, no copy.
  EXPECT_EQ(x64.to(DType::f64).data_ptr(), x64.data_ptr());
}

TEST(DType, TensorToIntegerAndBool) {
  autograd::NoGradGuard no_grad;
  std::vector<int64_t> iv{-(int64_t(1) << 52) + 3, -7, 0, 9, int64_t(1) << 52};
  Tensor i = Tensor::from_vector<int64_t>({5}, iv);
  EXPECT_EQ(i.to(DType::f64).to(DType::i64).to_vector<int64_t>(), iv);
  EXPECT_EQ(i.to(DType::i32).dtype(), DType::i32);
  EXPECT_EQ(Tensor::from_vector<int64_t>({2}, {-70000, 70000}).to(DType::i32).to_vector<int32_t>(),
            (std::vector<int32_t>{-70000, 70000}));
  // Floating -> integer truncates toward zero (as C++ and PyTorch do).
  EXPECT_EQ(Tensor::from_vector<double>({4}, {-2.7, -0.5, 0.5, 2.7}).to(DType::i64).to_vector<int64_t>(),
            (std::vector<int64_t>{-2, 0, 0, 2}));
  std::vector<uint8_t> u{0, 1, 127, 200, 255};
  EXPECT_EQ(Tensor::from_vector<uint8_t>({5}, u).to(DType::f32).to(DType::u8).to_vector<uint8_t>(), u);
  // bool: nonzero -> true (stored as 1), and back to 0 / 1.
  Tensor b = Tensor::from_vector<double>({5}, {0.0, 0.25, -3.0, 0.0, 1e-300}).to(DType::boolean);
  EXPECT_EQ(b.dtype(), DType::boolean);
  const uint8_t* raw = static_cast<const uint8_t*>(b.data_ptr());
  EXPECT_EQ(std::vector<uint8_t>(raw, raw + 5), (std::vector<uint8_t>{0, 1, 1, 0, 1}));
  EXPECT_EQ(b.to(DType::f32).to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 1}));
}

TEST(DType, TensorToGradient) {
  // The gradient of a dtype conversion is the incoming gradient converted back.
  Tensor x = test::random({3, 4}, 22).requires_grad_();
  Tensor w = test::random({3, 4}, 23, DType::f32);
  autograd::backward(ops::sum_all(ops::mul(x.to(DType::f32), w)));
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().dtype(), DType::f64);
  EXPECT_EQ(x.grad().to_vector<double>(), w.to(DType::f64).to_vector<double>());
  // Finite differences through f32 rounding: a larger step keeps the rounding error ~1e-5.
  auto round_trip = [](const std::vector<Tensor>& in) { return in[0].to(DType::f32).to(DType::f64); };
  EXPECT_LT(test::gradcheck(round_trip, {test::random({2, 3}, 24).requires_grad_()}, 1e-3), 1e-3);
}
