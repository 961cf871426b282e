/*
** check_gemm.c -- GemmTest: every C-backend GEMM variant, forced by name,
** against a double-precision reference written here.
**
** For each case (a loop test) and each variant whose name contains "_c_" and
** whose dtype and fixed layouts (letters r/c/x after the dtype) fit, the case
** runs once per allowed layout combination of A, B and C/D, then once more
** through plain dispatch. Every run:
**   - poisons every buffer with a NaN pattern first; A, B and C get values
**     only in their logical elements, so reading padding yields NaN;
**   - puts 64 poisoned guard elements before and after every buffer and pads
**     lds and batch strides, so stray writes are caught;
**   - checks every element of D (NaN never passes: !(err <= tol)), that every
**     other element of D's buffer is still poison, that A, B, C and their
**     padding are unchanged, and for serial split-K that a second run is
**     bit-identical.
** Integer inputs in [-2, 2] are compared exactly (the f32 accumulation is
** exact, so the result rounded once to the output type is the only answer).
** Random inputs use a bound scaled by K, the dtype and sum |a||b|.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"

enum { GUARD = 64 };

#define DT_F32 (1u << KG_F32)
#define DT_F16 (1u << KG_F16)
#define DT_BF16 (1u << KG_BF16)
#define DT_ALL (DT_F32 | DT_F16 | DT_BF16)

/* layout combination bit: la*4 + lb*2 + lcd with 0 row, 1 column */
#define LAY(a, b, cd) (1u << ((a) * 4 + (b) * 2 + (cd)))
#define RRR LAY(0, 0, 0)
#define CCC LAY(1, 1, 1)
#define RCR LAY(0, 1, 0)
#define CRC LAY(1, 0, 1)
#define LAY_ALL 0xffu

typedef enum { CN_NONE, CN_FULL, CN_BIAS, CN_IGNORED } c_mode;
/* CN_NONE: c NULL, beta 0. CN_FULL: an m x n C per batch. CN_BIAS: ldc 0 (row-
** major: one row of n; column-major: one column of m). CN_IGNORED: C given but
** all NaN with beta 0: it must not be read. */

#define BC_A 1u
#define BC_B 2u
#define BC_C 4u

typedef struct gcase {
  const char *name;
  int64_t m, n, k;
  kg_mode mode;
  int64_t batch, slices;
  unsigned dtypes, layouts;
  int ints;           /* integer inputs in [-2, 2], exact comparison */
  float alpha, beta;
  c_mode cmode;
  int pad;            /* extra elements on every ld */
  unsigned bcast;     /* batch stride 0 for these operands */
  int gap;            /* extra elements between batches */
} gcase;

#define G1(nm, m, n, k, dt, lay, ints, al, be, cm, pad) \
  { nm, m, n, k, KG_MODE_GEMM, 1, 1, dt, lay, ints, al, be, cm, pad, 0, 0 }
#define GB(nm, m, n, k, b, dt, lay, ints, al, be, cm, pad, bc, gap) \
  { nm, m, n, k, KG_MODE_BATCHED, b, 1, dt, lay, ints, al, be, cm, pad, bc, gap }
#define GS(nm, m, n, k, s, dt, lay, ints, al, be, cm, pad) \
  { nm, m, n, k, KG_MODE_SPLITK_SERIAL, 1, s, dt, lay, ints, al, be, cm, pad, 0, 0 }

