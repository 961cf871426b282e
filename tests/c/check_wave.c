/*
** check_wave.c -- the wave64 primitives on the C backend's emulated wavefront:
** MfmaTile16x16x16Test, Transpose4x4HalfTest, RowsumTest.
**
** The kernels are the templates/wave pieces rendered for the C dialect (lane
** arrays, shuffles reading lane ^ mask, the MFMA as loops that read the
** registers in the CDNA layouts), i.e. the code the HIP kernels are made of.
** Every expectation is computed here in double from the inputs' bit patterns
** (this file's own f16/bf16 decoders), never by generated or runtime code.
** Inputs are random and exactly representable; outputs and their padding are
** poisoned first (NaN for f32: a comparison never accepts NaN); each
** comparison is also shown to reject what a wrong register layout would give.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"

#define SEEDS 24                 /* random problems per dtype and case */
#define POISON_B16 0xfbadu       /* 16-bit output poison (never drawn as an input) */
#define PAD_B16 0x7fc1u          /* input padding: NaN as f16 and as bf16 */

/* ---- reference numerics ------------------------------------------------------ */

/* Value of an f16 / bf16 bit pattern, decoded here. */
static double ref_f16(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return (h & 0x8000u) ? -v : v;
}
static double ref_bf16(uint16_t h) {
  int e = (h >> 7) & 255, m = h & 127;
  double v = e == 255 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
  return (h & 0x8000u) ? -v : v;
}
static double ref_b16(kg_dtype t, uint16_t h) { return t == KG_BF16 ? ref_bf16(h) : ref_f16(h); }

/* A random normal value with magnitude in [1/16, 4) (or zero, one time in 16),
** as the bit pattern of t. */
static uint16_t rand_b16(tu_rng *r, kg_dtype t) {
  if (tu_rng_int(r, 0, 15) == 0) return 0;
  uint16_t sign = tu_rng_int(r, 0, 1) ? 0x8000u : 0;
  if (t == KG_BF16) return (uint16_t)(sign | (tu_rng_int(r, 123, 128) << 7) | tu_rng_int(r, 0, 127));
  return (uint16_t)(sign | (tu_rng_int(r, 11, 16) << 10) | tu_rng_int(r, 0, 1023));
}

/* f16 / bf16 bit pattern of an integer exact in t (|v| <= 2048 for f16, 256 for bf16). */
static uint16_t b16_of_int(kg_dtype t, int v) {
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000u : 0;
  int a = abs(v), e = 0;
  while ((a >> (e + 1)) != 0) e++;
  uint16_t h = t == KG_BF16 ? (uint16_t)(((e + 127) << 7) | (((a << 7) >> e) & 127))
                            : (uint16_t)(((e + 15) << 10) | (((a << 10) >> e) & 1023));
  ck_assert_msg(ref_b16(t, h) == (double)a, "b16_of_int(%d)", v);
  return (uint16_t)(sign | h);
}

static int is_poison32(const float *p) {
  uint32_t u;
  memcpy(&u, p, 4);
  return u == TU_POISON32;
}
static void poison32(float *p, int64_t n) { tu_poison(p, KG_F32, n); }

static kg_dtype DTYPES[2] = { KG_F16, KG_BF16 };

/* ---- 16 x 16 results ---------------------------------------------------------
** A result is compared with ref (double) element by element: |got - ref| <=
** 17 * 2^-24 * bound, bound = the sum of the magnitudes of the f32 terms
** (f32 accumulation of at most 17 exact terms). NaN never passes. Returns the
** number of mismatches among the 256 elements; the first few are printed. */
static int mismatches16(const double ref[256], const double bound[256], const float *d, int64_t ldd,
                        const char *what, int quiet) {
  int bad = 0;
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      double got = d[m * ldd + n], tol = 17.0 * ldexp(1.0, -24) * bound[m * 16 + n];
      if (!(fabs(got - ref[m * 16 + n]) <= tol)) {
        if (!quiet && bad < 4)
          fprintf(stderr, "%s: D[%d][%d] = %.9g, want %.9g (tol %.3g)\n", what, m, n, got, ref[m * 16 + n], tol);
        bad++;
      }
    }
  return bad;
}

/* Padding columns n = 16 .. ld-1 of 16 rows are still the f32 poison. */
static void check_pad32(const float *d, int64_t ld, const char *what) {
  for (int m = 0; m < 16; m++)
    for (int64_t n = 16; n < ld; n++)
      ck_assert_msg(is_poison32(&d[m * ld + n]), "%s: padding D[%d][%lld] was written", what, m, (long long)n);
}

