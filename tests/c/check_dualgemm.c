/*
** check_dualgemm.c -- DualGemm and DualGemmValidation: every C-backend
** DualGemm variant, forced by name, against a double-precision reference
** written here (independent of the GEMM suite's reference).
**
**   x0 = alpha0 (A.B0) + beta0 C0      x1 = alpha1 (A.B1) + beta1 C1
**   D0 = x0 and D1 = x1 rounded to the output type; D2 = op(D0, D1)
**   op: swiglu x sigmoid(x) y, geglu 0.5 x (1 + tanh(u)) y = x y / (1 + exp(-2u)), u = 0.7978845608 (x + 0.044715 x^3) (the second form, without cancellation for x << 0), mul x y
**
** Variants are found by name: kg_dualgemm_c_<kernel>_<dtype>_<op>_<LLLL>_<stores>_..., stores one of
** d2, d0d2, d1d2, d0d1d2. Per case and dtype the logical inputs and the two products are computed
** once (in double); each run stores them in the layouts of that run (A, B0, B1, C/D row or column
** major: 16 combinations), runs the variant and checks:
**   - every element of D2 and of D0 / D1 when stored, each against its own reference (D0 against
**     x0, D1 against x1, so a kernel writing D1's values into D0 fails); NaN never passes
**     (!(err <= tol));
**   - integer inputs in [-2, 2]: D0 and D1 bit-exact (f32 accumulation is exact, the kernel rounds
**     once); D2 bit-exact for mul, within a few ulps of the output type for swiglu / geglu (the f32
**     transcendental differs from the double one);
**   - random inputs: D0 / D1 within 2 (|alpha| sum|a||b| (k+2) u32 + 2 |beta c| u32 + |x| u_t);
**     D2 within the propagated error of its inputs plus the f32 evaluation error plus 2 ulps.
**     When D0 / D1 are stored (and correct) D2 is checked against op of the stored values, so
**     mul with both stored is bit-exact;
**   - output buffers are poisoned (NaN pattern) before every run, with 64 guard elements around
**     each buffer and padded lds / batch gaps: nothing outside the logical outputs is written;
**   - inputs (and their NaN padding) are unchanged; NaN in input padding would poison the result;
**   - serial split-K: the workspace comes from kg_dualgemm_workspace_size (poisoned with 0xff),
**     one byte less gives KG_ERROR_WORKSPACE_TOO_SMALL and writes nothing, and a second run is
**     bit-identical;
**   - plain dispatch (no forced name) selects the same variant.
** KG_TEST_TIMING=1 prints the time per case.
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

#define OP_SW (1u << KG_DUAL_SWIGLU)
#define OP_GE (1u << KG_DUAL_GEGLU)
#define OP_MUL (1u << KG_DUAL_MUL)
#define OP_ALL (OP_SW | OP_GE | OP_MUL)

/* store combination bit: store_d0 + 2 * store_d1 */
#define ST_ALL 0xfu

/* layout combination index: la*8 + lb0*4 + lb1*2 + lcd, 0 row, 1 column */
#define L4(a, b0, b1, cd) (1u << ((a) * 8 + (b0) * 4 + (b1) * 2 + (cd)))
#define LAY_ALL 0xffffu
#define RRRR L4(0, 0, 0, 0)
#define CCCC L4(1, 1, 1, 1)
#define RRCR L4(0, 0, 1, 0) /* the motivating case: row-major B0 weights, column-major B1 */
#define RCCR L4(0, 1, 1, 0)
#define CRCC L4(1, 0, 1, 1)

typedef enum { CN_NONE, CN_FULL, CN_BIAS, CN_IGNORED } c_mode;
/* CN_NONE: c NULL, beta 0. CN_FULL: an m x n C per batch. CN_BIAS: ld 0 (row-major: one row of n
** added to every row; column-major: one column of m). CN_IGNORED: C given but all NaN, beta 0:
** it must not be read. */

#define BC_A 1u  /* batch stride 0 */
#define BC_B0 2u
#define BC_B1 4u
#define BC_C 8u  /* C0 and C1 */

typedef struct dcase {
  const char *name;
  int64_t m, n, k;
  kg_mode mode;
  int64_t batch, slices;
  unsigned dtypes, ops, stores, layouts;
  int per_variant;    /* layout combinations per variant (rotating); 0: every one in layouts */
  const char *only;   /* variant name must contain this; NULL: any */
  int ints;           /* integer inputs in [-2, 2] */
  float alpha0, beta0, alpha1, beta1;
  c_mode c0, c1;
  int vec_b1;         /* B1 column-major with ldb1 = 0: one K-vector (per batch) */
  unsigned bcast;     /* BC_* operands with batch stride 0 */
  int pad;            /* extra elements on lds (different per operand) */
  int gap;            /* extra elements between batches */
} dcase;

/* gemm / batched / split-K shorthands */
#define G1(nm, m, n, k, dt, ops, lay, pv, ints, a0, b0, a1, b1, c0, c1, vec, pad) \
  { nm, m, n, k, KG_MODE_GEMM, 1, 1, dt, ops, ST_ALL, lay, pv, NULL, ints, a0, b0, a1, b1, c0, c1, vec, 0, pad, 0 }
#define GB(nm, m, n, k, bt, dt, ops, lay, pv, ints, a0, b0, a1, b1, c0, c1, vec, bc, pad, gap) \
  { nm, m, n, k, KG_MODE_BATCHED, bt, 1, dt, ops, ST_ALL, lay, pv, NULL, ints, a0, b0, a1, b1, c0, c1, vec, bc, pad, gap }
#define GS(nm, m, n, k, s, dt, ops, lay, pv, ints, a0, b0, a1, b1, c0, c1, vec, pad) \
  { nm, m, n, k, KG_MODE_SPLITK_SERIAL, 1, s, dt, ops, ST_ALL, lay, pv, NULL, ints, a0, b0, a1, b1, c0, c1, vec, 0, pad, 0 }

