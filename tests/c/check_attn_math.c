/*
** check_attn_math.c -- MathTest: the attention kernels' math primitives as the
** C backend emits them (kg_math_eval on KG_BACKEND_C: the dialect's libm
** forms and its butterfly over 32 emulated lanes) against double-precision
** libm, on a spread of inputs: negatives, tiny and huge magnitudes, values
** near 1, specials.
**
** Stated bounds (C backend, f32 libm; glibc documents at most 1-2 ulp):
**   exp2 <= 1 ulp, log2 <= 1 ulp, rcp <= 0.5 ulp (an IEEE division),
**   rsqrt <= 1.5 ulp (sqrtf then a division), tanh <= 2 ulp.
** ulp(r) is the spacing of f32 at the reference r (2^-149 below the normal
** range). Specials are exact: exp2(-inf) = 0, exp2(inf) = inf, log2(0) = -inf,
** log2(inf) = inf, tanh(+-inf) = +-1, tanh(+-0) = +-0, NaN in gives NaN out.
** Shuffles are exact: SHFL_XOR for every lane mask, XOR_SUM on integer values
** (exact sums) and XOR_MAX for every width. Outputs start as NaN; NaN never
** passes a bound check.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "test_util.h"

enum { NX = 4096 };
static float xs[NX], ys[NX];

/* f32 ulp at |r|. */
static double ulp_at(double r) {
  r = fabs(r);
  if (r < ldexp(1.0, -126)) return ldexp(1.0, -149);
  int e;
  frexp(r, &e);            /* r in [2^(e-1), 2^e) */
  return ldexp(1.0, e - 24);
}

static kg_status eval(kg_math_fn fn, int64_t n, int arg) {
  kg_math_args a;
  memset(&a, 0, sizeof a);
  a.fn = fn; a.n = n; a.x = xs; a.y = ys;
  a.lane_mask = arg; a.width = arg;
  kg_exec ex = tu_exec_c();
  for (int64_t i = 0; i < n; i++) ys[i] = NAN;
  return kg_math_eval(&a, &ex);
}

/* Fills xs with n inputs from [lo, hi] spread logarithmically (sign kept) or linearly. */
static int fill_spread(double lo, double hi, int log_spread, uint64_t seed) {
  int n = 0;
  for (int i = 0; i < 2000; i++) {
    double t = (double)i / 1999.0, x;
    if (log_spread) {
      const double a = log(fabs(lo)), b = log(fabs(hi));
      x = exp(a + (b - a) * t);
      if (lo < 0 && i % 2) x = -x;
    } else {
      x = lo + (hi - lo) * t;
    }
    xs[n++] = (float)x;
  }
  for (int i = 0; i < 1000; i++) {
    const double t = ar_uniform(&seed);
    xs[n++] = (float)(log_spread ? (lo < 0 && i % 2 ? -1 : 1) * exp(log(fabs(lo)) + (log(fabs(hi)) - log(fabs(lo))) * t)
                                 : lo + (hi - lo) * t);
  }
  return n;
}

typedef double (*ref_fn)(double);
static double ref_rcp(double x) { return 1.0 / x; }
static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }

/* Max ulp error of fn over xs[0 .. n); fails past bound. */
static void check_ulp(kg_math_fn fn, const char *nm, ref_fn ref, int n, double bound) {
  ck_assert_int_eq(eval(fn, n, 0), KG_SUCCESS);
  for (int i = 0; i < n; i++) {
    const double r = ref((double)xs[i]);
    const double e = fabs((double)ys[i] - r) / ulp_at(r);
    if (!(e <= bound)) ck_abort_msg("%s(%.9g) = %.9g, libm %.17g: %.2f ulp > %.2f", nm, xs[i], ys[i], r, e, bound);
  }
}

