/*
** check_dualgemm_fp4.c -- DualGemmFp4Test: the block-scaled FP4 DualGemm (W4A16 and W4A4) on the
** C backend, every variant forced by name, against a reference written here.
**
** Reference (independent of the runtime and of generated code): every FP4 operand is decoded here
** from its bytes (E2M1 table, E4M3 / UE8M0 scale values, the three scale layouts by fp4.md's
** formulas, scale group = batch when the operand's batch stride is non-zero, else 0), products
** summed in double:
**   x0 = alpha0 * A.W0^T / (gsA gs0) + beta0 C0     x1 likewise with W1, C1
**   D0 = x0, D1 = x1 rounded to the output type; D2 = op(D0, D1), op as in dualgemm.md.
** Tolerances: D0 / D1 within 2u|x| + (k + 4) 2^-23 |alpha| sum |a w| + 2^-22 |beta c| (u the output
** type's unit roundoff: f32 accumulation in any order plus one rounding); D2 within the propagated
** error of its inputs (|op'| <= 1.2 for silu / gelu) plus 4u|D2|. When D0 and D1 are stored, D2 is
** also checked against op(stored D0, stored D1) within 4u|D2|. NaN never passes (!(err <= tol)).
** Outputs are poisoned (NaN pattern) with padded lds and batch gaps, which must stay poisoned.
** Cases: m, n not multiples of the 64 x 256 blocks (nor of 8), k / 16 not a multiple of 4, ragged
** last scale block, batched with shared A / W0 / W1 (batch stride 0: one scale group), bias rows,
** c NULL, per-group NVFP4 global scales, and the padding of swizzled scale buffers set to NaN scales.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp4_ref.h"
#include "test_util.h"

/* ---- reference numerics ----------------------------------------------------------------------- */
/* ---- variant names ------------------------------------------------------------------------------
** kg_fp4dualgemm_<backend>_<kernel>_<format>_<dtype>_<op>_<stores>_sf<layout>[_afp4_sfa<layout>] */
typedef struct fvar {
  const char *name;
  char backend[8], kernel[16];
  int format, dtype, op, sd0, sd1, layout, a_fp4, layout_a;
} fvar;

static int parse_layout(const char *s, int *l) {
  if (!strcmp(s, "linear")) *l = KG_SF_LINEAR;
  else if (!strcmp(s, "128x4")) *l = KG_SF_SWIZZLED_128X4;
  else if (!strcmp(s, "8x4")) *l = KG_SF_SWIZZLED_8X4;
  else return 0;
  return 1;
}

static int parse_fvar(const char *name, fvar *v) {
  char buf[160], *tok[12];
  int nt = 0;
  memset(v, 0, sizeof *v);
  v->name = name;
  if (strncmp(name, "kg_fp4dualgemm_", 15) != 0) return 0;
  snprintf(buf, sizeof buf, "%s", name + 15);
  for (char *p = strtok(buf, "_"); p && nt < 12; p = strtok(NULL, "_")) tok[nt++] = p;
  if (nt != 7 && nt != 9) return 0;
  snprintf(v->backend, sizeof v->backend, "%s", tok[0]);
  snprintf(v->kernel, sizeof v->kernel, "%s", tok[1]);
  v->format = !strcmp(tok[2], "nvfp4") ? KG_FP4_NVFP4 : !strcmp(tok[2], "mxfp4") ? KG_FP4_MXFP4 : -1;
  v->dtype = !strcmp(tok[3], "bf16") ? KG_BF16 : !strcmp(tok[3], "f16") ? KG_F16 : -1;
  v->op = !strcmp(tok[4], "swiglu") ? KG_DUAL_SWIGLU : !strcmp(tok[4], "geglu") ? KG_DUAL_GEGLU
        : !strcmp(tok[4], "mul") ? KG_DUAL_MUL : -1;
  if (!strcmp(tok[5], "d2")) { v->sd0 = 0; v->sd1 = 0; }
  else if (!strcmp(tok[5], "d0d2")) { v->sd0 = 1; v->sd1 = 0; }
  else if (!strcmp(tok[5], "d1d2")) { v->sd0 = 0; v->sd1 = 1; }
  else if (!strcmp(tok[5], "d0d1d2")) { v->sd0 = 1; v->sd1 = 1; }
  else return 0;
  if (strncmp(tok[6], "sf", 2) != 0 || !parse_layout(tok[6] + 2, &v->layout)) return 0;
  v->layout_a = -1;
  if (nt == 9) {
    if (strcmp(tok[7], "afp4") != 0 || strncmp(tok[8], "sfa", 3) != 0 || !parse_layout(tok[8] + 3, &v->layout_a))
      return 0;
    v->a_fp4 = 1;
  }
  return v->format >= 0 && v->dtype >= 0 && v->op >= 0;
}

/* ---- problems -------------------------------------------------------------------------------------- */
enum { CN_NONE, CN_FULL, CN_BIAS };
#define SH_A 1u   /* batch stride 0 (shared by every batch) */
#define SH_B0 2u
#define SH_B1 4u

typedef struct fcase {
  const char *what;
  int64_t m, n, k, batch;   /* batch 0: KG_MODE_GEMM */
  unsigned shared;
  int c0, c1, with_gs;
  float alpha0, beta0, alpha1, beta1;
  int64_t slices;           /* > 0: KG_MODE_SPLITK_SERIAL with these slices (batch 0) */
  int bcast;                /* W1 a broadcast vector (ldb1 0): one row per scale group */
  int col_a, col_cd;        /* column-major A (W4A16) / C and D */
} fcase;