static const gcase cases[] = {
  /* odd sizes, all 8 layout combinations, every dtype, exact and random */
  G1("1x1x1 int", 1, 1, 1, DT_ALL, LAY_ALL, 1, 1.0f, 0.0f, CN_NONE, 0),
  G1("1x1x1 rand", 1, 1, 1, DT_ALL, LAY_ALL, 0, 1.0f, 1.0f, CN_FULL, 2),
  G1("7x5x3 int alpha2 beta-1", 7, 5, 3, DT_ALL, LAY_ALL, 1, 2.0f, -1.0f, CN_FULL, 3),
  G1("7x5x3 rand", 7, 5, 3, DT_ALL, LAY_ALL, 0, -0.5f, 0.25f, CN_FULL, 0),
  G1("33x65x17 int", 33, 65, 17, DT_ALL, LAY_ALL, 1, 1.0f, 1.0f, CN_FULL, 5),
  G1("33x65x17 rand c=NULL", 33, 65, 17, DT_ALL, LAY_ALL, 0, 1.5f, 0.0f, CN_NONE, 1),
  G1("100x31x257 int beta0 C unread", 100, 31, 257, DT_ALL, LAY_ALL, 1, -1.0f, 0.0f, CN_IGNORED, 0),
  G1("100x31x257 rand", 100, 31, 257, DT_ALL, LAY_ALL, 0, 1.0f, -1.0f, CN_FULL, 2),
  G1("257x129x300 int bias", 257, 129, 300, DT_ALL, LAY_ALL, 1, 1.0f, 2.0f, CN_BIAS, 0),
  G1("257x129x300 rand", 257, 129, 300, DT_ALL, LAY_ALL, 0, 0.75f, 0.5f, CN_FULL, 0),
  /* block edges of the 64x256x256 C tiles: exactly one tile, one past */
  G1("64x256x256 int", 64, 256, 256, DT_ALL, RRR | CCC | RCR, 1, 1.0f, 1.0f, CN_FULL, 0),
  G1("65x257x257 rand", 65, 257, 257, DT_ALL, RRR | CCC | CRC, 0, 1.0f, 1.0f, CN_FULL, 1),
  G1("63x255x513 int bias", 63, 255, 513, DT_ALL, RRR | LAY(0, 1, 1), 1, 1.0f, -1.0f, CN_BIAS, 0),
  /* alpha 0: D = beta C */
  G1("20x30x40 alpha0", 20, 30, 40, DT_ALL, RRR | CCC, 1, 0.0f, 1.0f, CN_FULL, 0),
  /* bigger f32 */
  G1("512x384x1024 f32 rand", 512, 384, 1024, DT_F32, RRR | CCC | RCR, 0, 1.0f, 0.5f, CN_FULL, 0),
  G1("512x384x1024 f32 int", 512, 384, 1024, DT_F32, RRR, 1, 1.0f, 0.0f, CN_NONE, 0),
  /* "4096-class" (4096x4096x8192 scaled to 1024^3 for CPU time) */
  G1("1024x1024x1024 f32 rand", 1024, 1024, 1024, DT_F32, RRR, 0, 1.0f, 1.0f, CN_FULL, 0),
  /* batched */
  GB("7x9x11 x37 int", 7, 9, 11, 37, DT_ALL, LAY_ALL, 1, 1.0f, 1.0f, CN_FULL, 1, 0, 5),
  GB("7x9x11 x37 rand bcast A", 7, 9, 11, 37, DT_ALL, LAY_ALL, 0, 1.0f, 0.0f, CN_NONE, 0, BC_A, 0),
  GB("7x9x11 x37 int bcast B, bias", 7, 9, 11, 37, DT_ALL, LAY_ALL, 1, 2.0f, 1.0f, CN_BIAS, 0, BC_B, 3),
  GB("161x128x256 x5 rand", 161, 128, 256, 5, DT_ALL, RRR | RCR | CCC, 0, 1.0f, -0.5f, CN_FULL, 0, 0, 0),
  GB("161x128x256 x5 int bcast B+C", 161, 128, 256, 5, DT_ALL, RRR | CRC, 1, 1.0f, 1.0f, CN_FULL, 4, BC_B | BC_C, 8),
  GB("321x256x512 x5 f32 rand", 321, 256, 512, 5, DT_F32, RRR, 0, 1.0f, 1.0f, CN_FULL, 0, 0, 0),
  GB("33x17x65 x1", 33, 17, 65, 1, DT_ALL, RRR | CCC, 1, 1.0f, 1.0f, CN_FULL, 0, 0, 0),
  /* the largest batch count, end to end (never wrapped) */
  GB("2x3x2 x65535", 2, 3, 2, KG_MAX_BATCH, DT_F16, RRR, 1, 1.0f, 1.0f, CN_FULL, 0, 0, 1),
  /* serial split-K */
  GS("100x31x257 int s1", 100, 31, 257, 1, DT_ALL, RRR | CCC | RCR | CRC, 1, 1.0f, 1.0f, CN_FULL, 0),
  GS("100x31x257 int s2", 100, 31, 257, 2, DT_ALL, RRR | CCC | RCR | CRC, 1, 1.0f, 1.0f, CN_FULL, 0),
  GS("100x31x257 int s3 beta-2", 100, 31, 257, 3, DT_ALL, RRR | CCC | RCR | CRC, 1, 1.0f, -2.0f, CN_FULL, 1),
  GS("100x31x257 int s7 bias", 100, 31, 257, 7, DT_ALL, RRR | CCC | RCR | CRC, 1, 2.0f, 1.0f, CN_BIAS, 0),
  GS("33x65x17 rand s7", 33, 65, 17, 7, DT_ALL, LAY_ALL, 0, 1.0f, 0.5f, CN_FULL, 2),
  GS("70x300x600 rand s3", 70, 300, 600, 3, DT_ALL, RRR | CCC, 0, -1.0f, 1.0f, CN_FULL, 0),
  GS("5x6x7 int s7 c=NULL", 5, 6, 7, 7, DT_ALL, LAY_ALL, 1, 1.0f, 0.0f, CN_NONE, 0),
  GS("9x9x10 int s4 uneven", 9, 9, 10, 4, DT_ALL, LAY_ALL, 1, 1.0f, 1.0f, CN_FULL, 0),
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- one run ------------------------------------------------------------------------------ */

static void *elem(void *buf, kg_dtype t, int64_t i) { return (char *)buf + (size_t)i * kg_dtype_size(t); }

typedef struct operand {
  int64_t ld, ext;             /* leading dimension, elements of one batch */
  int64_t bs;                  /* batch stride passed to kg_gemm */
  int64_t nb, step;            /* batches stored and their distance in memory */
  int64_t total;               /* elements of all batches, without guards */
  void *base;                  /* allocation: GUARD + total + GUARD elements */
  void *p;                     /* base + GUARD */
  void *copy;
  size_t bytes;
} operand;

/* bs: the stride passed; nb: batches actually stored (1 for broadcast or
** non-batched modes). */
static void op_alloc(operand *o, kg_dtype t, int64_t bs, int64_t nb) {
  o->bs = bs;
  o->nb = nb;
  o->step = nb > 1 ? bs : 0;
  o->total = o->step * (nb - 1) + o->ext;
  o->bytes = (size_t)(o->total + 2 * GUARD) * kg_dtype_size(t);
  o->base = tu_alloc(o->bytes);
  tu_poison(o->base, t, o->total + 2 * GUARD);
  o->p = elem(o->base, t, GUARD);
  o->copy = NULL;
}

static void op_snapshot(operand *o) {
  o->copy = tu_alloc(o->bytes);
  memcpy(o->copy, o->base, o->bytes);
}

static void op_free(operand *o) {
  tu_free(o->base);
  tu_free(o->copy);
  o->base = o->copy = NULL;
}

static double rand_value(tu_rng *r, int ints) {
  return ints ? (double)tu_rng_int(r, -2, 2) : tu_rng_normalish(r);
}

static void fill(operand *o, kg_dtype t, kg_layout l, int64_t rows, int64_t cols, int ints, tu_rng *r) {
  int64_t rs, cs;
  tu_strides(l, o->ld, &rs, &cs);
  for (int64_t z = 0; z < o->nb; z++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) tu_set(o->p, t, z * o->step + i * rs + j * cs, rand_value(r, ints));
}

static const char *lname(kg_layout l) { return l == KG_ROW ? "row" : "col"; }

/* Runs case tc with the given variant (NULL: dispatch) and layouts. Returns 1
** when it ran, 0 when the forced variant does not take the case's mode. */
static int run_one(const gcase *tc, const char *variant, int align, kg_dtype t, kg_layout la,
                   kg_layout lb, kg_layout lcd, uint64_t seed) {
  const int64_t m = tc->m, n = tc->n, k = tc->k;
  const int64_t batches = tc->mode == KG_MODE_BATCHED ? tc->batch : 1;
  const int batched = tc->mode == KG_MODE_BATCHED;
  const int64_t al = align;
  char what[512];
  snprintf(what, sizeof what, "case '%s' variant %s dtype %s layouts A %s B %s CD %s", tc->name,
           variant ? variant : "(dispatch)", tu_dtype_name(t), lname(la), lname(lb), lname(lcd));

  operand A, B, C, D;
  memset(&C, 0, sizeof C);
  A.ld = tu_round_up(tu_min_ld(la, m, k) + tc->pad, al);
  B.ld = tu_round_up(tu_min_ld(lb, k, n) + tc->pad, al);
  D.ld = tu_round_up(tu_min_ld(lcd, m, n) + tc->pad, al);
  A.ext = tu_extent(la, m, k, A.ld);
  B.ext = tu_extent(lb, k, n, B.ld);
  D.ext = tu_extent(lcd, m, n, D.ld);
  /* non-batched modes ignore batch strides: pass odd junk to show it */
  const int64_t junk = 3;
  if (batched) {
    op_alloc(&A, t, (tc->bcast & BC_A) ? 0 : tu_round_up(A.ext + tc->gap, al), (tc->bcast & BC_A) ? 1 : batches);
    op_alloc(&B, t, (tc->bcast & BC_B) ? 0 : tu_round_up(B.ext + tc->gap, al), (tc->bcast & BC_B) ? 1 : batches);
    op_alloc(&D, t, tu_round_up(D.ext + tc->gap, al), batches);
  } else {
    op_alloc(&A, t, junk, 1);
    op_alloc(&B, t, junk, 1);
    op_alloc(&D, t, junk, 1);
  }
  const int has_c = tc->cmode != CN_NONE;
  if (has_c) {
    if (tc->cmode == CN_BIAS) {
      C.ld = 0;
      C.ext = lcd == KG_ROW ? n : m;
    } else {
      C.ld = tu_round_up(tu_min_ld(lcd, m, n) + tc->pad + 4, al);  /* differs from ldd */
      C.ext = tu_extent(lcd, m, n, C.ld);
    }
    if (batched)
      op_alloc(&C, t, (tc->bcast & BC_C) ? 0 : tu_round_up(C.ext + tc->gap + 1, al), (tc->bcast & BC_C) ? 1 : batches);
    else
      op_alloc(&C, t, junk, 1);
  }

  tu_rng rng;
  tu_rng_seed(&rng, seed);
  fill(&A, t, la, m, k, tc->ints, &rng);
  fill(&B, t, lb, k, n, tc->ints, &rng);
  if (tc->cmode == CN_FULL) {
    fill(&C, t, lcd, m, n, tc->ints, &rng);
  } else if (tc->cmode == CN_BIAS) {
    for (int64_t z = 0; z < C.nb; z++)
      for (int64_t i = 0; i < C.ext; i++) tu_set(C.p, t, z * C.step + i, rand_value(&rng, tc->ints));
  }
  op_snapshot(&A);
  op_snapshot(&B);
  if (has_c) op_snapshot(&C);

  kg_gemm_args g;
  memset(&g, 0, sizeof g);
  g.mode = tc->mode;
  g.m = m; g.n = n; g.k = k;
  g.batch_count = batches;
  g.split_k_slices = tc->slices;
  g.type_ab = g.type_cd = t;
  g.layout_a = la; g.layout_b = lb; g.layout_cd = lcd;
  g.a = A.p; g.lda = A.ld; g.batch_stride_a = A.bs;
  g.b = B.p; g.ldb = B.ld; g.batch_stride_b = B.bs;
  g.c = has_c ? C.p : NULL; g.ldc = has_c ? C.ld : 0; g.batch_stride_c = has_c ? C.bs : 0;
  g.d = D.p; g.ldd = D.ld; g.batch_stride_d = D.bs;
  g.alpha = tc->alpha;
  g.beta = tc->beta;

  kg_exec e = tu_exec_c();
  e.variant = variant;
  static char why[16384];
  size_t need = 0;
  kg_status st = kg_gemm_workspace_size(&g, &e, &need);
  if (st != KG_SUCCESS) {
    kg_explain(KG_OP_GEMM, &g, &e, why, sizeof why);
    op_free(&A); op_free(&B); op_free(&C); op_free(&D);
    if (variant && st == KG_ERROR_NOT_SUPPORTED && strstr(why, "mode not supported")) return 0;
    ck_abort_msg("%s: workspace query failed: %s\n%s", what, kg_status_string(st), why);
  }
  unsigned char *ws = NULL;
  if (need > 0) {
    ws = (unsigned char *)tu_alloc(need);
    memset(ws, 0xff, need);  /* NaN in f32: the kernel must initialize what it reads */
    e.workspace = ws;
    e.workspace_size = need;
  }
  st = kg_gemm(&g, &e);
  if (st != KG_SUCCESS) {
    kg_explain(KG_OP_GEMM, &g, &e, why, sizeof why);
    ck_abort_msg("%s: kg_gemm returned '%s' (workspace %zu bytes)\n%s", what, kg_status_string(st), need, why);
  }

  /* ---- reference and element check ---- */
  const double ut = tu_unit_roundoff(t), u32 = ldexp(1.0, -24);
  const double floor_abs = t == KG_F16 ? ldexp(1.0, -24) : 1e-37;
  double *acc = (double *)malloc(sizeof(double) * (size_t)(m * n));
  double *sabs = tc->ints ? NULL : (double *)malloc(sizeof(double) * (size_t)(m * n));
  unsigned char *written = (unsigned char *)calloc((size_t)D.total, 1);
  ck_assert(acc && written && (tc->ints || sabs));
  int64_t a_rs, a_cs, b_rs, b_cs, c_rs = 0, c_cs = 0, d_rs, d_cs;
  tu_strides(la, A.ld, &a_rs, &a_cs);
  tu_strides(lb, B.ld, &b_rs, &b_cs);
  if (has_c) tu_strides(lcd, C.ld, &c_rs, &c_cs);
  tu_strides(lcd, D.ld, &d_rs, &d_cs);
  int64_t bad = 0;
  char first[512] = "";
  for (int64_t z = 0; z < batches; z++) {
    const void *Az = elem(A.p, t, z * A.step);
    const void *Bz = elem(B.p, t, z * B.step);
    const void *Cz = has_c ? elem(C.p, t, z * C.step) : NULL;
    const int64_t dz = z * D.step;
    tu_ref_gemm(m, n, k, Az, t, a_rs, a_cs, Bz, b_rs, b_cs, acc, sabs);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        const int64_t di = dz + i * d_rs + j * d_cs;
        written[di] = 1;
        double cv = (tc->cmode == CN_FULL || tc->cmode == CN_BIAS) ? tu_get(Cz, t, i * c_rs + j * c_cs) : 0.0;
        double ref = (double)tc->alpha * acc[i * n + j] + (tc->beta != 0.0f ? (double)tc->beta * cv : 0.0);
        double got = tu_get(D.p, t, di);
        double err, tol;
        int ok;
        if (tc->ints) {  /* exact: the one correctly rounded answer (inf == inf passes, NaN never) */
          ref = tu_round(t, ref);
          err = fabs(got - ref);
          tol = 0.0;
          ok = got == ref;
        } else {
          err = fabs(got - ref);
          tol = 2.0 * (fabs((double)tc->alpha) * sabs[i * n + j] * (double)(k + 2) * u32 +
                       fabs((double)tc->beta * cv) * 2.0 * u32 + fabs(ref) * ut) + floor_abs;
          ok = err <= tol;
        }
        if (!ok) {
          if (bad++ == 0)
            snprintf(first, sizeof first, "batch %lld D(%lld,%lld) = %.9g, expected %.9g (err %.3g, tol %.3g)",
                     (long long)z, (long long)i, (long long)j, got, ref, err, tol);
        }
      }
  }
  ck_assert_msg(bad == 0, "%s: %lld of %lld elements of D wrong; first: %s", what, (long long)bad,
                (long long)(m * n * batches), first);

  /* everything else in D's allocation is still poison (guards, ld padding, batch gaps) */
  int64_t stray = 0, first_stray = 0;
  for (int64_t i = -GUARD; i < D.total + GUARD; i++) {
    if (i >= 0 && i < D.total && written[i]) continue;
    if (!tu_is_poison(D.p, t, i) && stray++ == 0) first_stray = i;
  }
  ck_assert_msg(stray == 0, "%s: %lld elements of D outside the output were written (first at offset %lld)",
                what, (long long)stray, (long long)first_stray);
  ck_assert_msg(memcmp(A.base, A.copy, A.bytes) == 0, "%s: A was modified", what);
  ck_assert_msg(memcmp(B.base, B.copy, B.bytes) == 0, "%s: B was modified", what);
  if (has_c) ck_assert_msg(memcmp(C.base, C.copy, C.bytes) == 0, "%s: C was modified", what);

  /* serial split-K is deterministic: a second run gives the same bits */
  if (tc->mode == KG_MODE_SPLITK_SERIAL) {
    void *first_d = tu_alloc(D.bytes);
    memcpy(first_d, D.base, D.bytes);
    tu_poison(D.base, t, D.total + 2 * GUARD);
    if (ws) memset(ws, 0xff, need);
    ck_assert_int_eq(kg_gemm(&g, &e), KG_SUCCESS);
    ck_assert_msg(memcmp(first_d, D.base, D.bytes) == 0, "%s: second split-K run differs", what);
    tu_free(first_d);
  }

  free(acc);
  free(sabs);
  free(written);
  tu_free(ws);
  op_free(&A); op_free(&B); op_free(&C); op_free(&D);
  return 1;
}