/* ---- MFMA 16x16x16 ------------------------------------------------------------ */

typedef struct mprob {
  kg_dtype t;
  int64_t lda, ldb, ldc, ldd;
  uint16_t *a, *b;
  float *c, *d;
  double A[256], B[256], C[256];   /* values, row-major 16 x 16 */
} mprob;

static void mprob_free(mprob *p) {
  tu_free(p->a); tu_free(p->b); tu_free(p->c); tu_free(p->d);
}

/* Random A, B (t), C (f32 values with magnitude below 8, or none), D poisoned. */
static void mprob_make(mprob *p, kg_dtype t, uint64_t seed, int with_c) {
  tu_rng r;
  tu_rng_seed(&r, seed);
  memset(p, 0, sizeof *p);
  p->t = t;
  p->lda = tu_rng_int(&r, 16, 40); p->ldb = tu_rng_int(&r, 16, 40);
  p->ldc = tu_rng_int(&r, 16, 40); p->ldd = tu_rng_int(&r, 16, 40);
  p->a = (uint16_t *)tu_alloc((size_t)(16 * p->lda) * 2);
  p->b = (uint16_t *)tu_alloc((size_t)(16 * p->ldb) * 2);
  p->c = (float *)tu_alloc((size_t)(16 * p->ldc) * 4);
  p->d = (float *)tu_alloc((size_t)(16 * p->ldd) * 4);
  poison32(p->c, 16 * p->ldc);
  poison32(p->d, 16 * p->ldd);
  for (int i = 0; i < 16 * p->lda; i++) p->a[i] = PAD_B16;
  for (int i = 0; i < 16 * p->ldb; i++) p->b[i] = PAD_B16;
  for (int m = 0; m < 16; m++)
    for (int k = 0; k < 16; k++) {
      p->a[m * p->lda + k] = rand_b16(&r, t);
      p->A[m * 16 + k] = ref_b16(t, p->a[m * p->lda + k]);
      p->b[m * p->ldb + k] = rand_b16(&r, t);
      p->B[m * 16 + k] = ref_b16(t, p->b[m * p->ldb + k]);
      float cv = with_c ? (float)(8.0 * tu_rng_normalish(&r)) : 0.0f;
      p->c[m * p->ldc + k] = cv;
      p->C[m * 16 + k] = cv;
    }
}

/* ref = A.B + C in double, bound = |A|.|B| + |C|. */
static void mfma_ref(const double *A, const double *B, const double *C, double *ref, double *bound) {
  for (int m = 0; m < 16; m++)
    for (int n = 0; n < 16; n++) {
      double s = C[m * 16 + n], b = fabs(C[m * 16 + n]);
      for (int k = 0; k < 16; k++) {
        s += A[m * 16 + k] * B[k * 16 + n];
        b += fabs(A[m * 16 + k] * B[k * 16 + n]);
      }
      ref[m * 16 + n] = s;
      bound[m * 16 + n] = b;
    }
}

static void transpose16(const double *x, double *y) {
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) y[j * 16 + i] = x[i * 16 + j];
}

static kg_status run_mfma(const mprob *p, int with_c, const kg_exec *e) {
  return kg_wave_mfma16x16x16(p->t, p->a, p->lda, p->b, p->ldb, with_c ? p->c : NULL, p->ldc, p->d, p->ldd, e);
}

START_TEST(test_mfma_random) {
  kg_exec e = tu_exec_c();
  for (int ti = 0; ti < 2; ti++)
    for (int s = 0; s < SEEDS; s++) {
      const int with_c = s % 3 != 0;   /* C = 0 (NULL) one time in three */
      mprob p;
      double ref[256], bound[256];
      char what[64];
      mprob_make(&p, DTYPES[ti], 1000u + 97u * (uint64_t)s + (uint64_t)ti, with_c);
      snprintf(what, sizeof what, "%s seed %d%s", tu_dtype_name(p.t), s, with_c ? " with C" : " C = 0");
      ck_assert_int_eq(run_mfma(&p, with_c, &e), KG_SUCCESS);
      mfma_ref(p.A, p.B, p.C, ref, bound);
      ck_assert_msg(mismatches16(ref, bound, p.d, p.ldd, what, 0) == 0, "%s: D differs from A.B + C", what);
      check_pad32(p.d, p.ldd, what);
      mprob_free(&p);
    }
}
END_TEST