static const fcase CASES[] = {
  { "1x1x2", 1, 1, 2, 0, 0, CN_NONE, CN_NONE, 1, 1.0f, 0.0f, 1.0f, 0.0f, 0, 0, 0, 0 },
  { "3x7x30 C", 3, 7, 30, 0, 0, CN_FULL, CN_FULL, 1, 0.75f, -0.5f, 1.25f, 0.5f, 0, 0, 0, 0 },
  { "17x130x200 bias, no gs", 17, 130, 200, 0, 0, CN_BIAS, CN_NONE, 0, 1.0f, 1.0f, -0.5f, 0.0f, 0, 0, 0, 0 },
  { "70x300x64 c1 only", 70, 300, 64, 0, 0, CN_NONE, CN_FULL, 1, 0.5f, 0.0f, 1.0f, -1.0f, 0, 0, 0, 0 },
  { "5x9x546 x3 batched", 5, 9, 546, 3, 0, CN_FULL, CN_BIAS, 1, 1.0f, 0.25f, 0.75f, 1.0f, 0, 0, 0, 0 },
  { "9x20x96 x4 shared A, W1", 9, 20, 96, 4, SH_A | SH_B1, CN_NONE, CN_FULL, 1, 1.5f, 0.0f, 1.0f, 0.5f, 0, 0, 0, 0 },
  { "2x33x64 x2 shared W0", 2, 33, 64, 2, SH_B0, CN_BIAS, CN_NONE, 1, 1.0f, -1.0f, 1.0f, 0.0f, 0, 0, 0, 0 },
  { "1x300x200 x2 batched", 1, 300, 200, 2, 0, CN_FULL, CN_NONE, 1, 1.0f, 0.5f, 1.25f, 0.0f, 0, 0, 0, 0 },
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

typedef struct fprob {
  kg_dualgemm_fp4_args a;
  double wround;                   /* relative rounding of the weights (the dequantize path), else 0 */
  int bsz;
  int64_t kv, batch, ga, g0, g1;   /* batches, scale groups of A, W0, W1 */
  float gsa[8], gs0[8], gs1[8];    /* host copies (1 when NULL) */
  size_t dsz;                      /* elements of each D buffer */
} fprob;

/* Scale bytes: values that keep every output (D2 = products of two sums) inside f16's range.
** NVFP4 with a global scale gs ~ 2688/amax: E4M3 16..448 as a quantizer writes them (elements up
** to ~6); without one 2^-4 .. 2. MXFP4: 2^-9 .. 2^-1. */
static int sf_lo(int format, int with_gs) { return format == KG_FP4_MXFP4 ? 118 : with_gs ? 0x58 : 0x18; }
static int sf_hi(int format, int with_gs) { return format == KG_FP4_MXFP4 ? 126 : with_gs ? 0x7e : 0x40; }

static void *fill_scales(tu_rng *rng, int format, int with_gs, int layout, int64_t rows, int64_t kv, int64_t groups,
                         size_t *bytes) {
  *bytes = ref_sf_bytes(layout, rows, kv, groups);
  uint8_t *S = tu_alloc(*bytes);
  memset(S, 0xff, *bytes);   /* padding: NaN scales in both formats if ever read */
  for (int64_t g = 0; g < groups; g++)
    for (int64_t r = 0; r < rows; r++)
      for (int64_t kb = 0; kb < kv; kb++)
        S[ref_sf_off(layout, rows, kv, g, r, kb)] = (uint8_t)tu_rng_int(rng, sf_lo(format, with_gs), sf_hi(format, with_gs));
  return S;
}

static uint8_t *fill_bytes(tu_rng *rng, size_t n) {
  uint8_t *B = tu_alloc(n ? n : 1);
  for (size_t i = 0; i < n; i++) B[i] = (uint8_t)tu_rng_next(rng);
  return B;
}

static float *fill_gs(float *host, int64_t groups, int on, float base) {
  for (int64_t g = 0; g < 8; g++) host[g] = 1.0f;
  if (!on) return NULL;
  float *p = tu_alloc(sizeof(float) * (size_t)groups);
  for (int64_t g = 0; g < groups; g++) p[g] = host[g] = 2688.0f / (base + 0.75f * (float)g);
  return p;
}

static fprob make_fprob(const fvar *v, const fcase *c, uint64_t seed) {
  fprob p;
  memset(&p, 0, sizeof p);
  tu_rng rng;
  tu_rng_seed(&rng, seed);
  kg_dualgemm_fp4_args *a = &p.a;
  const int64_t m = c->m, n = c->n, k = c->k;
  const kg_dtype t = (kg_dtype)v->dtype;
  p.batch = c->batch ? c->batch : 1;
  a->mode = c->slices ? KG_MODE_SPLITK_SERIAL : c->batch ? KG_MODE_BATCHED : KG_MODE_GEMM;
  a->batch_count = p.batch;
  a->split_k_slices = c->slices;
  a->m = m; a->n = n; a->k = k; a->dtype = t; a->format = (kg_fp4_format)v->format;
  a->sf_layout = (kg_sf_layout)v->layout; a->op = (kg_dual_op)v->op;
  a->store_d0 = v->sd0; a->store_d1 = v->sd1;
  p.bsz = v->format == KG_FP4_NVFP4 ? 16 : 32;
  p.kv = (k + p.bsz - 1) / p.bsz;
  const int nv = v->format == KG_FP4_NVFP4 && c->with_gs;
  /* A */
  p.ga = (c->shared & SH_A) ? 1 : p.batch;
  if (v->a_fp4) {
    a->a_fp4 = 1;
    a->sf_layout_a = (kg_sf_layout)v->layout_a;
    a->lda = k / 2 + 3;
    a->batch_stride_a = (c->shared & SH_A) ? 0 : m * a->lda + 5;
    a->a = fill_bytes(&rng, (size_t)(p.ga * (m * a->lda + 5)));
    a->sf_a = fill_scales(&rng, v->format, nv, v->layout_a, m, p.kv, p.ga, &a->sf_a_bytes);
    a->global_scale_a = fill_gs(p.gsa, p.ga, nv, 3.5f);
  } else {
    a->layout_a = c->col_a ? KG_COL : KG_ROW;
    a->lda = (c->col_a ? m : k) + 3;
    a->batch_stride_a = (c->shared & SH_A) ? 0 : (c->col_a ? k : m) * a->lda + 2;
    int64_t na = p.ga * ((c->col_a ? k : m) * a->lda + 2);
    void *A = tu_alloc((size_t)na * 2);
    for (int64_t i = 0; i < na; i++) tu_set(A, t, i, tu_rng_uniform(&rng) * 4.0 - 2.0);
    a->a = A;
    fill_gs(p.gsa, 1, 0, 0.0f);
  }
  /* W0, W1 */
  /* a broadcast W1: one row of k/2 bytes per scale group, 3 bytes apart, ldb1 0 */
  const int64_t n1 = c->bcast ? 1 : n, row1 = c->bcast ? k / 2 + 3 : n * (k / 2 + 1);
  a->ldb0 = k / 2 + 5; a->ldb1 = c->bcast ? 0 : k / 2 + 1;
  p.g0 = (c->shared & SH_B0) ? 1 : p.batch;
  p.g1 = (c->shared & SH_B1) ? 1 : p.batch;
  a->batch_stride_b0 = (c->shared & SH_B0) ? 0 : n * a->ldb0 + 7;
  a->batch_stride_b1 = (c->shared & SH_B1) ? 0 : row1;
  a->b0 = fill_bytes(&rng, (size_t)(p.g0 * (n * a->ldb0 + 7)));
  a->b1 = fill_bytes(&rng, (size_t)(p.g1 * row1));
  a->sf_b0 = fill_scales(&rng, v->format, nv, v->layout, n, p.kv, p.g0, &a->sf_b0_bytes);
  a->sf_b1 = fill_scales(&rng, v->format, nv, v->layout, n1, p.kv, p.g1, &a->sf_b1_bytes);
  a->global_scale_b0 = fill_gs(p.gs0, p.g0, nv, 5.5f);
  a->global_scale_b1 = fill_gs(p.gs1, p.g1, nv, 2.25f);
  /* C0, C1: m x n in layout_cd (column-major: n columns of m; a bias column) */
  const int col = c->col_cd;
  const int64_t outer = col ? n : m, inner = col ? m : n;
  a->layout_cd = col ? KG_COL : KG_ROW;
  const int cm[2] = { c->c0, c->c1 };
  for (int i = 0; i < 2; i++) {
    int64_t ld = cm[i] == CN_BIAS ? 0 : inner + 1, bs = cm[i] == CN_BIAS ? inner : outer * (inner + 1);
    void *C = NULL;
    if (cm[i] != CN_NONE) {
      C = tu_alloc((size_t)(p.batch * bs) * 2);
      for (int64_t j = 0; j < p.batch * bs; j++) tu_set(C, t, j, tu_rng_uniform(&rng) * 2.0 - 1.0);
    }
    if (i == 0) { a->c0 = C; a->ldc0 = ld; a->batch_stride_c0 = bs; }
    else { a->c1 = C; a->ldc1 = ld; a->batch_stride_c1 = bs; }
  }
  a->alpha0 = c->alpha0; a->beta0 = c->c0 != CN_NONE ? c->beta0 : 0.0f;
  a->alpha1 = c->alpha1; a->beta1 = c->c1 != CN_NONE ? c->beta1 : 0.0f;
  /* D0, D1, D2: ld (n or m) + 2, batch gap 3, poisoned */
  const int64_t ldd = inner + 2, bsd = outer * ldd + 3;
  p.dsz = (size_t)(p.batch * bsd);
  a->ldd0 = a->ldd1 = a->ldd2 = ldd;
  a->batch_stride_d0 = a->batch_stride_d1 = a->batch_stride_d2 = bsd;
  a->d2 = tu_alloc(p.dsz * 2);
  tu_poison(a->d2, t, (int64_t)p.dsz);
  if (v->sd0) { a->d0 = tu_alloc(p.dsz * 2); tu_poison(a->d0, t, (int64_t)p.dsz); }
  if (v->sd1) { a->d1 = tu_alloc(p.dsz * 2); tu_poison(a->d1, t, (int64_t)p.dsz); }
  return p;
}

static void free_fprob(fprob *p) {
  kg_dualgemm_fp4_args *a = &p->a;
  tu_free((void *)a->a); tu_free((void *)a->sf_a); tu_free((void *)a->global_scale_a);
  tu_free((void *)a->b0); tu_free((void *)a->b1); tu_free((void *)a->sf_b0); tu_free((void *)a->sf_b1);
  tu_free((void *)a->global_scale_b0); tu_free((void *)a->global_scale_b1);
  tu_free((void *)a->c0); tu_free((void *)a->c1); tu_free(a->d0); tu_free(a->d1); tu_free(a->d2);
}

/* Dequantized element (row r, k index kk) of a packed FP4 operand of batch z. */
static double deq(const fprob *p, const uint8_t *Q, int64_t ld, int64_t bs, const uint8_t *S, int layout, int64_t rows,
                  int64_t z, int64_t r, int64_t kk, double gs) {
  int64_t g = bs != 0 ? z : 0;
  unsigned byte = Q[g * bs + r * ld + kk / 2], code = kk % 2 ? byte >> 4 : byte & 15u;
  unsigned s = S[ref_sf_off(layout, rows, p->kv, g, r, kk / p->bsz)];
  return p->a.format == KG_FP4_NVFP4 ? ref_e2m1(code) * ref_e4m3(s) / gs : ref_e2m1(code) * ref_ue8m0(s);
}

/* Checks D0 / D1 / D2 and every gap; returns the worst error in tolerance units. */
static double check_fprob(const fprob *p, const char *what) {
  const kg_dualgemm_fp4_args *a = &p->a;
  const kg_dtype t = a->dtype;
  const int64_t m = a->m, n = a->n, k = a->k;
  const double u = tu_unit_roundoff(t);
  const double tiny = t == KG_F16 ? ldexp(1.0, -24) : 1e-30;   /* subnormal spacing of f16 */
  double worst = 0.0;
  double *A = malloc(sizeof(double) * (size_t)(m * k)), *W[2];
  W[0] = malloc(sizeof(double) * (size_t)(n * k));
  W[1] = malloc(sizeof(double) * (size_t)(n * k));
  for (int64_t z = 0; z < p->batch; z++) {
    int64_t zg = a->batch_stride_a != 0 ? z : 0;
    const int col_a = a->layout_a == KG_COL, col = a->layout_cd == KG_COL;
    for (int64_t i = 0; i < m; i++)
      for (int64_t kk = 0; kk < k; kk++)
        A[i * k + kk] = a->a_fp4 ? deq(p, a->a, a->lda, a->batch_stride_a, a->sf_a, a->sf_layout_a, m, z, i, kk,
                                       p->gsa[zg])
                                 : tu_get(a->a, t, (a->batch_stride_a ? z * a->batch_stride_a : 0) +
                                                       (col_a ? kk * a->lda + i : i * a->lda + kk));
    for (int64_t j = 0; j < n; j++)
      for (int64_t kk = 0; kk < k; kk++) {
        W[0][j * k + kk] = deq(p, a->b0, a->ldb0, a->batch_stride_b0, a->sf_b0, a->sf_layout, n, z, j, kk,
                               p->gs0[a->batch_stride_b0 ? z : 0]);
        W[1][j * k + kk] = deq(p, a->b1, a->ldb1, a->batch_stride_b1, a->sf_b1, a->sf_layout, a->ldb1 ? n : 1, z,
                               a->ldb1 ? j : 0, kk, p->gs1[a->batch_stride_b1 ? z : 0]);
      }
    /* D in layout_cd: outer index o (rows, or columns), inner e up to ld; e past m or n is a gap */
    const int64_t outer = col ? n : m, inner = col ? m : n;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t e = 0; e < a->ldd2; e++) {
        const int64_t i = col ? e : o, j = col ? o : e, di = z * a->batch_stride_d2 + o * a->ldd2 + e;
        if (e >= inner) {
          ck_assert_msg(tu_is_poison(a->d2, t, di), "%s: D2 gap (%lld, %lld) written", what, (long long)i, (long long)j);
          if (a->d0) ck_assert_msg(tu_is_poison(a->d0, t, di), "%s: D0 gap written", what);
          if (a->d1) ck_assert_msg(tu_is_poison(a->d1, t, di), "%s: D1 gap written", what);
          continue;
        }
        double x[2], tol[2], xr[2];
        for (int b = 0; b < 2; b++) {
          double s = 0.0, abs = 0.0;
          for (int64_t kk = 0; kk < k; kk++) {
            double q = A[i * k + kk] * W[b][j * k + kk];
            s += q; abs += fabs(q);
          }
          const void *C = b ? a->c1 : a->c0;
          const double alpha = b ? a->alpha1 : a->alpha0, beta = b ? a->beta1 : a->beta0;
          const int64_t ldc = b ? a->ldc1 : a->ldc0, bsc = b ? a->batch_stride_c1 : a->batch_stride_c0;
          double cterm = C && beta != 0.0 ? beta * tu_get(C, t, z * bsc + (col ? j * ldc + i : i * ldc + j)) : 0.0;
          x[b] = alpha * s + cterm;
          xr[b] = tu_round(t, x[b]);
          tol[b] = 2.0 * u * fabs(x[b]) + ((double)(k + 4) * ldexp(1.0, -23) + p->wround) * fabs(alpha) * abs +
                   ldexp(1.0, -22) * fabs(cterm) + tiny;
          void *D = b ? a->d1 : a->d0;
          if (D) {
            double got = tu_get(D, t, di), err = fabs(got - x[b]);
            ck_assert_msg(err <= tol[b], "%s: D%d(%lld, %lld, %lld) = %.9g, reference %.9g (tol %.3g)", what, b,
                          (long long)z, (long long)i, (long long)j, got, x[b], tol[b]);
            if (err / tol[b] > worst) worst = err / tol[b];
          }
        }
        const double ref2 = ref_dual_op(a->op, xr[0], xr[1]);
        /* D0 / D1 may round to a neighbour of xr: propagate e_i = tol_i + 2u|x_i| through op */
        const double e0 = tol[0] + 2.0 * u * fabs(x[0]), e1 = tol[1] + 2.0 * u * fabs(x[1]);
        const double g0 = a->op == KG_DUAL_MUL ? fabs(xr[0]) + e0 : fabs(ref_dual_op(a->op, xr[0], 1.0)) + 1.2 * e0;
        const double l0 = a->op == KG_DUAL_MUL ? 1.0 : 1.2;
        const double tol2 = l0 * e0 * (fabs(xr[1]) + e1) + g0 * e1 + 4.0 * u * fabs(ref2) + tiny;
        const double got2 = tu_get(a->d2, t, di);
        ck_assert_msg(fabs(got2 - ref2) <= tol2, "%s: D2(%lld, %lld, %lld) = %.9g, reference %.9g (tol %.3g)", what,
                      (long long)z, (long long)i, (long long)j, got2, ref2, tol2);
        if (fabs(got2 - ref2) / tol2 > worst) worst = fabs(got2 - ref2) / tol2;
        if (a->d0 && a->d1) {
          const double own = ref_dual_op(a->op, tu_get(a->d0, t, di), tu_get(a->d1, t, di));
          ck_assert_msg(fabs(got2 - own) <= 4.0 * u * fabs(own) + 1e-30, "%s: D2(%lld, %lld) = %.9g, op(D0, D1) %.9g",
                        what, (long long)i, (long long)j, got2, own);
        }
      }
    /* the gap after each batch */
    for (int64_t gi = outer * a->ldd2; z + 1 < p->batch && gi < a->batch_stride_d2; gi++)
      ck_assert_msg(tu_is_poison(a->d2, t, z * a->batch_stride_d2 + gi), "%s: D2 batch gap written", what);
  }
  free(A); free(W[0]); free(W[1]);
  return worst;
}

