/*
** test_gpu.c -- every compiled CUDA GEMM variant against a double-precision
** reference computed here on the CPU (never against other generated code).
**
** Built by `make test-gpu` (plain C, libkg + cudart; no Lua, no libcheck).
** For each variant whose name contains "_cuda_" (forced with kg_exec.variant):
**   - every layout combination the variant's name says it accepts;
**   - odd sizes that are not multiples of any tile (1x1x1, 37x53x29,
**     129x257x67, 255x130x520, ...);
**   - random inputs (tolerance scaled with K and the output type) and small
**     integer inputs in [-2, 2] (bit-exact against the correctly rounded
**     reference);
**   - modes gemm, batched (with a stride-0 broadcast of B), splitk_serial
**     (workspace from kg_gemm_workspace_size; a short one must give
**     KG_ERROR_WORKSPACE_TOO_SMALL);
**   - beta = 0 with c = NULL, beta = 0 with a NaN-filled C (never read),
**     beta != 0, ldc = 0 bias broadcast, leading dimensions larger than needed;
**   - D poisoned with NaN (0xff bytes) before each run; every element outside
**     the written region must still hold the poison, NaN never passes;
**   - one 1024x1024x2048 case per tensorop variant.
** Also: kg_gemm without a forced variant on aligned bf16 row/col must pick a
** tensorop variant, and a misaligned ld must be refused by tensorop variants;
** a variant for small problems (max_tiles_per_sm) is picked at m = 128, n = 4096
** and not at m = 1024 unless forced; the tensorop variants' tensor-map limits (n = 2^31 forced, a
** 2^40-byte ld run by another variant).
** One line per failing case; last line "N passed, M failed"; exit 1 on any
** failure, 2 when a CUDA call fails.
**
** An argument runs only the variants whose name contains it (the dispatch
** checks still run over those). KG_TEST_TIME=1 additionally times every
** tensorop variant at 4096^3 (median of CUDA-event timings) and prints
** TFLOP/s.
*/
#include <stdarg.h>

#include "gpu_test.h"

/* ---- 16-bit float conversions (the others in gpu_test.h) -------------- */

/* Nearest f16 of a double (ties to even), by search over the exact grid. */
static uint16_t to_f16(double x) {
  if (isnan(x)) return 0x7e00;
  uint16_t s = x < 0 ? 0x8000 : 0;
  double a = fabs(x);
  if (a >= 65520.0) return (uint16_t)(s | 0x7c00);
  int e;
  double step;
  if (a < ldexp(1.0, -14)) step = ldexp(1.0, -24);
  else { frexp(a, &e); step = ldexp(1.0, e - 11); }
  double q = a / step, r = floor(q), f = q - r;
  if (f > 0.5 || (f == 0.5 && fmod(r, 2.0) == 1.0)) r += 1.0;
  double v = r * step;
  /* encode v */
  if (v < ldexp(1.0, -14)) return (uint16_t)(s | (uint16_t)(v / ldexp(1.0, -24)));
  frexp(v, &e);  /* v = f * 2^e, f in [0.5, 1) */
  int be = e - 1 + 15;
  if (be >= 31) return (uint16_t)(s | 0x7c00);
  int mant = (int)(v / ldexp(1.0, e - 11)) - 1024;
  return (uint16_t)(s | (be << 10) | mant);
}

static size_t esize(kg_dtype t) { return t == KG_F32 ? 4 : 2; }
static double get_el(kg_dtype t, const void *buf, int64_t i) {
  if (t == KG_F32) return ((const float *)buf)[i];
  uint16_t h = ((const uint16_t *)buf)[i];
  return t == KG_BF16 ? bf16_to_f64(h) : f16_to_f64(h);
}
/* Stores x rounded to t; returns the stored value. */
static double put_el(kg_dtype t, void *buf, int64_t i, double x) {
  if (t == KG_F32) { ((float *)buf)[i] = (float)x; return (float)x; }
  uint16_t h = t == KG_BF16 ? f32_to_bf16((float)x) : to_f16(x);
  ((uint16_t *)buf)[i] = h;
  return t == KG_BF16 ? bf16_to_f64(h) : f16_to_f64(h);
}
/* Value of x after rounding to t (x exactly representable in float). */
static double round_to(kg_dtype t, double x) {
  uint32_t tmp;
  return put_el(t, &tmp, 0, x);
}
/* Unit roundoff of a type. */
static double unit(kg_dtype t) { return t == KG_F32 ? ldexp(1.0, -24) : t == KG_F16 ? ldexp(1.0, -11) : ldexp(1.0, -8); }