/* Permutation and zero products are exact: D = P.B and D = C bit for bit. */
START_TEST(test_mfma_exact) {
  kg_exec e = tu_exec_c();
  for (int ti = 0; ti < 2; ti++) {
    const kg_dtype t = DTYPES[ti];
    mprob p;
    mprob_make(&p, t, 77u + (uint64_t)ti, 1);
    /* A = P: row m of D is row perm(m) of B (a layout slip moves rows or k) */
    int perm[16];
    for (int m = 0; m < 16; m++) perm[m] = (5 * m + 3) % 16;
    for (int m = 0; m < 16; m++)
      for (int k = 0; k < 16; k++) p.a[m * p.lda + k] = k == perm[m] ? b16_of_int(t, 1) : 0;
    ck_assert_int_eq(run_mfma(&p, 0, &e), KG_SUCCESS);
    for (int m = 0; m < 16; m++)
      for (int n = 0; n < 16; n++)
        ck_assert_msg(p.d[m * p.ldd + n] == p.B[perm[m] * 16 + n], "%s P.B: D[%d][%d] = %.9g, want %.9g",
                      tu_dtype_name(t), m, n, (double)p.d[m * p.ldd + n], p.B[perm[m] * 16 + n]);
    /* A = 0: D = C exactly */
    poison32(p.d, 16 * p.ldd);
    for (int i = 0; i < 16 * p.lda; i++) p.a[i] = 0;
    ck_assert_int_eq(run_mfma(&p, 1, &e), KG_SUCCESS);
    for (int m = 0; m < 16; m++)
      for (int n = 0; n < 16; n++)
        ck_assert_msg(p.d[m * p.ldd + n] == p.C[m * 16 + n], "%s 0.B + C: D[%d][%d]", tu_dtype_name(t), m, n);
    /* small integers: every product and partial sum is exact in f32 */
    double ref[256], bound[256];
    tu_rng r;
    tu_rng_seed(&r, 5u + (uint64_t)ti);
    for (int m = 0; m < 16; m++)
      for (int k = 0; k < 16; k++) {
        int x = tu_rng_int(&r, -8, 8), y = tu_rng_int(&r, -8, 8);
        p.a[m * p.lda + k] = b16_of_int(t, x); p.A[m * 16 + k] = x;
        p.b[m * p.ldb + k] = b16_of_int(t, y); p.B[m * 16 + k] = y;
        p.c[m * p.ldc + k] = (float)tu_rng_int(&r, -100, 100); p.C[m * 16 + k] = p.c[m * p.ldc + k];
      }
    poison32(p.d, 16 * p.ldd);
    ck_assert_int_eq(run_mfma(&p, 1, &e), KG_SUCCESS);
    mfma_ref(p.A, p.B, p.C, ref, bound);
    for (int i = 0; i < 256; i++) bound[i] = 0.0;   /* integers: exact */
    ck_assert_msg(mismatches16(ref, bound, p.d, p.ldd, "integers", 0) == 0, "%s integers", tu_dtype_name(t));
    mprob_free(&p);
  }
}
END_TEST

/* d == c: the tile accumulates in place (all loads before the store). */
START_TEST(test_mfma_in_place) {
  kg_exec e = tu_exec_c();
  for (int ti = 0; ti < 2; ti++)
    for (int s = 0; s < 4; s++) {
      mprob p;
      double ref[256], bound[256];
      mprob_make(&p, DTYPES[ti], 4000u + (uint64_t)(s * 2 + ti), 1);
      mfma_ref(p.A, p.B, p.C, ref, bound);
      ck_assert_int_eq(kg_wave_mfma16x16x16(p.t, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.c, p.ldc, &e), KG_SUCCESS);
      ck_assert_msg(mismatches16(ref, bound, p.c, p.ldc, "in place", 0) == 0, "in place");
      /* a second call adds A.B again */
      for (int i = 0; i < 256; i++) p.C[i] = p.c[(i / 16) * p.ldc + i % 16];
      mfma_ref(p.A, p.B, p.C, ref, bound);
      ck_assert_int_eq(kg_wave_mfma16x16x16(p.t, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.c, p.ldc, &e), KG_SUCCESS);
      ck_assert_msg(mismatches16(ref, bound, p.c, p.ldc, "in place twice", 0) == 0, "in place twice");
      mprob_free(&p);
    }
}
END_TEST