/* ---- the loop over variants --------------------------------------------------------------- */

START_TEST(test_gemm_case) {
  const gcase *tc = &cases[_i];
  clock_t t0 = clock();
  int runs[3] = { 0, 0, 0 };
  for (int vi = 0; vi < kg_variant_count(); vi++) {
    const char *name = kg_variant_name(vi);
    if (strncmp(name, "kg_gemm_", 8) != 0 || !strstr(name, "_c_")) continue;
    tu_variant_info info;
    ck_assert_msg(tu_parse_variant(name, &info), "cannot parse C variant name %s", name);
    if (info.type_ab != info.type_cd) continue;  /* mixed types: no case here */
    kg_dtype t = (kg_dtype)info.type_ab;
    if (!(tc->dtypes & (1u << t))) continue;
    for (int combo = 0; combo < 8; combo++) {
      if (!(tc->layouts & (1u << combo))) continue;
      kg_layout la = (combo >> 2) & 1 ? KG_COL : KG_ROW;
      kg_layout lb = (combo >> 1) & 1 ? KG_COL : KG_ROW;
      kg_layout lcd = combo & 1 ? KG_COL : KG_ROW;
      if (!tu_layout_letter_accepts(info.layouts[0], la) || !tu_layout_letter_accepts(info.layouts[1], lb) ||
          !tu_layout_letter_accepts(info.layouts[2], lcd))
        continue;
      uint64_t seed = 1000003ull * (uint64_t)(_i + 1) + 101ull * (uint64_t)combo + 7ull * (uint64_t)t;
      runs[t] += run_one(tc, name, info.align, t, la, lb, lcd, seed);
    }
  }
  /* plain dispatch, first allowed layout combination, per dtype (small cases:
  ** the big ones already ran every variant dispatch can pick) */
  const int64_t work = tc->m * tc->n * tc->k * (tc->mode == KG_MODE_BATCHED ? tc->batch : 1);
  for (int t = 0; t < 3; t++) {
    if (!(tc->dtypes & (1u << t))) continue;
    ck_assert_msg(runs[t] > 0, "case '%s': no C variant ran for %s", tc->name, tu_dtype_name((kg_dtype)t));
    if (work > ((int64_t)1 << 26)) continue;
    int combo = 0;
    while (!(tc->layouts & (1u << combo))) combo++;
    run_one(tc, NULL, 1, (kg_dtype)t, (combo >> 2) & 1 ? KG_COL : KG_ROW, (combo >> 1) & 1 ? KG_COL : KG_ROW,
            combo & 1 ? KG_COL : KG_ROW, 424242ull + (uint64_t)_i);
  }
  if (getenv("KG_TEST_TIMING")) fprintf(stderr, "%6.2fs  %s\n", (double)(clock() - t0) / CLOCKS_PER_SEC, tc->name);
}
END_TEST