/* ---- RNG --------------------------------------------------------------- */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
  return g_rng;
}
static double rnd_unit(void) { return (double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }
static double rnd_value(int integer) { return integer ? (double)((int)(rnd() % 5) - 2) : rnd_unit(); }

/* ---- variants ---------------------------------------------------------- */

typedef struct vinfo {
  const char *name;
  int tensorop;
  int generic;      /* simt/tensorop: every size and mode; others (skinny) may refuse */
  int ran;          /* cases this variant took */
  kg_dtype tab, tcd;
  int lay[3];  /* A, B, C/D: KG_ROW, KG_COL or -1 (any) */
  int align;
} vinfo;

static int parse_dtype(const char *s, size_t n, kg_dtype *t) {
  if (n == 3 && !strncmp(s, "f32", 3)) { *t = KG_F32; return 1; }
  if (n == 3 && !strncmp(s, "f16", 3)) { *t = KG_F16; return 1; }
  if (n == 4 && !strncmp(s, "bf16", 4)) { *t = KG_BF16; return 1; }
  return 0;
}

/* kg_gemm_cuda_KERNEL_DT[toDT]_LLL_TILE_..._aN */
static int parse_variant(const char *name, vinfo *v) {
  char tok[16][32];
  int nt = 0;
  const char *p = name;
  memset(v, 0, sizeof *v);
  v->name = name;
  while (*p && nt < 16) {
    const char *q = strchr(p, '_');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    if (n >= sizeof tok[0]) return 0;
    memcpy(tok[nt], p, n);
    tok[nt][n] = 0;
    nt++;
    if (!q) break;
    p = q + 1;
  }
  if (nt < 7 || strcmp(tok[0], "kg") || strcmp(tok[1], "gemm") || strcmp(tok[2], "cuda")) return 0;
  v->tensorop = !strcmp(tok[3], "tensorop");
  v->generic = v->tensorop || !strcmp(tok[3], "simt");
  const char *dt = tok[4], *to = strstr(dt, "to");
  if (to) {
    if (!parse_dtype(dt, (size_t)(to - dt), &v->tab) || !parse_dtype(to + 2, strlen(to + 2), &v->tcd)) return 0;
  } else {
    if (!parse_dtype(dt, strlen(dt), &v->tab)) return 0;
    v->tcd = v->tab;
  }
  if (strlen(tok[5]) != 3) return 0;
  for (int i = 0; i < 3; i++) {
    char c = tok[5][i];
    v->lay[i] = c == 'r' ? KG_ROW : c == 'c' ? KG_COL : c == 'x' ? -1 : -2;
    if (v->lay[i] == -2) return 0;
  }
  if (tok[nt - 1][0] != 'a') return 0;
  v->align = atoi(tok[nt - 1] + 1);
  return v->align >= 1;
}

/* ---- one case ----------------------------------------------------------- */

enum { C_NONE, C_NAN, C_FULL, C_BIAS };

typedef struct tcase {
  kg_mode mode;
  int64_t m, n, k, batch, slices;
  int la, lb, lcd;
  int integer;      /* inputs in [-2, 2]: exact comparison */
  int cmode;        /* C_NONE: beta 0, c NULL; C_NAN: beta 0, c all NaN; C_FULL; C_BIAS: ldc 0 */
  int pad;          /* extra elements on every leading dimension */
  int bcast_b;      /* batched: batch_stride_b = 0 */
  float alpha, beta;
} tcase;

static int64_t roundup(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

/* Extent (elements) of a rows x cols matrix with layout l and leading dim ld. */
static int64_t extent(int l, int64_t rows, int64_t cols, int64_t ld) {
  return l == KG_ROW ? (rows - 1) * ld + cols : (cols - 1) * ld + rows;
}
static int64_t idx(int l, int64_t ld, int64_t i, int64_t j) { return l == KG_ROW ? i * ld + j : j * ld + i; }

static void failf(const vinfo *v, const tcase *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void failf(const vinfo *v, const tcase *c, const char *fmt, ...) {
  static const char *MODES[] = { "gemm", "batched", "splitk" };
  static const char *CM[] = { "c=NULL", "c=NaN,beta=0", "c", "bias" };
  static const char L[] = { 'r', 'c' };
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  printf("FAIL %s %s %lldx%lldx%lld batch=%lld slices=%lld layout=%c%c%c %s %s pad=%d%s: %s\n", v->name,
         MODES[c->mode], (long long)c->m, (long long)c->n, (long long)c->k, (long long)c->batch,
         (long long)c->slices, L[c->la], L[c->lb], L[c->lcd], c->integer ? "int" : "rand", CM[c->cmode], c->pad,
         c->bcast_b ? " bcastB" : "", msg);
  fflush(stdout);
}

/* Runs one case; returns 1 when it passed, 0 when it failed, -1 when a
** non-generic variant (e.g. skinny, m <= 16) does not take the problem. */
static int run_case(vinfo *v, const tcase *c) {
  const kg_dtype tab = v->tab, tcd = v->tcd;
  const int64_t m = c->m, n = c->n, k = c->k, batch = c->mode == KG_MODE_BATCHED ? c->batch : 1;
  const int64_t al = v->align;
  /* leading dimensions: tight (rounded to the variant's alignment) + pad */
  int64_t lda = roundup(c->la == KG_ROW ? k : m, al) + c->pad;
  int64_t ldb = roundup(c->lb == KG_ROW ? n : k, al) + c->pad;
  int64_t ldd = roundup(c->lcd == KG_ROW ? n : m, al) + c->pad;
  int64_t ldc = c->cmode == C_BIAS ? 0 : ldd + (c->pad ? al : 0);
  int64_t ea = extent(c->la, m, k, lda), eb = extent(c->lb, k, n, ldb), ed = extent(c->lcd, m, n, ldd);
  int64_t ec = c->cmode == C_BIAS ? (c->lcd == KG_ROW ? n : m) : extent(c->lcd, m, n, ldc);
  /* batch strides with a gap between batches (the gap of D must stay poisoned) */
  int64_t bsa = roundup(ea, al) + 8 * al, bsb = c->bcast_b ? 0 : roundup(eb, al) + 16 * al;
  int64_t bsc = c->cmode == C_BIAS ? 0 : roundup(ec, al) + al, bsd = roundup(ed, al) + 8 * al;
  int64_t na = (batch - 1) * bsa + ea, nb = (batch - 1) * bsb + eb;
  int64_t nc = (batch - 1) * bsc + ec, nd = (batch - 1) * bsd + ed + 64;  /* + tail to catch overruns */
  size_t sab = esize(tab), scd = esize(tcd);
  int ok = 1;

  unsigned char *ha = calloc((size_t)na, sab), *hb = calloc((size_t)nb, sab), *hc = calloc((size_t)nc, scd);
  unsigned char *hd = malloc((size_t)nd * scd);
  unsigned char *written = calloc((size_t)nd, 1);
  double *ra = malloc(sizeof(double) * (size_t)(m * k)), *rbt = malloc(sizeof(double) * (size_t)(n * k));
  double *ref = malloc(sizeof(double) * (size_t)(m * n)), *refabs = malloc(sizeof(double) * (size_t)(m * n));
  if (!ha || !hb || !hc || !hd || !written || !ra || !rbt || !ref || !refabs) { fprintf(stderr, "out of host memory\n"); exit(2); }

  for (int64_t i = 0; i < na; i++) put_el(tab, ha, i, rnd_value(c->integer));
  for (int64_t i = 0; i < nb; i++) put_el(tab, hb, i, rnd_value(c->integer));
  if (c->cmode == C_NAN) memset(hc, 0xff, (size_t)nc * scd);
  else for (int64_t i = 0; i < nc; i++) put_el(tcd, hc, i, rnd_value(c->integer));

  void *da, *db, *dc = NULL, *dd, *ws = NULL;
  CK(cudaMalloc(&da, (size_t)na * sab));
  CK(cudaMalloc(&db, (size_t)nb * sab));
  CK(cudaMalloc(&dd, (size_t)nd * scd));
  CK(cudaMemcpy(da, ha, (size_t)na * sab, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, hb, (size_t)nb * sab, cudaMemcpyHostToDevice));
  if (c->cmode != C_NONE) {
    CK(cudaMalloc(&dc, (size_t)nc * scd));
    CK(cudaMemcpy(dc, hc, (size_t)nc * scd, cudaMemcpyHostToDevice));
  }
  CK(cudaMemset(dd, 0xff, (size_t)nd * scd));  /* NaN poison */

  kg_gemm_args g;
  memset(&g, 0, sizeof g);
  g.mode = c->mode; g.m = m; g.n = n; g.k = k;
  g.batch_count = batch; g.split_k_slices = c->mode == KG_MODE_SPLITK_SERIAL ? c->slices : 1;
  g.type_ab = tab; g.type_cd = tcd;
  g.layout_a = (kg_layout)c->la; g.layout_b = (kg_layout)c->lb; g.layout_cd = (kg_layout)c->lcd;
  g.a = da; g.lda = lda; g.batch_stride_a = c->mode == KG_MODE_BATCHED ? bsa : 0;
  g.b = db; g.ldb = ldb; g.batch_stride_b = c->mode == KG_MODE_BATCHED ? bsb : 0;
  g.c = dc; g.ldc = c->cmode == C_NONE ? 0 : ldc; g.batch_stride_c = c->mode == KG_MODE_BATCHED ? bsc : 0;
  g.d = dd; g.ldd = ldd; g.batch_stride_d = c->mode == KG_MODE_BATCHED ? bsd : 0;
  g.alpha = c->alpha;
  g.beta = (c->cmode == C_NONE || c->cmode == C_NAN) ? 0.0f : c->beta;

  kg_exec ex;
  memset(&ex, 0, sizeof ex);
  ex.backend = KG_BACKEND_CUDA;
  ex.variant = v->name;

  const char *chosen = NULL;
  kg_status st = kg_gemm_select(&g, &ex, &chosen);
  if (st == KG_ERROR_NOT_SUPPORTED && !v->generic) { ok = -1; goto out; }
  v->ran++;
  if (st != KG_SUCCESS) {
    char why[2048];
    kg_explain(KG_OP_GEMM, &g, &ex, why, sizeof why);
    for (char *q = why; *q; q++) if (*q == '\n') *q = ' ';
    failf(v, c, "forced variant refused: %s (%s)", kg_status_string(st), why);
    ok = 0;
    goto out;
  }
  size_t need = 0;
  st = kg_gemm_workspace_size(&g, &ex, &need);
  if (st != KG_SUCCESS) { failf(v, c, "workspace query: %s", kg_status_string(st)); ok = 0; goto out; }
  if (c->mode == KG_MODE_SPLITK_SERIAL && c->slices > 1 && need == 0 && k > 64) {
    failf(v, c, "split-K with %lld slices needs no workspace?", (long long)c->slices);
    ok = 0;
  }
  if (need > 0) {
    CK(cudaMalloc(&ws, need));
    ex.workspace = ws;
    ex.workspace_size = need - 1;
    st = kg_gemm(&g, &ex);
    if (st != KG_ERROR_WORKSPACE_TOO_SMALL) {
      failf(v, c, "workspace of %zu bytes (need %zu): got '%s', want 'workspace too small'", need - 1, need,
            kg_status_string(st));
      ok = 0;
    }
    CK(cudaDeviceSynchronize());
    ex.workspace_size = need;
  }
  st = kg_gemm(&g, &ex);
  if (st != KG_SUCCESS) {
    failf(v, c, "kg_gemm: %s %s", kg_status_string(st), kg_last_backend_error());
    ok = 0;
    goto out;
  }
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hd, dd, (size_t)nd * scd, cudaMemcpyDeviceToHost));

  {
    const double u = unit(tcd);
    int64_t bad = 0;
    for (int64_t b = 0; b < batch; b++) {
      const unsigned char *pa = ha + (size_t)(b * bsa) * sab, *pb = hb + (size_t)(b * bsb) * sab;
      for (int64_t i = 0; i < m; i++)
        for (int64_t q = 0; q < k; q++) ra[i * k + q] = get_el(tab, pa, idx(c->la, lda, i, q));
      for (int64_t j = 0; j < n; j++)
        for (int64_t q = 0; q < k; q++) rbt[j * k + q] = get_el(tab, pb, idx(c->lb, ldb, q, j));
      ref_dots(ra, k, rbt, k, m, n, k, ref, refabs);
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double want = (double)c->alpha * ref[i * n + j], scale = fabs((double)c->alpha) * refabs[i * n + j];
          if (g.beta != 0.0f) {
            int64_t ci = c->cmode == C_BIAS ? (c->lcd == KG_ROW ? j : i) : b * bsc + idx(c->lcd, ldc, i, j);
            double cv = get_el(tcd, hc, ci);
            want += (double)g.beta * cv;
            scale += fabs((double)g.beta * cv);
          }
          int64_t di = b * bsd + idx(c->lcd, ldd, i, j);
          written[di] = 1;
          double got = get_el(tcd, hd, di);
          int good;
          double tol;
          if (c->integer) {  /* exact: the kernel's f32 math is exact on these integers */
            tol = 0;
            good = got == round_to(tcd, want);
          } else {
            tol = 1.01 * u * fabs(want) + (double)(k + 4) * ldexp(1.0, -24) * scale * 2.0 + 1e-30;
            good = fabs(got - want) <= tol;  /* false for NaN */
          }
          if (!good) {
            if (bad < 3)
              failf(v, c, "D[b=%lld][%lld][%lld] = %.9g, want %.9g (tol %.3g)", (long long)b, (long long)i,
                    (long long)j, got, want, tol);
            bad++;
          }
        }
    }
    if (bad > 3) failf(v, c, "... %lld wrong elements in all", (long long)bad);
    if (bad) ok = 0;
    int64_t touched = 0, first = -1;
    for (int64_t i = 0; i < nd; i++) {
      if (written[i]) continue;
      const unsigned char *e = hd + (size_t)i * scd;
      for (size_t q = 0; q < scd; q++)
        if (e[q] != 0xff) { if (first < 0) first = i; touched++; break; }
    }
    if (touched) {
      failf(v, c, "%lld elements outside the output were overwritten (first at offset %lld)", (long long)touched,
            (long long)first);
      ok = 0;
    }
  }

out:
  CK(cudaFree(da)); CK(cudaFree(db)); CK(cudaFree(dd));
  if (dc) CK(cudaFree(dc));
  if (ws) CK(cudaFree(ws));
  free(ha); free(hb); free(hc); free(hd); free(written); free(ra); free(rbt); free(ref); free(refabs);
  if (ok > 0) g_pass++; else if (ok == 0) g_fail++;
  return ok;
}

