/*
** test_gpu_dual.c -- every compiled CUDA DualGemm variant against a
** double-precision reference computed here on the CPU (never against other
** generated code).
**
**   x0 = alpha0 (A.B0) + beta0 C0      x1 = alpha1 (A.B1) + beta1 C1
**   D0 = x0 and D1 = x1 rounded to the output type; D2 = op(D0, D1)
**   op: swiglu x sigmoid(x) y, geglu 0.5 x (1 + tanh(u)) y = x y / (1 + exp(-2u)), u = 0.7978845608 (x + 0.044715 x^3) (the second form, without cancellation for x << 0), mul x y
**
** Built by `make test-gpu` (plain C, libkg + cudart; no Lua, no libcheck).
** Every variant named kg_dualgemm_cuda_<kernel>_<dtype>_<op>_<LLLL>_<stores>_..._a<N> is forced by
** name (kg_exec.variant); op, layouts (r / c / x for A, B0, B1, C/D), stores and alignment come
** from the name. What a kernel takes beyond the name: "skinny" gemm and batched modes, m <= 16;
** "simt" and "tensorop" every mode and size (tensorop: fixed layouts, 16-byte alignment, both
** from the name; broadcast B1 through its B1 tensor map as one K-vector); other kernels are
** probed with kg_explain (and said so).
**   - sizes that are not tile multiples: 1x1x1, 7x37x45, 16x200x520, 129x257x67, 333x250x300
**     (MxNxK), and for skinny every m in 1..16;
**   - random inputs (uniform in (-1, 1); tolerance from K and the output type) and integer inputs
**     in [-2, 2] (D0 / D1 bit-exact, D2 bit-exact for mul, within a few ulps otherwise);
**   - every layout combination the variant accepts on small sizes, one rotating combination on
**     larger ones;
**   - C0 / C1 full, bias vector (ld 0) and NULL with beta 0; padded leading dimensions (input
**     padding holds NaN, so reading it would show);
**   - broadcast B1 (column-major, ldb1 0) in gemm, batched (one K-vector per batch, batch stride K)
**     and split-K, with row-major B0 where the variant allows;
**   - modes gemm, batched (3 and 37 batches, A broadcast with batch stride 0), serial split-K
**     (2 and 3 slices; workspace from kg_dualgemm_workspace_size, poisoned; one byte less must give
**     KG_ERROR_WORKSPACE_TOO_SMALL and write nothing; a second run must give the same bits);
**   - outputs poisoned before each run (0x7fff for 16-bit types, 0x7fbadbad for f32), with guard
**     elements around each buffer and ld / batch gaps: every logical element of D2 (and of D0 / D1
**     when stored) is checked, everything else must still hold the poison; NaN never passes;
**   - inputs unchanged after the run;
**   - skinny: a forced skinny variant refuses m = 17 and split-K (KG_ERROR_NOT_SUPPORTED) and a
**     misaligned lda (KG_ERROR_MISALIGNED_OPERAND);
**   - plain dispatch (no forced variant) of a bf16 swiglu m = 16 problem, A row-major, B0 / B1
**     column-major, aligned, selects a skinny variant and gives the right result;
**   - tensorop variants forced by name: n = 2^31 and B1's ld of 2^40 bytes are refused (the bulk
**     copies' tensor maps: int32 coordinates, strides below 2^40 bytes), a broadcast B1 is taken.
** An argument runs only the variants whose name contains it.
** One line per failing case; last line "N passed, M failed"; exit 1 on any failure, 2 when a CUDA
** call fails.
*/
#include <stdarg.h>

#include "gpu_test.h"

#define VPREFIX "kg_dualgemm_cuda_"

/* ---- element types (conversions in gpu_test.h) ---------------------------------------------- */

#define POISON16 0x7fffu
#define POISON32 0x7fbadbadu

static size_t esize(kg_dtype t) { return t == KG_F32 ? 4 : 2; }
static const char *tname(kg_dtype t) { return t == KG_F32 ? "f32" : t == KG_F16 ? "f16" : "bf16"; }

static double get_el(kg_dtype t, const void *buf, int64_t i) {
  if (t == KG_F32) return ((const float *)buf)[i];
  uint16_t h = ((const uint16_t *)buf)[i];
  return t == KG_BF16 ? bf16_to_f64(h) : f16_to_f64(h);
}
/* Stores v rounded to t (to f32 first, as a kernel does); returns the stored value. */
static double put_el(kg_dtype t, void *buf, int64_t i, double v) {
  float f = (float)v;
  if (t == KG_F32) { ((float *)buf)[i] = f; return f; }
  uint16_t h = t == KG_BF16 ? f32_to_bf16(f) : f32_to_f16(f);
  ((uint16_t *)buf)[i] = h;
  return t == KG_BF16 ? bf16_to_f64(h) : f16_to_f64(h);
}
static double round_to(kg_dtype t, double v) {
  uint32_t tmp;
  return put_el(t, &tmp, 0, v);
}
/* Unit roundoff: 2^-24 (f32), 2^-11 (f16), 2^-8 (bf16). */
static double unit(kg_dtype t) { return t == KG_F32 ? ldexp(1.0, -24) : t == KG_F16 ? ldexp(1.0, -11) : ldexp(1.0, -8); }

static void poison(void *buf, kg_dtype t, int64_t count) {
  for (int64_t i = 0; i < count; i++) {
    if (t == KG_F32) ((uint32_t *)buf)[i] = POISON32;
    else ((uint16_t *)buf)[i] = (uint16_t)POISON16;
  }
}
static int is_poison(const void *buf, kg_dtype t, int64_t i) {
  return t == KG_F32 ? ((const uint32_t *)buf)[i] == POISON32 : ((const uint16_t *)buf)[i] == POISON16;
}

/* ---- RNG: splitmix64 ------------------------------------------------------------------------- */
static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* integers in [-2, 2], or uniform in (-1, 1) and never zero */
static double rng_value(uint64_t *s, int ints) {
  uint64_t r = rng_next(s);
  if (ints) return (double)(int)(r % 5) - 2.0;
  return ((double)(r >> 11) + 0.5) / 9007199254740992.0 * 2.0 - 1.0;
}

/* ---- variants ---------------------------------------------------------------------------------- */

#define MODE_BIT(m) (1u << (m))
#define MODES_ALL (MODE_BIT(KG_MODE_GEMM) | MODE_BIT(KG_MODE_BATCHED) | MODE_BIT(KG_MODE_SPLITK_SERIAL))

typedef struct dvar {
  const char *name;
  char kernel[32];
  kg_dtype tab, tcd;
  int op;              /* kg_dual_op */
  int sd0, sd1;        /* D0 / D1 stored */
  char lay[5];         /* r / c / x: A, B0, B1, C/D */
  int align;
  unsigned modes;      /* MODE_BIT set this test runs */
  int64_t max_m;       /* 0: no limit */
  int skinny;
  int runs;            /* cases run */
} dvar;

static int parse_dtype(const char *s, size_t n, kg_dtype *t) {
  if (n == 3 && !strncmp(s, "f32", 3)) { *t = KG_F32; return 1; }
  if (n == 3 && !strncmp(s, "f16", 3)) { *t = KG_F16; return 1; }
  if (n == 4 && !strncmp(s, "bf16", 4)) { *t = KG_BF16; return 1; }
  return 0;
}

