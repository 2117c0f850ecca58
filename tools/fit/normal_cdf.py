#!/usr/bin/env python3
"""Fits the polynomials of kernels/cpu/normal_cdf.h (the CPU's vectorised exact GELU) and prints them
as C++ constants. Needs only mpmath (Debian: python3-mpmath).

  Phi(-a) = t * S(t) * exp(-a^2 / 2),  t = 1 / (1 + Q a),  0 <= a <= A_MAX   (Phi: normal CDF)
  exp(r)  = E(r),                      |r| <= R_MAX                            (after range reduction)

S and E are interpolants at Chebyshev nodes (near-minimax), written in s = (x - c) / h, s in
[-1, 1], for a well-conditioned Horner evaluation. The script prints the maximum relative error of
each in exact arithmetic; the float evaluation adds a few ulps (tests/layers/normal_cdf_test.cpp
measures the result).

Run: python3 tools/fit/normal_cdf.py
"""
import mpmath as mp

mp.mp.dps = 40

Q = mp.mpf("0.3")
A_MAX = mp.mpf("12.5")   # Phi(-12.5) = 3.8e-36, still a normal float
S_DEGREE = 9
R_MAX = mp.mpf("0.36")   # > ln(2) / 2 plus the rounding of the reduction
E_DEGREE = 6


def chebyshev_interpolant(f, lo, hi, degree):
    """Coefficients (low to high) of the polynomial in s = (x - c) / h through f at the Chebyshev
    nodes of [lo, hi], and c, h."""
    c, h = (lo + hi) / 2, (hi - lo) / 2
    nodes = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / (degree + 1)) for k in range(degree + 1)]
    vander = mp.matrix(degree + 1, degree + 1)
    values = mp.matrix(degree + 1, 1)
    for i, s in enumerate(nodes):
        for j in range(degree + 1):
            vander[i, j] = s ** j
        values[i] = f(c + h * s)
    coef = mp.lu_solve(vander, values)
    return [coef[j] for j in range(degree + 1)], c, h


def horner(coef, s):
    r = mp.mpf(0)
    for x in reversed(coef):
        r = r * s + x
    return r


def max_rel_error(f, coef, c, h, lo, hi, points=4000):
    return max(abs(horner(coef, (x - c) / h) / f(x) - 1) for x in mp.linspace(lo, hi, points))


def tail_ratio(t):  # S(t) = Phi(-a) exp(a^2/2) / t
    a = (1 / t - 1) / Q
    return mp.ncdf(-a) * mp.exp(a * a / 2) / t


def emit(name, coef, c, h, err, what):
    print(f"// {what}; max relative error {mp.nstr(err, 2)} (exact arithmetic)")
    print(f"constexpr float {name}_c = {mp.nstr(c, 17)}f, {name}_inv_h = {mp.nstr(1 / h, 17)}f;")
    body = ", ".join(f"{mp.nstr(x, 17)}f" for x in coef)
    print(f"constexpr float {name}[{len(coef)}] = {{{body}}};  // s^0 .. s^{len(coef) - 1}")


t_lo, t_hi = 1 / (1 + Q * A_MAX), mp.mpf(1)
s_coef, s_c, s_h = chebyshev_interpolant(tail_ratio, t_lo, t_hi, S_DEGREE)
emit("kTail", s_coef, s_c, s_h, max_rel_error(tail_ratio, s_coef, s_c, s_h, t_lo, t_hi),
     f"S(t), t = 1 / (1 + {Q} a) in [{mp.nstr(t_lo, 6)}, 1]")
e_coef, e_c, e_h = chebyshev_interpolant(mp.exp, -R_MAX, R_MAX, E_DEGREE)
emit("kExp", e_coef, e_c, e_h, max_rel_error(mp.exp, e_coef, e_c, e_h, -R_MAX, R_MAX),
     f"exp(r), |r| <= {R_MAX}")