/* ---- checks beyond one variant ------------------------------------------ */

/* Variants for small problems (max_tiles_per_sm, "_tps" in the name): dispatch picks each for
** m = 128, n = 4096 (its key, aligned), and not for m = 1024 (more tiles than its limit per SM of
** this device; kg_explain says so); forced by name it takes the larger problem too. */
static void check_dispatch_small(const vinfo *vs, int nv) {
  const int64_t M = 1024, N = 4096, K = 256;
  void *a, *b, *d;
  CK(cudaMalloc(&a, (size_t)(M * K * 2)));
  CK(cudaMalloc(&b, (size_t)(N * K * 2)));
  CK(cudaMalloc(&d, (size_t)(M * N * 4)));
  static char buf[16384];
  for (int i = 0; i < nv; i++) {
    const vinfo *v = &vs[i];
    if (!strstr(v->name, "_tps")) continue;
    kg_gemm_args g;
    memset(&g, 0, sizeof g);
    g.mode = KG_MODE_GEMM; g.n = N; g.k = K; g.batch_count = 1; g.split_k_slices = 1;
    g.type_ab = v->tab; g.type_cd = v->tcd;
    g.layout_a = v->lay[0] == KG_COL ? KG_COL : KG_ROW;
    g.layout_b = v->lay[1] == KG_ROW ? KG_ROW : KG_COL;
    g.layout_cd = v->lay[2] == KG_COL ? KG_COL : KG_ROW;
    g.a = a; g.b = b; g.d = d; g.alpha = 1.0f;
    kg_exec ex;
    memset(&ex, 0, sizeof ex);
    ex.backend = KG_BACKEND_CUDA;
    for (int big = 0; big < 3; big++) {
      g.m = big ? M : 128;
      g.lda = g.layout_a == KG_ROW ? K : g.m;
      g.ldb = g.layout_b == KG_COL ? K : N;
      g.ldd = g.layout_cd == KG_ROW ? N : g.m;
      ex.variant = big == 2 ? v->name : NULL;
      const char *name = NULL;
      kg_status st = kg_gemm_select(&g, &ex, &name);
      const int picked = st == KG_SUCCESS && name && !strcmp(name, v->name);
      int ok = big == 1 ? st == KG_SUCCESS && !picked : picked;
      if (ok && big == 1) {
        kg_explain(KG_OP_GEMM, &g, &ex, buf, sizeof buf);
        ok = strstr(buf, "tiles of") && strstr(buf, "per SM on");
      }
      if (!ok) {
        printf("FAIL %s: m = %lld%s: dispatch picked %s (%s)\n", v->name, (long long)g.m, big == 2 ? ", forced" : "",
               name ? name : "nothing", kg_status_string(st));
        g_fail++;
      } else g_pass++;
    }
  }
  CK(cudaFree(a)); CK(cudaFree(b)); CK(cudaFree(d));
}

