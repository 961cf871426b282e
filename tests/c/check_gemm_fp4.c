/*
** check_gemm_fp4.c -- GemmFp4Test: block-scaled FP4 GEMM on the C backend, W4A16 and W4A4
** (A quantized too, decoded here like the weights).
**
** The reference is written here, independent of the runtime: the test
** decodes every weight itself (E2M1 table, E4M3 / UE8M0 scale values and the
** three scale layouts by fp4.md's formulas) and sums in double on the
** dequantized operands. Tolerance: the output type's rounding of |ref| plus
** the f32 accumulation error bound (k + 4) * 2^-23 * sum |a| |w|.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp4_ref.h"
#include "kg_internal.h"
#include "test_util.h"

#define POISON8 0xA5u

typedef struct gprob {
  kg_gemm_fp4_args a;
  int bsz;            /* block size */
  int64_t kv;
  float gs;           /* NVFP4 global scale (host copy; 1 when NULL) */
  float gsa;          /* W4A4: A's global scale (host copy; 1 when NULL) */
} gprob;

static void free_gprob(gprob *p) {
  tu_free((void *)p->a.a); tu_free((void *)p->a.b); tu_free((void *)p->a.sf_b);
  tu_free((void *)p->a.c); tu_free(p->a.d); tu_free((void *)p->a.global_scale_b);
  tu_free((void *)p->a.sf_a); tu_free((void *)p->a.global_scale_a);
}

/* Random problem: A in [-2, 2), every E2M1 code, scales in a moderate range,
** the swizzled padding (never read) set to poison bytes, D poisoned. */
static gprob make_gprob(int64_t m, int64_t n, int64_t k, kg_dtype t, int format, int layout, int with_gs,
                        int with_c, int bias_row, uint64_t seed) {
  gprob p;
  memset(&p, 0, sizeof p);
  tu_rng rng;
  tu_rng_seed(&rng, seed);
  kg_gemm_fp4_args *a = &p.a;
  a->m = m; a->n = n; a->k = k; a->dtype = t; a->format = (kg_fp4_format)format; a->sf_layout = (kg_sf_layout)layout;
  p.bsz = format == KG_FP4_NVFP4 ? 16 : 32;
  p.kv = (k + p.bsz - 1) / p.bsz;
  a->lda = k + 3;
  a->ldb = k / 2 + 5;
  a->ldd = n + 2;
  void *A = tu_alloc((size_t)(m * a->lda) * 2);
  for (int64_t i = 0; i < m * a->lda; i++) tu_set(A, t, i, tu_rng_uniform(&rng) * 4.0 - 2.0);
  uint8_t *B = tu_alloc((size_t)(n * a->ldb));
  for (int64_t i = 0; i < n * a->ldb; i++) B[i] = (uint8_t)tu_rng_next(&rng);
  a->sf_b_bytes = ref_sf_bytes(layout, n, p.kv, 1);
  uint8_t *S = tu_alloc(a->sf_b_bytes);
  memset(S, 0xff, a->sf_b_bytes);   /* padding: NaN scales in both formats if ever read */
  for (int64_t r = 0; r < n; r++)
    for (int64_t kb = 0; kb < p.kv; kb++)
      S[ref_sf_off(layout, n, p.kv, 0, r, kb)] =
          format == KG_FP4_NVFP4 ? (uint8_t)tu_rng_int(&rng, 0x08, 0x6f) : (uint8_t)tu_rng_int(&rng, 118, 134);
  a->a = A; a->b = B; a->sf_b = S;
  p.gs = 1.0f;
  if (format == KG_FP4_NVFP4 && with_gs) {
    float *g = tu_alloc(sizeof(float));
    g[0] = p.gs = 2688.0f / 317.25f;
    a->global_scale_b = g;
  }
  a->alpha = 0.75f;
  if (with_c) {
    a->ldc = bias_row ? 0 : n + 1;
    int64_t cn = bias_row ? n : m * a->ldc;
    void *C = tu_alloc((size_t)cn * 2);
    for (int64_t i = 0; i < cn; i++) tu_set(C, t, i, tu_rng_uniform(&rng) * 2.0 - 1.0);
    a->c = C; a->beta = -0.5f;
  }
  a->d = tu_alloc((size_t)(m * a->ldd) * 2);
  tu_poison(a->d, t, m * a->ldd);
  return p;
}

/* Dequantized weight (col, kk) from the bytes, by fp4.md. */
static double deq(const gprob *p, int64_t col, int64_t kk) {
  const uint8_t *B = p->a.b, *S = p->a.sf_b;
  unsigned byte = B[col * p->a.ldb + kk / 2];
  unsigned code = kk % 2 ? byte >> 4 : byte & 15u;
  unsigned s = S[ref_sf_off(p->a.sf_layout, p->a.n, p->kv, 0, col, kk / p->bsz)];
  return p->a.format == KG_FP4_NVFP4 ? ref_e2m1(code) * ref_e4m3(s) / (double)p->gs : ref_e2m1(code) * ref_ue8m0(s);
}

/* A(i, kk): the stored 16-bit value, or (W4A4) the FP4 element decoded here like the weights. */
static double a_val(const gprob *p, int64_t i, int64_t kk) {
  if (!p->a.a_fp4) return tu_get(p->a.a, p->a.dtype, i * p->a.lda + kk);
  const uint8_t *A = p->a.a, *S = p->a.sf_a;
  unsigned byte = A[i * p->a.lda + kk / 2];
  unsigned code = kk % 2 ? byte >> 4 : byte & 15u;
  unsigned s = S[ref_sf_off(p->a.sf_layout_a, p->a.m, p->kv, 0, i, kk / p->bsz)];
  return p->a.format == KG_FP4_NVFP4 ? ref_e2m1(code) * ref_e4m3(s) / (double)p->gsa : ref_e2m1(code) * ref_ue8m0(s);
}