/* kg_dualgemm_cuda_<kernel>_<dtype or XtoY>_<op>_<LLLL>_<stores>_..._a<N> */
static int parse_variant(const char *name, dvar *v) {
  char buf[256], *tok[32];
  int nt = 0;
  memset(v, 0, sizeof *v);
  v->name = name;
  if (strncmp(name, VPREFIX, strlen(VPREFIX)) != 0) return 0;
  snprintf(buf, sizeof buf, "%s", name + strlen(VPREFIX));
  for (char *p = strtok(buf, "_"); p && nt < 32; p = strtok(NULL, "_")) tok[nt++] = p;
  if (nt < 6) return 0;
  snprintf(v->kernel, sizeof v->kernel, "%s", tok[0]);
  const char *dt = tok[1], *to = strstr(dt, "to");
  if (to) {
    if (!parse_dtype(dt, (size_t)(to - dt), &v->tab) || !parse_dtype(to + 2, strlen(to + 2), &v->tcd)) return 0;
  } else {
    if (!parse_dtype(dt, strlen(dt), &v->tab)) return 0;
    v->tcd = v->tab;
  }
  if (!strcmp(tok[2], "swiglu")) v->op = KG_DUAL_SWIGLU;
  else if (!strcmp(tok[2], "geglu")) v->op = KG_DUAL_GEGLU;
  else if (!strcmp(tok[2], "mul")) v->op = KG_DUAL_MUL;
  else return 0;
  if (strlen(tok[3]) != 4 || strspn(tok[3], "rcx") != 4) return 0;
  memcpy(v->lay, tok[3], 5);
  if (!strcmp(tok[4], "d2")) { v->sd0 = 0; v->sd1 = 0; }
  else if (!strcmp(tok[4], "d0d2")) { v->sd0 = 1; v->sd1 = 0; }
  else if (!strcmp(tok[4], "d1d2")) { v->sd0 = 0; v->sd1 = 1; }
  else if (!strcmp(tok[4], "d0d1d2")) { v->sd0 = 1; v->sd1 = 1; }
  else return 0;
  const char *last = tok[nt - 1];
  v->align = 1;
  if (last[0] == 'a' && last[1] >= '0' && last[1] <= '9') v->align = atoi(last + 1);
  return v->align >= 1;
}

static int letter_ok(char L, int l) { return L == 'x' || (L == 'r' && l == KG_ROW) || (L == 'c' && l == KG_COL); }
static const char *op_name(int op) {
  return op == KG_DUAL_SWIGLU ? "swiglu" : op == KG_DUAL_GEGLU ? "geglu" : op == KG_DUAL_MUL ? "mul" : "?";
}

/* ---- the reference ----------------------------------------------------------------------------- */

static double op_ref(int op, double x, double y) {
  switch (op) {
    case KG_DUAL_SWIGLU: return x / (1.0 + exp(-x)) * y;
    case KG_DUAL_GEGLU: return x / (1.0 + exp(-1.5957691216057308 * (x + 0.044715 * x * x * x))) * y;
    case KG_DUAL_MUL: return x * y;
  }
  return NAN;
}

enum { CM_NONE = 0, CM_FULL, CM_BIAS };

typedef struct tcase {
  const char *name;
  kg_mode mode;
  int64_t m, n, k, batch, slices;
  int ints;
  float alpha0, beta0, alpha1, beta1;
  int c0, c1;          /* CM_NONE (NULL, beta 0), CM_FULL, CM_BIAS (ld 0: one row / column) */
  int vec_b1;          /* B1 column-major with ldb1 0 */
  int bcast_a;         /* batched: batch_stride_a 0 */
  int all;             /* every accepted layout combination; else one, rotating */
  int b0_row;          /* B0 row-major when the variant takes it */
  int pad, gap;        /* extra elements on lds / between batches */
  int skinny_only;
  kg_status expect;    /* KG_SUCCESS, or the refusal a forced variant must give */
  int misalign;        /* lda one more than aligned */
} tcase;

#define GEMM(nm, m, n, k, ints, a0, b0, a1, b1, c0, c1, vec, all, b0r, pad) \
  { nm, KG_MODE_GEMM, m, n, k, 1, 1, ints, a0, b0, a1, b1, c0, c1, vec, 0, all, b0r, pad, 0, 0, KG_SUCCESS, 0 }
#define BATCH(nm, m, n, k, bt, ints, a0, b0, a1, b1, c0, c1, vec, ba, all, b0r, gap) \
  { nm, KG_MODE_BATCHED, m, n, k, bt, 1, ints, a0, b0, a1, b1, c0, c1, vec, ba, all, b0r, 0, gap, 0, KG_SUCCESS, 0 }
#define SPLITK(nm, m, n, k, s, ints, a0, b0, a1, b1, c0, c1, vec, all, b0r, pad) \
  { nm, KG_MODE_SPLITK_SERIAL, m, n, k, 1, s, ints, a0, b0, a1, b1, c0, c1, vec, 0, all, b0r, pad, 0, 0, KG_SUCCESS, 0 }

static const tcase base_cases[] = {
  /* gemm */
  GEMM("1x1x1 int C full", 1, 1, 1, 1, 1, 1, 2, -1, CM_FULL, CM_FULL, 0, 1, 0, 0),
  GEMM("1x1x1 rand c=NULL", 1, 1, 1, 0, 1, 0, -1.5f, 0, CM_NONE, CM_NONE, 0, 1, 0, 3),
  GEMM("7x37x45 int C full, padded lds", 7, 37, 45, 1, 1, -1, 1, 2, CM_FULL, CM_FULL, 0, 1, 0, 5),
  GEMM("7x37x45 rand bias (ldc 0)", 7, 37, 45, 0, 0.5f, 1, 1.5f, -1, CM_BIAS, CM_BIAS, 0, 1, 0, 0),
  GEMM("7x37x45 int bcast B1 (ldb1 0)", 7, 37, 45, 1, 1, 1, 1, 0, CM_FULL, CM_NONE, 1, 1, 0, 1),
  GEMM("16x200x520 rand C0 full, c1=NULL", 16, 200, 520, 0, 1, 1, 1, 0, CM_FULL, CM_NONE, 0, 0, 0, 0),
  GEMM("16x200x520 int bias C0, C1 full", 16, 200, 520, 1, 1, 2, 1, -1, CM_BIAS, CM_FULL, 0, 0, 0, 2),
  GEMM("16x200x520 int bcast B1, B0 row, bias C1", 16, 200, 520, 1, 1, 0, 1, 1, CM_NONE, CM_BIAS, 1, 0, 1, 0),
  GEMM("129x257x67 rand C full", 129, 257, 67, 0, 1, -0.5f, 1, 1, CM_FULL, CM_FULL, 0, 0, 0, 1),
  GEMM("129x257x67 int bcast B1, B0 row, bias C0", 129, 257, 67, 1, 1, 1, 1, 0, CM_BIAS, CM_NONE, 1, 0, 1, 0),
  GEMM("333x250x300 rand bias C0, C1 full", 333, 250, 300, 0, 1, 1, -1, 0.5f, CM_BIAS, CM_FULL, 0, 0, 0, 0),
  GEMM("333x250x300 int c=NULL alpha0 2", 333, 250, 300, 1, 2, 0, 1, 0, CM_NONE, CM_NONE, 0, 0, 0, 3),
  /* batched */
  BATCH("7x37x45 x3 int C full", 7, 37, 45, 3, 1, 1, 1, 1, -1, CM_FULL, CM_FULL, 0, 0, 1, 0, 3),
  BATCH("7x37x45 x37 rand bcast A (bs 0), c=NULL", 7, 37, 45, 37, 0, 1, 0, -1, 0, CM_NONE, CM_NONE, 0, 1, 1, 0, 0),
  BATCH("16x200x520 x3 rand bcast B1 (bs K), bias", 16, 200, 520, 3, 0, 1, 1, 1, 0.5f, CM_BIAS, CM_BIAS, 1, 0, 0, 0, 1),
  BATCH("16x37x45 x37 int bcast A, bcast B1, B0 row", 16, 37, 45, 37, 1, 1, 1, 1, 0, CM_FULL, CM_NONE, 1, 1, 0, 1, 2),
  BATCH("129x257x67 x3 int bcast B1, B0 row, C full", 129, 257, 67, 3, 1, 1, 1, 1, 1, CM_FULL, CM_FULL, 1, 0, 0, 1, 0),
  BATCH("129x257x67 x37 rand C0 full", 129, 257, 67, 37, 0, 1, 1, 1, 0, CM_FULL, CM_NONE, 0, 0, 0, 0, 5),
  /* serial split-K */
  SPLITK("7x37x45 s2 int C full", 7, 37, 45, 2, 1, 1, 1, 1, -1, CM_FULL, CM_FULL, 0, 1, 0, 0),
  SPLITK("7x37x45 s3 rand bias", 7, 37, 45, 3, 0, 1, 1, -0.5f, 1, CM_BIAS, CM_BIAS, 0, 1, 0, 2),
  SPLITK("16x200x520 s2 int bcast B1, B0 row", 16, 200, 520, 2, 1, 1, 1, 1, 0, CM_BIAS, CM_NONE, 1, 0, 1, 0),
  SPLITK("129x257x67 s3 rand C0 full", 129, 257, 67, 3, 0, 1, 0.5f, 1, 0, CM_FULL, CM_NONE, 0, 0, 0, 1),
  SPLITK("333x250x300 s3 int C full", 333, 250, 300, 3, 1, 1, 1, 1, 1, CM_FULL, CM_FULL, 0, 0, 0, 0),
  SPLITK("333x250x300 s2 rand bias, bcast B1", 333, 250, 300, 2, 0, 1, 1, 1, 0, CM_BIAS, CM_NONE, 1, 0, 0, 0),
};
#define N_BASE ((int)(sizeof base_cases / sizeof base_cases[0]))