static const dcase cases[] = {
  /* tiny and odd sizes: all 16 layout combinations on every variant */
  G1("1x1x1 int", 1, 1, 1, DT_ALL, OP_ALL, LAY_ALL, 0, 1, 1, 0, 1, 0, CN_NONE, CN_NONE, 0, 0),
  G1("1x1x1 rand C", 1, 1, 1, DT_ALL, OP_ALL, LAY_ALL, 0, 0, 1, 1, -1, 0.5f, CN_FULL, CN_FULL, 0, 2),
  G1("7x5x3 int alpha2 beta-1", 7, 5, 3, DT_ALL, OP_ALL, LAY_ALL, 0, 1, 2, -1, -1, 2, CN_FULL, CN_FULL, 0, 3),
  G1("7x5x3 rand", 7, 5, 3, DT_ALL, OP_ALL, LAY_ALL, 0, 0, -0.5f, 0.25f, 1.5f, -1, CN_FULL, CN_FULL, 0, 0),
  G1("7x5x3 int bcast B1", 7, 5, 3, DT_ALL, OP_ALL, LAY_ALL, 0, 1, 1, 1, 1, 1, CN_FULL, CN_FULL, 1, 1),
  /* medium odd sizes: the 16 combinations spread over the variants of each dtype */
  G1("33x65x17 int", 33, 65, 17, DT_ALL, OP_ALL, LAY_ALL, 3, 1, 1, 1, -1, 1, CN_FULL, CN_FULL, 0, 5),
  G1("33x65x17 rand c=NULL", 33, 65, 17, DT_ALL, OP_ALL, LAY_ALL, 3, 0, 1.5f, 0, 0.75f, 0, CN_NONE, CN_NONE, 0, 1),
  G1("33x65x17 int bias rows", 33, 65, 17, DT_ALL, OP_ALL, LAY_ALL, 3, 1, 1, 2, 1, -1, CN_BIAS, CN_BIAS, 0, 0),
  G1("33x65x17 int c0 only, c1 unread", 33, 65, 17, DT_ALL, OP_ALL, LAY_ALL, 3, 1, -1, 1, 2, 0, CN_FULL, CN_IGNORED, 0, 2),
  G1("33x65x17 rand c0 unread, c1 bias", 33, 65, 17, DT_ALL, OP_ALL, LAY_ALL, 3, 0, 1, 0, 1, 0.5f, CN_IGNORED, CN_BIAS, 0, 0),
  G1("100x31x257 int", 100, 31, 257, DT_ALL, OP_ALL, LAY_ALL, 1, 1, 1, 1, 1, -2, CN_FULL, CN_FULL, 0, 2),
  G1("100x31x257 rand bias", 100, 31, 257, DT_ALL, OP_ALL, LAY_ALL, 1, 0, 1, -1, 0.5f, 1, CN_BIAS, CN_FULL, 0, 0),
  G1("37x19x23 int bcast B1 (ldb1 0)", 37, 19, 23, DT_ALL, OP_ALL, LAY_ALL, 2, 1, 1, 1, 1, 0, CN_FULL, CN_NONE, 1, 3),
  G1("100x64x300 rand bcast B1, B0 row", 100, 64, 300, DT_ALL, OP_ALL, RRCR | L4(1, 0, 1, 1) | L4(0, 0, 1, 1),
     1, 0, 1, 0, 1, 1, CN_NONE, CN_BIAS, 1, 0),
  G1("20x30x40 alpha0 0", 20, 30, 40, DT_ALL, OP_ALL, RRRR | CCCC, 1, 1, 0, 1, 1, 1, CN_FULL, CN_FULL, 0, 0),
  /* edges of the 64x256x256 C tiles: exactly one tile, one past */
  G1("64x256x256 int", 64, 256, 256, DT_ALL, OP_MUL, RRRR | CCCC | RRCR, 1, 1, 1, 1, 1, 1, CN_FULL, CN_FULL, 0, 0),
  G1("65x257x257 rand", 65, 257, 257, DT_ALL, OP_SW | OP_GE, RRCR | CRCC, 1, 0, 1, 0.5f, 1, 0, CN_FULL, CN_NONE, 0, 1),
  /* "4096x4096x8192 class", scaled for the CPU: one variant, bias on, then broadcast B1, bias off */
  { "256x512x1024 f32 swiglu rand bias", 256, 512, 1024, KG_MODE_GEMM, 1, 1, DT_F32, OP_SW, ST_ALL, RRCR, 1,
    "_f32_swiglu_", 0, 1, 1, 1, 1, CN_FULL, CN_BIAS, 0, 0, 0, 0 },
  { "256x512x1024 bf16 mul int bcast B1 d0d1d2", 256, 512, 1024, KG_MODE_GEMM, 1, 1, DT_BF16, OP_MUL, 1u << 3,
    RRCR, 1, NULL, 1, 1, 0, 1, 0, CN_NONE, CN_NONE, 1, 0, 0, 0 },
  /* batched */
  GB("7x9x11 x37 int", 7, 9, 11, 37, DT_ALL, OP_ALL, LAY_ALL, 3, 1, 1, 1, 1, -1, CN_FULL, CN_FULL, 0, 0, 1, 5),
  GB("7x9x11 x37 rand bcast A", 7, 9, 11, 37, DT_ALL, OP_ALL, LAY_ALL, 3, 0, 1, 0, -1, 0, CN_NONE, CN_NONE, 0, BC_A, 0, 0),
  GB("7x9x11 x37 int bcast B0, bias", 7, 9, 11, 37, DT_ALL, OP_ALL, LAY_ALL, 3, 1, 2, 1, 1, 1, CN_BIAS, CN_BIAS, 0, BC_B0, 0, 3),
  GB("13x10x21 x5 int bcast B1 (bs K, B0 bs KN)", 13, 10, 21, 5, DT_ALL, OP_ALL, LAY_ALL, 2, 1, 1, 1, 1, 0, CN_FULL, CN_NONE,
     1, 0, 0, 0),
  GB("13x10x21 x5 rand bcast B1, one vector", 13, 10, 21, 5, DT_ALL, OP_ALL, RRCR | CCCC, 1, 0, 1, 0, 1, 1, CN_NONE, CN_FULL,
     1, BC_B1 | BC_C, 2, 1),
  GB("161x128x256 x3 rand", 161, 128, 256, 3, DT_ALL, OP_ALL, RRCR | RCCR | CCCC | RRRR, 1, 0, 1, -0.5f, 1, 1, CN_FULL,
     CN_BIAS, 0, 0, 0, 0),
  GB("33x17x65 x1", 33, 17, 65, 1, DT_ALL, OP_ALL, RRRR | CCCC, 1, 1, 1, 1, 1, 1, CN_FULL, CN_FULL, 0, 0, 0, 0),
  /* the reference's batched size, once (one variant; broadcast B1 in batched mode is covered above) */
  { "321x256x512 x37 f32 swiglu rand", 321, 256, 512, KG_MODE_BATCHED, 37, 1, DT_F32, OP_SW, ST_ALL, RRCR, 1,
    "_f32_swiglu_", 0, 1, 1, 1, 0, CN_FULL, CN_NONE, 0, 0, 0, 0 },
  /* serial split-K */
  GS("100x31x257 int s2", 100, 31, 257, 2, DT_ALL, OP_ALL, LAY_ALL, 1, 1, 1, 1, 1, 1, CN_FULL, CN_FULL, 0, 0),
  GS("100x31x257 int s3 beta-2", 100, 31, 257, 3, DT_ALL, OP_ALL, LAY_ALL, 1, 1, 1, -2, -1, 1, CN_FULL, CN_FULL, 0, 1),
  GS("100x31x257 int s7 bias, bcast B1", 100, 31, 257, 7, DT_ALL, OP_ALL, LAY_ALL, 1, 1, 2, 1, 1, 0, CN_BIAS, CN_NONE, 1, 0),
  GS("33x65x17 rand s7", 33, 65, 17, 7, DT_ALL, OP_ALL, LAY_ALL, 2, 0, 1, 0.5f, 1, -0.5f, CN_FULL, CN_FULL, 0, 2),
  GS("70x300x600 rand s3", 70, 300, 600, 3, DT_ALL, OP_ALL, RRCR | CCCC, 1, 0, -1, 1, 1, 0, CN_FULL, CN_NONE, 0, 0),
  GS("5x6x7 int s7 c=NULL", 5, 6, 7, 7, DT_ALL, OP_ALL, LAY_ALL, 4, 1, 1, 0, 1, 0, CN_NONE, CN_NONE, 0, 0),
  GS("9x9x10 int s4 uneven", 9, 9, 10, 4, DT_ALL, OP_ALL, LAY_ALL, 4, 1, 1, 1, 1, 1, CN_FULL, CN_FULL, 0, 0),
  GS("9x9x10 int s1", 9, 9, 10, 1, DT_ALL, OP_ALL, LAY_ALL, 2, 1, 1, 1, 1, 1, CN_FULL, CN_BIAS, 0, 1),
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* ---- variant names ------------------------------------------------------------------------ */

typedef struct dvar {
  const char *name;
  int index;
  char backend[16];
  int type_ab, type_cd;   /* kg_dtype */
  int op;                 /* kg_dual_op */
  int sd0, sd1;
  char lay[5];            /* r / c / x for A, B0, B1, C/D */
  int align;
} dvar;

static int parse_dtype(const char *s, int *t) {
  if (strcmp(s, "f32") == 0) { *t = KG_F32; return 1; }
  if (strcmp(s, "f16") == 0) { *t = KG_F16; return 1; }
  if (strcmp(s, "bf16") == 0) { *t = KG_BF16; return 1; }
  return 0;
}

/* kg_dualgemm_<backend>_<kernel>_<dtype or XtoY>_<op>_<LLLL>_<stores>_..._a<N> */
static int parse_dual(const char *name, dvar *v) {
  memset(v, 0, sizeof *v);
  v->name = name;
  v->align = 1;
  if (!name || strncmp(name, "kg_dualgemm_", 12) != 0) return 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", name + 12);
  char *tok[32];
  int nt = 0;
  for (char *p = strtok(buf, "_"); p && nt < 32; p = strtok(NULL, "_")) tok[nt++] = p;
  if (nt < 6) return 0;
  snprintf(v->backend, sizeof v->backend, "%s", tok[0]);
  char *to = strstr(tok[2], "to");
  if (to) {
    *to = '\0';
    if (!parse_dtype(tok[2], &v->type_ab) || !parse_dtype(to + 2, &v->type_cd)) return 0;
  } else {
    if (!parse_dtype(tok[2], &v->type_ab)) return 0;
    v->type_cd = v->type_ab;
  }
  if (strcmp(tok[3], "swiglu") == 0) v->op = KG_DUAL_SWIGLU;
  else if (strcmp(tok[3], "geglu") == 0) v->op = KG_DUAL_GEGLU;
  else if (strcmp(tok[3], "mul") == 0) v->op = KG_DUAL_MUL;
  else return 0;
  if (strlen(tok[4]) != 4 || strspn(tok[4], "rcx") != 4) return 0;
  memcpy(v->lay, tok[4], 5);
  if (strcmp(tok[5], "d2") == 0) { v->sd0 = 0; v->sd1 = 0; }
  else if (strcmp(tok[5], "d0d2") == 0) { v->sd0 = 1; v->sd1 = 0; }
  else if (strcmp(tok[5], "d1d2") == 0) { v->sd0 = 0; v->sd1 = 1; }
  else if (strcmp(tok[5], "d0d1d2") == 0) { v->sd0 = 1; v->sd1 = 1; }
  else return 0;
  const char *last = tok[nt - 1];
  if (last[0] == 'a' && last[1] >= '0' && last[1] <= '9') v->align = atoi(last + 1);
  return 1;
}

static int letter_ok(char L, kg_layout l) { return L == 'x' || (L == 'r' && l == KG_ROW) || (L == 'c' && l == KG_COL); }

static const char *op_name(int op) {
  return op == KG_DUAL_SWIGLU ? "swiglu" : op == KG_DUAL_GEGLU ? "geglu" : op == KG_DUAL_MUL ? "mul" : "?";
}
static const char *lname(int l) { return l == KG_ROW ? "row" : "col"; }

/* C-backend DualGemm variants, in table order. */
static int c_variants(dvar *out, int cap) {
  int n = 0;
  for (int i = 0; i < kg_variant_count(); i++) {
    const char *name = kg_variant_name(i);
    if (strncmp(name, "kg_dualgemm_c_", 14) != 0) continue;
    ck_assert_msg(n < cap, "more than %d C DualGemm variants", cap);
    ck_assert_msg(parse_dual(name, &out[n]), "cannot parse C DualGemm variant name %s", name);
    out[n].index = i;
    n++;
  }
  return n;
}

/* ---- the independent reference -------------------------------------------------------------- */

static double op_ref(int op, double x, double y) {
  switch (op) {
    case KG_DUAL_SWIGLU: return x / (1.0 + exp(-x)) * y;
    case KG_DUAL_GEGLU: return x / (1.0 + exp(-1.5957691216057308 * (x + 0.044715 * x * x * x))) * y;
    case KG_DUAL_MUL: return x * y;
  }
  return NAN;
}

/* |f(x)| where op(x, y) = f(x) y */
static double op_f(int op, double x) { return fabs(op_ref(op, x, 1.0)); }

static double rand_value(tu_rng *r, int ints) { return ints ? (double)tu_rng_int(r, -2, 2) : tu_rng_normalish(r); }

/* Logical inputs (already rounded to the dtype, so storing them is exact), row-major per batch,
** and the products acc0 = A.B0, acc1 = A.B1 per batch with sum |a||b| for the tolerances. */
typedef struct refdata {
  kg_dtype t;
  int64_t m, n, k, batches;
  int64_t nbA, nbB0, nbB1, nbC;  /* logical batches stored (1 when broadcast or not batched) */
  int64_t cvec;                  /* CN_BIAS: length of the bias vector (max(m, n)) */
  double *A, *B0, *B1;           /* B1: k per batch when vec_b1, else k x n */
  double *C0, *C1;               /* CN_FULL: m x n; CN_BIAS: cvec; else NULL */
  double *acc0, *acc1, *abs0, *abs1;  /* batches x m x n; abs only for random inputs */
} refdata;

static double *dalloc(int64_t count) {
  double *p = (double *)malloc(sizeof(double) * (size_t)(count > 0 ? count : 1));
  ck_assert_msg(p != NULL, "out of memory (%lld doubles)", (long long)count);
  return p;
}

static void gen(double *dst, int64_t count, kg_dtype t, int ints, tu_rng *r) {
  for (int64_t i = 0; i < count; i++) dst[i] = tu_round(t, rand_value(r, ints));
}

/* One batch: acc[i][j] = sum_p A[i][p] B[p][j] (B k x n row-major, or the vector v when vec),
** abs likewise with |.|. Plain loops in double, vectorized. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static void ref_product(int64_t m, int64_t n, int64_t k, const double *A, const double *B, int vec,
                        double *acc, double *abs_acc, double *babs) {
  if (vec) {
    for (int64_t i = 0; i < m; i++) {
      double s = 0, sa = 0;
      for (int64_t p = 0; p < k; p++) {
        s += A[i * k + p] * B[p];
        sa += fabs(A[i * k + p]) * fabs(B[p]);
      }
      for (int64_t j = 0; j < n; j++) {
        acc[i * n + j] = s;
        if (abs_acc) abs_acc[i * n + j] = sa;
      }
    }
    return;
  }
  if (abs_acc)
    for (int64_t i = 0; i < k * n; i++) babs[i] = fabs(B[i]);
  for (int64_t i = 0; i < m; i++) {
    double *restrict o = acc + i * n;
    for (int64_t j = 0; j < n; j++) o[j] = 0.0;
    if (!abs_acc) {
      for (int64_t p = 0; p < k; p++) {
        const double av = A[i * k + p];
        const double *restrict bp = B + p * n;
        for (int64_t j = 0; j < n; j++) o[j] += av * bp[j];
      }
      continue;
    }
    double *restrict s = abs_acc + i * n;
    for (int64_t j = 0; j < n; j++) s[j] = 0.0;
    for (int64_t p = 0; p < k; p++) {
      const double av = A[i * k + p], aa = fabs(av);
      const double *restrict bp = B + p * n, *restrict ba = babs + p * n;
      for (int64_t j = 0; j < n; j++) {
        o[j] += av * bp[j];
        s[j] += aa * ba[j];
      }
    }
  }
}

static void ref_build(const dcase *tc, kg_dtype t, uint64_t seed, refdata *R) {
  memset(R, 0, sizeof *R);
  const int batched = tc->mode == KG_MODE_BATCHED;
  const int64_t m = tc->m, n = tc->n, k = tc->k, nb = batched ? tc->batch : 1;
  R->t = t;
  R->m = m; R->n = n; R->k = k; R->batches = nb;
  R->nbA = (tc->bcast & BC_A) ? 1 : nb;
  R->nbB0 = (tc->bcast & BC_B0) ? 1 : nb;
  R->nbB1 = (tc->bcast & BC_B1) ? 1 : nb;
  R->nbC = (tc->bcast & BC_C) ? 1 : nb;
  R->cvec = m > n ? m : n;
  tu_rng r;
  tu_rng_seed(&r, seed);
  const int64_t b1e = tc->vec_b1 ? k : k * n;
  R->A = dalloc(R->nbA * m * k);
  R->B0 = dalloc(R->nbB0 * k * n);
  R->B1 = dalloc(R->nbB1 * b1e);
  gen(R->A, R->nbA * m * k, t, tc->ints, &r);
  gen(R->B0, R->nbB0 * k * n, t, tc->ints, &r);
  gen(R->B1, R->nbB1 * b1e, t, tc->ints, &r);
  const c_mode cm[2] = { tc->c0, tc->c1 };
  double **cp[2] = { &R->C0, &R->C1 };
  for (int q = 0; q < 2; q++) {
    int64_t e = cm[q] == CN_FULL ? m * n : cm[q] == CN_BIAS ? R->cvec : 0;
    if (!e) continue;
    *cp[q] = dalloc(R->nbC * e);
    gen(*cp[q], R->nbC * e, t, tc->ints, &r);
  }
  R->acc0 = dalloc(nb * m * n);
  R->acc1 = dalloc(nb * m * n);
  double *babs = NULL;
  if (!tc->ints) {
    R->abs0 = dalloc(nb * m * n);
    R->abs1 = dalloc(nb * m * n);
    babs = dalloc(k * n);
  }
  for (int64_t z = 0; z < nb; z++) {
    const double *Az = R->A + (R->nbA > 1 ? z : 0) * m * k;
    const double *B0z = R->B0 + (R->nbB0 > 1 ? z : 0) * k * n;
    const double *B1z = R->B1 + (R->nbB1 > 1 ? z : 0) * b1e;
    ref_product(m, n, k, Az, B0z, 0, R->acc0 + z * m * n, R->abs0 ? R->abs0 + z * m * n : NULL, babs);
    ref_product(m, n, k, Az, B1z, tc->vec_b1, R->acc1 + z * m * n, R->abs1 ? R->abs1 + z * m * n : NULL, babs);
  }
  free(babs);
}

static void ref_free(refdata *R) {
  free(R->A); free(R->B0); free(R->B1); free(R->C0); free(R->C1);
  free(R->acc0); free(R->acc1); free(R->abs0); free(R->abs1);
  memset(R, 0, sizeof *R);
}

/* ---- buffers -------------------------------------------------------------------------------- */

static void *elem(void *buf, kg_dtype t, int64_t i) { return (char *)buf + (size_t)i * kg_dtype_size(t); }

typedef struct dbuf {
  kg_layout layout;
  int64_t ld, ext;      /* leading dimension, elements of one batch */
  int64_t bs;           /* batch stride passed */
  int64_t nb, step;     /* batches stored, their distance in memory */
  int64_t total;        /* elements of all batches, without guards */
  void *base, *p, *copy;
  size_t bytes;
} dbuf;

static void buf_alloc(dbuf *o, kg_dtype t, kg_layout l, int64_t ld, int64_t ext, int64_t bs, int64_t nb) {
  o->layout = l;
  o->ld = ld;
  o->ext = ext;
  o->bs = bs;
  o->nb = nb;
  o->step = nb > 1 ? bs : 0;
  o->total = o->step * (nb - 1) + ext;
  o->bytes = (size_t)(o->total + 2 * GUARD) * kg_dtype_size(t);
  o->base = tu_alloc(o->bytes);
  tu_poison(o->base, t, o->total + 2 * GUARD);
  o->p = elem(o->base, t, GUARD);
  o->copy = NULL;
}

static void buf_snapshot(dbuf *o) {
  o->copy = tu_alloc(o->bytes);
  memcpy(o->copy, o->base, o->bytes);
}

static void buf_free(dbuf *o) {
  if (o->base) tu_free(o->base);
  if (o->copy) tu_free(o->copy);
  memset(o, 0, sizeof *o);
}

static void strides(kg_layout l, int64_t ld, int64_t *rs, int64_t *cs) {
  if (l == KG_ROW) { *rs = ld; *cs = 1; } else { *rs = 1; *cs = ld; }
}

static int64_t extent(kg_layout l, int64_t rows, int64_t cols, int64_t ld) {
  int64_t rs, cs;
  strides(l, ld, &rs, &cs);
  return (rows - 1) * rs + (cols - 1) * cs + 1;
}

static int64_t min_ld(kg_layout l, int64_t rows, int64_t cols) { return l == KG_ROW ? cols : rows; }

/* Stores logical rows x cols matrices (row-major, `per` elements apart; get(i, j) reads index
** i * rstride + j * cstride of each logical batch) into o. */
static void store(dbuf *o, kg_dtype t, int64_t rows, int64_t cols, const double *src, int64_t per, int64_t lrs,
                  int64_t lcs) {
  int64_t rs, cs;
  strides(o->layout, o->ld, &rs, &cs);
  for (int64_t z = 0; z < o->nb; z++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        double v = src[z * per + i * lrs + j * lcs];
        double got = tu_set(o->p, t, z * o->step + i * rs + j * cs, v);
        if (got != v) ck_abort_msg("test bug: %.9g not representable in %s", v, tu_dtype_name(t));
      }
}

/* ---- one run ------------------------------------------------------------------------------- */

typedef enum {
  MUT_NONE = 0,
  MUT_D1_INTO_D0,  /* the upstream bug class: D0 holds D1's values */
  MUT_D0_GAP,      /* one element in D0's ld gap written */
  MUT_D2_UNWRITTEN,/* one D2 element left poisoned */
  MUT_D2_OFF,      /* one D2 element off: by one ulp for mul, beyond a few ulps otherwise */
  MUT_D1_ZERO      /* one D1 element zeroed */
} mutation;

typedef struct verdict {
  int64_t bad[3], checked[3], stray[3];
  char first[3][400];
  char stray_at[3][100];
} verdict;

/* Runs case tc on data R with variant v (forced by name unless dispatch) and the layouts of
** combo; fills vd. mut != MUT_NONE alters the output after the call (to show the checks fail). */
static void run_one(const dcase *tc, const refdata *R, const dvar *v, int dispatch, unsigned combo, mutation mut,
                    verdict *vd) {
  const kg_dtype t = R->t;
  const int64_t m = R->m, n = R->n, k = R->k, batches = R->batches;
  const int batched = tc->mode == KG_MODE_BATCHED;
  const kg_layout la = (combo >> 3) & 1 ? KG_COL : KG_ROW, lb0 = (combo >> 2) & 1 ? KG_COL : KG_ROW;
  const kg_layout lb1 = (combo >> 1) & 1 ? KG_COL : KG_ROW, lcd = combo & 1 ? KG_COL : KG_ROW;
  const int sd[2] = { v->sd0, v->sd1 };
  const int op = v->op;
  const int64_t al = v->align > 1 ? v->align : 1;
  char what[600];
  snprintf(what, sizeof what, "case '%s' variant %s%s dtype %s layouts A %s B0 %s B1 %s%s CD %s", tc->name, v->name,
           dispatch ? " (through dispatch)" : "", tu_dtype_name(t), lname(la), lname(lb0), lname(lb1),
           tc->vec_b1 ? " (ldb1 0)" : "", lname(lcd));
  memset(vd, 0, sizeof *vd);

  const int64_t pad = tc->pad, pz = pad > 0;
  /* non-batched modes ignore batch strides: pass odd junk to show it */
  const int64_t junk = 3;
#define BS(ext, bit, extra) (!batched ? junk : (tc->bcast & (bit)) ? 0 : tu_round_up((ext) + tc->gap + (extra), al))
#define NB(bit) (batched && !(tc->bcast & (bit)) ? batches : 1)
  dbuf A, B0, B1, C[2], D[3];
  memset(C, 0, sizeof C);
  int64_t ld = tu_round_up(min_ld(la, m, k) + pad, al);
  buf_alloc(&A, t, la, ld, extent(la, m, k, ld), BS(extent(la, m, k, ld), BC_A, 0), NB(BC_A));
  ld = tu_round_up(min_ld(lb0, k, n) + pad + pz, al);
  buf_alloc(&B0, t, lb0, ld, extent(lb0, k, n, ld), BS(extent(lb0, k, n, ld), BC_B0, 0), NB(BC_B0));
  if (tc->vec_b1) {
    buf_alloc(&B1, t, KG_COL, 0, k, BS(k, BC_B1, 0), NB(BC_B1));
  } else {
    ld = tu_round_up(min_ld(lb1, k, n) + pad + 2 * pz, al);
    buf_alloc(&B1, t, lb1, ld, extent(lb1, k, n, ld), BS(extent(lb1, k, n, ld), BC_B1, 0), NB(BC_B1));
  }
  const c_mode cm[2] = { tc->c0, tc->c1 };
  for (int q = 0; q < 2; q++) {
    if (cm[q] == CN_NONE) continue;
    if (cm[q] == CN_BIAS) {
      int64_t e = lcd == KG_ROW ? n : m;
      buf_alloc(&C[q], t, lcd, 0, e, BS(e, BC_C, q + 1), NB(BC_C));
    } else {
      ld = tu_round_up(min_ld(lcd, m, n) + pad + (3 + q) * pz, al);
      buf_alloc(&C[q], t, lcd, ld, extent(lcd, m, n, ld), BS(extent(lcd, m, n, ld), BC_C, q + 1), NB(BC_C));
    }
  }
  for (int q = 0; q < 3; q++) {
    if (q < 2 && !sd[q]) { memset(&D[q], 0, sizeof D[q]); continue; }
    ld = tu_round_up(min_ld(lcd, m, n) + pad + (q == 2 ? 0 : q + 1) * pz, al);
    int64_t e = extent(lcd, m, n, ld);
    buf_alloc(&D[q], t, lcd, ld, e, batched ? tu_round_up(e + tc->gap + (q == 2 ? 0 : 2 + q), al) : junk, batches);
  }
#undef BS
#undef NB

  /* values into the logical elements; padding stays NaN */
  store(&A, t, m, k, R->A, m * k, k, 1);
  store(&B0, t, k, n, R->B0, k * n, n, 1);
  if (tc->vec_b1) store(&B1, t, k, 1, R->B1, k, 1, 0);
  else store(&B1, t, k, n, R->B1, k * n, n, 1);
  const double *Cl[2] = { R->C0, R->C1 };
  for (int q = 0; q < 2; q++) {
    if (cm[q] == CN_FULL) store(&C[q], t, m, n, Cl[q], m * n, n, 1);
    else if (cm[q] == CN_BIAS && lcd == KG_ROW) store(&C[q], t, 1, n, Cl[q], R->cvec, 0, 1);
    else if (cm[q] == CN_BIAS) store(&C[q], t, m, 1, Cl[q], R->cvec, 1, 0);
  }
  buf_snapshot(&A);
  buf_snapshot(&B0);
  buf_snapshot(&B1);
  for (int q = 0; q < 2; q++)
    if (C[q].base) buf_snapshot(&C[q]);

  kg_dualgemm_args g;
  memset(&g, 0, sizeof g);
  g.mode = tc->mode;
  g.m = m; g.n = n; g.k = k;
  g.batch_count = batches;
  g.split_k_slices = tc->slices;
  g.type_ab = g.type_cd = t;
  g.layout_a = la; g.layout_b0 = lb0; g.layout_b1 = tc->vec_b1 ? KG_COL : lb1; g.layout_cd = lcd;
  g.op = (kg_dual_op)op;
  g.store_d0 = sd[0]; g.store_d1 = sd[1];
  g.a = A.p; g.lda = A.ld; g.batch_stride_a = A.bs;
  g.b0 = B0.p; g.ldb0 = B0.ld; g.batch_stride_b0 = B0.bs;
  g.b1 = B1.p; g.ldb1 = B1.ld; g.batch_stride_b1 = B1.bs;
  g.c0 = C[0].p; g.ldc0 = C[0].ld; g.batch_stride_c0 = C[0].bs;
  g.c1 = C[1].p; g.ldc1 = C[1].ld; g.batch_stride_c1 = C[1].bs;
  g.d0 = D[0].p; g.ldd0 = D[0].ld; g.batch_stride_d0 = D[0].bs;
  g.d1 = D[1].p; g.ldd1 = D[1].ld; g.batch_stride_d1 = D[1].bs;
  g.d2 = D[2].p; g.ldd2 = D[2].ld; g.batch_stride_d2 = D[2].bs;
  g.alpha0 = tc->alpha0; g.beta0 = tc->beta0;
  g.alpha1 = tc->alpha1; g.beta1 = tc->beta1;

  kg_exec e = tu_exec_c();
  static char why[16384];
  /* plain dispatch takes the same variant: C variants differ only in dtype, op and stores */
  const char *sel = NULL;
  kg_status st = kg_dualgemm_select(&g, &e, &sel);
  if (st != KG_SUCCESS || !sel || strcmp(sel, v->name) != 0) {
    kg_explain(KG_OP_DUALGEMM, &g, &e, why, sizeof why);
    ck_abort_msg("%s: dispatch selects %s ('%s'), expected %s\n%s", what, sel ? sel : "nothing", kg_status_string(st),
                 v->name, why);
  }
  if (!dispatch) e.variant = v->name;
  size_t need = 12345;
  st = kg_dualgemm_workspace_size(&g, &e, &need);
  if (st != KG_SUCCESS) {
    kg_explain(KG_OP_DUALGEMM, &g, &e, why, sizeof why);
    ck_abort_msg("%s: workspace query failed: %s\n%s", what, kg_status_string(st), why);
  }
  const int splitk = tc->mode == KG_MODE_SPLITK_SERIAL && tc->slices > 1;
  if (splitk)
    ck_assert_msg(need >= (size_t)(2 * m * n) * sizeof(float), "%s: split-K workspace %zu bytes < two m x n f32 sums",
                  what, need);
  else
    ck_assert_msg(need == 0, "%s: workspace %zu bytes outside serial split-K", what, need);
  unsigned char *ws = NULL;
  if (need > 0) {
    ws = (unsigned char *)tu_alloc(need);
    memset(ws, 0xff, need);  /* NaN as f32: the kernel must initialize what it reads */
    e.workspace = ws;
    e.workspace_size = need - 1;
    st = kg_dualgemm(&g, &e);
    ck_assert_msg(st == KG_ERROR_WORKSPACE_TOO_SMALL, "%s: workspace of %zu bytes (need %zu) gave '%s'", what,
                  need - 1, need, kg_status_string(st));
    for (int q = 0; q < 3; q++)
      for (int64_t i = 0; D[q].base && i < D[q].total + 2 * GUARD; i++)
        ck_assert_msg(tu_is_poison(D[q].base, t, i), "%s: call refused for its workspace wrote D%d", what, q);
    e.workspace_size = need;
  }
  st = kg_dualgemm(&g, &e);
  if (st != KG_SUCCESS) {
    kg_explain(KG_OP_DUALGEMM, &g, &e, why, sizeof why);
    ck_abort_msg("%s: kg_dualgemm returned '%s' (workspace %zu bytes)\n%s", what, kg_status_string(st), need, why);
  }

  int64_t drs[3] = { 0, 0, 0 }, dcs[3] = { 0, 0, 0 }, crs[2] = { 0, 0 }, ccs[2] = { 0, 0 };
  for (int q = 0; q < 3; q++)
    if (D[q].base) strides(lcd, D[q].ld, &drs[q], &dcs[q]);
  for (int q = 0; q < 2; q++)
    if (C[q].base) strides(lcd, C[q].ld, &crs[q], &ccs[q]);

  /* ---- mutations (self-checks only) ---- */
  if (mut == MUT_D1_INTO_D0 && D[0].base && D[1].base) {
    for (int64_t z = 0; z < batches; z++)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++)
          tu_set(D[0].p, t, z * D[0].step + i * drs[0] + j * dcs[0],
                 tu_get(D[1].p, t, z * D[1].step + i * drs[1] + j * dcs[1]));
  } else if (mut == MUT_D0_GAP && D[0].base) {
    /* the first element of the ld gap after row (column) 0, else the guard after the buffer */
    const int64_t mn = min_ld(lcd, m, n);
    tu_set(D[0].p, t, D[0].ld > mn ? mn : D[0].total, 1.0);
  } else if (mut == MUT_D2_UNWRITTEN) {
    tu_poison(elem(D[2].p, t, (m / 2) * drs[2] + (n / 2) * dcs[2]), t, 1);
  } else if (mut == MUT_D2_OFF) {
    /* mul: the next value up (one ulp); swiglu / geglu: beyond their few-ulp tolerance */
    const int64_t i = (m / 2) * drs[2] + (n / 2) * dcs[2];
    const double x = tu_get(D[2].p, t, i);
    double y = x;
    if (op == KG_DUAL_MUL) {
      for (double s = fabs(x) * tu_unit_roundoff(t) + 1e-40; y == x; s *= 2) y = tu_round(t, x + s);
    } else {
      double rel = t == KG_F32 ? 1e-3 : 0.05, d = fabs(x) * rel;
      y = tu_round(t, x + (d > 0.25 ? d : 0.25));
    }
    tu_set(D[2].p, t, i, y);
  } else if (mut == MUT_D1_ZERO && D[1].base) {
    int64_t i = (m - 1) * drs[1] + (n - 1) * dcs[1];
    tu_set(D[1].p, t, i, tu_get(D[1].p, t, i) == 0.0 ? 1.0 : 0.0);
  }

  /* ---- element checks ---- */
  const double ut = tu_unit_roundoff(t), u32 = ldexp(1.0, -24);
  const double floor_abs = t == KG_F16 ? ldexp(1.0, -24) : 1e-37;
  const double dbound = op == KG_DUAL_MUL ? 1.0 : 1.2;  /* max |f'| of silu (1.10), gelu_tanh (1.13), x */
  const float alpha[2] = { tc->alpha0, tc->alpha1 }, beta[2] = { tc->beta0, tc->beta1 };
  const double *acc[2] = { R->acc0, R->acc1 }, *sabs[2] = { R->abs0, R->abs1 };
  unsigned char *written[3];
  for (int q = 0; q < 3; q++) written[q] = D[q].base ? (unsigned char *)calloc((size_t)D[q].total, 1) : NULL;
  for (int64_t z = 0; z < batches; z++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        const int64_t r = z * m * n + i * n + j;
        double xk[2], ek[2];  /* value the op saw (as far as known) and a bound on its error */
        for (int q = 0; q < 2; q++) {
          double cv = 0.0;
          if (beta[q] != 0.0f) {
            if (cm[q] == CN_FULL) cv = Cl[q][(R->nbC > 1 ? z : 0) * m * n + i * n + j];
            else if (cm[q] == CN_BIAS) cv = Cl[q][(R->nbC > 1 ? z : 0) * R->cvec + (lcd == KG_ROW ? j : i)];
          }
          double x = (double)alpha[q] * acc[q][r] + (double)beta[q] * cv;
          double tol;
          if (tc->ints) {
            x = tu_round(t, x);  /* exact f32 value rounded once: what the kernel must produce */
            tol = 0.0;
          } else {
            tol = 2.0 * (fabs((double)alpha[q]) * sabs[q][r] * (double)(k + 2) * u32 +
                         fabs((double)beta[q] * cv) * 2.0 * u32 + fabs(x) * ut) + floor_abs;
          }
          xk[q] = x;
          ek[q] = tol;
          if (!sd[q]) continue;
          const int64_t di = z * D[q].step + i * drs[q] + j * dcs[q];
          written[q][di] = 1;
          double got = tu_get(D[q].p, t, di);
          double err = fabs(got - x);
          vd->checked[q]++;
          if (!(err <= tol)) {
            if (vd->bad[q]++ == 0)
              snprintf(vd->first[q], sizeof vd->first[q],
                       "batch %lld D%d(%lld,%lld) = %.9g, expected %.9g (err %.3g, tol %.3g)", (long long)z, q,
                       (long long)i, (long long)j, got, x, err, tol);
          } else {
            xk[q] = got;  /* correct: D2 must be op of exactly this value */
            ek[q] = 0.0;
          }
        }
        double ref, tol;
        if (ek[0] == 0.0 && ek[1] == 0.0 && op == KG_DUAL_MUL) {
          ref = tu_round(t, xk[0] * xk[1]);  /* one f32 rounding of an exact product, then to t */
          tol = 0.0;
        } else {
          ref = op_ref(op, xk[0], xk[1]);
          double fx = op_f(op, xk[0]);
          double prop = dbound * ek[0] * fabs(xk[1]) + (fx + dbound * ek[0]) * ek[1];
          double eval = op == KG_DUAL_MUL ? 2.0 * u32 * fabs(ref) : 16.0 * u32 * (fabs(xk[0] * xk[1]) + fabs(ref));
          tol = 2.0 * (prop + eval) + 4.0 * ut * (fabs(ref) + prop + eval) + floor_abs;
        }
        const int64_t di = z * D[2].step + i * drs[2] + j * dcs[2];
        written[2][di] = 1;
        double got = tu_get(D[2].p, t, di);
        double err = isinf(ref) && got == ref ? 0.0 : fabs(got - ref);  /* overflow to inf agrees */
        vd->checked[2]++;
        if (!(err <= tol) && vd->bad[2]++ == 0)
          snprintf(vd->first[2], sizeof vd->first[2],
                   "batch %lld D2(%lld,%lld) = %.9g, expected %s(%.9g, %.9g) = %.9g (err %.3g, tol %.3g)",
                   (long long)z, (long long)i, (long long)j, got, op_name(op), xk[0], xk[1], ref, err, tol);
      }
  /* everything else in the output allocations is still poison (guards, ld padding, batch gaps) */
  for (int q = 0; q < 3; q++) {
    if (!D[q].base) continue;
    for (int64_t i = -GUARD; i < D[q].total + GUARD; i++) {
      if (i >= 0 && i < D[q].total && written[q][i]) continue;
      if (!tu_is_poison(D[q].p, t, i) && vd->stray[q]++ == 0)
        snprintf(vd->stray_at[q], sizeof vd->stray_at[q], "offset %lld", (long long)i);
    }
    free(written[q]);
  }
  ck_assert_msg(memcmp(A.base, A.copy, A.bytes) == 0, "%s: A was modified", what);
  ck_assert_msg(memcmp(B0.base, B0.copy, B0.bytes) == 0, "%s: B0 was modified", what);
  ck_assert_msg(memcmp(B1.base, B1.copy, B1.bytes) == 0, "%s: B1 was modified", what);
  for (int q = 0; q < 2; q++)
    if (C[q].base) ck_assert_msg(memcmp(C[q].base, C[q].copy, C[q].bytes) == 0, "%s: C%d was modified", what, q);

  /* serial split-K is deterministic: a second run gives the same bits */
  if (splitk && mut == MUT_NONE) {
    void *first[3] = { NULL, NULL, NULL };
    for (int q = 0; q < 3; q++) {
      if (!D[q].base) continue;
      first[q] = tu_alloc(D[q].bytes);
      memcpy(first[q], D[q].base, D[q].bytes);
      tu_poison(D[q].base, t, D[q].total + 2 * GUARD);
    }
    memset(ws, 0xff, need);
    ck_assert_int_eq(kg_dualgemm(&g, &e), KG_SUCCESS);
    for (int q = 0; q < 3; q++) {
      if (!D[q].base) continue;
      ck_assert_msg(memcmp(first[q], D[q].base, D[q].bytes) == 0, "%s: second split-K run differs in D%d", what, q);
      tu_free(first[q]);
    }
  }

  if (ws) tu_free(ws);
  buf_free(&A); buf_free(&B0); buf_free(&B1);
  for (int q = 0; q < 2; q++) buf_free(&C[q]);
  for (int q = 0; q < 3; q++) buf_free(&D[q]);
  if (mut == MUT_NONE) {
    for (int q = 0; q < 3; q++) {
      ck_assert_msg(vd->bad[q] == 0, "%s: %lld of %lld elements of D%d wrong; first: %s", what, (long long)vd->bad[q],
                    (long long)vd->checked[q], q, vd->first[q]);
      ck_assert_msg(vd->stray[q] == 0, "%s: %lld elements of D%d's buffer outside the output were written (first at %s)",
                    what, (long long)vd->stray[q], q, vd->stray_at[q]);
    }
    ck_assert_msg(vd->checked[2] == batches * m * n, "%s: checked %lld D2 elements", what, (long long)vd->checked[2]);
    for (int q = 0; q < 2; q++)
      ck_assert_msg(vd->checked[q] == (sd[q] ? batches * m * n : 0), "%s: checked %lld D%d elements", what,
                    (long long)vd->checked[q], q);
  }
}