static kg_status run_variant(const fvar *v, fprob *p) {
  kg_exec e = tu_exec_c();
  e.variant = v->name;
  return kg_dualgemm_fp4(&p->a, &e);
}

START_TEST(test_every_c_variant) {
  int nv = 0;
  for (int i = 0; i < kg_variant_count(); i++) {
    fvar v;
    const char *name = kg_variant_name(i);
    if (strncmp(name, "kg_fp4dualgemm_c_", 17) != 0) continue;
    ck_assert_msg(parse_fvar(name, &v), "cannot parse %s", name);
    nv++;
    for (int c = 0; c < NCASES; c++) {
      fprob p = make_fprob(&v, &CASES[c], 4000 + 31 * (uint64_t)c + 7 * (uint64_t)i);
      kg_exec e = tu_exec_c();
      const char *sel = NULL;
      ck_assert_int_eq(kg_dualgemm_fp4_select(&p.a, &e, &sel), KG_SUCCESS);
      ck_assert_str_eq(sel, name);   /* plain dispatch picks the variant of these axes */
      size_t ws = 9;
      ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&p.a, &e, &ws), KG_SUCCESS);
      ck_assert_int_eq((int)ws, 0);
      kg_status st = run_variant(&v, &p);
      ck_assert_msg(st == KG_SUCCESS, "%s %s: %s", name, CASES[c].what, kg_status_string(st));
      char what[200];
      snprintf(what, sizeof what, "%s %s", name, CASES[c].what);
      check_fprob(&p, what);
      free_fprob(&p);
    }
  }
  ck_assert_int_ge(nv, 36);
}
END_TEST