/* Cases added in main: skinny m sweep, refusals. */
enum { MAX_CASES = 96 };
static tcase cases[MAX_CASES];
static char case_names[MAX_CASES][96];
static int ncases;

/* Logical inputs (already rounded to the type, row-major per batch) and the two products. */
typedef struct refdata {
  kg_dtype t;
  int64_t m, n, k, batches;
  int64_t nbA, nbB, nbC, cvec;
  double *A, *B0, *B1, *C0, *C1;      /* B1: k per batch when vec_b1; C: m x n or cvec per batch */
  double *acc0, *acc1, *abs0, *abs1;  /* batches x m x n */
} refdata;

static double *dalloc(int64_t n) { return (double *)xmalloc(sizeof(double) * (size_t)(n > 0 ? n : 1)); }

/* acc = A.B (B k x n row-major, or the vector v when vec), abs = |A|.|B| */
static void ref_product(int64_t m, int64_t n, int64_t k, const double *A, const double *B, int vec, double *acc,
                        double *abs_acc) {
  for (int64_t i = 0; i < m; i++) {
    double *o = acc + i * n, *s = abs_acc + i * n;
    for (int64_t j = 0; j < n; j++) o[j] = s[j] = 0.0;
    for (int64_t p = 0; p < k; p++) {
      const double av = A[i * k + p], aa = fabs(av);
      if (vec) {
        for (int64_t j = 0; j < n; j++) { o[j] += av * B[p]; s[j] += aa * fabs(B[p]); }
      } else {
        const double *bp = B + p * n;
        for (int64_t j = 0; j < n; j++) { o[j] += av * bp[j]; s[j] += aa * fabs(bp[j]); }
      }
    }
  }
}

static void ref_build(const tcase *tc, kg_dtype t, uint64_t seed, refdata *R) {
  memset(R, 0, sizeof *R);
  const int batched = tc->mode == KG_MODE_BATCHED;
  const int64_t m = tc->m, n = tc->n, k = tc->k, nb = batched ? tc->batch : 1;
  R->t = t; R->m = m; R->n = n; R->k = k; R->batches = nb;
  R->nbA = tc->bcast_a ? 1 : nb;
  R->nbB = nb;
  R->nbC = nb;
  R->cvec = m > n ? m : n;
  const int64_t b1e = tc->vec_b1 ? k : k * n;
  R->A = dalloc(R->nbA * m * k);
  R->B0 = dalloc(nb * k * n);
  R->B1 = dalloc(nb * b1e);
  uint64_t s = seed;
  for (int64_t i = 0; i < R->nbA * m * k; i++) R->A[i] = round_to(t, rng_value(&s, tc->ints));
  for (int64_t i = 0; i < nb * k * n; i++) R->B0[i] = round_to(t, rng_value(&s, tc->ints));
  for (int64_t i = 0; i < nb * b1e; i++) R->B1[i] = round_to(t, rng_value(&s, tc->ints));
  const int cm[2] = { tc->c0, tc->c1 };
  double **cp[2] = { &R->C0, &R->C1 };
  for (int q = 0; q < 2; q++) {
    int64_t e = cm[q] == CM_FULL ? m * n : cm[q] == CM_BIAS ? R->cvec : 0;
    if (!e) continue;
    *cp[q] = dalloc(nb * e);
    for (int64_t i = 0; i < nb * e; i++) (*cp[q])[i] = round_to(t, rng_value(&s, tc->ints));
  }
  R->acc0 = dalloc(nb * m * n); R->acc1 = dalloc(nb * m * n);
  R->abs0 = dalloc(nb * m * n); R->abs1 = dalloc(nb * m * n);
  for (int64_t z = 0; z < nb; z++) {
    const double *Az = R->A + (R->nbA > 1 ? z : 0) * m * k;
    ref_product(m, n, k, Az, R->B0 + z * k * n, 0, R->acc0 + z * m * n, R->abs0 + z * m * n);
    ref_product(m, n, k, Az, R->B1 + z * b1e, tc->vec_b1, R->acc1 + z * m * n, R->abs1 + z * m * n);
  }
}

static void ref_free(refdata *R) {
  free(R->A); free(R->B0); free(R->B1); free(R->C0); free(R->C1);
  free(R->acc0); free(R->acc1); free(R->abs0); free(R->abs1);
  memset(R, 0, sizeof *R);
}

/* ---- device memory: one arena, carved per run -------------------------------------------------- */

static struct { unsigned char *base; size_t cap, used; } g_arena;

static void *arena_alloc(size_t bytes) {
  size_t off = (g_arena.used + 255) & ~(size_t)255;
  if (off + bytes > g_arena.cap) {
    printf("FAIL test: device arena of %zu MB too small\n", g_arena.cap >> 20);
    g_fail++;
    summary();
    exit(2);
  }
  g_arena.used = off + bytes;
  return g_arena.base + off;
}

enum { GUARD = 64 };  /* elements before and after every buffer; a multiple of any alignment */

typedef struct dbuf {
  int used;
  kg_dtype t;
  int layout;
  int64_t ld, ext, bs, step, nb, total;  /* total: elements of all batches, without guards */
  size_t bytes;                           /* with guards */
  unsigned char *h, *hcopy;               /* host image with guards */
  unsigned char *d;                       /* device image with guards */
  void *p;                                /* device pointer passed: d + GUARD elements */
} dbuf;

