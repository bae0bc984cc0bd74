/// \file
/// Part of ic_runtime.h, and included as it is by the matrix epilogue (matrix/
/// epilogue.cpp): the one float erf both use, as a macro over a SIMD type's operations.
///
/// erf(x) = x·P(x²)/Q(x²) with x clamped to [-4, 4] (erf rounds to ±1 from 3.92 on): the
/// rational minimax approximation of Eigen's generic_fast_erf_float (P degree 6, Q degree 4 in
/// x²), within 6.5 ulp and 3.9e-7 absolute of the correctly rounded erf over every 61st float,
/// the largest errors near |x| = 3.9 (EmitCppTest.ErfIsWithinSevenUlpEverywhere). P/Q is formed
/// before the product with x, so a tiny x keeps its relative accuracy. NaN stays NaN (x86
/// max / min return their second operand when either is NaN); Q < 0 over the whole range.
/// `divide(p, q)`: p / q, by a division or a refined reciprocal. The body returns from the
/// function it is expanded in, whose argument is `x`.
#pragma once

#define IC_ERF_RATIONAL(V, set1, mul, fmadd, divide, min, max)                       \
  const V c = min(set1(4.0f), max(set1(-4.0f), x));                                 \
  const V x2 = mul(c, c);                                                           \
  V p = fmadd(set1(-2.72614225801306e-10f), x2, set1(2.77068142495902e-08f));       \
  p = fmadd(p, x2, set1(-2.10102402082508e-06f));                                   \
  p = fmadd(p, x2, set1(-5.69250639462346e-05f));                                   \
  p = fmadd(p, x2, set1(-7.34990630326855e-04f));                                   \
  p = fmadd(p, x2, set1(-2.95459980854025e-03f));                                   \
  p = fmadd(p, x2, set1(-1.60960333262415e-02f));                                   \
  V q = fmadd(set1(-1.45660718464996e-05f), x2, set1(-2.13374055278905e-04f));      \
  q = fmadd(q, x2, set1(-1.68282697438203e-03f));                                   \
  q = fmadd(q, x2, set1(-7.37332916720468e-03f));                                   \
  q = fmadd(q, x2, set1(-1.42647390514189e-02f));                                   \
  return mul(divide(p, q), c);