/* Exact case: small integers in A, power-of-two scales, alpha 1: the f32 sums are exact, so D0
** and D1 are the reference rounded once and D2 of the mul variant is op(D0, D1) rounded once. */
START_TEST(test_exact_mul) {
  fvar v;
  ck_assert(parse_fvar("kg_fp4dualgemm_c_blocked_nvfp4_bf16_mul_d0d1d2_sf128x4", &v));
  fcase c = { "exact", 6, 10, 64, 0, 0, CN_NONE, CN_NONE, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0, 0, 0, 0 };
  fprob p = make_fprob(&v, &c, 99);
  uint8_t *S0 = (uint8_t *)p.a.sf_b0, *S1 = (uint8_t *)p.a.sf_b1;
  for (int64_t r = 0; r < 10; r++)
    for (int64_t kb = 0; kb < p.kv; kb++) {
      S0[ref_sf_off(KG_SF_SWIZZLED_128X4, 10, p.kv, 0, r, kb)] = 0x38;   /* 1.0 */
      S1[ref_sf_off(KG_SF_SWIZZLED_128X4, 10, p.kv, 0, r, kb)] = 0x30;   /* 0.5 */
    }
  for (int64_t i = 0; i < 6 * p.a.lda; i++) tu_set((void *)p.a.a, KG_BF16, i, (double)((i % 5) - 2));
  ck_assert_int_eq(run_variant(&v, &p), KG_SUCCESS);
  for (int64_t i = 0; i < 6; i++)
    for (int64_t j = 0; j < 10; j++) {
      double s[2] = { 0.0, 0.0 };
      for (int64_t kk = 0; kk < 64; kk++) {
        double x = tu_get(p.a.a, KG_BF16, i * p.a.lda + kk);
        s[0] += x * deq(&p, p.a.b0, p.a.ldb0, 0, p.a.sf_b0, KG_SF_SWIZZLED_128X4, 10, 0, j, kk, 1.0);
        s[1] += x * deq(&p, p.a.b1, p.a.ldb1, 0, p.a.sf_b1, KG_SF_SWIZZLED_128X4, 10, 0, j, kk, 1.0);
      }
      int64_t di = i * p.a.ldd2 + j;
      ck_assert_msg(tu_get(p.a.d0, KG_BF16, di) == tu_round(KG_BF16, s[0]), "D0 (%lld, %lld)", (long long)i, (long long)j);
      ck_assert_msg(tu_get(p.a.d1, KG_BF16, di) == tu_round(KG_BF16, s[1]), "D1 (%lld, %lld)", (long long)i, (long long)j);
      ck_assert_msg(tu_get(p.a.d2, KG_BF16, di) == tu_round(KG_BF16, tu_round(KG_BF16, s[0]) * tu_round(KG_BF16, s[1])),
                    "D2 (%lld, %lld)", (long long)i, (long long)j);
    }
  free_fprob(&p);
}
END_TEST

static void expect(const kg_dualgemm_fp4_args *a, kg_status want, const char *what) {
  kg_exec e = tu_exec_c();
  kg_status st = kg_dualgemm_fp4(a, &e);
  ck_assert_msg(st == want, "%s: got %s, wanted %s", what, kg_status_string(st), kg_status_string(want));
  char buf[16384];
  st = kg_explain(KG_OP_DUALGEMM_FP4, a, &e, buf, sizeof buf);
  ck_assert_msg(st == want, "%s: explain %s", what, kg_status_string(st));
  if (want == KG_ERROR_INVALID_ARGUMENT || want == KG_ERROR_INVALID_PROBLEM)
    ck_assert_msg(strncmp(buf, "arguments: ", 11) == 0, "%s: %s", what, buf);
}

/* Serial split-K and the broadcast W1 vector: no in-kernel variant takes them; they run on the
** dequantize path (kg_dualgemm's split-K mode / ldb1 = 0 column on the dequantized weights), on
** the C backend too, with the size query's workspace. Same reference and tolerances, plus the
** weights' (and W4A4 A's) one rounding to the activation type where NVFP4 global scales make it. */
static const fcase PATH_CASES[] = {
  { "7x40x200 split 3", 7, 40, 200, 0, 0, CN_FULL, CN_NONE, 1, 0.75f, 0.5f, 1.25f, 0.0f, 3, 0, 0, 0 },
  { "5x33x96 split 96 (one k a slice)", 5, 33, 96, 0, 0, CN_NONE, CN_BIAS, 1, 1.0f, 0.0f, 1.0f, -0.5f, 96, 0, 0, 0 },
  { "9x20x130 split 1", 9, 20, 130, 0, 0, CN_NONE, CN_NONE, 1, 1.0f, 0.0f, 1.0f, 0.0f, 1, 0, 0, 0 },
  { "3x21x64 broadcast W1", 3, 21, 64, 0, 0, CN_NONE, CN_FULL, 1, 1.0f, 0.0f, 0.5f, 1.0f, 0, 1, 0, 0 },
  { "4x24x128 x3 broadcast W1 per batch", 4, 24, 128, 3, 0, CN_BIAS, CN_NONE, 1, 1.0f, -1.0f, 1.0f, 0.0f, 0, 1, 0, 0 },
  { "2x16x64 x2 broadcast W1 shared", 2, 16, 64, 2, SH_B1, CN_NONE, CN_NONE, 1, 1.0f, 0.0f, 1.0f, 0.0f, 0, 1, 0, 0 },
  { "6x50x130 split 4, broadcast W1", 6, 50, 130, 0, 0, CN_FULL, CN_FULL, 1, 1.0f, 0.25f, 1.5f, -0.5f, 4, 1, 0, 0 },
  { "9x30x96 column-major A", 9, 30, 96, 0, 0, CN_FULL, CN_NONE, 1, 1.0f, 0.5f, 1.0f, 0.0f, 0, 0, 1, 0 },
  { "7x20x64 x2 column-major C, D", 7, 20, 64, 2, 0, CN_BIAS, CN_FULL, 1, 1.0f, -1.0f, 0.5f, 1.0f, 0, 0, 0, 1 },
  { "5x17x130 column-major A, C, D, split 2", 5, 17, 130, 0, 0, CN_FULL, CN_BIAS, 1, 1.0f, 0.5f, 1.0f, 1.0f, 2, 0, 1, 1 },
};