static void strides(int l, int64_t ld, int64_t *rs, int64_t *cs) {
  if (l == KG_ROW) { *rs = ld; *cs = 1; } else { *rs = 1; *cs = ld; }
}
static int64_t extent(int l, int64_t rows, int64_t cols, int64_t ld) {
  int64_t rs, cs;
  strides(l, ld, &rs, &cs);
  return (rows - 1) * rs + (cols - 1) * cs + 1;
}
static int64_t min_ld(int l, int64_t rows, int64_t cols) { return l == KG_ROW ? cols : rows; }
static int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static void buf_alloc(dbuf *o, kg_dtype t, int l, int64_t ld, int64_t ext, int64_t bs, int64_t nb) {
  memset(o, 0, sizeof *o);
  o->used = 1;
  o->t = t; o->layout = l; o->ld = ld; o->ext = ext; o->bs = bs; o->nb = nb;
  o->step = nb > 1 ? bs : 0;
  o->total = o->step * (nb - 1) + ext;
  o->bytes = (size_t)(o->total + 2 * GUARD) * esize(t);
  o->h = (unsigned char *)xmalloc(o->bytes);
  poison(o->h, t, o->total + 2 * GUARD);
  o->d = (unsigned char *)arena_alloc(o->bytes);
  o->p = o->d + GUARD * esize(t);
}
static void *hp(const dbuf *o) { return o->h + GUARD * esize(o->t); }

/* Stores logical rows x cols matrices (per batch `per` elements apart; element (i, j) at
** i * lrs + j * lcs) into o's host image. */
static void store(dbuf *o, int64_t rows, int64_t cols, const double *src, int64_t per, int64_t lrs, int64_t lcs) {
  int64_t rs, cs;
  strides(o->layout, o->ld, &rs, &cs);
  for (int64_t z = 0; z < o->nb; z++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) put_el(o->t, hp(o), z * o->step + i * rs + j * cs, src[z * per + i * lrs + j * lcs]);
}
static void upload(dbuf *o) { CK(cudaMemcpyAsync(o->d, o->h, o->bytes, cudaMemcpyHostToDevice, g_stream)); }
static void download(dbuf *o) { CK(cudaMemcpyAsync(o->h, o->d, o->bytes, cudaMemcpyDeviceToHost, g_stream)); }
static void buf_free(dbuf *o) {
  free(o->h);
  free(o->hcopy);
  memset(o, 0, sizeof *o);
}

/* ---- one run ------------------------------------------------------------------------------------ */

static const char *lname(int l) { return l == KG_ROW ? "r" : "c"; }
static const char *mode_name(kg_mode m) {
  return m == KG_MODE_GEMM ? "gemm" : m == KG_MODE_BATCHED ? "batched" : "splitk";
}

static char g_what[512];

static void failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void failf(const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  printf("FAIL %s: %s\n", g_what, msg);
  fflush(stdout);
}

static void explain_line(const kg_dualgemm_args *g, const kg_exec *e, char *out, size_t cap) {
  kg_explain(KG_OP_DUALGEMM, g, e, out, cap);
  for (char *q = out; *q; q++)
    if (*q == '\n') *q = ';';
}

/* Verdict of an output comparison, per output. */
typedef struct verdict {
  int64_t bad[3], checked[3], stray[3];
  char first[3][320];
  char stray_at[3][80];
} verdict;