/* ---- the loop over variants ----------------------------------------------------------------- */

enum { MAXV = 64 };

START_TEST(test_dual_case) {
  const dcase *tc = &cases[_i];
  clock_t t0 = clock();
  dvar vars[MAXV];
  const int nv = c_variants(vars, MAXV);
  int runs = 0;
  for (int t = 0; t < 3; t++) {
    if (!(tc->dtypes & (1u << t))) continue;
    refdata R;
    ref_build(tc, (kg_dtype)t, 0x5eedull * (uint64_t)(_i + 1) + 977ull * (uint64_t)t, &R);
    int rank = 0, runs_t = 0, per_max = 0;
    unsigned covered = 0, allowed = 0;
    for (int vi = 0; vi < nv; vi++) {
      const dvar *v = &vars[vi];
      if (v->type_ab != t || v->type_cd != t) continue;  /* mixed types: no case here */
      if (!(tc->ops & (1u << v->op)) || !(tc->stores & (1u << (v->sd0 + 2 * v->sd1)))) continue;
      if (tc->only && !strstr(v->name, tc->only)) continue;
      /* layout combinations this variant takes (fixed letters), B1 column-major when it is a vector */
      unsigned list[16];
      int nl = 0;
      for (unsigned c = 0; c < 16; c++) {
        if (!(tc->layouts & (1u << c))) continue;
        kg_layout la = (c >> 3) & 1 ? KG_COL : KG_ROW, lb0 = (c >> 2) & 1 ? KG_COL : KG_ROW;
        kg_layout lb1 = (c >> 1) & 1 ? KG_COL : KG_ROW, lcd = c & 1 ? KG_COL : KG_ROW;
        if (tc->vec_b1 && lb1 != KG_COL) continue;
        if (!letter_ok(v->lay[0], la) || !letter_ok(v->lay[1], lb0) || !letter_ok(v->lay[2], lb1) ||
            !letter_ok(v->lay[3], lcd))
          continue;
        list[nl++] = c;
      }
      if (nl == 0) continue;
      int per = tc->per_variant > 0 && tc->per_variant < nl ? tc->per_variant : nl;
      for (int j = 0; j < nl; j++) allowed |= 1u << list[j];
      per_max = nl;
      for (int j = 0; j < per; j++) {
        unsigned c = list[(rank * per + j) % nl];
        verdict vd;
        run_one(tc, &R, v, 0, c, MUT_NONE, &vd);
        covered |= 1u << c;
        runs_t++;
      }
      /* plain dispatch once per dtype on small problems */
      if (rank == 0 && R.m * R.n * R.k * R.batches <= 200000) {
        verdict vd;
        run_one(tc, &R, v, 1, list[0], MUT_NONE, &vd);
      }
      rank++;
    }
    ck_assert_msg(runs_t > 0, "case '%s': no C DualGemm variant ran for %s", tc->name, tu_dtype_name((kg_dtype)t));
    /* where the rotation has room, every allowed layout combination ran on some variant of the dtype */
    if (tc->per_variant == 0 || tc->per_variant * rank >= per_max)
      ck_assert_msg((covered & allowed) == allowed, "case '%s' %s: layout combinations 0x%04x not run", tc->name,
                    tu_dtype_name((kg_dtype)t), allowed & ~covered);
    runs += runs_t;
    ref_free(&R);
  }
  if (getenv("KG_TEST_TIMING"))
    fprintf(stderr, "%6.2fs %4d runs  %s\n", (double)(clock() - t0) / CLOCKS_PER_SEC, runs, tc->name);
}
END_TEST