/* The tensorop variants' bulk copies (tensor maps: int32 coordinates, strides below 2^40 bytes).
** Forced by name, n = 2^31 is KG_ERROR_NOT_SUPPORTED and kg_explain names the coordinates.
** Without a forced variant, B's ld of 2^40 bytes at n = 1 (B is one column of K elements, so the
** ld is never stepped) runs on a variant without tensor maps and matches a reference; each
** tensorop variant explains why it passed. */
static void check_dispatch_tma(const vinfo *vs, int nv) {
  const int64_t M = 256, K = 64;
  static char buf[16384];
  uint16_t ha[256 * 64], hb[64], hd[256];
  double ra[256 * 64], rb[64];
  for (int64_t i = 0; i < M * K; i++) { ha[i] = f32_to_bf16((float)rnd_value(1)); ra[i] = bf16_to_f64(ha[i]); }
  for (int64_t i = 0; i < K; i++) { hb[i] = f32_to_bf16((float)rnd_value(1)); rb[i] = bf16_to_f64(hb[i]); }
  void *a, *b, *d;
  CK(cudaMalloc(&a, sizeof ha));
  CK(cudaMalloc(&b, sizeof hb));
  CK(cudaMalloc(&d, sizeof hd));
  CK(cudaMemcpy(a, ha, sizeof ha, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b, hb, sizeof hb, cudaMemcpyHostToDevice));
  CK(cudaMemset(d, 0xff, sizeof hd));
  kg_gemm_args g;
  memset(&g, 0, sizeof g);
  g.mode = KG_MODE_GEMM; g.m = M; g.n = 1; g.k = K; g.batch_count = 1; g.split_k_slices = 1;
  g.type_ab = KG_BF16; g.type_cd = KG_BF16; g.layout_a = KG_ROW; g.layout_b = KG_COL; g.layout_cd = KG_ROW;
  g.a = a; g.lda = K; g.b = b; g.ldb = (int64_t)1 << 39; g.d = d; g.ldd = 1; g.alpha = 1.0f;
  kg_exec ex;
  memset(&ex, 0, sizeof ex);
  ex.backend = KG_BACKEND_CUDA;
  kg_status st = kg_gemm(&g, &ex);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(hd, d, sizeof hd, cudaMemcpyDeviceToHost));
  int bad = st != KG_SUCCESS;
  for (int64_t i = 0; i < M && !bad; i++) {
    double ref = 0;
    for (int64_t j = 0; j < K; j++) ref += ra[i * K + j] * rb[j];
    bad = bf16_to_f64(hd[i]) != bf16_to_f64(f32_to_bf16((float)ref));   /* integers: exact sums */
  }
  kg_explain(KG_OP_GEMM, &g, &ex, buf, sizeof buf);
  for (int i = 0; i < nv && !bad; i++)
    if (vs[i].tensorop && vs[i].tab == KG_BF16 && vs[i].tcd == KG_BF16 && vs[i].lay[0] != KG_COL && vs[i].lay[1] != KG_ROW) {
      char want[256];
      snprintf(want, sizeof want, "%s: rejected: operand b: strides of", vs[i].name);
      bad = !strstr(buf, want);
    }
  if (bad) {
    printf("FAIL dispatch: ldb 2^39 at n = 1 gave '%s' or a wrong D; kg_explain:\n%s", kg_status_string(st), buf);
    g_fail++;
  } else g_pass++;
  /* forced (nothing runs: the buffers are not read): n = 2^31 passes the maps' int32 coordinates;
  ** m = 4e6, n = 2^30 keeps them but has more tiles than the kernel's int block order counts */
  static const struct { int64_t m, n; const char *why; } FORCED[] = {
    { 256, (int64_t)1 << 31, "int32 coordinates" }, { 4000000, (int64_t)1 << 30, "the kernel's block order" },
  };
  g.ldb = K;
  for (int i = 0; i < nv; i++) {
    if (!vs[i].tensorop || vs[i].tab != KG_BF16 || vs[i].lay[0] == KG_COL || vs[i].lay[1] == KG_ROW) continue;
    ex.variant = vs[i].name;
    g.type_cd = vs[i].tcd;
    for (size_t f = 0; f < sizeof FORCED / sizeof FORCED[0]; f++) {
      g.m = FORCED[f].m; g.n = FORCED[f].n; g.ldd = g.n;
      const char *name = NULL;
      st = kg_gemm_select(&g, &ex, &name);
      kg_explain(KG_OP_GEMM, &g, &ex, buf, sizeof buf);
      if (st != KG_ERROR_NOT_SUPPORTED || !strstr(buf, FORCED[f].why)) {
        printf("FAIL %s: m = %lld, n = %lld gave '%s', want 'not supported' (%s); kg_explain:\n%s", vs[i].name,
               (long long)g.m, (long long)g.n, kg_status_string(st), FORCED[f].why, buf);
        g_fail++;
      } else g_pass++;
    }
  }
  CK(cudaFree(a)); CK(cudaFree(b)); CK(cudaFree(d));
}