/* Runs case tc on R with variant v (forced, or dispatch when force is NULL) and layout
** combination combo (la*8 + lb0*4 + lb1*2 + lcd, 0 row 1 col). Returns 1 passed, 0 failed. */
static int run_one(const tcase *tc, const refdata *R, const dvar *v, const char *force, unsigned combo) {
  const kg_dtype t = R->t;
  const int64_t m = R->m, n = R->n, k = R->k, batches = R->batches;
  const int batched = tc->mode == KG_MODE_BATCHED;
  const int la = (combo >> 3) & 1, lb0 = (combo >> 2) & 1, lb1 = tc->vec_b1 ? KG_COL : (int)((combo >> 1) & 1),
            lcd = combo & 1;
  const int sd[2] = { v->sd0, v->sd1 };
  const int op = v->op;
  const int64_t al = v->align;
  int ok = 1;
  snprintf(g_what, sizeof g_what, "%s%s | %s | %s %lldx%lldx%lld batch %lld slices %lld | %s A %s B0 %s B1 %s%s CD %s",
           force ? force : "(dispatch) ", force ? "" : v->name, tc->name, mode_name(tc->mode), (long long)m,
           (long long)n, (long long)k, (long long)tc->batch, (long long)tc->slices, tname(t), lname(la), lname(lb0),
           lname(lb1), tc->vec_b1 ? "(ldb1 0)" : "", lname(lcd));

  g_arena.used = 0;
  const int64_t pad = tc->pad, pz = pad > 0, junk = 3;
  /* batched: batch stride = extent + gap (+ per-operand extra), aligned; 0 when broadcast.
  ** Other modes ignore batch strides: pass junk. */
#define BS(ext, bc, extra) (!batched ? junk : (bc) ? 0 : round_up((ext) + tc->gap + (extra), al))
#define NB(bc) (batched && !(bc) ? batches : 1)
  dbuf A, B0, B1, C[2], D[3];
  memset(C, 0, sizeof C);
  memset(D, 0, sizeof D);
  int64_t ld = round_up(min_ld(la, m, k) + pad, al) + (tc->misalign ? 1 : 0);
  int64_t e = extent(la, m, k, ld);
  buf_alloc(&A, t, la, ld, e, BS(e, tc->bcast_a, 0), NB(tc->bcast_a));
  ld = round_up(min_ld(lb0, k, n) + pad + pz, al);
  e = extent(lb0, k, n, ld);
  buf_alloc(&B0, t, lb0, ld, e, BS(e, 0, 1), NB(0));
  if (tc->vec_b1) {
    buf_alloc(&B1, t, KG_COL, 0, k, BS(k, 0, 0), NB(0));
  } else {
    ld = round_up(min_ld(lb1, k, n) + pad + 2 * pz, al);
    e = extent(lb1, k, n, ld);
    buf_alloc(&B1, t, lb1, ld, e, BS(e, 0, 2), NB(0));
  }
  const int cm[2] = { tc->c0, tc->c1 };
  for (int q = 0; q < 2; q++) {
    if (cm[q] == CM_NONE) continue;
    if (cm[q] == CM_BIAS) {
      e = lcd == KG_ROW ? n : m;
      buf_alloc(&C[q], t, lcd, 0, e, BS(e, 0, q + 1), NB(0));
    } else {
      ld = round_up(min_ld(lcd, m, n) + pad + (3 + q) * pz, al);
      e = extent(lcd, m, n, ld);
      buf_alloc(&C[q], t, lcd, ld, e, BS(e, 0, q + 1), NB(0));
    }
  }
  for (int q = 0; q < 3; q++) {
    if (q < 2 && !sd[q]) continue;
    ld = round_up(min_ld(lcd, m, n) + pad + (q == 2 ? 0 : q + 1) * pz, al);
    e = extent(lcd, m, n, ld);
    buf_alloc(&D[q], t, lcd, ld, e, batched ? round_up(e + tc->gap + (q == 2 ? 0 : 2 + q), al) : junk, batches);
  }
#undef BS
#undef NB

  /* logical values in; padding stays NaN */
  store(&A, m, k, R->A, m * k, k, 1);
  store(&B0, k, n, R->B0, k * n, n, 1);
  if (tc->vec_b1) store(&B1, k, 1, R->B1, k, 1, 0);
  else store(&B1, k, n, R->B1, k * n, n, 1);
  const double *Cl[2] = { R->C0, R->C1 };
  for (int q = 0; q < 2; q++) {
    if (cm[q] == CM_FULL) store(&C[q], m, n, Cl[q], m * n, n, 1);
    else if (cm[q] == CM_BIAS && lcd == KG_ROW) store(&C[q], 1, n, Cl[q], R->cvec, 0, 1);
    else if (cm[q] == CM_BIAS) store(&C[q], m, 1, Cl[q], R->cvec, 1, 0);
  }
  dbuf *ins[5] = { &A, &B0, &B1, &C[0], &C[1] };
  for (int i = 0; i < 5; i++) {
    if (!ins[i]->used) continue;
    ins[i]->hcopy = (unsigned char *)xmalloc(ins[i]->bytes);
    memcpy(ins[i]->hcopy, ins[i]->h, ins[i]->bytes);
    upload(ins[i]);
  }
  for (int q = 0; q < 3; q++)
    if (D[q].used) upload(&D[q]);

  kg_dualgemm_args g;
  memset(&g, 0, sizeof g);
  g.mode = tc->mode;
  g.m = m; g.n = n; g.k = k;
  g.batch_count = batches;
  g.split_k_slices = tc->mode == KG_MODE_SPLITK_SERIAL ? tc->slices : 1;
  g.type_ab = g.type_cd = t;
  g.layout_a = (kg_layout)la; g.layout_b0 = (kg_layout)lb0; g.layout_b1 = (kg_layout)lb1;
  g.layout_cd = (kg_layout)lcd;
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
  g.alpha0 = tc->alpha0; g.beta0 = cm[0] == CM_NONE ? 0.0f : tc->beta0;
  g.alpha1 = tc->alpha1; g.beta1 = cm[1] == CM_NONE ? 0.0f : tc->beta1;
  const float alpha[2] = { g.alpha0, g.alpha1 }, beta[2] = { g.beta0, g.beta1 };

  kg_exec ex;
  memset(&ex, 0, sizeof ex);
  ex.backend = BACKEND;
  ex.stream = (void *)g_stream;
  ex.variant = force;
  static char why[8192];
  unsigned char *wsp = NULL;
  size_t need = 0;
  kg_status st;
  const int splitk = tc->mode == KG_MODE_SPLITK_SERIAL && tc->slices > 1;

  /* ---- refusals: the call must fail with tc->expect and write nothing ---- */
  if (tc->expect != KG_SUCCESS) {
    st = kg_dualgemm(&g, &ex);
    CK(cudaStreamSynchronize(g_stream));
    CK(cudaGetLastError());
    if (st != tc->expect) {
      explain_line(&g, &ex, why, sizeof why);
      failf("kg_dualgemm returned '%s', expected '%s' (explain: %s)", kg_status_string(st),
            kg_status_string(tc->expect), why);
      ok = 0;
    }
    const char *sel = "sentinel";
    kg_status ss = kg_dualgemm_select(&g, &ex, &sel);
    if (ss != tc->expect) {
      failf("kg_dualgemm_select returned '%s', expected '%s'", kg_status_string(ss), kg_status_string(tc->expect));
      ok = 0;
    }
    goto check_untouched;
  }

  /* ---- select and workspace ---- */
  {
    const char *sel = NULL;
    st = kg_dualgemm_select(&g, &ex, &sel);
    if (st != KG_SUCCESS || !sel || strcmp(sel, v->name) != 0) {
      explain_line(&g, &ex, why, sizeof why);
      failf("select gave '%s' (%s), expected %s; explain: %s", sel ? sel : "nothing", kg_status_string(st), v->name,
            why);
      ok = 0;
      goto done;
    }
    ex.variant = sel;  /* dispatch: the rest runs the chosen one */
  }
  st = kg_dualgemm_workspace_size(&g, &ex, &need);
  if (st != KG_SUCCESS) {
    failf("workspace query: %s", kg_status_string(st));
    ok = 0;
    goto done;
  }
  if (splitk && need < (size_t)(2 * m * n) * sizeof(float)) {
    failf("split-K workspace %zu bytes < two m x n f32 sums (%lld)", need, (long long)(2 * m * n * 4));
    ok = 0;
  }
  if (need > 0) {
    wsp = (unsigned char *)arena_alloc(need);
    CK(cudaMemsetAsync(wsp, 0xff, need, g_stream));  /* NaN as f32: the kernel must initialize what it reads */
    ex.workspace = wsp;
    ex.workspace_size = need - 1;
    st = kg_dualgemm(&g, &ex);
    if (st != KG_ERROR_WORKSPACE_TOO_SMALL) {
      failf("workspace of %zu bytes (need %zu) gave '%s', expected '%s'", need - 1, need, kg_status_string(st),
            kg_status_string(KG_ERROR_WORKSPACE_TOO_SMALL));
      ok = 0;
    }
    CK(cudaStreamSynchronize(g_stream));
    /* nothing written by the refused call: the outputs still hold the poison */
    for (int q = 0; q < 3; q++) {
      if (!D[q].used) continue;
      download(&D[q]);
      CK(cudaStreamSynchronize(g_stream));
      for (int64_t i = 0; i < D[q].total + 2 * GUARD; i++)
        if (!is_poison(D[q].h, t, i)) {
          failf("the call refused for its workspace wrote D%d (offset %lld)", q, (long long)(i - GUARD));
          ok = 0;
          poison(D[q].h, t, D[q].total + 2 * GUARD);
          upload(&D[q]);
          break;
        }
    }
    ex.workspace_size = need;
  }
  st = kg_dualgemm(&g, &ex);
  if (st != KG_SUCCESS) {
    explain_line(&g, &ex, why, sizeof why);
    failf("kg_dualgemm returned '%s' %s(workspace %zu bytes); explain: %s", kg_status_string(st),
          st == KG_ERROR_BACKEND ? kg_last_backend_error() : "", need, why);
    ok = 0;
    goto done;
  }
  CK(cudaStreamSynchronize(g_stream));
  CK(cudaGetLastError());
  for (int q = 0; q < 3; q++)
    if (D[q].used) download(&D[q]);
  CK(cudaStreamSynchronize(g_stream));

  /* ---- element checks ---- */
  {
    verdict vd;
    memset(&vd, 0, sizeof vd);
    const double ut = unit(t), u32 = ldexp(1.0, -24);
    const double floor_abs = t == KG_F16 ? ldexp(1.0, -24) : 1e-37;
    const double dbound = op == KG_DUAL_MUL ? 1.0 : 1.2; /* max |f'|: silu 1.10, gelu_tanh 1.13, x 1 */
    const double *acc[2] = { R->acc0, R->acc1 }, *sabs[2] = { R->abs0, R->abs1 };
    int64_t drs[3] = { 0, 0, 0 }, dcs[3] = { 0, 0, 0 };
    unsigned char *written[3] = { NULL, NULL, NULL };
    for (int q = 0; q < 3; q++)
      if (D[q].used) {
        strides(lcd, D[q].ld, &drs[q], &dcs[q]);
        written[q] = (unsigned char *)calloc((size_t)D[q].total, 1);
        if (!written[q]) { fprintf(stderr, "out of host memory\n"); exit(2); }
      }
    for (int64_t z = 0; z < batches; z++)
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          const int64_t r = z * m * n + i * n + j;
          double xr[2], ek[2];  /* the value the op saw (as far as known), a bound on its error */
          for (int q = 0; q < 2; q++) {
            double cv = 0.0;
            if (beta[q] != 0.0f) {
              if (cm[q] == CM_FULL) cv = Cl[q][z * m * n + i * n + j];
              else if (cm[q] == CM_BIAS) cv = Cl[q][z * R->cvec + (lcd == KG_ROW ? j : i)];
            }
            const double x = (double)alpha[q] * acc[q][r] + (double)beta[q] * cv;
            double tol;
            if (tc->ints) {
              tol = 0.0;  /* exact in f32, rounded once to the output type */
            } else {
              /* f32 accumulation (any order) and the epilogue, then the output rounding */
              tol = 2.0 * (fabs((double)alpha[q]) * sabs[q][r] * (double)(k + 2) * u32 + fabs((double)beta[q] * cv) * 2.0 * u32 +
                           fabs(x) * ut) + floor_abs;
            }
            xr[q] = round_to(t, x);
            ek[q] = tol;
            if (!sd[q]) continue;
            const int64_t di = z * D[q].step + i * drs[q] + j * dcs[q];
            written[q][di] = 1;
            const double got = get_el(t, hp(&D[q]), di);
            const double want = tc->ints ? xr[q] : x;
            const double err = fabs(got - want);
            vd.checked[q]++;
            if (!(err <= tol)) {
              if (vd.bad[q]++ == 0)
                snprintf(vd.first[q], sizeof vd.first[q],
                         "batch %lld D%d(%lld,%lld) = %.9g, expected %.9g (err %.3g, tol %.3g)", (long long)z, q,
                         (long long)i, (long long)j, got, want, err, tol);
            } else {
              xr[q] = got;  /* correct: D2 must be op of exactly this value */
              ek[q] = 0.0;
            }
          }
          double ref, tol;
          if (ek[0] == 0.0 && ek[1] == 0.0 && op == KG_DUAL_MUL) {
            ref = round_to(t, (double)(float)(xr[0] * xr[1]));  /* one f32 rounding, then to t */
            tol = 0.0;
          } else {
            ref = op_ref(op, xr[0], xr[1]);
            const double fx = fabs(op_ref(op, xr[0], 1.0));
            const double prop = dbound * ek[0] * fabs(xr[1]) + (fx + dbound * ek[0]) * ek[1];
            const double eval = op == KG_DUAL_MUL ? 2.0 * u32 * fabs(ref) : 16.0 * u32 * (fabs(xr[0] * xr[1]) + fabs(ref));
            tol = 2.0 * (prop + eval) + 4.0 * ut * (fabs(ref) + prop + eval) + floor_abs;
          }
          const int64_t di = z * D[2].step + i * drs[2] + j * dcs[2];
          written[2][di] = 1;
          const double got = get_el(t, hp(&D[2]), di);
          const double err = isinf(ref) && got == ref ? 0.0 : fabs(got - ref);  /* overflow to inf agrees */
          vd.checked[2]++;
          if (!(err <= tol) && vd.bad[2]++ == 0)
            snprintf(vd.first[2], sizeof vd.first[2],
                     "batch %lld D2(%lld,%lld) = %.9g, expected %s(%.9g, %.9g) = %.9g (err %.3g, tol %.3g)",
                     (long long)z, (long long)i, (long long)j, got, op_name(op), xr[0], xr[1], ref, err, tol);
        }
    /* everything else in the output allocations still holds the poison (guards, ld and batch gaps) */
    for (int q = 0; q < 3; q++) {
      if (!D[q].used) continue;
      const unsigned char *h = D[q].h;
      for (int64_t i = 0; i < D[q].total + 2 * GUARD; i++) {
        const int64_t li = i - GUARD;
        if (li >= 0 && li < D[q].total && written[q][li]) continue;
        if (!is_poison(h, t, i) && vd.stray[q]++ == 0)
          snprintf(vd.stray_at[q], sizeof vd.stray_at[q], "offset %lld from the pointer passed", (long long)li);
      }
      free(written[q]);
    }
    for (int q = 0; q < 3; q++) {
      if (vd.bad[q]) {
        failf("%lld of %lld elements of D%d wrong; first: %s", (long long)vd.bad[q], (long long)vd.checked[q], q,
              vd.first[q]);
        ok = 0;
      }
      if (vd.stray[q]) {
        failf("%lld elements of D%d's allocation outside the output were written (first at %s)",
              (long long)vd.stray[q], q, vd.stray_at[q]);
        ok = 0;
      }
    }
    if (vd.checked[2] != batches * m * n) {
      failf("test bug: checked %lld D2 elements", (long long)vd.checked[2]);
      ok = 0;
    }
  }

  /* ---- serial split-K is deterministic: a second run gives the same bits ---- */
  if (splitk) {
    unsigned char *first[3] = { NULL, NULL, NULL };
    for (int q = 0; q < 3; q++) {
      if (!D[q].used) continue;
      first[q] = (unsigned char *)xmalloc(D[q].bytes);
      memcpy(first[q], D[q].h, D[q].bytes);
      poison(D[q].h, t, D[q].total + 2 * GUARD);
      upload(&D[q]);
    }
    CK(cudaMemsetAsync(wsp, 0xff, need, g_stream));
    st = kg_dualgemm(&g, &ex);
    CK(cudaStreamSynchronize(g_stream));
    CK(cudaGetLastError());
    if (st != KG_SUCCESS) {
      failf("second split-K run returned '%s'", kg_status_string(st));
      ok = 0;
    } else {
      for (int q = 0; q < 3; q++) {
        if (!D[q].used) continue;
        download(&D[q]);
        CK(cudaStreamSynchronize(g_stream));
        if (memcmp(first[q], D[q].h, D[q].bytes) != 0) {
          failf("second split-K run differs in D%d", q);
          ok = 0;
        }
      }
    }
    for (int q = 0; q < 3; q++) free(first[q]);
  }