/* The checks must be able to fail: outputs altered after a correct run are caught. */
START_TEST(test_checks_catch_mutants) {
  static const dcase small_int = G1("mutants int 9x7x5", 9, 7, 5, DT_ALL, OP_ALL, LAY_ALL, 0, 1, 1, 1, 1, 1, CN_FULL,
                                    CN_FULL, 0, 2);
  static const dcase small_rand = G1("mutants rand 9x7x5", 9, 7, 5, DT_ALL, OP_ALL, LAY_ALL, 0, 0, 1, 1, 1, 1, CN_FULL,
                                     CN_FULL, 0, 2);
  dvar vars[MAXV];
  const int nv = c_variants(vars, MAXV);
  int tried = 0;
  for (int ci = 0; ci < 2; ci++) {
    const dcase *tc = ci ? &small_rand : &small_int;
    for (int t = 0; t < 3; t++) {
      refdata R;
      ref_build(tc, (kg_dtype)t, 99 + (uint64_t)t, &R);
      for (int vi = 0; vi < nv; vi++) {
        const dvar *v = &vars[vi];
        if (v->type_ab != t) continue;
        verdict vd;
        const unsigned combo = (unsigned)(vi % 16);
        if (v->sd0 && v->sd1) {
          run_one(tc, &R, v, 0, combo, MUT_D1_INTO_D0, &vd);
          ck_assert_msg(vd.bad[0] > 0, "%s %s: D0 holding D1's values was not caught", tc->name, v->name);
          ck_assert_msg(vd.bad[1] == 0, "%s %s: D1 reported wrong after D0 was altered", tc->name, v->name);
          run_one(tc, &R, v, 0, combo, MUT_D1_ZERO, &vd);
          ck_assert_msg(vd.bad[1] == 1, "%s %s: one altered D1 element gave %lld bad", tc->name, v->name,
                        (long long)vd.bad[1]);
          tried++;
        }
        if (v->sd0) {
          run_one(tc, &R, v, 0, combo, MUT_D0_GAP, &vd);
          ck_assert_msg(vd.stray[0] > 0, "%s %s: a write into D0's ld gap was not caught", tc->name, v->name);
        }
        run_one(tc, &R, v, 0, combo, MUT_D2_UNWRITTEN, &vd);
        ck_assert_msg(vd.bad[2] == 1, "%s %s: a poisoned (unwritten) D2 element gave %lld bad", tc->name, v->name,
                      (long long)vd.bad[2]);
        if (tc->ints || v->op != KG_DUAL_MUL) {
          run_one(tc, &R, v, 0, combo, MUT_D2_OFF, &vd);
          ck_assert_msg(vd.bad[2] == 1, "%s %s: an altered D2 element gave %lld bad", tc->name, v->name,
                        (long long)vd.bad[2]);
        }
      }
      ref_free(&R);
    }
  }
  ck_assert_msg(tried >= 3, "no variant stores both D0 and D1 (tried %d)", tried);
}
END_TEST