/* In-place: D may be C (same pointer, same ld). */
START_TEST(test_gemm_in_place) {
  const int64_t m = 37, n = 41, k = 29;
  for (int t = 0; t < 3; t++) {
    kg_dtype dt = (kg_dtype)t;
    void *a = tu_alloc((size_t)(m * k) * 4), *b = tu_alloc((size_t)(k * n) * 4), *cd = tu_alloc((size_t)(m * n) * 4);
    tu_rng r;
    tu_rng_seed(&r, 77 + (uint64_t)t);
    for (int64_t i = 0; i < m * k; i++) tu_set(a, dt, i, tu_rng_int(&r, -2, 2));
    for (int64_t i = 0; i < k * n; i++) tu_set(b, dt, i, tu_rng_int(&r, -2, 2));
    for (int64_t i = 0; i < m * n; i++) tu_set(cd, dt, i, tu_rng_int(&r, -2, 2));
    double *c0 = (double *)malloc(sizeof(double) * (size_t)(m * n)), *acc = (double *)malloc(sizeof(double) * (size_t)(m * n));
    for (int64_t i = 0; i < m * n; i++) c0[i] = tu_get(cd, dt, i);
    tu_ref_gemm(m, n, k, a, dt, k, 1, b, n, 1, acc, NULL);
    kg_gemm_args g = tu_args(m, n, k, a, b, cd, cd);
    g.type_ab = g.type_cd = dt;
    g.beta = -1.0f;
    kg_exec e = tu_exec_c();
    ck_assert_int_eq(kg_gemm(&g, &e), KG_SUCCESS);
    for (int64_t i = 0; i < m * n; i++) {
      double want = tu_round(dt, acc[i] - c0[i]);
      ck_assert_msg(tu_get(cd, dt, i) == want, "%s in place: element %lld = %g, expected %g", tu_dtype_name(dt),
                    (long long)i, tu_get(cd, dt, i), want);
    }
    free(c0); free(acc);
    tu_free(a); tu_free(b); tu_free(cd);
  }
}
END_TEST

