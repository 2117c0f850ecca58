// The standard normal CDF Phi(x) and density phi(x) in float, branch-free so that a loop over them
// vectorises (the CPU's exact GELU: y = x Phi(x), dy/dx = Phi(x) + x phi(x); kernels/cpu/gelu.cpp).
//
//   a = min(|x|, 12.5),  e = exp(-a^2 / 2),  t = 1 / (1 + 0.3 a)
//   tail = Phi(-a) = t * S(t) * e        (S: degree-9 polynomial, tools/fit/normal_cdf.py)
//   Phi(x) = x < 0 ? tail : 1 - tail,   phi(x) = e / sqrt(2 pi)
//
// exp(-a^2/2) is our own too: a^2/2 is split into an exact high part (a with its low 12 mantissa bits
// cleared, squared) and a small low part, reduced by n ln 2 (Cody-Waite, ln 2 in two pieces) to
// |r| <= 0.36, then a degree-6 polynomial and 2^n put into the exponent bits.
//
// Error, against double-precision erfc / exp (tests/layers/normal_cdf_test.cpp sweeps every 509th
// float of [-12.5, 12.5]; every 61st gave a maximum of 4.7e-7 for Phi and 2.1e-7 for phi, with and
// without FMA): Phi(x) within 5e-7 relative on [-12.5, 12.5], so within 5e-7 absolute everywhere and
// accurate deep in the negative tail, where 1 + erf(x / sqrt 2) has lost all its digits (x < -5.4);
// phi(x) within 3e-7 relative. For x < -12.5, Phi is clamped to Phi(-12.5) = 3.8e-36 (GELU is then
// off by < 4e-36 |x|); for x > 12.5 it is 1. A NaN x gives a number here, but GELU multiplies by x.
#pragma once

#include <bit>
#include <cstdint>

namespace hg::kernels::cpu {
namespace normal_cdf_detail {

// Printed by tools/fit/normal_cdf.py (Chebyshev interpolants, Horner in s = (x - c) / h).
// S(t), t = 1 / (1 + 0.3 a) in [0.210526, 1]; max relative error 4.1e-9 (exact arithmetic)
constexpr float kTail_c = 0.60526315789473684f, kTail_inv_h = 2.5333333333333333f;
constexpr float kTail[10] = {0.26071647146408065f,    0.16164894996910615f,    0.065022605998275495f,
                             0.01384147820554284f,    -0.00039374991503524685f, -0.00087464076224446452f,
                             -2.2451481644173031e-5f, 6.6077434880709762e-5f,  7.1316459608545083e-8f,
                             -4.8138237932700039e-6f};
// exp(r), |r| <= 0.36; max relative error 3.3e-9 (exact arithmetic)
constexpr float kExp_inv_h = 2.7777777777777778f;
constexpr float kExp[7] = {1.0f, 0.36000001705976022f, 0.064800000767205902f, 0.0077758635525924388f,
                           0.00069983386345667723f, 5.0661190806151217e-5f, 3.0355752643818041e-6f};

constexpr float kTailQ = 0.3f;
constexpr float kMaxAbs = 12.5f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;          // 355/512: n * kLn2Hi is exact for |n| < 2^15
constexpr float kLn2Lo = -2.12194440054690583e-4f;  // ln 2 - kLn2Hi
constexpr float kRoundMagic = 12582912.0f;     // 1.5 * 2^23: (v + m) - m rounds v to an integer
constexpr float kInvSqrt2Pi = 0.398942280401432678f;

/// exp(-(hi + lo)) for hi in [0, 79], |lo| <= 2^-11 hi: branch-free.
inline float exp_neg(float hi, float lo) {
  const float n = (-hi * kLog2e + kRoundMagic) - kRoundMagic;  // nearest integer to -hi / ln 2
  const float r = ((-hi - n * kLn2Hi) - n * kLn2Lo) - lo;       // -hi - n ln2 is exact (Sterbenz)
  const float s = r * kExp_inv_h;  // Horner written out: a loop here keeps the caller from vectorising
  const float p =
      kExp[0] + s * (kExp[1] + s * (kExp[2] + s * (kExp[3] + s * (kExp[4] + s * (kExp[5] + s * kExp[6])))));
  const int32_t scale_bits = (static_cast<int32_t>(n) + 127) << 23;  // 2^n, n in [-114, 0]
  return p * std::bit_cast<float>(scale_bits);
}

}  // namespace normal_cdf_detail

/// Phi(x) and phi(x) (see the top of this file for the error bounds). Branch-free.
inline void normal_cdf_pdf(float x, float& cdf, float& pdf) {
  using namespace normal_cdf_detail;
  // Selections on the bits (integer min and masks), not float compares: compilers keep float
  // compares as branches under the default floating-point-exception rules, which stops vectorising.
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint32_t abs_bits = bits & 0x7FFFFFFFu;
  constexpr uint32_t kMaxAbsBits = std::bit_cast<uint32_t>(kMaxAbs);
  const float a = std::bit_cast<float>(abs_bits < kMaxAbsBits ? abs_bits : kMaxAbsBits);  // NaN -> kMaxAbs
  // a^2 / 2 = hi + lo with hi exact: ah keeps 12 significant bits, so ah * ah fits a float.
  const float ah = std::bit_cast<float>(std::bit_cast<uint32_t>(a) & 0xFFFFF000u);
  const float al = a - ah;
  const float hi = 0.5f * ah * ah, lo = 0.5f * al * (a + ah);
  const float e = exp_neg(hi, lo);
  const float t = 1.0f / (1.0f + kTailQ * a);
  const float s = (t - kTail_c) * kTail_inv_h;
  const float poly =
      kTail[0] +
      s * (kTail[1] +
           s * (kTail[2] +
                s * (kTail[3] +
                     s * (kTail[4] + s * (kTail[5] + s * (kTail[6] + s * (kTail[7] + s * (kTail[8] + s * kTail[9]))))))));
  const float tail = t * poly * e;
  const uint32_t negative = 0u - (bits >> 31);  // all ones when the sign bit is set
  cdf = std::bit_cast<float>((std::bit_cast<uint32_t>(tail) & negative) |
                             (std::bit_cast<uint32_t>(1.0f - tail) & ~negative));
  pdf = kInvSqrt2Pi * e;
}

}  // namespace hg::kernels::cpu