/* kg_gemm without a forced variant on aligned bf16 row/col picks tensorop; a
** misaligned ld makes every tensorop variant refuse. */
static void check_dispatch(const vinfo *vs, int nv) {
  int have_bf16_rc = 0;
  for (int i = 0; i < nv; i++)
    if (vs[i].tensorop && vs[i].tab == KG_BF16 && vs[i].tcd == KG_BF16 && vs[i].lay[0] != KG_COL &&
        vs[i].lay[1] != KG_ROW)
      have_bf16_rc = 1;
  void *a, *b, *d;
  CK(cudaMalloc(&a, 256 * 264 * 2));
  CK(cudaMalloc(&b, 256 * 264 * 2));
  CK(cudaMalloc(&d, 256 * 264 * 2));
  kg_gemm_args g;
  memset(&g, 0, sizeof g);
  g.mode = KG_MODE_GEMM; g.m = 256; g.n = 256; g.k = 256; g.batch_count = 1; g.split_k_slices = 1;
  g.type_ab = KG_BF16; g.type_cd = KG_BF16; g.layout_a = KG_ROW; g.layout_b = KG_COL; g.layout_cd = KG_ROW;
  g.a = a; g.lda = 256; g.b = b; g.ldb = 256; g.d = d; g.ldd = 256; g.alpha = 1.0f;
  kg_exec ex;
  memset(&ex, 0, sizeof ex);
  ex.backend = KG_BACKEND_CUDA;
  const char *name = NULL;
  kg_status st = kg_gemm_select(&g, &ex, &name);
  if (st != KG_SUCCESS || !name || (have_bf16_rc && !strstr(name, "_tensorop_"))) {
    printf("FAIL dispatch: aligned bf16 row/col picked %s (%s), want a tensorop variant\n", name ? name : "nothing",
           kg_status_string(st));
    g_fail++;
  } else g_pass++;
  /* misaligned ld: tensorop variants refuse */
  g.lda = 260;
  for (int i = 0; i < nv; i++) {
    if (!vs[i].tensorop || vs[i].tab != KG_BF16) continue;
    ex.variant = vs[i].name;
    g.layout_a = vs[i].lay[0] == KG_COL ? KG_COL : KG_ROW;
    g.layout_b = vs[i].lay[1] == KG_ROW ? KG_ROW : KG_COL;
    g.lda = 260; g.ldb = 256;
    g.type_cd = vs[i].tcd;
    st = kg_gemm_select(&g, &ex, &name);
    if (st != KG_ERROR_MISALIGNED_OPERAND) {
      printf("FAIL %s: lda 260 gave '%s', want 'misaligned operand'\n", vs[i].name, kg_status_string(st));
      g_fail++;
    } else g_pass++;
  }
  CK(cudaFree(a)); CK(cudaFree(b)); CK(cudaFree(d));
  check_dispatch_small(vs, nv);
  check_dispatch_tma(vs, nv);
}