/* The order of the f32 sums on the C backend, at every m (its direct kernel up to m = 8, the
** panels from 9), B row- and column-major, one and two K slices of serial split-K: each output
** adds its products in k order, one f32 add each. A's rows are 2^14 at k = 0 and 1 after, B is
** 2^10 at k = 0 and 1 after: 2^24 + 1 + 1 + ... stays 2^24 in f32 (each 1 rounds away, to
** even), so with C = 2^24 and beta = -1 the f32 D is 0 exactly; any other order (pairs first,
** partial sums) leaves up to k - 1 there. Split-K adds the slices' sums in slice order: with two
** slices of 150 the second's 150 ones sum from 0 and survive, so D = 150. */
/* Serial split-K over `slices` slices for g, run on e: the mode, and a workspace of the size
** query's bytes in e (returned: the caller tu_frees it). */
static void *use_splitk(kg_gemm_args *g, kg_exec *e, int slices) {
  g->mode = KG_MODE_SPLITK_SERIAL;
  g->split_k_slices = slices;
  size_t ws = 0;
  ck_assert_int_eq(kg_gemm_workspace_size(g, e, &ws), KG_SUCCESS);
  void *work = tu_alloc(ws);
  e->workspace = work;
  e->workspace_size = ws;
  return work;
}

START_TEST(test_gemm_sum_order) {
  const int64_t n = 21, k = 300;
  for (int lb = 0; lb < 2; lb++)
    for (int slices = 1; slices <= 2; slices++)
      for (int64_t m = 1; m <= 9; m++) {
        float *a = tu_alloc(sizeof(float) * (size_t)(m * k)), *b = tu_alloc(sizeof(float) * (size_t)(k * n));
        float *c = tu_alloc(sizeof(float) * (size_t)(m * n)), *d = tu_alloc(sizeof(float) * (size_t)(m * n));
        for (int64_t i = 0; i < m; i++)
          for (int64_t kk = 0; kk < k; kk++) a[i * k + kk] = kk ? 1.0f : 16384.0f;
        for (int64_t kk = 0; kk < k; kk++)
          for (int64_t j = 0; j < n; j++) b[lb ? j * k + kk : kk * n + j] = kk ? 1.0f : 1024.0f;
        for (int64_t i = 0; i < m * n; i++) c[i] = 16777216.0f;
        kg_gemm_args g = tu_args(m, n, k, a, b, c, d);
        g.beta = -1.0f;
        if (lb) { g.layout_b = KG_COL; g.ldb = k; }
        kg_exec e = tu_exec_c();
        void *work = slices > 1 ? use_splitk(&g, &e, slices) : NULL;
        ck_assert_int_eq(kg_gemm(&g, &e), KG_SUCCESS);
        const float want = slices == 1 ? 0.0f : 150.0f;
        for (int64_t i = 0; i < m * n; i++)
          ck_assert_msg(d[i] == want, "B %s, %d slice(s), m = %lld: D[%lld] = %g, not %g", lb ? "col" : "row",
                        slices, (long long)m, (long long)i, d[i], want);
        tu_free(a); tu_free(b); tu_free(c); tu_free(d); tu_free(work);
      }
}
END_TEST