START_TEST(test_path_splitk_broadcast) {
  static const char *const NAMES[] = {
    "kg_fp4dualgemm_c_blocked_nvfp4_bf16_swiglu_d2_sf128x4", "kg_fp4dualgemm_c_blocked_mxfp4_bf16_mul_d0d1d2_sf128x4",
    "kg_fp4dualgemm_c_blocked_nvfp4_f16_geglu_d2_sflinear", "kg_fp4dualgemm_c_blocked_mxfp4_f16_swiglu_d2_sf8x4",
    "kg_fp4dualgemm_c_blocked_nvfp4_bf16_mul_d0d1d2_sf128x4_afp4_sfa8x4",
    "kg_fp4dualgemm_c_blocked_nvfp4_bf16_swiglu_d0d1d2_sf128x4_afp4_sfa8x4",
  };
  int ran = 0;
  for (int i = 0; i < (int)(sizeof NAMES / sizeof NAMES[0]); i++) {
    fvar v;
    ck_assert_msg(parse_fvar(NAMES[i], &v), "cannot parse %s", NAMES[i]);
    for (int c = 0; c < (int)(sizeof PATH_CASES / sizeof PATH_CASES[0]); c++) {
      const fcase *fc = &PATH_CASES[c];
      fprob p = make_fprob(&v, fc, 9000 + 37 * (uint64_t)c + 5 * (uint64_t)i);
      const int gs = v.format == KG_FP4_NVFP4 && fc->with_gs;
      char what[240];
      snprintf(what, sizeof what, "%s-like %s", NAMES[i], fc->what);
      kg_exec e = tu_exec_c();
      size_t ws = 7;
      const char *sel = NULL;
      const kg_status sst = kg_dualgemm_fp4_select(&p.a, &e, &sel);
      const kg_status qst = kg_dualgemm_fp4_workspace_size(&p.a, &e, &ws);
      ck_assert_msg(sst == qst, "%s: select %s, size query %s", what, kg_status_string(sst), kg_status_string(qst));
      /* the path: exact weights in the activation type, or bf16 with one rounding; and a kg_dualgemm
      ** variant of the op and stores (the C specs build swiglu with D2 only) */
      const int path = fc->slices > 1 || fc->bcast || p.a.layout_a == KG_COL || p.a.layout_cd == KG_COL;
      const int want_ok = !path || (!(v.dtype == KG_F16 && (v.format == KG_FP4_MXFP4 || gs)) &&
                                    !(v.op == KG_DUAL_SWIGLU && v.sd0));
      if (!want_ok) {
        ck_assert_msg(sst == KG_ERROR_NOT_SUPPORTED, "%s: %s", what, kg_status_string(sst));
        ck_assert_int_eq((int)ws, 0);
        ck_assert_int_eq(kg_dualgemm_fp4(&p.a, &e), KG_ERROR_NOT_SUPPORTED);
        free_fprob(&p);
        continue;
      }
      ck_assert_msg(sst == KG_SUCCESS, "%s: %s", what, kg_status_string(sst));
      if (!path) {   /* one slice: the in-kernel variant, no workspace */
        ck_assert_str_eq(sel, NAMES[i]);
        ck_assert_int_eq((int)ws, 0);
      } else {
        ck_assert_msg(strncmp(sel, "dequantize + kg_dualgemm_c_", 27) == 0, "%s: %s", what, sel);
        ck_assert_msg(ws > 0, "%s: no workspace", what);
        /* split-K: kg_dualgemm's two f32 partial sums come after the dequantized weights */
        if (fc->slices > 1) ck_assert_msg(ws > (size_t)(2 * fc->m * fc->n * 4), "%s: workspace %zu", what, ws);
        char why[4096];
        ck_assert_int_eq(kg_explain(KG_OP_DUALGEMM_FP4, &p.a, &e, why, sizeof why), KG_ERROR_WORKSPACE_TOO_SMALL);
        const char *form = fc->slices > 1 ? "serial split-K" : fc->bcast ? "a broadcast W1 vector" : "column-major A, C or D";
        char want[96];
        snprintf(want, sizeof want, "%s: the in-kernel FP4 variants do not take it", form);
        ck_assert_msg(strstr(why, want), "%s", why);
        /* without it, or with one byte less: refused, nothing written */
        ck_assert_int_eq(kg_dualgemm_fp4(&p.a, &e), KG_ERROR_WORKSPACE_TOO_SMALL);
        e.workspace = tu_alloc(ws + 16);
        e.workspace_size = ws - 1;
        ck_assert_int_eq(kg_dualgemm_fp4(&p.a, &e), KG_ERROR_WORKSPACE_TOO_SMALL);
        for (int64_t q = 0; q < (int64_t)p.dsz; q++) ck_assert(tu_is_poison(p.a.d2, p.a.dtype, q));
        e.workspace_size = ws;
        /* an in-kernel variant forced by name does not take it */
        kg_exec f = e;
        f.variant = NAMES[i];
        ck_assert_int_eq(kg_dualgemm_fp4(&p.a, &f), KG_ERROR_NOT_SUPPORTED);
      }
      p.wround = gs && v.dtype == KG_BF16 && path ? (v.a_fp4 ? 2.0 : 1.0) * tu_unit_roundoff(KG_BF16) : 0.0;
      const kg_status st = kg_dualgemm_fp4(&p.a, &e);
      ck_assert_msg(st == KG_SUCCESS, "%s: %s", what, kg_status_string(st));
      check_fprob(&p, what);
      tu_free(e.workspace);
      free_fprob(&p);
      ran++;
    }
  }
  /* 6 names x 10 cases; NOT_SUPPORTED: the 9 path cases of the two f16 names, and the 8 of the W4A4 swiglu
  ** d0d1d2 name (no such kg_dualgemm variant; its FP4 A stays row-major, so "column-major A" runs in-kernel) */
  ck_assert_int_eq(ran, 60 - 9 - 9 - 8);
}
END_TEST