/* Compares D with the reference; returns the max error in units of the tolerance. */
static double check_d(const gprob *p, const char *what) {
  const kg_gemm_fp4_args *a = &p->a;
  double *w = malloc(sizeof(double) * (size_t)(a->n * a->k));
  for (int64_t j = 0; j < a->n; j++)
    for (int64_t kk = 0; kk < a->k; kk++) w[j * a->k + kk] = deq(p, j, kk);
  double worst = 0.0, u = tu_unit_roundoff(a->dtype);
  const double tiny = a->dtype == KG_F16 ? ldexp(1.0, -24) : 1e-30;   /* subnormal spacing of f16 */
  for (int64_t i = 0; i < a->m; i++)
    for (int64_t j = 0; j < a->ldd; j++) {
      if (j >= a->n) {
        ck_assert_msg(tu_is_poison(a->d, a->dtype, i * a->ldd + j), "%s: gap (%lld, %lld) written", what,
                      (long long)i, (long long)j);
        continue;
      }
      double s = 0.0, abs = 0.0;
      for (int64_t kk = 0; kk < a->k; kk++) {
        double x = a_val(p, i, kk) * w[j * a->k + kk];
        s += x; abs += fabs(x);
      }
      double ref = a->alpha * s, cterm = 0.0;
      if (a->c && a->beta != 0.0f) cterm = a->beta * tu_get(a->c, a->dtype, i * a->ldc + j);
      ref += cterm;
      double tol = 2.0 * u * fabs(ref) + (double)(a->k + 4) * ldexp(1.0, -23) * fabs(a->alpha) * abs +
                   ldexp(1.0, -22) * fabs(cterm) + tiny;
      double got = tu_get(a->d, a->dtype, i * a->ldd + j);
      ck_assert_msg(fabs(got - ref) <= tol, "%s: D(%lld, %lld) = %.9g, reference %.9g (tol %.3g)", what,
                    (long long)i, (long long)j, got, ref, tol);
      if (fabs(got - ref) / tol > worst) worst = fabs(got - ref) / tol;
    }
  free(w);
  return worst;
}

static void expect_status(const kg_gemm_fp4_args *a, kg_status want) {
  kg_exec e = tu_exec_c();
  kg_status st = kg_gemm_fp4(a, &e);
  ck_assert_msg(st == want, "got %s, wanted %s", kg_status_string(st), kg_status_string(want));
}

static const char *fmt_name(int f) { return f == KG_FP4_NVFP4 ? "nvfp4" : "mxfp4"; }
static const char *lay_name(int l) { return l == KG_SF_LINEAR ? "linear" : l == KG_SF_SWIZZLED_128X4 ? "128x4" : "8x4"; }

typedef struct shape { int64_t m, n, k; int with_c, bias_row, with_gs; } shape;
static const shape SHAPES[] = {
  { 1, 1, 2, 0, 0, 1 },       /* smallest */
  { 3, 7, 30, 1, 0, 1 },      /* short last block in both formats */
  { 5, 33, 96, 0, 0, 0 },     /* NVFP4 without global scale */
  { 17, 130, 200, 1, 1, 1 },  /* kv 13 / 7: not multiples of 4; bias row */
  { 70, 300, 64, 1, 0, 1 },   /* more than one M and N block */
  { 2, 9, 546, 0, 0, 1 },     /* more than two K blocks, ragged */
  { 1, 300, 200, 1, 0, 1 },   /* the C backend's direct kernel (m <= 8) over two N panels */
  { 7, 45, 300, 1, 0, 1 },    /* direct kernel: row blocks of 4, 2 and 1; a part block of 8 columns */
  { 8, 19, 522, 1, 1, 1 },    /* direct kernel's largest m; ragged last K block */
  { 9, 23, 260, 1, 0, 1 },    /* the panels from m = 9 */
};

START_TEST(test_every_c_variant) {
  const kg_dtype TYPES[] = { KG_BF16, KG_F16 };
  int ran = 0;
  for (int ti = 0; ti < 2; ti++)
    for (int f = 0; f < 2; f++)
      for (int l = 0; l < 3; l++) {
        char name[96];
        snprintf(name, sizeof name, "kg_fp4gemm_c_blocked_%s_%s_sf%s", fmt_name(f), tu_dtype_name(TYPES[ti]),
                 lay_name(l));
        for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
          const shape *sh = &SHAPES[s];
          gprob p = make_gprob(sh->m, sh->n, sh->k, TYPES[ti], f, l, sh->with_gs, sh->with_c, sh->bias_row,
                               1000 + 17 * s + 3 * l + 7 * f + ti);
          kg_exec e = tu_exec_c();
          const char *sel = NULL;
          ck_assert_int_eq(kg_gemm_fp4_select(&p.a, &e, &sel), KG_SUCCESS);
          ck_assert_str_eq(sel, name);
          size_t ws = 99;
          ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &e, &ws), KG_SUCCESS);
          ck_assert_int_eq((int)ws, 0);
          e.variant = name;
          kg_status st = kg_gemm_fp4(&p.a, &e);
          ck_assert_msg(st == KG_SUCCESS, "%s: %s", name, kg_status_string(st));
          char what[160];
          snprintf(what, sizeof what, "%s m%lld n%lld k%lld", name, (long long)sh->m, (long long)sh->n,
                   (long long)sh->k);
          check_d(&p, what);
          free_gprob(&p);
          ran++;
        }
      }
  ck_assert_int_eq(ran, 12 * (int)(sizeof SHAPES / sizeof SHAPES[0]));
}
END_TEST

/* W4A4: A replaced by FP4 bytes with scales in layout la (padding NaN scales) and, for NVFP4, a
** global scale; the reference decodes both operands. */
static void make_a_fp4(gprob *p, int la, int with_gs, uint64_t seed) {
  kg_gemm_fp4_args *a = &p->a;
  tu_rng rng;
  tu_rng_seed(&rng, seed);
  tu_free((void *)a->a);
  a->a_fp4 = 1;
  a->sf_layout_a = (kg_sf_layout)la;
  a->lda = a->k / 2 + 7;
  uint8_t *A = tu_alloc((size_t)(a->m * a->lda));
  for (int64_t i = 0; i < a->m * a->lda; i++) A[i] = (uint8_t)tu_rng_next(&rng);
  a->sf_a_bytes = ref_sf_bytes(la, a->m, p->kv, 1);
  uint8_t *S = tu_alloc(a->sf_a_bytes);
  memset(S, 0xff, a->sf_a_bytes);
  for (int64_t r = 0; r < a->m; r++)
    for (int64_t kb = 0; kb < p->kv; kb++)
      S[ref_sf_off(la, a->m, p->kv, 0, r, kb)] =   /* |A| <= 6 * 2^-3 (MXFP4), 6 * 32 / gs or 6 * 2^-1 (NVFP4) */
          a->format == KG_FP4_MXFP4 ? (uint8_t)tu_rng_int(&rng, 118, 124)
          : with_gs ? (uint8_t)tu_rng_int(&rng, 0x38, 0x60) : (uint8_t)tu_rng_int(&rng, 0x08, 0x30);
  a->a = A; a->sf_a = S;
  p->gsa = 1.0f;
  if (a->format == KG_FP4_NVFP4 && with_gs) {
    float *g = tu_alloc(sizeof(float));
    g[0] = p->gsa = 2688.0f / 3.75f;
    a->global_scale_a = g;
  }
}