check_untouched:
  /* inputs unchanged; after a refusal the outputs too */
  for (int i = 0; i < 5; i++) {
    if (!ins[i]->used) continue;
    download(ins[i]);
    CK(cudaStreamSynchronize(g_stream));
    if (memcmp(ins[i]->h, ins[i]->hcopy, ins[i]->bytes) != 0) {
      static const char *nm[5] = { "A", "B0", "B1", "C0", "C1" };
      failf("input %s was modified", nm[i]);
      ok = 0;
    }
  }
  if (tc->expect != KG_SUCCESS)
    for (int q = 0; q < 3; q++) {
      if (!D[q].used) continue;
      download(&D[q]);
      CK(cudaStreamSynchronize(g_stream));
      for (int64_t i = 0; i < D[q].total + 2 * GUARD; i++)
        if (!is_poison(D[q].h, t, i)) {
          failf("refused call wrote D%d (offset %lld)", q, (long long)(i - GUARD));
          ok = 0;
          break;
        }
    }

done:
  CK(cudaStreamSynchronize(g_stream));
  buf_free(&A); buf_free(&B0); buf_free(&B1);
  for (int q = 0; q < 2; q++) buf_free(&C[q]);
  for (int q = 0; q < 3; q++) buf_free(&D[q]);
  if (ok) g_pass++;
  else g_fail++;
  return ok;
}

/* ---- what each kernel takes -------------------------------------------------------------------- */