START_TEST(test_validation_statuses) {
  fvar v;
  ck_assert(parse_fvar("kg_fp4dualgemm_c_blocked_nvfp4_bf16_swiglu_d2_sf128x4", &v));
  fcase c = { "val", 3, 20, 64, 2, 0, CN_FULL, CN_NONE, 1, 1.0f, 1.0f, 1.0f, 0.0f, 0, 0, 0, 0 };
  fprob p = make_fprob(&v, &c, 5);
  kg_dualgemm_fp4_args a;
  expect(&p.a, KG_SUCCESS, "valid batched");
  a = p.a; a.batch_stride_b1 = 0; expect(&a, KG_ERROR_INVALID_PROBLEM, "shared B1 with two scale groups");
  a.sf_b1_bytes = 512; expect(&a, KG_SUCCESS, "shared B1 with one scale group");
  ck_assert_int_eq(kg_dualgemm_fp4(NULL, &(kg_exec){ 0 }), KG_ERROR_INVALID_ARGUMENT);
  a = p.a; ck_assert_int_eq(kg_dualgemm_fp4(&a, NULL), KG_ERROR_INVALID_ARGUMENT);
  /* from here on every call fails: D2 stays poisoned */
  tu_poison(p.a.d2, KG_BF16, (int64_t)p.dsz);
  a = p.a; a.mode = KG_MODE_SPLITK_SERIAL; a.split_k_slices = 2;
  expect(&a, KG_ERROR_INVALID_PROBLEM, "split-K with batch_count 2");
  a.batch_count = 1; a.split_k_slices = 0; expect(&a, KG_ERROR_INVALID_ARGUMENT, "split-K with 0 slices");
  a.split_k_slices = 65; expect(&a, KG_ERROR_INVALID_PROBLEM, "more slices than k");
  a.k = 4 * (int64_t)KG_MAX_BATCH; a.split_k_slices = KG_MAX_BATCH + 1;
  expect(&a, KG_ERROR_INVALID_PROBLEM, "more slices than the grid limit, fewer than k");
  a = p.a; a.split_k_slices = 2; expect(&a, KG_ERROR_INVALID_PROBLEM, "slices in batched mode");
  a = p.a; a.mode = (kg_mode)9; expect(&a, KG_ERROR_INVALID_ARGUMENT, "unknown mode");
  a = p.a; a.mode = KG_MODE_GEMM; expect(&a, KG_ERROR_INVALID_PROBLEM, "gemm mode with batch_count 2");
  a = p.a; a.batch_count = 0; expect(&a, KG_ERROR_INVALID_ARGUMENT, "batch_count 0");
  a = p.a; a.batch_count = 70000; expect(&a, KG_ERROR_INVALID_PROBLEM, "batch_count above the grid limit");
  a = p.a; a.sf_b0_bytes = 512; expect(&a, KG_ERROR_INVALID_PROBLEM, "sf_b0 sized for one group, two needed");
  a = p.a; a.sf_b1_bytes += 1; expect(&a, KG_ERROR_INVALID_PROBLEM, "sf_b1 one byte too many");
  a = p.a; a.format = KG_FP4_MXFP4; expect(&a, KG_ERROR_INVALID_PROBLEM, "mxfp4 with global scales");
  a = p.a; a.store_d0 = 1; expect(&a, KG_ERROR_INVALID_ARGUMENT, "store_d0 without d0");
  a = p.a; a.d1 = p.a.d2; expect(&a, KG_ERROR_INVALID_ARGUMENT, "d1 without store_d1");
  a = p.a; a.op = (kg_dual_op)5; expect(&a, KG_ERROR_INVALID_ARGUMENT, "unknown op");
  a = p.a; a.k = 63; expect(&a, KG_ERROR_INVALID_PROBLEM, "odd k");
  a = p.a; a.n = 0; expect(&a, KG_ERROR_INVALID_ARGUMENT, "n 0");
  a = p.a; a.ldb0 = 31; expect(&a, KG_ERROR_INVALID_ARGUMENT, "ldb0 < k/2 (no broadcast vector)");
  /* ldb1 = 0: a broadcast W1, whose 128x4 scales for one row pad to 128 rows as n = 20's do: valid, and
  ** on the dequantize path, which needs the workspace (test_path_splitk_broadcast runs it) */
  a = p.a; a.ldb1 = 0; expect(&a, KG_ERROR_WORKSPACE_TOO_SMALL, "broadcast W1 without the workspace");
  a.sf_b1_bytes += 512; expect(&a, KG_ERROR_INVALID_PROBLEM, "broadcast W1 with scales for 129 .. 256 rows");
  a = p.a; a.ldb0 = 0; expect(&a, KG_ERROR_INVALID_ARGUMENT, "ldb0 = 0 (W0 is a matrix)");
  a = p.a; a.layout_cd = (kg_layout)2; expect(&a, KG_ERROR_INVALID_ARGUMENT, "unknown layout_cd");
  a = p.a; a.layout_a = KG_COL; a.lda = 2; expect(&a, KG_ERROR_INVALID_ARGUMENT, "column-major A: lda < m");
  /* column-major D: ldd 22 >= m, but a batch (20 columns of 22) passes the batch stride 69 */
  a = p.a; a.layout_cd = KG_COL; expect(&a, KG_ERROR_INVALID_PROBLEM, "column-major D batches overlap");
  {
    char buf[2048];
    a = p.a; a.a_fp4 = 1; a.layout_a = KG_COL; expect(&a, KG_ERROR_INVALID_ARGUMENT, "column-major FP4 A");
    kg_explain(KG_OP_DUALGEMM_FP4, &a, &(kg_exec){ 0 }, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "FP4 A is packed along K"), "%s", buf);
  }
  a = p.a; a.ldd2 = 19; expect(&a, KG_ERROR_INVALID_ARGUMENT, "ldd2 < n");
  a = p.a; a.batch_stride_d2 = 5; expect(&a, KG_ERROR_INVALID_PROBLEM, "D2 batches overlap");
  a = p.a; a.batch_stride_a = -1; expect(&a, KG_ERROR_INVALID_ARGUMENT, "negative batch stride");
  a = p.a; a.c0 = NULL; expect(&a, KG_ERROR_INVALID_ARGUMENT, "c0 NULL with beta0");
  a = p.a; a.sf_b1 = NULL; expect(&a, KG_ERROR_INVALID_ARGUMENT, "sf_b1 NULL");
  a = p.a; a.dtype = KG_F32; expect(&a, KG_ERROR_INVALID_ARGUMENT, "f32");
  a = p.a; a.sf_layout = (kg_sf_layout)3; expect(&a, KG_ERROR_INVALID_ARGUMENT, "unknown layout");
  a = p.a; a.sf_a = p.a.sf_b0; expect(&a, KG_ERROR_INVALID_PROBLEM, "sf_a without a_fp4");
  a = p.a; a.a_fp4 = 2; expect(&a, KG_ERROR_INVALID_ARGUMENT, "a_fp4 = 2");
  a = p.a; a.a_fp4 = 1; expect(&a, KG_ERROR_INVALID_ARGUMENT, "a_fp4 without sf_a");
  a = p.a; a.a_fp4 = 1; a.sf_a = p.a.sf_b0; a.sf_layout_a = KG_SF_LINEAR; a.sf_a_bytes = 12;
  expect(&a, KG_ERROR_INVALID_PROBLEM, "sf_a sized for one group, two needed");
  a.sf_a_bytes = 24; expect(&a, KG_ERROR_NOT_SUPPORTED, "W4A4 with linear A scales: no such variant");
  {
    char buf[16384];
    kg_explain(KG_OP_DUALGEMM_FP4, &a, &(kg_exec){ 0 }, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "rejected: A scale layout 8x4, wanted linear"), "%s", buf);
    ck_assert_msg(strstr(buf, "rejected: A 16-bit (W4A16), wanted FP4 (W4A4)"), "%s", buf);
  }
  a = p.a; a.lda = INT64_MAX / 4; expect(&a, KG_ERROR_INVALID_ARGUMENT, "extent overflow");
  /* typed pointers aligned to their elements (kg.h), on the C backend too */
  a = p.a; a.a = (const char *)p.a.a + 1; expect(&a, KG_ERROR_MISALIGNED_OPERAND, "a at an odd address");
  a = p.a; a.c0 = (const char *)p.a.c0 + 1; expect(&a, KG_ERROR_MISALIGNED_OPERAND, "c0 at an odd address");
  a = p.a; a.d2 = (char *)p.a.d2 + 1; expect(&a, KG_ERROR_MISALIGNED_OPERAND, "d2 at an odd address");
  a = p.a; a.global_scale_b1 = (const float *)((const char *)p.a.global_scale_b1 + 1);
  expect(&a, KG_ERROR_MISALIGNED_OPERAND, "global_scale_b1 one byte into a float");
  for (int64_t i = 0; i < (int64_t)p.dsz; i++) ck_assert(tu_is_poison(p.a.d2, KG_BF16, i));
  size_t ws = 3;
  ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&p.a, &(kg_exec){ 0 }, NULL), KG_ERROR_INVALID_ARGUMENT);
  a = p.a; a.k = 63;
  ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&a, &(kg_exec){ 0 }, &ws), KG_ERROR_INVALID_PROBLEM);
  ck_assert_int_eq((int)ws, 0);
  free_fprob(&p);
}
END_TEST