static int layout_of(const char *s) {
  return !strcmp(s, "linear") ? KG_SF_LINEAR : !strcmp(s, "128x4") ? KG_SF_SWIZZLED_128X4 : KG_SF_SWIZZLED_8X4;
}

START_TEST(test_w4a4_c_variants) {
  int ran = 0;
  for (int vi = 0; vi < kg_variant_count(); vi++) {
    const char *name = kg_variant_name(vi);
    char fmt[8], dt[8], lay[8], laya[8];
    if (strncmp(name, "kg_fp4gemm_c_blocked_", 21) != 0 || !strstr(name, "_afp4_")) continue;
    ck_assert_msg(sscanf(name + 21, "%5[a-z0-9]_%4[a-z0-9]_sf%7[a-z0-9]_afp4_sfa%7s", fmt, dt, lay, laya) == 4, "%s",
                  name);
    const int f = strcmp(fmt, "nvfp4") == 0 ? KG_FP4_NVFP4 : KG_FP4_MXFP4;
    const kg_dtype t = strcmp(dt, "bf16") == 0 ? KG_BF16 : KG_F16;
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
      const shape *sh = &SHAPES[s];
      gprob p = make_gprob(sh->m, sh->n, sh->k, t, f, layout_of(lay), sh->with_gs, sh->with_c, sh->bias_row,
                           2000 + 13 * s + (uint64_t)vi);
      make_a_fp4(&p, layout_of(laya), sh->with_gs, 3000 + s);
      kg_exec e = tu_exec_c();
      const char *sel = NULL;
      ck_assert_int_eq(kg_gemm_fp4_select(&p.a, &e, &sel), KG_SUCCESS);
      ck_assert_str_eq(sel, name);
      e.variant = name;
      kg_status st = kg_gemm_fp4(&p.a, &e);
      ck_assert_msg(st == KG_SUCCESS, "%s: %s", name, kg_status_string(st));
      char what[160];
      snprintf(what, sizeof what, "%s m%lld n%lld k%lld", name, (long long)sh->m, (long long)sh->n, (long long)sh->k);
      check_d(&p, what);
      /* W4A4 statuses: A scale buffer of the wrong size, MXFP4 with gsA, sf_a NULL, W4A16 variant forced */
      kg_gemm_fp4_args b = p.a; b.sf_a_bytes += 4; expect_status(&b, KG_ERROR_INVALID_PROBLEM);
      b = p.a; b.sf_a = NULL; expect_status(&b, KG_ERROR_INVALID_ARGUMENT);
      b = p.a; b.lda = sh->k / 2 - 1; expect_status(&b, KG_ERROR_INVALID_ARGUMENT);
      if (f == KG_FP4_MXFP4) { b = p.a; b.global_scale_a = p.a.global_scale_b ? p.a.global_scale_b : (const float *)p.a.sf_a;
                               expect_status(&b, KG_ERROR_INVALID_PROBLEM); }
      free_gprob(&p);
      ran++;
    }
  }
  ck_assert_int_ge(ran, 14 * (int)(sizeof SHAPES / sizeof SHAPES[0]));
}
END_TEST

/* Exact case: power-of-two scales, small K, alpha 1: the f32 sum is exact, so
** D is the reference rounded once to the output type. */
START_TEST(test_exact_small) {
  for (int f = 0; f < 2; f++) {
    gprob p = make_gprob(4, 5, 64, KG_BF16, f, KG_SF_SWIZZLED_8X4, 0, 0, 0, 77 + f);
    uint8_t *S = (uint8_t *)p.a.sf_b;
    for (int64_t r = 0; r < 5; r++)
      for (int64_t kb = 0; kb < p.kv; kb++)
        S[ref_sf_off(KG_SF_SWIZZLED_8X4, 5, p.kv, 0, r, kb)] = f == KG_FP4_NVFP4 ? 0x38 /* 1.0 */ : 126; /* 0.5 */
    for (int64_t i = 0; i < 4 * p.a.lda; i++) tu_set((void *)p.a.a, KG_BF16, i, (double)((i % 7) - 3) * 0.25);
    p.a.alpha = 1.0f;
    kg_exec e = tu_exec_c();
    ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_SUCCESS);
    for (int64_t i = 0; i < 4; i++)
      for (int64_t j = 0; j < 5; j++) {
        double s = 0.0;
        for (int64_t kk = 0; kk < 64; kk++) s += tu_get(p.a.a, KG_BF16, i * p.a.lda + kk) * deq(&p, j, kk);
        ck_assert_msg(tu_get(p.a.d, KG_BF16, i * p.a.ldd + j) == tu_round(KG_BF16, s), "%s (%lld, %lld): %g vs %g",
                      fmt_name(f), (long long)i, (long long)j, tu_get(p.a.d, KG_BF16, i * p.a.ldd + j), s);
      }
    free_gprob(&p);
  }
}
END_TEST