/* The comparison rejects what a kernel with a wrong register layout would
** produce: A or B loaded transposed, D stored transposed, B's k groups in
** another order than A's, rows of A off by one lane. */
START_TEST(test_mfma_rejects_wrong_layouts) {
  for (int ti = 0; ti < 2; ti++)
    for (int s = 0; s < 4; s++) {
      mprob p;
      double ref[256], bound[256], at[256], bt[256], wrong[256], wb[256], x[256];
      float wf[256];
      mprob_make(&p, DTYPES[ti], 7000u + (uint64_t)(s * 2 + ti), s % 2);
      mfma_ref(p.A, p.B, p.C, ref, bound);
      transpose16(p.A, at);
      transpose16(p.B, bt);
      for (int w = 0; w < 5; w++) {
        switch (w) {
          case 0: mfma_ref(at, p.B, p.C, wrong, wb); break;        /* A in B's layout */
          case 1: mfma_ref(p.A, bt, p.C, wrong, wb); break;        /* B in A's layout */
          case 2: transpose16(ref, wrong); break;                  /* D stored transposed */
          case 3:                                                  /* B's k groups reversed */
            for (int k = 0; k < 16; k++)
              for (int n = 0; n < 16; n++) x[k * 16 + n] = p.B[(4 * (3 - k / 4) + k % 4) * 16 + n];
            mfma_ref(p.A, x, p.C, wrong, wb);
            break;
          default:                                                 /* lane t holds A row (t+1)%16 */
            for (int m = 0; m < 16; m++)
              for (int k = 0; k < 16; k++) x[m * 16 + k] = p.A[((m + 1) % 16) * 16 + k];
            mfma_ref(x, p.B, p.C, wrong, wb);
            break;
        }
        for (int i = 0; i < 256; i++) wf[i] = (float)wrong[i];
        ck_assert_msg(mismatches16(ref, bound, wf, 16, "wrong layout", 1) > 0,
                      "%s seed %d: the comparison accepts wrong layout %d", tu_dtype_name(p.t), s, w);
      }
      /* and NaN in one element */
      for (int i = 0; i < 256; i++) wf[i] = (float)ref[i];
      ck_assert_int_eq(mismatches16(ref, bound, wf, 16, "exact", 1), 0);
      wf[37] = NAN;
      ck_assert_int_eq(mismatches16(ref, bound, wf, 16, "nan", 1), 1);
      mprob_free(&p);
    }
}
END_TEST

/* Every compiled-in C wave variant of this file's ops exists under its name. */
START_TEST(test_wave_variants_present) {
  const char *want[] = { "kg_wave_c_mfma16x16x16_f16", "kg_wave_c_mfma16x16x16_bf16", "kg_wave_c_transpose4x4",
                         "kg_wave_c_rowsum16_f16", "kg_wave_c_rowsum16_bf16" };
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    int found = 0;
    for (int i = 0; i < kg_variant_count(); i++) found += strcmp(kg_variant_name(i), want[w]) == 0;
    ck_assert_msg(found == 1, "variant %s found %d times", want[w], found);
  }
}
END_TEST