START_TEST(test_dispatch_and_explain) {
  fvar v;
  ck_assert(parse_fvar("kg_fp4dualgemm_c_blocked_nvfp4_bf16_swiglu_d2_sflinear", &v));
  fcase c = { "explain", 40, 20, 64, 0, 0, CN_NONE, CN_NONE, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0, 0, 0, 0 };
  fprob p = make_fprob(&v, &c, 11);
  kg_exec e = tu_exec_c();
  static char buf[65536];   /* messages below name the missing line, not the whole text */
  ck_assert_int_eq(kg_explain(KG_OP_DUALGEMM_FP4, &p.a, &e, buf, sizeof buf), KG_SUCCESS);
  static const char *const WANT[] = {
    "kg_fp4dualgemm_c_blocked_nvfp4_bf16_swiglu_d2_sflinear: chosen (specs/dualgemm_fp4.lua:",
    "kg_fp4dualgemm_c_blocked_nvfp4_bf16_geglu_d2_sflinear: rejected: op geglu, wanted swiglu",
    "kg_fp4dualgemm_c_blocked_mxfp4_bf16_swiglu_d2_sflinear: rejected: format mxfp4, wanted nvfp4",
    "kg_fp4dualgemm_c_blocked_nvfp4_bf16_swiglu_d2_sf128x4: rejected: scale layout 128x4, wanted linear",
    "kg_fp4dualgemm_c_blocked_nvfp4_bf16_mul_d0d2_sf128x4: rejected: scale layout 128x4, wanted linear",
    "kg_fp4dualgemm_c_blocked_nvfp4_f16_swiglu_d2_sflinear: not considered: ",
  };
  for (size_t i = 0; i < sizeof WANT / sizeof WANT[0]; i++) ck_assert_msg(strstr(buf, WANT[i]), "missing: %s", WANT[i]);
  for (const char *l = buf; *l; l = strchr(l, '\n') + 1)
    ck_assert_msg(strncmp(l, "kg_fp4dualgemm_", 15) == 0, "explain lists another op's variant: %.120s", l);
  p.a.store_d0 = 1; p.a.d0 = p.a.d2;
  ck_assert_int_eq(kg_explain(KG_OP_DUALGEMM_FP4, &p.a, &e, buf, sizeof buf), KG_ERROR_NOT_SUPPORTED);
  ck_assert_msg(strstr(buf, "rejected: stores d0=0 d1=0, wanted d0=1 d1=0"), "store flags not explained");
  p.a.store_d0 = 0; p.a.d0 = NULL;
  e.variant = "kg_fp4gemm_c_blocked_mxfp4_bf16_sflinear";   /* another op's variant */
  ck_assert_int_eq(kg_dualgemm_fp4(&p.a, &e), KG_ERROR_NOT_SUPPORTED);
  for (int64_t i = 0; i < (int64_t)p.dsz; i++) ck_assert(tu_is_poison(p.a.d2, KG_BF16, i));
  if (!kg_backend_available(KG_BACKEND_CUDA)) {
    kg_exec g = { KG_BACKEND_CUDA, 0, 0, 0, 0, 0 };
    ck_assert_int_eq(kg_dualgemm_fp4(&p.a, &g), KG_ERROR_BACKEND_UNAVAILABLE);
  }
  free_fprob(&p);
}
END_TEST

/* The workspace contract on the C backend (kg.h "Dequantize path and workspace"): the size is 0
** (GEMM and batched mode, small and large m), a workspace changes nothing (same variant, same bytes of
** D2, no explain line about the path), the path forced by name is KG_ERROR_NOT_SUPPORTED with nothing
** written, and the size query checks its arguments and exec first. */
START_TEST(test_workspace_contract) {
  static const fcase WCASES[] = {
    { "12x20x64", 12, 20, 64, 0, 0, CN_FULL, CN_NONE, 1, 1.0f, 0.5f, 1.0f, 0.0f, 0, 0, 0, 0 },
    { "70x40x96 x3 batched, shared W1", 70, 40, 96, 3, SH_B1, CN_BIAS, CN_FULL, 1, 0.75f, 1.0f, 1.25f, -0.5f, 0, 0, 0, 0 },
  };
  const char *const NAMES[] = { "kg_fp4dualgemm_c_blocked_nvfp4_bf16_swiglu_d2_sf128x4",
                                "kg_fp4dualgemm_c_blocked_mxfp4_bf16_swiglu_d2_sf128x4_afp4_sfa8x4" };
  for (int vi = 0; vi < 2; vi++)
    for (int c = 0; c < 2; c++) {
      fvar v;
      ck_assert(parse_fvar(NAMES[vi], &v));
      fprob p = make_fprob(&v, &WCASES[c], 91 + 3 * (uint64_t)c + (uint64_t)vi);
      kg_exec e = tu_exec_c();
      size_t ws = 5;
      ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&p.a, &e, &ws), KG_SUCCESS);
      ck_assert_int_eq((int)ws, 0);
      const char *plain = NULL, *sel = NULL;
      ck_assert_int_eq(kg_dualgemm_fp4_select(&p.a, &e, &plain), KG_SUCCESS);
      ck_assert_str_eq(plain, NAMES[vi]);
      ck_assert_int_eq(kg_dualgemm_fp4(&p.a, &e), KG_SUCCESS);
      uint8_t *ref = malloc(p.dsz * 2);
      memcpy(ref, p.a.d2, p.dsz * 2);
      tu_poison(p.a.d2, KG_BF16, (int64_t)p.dsz);
      static _Alignas(16) uint8_t wsbuf[1 << 16];
      e.workspace = wsbuf; e.workspace_size = sizeof wsbuf;
      ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&p.a, &e, &ws), KG_SUCCESS);
      ck_assert_int_eq((int)ws, 0);
      ck_assert_int_eq(kg_dualgemm_fp4_select(&p.a, &e, &sel), KG_SUCCESS);
      ck_assert_str_eq(sel, plain);
      static char buf[65536];
      ck_assert_int_eq(kg_explain(KG_OP_DUALGEMM_FP4, &p.a, &e, buf, sizeof buf), KG_SUCCESS);
      ck_assert_msg(!strstr(buf, "dequantize"), "explain mentions the path on the C backend");
      ck_assert_int_eq(kg_dualgemm_fp4(&p.a, &e), KG_SUCCESS);
      ck_assert_msg(memcmp(ref, p.a.d2, p.dsz * 2) == 0, "%s: a workspace changed D2", WCASES[c].what);
      tu_poison(p.a.d2, KG_BF16, (int64_t)p.dsz);
      e.variant = "dequantize + kg_dualgemm_c_blocked_bf16_swiglu_xxxx_d2_64x256x256_a1";
      ck_assert_int_eq(kg_dualgemm_fp4(&p.a, &e), KG_ERROR_NOT_SUPPORTED);
      sel = "x";
      ck_assert_int_eq(kg_dualgemm_fp4_select(&p.a, &e, &sel), KG_ERROR_NOT_SUPPORTED);
      ck_assert_ptr_null(sel);
      ws = 5;
      ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&p.a, &e, &ws), KG_ERROR_NOT_SUPPORTED);
      ck_assert_int_eq((int)ws, 0);
      ck_assert_int_eq(kg_explain(KG_OP_DUALGEMM_FP4, &p.a, &e, buf, sizeof buf), KG_ERROR_NOT_SUPPORTED);
      ck_assert_msg(strstr(buf, "rejected: the dequantize path is for the GPU backends"), "%.300s", buf);
      for (int64_t j = 0; j < (int64_t)p.dsz; j++) ck_assert(tu_is_poison(p.a.d2, KG_BF16, j));
      e.variant = plain;
      ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&p.a, &e, &ws), KG_SUCCESS);
      ck_assert_int_eq((int)ws, 0);
      free(ref);
      free_fprob(&p);
    }
  fvar v;
  ck_assert(parse_fvar(NAMES[0], &v));
  fprob p = make_fprob(&v, &WCASES[1], 97);
  kg_exec e = tu_exec_c();
  size_t ws = 5;
  ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(NULL, &e, &ws), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq((int)ws, 0);
  ws = 5;
  ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&p.a, NULL, &ws), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq((int)ws, 0);
  e.workspace_size = 64;
  ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&p.a, &e, &ws), KG_ERROR_INVALID_ARGUMENT);
  e = tu_exec_c();
  kg_dualgemm_fp4_args a = p.a; a.mode = KG_MODE_SPLITK_SERIAL; a.split_k_slices = 2;
  ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&a, &e, &ws), KG_ERROR_INVALID_PROBLEM);   /* batched + split-K */
  a = p.a; a.batch_stride_d2 = 1;   /* output batches overlap */
  ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&a, &e, &ws), KG_ERROR_INVALID_PROBLEM);
  a = p.a; a.sf_b0_bytes -= 1;
  ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&a, &e, &ws), KG_ERROR_INVALID_PROBLEM);
  ck_assert_int_eq((int)ws, 0);
  if (!kg_backend_available(KG_BACKEND_HIP)) {
    kg_exec g = { KG_BACKEND_HIP, 0, 0, 0, 0, 0 };
    ws = 5;
    ck_assert_int_eq(kg_dualgemm_fp4_workspace_size(&p.a, &g, &ws), KG_ERROR_BACKEND_UNAVAILABLE);
    ck_assert_int_eq((int)ws, 0);
  }
  free_fprob(&p);
}
END_TEST