/* Every dtype has swiglu and geglu (D2 only) and mul with each store combination. */
START_TEST(test_variant_inventory) {
  dvar vars[MAXV];
  const int nv = c_variants(vars, MAXV);
  int have[3][3][4];
  memset(have, 0, sizeof have);
  for (int i = 0; i < nv; i++) {
    ck_assert_str_eq(vars[i].backend, "c");
    if (vars[i].type_ab == vars[i].type_cd) have[vars[i].type_ab][vars[i].op][vars[i].sd0 + 2 * vars[i].sd1]++;
  }
  for (int t = 0; t < 3; t++) {
    ck_assert_msg(have[t][KG_DUAL_SWIGLU][0] >= 1, "%s: no swiglu d2 C variant", tu_dtype_name((kg_dtype)t));
    ck_assert_msg(have[t][KG_DUAL_GEGLU][0] >= 1, "%s: no geglu d2 C variant", tu_dtype_name((kg_dtype)t));
    for (int s = 0; s < 4; s++)
      ck_assert_msg(have[t][KG_DUAL_MUL][s] >= 1, "%s: no mul C variant with store_d0 %d store_d1 %d",
                    tu_dtype_name((kg_dtype)t), s & 1, s >> 1);
  }
}
END_TEST

/* The parser itself. */
START_TEST(test_parse_names) {
  dvar v;
  ck_assert(parse_dual("kg_dualgemm_c_blocked_bf16_mul_xxxx_d0d1d2_64x256x256_a1", &v));
  ck_assert_int_eq(v.type_ab, KG_BF16);
  ck_assert_int_eq(v.op, KG_DUAL_MUL);
  ck_assert(v.sd0 && v.sd1);
  ck_assert_str_eq(v.lay, "xxxx");
  ck_assert(parse_dual("kg_dualgemm_cuda_skinny_f16_geglu_rccr_d1d2_16x64x64_a8", &v));
  ck_assert_int_eq(v.type_ab, KG_F16);
  ck_assert_int_eq(v.op, KG_DUAL_GEGLU);
  ck_assert(!v.sd0 && v.sd1);
  ck_assert_int_eq(v.align, 8);
  ck_assert(!parse_dual("kg_gemm_c_blocked_f32_xxx_64x256x256_a1", &v));
  ck_assert(!parse_dual("kg_dualgemm_c_blocked_f32_relu_xxxx_d2_64x256x256_a1", &v));
  ck_assert(!parse_dual("kg_dualgemm_c_blocked_f32_mul_xxxx_d3_64x256x256_a1", &v));
}
END_TEST