/* Batch invariance on the C backend: a row of D does not depend on m. The direct kernel (m <= 8)
** and the panels (m >= 9) add the same f32 products in the same k order, so rows 0 .. m-1 of an
** m-row product equal, bit for bit, those of the 9-row product on the same A rows; NaN and Inf in
** A propagate alike (row 1 holds them; NaN payloads may differ). */
START_TEST(test_rows_independent_of_m) {
  for (int f = 0; f < 2; f++)
    for (int ti = 0; ti < 2; ti++) {
      const kg_dtype t = ti ? KG_F16 : KG_BF16;
      gprob p = make_gprob(9, 301, 584, t, f, KG_SF_SWIZZLED_128X4, 1, 1, 0, 4100 + 2 * f + ti);
      tu_set((void *)p.a.a, t, p.a.lda + 5, NAN);
      tu_set((void *)p.a.a, t, p.a.lda + 300, INFINITY);
      kg_exec e = tu_exec_c();
      ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_SUCCESS);
      const size_t bytes = (size_t)(9 * p.a.ldd) * 2;
      uint8_t *d9 = malloc(bytes);
      memcpy(d9, p.a.d, bytes);
      for (int64_t m = 1; m <= 8; m++) {
        tu_poison(p.a.d, t, 9 * p.a.ldd);
        kg_gemm_fp4_args a = p.a;
        a.m = m;
        ck_assert_int_eq(kg_gemm_fp4(&a, &e), KG_SUCCESS);
        for (int64_t i = 0; i < m * p.a.ldd; i++) {   /* the same bits; NaN payloads may differ */
          const double x = tu_get(p.a.d, t, i), y = tu_get(d9, t, i);
          ck_assert_msg((isnan(x) && isnan(y)) || memcmp((uint8_t *)p.a.d + 2 * i, d9 + 2 * i, 2) == 0,
                        "%s %s: D(%lld, %lld) = %g at m = %lld, %g at m = 9", fmt_name(f), tu_dtype_name(t),
                        (long long)(i / p.a.ldd), (long long)(i % p.a.ldd), x, (long long)m, y);
        }
        ck_assert(tu_is_poison(p.a.d, t, m * p.a.ldd));   /* row m untouched */
      }
      free(d9);
      free_gprob(&p);
    }
}
END_TEST

/* The order of the f32 sums, at every m (the direct kernel to m = 8, the panels from 9): each
** output adds its products in k order, one f32 add each. Row i of A is 2^14 at k = 0 and 1 from
** the second scale block on, every weight 2^10 at k = 0 and 1 past the first block: the sum
** 2^24 + 1 + 1 + ... stays 2^24 in f32 (each 1 rounds away, to even), so with C = 2^24 and
** beta = -1, D is 0 exactly; any other order (pairs of products first, partial sums) leaves
** up to k - 16 there. */
START_TEST(test_sum_order) {
  for (int f = 0; f < 2; f++) {
    const int64_t n = 19, k = 584, bsz = f == KG_FP4_NVFP4 ? 16 : 32, kv = (k + bsz - 1) / bsz;
    for (int64_t m = 1; m <= 9; m++) {
      gprob p = make_gprob(m, n, k, KG_BF16, f, KG_SF_LINEAR, 0, 1, 1, 4200 + (uint64_t)m);
      for (int64_t i = 0; i < m; i++)
        for (int64_t kk = 0; kk < k; kk++)
          tu_set((void *)p.a.a, KG_BF16, i * p.a.lda + kk, kk == 0 ? 16384.0 : kk >= bsz ? 1.0 : 0.0);
      uint8_t *B = (uint8_t *)p.a.b, *S = (uint8_t *)p.a.sf_b;
      for (int64_t j = 0; j < n; j++) {
        for (int64_t kk = 0; kk < k / 2; kk++) B[j * p.a.ldb + kk] = kk == 0 ? 0x06 /* 4, 0 */ : kk < bsz / 2 ? 0 : 0x22;
        for (int64_t b = 0; b < kv; b++)   /* block 0: 256 (4 * 256 = 2^10), the others 1 */
          S[ref_sf_off(KG_SF_LINEAR, n, kv, 0, j, b)] = f == KG_FP4_NVFP4 ? (b ? 0x38 : 0x78) : (b ? 127 : 135);
      }
      for (int64_t j = 0; j < n; j++) tu_set((void *)p.a.c, KG_BF16, j, 16777216.0);
      p.a.alpha = 1.0f;
      p.a.beta = -1.0f;
      kg_exec e = tu_exec_c();
      ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_SUCCESS);
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
          ck_assert_msg(tu_get(p.a.d, KG_BF16, i * p.a.ldd + j) == 0.0, "%s m = %lld: D(%lld, %lld) = %g, not 0",
                        fmt_name(f), (long long)m, (long long)i, (long long)j, tu_get(p.a.d, KG_BF16, i * p.a.ldd + j));
      free_gprob(&p);
    }
  }
}
END_TEST

/* The C backend's threads (kg_internal.h): problems above its threshold (4e6 multiply-adds)
** split their output tiles over the threads; each output is one thread's, summed in one order,
** so 1 and 3 threads give the same bits, and both pass the reference. m = 4: the direct kernel's
** column tiles; m = 70: two row tiles of the panels. (Built without OpenMP, one thread runs both
** calls.) */
START_TEST(test_threads_same_bits) {
  static const int64_t ms[] = { 4, 70 };
  for (int f = 0; f < 2; f++)
    for (int mi = 0; mi < 2; mi++) {
      gprob p = make_gprob(ms[mi], 1100, 1056, KG_BF16, f, KG_SF_SWIZZLED_128X4, 1, 1, 0, 4300 + 2 * (uint64_t)f + mi);
      const size_t bytes = (size_t)(p.a.m * p.a.ldd) * 2;
      uint8_t *one = malloc(bytes);
      kg_exec e = tu_exec_c();
      const int saved = tu_set_threads(1);
      ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_SUCCESS);
      memcpy(one, p.a.d, bytes);
      tu_poison(p.a.d, KG_BF16, p.a.m * p.a.ldd);
      tu_set_threads(3);
      ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_SUCCESS);
      tu_set_threads(saved);
      ck_assert_msg(memcmp(one, p.a.d, bytes) == 0, "%s m = %lld: 3 threads differ from 1", fmt_name(f),
                    (long long)p.a.m);
      check_d(&p, "threads");
      free(one);
      free_gprob(&p);
    }
}
END_TEST