START_TEST(test_exp2) {
  int n = fill_spread(-125.0, 127.0, 0, 1);
  for (int i = 0; i < 200; i++) xs[n++] = (float)ldexp((i % 2 ? -1 : 1) * (1 + i), -30 + i / 10);   /* small |x| */
  check_ulp(KG_MATH_EXP2, "exp2", exp2, n, 1.0);
  xs[0] = -INFINITY; xs[1] = INFINITY; xs[2] = NAN; xs[3] = 0.0f; xs[4] = -0.0f;
  ck_assert_int_eq(eval(KG_MATH_EXP2, 5, 0), KG_SUCCESS);
  ck_assert(ys[0] == 0.0f && isinf(ys[1]) && ys[1] > 0 && isnan(ys[2]) && ys[3] == 1.0f && ys[4] == 1.0f);
}
END_TEST

START_TEST(test_log2) {
  int n = fill_spread(1e-37, 3e38, 1, 2);
  for (int i = 0; i < 400; i++) xs[n++] = 1.0f + (float)ldexp(i - 200, -12);   /* near 1 */
  check_ulp(KG_MATH_LOG2, "log2", log2, n, 1.0);
  xs[0] = 0.0f; xs[1] = INFINITY; xs[2] = NAN; xs[3] = -1.0f; xs[4] = 1.0f;
  ck_assert_int_eq(eval(KG_MATH_LOG2, 5, 0), KG_SUCCESS);
  ck_assert(isinf(ys[0]) && ys[0] < 0 && isinf(ys[1]) && ys[1] > 0 && isnan(ys[2]) && isnan(ys[3]) && ys[4] == 0.0f);
}
END_TEST

START_TEST(test_rcp_rsqrt) {
  int n = fill_spread(-1e37, 1e-37, 1, 3);
  check_ulp(KG_MATH_RCP, "rcp", ref_rcp, n, 0.5);
  n = fill_spread(1e-37, 1e37, 1, 4);
  check_ulp(KG_MATH_RSQRT, "rsqrt", ref_rsqrt, n, 1.5);
  xs[0] = 0.0f; xs[1] = INFINITY; xs[2] = NAN;
  ck_assert_int_eq(eval(KG_MATH_RCP, 3, 0), KG_SUCCESS);
  ck_assert(isinf(ys[0]) && ys[1] == 0.0f && isnan(ys[2]));
  ck_assert_int_eq(eval(KG_MATH_RSQRT, 3, 0), KG_SUCCESS);
  ck_assert(isinf(ys[0]) && ys[1] == 0.0f && isnan(ys[2]));
}
END_TEST

START_TEST(test_tanh) {
  int n = fill_spread(-20.0, 20.0, 0, 5);
  for (int i = 0; i < 300; i++) xs[n++] = (float)ldexp((i % 2 ? -1.0 : 1.0) * (1.0 + i / 300.0), -40 + i / 10);
  for (int i = 0; i < 200; i++) xs[n++] = (float)(0.1 + i * 0.0005);   /* around 0.125 */
  check_ulp(KG_MATH_TANH, "tanh", tanh, n, 2.0);
  xs[0] = -INFINITY; xs[1] = INFINITY; xs[2] = NAN; xs[3] = 0.0f; xs[4] = -0.0f;
  ck_assert_int_eq(eval(KG_MATH_TANH, 5, 0), KG_SUCCESS);
  ck_assert(ys[0] == -1.0f && ys[1] == 1.0f && isnan(ys[2]) && ys[3] == 0.0f && !signbit(ys[3]) && ys[4] == 0.0f &&
            signbit(ys[4]));
}
END_TEST