/* Status codes; a refused call writes nothing. */
START_TEST(test_mfma_validation) {
  kg_exec e = tu_exec_c();
  mprob p;
  mprob_make(&p, KG_F16, 9u, 1);
  const int64_t nd = 16 * p.ldd;
#define MF(t, a, lda, b, ldb, c, ldc, d, ldd, ex) kg_wave_mfma16x16x16(t, a, lda, b, ldb, c, ldc, d, ldd, ex)
  ck_assert_int_eq(MF(KG_F32, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF((kg_dtype)7, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF(KG_F16, NULL, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, NULL, p.ldb, p.c, p.ldc, p.d, p.ldd, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, NULL, p.ldd, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF(KG_F16, p.a, 15, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, 0, p.c, p.ldc, p.d, p.ldd, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, -16, p.d, p.ldd, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, 8, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF(KG_F16, p.a, INT64_MAX, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(MF(KG_F16, (const char *)p.a + 1, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &e),
                   KG_ERROR_MISALIGNED_OPERAND);
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, (const float *)((const char *)p.c + 2), p.ldc, p.d, p.ldd, &e),
                   KG_ERROR_MISALIGNED_OPERAND);
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, (float *)((char *)p.d + 2), p.ldd, &e),
                   KG_ERROR_MISALIGNED_OPERAND);
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, NULL), KG_ERROR_INVALID_ARGUMENT);
  kg_exec bad = tu_exec_c();
  bad.backend = (kg_backend)9;
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &bad), KG_ERROR_INVALID_ARGUMENT);
  /* no HIP device here: unavailable; CUDA has no wave64 variants */
  kg_exec hip = tu_exec_c();
  hip.backend = KG_BACKEND_HIP;
  if (!kg_backend_available(KG_BACKEND_HIP))
    ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &hip), KG_ERROR_BACKEND_UNAVAILABLE);
  kg_exec cuda = tu_exec_c();
  cuda.backend = KG_BACKEND_CUDA;
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &cuda),
                   kg_backend_available(KG_BACKEND_CUDA) ? KG_ERROR_NOT_SUPPORTED : KG_ERROR_BACKEND_UNAVAILABLE);
  /* forced variants: another dtype's, another op's, an unknown name */
  kg_exec f = tu_exec_c();
  f.variant = "kg_wave_c_mfma16x16x16_bf16";
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &f), KG_ERROR_NOT_SUPPORTED);
  f.variant = "kg_wave_c_rowsum16_f16";
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &f), KG_ERROR_NOT_SUPPORTED);
  f.variant = "no_such_variant";
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, p.c, p.ldc, p.d, p.ldd, &f), KG_ERROR_NOT_SUPPORTED);
  for (int64_t i = 0; i < nd; i++) ck_assert_msg(is_poison32(&p.d[i]), "a refused call wrote d[%lld]", (long long)i);
  /* c NULL: ldc is ignored; the forced right variant runs */
  f.variant = "kg_wave_c_mfma16x16x16_f16";
  ck_assert_int_eq(MF(KG_F16, p.a, p.lda, p.b, p.ldb, NULL, -1, p.d, p.ldd, &f), KG_SUCCESS);
  ck_assert(!is_poison32(&p.d[0]) && !is_poison32(&p.d[15 * p.ldd + 15]));
  /* kg_explain takes no wave op (they have no args struct) */
  char buf[256];
  ck_assert_int_eq(kg_explain(KG_OP_WAVE_MFMA16X16X16, &p, &e, buf, sizeof buf), KG_ERROR_INVALID_ARGUMENT);
#undef MF
  mprob_free(&p);
}
END_TEST

/* ---- transpose_4x4_half_registers ------------------------------------------------- */

typedef struct tprob {
  int64_t ldx, ldy;
  uint16_t *x, *y;
} tprob;

static void tprob_make(tprob *p, int64_t ldx, int64_t ldy) {
  p->ldx = ldx; p->ldy = ldy;
  p->x = (uint16_t *)tu_alloc((size_t)(64 * ldx) * 2);
  p->y = (uint16_t *)tu_alloc((size_t)(64 * ldy) * 2);
  for (int64_t i = 0; i < 64 * ldx; i++) p->x[i] = 0x5a5au;
  for (int64_t i = 0; i < 64 * ldy; i++) p->y[i] = POISON_B16;
}
static void tprob_free(tprob *p) { tu_free(p->x); tu_free(p->y); }

/* Mismatches of y against want (64 x 4, row-major, ld 4); the first few are printed. */
static int t_mismatches(const uint16_t *want, const uint16_t *y, int64_t ldy, int quiet) {
  int bad = 0;
  for (int l = 0; l < 64; l++)
    for (int j = 0; j < 4; j++)
      if (y[l * ldy + j] != want[l * 4 + j]) {
        if (!quiet && bad < 4)
          fprintf(stderr, "lane %d element %d: 0x%04x, want 0x%04x\n", l, j, y[l * ldy + j], want[l * 4 + j]);
        bad++;
      }
  return bad;
}

/* want[4q+j][k] = x[4q+k][j]. */
static void t_ref(const uint16_t *x, int64_t ldx, uint16_t *want) {
  for (int q = 0; q < 16; q++)
    for (int j = 0; j < 4; j++)
      for (int k = 0; k < 4; k++) want[(4 * q + j) * 4 + k] = x[(4 * q + k) * ldx + j];
}

static void t_check_pad(const tprob *p) {
  for (int l = 0; l < 64; l++)
    for (int64_t j = 4; j < p->ldy; j++)
      ck_assert_msg(p->y[l * p->ldy + j] == POISON_B16, "padding y[%d][%lld] was written", l, (long long)j);
}