/* ---- validation ------------------------------------------------------------------------------ */

enum { VM = 6, VN = 5, VK = 7, VBUF = 4096 };
static float va[VBUF], vb0[VBUF], vb1[VBUF], vc0[VBUF], vc1[VBUF], vd0[VBUF], vd1[VBUF], vd2[VBUF];
static unsigned char vws[VBUF * 8];

/* A valid f32 row-major swiglu problem writing D2 only, beta 1 with C0 and C1. */
static kg_dualgemm_args vbase(void) {
  for (int i = 0; i < VBUF; i++) {
    va[i] = (float)(i % 5 - 2);
    vb0[i] = (float)(i % 3 - 1);
    vb1[i] = (float)(i % 4 - 2);
    vc0[i] = 1.0f;
    vc1[i] = -1.0f;
  }
  tu_poison(vd0, KG_F32, VBUF);
  tu_poison(vd1, KG_F32, VBUF);
  tu_poison(vd2, KG_F32, VBUF);
  kg_dualgemm_args g;
  memset(&g, 0, sizeof g);
  g.mode = KG_MODE_GEMM;
  g.m = VM; g.n = VN; g.k = VK;
  g.batch_count = 1; g.split_k_slices = 1;
  g.type_ab = g.type_cd = KG_F32;
  g.layout_a = g.layout_b0 = g.layout_b1 = g.layout_cd = KG_ROW;
  g.op = KG_DUAL_SWIGLU;
  g.a = va; g.lda = VK;
  g.b0 = vb0; g.ldb0 = VN;
  g.b1 = vb1; g.ldb1 = VN;
  g.c0 = vc0; g.ldc0 = VN;
  g.c1 = vc1; g.ldc1 = VN;
  g.d2 = vd2; g.ldd2 = VN;
  g.alpha0 = g.alpha1 = 1.0f;
  g.beta0 = g.beta1 = 1.0f;
  return g;
}

static int outputs_untouched(void) {
  for (int i = 0; i < VBUF; i++)
    if (!tu_is_poison(vd0, KG_F32, i) || !tu_is_poison(vd1, KG_F32, i) || !tu_is_poison(vd2, KG_F32, i)) return 0;
  return 1;
}

/* kg_dualgemm, kg_dualgemm_select, kg_dualgemm_workspace_size and kg_explain agree on st (select
** and the size query stop before the workspace check); a failed call writes nothing. Returns the
** explain text. */
static char vwhy[16384];
#define vexpect(g, e, st) vexpect_at(__LINE__, (g), (e), (st))
static const char *vexpect_at(int line, const kg_dualgemm_args *g, const kg_exec *e, kg_status st) {
  const char *name = "sentinel";
  size_t bytes = 12345;
  kg_status s_sel = kg_dualgemm_select(g, e, &name);
  kg_status s_ws = kg_dualgemm_workspace_size(g, e, &bytes);
  kg_status s_ex = kg_explain(KG_OP_DUALGEMM, g, e, vwhy, sizeof vwhy);
  tu_poison(vd0, KG_F32, VBUF);
  tu_poison(vd1, KG_F32, VBUF);
  tu_poison(vd2, KG_F32, VBUF);
  kg_status s_run = kg_dualgemm(g, e);
  ck_assert_msg(s_run == st, "line %d: kg_dualgemm returned '%s', expected '%s'; explain:\n%s", line,
                kg_status_string(s_run), kg_status_string(st), vwhy);
  ck_assert_msg(s_ex == st, "line %d: kg_explain returned '%s', expected '%s':\n%s", line, kg_status_string(s_ex),
                kg_status_string(st), vwhy);
  kg_status st_sel = st == KG_ERROR_WORKSPACE_TOO_SMALL ? KG_SUCCESS : st;
  ck_assert_msg(s_sel == st_sel, "line %d: kg_dualgemm_select returned '%s', expected '%s'", line,
                kg_status_string(s_sel), kg_status_string(st_sel));
  ck_assert_msg(s_ws == st_sel, "line %d: kg_dualgemm_workspace_size returned '%s', expected '%s'", line,
                kg_status_string(s_ws), kg_status_string(st_sel));
  if (st_sel != KG_SUCCESS) {
    ck_assert_msg(name == NULL, "line %d: kg_dualgemm_select left *name set on failure", line);
    ck_assert_msg(bytes == 0, "line %d: kg_dualgemm_workspace_size left *bytes = %zu on failure", line, bytes);
  } else {
    ck_assert_msg(name != NULL && strncmp(name, "kg_dualgemm_", 12) == 0, "line %d: select gave '%s'", line,
                  name ? name : "(null)");
  }
  if (st != KG_SUCCESS) {
    ck_assert_msg(outputs_untouched(), "line %d: failed call ('%s') wrote an output", line, kg_status_string(st));
    ck_assert_msg(vwhy[0] != '\0', "line %d: kg_explain gave no reason for '%s'", line, kg_status_string(st));
  }
  return vwhy;
}