/* The C backend's threads (kg_internal.h): above 4e6 multiply-adds the output tiles are split
** over the threads, one thread per output and one order of the sums, so 1 and 3 threads give the
** same bits: the direct kernel (m = 5) and the panels (m = 70), B row- and column-major, one and
** three serial split-K slices. ("70x300x600 rand s3" above checks the threaded path against the
** reference.) */
START_TEST(test_gemm_threads_same_bits) {
  const int64_t n = 800, k = 1100;
  static const int64_t ms[] = { 5, 70 };
  tu_rng r;
  tu_rng_seed(&r, 77);
  for (int mi = 0; mi < 2; mi++)
    for (int lb = 0; lb < 2; lb++)
      for (int slices = 1; slices <= 3; slices += 2) {
        const int64_t m = ms[mi];
        float *a = tu_alloc(sizeof(float) * (size_t)(m * k)), *b = tu_alloc(sizeof(float) * (size_t)(k * n));
        float *c = tu_alloc(sizeof(float) * (size_t)(m * n)), *d = tu_alloc(sizeof(float) * (size_t)(m * n));
        float *d1 = tu_alloc(sizeof(float) * (size_t)(m * n));
        for (int64_t i = 0; i < m * k; i++) a[i] = (float)tu_rng_normalish(&r);
        for (int64_t i = 0; i < k * n; i++) b[i] = (float)tu_rng_normalish(&r);
        for (int64_t i = 0; i < m * n; i++) c[i] = (float)tu_rng_normalish(&r);
        kg_gemm_args g = tu_args(m, n, k, a, b, c, d);
        g.beta = 0.5f;
        if (lb) { g.layout_b = KG_COL; g.ldb = k; }
        kg_exec e = tu_exec_c();
        void *work = slices > 1 ? use_splitk(&g, &e, slices) : NULL;
        const int saved = tu_set_threads(1);
        ck_assert_int_eq(kg_gemm(&g, &e), KG_SUCCESS);
        memcpy(d1, d, sizeof(float) * (size_t)(m * n));
        tu_poison(d, KG_F32, m * n);
        tu_set_threads(3);
        ck_assert_int_eq(kg_gemm(&g, &e), KG_SUCCESS);
        tu_set_threads(saved);
        ck_assert_msg(memcmp(d1, d, sizeof(float) * (size_t)(m * n)) == 0, "m = %lld, B %s, %d slice(s): 3 threads differ from 1",
                      (long long)m, lb ? "col" : "row", slices);
        for (int64_t i = 0; i < m * n; i++) ck_assert_msg(!isnan(d[i]), "m = %lld: D[%lld] not written", (long long)m, (long long)i);
        tu_free(a); tu_free(b); tu_free(c); tu_free(d); tu_free(d1); tu_free(work);
      }
}
END_TEST

/* f16 output beyond 65504 rounds to infinity (65519 stays finite). */
START_TEST(test_gemm_f16_overflow) {
  /* 4x1 . 1x1: D = a * 400 */
  const float av[4] = { 200.0f, -200.0f, 255.0f, 1.0f };
  uint16_t a[4], b = kg_f32_to_f16_bits(400.0f), d[4];
  for (int i = 0; i < 4; i++) a[i] = kg_f32_to_f16_bits(av[i]);
  kg_gemm_args g = tu_args(4, 1, 1, a, &b, NULL, d);
  g.type_ab = g.type_cd = KG_F16;
  tu_poison(d, KG_F16, 4);
  kg_exec e = tu_exec_c();
  ck_assert_int_eq(kg_gemm(&g, &e), KG_SUCCESS);
  ck_assert_msg(d[0] == 0x7c00, "200 * 400 = 80000 in f16: 0x%04x, expected +inf 0x7c00", d[0]);
  ck_assert_msg(d[1] == 0xfc00, "-200 * 400 in f16: 0x%04x, expected -inf 0xfc00", d[1]);
  ck_assert_msg(d[2] == 0x7c00, "255 * 400 in f16: 0x%04x, expected +inf", d[2]);
  ck_assert_msg(d[3] == kg_f32_to_f16_bits(400.0f), "1 * 400 in f16: 0x%04x", d[3]);
  /* 65519 rounds down to 65504, not to infinity */
  uint16_t one = kg_f32_to_f16_bits(1.0f), big = kg_f32_to_f16_bits(65504.0f), c15 = kg_f32_to_f16_bits(15.0f), out = 0;
  kg_gemm_args h = tu_args(1, 1, 1, &one, &big, &c15, &out);
  h.type_ab = h.type_cd = KG_F16;
  ck_assert_int_eq(kg_gemm(&h, &e), KG_SUCCESS);
  ck_assert_msg(out == 0x7bff, "65504 + 15 in f16: 0x%04x, expected 0x7bff (65504)", out);
  c15 = kg_f32_to_f16_bits(16.0f);  /* 65520: the tie rounds to even, i.e. to infinity */
  ck_assert_int_eq(kg_gemm(&h, &e), KG_SUCCESS);
  ck_assert_msg(out == 0x7c00, "65504 + 16 in f16: 0x%04x, expected +inf", out);
}
END_TEST