/* reference/hip.md's test: lane l of every quad starts with [100l+0 .. 100l+3]
** (f16 values) and ends with [l, 100+l, 200+l, 300+l]. */
START_TEST(test_transpose_hip_md) {
  kg_exec e = tu_exec_c();
  tprob p;
  uint16_t want[256];
  tprob_make(&p, 4, 4);
  for (int lane = 0; lane < 64; lane++)
    for (int j = 0; j < 4; j++) p.x[lane * 4 + j] = b16_of_int(KG_F16, 100 * (lane % 4) + j);
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, 4, p.y, 4, &e), KG_SUCCESS);
  for (int lane = 0; lane < 64; lane++)
    for (int j = 0; j < 4; j++) {
      double got = ref_f16(p.y[lane * 4 + j]);
      ck_assert_msg(got == 100.0 * j + lane % 4, "lane %d element %d: %g, want %d", lane, j, got, 100 * j + lane % 4);
      want[lane * 4 + j] = b16_of_int(KG_F16, 100 * j + lane % 4);
    }
  ck_assert_int_eq(t_mismatches(want, p.y, 4, 0), 0);
  /* a kernel that left the registers alone would fail */
  ck_assert_int_gt(t_mismatches(want, p.x, 4, 1), 0);
  /* quads apart: lane 4q+l starts with [100l + 4q + j], so a value taken
  ** from another quad shows */
  for (int lane = 0; lane < 64; lane++)
    for (int j = 0; j < 4; j++) p.x[lane * 4 + j] = b16_of_int(KG_F16, 100 * (lane % 4) + 4 * (lane / 4) + j);
  for (int i = 0; i < 256; i++) p.y[i] = POISON_B16;
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, 4, p.y, 4, &e), KG_SUCCESS);
  for (int lane = 0; lane < 64; lane++)
    for (int j = 0; j < 4; j++) {
      double got = ref_f16(p.y[lane * 4 + j]);
      ck_assert_msg(got == 100.0 * j + 4 * (lane / 4) + lane % 4, "quad %d lane %d element %d: %g", lane / 4,
                    lane % 4, j, got);
    }
  tprob_free(&p);
}
END_TEST

/* Random 16-bit patterns (NaN and Inf patterns included: bits move unchanged),
** padded lds; twice transposed is the input again. */
START_TEST(test_transpose_random) {
  kg_exec e = tu_exec_c();
  for (int s = 0; s < SEEDS; s++) {
    tu_rng r;
    tu_rng_seed(&r, 300u + (uint64_t)s);
    tprob p, back;
    uint16_t want[256], x4[256];
    tprob_make(&p, tu_rng_int(&r, 4, 9), tu_rng_int(&r, 4, 9));
    for (int l = 0; l < 64; l++)
      for (int j = 0; j < 4; j++) {
        uint16_t v;
        do v = (uint16_t)tu_rng_next(&r); while (v == POISON_B16);
        p.x[l * p.ldx + j] = v;
        x4[l * 4 + j] = v;
      }
    t_ref(p.x, p.ldx, want);
    ck_assert_int_eq(kg_wave_transpose4x4(p.x, p.ldx, p.y, p.ldy, &e), KG_SUCCESS);
    ck_assert_msg(t_mismatches(want, p.y, p.ldy, 0) == 0, "seed %d", s);
    t_check_pad(&p);
    tprob_make(&back, p.ldy, 4);
    ck_assert_int_eq(kg_wave_transpose4x4(p.y, p.ldy, back.y, 4, &e), KG_SUCCESS);
    ck_assert_msg(t_mismatches(x4, back.y, 4, 0) == 0, "seed %d: transposed twice", s);
    /* the comparison rejects the untransposed input and blocks of another quad */
    ck_assert_int_gt(t_mismatches(want, x4, 4, 1), 0);
    uint16_t shifted[256];
    for (int i = 0; i < 256; i++) shifted[i] = want[(i + 16) % 256];
    ck_assert_int_gt(t_mismatches(want, shifted, 4, 1), 0);
    tprob_free(&back);
    tprob_free(&p);
  }
}
END_TEST

START_TEST(test_transpose_validation) {
  kg_exec e = tu_exec_c();
  tprob p;
  tprob_make(&p, 4, 4);
  ck_assert_int_eq(kg_wave_transpose4x4(NULL, 4, p.y, 4, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, 4, NULL, 4, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, 3, p.y, 4, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, 4, p.y, 0, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, INT64_MAX, p.y, 4, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_transpose4x4((const char *)p.x + 1, 4, p.y, 4, &e), KG_ERROR_MISALIGNED_OPERAND);
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, 4, (char *)p.y + 1, 4, &e), KG_ERROR_MISALIGNED_OPERAND);
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, 4, p.y, 4, NULL), KG_ERROR_INVALID_ARGUMENT);
  kg_exec hip = tu_exec_c();
  hip.backend = KG_BACKEND_HIP;
  if (!kg_backend_available(KG_BACKEND_HIP))
    ck_assert_int_eq(kg_wave_transpose4x4(p.x, 4, p.y, 4, &hip), KG_ERROR_BACKEND_UNAVAILABLE);
  kg_exec f = tu_exec_c();
  f.variant = "kg_wave_c_mfma16x16x16_f16";
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, 4, p.y, 4, &f), KG_ERROR_NOT_SUPPORTED);
  for (int i = 0; i < 256; i++) ck_assert_msg(p.y[i] == POISON_B16, "a refused call wrote y[%d]", i);
  f.variant = "kg_wave_c_transpose4x4";
  ck_assert_int_eq(kg_wave_transpose4x4(p.x, 4, p.y, 4, &f), KG_SUCCESS);
  ck_assert_uint_eq(p.y[0], 0x5a5au);
  tprob_free(&p);
}
END_TEST