static int cmp_float(const void *x, const void *y) {
  float a = *(const float *)x, b = *(const float *)y;
  return a < b ? -1 : a > b;
}

/* KG_TEST_TIME=1: median time of each tensorop variant at 4096^3. */
static void time_variants(const vinfo *vs, int nv) {
  const int64_t S = 4096;
  void *a, *b, *d;
  size_t bytes = (size_t)(S * S) * 2;
  CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes)); CK(cudaMalloc(&d, (size_t)(S * S) * 4));
  uint16_t *h = malloc(bytes);
  if (!h) exit(2);
  for (int64_t i = 0; i < S * S; i++) h[i] = f32_to_bf16((float)rnd_unit());
  CK(cudaMemcpy(a, h, bytes, cudaMemcpyHostToDevice));
  for (int64_t i = 0; i < S * S; i++) h[i] = f32_to_bf16((float)rnd_unit());
  CK(cudaMemcpy(b, h, bytes, cudaMemcpyHostToDevice));
  free(h);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  for (int i = 0; i < nv; i++) {
    if (!vs[i].tensorop) continue;
    kg_gemm_args g;
    memset(&g, 0, sizeof g);
    g.mode = KG_MODE_GEMM; g.m = S; g.n = S; g.k = S; g.batch_count = 1; g.split_k_slices = 1;
    g.type_ab = vs[i].tab; g.type_cd = vs[i].tcd;
    g.layout_a = vs[i].lay[0] == KG_COL ? KG_COL : KG_ROW;
    g.layout_b = vs[i].lay[1] == KG_COL ? KG_COL : KG_ROW;
    g.layout_cd = KG_ROW;
    g.a = a; g.lda = S; g.b = b; g.ldb = S; g.d = d; g.ldd = S; g.alpha = 1.0f;
    kg_exec ex;
    memset(&ex, 0, sizeof ex);
    ex.backend = KG_BACKEND_CUDA;
    ex.variant = vs[i].name;
    float ms[30];
    kg_status st = KG_SUCCESS;
    for (int w = 0; w < 5 && st == KG_SUCCESS; w++) st = kg_gemm(&g, &ex);
    for (int r = 0; r < 30 && st == KG_SUCCESS; r++) {
      CK(cudaEventRecord(e0, 0));
      st = kg_gemm(&g, &ex);
      CK(cudaEventRecord(e1, 0));
      CK(cudaEventSynchronize(e1));
      CK(cudaEventElapsedTime(&ms[r], e0, e1));
    }
    CK(cudaGetLastError());
    if (st != KG_SUCCESS) { printf("time %s: %s\n", vs[i].name, kg_status_string(st)); continue; }
    qsort(ms, 30, sizeof ms[0], cmp_float);
    double med = ms[15];
    printf("time %s 4096^3: %.3f ms, %.1f TFLOP/s (min %.3f ms)\n", vs[i].name, med, 2.0 * S * S * S / (med * 1e-3) / 1e12,
           ms[0]);
  }
  CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
  CK(cudaFree(a)); CK(cudaFree(b)); CK(cudaFree(d));
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;   /* run only the variants whose name contains it */
  int ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  if (ndev < 1 || !kg_backend_available(KG_BACKEND_CUDA)) {
    printf("no CUDA device or CUDA backend not compiled in\n0 passed, 1 failed\n");
    return 1;
  }
  int nall = kg_variant_count(), nv = 0;
  vinfo *vs = calloc((size_t)(nall > 0 ? nall : 1), sizeof *vs);
  if (!vs) return 2;
  for (int i = 0; i < nall; i++) {
    const char *name = kg_variant_name(i);
    if (!name || !strstr(name, "_cuda_")) continue;
    if (strncmp(name, "kg_gemm_", 8) != 0) continue;  /* other operations have their own tests */
    if (only && !strstr(name, only)) continue;
    if (!parse_variant(name, &vs[nv])) {
      printf("FAIL cannot parse variant name %s\n", name);
      g_fail++;
      continue;
    }
    nv++;
  }
  if (nv == 0) { printf("FAIL no CUDA GEMM variants compiled in\n"); g_fail++; }

  static const struct { int64_t m, n, k; } SIZES[] = {
    { 1, 1, 1 }, { 37, 53, 29 }, { 129, 257, 67 }, { 255, 130, 520 }, { 8, 16, 8 }, { 200, 72, 1000 },
    { 16, 300, 136 }, { 3, 77, 301 },
  };
  const int nsizes = (int)(sizeof SIZES / sizeof SIZES[0]);

  for (int vi = 0; vi < nv; vi++) {
    vinfo *v = &vs[vi];
    int before = g_fail;
    for (int combo = 0; combo < 8; combo++) {
      int la = combo & 1, lb = (combo >> 1) & 1, lcd = (combo >> 2) & 1;
      if ((v->lay[0] >= 0 && v->lay[0] != la) || (v->lay[1] >= 0 && v->lay[1] != lb) ||
          (v->lay[2] >= 0 && v->lay[2] != lcd))
        continue;
      for (int si = 0; si < nsizes; si++) {
        tcase c;
        memset(&c, 0, sizeof c);
        c.m = SIZES[si].m; c.n = SIZES[si].n; c.k = SIZES[si].k;
        c.la = la; c.lb = lb; c.lcd = lcd; c.batch = 1; c.slices = 1;
        c.alpha = 1.0f; c.beta = 0.0f;
        /* plain gemm: random, beta 0, c NULL */
        c.mode = KG_MODE_GEMM; c.cmode = C_NONE;
        run_case(v, &c);
        /* integers, beta != 0, padded lds */
        c.integer = 1; c.cmode = C_FULL; c.alpha = 2.0f; c.beta = -1.0f; c.pad = v->align > 1 ? v->align : 3;
        run_case(v, &c);
        /* random, beta = 0 with a NaN C (never read), alpha 0.5 */
        c.integer = 0; c.cmode = C_NAN; c.alpha = 0.5f; c.pad = 0;
        run_case(v, &c);
        /* bias row broadcast (ldc = 0), random */
        c.cmode = C_BIAS; c.alpha = 1.0f; c.beta = 1.0f;
        run_case(v, &c);
        /* batched: 3 problems, then with B broadcast; integers */
        c.mode = KG_MODE_BATCHED; c.batch = 3; c.integer = 1; c.cmode = C_FULL; c.beta = 0.5f;
        run_case(v, &c);
        c.bcast_b = 1; c.cmode = C_BIAS; c.integer = 0; c.beta = 1.0f;
        run_case(v, &c);
        /* serial split-K */
        c.mode = KG_MODE_SPLITK_SERIAL; c.batch = 1; c.bcast_b = 0; c.slices = c.k >= 3 ? 3 : c.k;
        c.integer = 1; c.cmode = C_FULL; c.beta = -1.0f;
        run_case(v, &c);
        c.slices = c.k >= 2 ? 2 : 1; c.integer = 0; c.cmode = C_NONE; c.beta = 0.0f;
        run_case(v, &c);
      }
    }
    if (v->tensorop) {
      tcase c;
      memset(&c, 0, sizeof c);
      c.mode = KG_MODE_GEMM; c.m = 1024; c.n = 1024; c.k = 2048; c.batch = 1; c.slices = 1;
      c.la = v->lay[0] == KG_COL ? KG_COL : KG_ROW;
      c.lb = v->lay[1] == KG_COL ? KG_COL : KG_ROW;
      c.lcd = v->lay[2] == KG_COL ? KG_COL : KG_ROW;
      c.alpha = 1.0f; c.cmode = C_FULL; c.beta = 1.0f;
      run_case(v, &c);
      c.integer = 1; c.mode = KG_MODE_SPLITK_SERIAL; c.slices = 4; c.cmode = C_NONE; c.beta = 0.0f;
      run_case(v, &c);
    }
    if (v->ran == 0) {
      printf("FAIL %s: took none of the cases\n", v->name);
      g_fail++;
    }
    fprintf(stderr, "%s: %d cases, %s\n", v->name, v->ran, g_fail == before ? "ok" : "FAILED");
  }

  check_dispatch(vs, nv);

  const char *t = getenv("KG_TEST_TIME");
  if (t && *t && strcmp(t, "0") != 0) time_variants(vs, nv);

  free(vs);
  summary();
  return g_fail ? 1 : 0;
}