/* Known kernels: from their templates. Others: asked of the runtime (kg_explain on a problem with
** placeholder pointers, which select never dereferences). */
static void capabilities(dvar *v) {
  if (!strcmp(v->kernel, "skinny")) {
    v->skinny = 1;
    v->modes = MODE_BIT(KG_MODE_GEMM) | MODE_BIT(KG_MODE_BATCHED);
    v->max_m = 16;
    return;
  }
  v->modes = MODES_ALL;
  v->max_m = 0;
  if (!strcmp(v->kernel, "simt") || !strcmp(v->kernel, "tensorop")) return;
  /* probe */
  static char why[8192];
  kg_dualgemm_args g;
  memset(&g, 0, sizeof g);
  const int64_t M = 256, N = 256, K = 256;
  int l[4];
  for (int i = 0; i < 4; i++) l[i] = v->lay[i] == 'c' ? KG_COL : KG_ROW;
  void *fake = (void *)(uintptr_t)0x100000;
  g.m = M; g.n = N; g.k = K; g.batch_count = 1; g.split_k_slices = 1;
  g.type_ab = v->tab; g.type_cd = v->tcd;
  g.layout_a = (kg_layout)l[0]; g.layout_b0 = (kg_layout)l[1]; g.layout_b1 = (kg_layout)l[2]; g.layout_cd = (kg_layout)l[3];
  g.op = (kg_dual_op)v->op;
  g.store_d0 = v->sd0; g.store_d1 = v->sd1;
  g.a = fake; g.lda = K; g.b0 = fake; g.ldb0 = K; g.b1 = fake; g.ldb1 = K;
  g.d0 = v->sd0 ? fake : NULL; g.ldd0 = N; g.d1 = v->sd1 ? fake : NULL; g.ldd1 = N;
  g.d2 = fake; g.ldd2 = N;
  g.alpha0 = g.alpha1 = 1.0f;
  kg_exec ex;
  memset(&ex, 0, sizeof ex);
  ex.backend = BACKEND;
  ex.variant = v->name;
  const kg_mode modes[3] = { KG_MODE_GEMM, KG_MODE_BATCHED, KG_MODE_SPLITK_SERIAL };
  for (int i = 0; i < 3; i++) {
    kg_dualgemm_args h = g;
    h.mode = modes[i];
    if (modes[i] == KG_MODE_BATCHED) {
      h.batch_count = 2;
      h.batch_stride_a = h.batch_stride_b0 = h.batch_stride_b1 = M * K;
      h.batch_stride_d0 = h.batch_stride_d1 = h.batch_stride_d2 = M * N;
    }
    if (modes[i] == KG_MODE_SPLITK_SERIAL) h.split_k_slices = 2;
    kg_explain(KG_OP_DUALGEMM, &h, &ex, why, sizeof why);
    if (strstr(why, "mode not supported")) v->modes &= ~MODE_BIT(modes[i]);
  }
  g.mode = KG_MODE_GEMM;
  g.m = 1 << 20;
  kg_explain(KG_OP_DUALGEMM, &g, &ex, why, sizeof why);
  const char *lim = strstr(why, "above the variant's limit ");
  if (lim) v->max_m = atoll(lim + strlen("above the variant's limit "));
  printf("note: %s: kernel '%s' not known to this test; kg_explain says modes%s%s%s, max m %lld\n", v->name,
         v->kernel, (v->modes & MODE_BIT(KG_MODE_GEMM)) ? " gemm" : "",
         (v->modes & MODE_BIT(KG_MODE_BATCHED)) ? " batched" : "",
         (v->modes & MODE_BIT(KG_MODE_SPLITK_SERIAL)) ? " splitk" : "", (long long)v->max_m);
}

/* Layout combinations (la*8 + lb0*4 + lb1*2 + lcd) v takes for tc. */
static int combos(const dvar *v, const tcase *tc, unsigned *list) {
  int nl = 0;
  for (int pass = 0; pass < 2 && nl == 0; pass++)
    for (unsigned c = 0; c < 16; c++) {
      int la = (c >> 3) & 1, lb0 = (c >> 2) & 1, lb1 = (c >> 1) & 1, lcd = c & 1;
      if (tc->vec_b1 && lb1 != KG_COL) continue;
      if (pass == 0 && tc->b0_row && lb0 != KG_ROW) continue;  /* prefer row-major B0 */
      if (!letter_ok(v->lay[0], la) || !letter_ok(v->lay[1], lb0) || !letter_ok(v->lay[2], lb1) ||
          !letter_ok(v->lay[3], lcd))
        continue;
      list[nl++] = c;
    }
  return nl;
}

/* Does v run tc (as a computation, or as a refusal it must give)? */
static int takes(const dvar *v, const tcase *tc) {
  if (tc->expect != KG_SUCCESS) {
    if (tc->expect == KG_ERROR_MISALIGNED_OPERAND) return v->align > 1 && v->skinny;
    return v->skinny;  /* refusals are about the skinny limits */
  }
  if (tc->skinny_only && !v->skinny) return 0;
  if (!(v->modes & MODE_BIT(tc->mode))) return 0;
  if (v->max_m > 0 && tc->m > v->max_m) return 0;
  return 1;
}