/* ---- amax -------------------------------------------------------------------------------------- */
START_TEST(test_amax) {
  const kg_dtype TYPES[] = { KG_F32, KG_F16, KG_BF16 };
  for (int ti = 0; ti < 3; ti++) {
    const kg_dtype t = TYPES[ti];
    tu_rng rng;
    tu_rng_seed(&rng, 300 + (uint64_t)ti);
    const int64_t batch = 3, rows = 37, cols = 45, ldx = 50, bs = rows * ldx + 7;
    void *X = tu_alloc((size_t)(batch * bs) * 4);
    tu_poison(X, t, batch * bs);   /* gaps: NaN, which amax must never see (they are outside) */
    double want[3] = { 0, 0, 0 };
    for (int64_t g = 0; g < batch; g++)
      for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) {
          double x = tu_set(X, t, g * bs + r * ldx + c, (tu_rng_uniform(&rng) * 2.0 - 1.0) * (double)(g + 1) * 3.0);
          if (fabs(x) > want[g]) want[g] = fabs(x);
        }
    /* group 1: one NaN element (ignored), one negative maximum */
    tu_set(X, t, 1 * bs + 5 * ldx + 6, NAN);
    want[1] = tu_set(X, t, 1 * bs + 9 * ldx + 44, -100.0) * -1.0;
    float out[4] = { -1, -1, -1, -7 };
    kg_amax_args a = { t, batch, rows, cols, X, ldx, bs, out };
    kg_exec e = tu_exec_c();
    const char *name = NULL;
    ck_assert_int_eq(kg_fp4_select(KG_OP_AMAX, &a, &e, &name), KG_SUCCESS);
    char expect_name[32];
    snprintf(expect_name, sizeof expect_name, "kg_amax_c_%s", tu_dtype_name(t));
    ck_assert_str_eq(name, expect_name);
    ck_assert_int_eq(kg_amax(&a, &e), KG_SUCCESS);
    for (int g = 0; g < 3; g++) ck_assert_msg(out[g] == (float)want[g], "%s group %d: %g vs %g", name, g, out[g], want[g]);
    ck_assert(out[3] == -7.0f);
    /* the global scale the amax feeds */
    ck_assert(kg_nvfp4_global_scale(out[1]) == 2688.0f / 100.0f);
    /* all NaN gives 0 */
    tu_poison(X, t, batch * bs);
    a.batch = 1;
    ck_assert_int_eq(kg_amax(&a, &e), KG_SUCCESS);
    ck_assert(out[0] == 0.0f);
    /* statuses */
    kg_amax_args b = a; b.ldx = cols - 1; ck_assert_int_eq(kg_amax(&b, &e), KG_ERROR_INVALID_ARGUMENT);
    b = a; b.out = NULL; ck_assert_int_eq(kg_amax(&b, &e), KG_ERROR_INVALID_ARGUMENT);
    b = a; b.rows = 0; ck_assert_int_eq(kg_amax(&b, &e), KG_ERROR_INVALID_ARGUMENT);
    b = a; b.batch = 2; b.batch_stride_x = -1; ck_assert_int_eq(kg_amax(&b, &e), KG_ERROR_INVALID_ARGUMENT);
    b = a; b.batch = 70000; ck_assert_int_eq(kg_amax(&b, &e), KG_ERROR_INVALID_PROBLEM);
    b = a; b.dtype = (kg_dtype)7; ck_assert_int_eq(kg_amax(&b, &e), KG_ERROR_INVALID_ARGUMENT);
    /* x aligned to its elements, out to a float */
    b = a; b.x = (const char *)X + 2;   /* one 16-bit element in (the buffer has f32 room) */
    ck_assert_int_eq(kg_amax(&b, &e), t == KG_F32 ? KG_ERROR_MISALIGNED_OPERAND : KG_SUCCESS);
    b = a; b.x = (const char *)X + 1; ck_assert_int_eq(kg_amax(&b, &e), KG_ERROR_MISALIGNED_OPERAND);
    b = a; b.out = (float *)((char *)out + 2); ck_assert_int_eq(kg_amax(&b, &e), KG_ERROR_MISALIGNED_OPERAND);
    char buf[4096];
    ck_assert_int_eq(kg_explain(KG_OP_AMAX, &a, &e, buf, sizeof buf), KG_SUCCESS);
    ck_assert_msg(strstr(buf, ": chosen (specs/amax.lua:"), "%s", buf);
    tu_free(X);
  }
}
END_TEST

Suite *dualgemm_fp4_suite(void) {
  Suite *s = suite_create("DualGemmFp4Test");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_every_c_variant);
  tcase_add_test(tc, test_exact_mul);
  tcase_add_test(tc, test_validation_statuses);
  tcase_add_test(tc, test_path_splitk_broadcast);
  tcase_add_test(tc, test_dispatch_and_explain);
  tcase_add_test(tc, test_workspace_contract);
  tcase_add_test(tc, test_amax);
  suite_add_tcase(s, tc);
  return s;
}
