/*
** fp4_ref.h -- FP4 reference numerics shared by the Check suites (tests/c/check_*fp4.c) and the
** GPU test programs (tests/gpu/test_gpu_*fp4.c). Plain double-precision C written from kg.h and
** shared/reference/fp4.md / dualgemm.md: never the runtime's helpers or generated code.
** Static functions; include once per program, after kg.h.
*/
#ifndef KG_FP4_REF_H
#define KG_FP4_REF_H

#include <math.h>
#include <stdint.h>

#include "kg.h"

/* The 8 E2M1 magnitudes, code order. */
static const double REF_E2M1_MAG[8] __attribute__((unused)) = { 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0 };

/* E2M1 value of a nibble (bit 3 the sign). */
static inline double ref_e2m1(unsigned code) {
  double v = REF_E2M1_MAG[code & 7u];
  return (code & 8u) ? -v : v;
}

/* Nearest E2M1 magnitude, ties to the even code, saturating at 6; NaN -> +0; sign kept
** (negative values that round to zero give 8). */
static inline unsigned ref_e2m1_code(double x) {
  if (isnan(x)) return 0;
  double a = fabs(x);
  unsigned best = 7;
  if (a < 6.0) {
    double bd = INFINITY;
    for (unsigned c = 0; c < 8; c++) {
      double d = fabs(a - REF_E2M1_MAG[c]);
      if (d < bd || (d == bd && c % 2 == 0)) { best = c; bd = d; }
    }
  }
  return (signbit(x) ? 8u : 0u) | best;
}

/* One FP4 step (element units) at magnitude a. */
static inline double ref_e2m1_step(double a) { return a < 2.0 ? 0.5 : a < 4.0 ? 1.0 : 2.0; }

/* E4M3 value of a byte (sign bit honoured; 0x7f / 0xff NaN). */
static inline double ref_e4m3(unsigned c) {
  unsigned e = (c >> 3) & 15u, m = c & 7u;
  if (e == 15 && m == 7) return NAN;
  double v = e == 0 ? ldexp((double)m, -9) : ldexp(1.0 + m / 8.0, (int)e - 7);
  return (c & 0x80u) ? -v : v;
}

/* UE8M0 value of a byte: 2^(e - 127), 255 NaN. */
static inline double ref_ue8m0(unsigned e) { return e == 255 ? NAN : ldexp(1.0, (int)e - 127); }

/* UE8M0 byte of a block amax by kg_mx_scale_round rule (up, down, OCP), from powers of two in
** double, clamped to 0..254; amax <= 0 or NaN gives 0, Inf 254. */
static inline unsigned ref_mx_byte(double amax, int rule) {
  if (!(amax > 0.0)) return 0;
  if (isinf(amax)) return 254;
  int e;
  if (rule == KG_MX_ROUND_UP) {          /* smallest e with amax <= 6 * 2^e */
    e = ilogb(amax);
    while (amax > ldexp(6.0, e)) e++;
    while (amax <= ldexp(6.0, e - 1)) e--;
  } else if (rule == KG_MX_ROUND_DOWN) { /* largest e with 6 * 2^e <= amax */
    e = ilogb(amax);
    while (ldexp(6.0, e) > amax) e--;
    while (ldexp(6.0, e + 1) <= amax) e++;
  } else {                                /* OCP: floor(log2 amax) - 2 */
    e = ilogb(amax) - 2;
  }
  e += 127;
  return (unsigned)(e < 0 ? 0 : e > 254 ? 254 : e);
}

/* fp4.md byte offset of the scale of (group g, row r, scale column kb) in a buffer of groups of
** rows x kv scales, and the size of `groups` such groups (linear, 128x4 and 8x4 atoms). */
static inline int64_t ref_sf_off(int layout, int64_t rows, int64_t kv, int64_t g, int64_t r, int64_t kb) {
  int64_t kt = (kv + 3) / 4;
  if (layout == KG_SF_LINEAR) return g * rows * kv + r * kv + kb;
  if (layout == KG_SF_SWIZZLED_128X4) {
    int64_t mt = (rows + 127) / 128;
    return g * mt * kt * 512 + (r / 128) * (kt * 512) + (kb / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + kb % 4;
  }
  int64_t mt = (rows + 7) / 8;
  return g * mt * kt * 32 + (r / 8) * (kt * 32) + (kb / 4) * 32 + (r % 8) * 4 + kb % 4;
}
static inline size_t ref_sf_bytes(int layout, int64_t rows, int64_t kv, int64_t groups) {
  int64_t kt = (kv + 3) / 4;
  if (layout == KG_SF_LINEAR) return (size_t)(groups * rows * kv);
  if (layout == KG_SF_SWIZZLED_128X4) return (size_t)(groups * ((rows + 127) / 128) * kt * 512);
  return (size_t)(groups * ((rows + 7) / 8) * kt * 32);
}

/* DualGemm epilogue op(x, y) in double (kg_dual_op): swiglu x sigmoid(x) y, geglu (tanh form)
** x y / (1 + exp(-2u)), mul x y. */
static inline double ref_dual_op(int op, double x, double y) {
  if (op == KG_DUAL_SWIGLU) return x / (1.0 + exp(-x)) * y;
  if (op == KG_DUAL_GEGLU) return x / (1.0 + exp(-1.5957691216057308 * (x + 0.044715 * x * x * x))) * y;
  return x * y;
}

#endif /* KG_FP4_REF_H */