/* ---- rowsum16 ------------------------------------------------------------------- */

typedef struct rprob {
  kg_dtype t;
  int64_t lds, ldd;
  uint16_t *s;
  float *d;
  double S[256];
} rprob;

static void rprob_make(rprob *p, kg_dtype t, int64_t lds, int64_t ldd) {
  p->t = t; p->lds = lds; p->ldd = ldd;
  p->s = (uint16_t *)tu_alloc((size_t)(16 * lds) * 2);
  p->d = (float *)tu_alloc((size_t)(16 * ldd) * 4);
  for (int64_t i = 0; i < 16 * lds; i++) p->s[i] = PAD_B16;
  poison32(p->d, 16 * ldd);
}
static void rprob_set(rprob *p, int m, int k, uint16_t bits) {
  p->s[m * p->lds + k] = bits;
  p->S[m * 16 + k] = ref_b16(p->t, bits);
}
static void rprob_free(rprob *p) { tu_free(p->s); tu_free(p->d); }

/* ref[m][n] = sum_k S[m][k] for every n (cols = 0: column sums instead, what a
** transposed layout would give), bound = sum_k |S[m][k]|. */
static void rowsum_ref(const double *S, int cols, double *ref, double *bound) {
  for (int m = 0; m < 16; m++) {
    double s = 0.0, b = 0.0;
    for (int k = 0; k < 16; k++) {
      double x = cols ? S[k * 16 + m] : S[m * 16 + k];
      s += x;
      b += fabs(x);
    }
    for (int n = 0; n < 16; n++) { ref[m * 16 + n] = s; bound[m * 16 + n] = b; }
  }
}

START_TEST(test_rowsum_random) {
  kg_exec e = tu_exec_c();
  for (int ti = 0; ti < 2; ti++)
    for (int s = 0; s < SEEDS; s++) {
      tu_rng r;
      tu_rng_seed(&r, 500u + 31u * (uint64_t)s + (uint64_t)ti);
      rprob p;
      double ref[256], bound[256], cref[256], cbound[256];
      char what[64];
      rprob_make(&p, DTYPES[ti], tu_rng_int(&r, 16, 40), tu_rng_int(&r, 16, 40));
      for (int m = 0; m < 16; m++)
        for (int k = 0; k < 16; k++) rprob_set(&p, m, k, rand_b16(&r, p.t));
      snprintf(what, sizeof what, "%s seed %d", tu_dtype_name(p.t), s);
      ck_assert_int_eq(kg_wave_rowsum16(p.t, p.s, p.lds, p.d, p.ldd, &e), KG_SUCCESS);
      rowsum_ref(p.S, 0, ref, bound);
      ck_assert_msg(mismatches16(ref, bound, p.d, p.ldd, what, 0) == 0, "%s: a column of D is not the row sums", what);
      check_pad32(p.d, p.ldd, what);
      /* the comparison rejects the column sums (S in a transposed layout) */
      float cf[256];
      rowsum_ref(p.S, 1, cref, cbound);
      for (int i = 0; i < 256; i++) cf[i] = (float)cref[i];
      ck_assert_msg(mismatches16(ref, bound, cf, 16, "column sums", 1) > 0, "%s: column sums accepted", what);
      rprob_free(&p);
    }
}
END_TEST