static void add_case(tcase c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_case(tcase c, const char *fmt, ...) {
  if (ncases >= MAX_CASES) { fprintf(stderr, "too many cases\n"); exit(2); }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(case_names[ncases], sizeof case_names[ncases], fmt, ap);
  va_end(ap);
  c.name = case_names[ncases];
  cases[ncases++] = c;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;   /* run only the variants whose name contains it */
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!kg_backend_available(BACKEND)) {
    printf("FAIL the kg CUDA backend is not available (not compiled in, or no GPU)\n");
    g_fail++;
    summary();
    return 1;
  }
  int dev = 0;
  struct cudaDeviceProp prop;
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("test_gpu_dual: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  g_arena.cap = (size_t)256 << 20;
  CK(cudaMalloc((void **)&g_arena.base, g_arena.cap));

  /* variants */
  int nv = 0;
  for (int i = 0; i < kg_variant_count(); i++)
    if (!strncmp(kg_variant_name(i), VPREFIX, strlen(VPREFIX)) && (!only || strstr(kg_variant_name(i), only))) nv++;
  dvar *vars = (dvar *)calloc((size_t)(nv ? nv : 1), sizeof *vars);
  if (!vars) { fprintf(stderr, "out of host memory\n"); return 2; }
  nv = 0;
  for (int i = 0; i < kg_variant_count(); i++) {
    const char *name = kg_variant_name(i);
    if (strncmp(name, VPREFIX, strlen(VPREFIX)) != 0 || (only && !strstr(name, only))) continue;
    if (!parse_variant(name, &vars[nv])) {
      printf("FAIL %s: cannot parse the variant name\n", name);
      g_fail++;
      continue;
    }
    capabilities(&vars[nv]);
    nv++;
  }
  printf("%d CUDA DualGemm variants\n", nv);
  if (nv == 0) {
    printf("FAIL no CUDA DualGemm variant compiled in\n");
    g_fail++;
  }

  /* cases: the base list, the skinny m sweep and the refusals */
  for (int i = 0; i < N_BASE; i++) add_case(base_cases[i], "%s", base_cases[i].name);
  for (int mm = 1; mm <= 16; mm++) {
    const int ints = mm & 1;
    tcase c = GEMM(NULL, mm, 37, 72, ints, 1, ints ? -1 : 0.5f, 1, 1, mm % 3 == 0 ? CM_BIAS : CM_FULL,
                   mm % 4 == 0 ? CM_NONE : CM_FULL, 0, 0, 0, mm % 5 == 0 ? 2 : 0);
    c.skinny_only = 1;
    add_case(c, "skinny m sweep %dx37x72 %s", mm, ints ? "int" : "rand");
  }
  {
    tcase c = BATCH(NULL, 16, 37, 72, 3, 1, 1, 1, 1, 1, CM_FULL, CM_FULL, 1, 0, 0, 0, 0);
    c.skinny_only = 1;
    add_case(c, "skinny 16x37x72 x3 int bcast B1");
    tcase r17 = GEMM(NULL, 17, 37, 72, 1, 1, 0, 1, 0, CM_NONE, CM_NONE, 0, 0, 0, 0);
    r17.expect = KG_ERROR_NOT_SUPPORTED;
    add_case(r17, "refusal: m 17 above the skinny limit");
    tcase rs = SPLITK(NULL, 16, 37, 72, 2, 1, 1, 0, 1, 0, CM_NONE, CM_NONE, 0, 0, 0, 0);
    rs.expect = KG_ERROR_NOT_SUPPORTED;
    add_case(rs, "refusal: split-K s2 on skinny");
    tcase ra = GEMM(NULL, 8, 37, 72, 1, 1, 0, 1, 0, CM_NONE, CM_NONE, 0, 0, 0, 0);
    ra.expect = KG_ERROR_MISALIGNED_OPERAND;
    ra.misalign = 1;
    add_case(ra, "refusal: lda not a multiple of the alignment");
  }

  /* run: per case and dtype one reference, every variant of that dtype */
  for (int ci = 0; ci < ncases; ci++) {
    const tcase *tc = &cases[ci];
    unsigned rot = (unsigned)ci * 5u;
    for (int t = 0; t < 3; t++) {
      int any = 0;
      for (int vi = 0; vi < nv; vi++)
        if (vars[vi].tab == (kg_dtype)t && vars[vi].tcd == (kg_dtype)t && takes(&vars[vi], tc)) any = 1;
      if (!any) continue;
      refdata R;
      ref_build(tc, (kg_dtype)t, 0x5eedull * (uint64_t)(ci + 1) + 977ull * (uint64_t)t, &R);
      for (int vi = 0; vi < nv; vi++) {
        dvar *v = &vars[vi];
        if (v->tab != (kg_dtype)t || v->tcd != (kg_dtype)t || !takes(v, tc)) continue;
        unsigned list[16];
        int nl = combos(v, tc, list);
        if (nl == 0) continue;
        int per = tc->all && tc->expect == KG_SUCCESS ? nl : 1;
        for (int j = 0; j < per; j++) {
          unsigned c = per == nl ? list[j] : list[rot++ % (unsigned)nl];
          run_one(tc, &R, v, v->name, c);
          v->runs++;
        }
      }
      ref_free(&R);
    }
  }

  /* every variant ran something */
  for (int vi = 0; vi < nv; vi++)
    if (vars[vi].runs == 0) {
      printf("FAIL %s: no case ran\n", vars[vi].name);
      g_fail++;
    }

  /* plain dispatch: bf16 swiglu, m 16, A row-major, B0 / B1 column-major, aligned: a skinny variant */
  {
    tcase c = GEMM("dispatch bf16 swiglu 16x512x1024 rand", 16, 512, 1024, 0, 1, 0, 1, 0, CM_NONE, CM_NONE, 0, 0, 0, 0);
    dvar dv;
    memset(&dv, 0, sizeof dv);
    dv.name = "kg_dualgemm_cuda_skinny_*";
    dv.tab = dv.tcd = KG_BF16;
    dv.op = KG_DUAL_SWIGLU;
    dv.align = 8;
    refdata R;
    ref_build(&c, KG_BF16, 4242, &R);
    /* find out what dispatch picks with the same arguments run_one builds */
    kg_dualgemm_args g;
    memset(&g, 0, sizeof g);
    g.mode = KG_MODE_GEMM; g.m = 16; g.n = 512; g.k = 1024; g.batch_count = 1; g.split_k_slices = 1;
    g.type_ab = g.type_cd = KG_BF16;
    g.layout_a = KG_ROW; g.layout_b0 = KG_COL; g.layout_b1 = KG_COL; g.layout_cd = KG_ROW;
    g.op = KG_DUAL_SWIGLU;
    void *fake = (void *)(uintptr_t)0x100000;
    g.a = fake; g.lda = 1024; g.b0 = fake; g.ldb0 = 1024; g.b1 = fake; g.ldb1 = 1024; g.d2 = fake; g.ldd2 = 512;
    g.alpha0 = g.alpha1 = 1.0f;
    kg_exec ex;
    memset(&ex, 0, sizeof ex);
    ex.backend = BACKEND;
    const char *sel = NULL;
    kg_status st = kg_dualgemm_select(&g, &ex, &sel);
    snprintf(g_what, sizeof g_what, "dispatch | bf16 swiglu 16x512x1024 A r B0 c B1 c CD r");
    if (st != KG_SUCCESS || !sel || strncmp(sel, "kg_dualgemm_cuda_skinny_", 24) != 0) {
      static char why[8192];
      explain_line(&g, &ex, why, sizeof why);
      failf("plain dispatch selects '%s' (%s), expected a kg_dualgemm_cuda_skinny_* variant; explain: %s",
            sel ? sel : "nothing", kg_status_string(st), why);
      g_fail++;
    } else {
      g_pass++;
      printf("dispatch: bf16 swiglu m=16 -> %s\n", sel);
      dv.name = sel;
      run_one(&c, &R, &dv, NULL, 0u * 8 + 1u * 4 + 1u * 2 + 0u);  /* A row, B0 col, B1 col, CD row */
    }
    ref_free(&R);
  }

  /* the tensorop variants' bulk copies (tensor maps, kg__tma_rejects), forced by name on fake
  ** pointers (select reads no operand): n = 2^31 is refused (int32 coordinates), so is B1's ld of
  ** 2^40 bytes at n = 1; a broadcast B1 vector (column-major, ldb1 = 0) at n = 2^20 is taken */
  for (int vi = 0; vi < nv; vi++) {
    const dvar *v = &vars[vi];
    if (strcmp(v->kernel, "tensorop") != 0) continue;
    static const struct { int64_t n, ldb1; int bcast; const char *why; } TMA[] = {
      { (int64_t)1 << 31, -1, 0, "int32 coordinates" },
      { 1, (int64_t)1 << 39, 0, "operand b1: strides of" },
      { (int64_t)1 << 20, 0, 1, NULL },
    };
    for (int t = 0; t < 3; t++) {
      kg_dualgemm_args g;
      memset(&g, 0, sizeof g);
      g.mode = KG_MODE_GEMM; g.m = 256; g.n = TMA[t].n; g.k = 64; g.batch_count = 1; g.split_k_slices = 1;
      g.type_ab = v->tab; g.type_cd = v->tcd; g.op = v->op; g.store_d0 = v->sd0; g.store_d1 = v->sd1;
      g.layout_a = v->lay[0] == 'c' ? KG_COL : KG_ROW;
      g.layout_b0 = v->lay[1] == 'r' ? KG_ROW : KG_COL;
      g.layout_b1 = v->lay[2] == 'r' ? KG_ROW : KG_COL;
      g.layout_cd = v->lay[3] == 'c' ? KG_COL : KG_ROW;
      if (TMA[t].bcast && g.layout_b1 != KG_COL) continue;   /* ldb1 = 0 needs column-major B1 */
      void *fake = (void *)(uintptr_t)0x100000;
      g.a = fake; g.lda = g.layout_a == KG_ROW ? g.k : g.m;
      g.b0 = fake; g.ldb0 = g.layout_b0 == KG_COL ? g.k : g.n;
      g.b1 = fake; g.ldb1 = TMA[t].ldb1 >= 0 ? TMA[t].ldb1 : g.layout_b1 == KG_COL ? g.k : g.n;
      g.d0 = v->sd0 ? (void *)(uintptr_t)0x200000 : NULL; g.d1 = v->sd1 ? (void *)(uintptr_t)0x300000 : NULL;
      g.d2 = (void *)(uintptr_t)0x400000;
      g.ldd0 = g.ldd1 = g.ldd2 = g.layout_cd == KG_ROW ? g.n : g.m;
      g.alpha0 = g.alpha1 = 1.0f;
      kg_exec ex;
      memset(&ex, 0, sizeof ex);
      ex.backend = BACKEND;
      ex.variant = v->name;
      const char *sel = NULL;
      const kg_status st = kg_dualgemm_select(&g, &ex, &sel);
      static char why[8192];
      explain_line(&g, &ex, why, sizeof why);
      snprintf(g_what, sizeof g_what, "tensor maps | %s n %lld ldb1 %lld", v->name, (long long)g.n, (long long)g.ldb1);
      if (TMA[t].why ? st != KG_ERROR_NOT_SUPPORTED || !strstr(why, TMA[t].why) : st != KG_SUCCESS) {
        failf("select gave %s; explain: %s", kg_status_string(st), why);
        g_fail++;
      } else g_pass++;
    }
  }

  for (int vi = 0; vi < nv; vi++)
    printf("  %-64s %4d cases\n", vars[vi].name, vars[vi].runs);
  CK(cudaFree(g_arena.base));
  CK(cudaStreamDestroy(g_stream));
  free(vars);
  summary();
  return g_fail ? 1 : 0;
}