START_TEST(test_v_baseline) {
  kg_dualgemm_args g = vbase();
  kg_exec e = tu_exec_c();
  vexpect(&g, &e, KG_SUCCESS);
  /* the baseline's D2 is right: silu(A.B0 + 1) * (A.B1 - 1) */
  for (int i = 0; i < VM; i++)
    for (int j = 0; j < VN; j++) {
      double x0 = 1.0, x1 = -1.0;
      for (int p = 0; p < VK; p++) {
        x0 += (double)va[i * VK + p] * vb0[p * VN + j];
        x1 += (double)va[i * VK + p] * vb1[p * VN + j];
      }
      double want = op_ref(KG_DUAL_SWIGLU, x0, x1), got = vd2[i * VN + j];
      ck_assert_msg(fabs(got - want) <= 1e-5 * (1.0 + fabs(want)), "D2(%d,%d) = %.9g, expected %.9g", i, j, got, want);
    }
  ck_assert_msg(tu_is_poison(vd2, KG_F32, VM * VN), "D2 written past its end");
}
END_TEST

START_TEST(test_v_null_pointers) {
  kg_exec e = tu_exec_c();
  kg_dualgemm_args g = vbase();
  vexpect(NULL, &e, KG_ERROR_INVALID_ARGUMENT);
  vexpect(&g, NULL, KG_ERROR_INVALID_ARGUMENT);
  g.a = NULL; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.b0 = NULL; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.b1 = NULL; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.d2 = NULL; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  /* c NULL with beta != 0 */
  g = vbase(); g.c0 = NULL; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(vwhy, "c0") != NULL, "explain does not name c0:\n%s", vwhy);
  g = vbase(); g.c1 = NULL; g.beta1 = -0.5f; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(vwhy, "c1") != NULL, "explain does not name c1:\n%s", vwhy);
  /* ... but fine with beta 0 */
  g = vbase(); g.c0 = NULL; g.beta0 = 0.0f; vexpect(&g, &e, KG_SUCCESS);
  g = vbase(); g.c1 = NULL; g.beta1 = 0.0f; g.c0 = NULL; g.beta0 = 0.0f; vexpect(&g, &e, KG_SUCCESS);
  kg_exec bad = tu_exec_c();
  bad.workspace_size = 64;
  g = vbase(); vexpect(&g, &bad, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_v_store_flags) {
  kg_exec e = tu_exec_c();
  kg_dualgemm_args g = vbase();
  g.op = KG_DUAL_MUL;
  g.store_d0 = 1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);              /* d0 NULL */
  ck_assert_msg(strstr(vwhy, "store_d0") != NULL, "explain does not name store_d0:\n%s", vwhy);
  g = vbase(); g.op = KG_DUAL_MUL; g.d0 = vd0; g.ldd0 = VN;
  vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);                              /* store_d0 0, d0 set */
  g = vbase(); g.op = KG_DUAL_MUL; g.store_d1 = 1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(vwhy, "store_d1") != NULL, "explain does not name store_d1:\n%s", vwhy);
  g = vbase(); g.op = KG_DUAL_MUL; g.d1 = vd1; g.ldd1 = VN; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.op = KG_DUAL_MUL; g.store_d0 = 1; g.d0 = vd0; g.ldd0 = VN; g.d1 = vd1; g.ldd1 = VN;
  vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);                              /* d1 set, store_d1 0 */
  /* consistent flags run */
  g.store_d1 = 1;
  vexpect(&g, &e, KG_SUCCESS);
  /* a flag is a truth value: 2 means stored */
  g = vbase(); g.op = KG_DUAL_MUL; g.store_d0 = 2; g.d0 = vd0; g.ldd0 = VN;
  vexpect(&g, &e, KG_SUCCESS);
  ck_assert_msg(strstr(vwhy, "_mul_xxxx_d0d2_") && strstr(vwhy, "chosen"), "store_d0 = 2:\n%s", vwhy);
  /* swiglu has no C variant storing D0: valid arguments, nothing takes them */
  g = vbase(); g.store_d0 = 1; g.d0 = vd0; g.ldd0 = VN;
  vexpect(&g, &e, KG_ERROR_NOT_SUPPORTED);
  ck_assert_msg(strstr(vwhy, "rejected: stores") != NULL, "explain gives no 'stores' reason:\n%s", vwhy);
  /* an output's ld cannot broadcast */
  g = vbase(); g.ldd2 = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.op = KG_DUAL_MUL; g.store_d0 = 1; g.d0 = vd0; g.ldd0 = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.op = KG_DUAL_MUL; g.store_d1 = 1; g.d1 = vd1; g.ldd1 = VN - 1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_v_broadcast_lds) {
  kg_exec e = tu_exec_c();
  kg_dualgemm_args g = vbase();
  g.ldb1 = 0;  /* row-major B1 cannot be a broadcast vector */
  vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(vwhy, "ldb1") != NULL, "explain does not name ldb1:\n%s", vwhy);
  g.layout_b1 = KG_COL;  /* column-major: fine */
  vexpect(&g, &e, KG_SUCCESS);
  g = vbase(); g.ldb0 = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);   /* B0 never broadcasts */
  g = vbase(); g.layout_b0 = KG_COL; g.ldb0 = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.lda = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.ldc0 = 0; g.ldc1 = 0; vexpect(&g, &e, KG_SUCCESS);      /* bias rows */
  g = vbase(); g.ldb1 = VN - 1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.layout_b1 = KG_COL; g.ldb1 = VK - 1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.ldb1 = -1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.ldc1 = -5; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_v_enums) {
  kg_exec e = tu_exec_c();
  kg_dualgemm_args g = vbase();
  g.op = (kg_dual_op)3; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strstr(vwhy, "op") != NULL, "explain does not mention op:\n%s", vwhy);
  g.op = (kg_dual_op)-1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.layout_b1 = (kg_layout)2; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.layout_b0 = (kg_layout)-1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.layout_cd = (kg_layout)7; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.type_ab = (kg_dtype)9; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.mode = (kg_mode)5; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.m = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.n = -1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.k = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.type_cd = KG_F16; vexpect(&g, &e, KG_ERROR_NOT_SUPPORTED);  /* no mixed-type C variant */
  ck_assert_msg(strstr(vwhy, "rejected: types") != NULL, "explain gives no 'types' reason:\n%s", vwhy);
}
END_TEST

START_TEST(test_v_modes) {
  kg_exec e = tu_exec_c();
  kg_dualgemm_args g = vbase();
  /* batched + serial split-K cannot share the grid's z */
  g.mode = KG_MODE_BATCHED; g.batch_count = 2; g.split_k_slices = 2;
  g.batch_stride_a = VM * VK; g.batch_stride_b0 = VK * VN; g.batch_stride_b1 = VK * VN;
  g.batch_stride_c0 = g.batch_stride_c1 = g.batch_stride_d2 = VM * VN;
  vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g.batch_count = 1; vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);   /* even with one batch */
  g.split_k_slices = 1; g.batch_count = 2; vexpect(&g, &e, KG_SUCCESS);
  g.mode = KG_MODE_SPLITK_SERIAL; g.split_k_slices = 2; vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  /* split-K slices in gemm mode, batches in gemm mode */
  g = vbase(); g.split_k_slices = 2; vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g = vbase(); g.batch_count = 2; vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g = vbase(); g.batch_count = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.split_k_slices = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = vbase(); g.mode = KG_MODE_SPLITK_SERIAL; g.split_k_slices = VK + 1; vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g = vbase(); g.mode = KG_MODE_BATCHED; g.batch_count = 0; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  /* overlapping output batches, negative batch stride */
  g = vbase(); g.mode = KG_MODE_BATCHED; g.batch_count = 3;
  g.batch_stride_c0 = g.batch_stride_c1 = 0;
  g.batch_stride_d2 = VM * VN - 1; vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g.batch_stride_d2 = VM * VN; vexpect(&g, &e, KG_SUCCESS);
  g.batch_stride_b1 = -1; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  /* stored D0 / D1 batches must not overlap either */
  g.batch_stride_b1 = 0;
  g.op = KG_DUAL_MUL; g.store_d0 = 1; g.d0 = vd0; g.ldd0 = VN; g.batch_stride_d0 = 0;
  vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  ck_assert_msg(strstr(vwhy, "d0") != NULL, "explain does not name d0:\n%s", vwhy);
  g.batch_stride_d0 = VM * VN; g.store_d1 = 1; g.d1 = vd1; g.ldd1 = VN; g.batch_stride_d1 = 1;
  vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g.batch_stride_d1 = VM * VN + 3; vexpect(&g, &e, KG_SUCCESS);
  /* extents that overflow int64 */
  g.batch_stride_b0 = INT64_MAX / 2; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g.batch_stride_b0 = 0; g.ldd1 = INT64_MAX / 4; vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_v_batch_limit) {
  kg_exec e = tu_exec_c();
  kg_dualgemm_args g = vbase();
  g.m = g.n = g.k = 1;
  g.lda = g.ldb0 = g.ldb1 = g.ldc0 = g.ldc1 = g.ldd2 = 1;
  g.mode = KG_MODE_BATCHED;
  g.batch_stride_a = g.batch_stride_b0 = g.batch_stride_b1 = g.batch_stride_c0 = g.batch_stride_c1 = 0;
  g.batch_stride_d2 = 1;
  const char *name = NULL;
  g.batch_count = KG_MAX_BATCH;
  ck_assert_int_eq(KG_MAX_BATCH, 65535);
  ck_assert_int_eq(kg_dualgemm_select(&g, &e, &name), KG_SUCCESS);
  g.batch_count = KG_MAX_BATCH + 1;
  vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  ck_assert_msg(strstr(vwhy, "65535") != NULL, "explain does not give the limit:\n%s", vwhy);
  g.batch_count = (int64_t)1 << 32;  /* would wrap a 32-bit grid dimension */
  vexpect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  /* the limit itself runs, every batch written: 65535 1x1x1 problems (D2 has one slot per batch) */
  float *a = (float *)tu_alloc(sizeof(float) * KG_MAX_BATCH), *d = (float *)tu_alloc(sizeof(float) * (KG_MAX_BATCH + 1));
  for (int i = 0; i < KG_MAX_BATCH; i++) a[i] = (float)(i % 5 - 2);
  tu_poison(d, KG_F32, KG_MAX_BATCH + 1);
  g.batch_count = KG_MAX_BATCH;
  g.op = KG_DUAL_MUL;
  g.a = a; g.batch_stride_a = 1;
  g.d2 = d;
  g.beta0 = g.beta1 = 0.0f; g.c0 = g.c1 = NULL;
  vb0[0] = 2.0f; vb1[0] = -3.0f;
  ck_assert_int_eq(kg_dualgemm(&g, &e), KG_SUCCESS);
  for (int i = 0; i < KG_MAX_BATCH; i++) {
    float want = a[i] * 2.0f * (a[i] * -3.0f);
    if (d[i] != want) ck_abort_msg("batch %d: D2 = %g, expected %g", i, (double)d[i], (double)want);
  }
  ck_assert(tu_is_poison(d, KG_F32, KG_MAX_BATCH));
  tu_free(a);
  tu_free(d);
}
END_TEST