/* Integer rows: exact sums in every column; one nonzero per row names the row. */
START_TEST(test_rowsum_exact) {
  kg_exec e = tu_exec_c();
  for (int ti = 0; ti < 2; ti++) {
    rprob p;
    tu_rng r;
    tu_rng_seed(&r, 42u + (uint64_t)ti);
    rprob_make(&p, DTYPES[ti], 16, 16);
    for (int m = 0; m < 16; m++)
      for (int k = 0; k < 16; k++) rprob_set(&p, m, k, b16_of_int(p.t, tu_rng_int(&r, -9, 9)));
    ck_assert_int_eq(kg_wave_rowsum16(p.t, p.s, 16, p.d, 16, &e), KG_SUCCESS);
    for (int m = 0; m < 16; m++) {
      double want = 0.0;
      for (int k = 0; k < 16; k++) want += p.S[m * 16 + k];
      for (int n = 0; n < 16; n++)
        ck_assert_msg(p.d[m * 16 + n] == want, "%s row %d column %d: %g, want %g", tu_dtype_name(p.t), m, n,
                      (double)p.d[m * 16 + n], want);
    }
    for (int m = 0; m < 16; m++)
      for (int k = 0; k < 16; k++) rprob_set(&p, m, k, k == (m * 7) % 16 ? b16_of_int(p.t, m + 1) : 0);
    poison32(p.d, 256);
    ck_assert_int_eq(kg_wave_rowsum16(p.t, p.s, 16, p.d, 16, &e), KG_SUCCESS);
    for (int m = 0; m < 16; m++)
      for (int n = 0; n < 16; n++) ck_assert_msg(p.d[m * 16 + n] == m + 1, "row %d column %d", m, n);
    rprob_free(&p);
  }
}
END_TEST

START_TEST(test_rowsum_validation) {
  kg_exec e = tu_exec_c();
  rprob p;
  rprob_make(&p, KG_BF16, 16, 16);
  ck_assert_int_eq(kg_wave_rowsum16(KG_F32, p.s, 16, p.d, 16, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_rowsum16((kg_dtype)-1, p.s, 16, p.d, 16, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, NULL, 16, p.d, 16, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, p.s, 16, NULL, 16, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, p.s, 15, p.d, 16, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, p.s, 16, p.d, -16, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, (const char *)p.s + 1, 16, p.d, 16, &e), KG_ERROR_MISALIGNED_OPERAND);
  ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, p.s, 16, (float *)((char *)p.d + 1), 16, &e),
                   KG_ERROR_MISALIGNED_OPERAND);
  ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, p.s, 16, p.d, 16, NULL), KG_ERROR_INVALID_ARGUMENT);
  kg_exec hip = tu_exec_c();
  hip.backend = KG_BACKEND_HIP;
  if (!kg_backend_available(KG_BACKEND_HIP))
    ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, p.s, 16, p.d, 16, &hip), KG_ERROR_BACKEND_UNAVAILABLE);
  kg_exec f = tu_exec_c();
  f.variant = "kg_wave_c_rowsum16_f16";
  ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, p.s, 16, p.d, 16, &f), KG_ERROR_NOT_SUPPORTED);
  for (int i = 0; i < 256; i++) ck_assert_msg(is_poison32(&p.d[i]), "a refused call wrote d[%d]", i);
  f.variant = "kg_wave_c_rowsum16_bf16";
  for (int i = 0; i < 256; i++) p.s[i] = 0;
  ck_assert_int_eq(kg_wave_rowsum16(KG_BF16, p.s, 16, p.d, 16, &f), KG_SUCCESS);
  for (int i = 0; i < 256; i++) ck_assert(p.d[i] == 0.0f);
  rprob_free(&p);
}
END_TEST

/* ---- suites -------------------------------------------------------------------- */

Suite *wave_mfma_suite(void) {
  Suite *s = suite_create("MfmaTile16x16x16Test");
  TCase *tc = tcase_create("mfma");
  tcase_add_test(tc, test_wave_variants_present);
  tcase_add_test(tc, test_mfma_random);
  tcase_add_test(tc, test_mfma_exact);
  tcase_add_test(tc, test_mfma_in_place);
  tcase_add_test(tc, test_mfma_rejects_wrong_layouts);
  tcase_add_test(tc, test_mfma_validation);
  suite_add_tcase(s, tc);
  return s;
}

Suite *wave_transpose_suite(void) {
  Suite *s = suite_create("Transpose4x4HalfTest");
  TCase *tc = tcase_create("transpose");
  tcase_add_test(tc, test_transpose_hip_md);
  tcase_add_test(tc, test_transpose_random);
  tcase_add_test(tc, test_transpose_validation);
  suite_add_tcase(s, tc);
  return s;
}

Suite *wave_rowsum_suite(void) {
  Suite *s = suite_create("RowsumTest");
  TCase *tc = tcase_create("rowsum");
  tcase_add_test(tc, test_rowsum_random);
  tcase_add_test(tc, test_rowsum_exact);
  tcase_add_test(tc, test_rowsum_validation);
  suite_add_tcase(s, tc);
  return s;
}