static void expect(const kg_gemm_fp4_args *a, kg_status want, const char *what) {
  kg_exec e = tu_exec_c();
  kg_status st = kg_gemm_fp4(a, &e);
  ck_assert_msg(st == want, "%s: got %s, wanted %s", what, kg_status_string(st), kg_status_string(want));
  char buf[8192];
  st = kg_explain(KG_OP_GEMM_FP4, a, &e, buf, sizeof buf);
  ck_assert_msg(st == want, "%s: explain %s", what, kg_status_string(st));
  if (want == KG_ERROR_INVALID_ARGUMENT || want == KG_ERROR_INVALID_PROBLEM)
    ck_assert_msg(strncmp(buf, "arguments: ", 11) == 0, "%s: %s", what, buf);
}

START_TEST(test_validation_statuses) {
  gprob p = make_gprob(3, 20, 64, KG_BF16, KG_FP4_NVFP4, KG_SF_SWIZZLED_128X4, 1, 1, 0, 5);
  kg_gemm_fp4_args a;
  expect(&p.a, KG_SUCCESS, "valid");
  ck_assert_int_eq(kg_gemm_fp4(NULL, &(kg_exec){ 0 }), KG_ERROR_INVALID_ARGUMENT);
  a = p.a; ck_assert_int_eq(kg_gemm_fp4(&a, NULL), KG_ERROR_INVALID_ARGUMENT);
  a = p.a; a.sf_b_bytes += 1; expect(&a, KG_ERROR_INVALID_PROBLEM, "sf_b_bytes one too many");
  a = p.a; a.sf_layout = KG_SF_LINEAR; expect(&a, KG_ERROR_INVALID_PROBLEM, "128x4 buffer passed as linear");
  a = p.a; a.format = KG_FP4_MXFP4; a.global_scale_b = NULL; a.sf_layout = KG_SF_LINEAR; a.sf_b_bytes = 20 * 4;
  expect(&a, KG_ERROR_INVALID_PROBLEM, "linear nvfp4-sized scale buffer passed as mxfp4 (80 vs 40 bytes)");
  a.sf_b_bytes = 20 * 2; expect(&a, KG_SUCCESS, "linear mxfp4 scale buffer");
  a = p.a; a.format = KG_FP4_MXFP4; a.sf_b_bytes = 512;  /* kv 2: still one 128x4 atom */
  expect(&a, KG_ERROR_INVALID_PROBLEM, "mxfp4 with a global scale");
  a = p.a; a.k = 63; expect(&a, KG_ERROR_INVALID_PROBLEM, "odd k");
  a = p.a; a.m = 0; expect(&a, KG_ERROR_INVALID_ARGUMENT, "m 0");
  a = p.a; a.n = -1; expect(&a, KG_ERROR_INVALID_ARGUMENT, "n negative");
  a = p.a; a.lda = 63; expect(&a, KG_ERROR_INVALID_ARGUMENT, "lda < k");
  a = p.a; a.ldb = 31; expect(&a, KG_ERROR_INVALID_ARGUMENT, "ldb < k/2");
  a = p.a; a.ldd = 19; expect(&a, KG_ERROR_INVALID_ARGUMENT, "ldd < n");
  a = p.a; a.ldc = 5; expect(&a, KG_ERROR_INVALID_ARGUMENT, "ldc < n");
  a = p.a; a.ldc = -1; expect(&a, KG_ERROR_INVALID_ARGUMENT, "ldc negative");
  a = p.a; a.c = NULL; expect(&a, KG_ERROR_INVALID_ARGUMENT, "c NULL with beta");
  a = p.a; a.c = NULL; a.beta = 0.0f; expect(&a, KG_SUCCESS, "c NULL without beta");
  a.ldc = -1; expect(&a, KG_SUCCESS, "c NULL: ldc not looked at (as kg_gemm, kg_dualgemm_fp4)");
  a = p.a; a.b = NULL; expect(&a, KG_ERROR_INVALID_ARGUMENT, "b NULL");
  a = p.a; a.sf_b = NULL; expect(&a, KG_ERROR_INVALID_ARGUMENT, "sf_b NULL");
  a = p.a; a.d = NULL; expect(&a, KG_ERROR_INVALID_ARGUMENT, "d NULL");
  a = p.a; a.dtype = KG_F32; expect(&a, KG_ERROR_INVALID_ARGUMENT, "f32 activations");
  a = p.a; a.dtype = (kg_dtype)9; expect(&a, KG_ERROR_INVALID_ARGUMENT, "unknown dtype");
  a = p.a; a.format = (kg_fp4_format)7; expect(&a, KG_ERROR_INVALID_ARGUMENT, "unknown format");
  a = p.a; a.sf_layout = (kg_sf_layout)7; expect(&a, KG_ERROR_INVALID_ARGUMENT, "unknown layout");
  a = p.a; a.lda = INT64_MAX / 2; expect(&a, KG_ERROR_INVALID_ARGUMENT, "extent overflow");
  /* typed pointers aligned to their elements (kg.h), on the C backend too; the codes are bytes */
  static float gs2[2] = { 1.0f, 1.0f };
  a = p.a; a.a = (const char *)p.a.a + 1; expect(&a, KG_ERROR_MISALIGNED_OPERAND, "a at an odd address");
  a = p.a; a.c = (const char *)p.a.c + 1; expect(&a, KG_ERROR_MISALIGNED_OPERAND, "c at an odd address");
  a = p.a; a.d = (char *)p.a.d + 1; expect(&a, KG_ERROR_MISALIGNED_OPERAND, "d at an odd address");
  a = p.a; a.global_scale_b = (const float *)((const char *)gs2 + 2);
  expect(&a, KG_ERROR_MISALIGNED_OPERAND, "global_scale_b 2 bytes into a float");
  {
    /* b one byte into a copy of its bytes: accepted, the same outputs */
    const size_t nb = (size_t)(20 * p.a.ldb);
    uint8_t *b1 = (uint8_t *)tu_alloc(nb + 1);
    memcpy(b1 + 1, p.a.b, nb);
    a = p.a; a.b = b1 + 1; expect(&a, KG_SUCCESS, "b at an odd address (bytes)");
    tu_free(b1);
  }
  size_t ws = 7;
  ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &(kg_exec){ 0 }, NULL), KG_ERROR_INVALID_ARGUMENT);
  a = p.a; a.k = 63;
  ck_assert_int_eq(kg_gemm_fp4_workspace_size(&a, &(kg_exec){ 0 }, &ws), KG_ERROR_INVALID_PROBLEM);
  ck_assert_int_eq((int)ws, 0);
  const char *name = "x";
  ck_assert_int_eq(kg_gemm_fp4_select(&a, &(kg_exec){ 0 }, &name), KG_ERROR_INVALID_PROBLEM);
  ck_assert_ptr_null(name);
  /* nothing was written by the failing calls */
  for (int64_t i = 0; i < 3 * p.a.ldd; i++) ck_assert(tu_is_poison(p.a.d, KG_BF16, i) || i % p.a.ldd < 20);
  free_gprob(&p);
}
END_TEST