START_TEST(test_shuffles) {
  const int lanes = kg_math_lanes(KG_BACKEND_C);
  ck_assert_int_eq(lanes, 32);
  ck_assert_int_eq(kg_math_lanes(KG_BACKEND_CUDA), 32);
  ck_assert_int_eq(kg_math_lanes(KG_BACKEND_HIP), 64);
  const int n = 8 * lanes;
  uint64_t seed = 6;
  for (int i = 0; i < n; i++) xs[i] = (float)ar_int(&seed, -1000, 1000);
  for (int mask = 0; mask < lanes; mask++) {
    ck_assert_int_eq(eval(KG_MATH_SHFL_XOR, n, mask), KG_SUCCESS);
    for (int i = 0; i < n; i++) {
      const int src = (i / lanes) * lanes + ((i % lanes) ^ mask);
      ck_assert_msg(ys[i] == xs[src], "shfl_xor mask %d lane %d: %g, want %g", mask, i, ys[i], xs[src]);
    }
  }
  for (int w = 1; w <= lanes; w *= 2) {
    ck_assert_int_eq(eval(KG_MATH_XOR_SUM, n, w), KG_SUCCESS);
    for (int i = 0; i < n; i++) {
      double want = 0.0;
      for (int j = i / w * w; j < i / w * w + w; j++) want += xs[j];
      ck_assert_msg(ys[i] == want, "xor_sum width %d lane %d: %g, want %g", w, i, ys[i], want);
    }
    for (int i = 0; i < n; i++) xs[i] = (float)ar_sym(&seed);
    xs[3] = NAN;   /* ignored by the max unless every lane is NaN */
    ck_assert_int_eq(eval(KG_MATH_XOR_MAX, n, w), KG_SUCCESS);
    for (int i = 0; i < n; i++) {
      float want = -INFINITY;
      int all_nan = 1;
      for (int j = i / w * w; j < i / w * w + w; j++)
        if (!isnan(xs[j])) { all_nan = 0; if (xs[j] > want) want = xs[j]; }
      if (all_nan) ck_assert_msg(isnan(ys[i]), "xor_max width %d lane %d: %g, want NaN", w, i, ys[i]);
      else ck_assert_msg(ys[i] == want, "xor_max width %d lane %d: %g, want %g", w, i, ys[i], want);
    }
    for (int i = 0; i < n; i++) xs[i] = (float)ar_int(&seed, -1000, 1000);
  }
}
END_TEST

START_TEST(test_validation) {
  kg_math_args a;
  kg_exec ex = tu_exec_c();
  memset(&a, 0, sizeof a);
  a.fn = KG_MATH_EXP2; a.n = 4; a.x = xs; a.y = ys;
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_SUCCESS);
  a.fn = (kg_math_fn)99;
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  a.fn = KG_MATH_EXP2; a.y = xs + 2;
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_ERROR_INVALID_PROBLEM);   /* overlap */
  a.y = ys; a.fn = KG_MATH_SHFL_XOR; a.n = 33;
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_ERROR_INVALID_PROBLEM);   /* not whole warps */
  a.n = 64; a.lane_mask = 32;
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  a.fn = KG_MATH_XOR_SUM; a.width = 3;
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  a.width = 64;
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  a.x = NULL;
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_math_eval(NULL, &ex), KG_ERROR_INVALID_ARGUMENT);
  const char *name = NULL;
  a.x = xs; a.width = 8;
  ck_assert_int_eq(kg_attn_select(KG_OP_MATH, &a, &ex, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_attn_c_math");
  a.fn = KG_MATH_EXP2; a.n = 4;
  a.x = (const float *)((const char *)xs + 2);
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_ERROR_MISALIGNED_OPERAND);
  a.x = xs; a.y = (float *)((char *)ys + 1);
  ck_assert_int_eq(kg_math_eval(&a, &ex), KG_ERROR_MISALIGNED_OPERAND);
}
END_TEST

Suite *math_suite(void) {
  Suite *s = suite_create("MathTest");
  TCase *tc = tcase_create("math");
  tcase_add_test(tc, test_exp2);
  tcase_add_test(tc, test_log2);
  tcase_add_test(tc, test_rcp_rsqrt);
  tcase_add_test(tc, test_tanh);
  tcase_add_test(tc, test_shuffles);
  tcase_add_test(tc, test_validation);
  suite_add_tcase(s, tc);
  return s;
}