/* ---- conversions through the public API ---------------------------------------------------- */

static float f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

START_TEST(test_f16_conversion) {
  const struct { float f; uint16_t h; } to[] = {
    { 0.0f, 0x0000 }, { -0.0f, 0x8000 }, { 1.0f, 0x3c00 }, { -2.0f, 0xc000 }, { 0.5f, 0x3800 },
    { 65504.0f, 0x7bff }, { 65519.0f, 0x7bff }, { 65520.0f, 0x7c00 }, { 1e6f, 0x7c00 }, { -1e6f, 0xfc00 },
    { 5.9604644775390625e-8f /* 2^-24 */, 0x0001 }, { 2.98023223876953125e-8f /* 2^-25: tie */, 0x0000 },
    { 8.94069671630859375e-8f /* 1.5 * 2^-24: tie to even */, 0x0002 }, { 6.103515625e-5f /* 2^-14 */, 0x0400 },
    { 1.00048828125f /* 1 + 2^-11: tie */, 0x3c00 }, { 1.00146484375f /* 1 + 3 * 2^-11 */, 0x3c02 },
    { 2048.0f, 0x6800 }, { 2049.0f, 0x6800 }, { 2051.0f, 0x6802 }, { (float)INFINITY, 0x7c00 },
    { -(float)INFINITY, 0xfc00 },
  };
  for (size_t i = 0; i < sizeof to / sizeof to[0]; i++)
    ck_assert_msg(kg_f32_to_f16_bits(to[i].f) == to[i].h, "f16(%.10g) = 0x%04x, expected 0x%04x", (double)to[i].f,
                  kg_f32_to_f16_bits(to[i].f), to[i].h);
  uint16_t nan = kg_f32_to_f16_bits((float)NAN);
  ck_assert_msg((nan & 0x7c00) == 0x7c00 && (nan & 0x03ff) != 0, "f16(NaN) = 0x%04x is not NaN", nan);
  ck_assert(isnan(kg_f16_bits_to_f32(0x7e00)));
  ck_assert(isnan(kg_f16_bits_to_f32(TU_POISON16)));
  ck_assert_float_eq(kg_f16_bits_to_f32(0x0001), 5.9604644775390625e-8f);
  ck_assert_float_eq(kg_f16_bits_to_f32(0x03ff), 1023.0f * 5.9604644775390625e-8f);
  ck_assert_float_eq(kg_f16_bits_to_f32(0x7bff), 65504.0f);
  ck_assert(signbit(kg_f16_bits_to_f32(0x8000)) && kg_f16_bits_to_f32(0x8000) == 0.0f);
  ck_assert(isinf(kg_f16_bits_to_f32(0xfc00)) && kg_f16_bits_to_f32(0xfc00) < 0);
  /* every non-NaN pattern survives the round trip */
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;
    ck_assert_msg(kg_f32_to_f16_bits(kg_f16_bits_to_f32((uint16_t)h)) == h, "f16 round trip of 0x%04x", h);
  }
}
END_TEST

START_TEST(test_bf16_conversion) {
  const struct { uint32_t f; uint16_t h; } to[] = {
    { 0x00000000u, 0x0000 }, { 0x80000000u, 0x8000 }, { 0x3f800000u, 0x3f80 }, { 0xc0000000u, 0xc000 },
    { 0x3f808000u, 0x3f80 } /* tie, even stays */, { 0x3f818000u, 0x3f82 } /* tie, odd rounds up */,
    { 0x3f808001u, 0x3f81 }, { 0x3f807fffu, 0x3f80 }, { 0x7f7fffffu, 0x7f80 } /* FLT_MAX rounds to inf */,
    { 0x7f800000u, 0x7f80 }, { 0xff800000u, 0xff80 }, { 0x00000001u, 0x0000 }, { 0x00018000u, 0x0002 },
  };
  for (size_t i = 0; i < sizeof to / sizeof to[0]; i++)
    ck_assert_msg(kg_f32_to_bf16_bits(f32_from_bits(to[i].f)) == to[i].h, "bf16(0x%08x) = 0x%04x, expected 0x%04x",
                  to[i].f, kg_f32_to_bf16_bits(f32_from_bits(to[i].f)), to[i].h);
  const uint32_t nans[] = { 0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x7fbadbadu };
  for (size_t i = 0; i < 4; i++) {
    uint16_t h = kg_f32_to_bf16_bits(f32_from_bits(nans[i]));
    ck_assert_msg((h & 0x7f80) == 0x7f80 && (h & 0x7f) != 0, "bf16(NaN 0x%08x) = 0x%04x is not NaN", nans[i], h);
  }
  ck_assert(isnan(kg_bf16_bits_to_f32(TU_POISON16)));
  ck_assert_float_eq(kg_bf16_bits_to_f32(0x3f80), 1.0f);
  ck_assert_float_eq(kg_bf16_bits_to_f32(0x4380), 256.0f);
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) continue;
    ck_assert_msg(kg_f32_to_bf16_bits(kg_bf16_bits_to_f32((uint16_t)h)) == h, "bf16 round trip of 0x%04x", h);
  }
}
END_TEST

/* Round-to-nearest-even to a format with p significant bits, smallest normal
** exponent emin (frexp convention: 2^emin / 2 is the smallest normal) and
** largest finite value max, computed in double (exact: the scaling is by
** powers of two and nearbyint rounds to even). Overflow gives infinity. */
static double ref_round(double x, int p, int emin, double max) {
  if (x == 0.0 || !isfinite(x)) return x;
  int e;
  frexp(x, &e);
  if (e < emin) e = emin;
  double scale = ldexp(1.0, e - p);
  double q = nearbyint(x / scale) * scale;
  if (fabs(q) > max) return copysign(INFINITY, x);
  return q;
}