START_TEST(test_dispatch_and_explain) {
  gprob p = make_gprob(40, 20, 64, KG_F16, KG_FP4_MXFP4, KG_SF_LINEAR, 0, 0, 0, 9);
  kg_exec e = tu_exec_c();
  char buf[16384];
  ck_assert_int_eq(kg_explain(KG_OP_GEMM_FP4, &p.a, &e, buf, sizeof buf), KG_SUCCESS);
  ck_assert_msg(strstr(buf, "kg_fp4gemm_c_blocked_mxfp4_f16_sflinear: chosen (specs/gemm_fp4.lua:"), "%s", buf);
  ck_assert_msg(strstr(buf, "kg_fp4gemm_c_blocked_nvfp4_bf16_sflinear: rejected: format nvfp4, wanted mxfp4"), "%s",
                buf);
  ck_assert_msg(strstr(buf, "kg_fp4gemm_c_blocked_nvfp4_f16_sflinear: not considered: "
                            "kg_fp4gemm_c_blocked_mxfp4_f16_sflinear chosen first"), "%s", buf);
  ck_assert_msg(strstr(buf, "kg_fp4gemm_c_blocked_mxfp4_bf16_sflinear: rejected: dtype bf16, wanted f16"), "%s", buf);
  ck_assert_msg(strstr(buf, "kg_fp4gemm_c_blocked_mxfp4_f16_sf128x4: rejected: scale layout 128x4, wanted linear"),
                "%s", buf);
  for (const char *l = buf; *l; l = strchr(l, '\n') + 1)
    ck_assert_msg(strncmp(l, "kg_fp4gemm_", 11) == 0, "explain lists another op's variant: %s", l);
  /* GPU variants (when compiled in) say backend; a forced wrong variant is not supported */
  e.variant = "kg_fp4gemm_c_blocked_nvfp4_f16_sflinear";
  ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_ERROR_NOT_SUPPORTED);
  for (int64_t i = 0; i < 40 * p.a.ldd; i++) ck_assert(tu_is_poison(p.a.d, KG_F16, i));
  e.variant = "kg_fp4_c_dequantize_mxfp4_f16_sflinear";   /* another op's variant */
  ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_ERROR_NOT_SUPPORTED);
  e.variant = "no_such_variant";
  ck_assert_int_eq(kg_explain(KG_OP_GEMM_FP4, &p.a, &e, buf, sizeof buf), KG_ERROR_NOT_SUPPORTED);
  ck_assert_msg(strstr(buf, "no variant named 'no_such_variant'"), "%s", buf);
  /* the GEMM entry points do not take this op */
  const char *name = NULL;
  ck_assert_int_eq(kg_fp4_select(KG_OP_GEMM_FP4, &p.a, &(kg_exec){ 0 }, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_fp4gemm_c_blocked_mxfp4_f16_sflinear");
  /* the GPU backends, when absent, are unavailable (checked after the arguments) */
  if (!kg_backend_available(KG_BACKEND_CUDA)) {
    kg_exec g = { KG_BACKEND_CUDA, 0, 0, 0, 0, 0 };
    ck_assert_int_eq(kg_gemm_fp4(&p.a, &g), KG_ERROR_BACKEND_UNAVAILABLE);
  }
  free_gprob(&p);
}
END_TEST

/* The workspace contract on the C backend (kg.h "Dequantize path and workspace"): the size is 0 for
** every m (the path is for GPU backends), a workspace changes nothing (same variant, same bytes of D,
** no explain line about the path), the path forced by name ("dequantize + ...") is
** KG_ERROR_NOT_SUPPORTED with nothing written, and the size query checks its arguments and exec
** first (NULL bytes, args or exec; workspace_size without workspace; unknown backend). */
START_TEST(test_workspace_contract) {
  static const int64_t MS[] = { 1, 16, 17, 70, 257 };
  for (size_t i = 0; i < sizeof MS / sizeof MS[0]; i++) {
    gprob p = make_gprob(MS[i], 40, 64, KG_BF16, KG_FP4_NVFP4, KG_SF_SWIZZLED_128X4, 1, 1, i % 2, 21 + i);
    kg_exec e = tu_exec_c();
    size_t ws = 5;
    ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &e, &ws), KG_SUCCESS);
    ck_assert_int_eq((int)ws, 0);
    const char *plain = NULL, *sel = NULL;
    ck_assert_int_eq(kg_gemm_fp4_select(&p.a, &e, &plain), KG_SUCCESS);
    ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_SUCCESS);
    const size_t dbytes = (size_t)(MS[i] * p.a.ldd) * 2;
    uint8_t *ref = malloc(dbytes);
    memcpy(ref, p.a.d, dbytes);
    tu_poison(p.a.d, KG_BF16, MS[i] * p.a.ldd);
    static _Alignas(16) uint8_t wsbuf[1 << 16];
    e.workspace = wsbuf; e.workspace_size = sizeof wsbuf;
    ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &e, &ws), KG_SUCCESS);
    ck_assert_int_eq((int)ws, 0);
    ck_assert_int_eq(kg_gemm_fp4_select(&p.a, &e, &sel), KG_SUCCESS);
    ck_assert_str_eq(sel, plain);
    static char buf[16384];
    ck_assert_int_eq(kg_explain(KG_OP_GEMM_FP4, &p.a, &e, buf, sizeof buf), KG_SUCCESS);
    ck_assert_msg(!strstr(buf, "dequantize"), "%s", buf);
    ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_SUCCESS);
    ck_assert_msg(memcmp(ref, p.a.d, dbytes) == 0, "m %lld: a workspace changed D", (long long)MS[i]);
    /* the path forced by name */
    tu_poison(p.a.d, KG_BF16, MS[i] * p.a.ldd);
    e.variant = "dequantize + kg_gemm_c_blocked_bf16_xxx_64x256x256_a1";
    ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_ERROR_NOT_SUPPORTED);
    sel = "x";
    ck_assert_int_eq(kg_gemm_fp4_select(&p.a, &e, &sel), KG_ERROR_NOT_SUPPORTED);
    ck_assert_ptr_null(sel);
    ws = 5;
    ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &e, &ws), KG_ERROR_NOT_SUPPORTED);
    ck_assert_int_eq((int)ws, 0);
    ck_assert_int_eq(kg_explain(KG_OP_GEMM_FP4, &p.a, &e, buf, sizeof buf), KG_ERROR_NOT_SUPPORTED);
    ck_assert_msg(strstr(buf, "dequantize + kg_gemm_c_blocked_bf16_xxx_64x256x256_a1: rejected: the dequantize path "
                              "is for the GPU backends"), "%s", buf);
    for (int64_t j = 0; j < MS[i] * p.a.ldd; j++) ck_assert(tu_is_poison(p.a.d, KG_BF16, j));
    /* a forced FP4 variant: its name, size 0 */
    e.variant = plain;
    ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &e, &ws), KG_SUCCESS);
    ck_assert_int_eq((int)ws, 0);
    free(ref);
    free_gprob(&p);
  }
  /* argument and exec checks of the size query: status, and 0 bytes */
  gprob p = make_gprob(70, 40, 64, KG_BF16, KG_FP4_MXFP4, KG_SF_LINEAR, 0, 0, 0, 29);
  kg_exec e = tu_exec_c();
  size_t ws = 5;
  ck_assert_int_eq(kg_gemm_fp4_workspace_size(NULL, &e, &ws), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq((int)ws, 0);
  ws = 5;
  ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, NULL, &ws), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq((int)ws, 0);
  e.workspace_size = 64;   /* without a workspace */
  ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &e, &ws), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_gemm_fp4(&p.a, &e), KG_ERROR_INVALID_ARGUMENT);
  e = tu_exec_c(); e.backend = (kg_backend)7;
  ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &e, &ws), KG_ERROR_INVALID_ARGUMENT);
  e = tu_exec_c(); e.variant = "no_such_variant";
  ws = 5;
  ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &e, &ws), KG_ERROR_NOT_SUPPORTED);
  ck_assert_int_eq((int)ws, 0);
  kg_gemm_fp4_args a = p.a; a.ldd = 3;
  ck_assert_int_eq(kg_gemm_fp4_workspace_size(&a, &(kg_exec){ 0 }, &ws), KG_ERROR_INVALID_ARGUMENT);
  if (!kg_backend_available(KG_BACKEND_CUDA)) {
    kg_exec g = { KG_BACKEND_CUDA, 0, 0, 0, 0, 0 };
    ws = 5;
    ck_assert_int_eq(kg_gemm_fp4_workspace_size(&p.a, &g, &ws), KG_ERROR_BACKEND_UNAVAILABLE);
    ck_assert_int_eq((int)ws, 0);
  }
  free_gprob(&p);
}
END_TEST