START_TEST(test_v_workspace) {
  kg_exec e = tu_exec_c();
  kg_dualgemm_args g = vbase();
  size_t need = 0;
  ck_assert_int_eq(kg_dualgemm_workspace_size(&g, &e, &need), KG_SUCCESS);
  ck_assert_uint_eq(need, 0);
  g.mode = KG_MODE_SPLITK_SERIAL;
  for (int s = 2; s <= VK; s++) {
    g.split_k_slices = s;
    ck_assert_int_eq(kg_dualgemm_workspace_size(&g, &e, &need), KG_SUCCESS);
    ck_assert_msg(need >= 2 * VM * VN * sizeof(float), "slices %d: workspace %zu < two m x n f32 sums", s, need);
    ck_assert(need <= sizeof vws);
    e.workspace = NULL; e.workspace_size = 0;
    vexpect(&g, &e, KG_ERROR_WORKSPACE_TOO_SMALL);
    ck_assert_msg(strstr(vwhy, "workspace") != NULL, "explain does not mention the workspace:\n%s", vwhy);
    e.workspace = vws; e.workspace_size = need - 1;
    vexpect(&g, &e, KG_ERROR_WORKSPACE_TOO_SMALL);
    e.workspace_size = need;
    vexpect(&g, &e, KG_SUCCESS);
    e.workspace_size = sizeof vws;
    vexpect(&g, &e, KG_SUCCESS);
    e = tu_exec_c();
  }
  /* with D0 and D1 stored as well */
  g.op = KG_DUAL_MUL; g.store_d0 = g.store_d1 = 1; g.d0 = vd0; g.ldd0 = VN; g.d1 = vd1; g.ldd1 = VN;
  g.split_k_slices = 3;
  ck_assert_int_eq(kg_dualgemm_workspace_size(&g, &e, &need), KG_SUCCESS);
  ck_assert(need >= 2 * VM * VN * sizeof(float));
  e.workspace = vws; e.workspace_size = need;
  vexpect(&g, &e, KG_SUCCESS);
  /* slices 1 in split-K mode is plain gemm: no workspace */
  g.split_k_slices = 1;
  e = tu_exec_c();
  ck_assert_int_eq(kg_dualgemm_workspace_size(&g, &e, &need), KG_SUCCESS);
  ck_assert_uint_eq(need, 0);
  vexpect(&g, &e, KG_SUCCESS);
  /* null out-pointers of the queries */
  ck_assert_int_eq(kg_dualgemm_workspace_size(&g, &e, NULL), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_dualgemm_select(&g, &e, NULL), KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_v_backends_and_forced_names) {
  kg_exec e = tu_exec_c();
  kg_dualgemm_args g = vbase();
  e.variant = "kg_dualgemm_c_no_such_variant";
  vexpect(&g, &e, KG_ERROR_NOT_SUPPORTED);
  ck_assert_msg(strstr(vwhy, "no variant named") != NULL, "explain:\n%s", vwhy);
  /* a GEMM variant's name does not serve DualGemm */
  for (int i = 0; i < kg_variant_count(); i++)
    if (strncmp(kg_variant_name(i), "kg_gemm_c_", 10) == 0) { e.variant = kg_variant_name(i); break; }
  ck_assert_ptr_nonnull(e.variant);
  vexpect(&g, &e, KG_ERROR_NOT_SUPPORTED);
  /* a DualGemm variant of the wrong op, stores or dtype */
  dvar vars[MAXV];
  const int nv = c_variants(vars, MAXV);
  for (int i = 0; i < nv; i++) {
    const dvar *v = &vars[i];
    e.variant = v->name;
    int fits = v->type_ab == KG_F32 && v->op == KG_DUAL_SWIGLU && !v->sd0 && !v->sd1;
    vexpect(&g, &e, fits ? KG_SUCCESS : KG_ERROR_NOT_SUPPORTED);
    const char *want = v->type_ab != KG_F32 ? "rejected: types" : v->op != KG_DUAL_SWIGLU ? "rejected: op" :
                       fits ? "chosen" : "rejected: stores";
    ck_assert_msg(strstr(vwhy, v->name) && strstr(vwhy, want), "forced %s: explain lacks '%s':\n%s", v->name, want,
                  vwhy);
  }
  for (int b = KG_BACKEND_CUDA; b <= KG_BACKEND_HIP; b++) {
    if (kg_backend_available((kg_backend)b)) continue;
    e = tu_exec_c();
    e.backend = (kg_backend)b;
    vexpect(&g, &e, KG_ERROR_BACKEND_UNAVAILABLE);
  }
  e = tu_exec_c();
  e.backend = (kg_backend)7;
  vexpect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* For every C variant: arguments made for it dispatch to it, and kg_explain names it chosen and
** says for every other C DualGemm variant why it was not (op, stores, types), or that it came
** after the chosen one. */
START_TEST(test_v_explain_every_variant) {
  dvar vars[MAXV];
  const int nv = c_variants(vars, MAXV);
  kg_exec e = tu_exec_c();
  for (int i = 0; i < nv; i++) {
    const dvar *v = &vars[i];
    kg_dualgemm_args g = vbase();
    g.type_ab = (kg_dtype)v->type_ab; g.type_cd = (kg_dtype)v->type_cd;
    g.op = (kg_dual_op)v->op;
    g.store_d0 = v->sd0; g.d0 = v->sd0 ? vd0 : NULL; g.ldd0 = VN;
    g.store_d1 = v->sd1; g.d1 = v->sd1 ? vd1 : NULL; g.ldd1 = VN;
    g.layout_b1 = KG_COL; g.ldb1 = 0;  /* broadcast B1 changes nothing in the choice */
    const char *name = NULL;
    ck_assert_int_eq(kg_dualgemm_select(&g, &e, &name), KG_SUCCESS);
    ck_assert_msg(name && strcmp(name, v->name) == 0, "arguments for %s select %s", v->name, name ? name : "(null)");
    ck_assert_int_eq(kg_explain(KG_OP_DUALGEMM, &g, &e, vwhy, sizeof vwhy), KG_SUCCESS);
    char line[300];
    snprintf(line, sizeof line, "%s: chosen", v->name);
    ck_assert_msg(strstr(vwhy, line) != NULL, "explain does not say '%s':\n%s", line, vwhy);
    for (int j = 0; j < nv; j++) {
      if (j == i) continue;
      const dvar *w = &vars[j];
      snprintf(line, sizeof line, "%s: ", w->name);
      const char *at = strstr(vwhy, line);
      ck_assert_msg(at != NULL, "explain for %s does not list %s:\n%s", v->name, w->name, vwhy);
      at += strlen(line);
      if (strncmp(at, "not considered", 14) == 0) {
        ck_assert_msg(w->index > v->index, "%s listed as not considered before the chosen %s", w->name, v->name);
        continue;
      }
      const char *want = w->type_ab != v->type_ab ? "rejected: types" : w->op != v->op ? "rejected: op" : "rejected: stores";
      ck_assert_msg(strncmp(at, want, strlen(want)) == 0, "explain for %s: %s should be '%s':\n%s", v->name, w->name,
                    want, vwhy);
      if (w->type_ab == v->type_ab && w->op != v->op) {
        char opw[64];
        snprintf(opw, sizeof opw, "rejected: op %s, wanted %s", op_name(w->op), op_name(v->op));
        ck_assert_msg(strncmp(at, opw, strlen(opw)) == 0, "explain for %s: %s should say '%s':\n%s", v->name,
                      w->name, opw, vwhy);
      }
    }
    /* the explain text of a failed argument check starts with its verdict */
    g.split_k_slices = 2;
    ck_assert_int_eq(kg_explain(KG_OP_DUALGEMM, &g, &e, vwhy, sizeof vwhy), KG_ERROR_INVALID_PROBLEM);
    ck_assert_msg(strncmp(vwhy, "arguments: ", 11) == 0, "explain of an invalid problem:\n%s", vwhy);
    /* no buffer at all, and an unknown op */
    ck_assert_int_eq(kg_explain(KG_OP_DUALGEMM, &g, &e, NULL, 0), KG_ERROR_INVALID_PROBLEM);
    ck_assert_int_eq(kg_explain((kg_op)9, &g, &e, vwhy, sizeof vwhy), KG_ERROR_INVALID_ARGUMENT);
    /* a tiny buffer is still terminated */
    char tiny[8];
    memset(tiny, 'x', sizeof tiny);
    g.split_k_slices = 1;
    ck_assert_int_eq(kg_explain(KG_OP_DUALGEMM, &g, &e, tiny, sizeof tiny), KG_SUCCESS);
    ck_assert_msg(memchr(tiny, '\0', sizeof tiny) != NULL, "explain overflowed an 8-byte buffer");
  }
}
END_TEST

Suite *dualgemm_suite(void) {
  Suite *s = suite_create("DualGemm");
  TCase *tc = tcase_create("variants");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_dual_case, 0, NCASES);
  tcase_add_test(tc, test_checks_catch_mutants);
  tcase_add_test(tc, test_variant_inventory);
  tcase_add_test(tc, test_parse_names);
  suite_add_tcase(s, tc);
  TCase *tv = tcase_create("validation");
  tcase_set_timeout(tv, 60);
  tcase_add_test(tv, test_v_baseline);
  tcase_add_test(tv, test_v_null_pointers);
  tcase_add_test(tv, test_v_store_flags);
  tcase_add_test(tv, test_v_broadcast_lds);
  tcase_add_test(tv, test_v_enums);
  tcase_add_test(tv, test_v_modes);
  tcase_add_test(tv, test_v_batch_limit);
  tcase_add_test(tv, test_v_workspace);
  tcase_add_test(tv, test_v_backends_and_forced_names);
  tcase_add_test(tv, test_v_explain_every_variant);
  suite_add_tcase(s, tv);
  return s;
}