static double ref_f16(float x) { return ref_round(x, 11, -13, 65504.0); }
static double ref_bf16(float x) { return ref_round(x, 8, -125, ldexp(255.0, 120)); }

static int same_value(double a, double b) {
  return (a == b && signbit(a) == signbit(b)) || (isnan(a) && isnan(b));
}

/* f32 -> f16/bf16 against a rounding written here: a stride through every
** f32 pattern, plus every midpoint between neighbouring 16-bit values and the
** f32 values one ulp either side of it. */
START_TEST(test_conversion_rounding) {
  int64_t bad16 = 0, bad_bf = 0;
  uint32_t first16 = 0, first_bf = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4093) {
    float x = f32_from_bits((uint32_t)u);
    if (isnan(x)) continue;
    if (!same_value(kg_f16_bits_to_f32(kg_f32_to_f16_bits(x)), ref_f16(x)) && bad16++ == 0) first16 = (uint32_t)u;
    if (!same_value(kg_bf16_bits_to_f32(kg_f32_to_bf16_bits(x)), ref_bf16(x)) && bad_bf++ == 0) first_bf = (uint32_t)u;
  }
  for (uint32_t h = 0; h < 0x10000; h++) {
    for (int fmt = 0; fmt < 2; fmt++) {
      double lo = fmt ? kg_bf16_bits_to_f32((uint16_t)h) : kg_f16_bits_to_f32((uint16_t)h);
      double hi = fmt ? kg_bf16_bits_to_f32((uint16_t)(h + 1)) : kg_f16_bits_to_f32((uint16_t)(h + 1));
      if (h == 0xffff || !isfinite(lo) || isnan(hi) || (h & 0x7fff) == 0x7fff) continue;
      if (signbit(lo) != signbit(hi)) continue;
      double mid = isinf(hi) ? lo + (lo - (fmt ? kg_bf16_bits_to_f32((uint16_t)(h - 1)) : kg_f16_bits_to_f32((uint16_t)(h - 1)))) / 2
                             : (lo + hi) / 2;
      float m = (float)mid;
      if ((double)m != mid) continue;  /* midpoint not representable in f32 (bf16 extremes) */
      const float probes[3] = { nextafterf(m, -INFINITY), m, nextafterf(m, INFINITY) };
      for (int i = 0; i < 3; i++) {
        float x = probes[i];
        uint32_t xb;
        memcpy(&xb, &x, 4);
        if (fmt == 0 && !same_value(kg_f16_bits_to_f32(kg_f32_to_f16_bits(x)), ref_f16(x)) && bad16++ == 0) first16 = xb;
        if (fmt == 1 && !same_value(kg_bf16_bits_to_f32(kg_f32_to_bf16_bits(x)), ref_bf16(x)) && bad_bf++ == 0) first_bf = xb;
      }
    }
  }
  float x16 = f32_from_bits(first16), xbf = f32_from_bits(first_bf);
  ck_assert_msg(bad16 == 0, "f32->f16: %lld wrong; first f32 0x%08x (%.9g) -> 0x%04x, expected %.9g", (long long)bad16,
                first16, (double)x16, kg_f32_to_f16_bits(x16), ref_f16(x16));
  ck_assert_msg(bad_bf == 0, "f32->bf16: %lld wrong; first f32 0x%08x (%.9g) -> 0x%04x, expected %.9g", (long long)bad_bf,
                first_bf, (double)xbf, kg_f32_to_bf16_bits(xbf), ref_bf16(xbf));
}
END_TEST

/* The test's own tolerance machinery must catch a wrong answer: a reference
** computed with one K term dropped differs from the true one beyond tol. */
START_TEST(test_reference_self_check) {
  const int64_t m = 3, n = 4, k = 5;
  float a[15], b[20];
  for (int i = 0; i < 15; i++) a[i] = (float)(i % 5 - 2);
  for (int i = 0; i < 20; i++) b[i] = (float)(i % 3 - 1);
  double acc[12], s[12];
  tu_ref_gemm(m, n, k, a, KG_F32, k, 1, b, n, 1, acc, s);
  /* hand-computed D(0,0) = sum_p a[p] * b[p*4] = (-2)(-1) + (-1)(0) + 0*(1) + 1*(-1) + 2*(0) = 1 */
  ck_assert_msg(acc[0] == 1.0, "reference D(0,0) = %g, expected 1", acc[0]);
  ck_assert_msg(s[0] == 3.0, "reference sum|a||b| (0,0) = %g, expected 3", s[0]);
  /* the same storage read through column-major strides: A^T is k x m... here
  ** B (k x n, row-major) read as column-major n x k with ld n is B^T */
  double t00[16];
  tu_ref_gemm(n, n, k, b, KG_F32, 1, n, b, n, 1, t00, NULL);  /* B^T B */
  double want = 0;
  for (int p = 0; p < 5; p++) want += (double)b[p * 4] * b[p * 4];
  ck_assert_msg(t00[0] == want, "(B^T B)(0,0) = %g, expected %g", t00[0], want);
}
END_TEST

Suite *gemm_suite(void) {
  Suite *s = suite_create("GemmTest");
  TCase *tc = tcase_create("variants");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_gemm_case, 0, NCASES);
  tcase_add_test(tc, test_gemm_in_place);
  tcase_add_test(tc, test_gemm_sum_order);
  tcase_add_test(tc, test_gemm_threads_same_bits);
  tcase_add_test(tc, test_gemm_f16_overflow);
  suite_add_tcase(s, tc);
  TCase *cv = tcase_create("conversions");
  tcase_add_test(cv, test_f16_conversion);
  tcase_add_test(cv, test_bf16_conversion);
  tcase_add_test(cv, test_conversion_rounding);
  tcase_add_test(cv, test_reference_self_check);
  suite_add_tcase(s, cv);
  return s;
}