/* The tensorop kernels' launch plan (kg__fp4t_plan_for) and cost estimate with H200 figures (132
** SMs, K = 4096: 32 groups of 128), with and without a workspace to split through, and its
** invariants over many grids. */
START_TEST(test_tensorop_plan) {
  static const struct { int64_t tiles, k; int sms; int64_t whole; int splits; int global_splits; } CASES[] = {
    /* global_splits: with the workspace (0: not taken: no more splits than clusters, or fewer than
    ** KG__FP4T_GLOBAL_MIN (8) groups less a block) */
    { 64, 4096, 132, 0, 2, 0 },      /* half the SMs: 2 splits (3 or 4 would exceed 9/10 of them) */
    { 32, 4096, 132, 0, 3, 0 },      /* 96 blocks of 3 splits within 9/10 of the SMs; 4 unclustered save 3 groups */
    { 32, 14336, 132, 0, 3, 4 },     /* 112 groups: 28 a block against 38 */
    { 30, 12288, 132, 0, 3, 4 },     /* 96 groups: 24 against 32 */
    { 30, 8192, 132, 0, 3, 0 },      /* 64 groups: 16 against 22 */
    { 29, 14336, 132, 0, 4, 0 },     /* 116 blocks in clusters of 4 */
    { 44, 4096, 132, 0, 2, 0 },      /* 3 splits (132 blocks) save 5 groups of 16 */
    { 44, 14336, 132, 0, 2, 3 },     /* 38 against 56 */
    { 40, 14336, 132, 0, 2, 3 },
    { 39, 14336, 132, 0, 3, 0 },
    { 16, 4096, 132, 0, 4, 0 },
    { 16, 1024, 132, 0, 2, 0 },      /* 8 groups: 2 splits of 4 */
    { 32, 1536, 132, 0, 3, 0 },      /* 12 groups: at most 3 */
    { 16, 896, 132, 16, 1, 0 },      /* 7 groups: no split keeps 4 */
    { 100, 4096, 132, 100, 1, 0 },   /* one round, over half the SMs */
    { 448, 4096, 132, 396, 2, 0 },   /* 14336 x 4096 at m = 1024 (256-row tiles): 3 rounds, 52 tiles split */
    { 160, 4096, 132, 132, 4, 0 },   /* 4096 x 4096 at m = 1280: a last round of 28 tiles in 4 splits */
    { 164, 4096, 132, 132, 3, 0 },   /* a last round of 32 tiles */
    { 164, 14336, 132, 132, 3, 4 },
    { 198, 4096, 132, 132, 2, 0 },   /* a last round of 66 tiles: 132 blocks */
    { 199, 4096, 132, 199, 1, 0 },   /* 67 would need 134 */
    { 896, 4096, 132, 896, 1, 0 },   /* a last round of 104 tiles */
    { 264, 4096, 132, 264, 1, 0 },   /* two whole rounds */
    { 448, 896, 132, 448, 1, 0 },    /* 7 groups */
    { 448, 1024, 132, 396, 2, 0 },
    { 140, 4096, 131, 131, 4, 0 },
  };
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    const kg__fp4t_plan p = kg__fp4t_plan_for(CASES[i].tiles, CASES[i].k, CASES[i].sms, 0);
    ck_assert_msg(p.whole == CASES[i].whole && p.splits == CASES[i].splits && !p.global,
                  "%lld tiles, k %lld, %d SMs: %lld whole, %d splits", (long long)CASES[i].tiles, (long long)CASES[i].k,
                  CASES[i].sms, (long long)p.whole, p.splits);
    const kg__fp4t_plan w = kg__fp4t_plan_for(CASES[i].tiles, CASES[i].k, CASES[i].sms, 1);
    const int gs = CASES[i].global_splits;
    ck_assert_msg(w.whole == CASES[i].whole && w.splits == (gs ? gs : CASES[i].splits) && w.global == (gs > 0),
                  "%lld tiles, k %lld, %d SMs, workspace: %lld whole, %d splits, global %d", (long long)CASES[i].tiles,
                  (long long)CASES[i].k, CASES[i].sms, (long long)w.whole, w.splits, w.global);
    /* the partial tiles (256 rows x 128 f32 each) and the counters, 16-byte aligned */
    const int64_t split = CASES[i].tiles - CASES[i].whole;
    ck_assert_uint_eq(kg__fp4t_ws_bytes(w, CASES[i].tiles, 256),
                      gs ? (uint64_t)(split * gs * 256 * 128 * 4 + (split * 4 + 15) / 16 * 16) : 0);
    ck_assert_uint_eq(kg__fp4t_ws_bytes(p, CASES[i].tiles, 256), 0);
  }
  /* the workspace decides: aligned and large enough for the plan's bytes */
  {
    static char ws[32 * 4 * 128 * 128 * 4 + 128 + 16];
    char *a = ws + (16 - (uintptr_t)ws % 16) % 16;
    const size_t need = 32 * 4 * 128 * 128 * 4 + 128;   /* 32 tiles of 128 rows in 4 splits */
    ck_assert(kg__fp4t_ws_fits(32, 14336, 132, 128, a, need));
    ck_assert(!kg__fp4t_ws_fits(32, 14336, 132, 128, a, need - 1));
    ck_assert(!kg__fp4t_ws_fits(32, 14336, 132, 128, a + 4, need));
    ck_assert(!kg__fp4t_ws_fits(32, 14336, 132, 128, NULL, need));
    ck_assert(!kg__fp4t_ws_fits(64, 14336, 132, 128, a, need));   /* 2 splits either way: not used */
    ck_assert(!kg__fp4t_ws_fits(32, 4096, 132, 128, a, need));    /* 3 groups less a block: not used */
  }
  /* 3 rounds of 32 steps and a round of 16: 3 (32 * 127 + 1680) + 16 * 127 + 1680 */
  ck_assert_int_eq((int)kg__fp4t_cost(1024, 14336, 4096, 1, 256, 128, 132, 0), 20944);
  /* one round of 64 blocks of 16 steps, 2 splits */
  ck_assert_int_eq((int)kg__fp4t_cost(256, 8192, 4096, 1, 256, 128, 132, 0), 16 * 127 + 1680);
  /* 32 tiles of 128 rows (4096 x 14336, m = 128): 3 splits of 38 steps, through the workspace 4 of 28 */
  ck_assert_int_eq((int)kg__fp4t_cost(128, 4096, 14336, 1, 128, 128, 132, 0), 38 * 91 + 977);
  ck_assert_int_eq((int)kg__fp4t_cost(128, 4096, 14336, 1, 128, 128, 132, 1), 28 * 91 + 977);
  /* a round of 32 steps, then 28 tiles in 4 splits of 8 */
  ck_assert_int_eq((int)kg__fp4t_cost(1280, 4096, 4096, 1, 256, 128, 132, 0), 32 * 127 + 1680 + 8 * 127 + 1680);
  static const int SMS[] = { 1, 7, 78, 114, 131, 132 };
  for (size_t si = 0; si < sizeof SMS / sizeof SMS[0]; si++)
    for (int64_t tiles = 1; tiles < 1500; tiles += 7)
      for (int64_t k = 2; k < 20000; k = k * 2 + 126) {
        const int sms = SMS[si];
        for (int ws = 0; ws < 2; ws++) {
          const kg__fp4t_plan p = kg__fp4t_plan_for(tiles, k, sms, ws), c = kg__fp4t_plan_for(tiles, k, sms, 0);
          const int64_t groups = (k + 127) / 128, split = tiles - p.whole;
          ck_assert(p.splits >= 1 && p.splits <= 4 && p.whole >= 0 && p.whole <= tiles);
          ck_assert(p.splits == 1 ? p.whole == tiles : split > 0 && groups >= 4 * p.splits);
          /* the split tiles' blocks (clusters) run at once; whole tiles before them only in whole rounds */
          ck_assert(p.splits == 1 || split * p.splits <= (p.splits == 2 || p.global ? sms : sms * 9 / 10));
          ck_assert(p.splits == 1 || p.whole % sms == 0);
          /* the workspace only where it saves a block KG__FP4T_GLOBAL_MIN groups against clusters, over
          ** the same tiles */
          ck_assert(!p.global || (ws && p.splits > c.splits && p.whole == c.whole &&
                                  (groups + c.splits - 1) / c.splits - (groups + p.splits - 1) / p.splits >= 8));
          ck_assert(p.global || (p.splits == c.splits && p.whole == c.whole));
        }
      }
}
END_TEST

Suite *gemm_fp4_suite(void) {
  Suite *s = suite_create("GemmFp4Test");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_every_c_variant);
  tcase_add_test(tc, test_w4a4_c_variants);
  tcase_add_test(tc, test_exact_small);
  tcase_add_test(tc, test_rows_independent_of_m);
  tcase_add_test(tc, test_sum_order);
  tcase_add_test(tc, test_threads_same_bits);
  tcase_add_test(tc, test_validation_statuses);
  tcase_add_test(tc, test_dispatch_and_explain);
  tcase_add_test(tc, test_workspace_contract);
  tcase_add_test(tc, test_tensorop_plan);
  suite_add_tcase(s, tc);
  return s;
}
