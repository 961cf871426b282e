/*
** bench_cpu.c -- the C backend (CPU path): FP4-weight GEMM and
** DualGemm against kg's own bf16 GEMM / DualGemm on the same shapes, whose
** weights are the FP4 weights dequantized to bf16 (the CPU counterpart of
** bench_fp4's cuBLAS rows), plus the NVFP4 quantizer and dequantizer.
**
** Per row: the median of KG_BENCH_REPS timed calls (default 20; wall clock,
** one call per sample after one warm-up call), the weight bytes per second
** (FP4 codes and scales; quantizer: bf16 read; dequantizer: bf16 written),
** GFLOP/s (2 m n k per product), and a check of the
** timed output: 64 sampled outputs against a double-precision sum over the
** weights decoded here (E2M1 table, E4M3 / UE8M0 scales, kg_sf_offset),
** tolerance derived from K; NaN fails. The copy ceiling (memcpy of 256 MiB,
** bytes read plus written) is measured in the same run.
**
** Threads: the C backend's (kg_internal.h): OMP_NUM_THREADS where libkg was
** built with OpenMP (the default), else one; the header prints the count.
** Knobs: KG_BENCH_REPS, KG_BENCH_MS=1,16 (the M values; default 1,2,4,8,16,128),
** KG_BENCH_OPS=gemm,dual,quantize,dequantize (default all), KG_COMMIT (commit printed
** where git is absent). Exit status 1 when any check fails.
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kg.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

static int g_failed = 0;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static long env_long(const char *name, long dflt) {
  const char *s = getenv(name);
  return s && *s ? strtol(s, NULL, 10) : dflt;
}

static int wants(const char *list_env, const char *item) {
  const char *s = getenv(list_env);
  if (!s || !*s) return 1;
  size_t n = strlen(item);
  for (const char *p = s; (p = strstr(p, item)) != NULL; p += n)
    if ((p == s || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
  return 0;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) { fprintf(stderr, "out of memory (%zu bytes)\n", n); exit(2); }
  return p;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd32(void) {
  g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17;
  return (uint32_t)(g_rng >> 16);
}
static uint16_t bf16_of(float x) {   /* round to nearest even (inputs are finite) */
  uint32_t u;
  memcpy(&u, &x, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float f32_of_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float x;
  memcpy(&x, &u, 4);
  return x;
}
/* bf16 uniform in (-1, 1), never zero */
static uint16_t rnd_bf16(void) {
  float x = ((float)(rnd32() & 0xffffu) + 0.5f) / 32768.0f - 1.0f;
  return bf16_of(x);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median seconds of reps calls of fn(ctx) after one warm-up call; the call's status must be success. */
static double time_median(kg_status (*fn)(void *), void *ctx, int reps, const char *what) {
  kg_status st = fn(ctx);
  if (st != KG_SUCCESS) { fprintf(stderr, "%s: %s\n", what, kg_status_string(st)); exit(2); }
  double *t = xmalloc(sizeof(double) * (size_t)reps);
  for (int r = 0; r < reps; r++) {
    double t0 = now_s();
    fn(ctx);
    t[r] = now_s() - t0;
  }
  qsort(t, (size_t)reps, sizeof(double), cmp_double);
  double med = t[reps / 2];
  free(t);
  return med;
}

/* ---- FP4 weights and their decoding (independent of the library's kernels) ---- */
static double e2m1(unsigned c) {
  static const double v[8] = { 0, 0.5, 1, 1.5, 2, 3, 4, 6 };
  return (c & 8u) ? -v[c & 7u] : v[c & 7u];
}
static double e4m3(unsigned s) {   /* the scales written here are normal and finite */
  int e = (int)((s >> 3) & 15u), m = (int)(s & 7u);
  double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
  return (s & 0x80u) ? -v : v;
}

typedef struct fp4w {
  kg_fp4_format fmt;
  int64_t n, k, kv;
  uint8_t *q, *sf;
  size_t sf_bytes;
  float gs;
} fp4w;

static fp4w make_fp4w(kg_fp4_format fmt, int64_t n, int64_t k) {
  fp4w w = { .fmt = fmt, .n = n, .k = k, .kv = kg_fp4_kv(fmt, k), .gs = 1.0f };
  w.q = xmalloc((size_t)(n * k / 2));
  for (int64_t i = 0; i < n * k / 2; i++) w.q[i] = (uint8_t)rnd32();
  if (kg_sf_size(KG_SF_SWIZZLED_128X4, n, w.kv, 1, &w.sf_bytes) != KG_SUCCESS) exit(2);
  w.sf = xmalloc(w.sf_bytes);
  memset(w.sf, 0, w.sf_bytes);
  for (int64_t r = 0; r < n; r++)   /* NVFP4: E4M3 1/16 .. 15/16; MXFP4: 2^-7 .. 2^-4 */
    for (int64_t b = 0; b < w.kv; b++)
      w.sf[kg_sf_offset(KG_SF_SWIZZLED_128X4, n, w.kv, 0, r, b)] =
          (uint8_t)(fmt == KG_FP4_NVFP4 ? 0x18 + rnd32() % 24 : 120 + rnd32() % 4);
  return w;
}
static void free_fp4w(fp4w *w) { free(w->q); free(w->sf); }

static double fp4w_at(const fp4w *w, int64_t r, int64_t kk) {
  unsigned byte = w->q[r * (w->k / 2) + kk / 2], code = kk % 2 ? byte >> 4 : byte & 15u;
  unsigned s = w->sf[kg_sf_offset(KG_SF_SWIZZLED_128X4, w->n, w->kv, 0, r, kk / (w->fmt == KG_FP4_NVFP4 ? 16 : 32))];
  return e2m1(code) * (w->fmt == KG_FP4_NVFP4 ? e4m3(s) : ldexp(1.0, (int)s - 127)) / w->gs;
}
static size_t fp4w_bytes(const fp4w *w) { return (size_t)(w->n * w->k / 2) + w->sf_bytes; }

/* The weights as bf16 [n, k] (exact: at most 6 significant bits). */
static uint16_t *fp4w_bf16(const fp4w *w) {
  uint16_t *b = xmalloc(sizeof(uint16_t) * (size_t)(w->n * w->k));
  for (int64_t r = 0; r < w->n; r++)
    for (int64_t kk = 0; kk < w->k; kk++) b[r * w->k + kk] = bf16_of((float)fp4w_at(w, r, kk));
  return b;
}

/* Checks 64 sampled outputs of D [m, n] (bf16) = A . W^T (op: silu(A.W0^T) * A.W1^T when w1). */
static const char *check_rows(const uint16_t *a, const fp4w *w0, const fp4w *w1, const uint16_t *d, int64_t m) {
  const int64_t n = w0->n, k = w0->k;
  for (int s = 0; s < 64; s++) {
    int64_t i = (int64_t)(rnd32() % (uint32_t)m), j = (int64_t)(rnd32() % (uint32_t)n);
    double s0 = 0, s1 = 0, abs0 = 0, abs1 = 0;
    for (int64_t kk = 0; kk < k; kk++) {
      double x = f32_of_bf16(a[i * k + kk]);
      double p0 = x * fp4w_at(w0, j, kk);
      s0 += p0; abs0 += fabs(p0);
      if (w1) { double p1 = x * fp4w_at(w1, j, kk); s1 += p1; abs1 += fabs(p1); }
    }
    double got = f32_of_bf16(d[i * n + j]), ref, tol;
    const double acc = (double)(k + 4) * ldexp(1.0, -23);
    if (!w1) {
      ref = s0;
      tol = ldexp(1.0, -7) * fabs(ref) + acc * abs0;
    } else {   /* D0, D1 rounded to bf16, then the op: bounded through |d/dx silu| <= 1.1 */
      double g = s0 / (1.0 + exp(-s0));
      ref = g * s1;
      tol = ldexp(1.0, -6) * fabs(ref) + 1.1 * (ldexp(1.0, -8) * fabs(s0) + acc * abs0) * fabs(s1) +
            fabs(g) * (ldexp(1.0, -8) * fabs(s1) + acc * abs1) + 1e-30;
    }
    if (!(fabs(got - ref) <= tol)) return "FAIL";
  }
  return "ok";
}

/* ---- timed calls ---- */
typedef struct gemm_ctx { kg_gemm_fp4_args f; kg_gemm_args b; kg_dualgemm_fp4_args df; kg_dualgemm_args db; kg_exec ex; } gemm_ctx;
static kg_status call_fp4(void *c) { gemm_ctx *g = c; return kg_gemm_fp4(&g->f, &g->ex); }
static kg_status call_bf16(void *c) { gemm_ctx *g = c; return kg_gemm(&g->b, &g->ex); }
static kg_status call_dual_fp4(void *c) { gemm_ctx *g = c; return kg_dualgemm_fp4(&g->df, &g->ex); }
static kg_status call_dual_bf16(void *c) { gemm_ctx *g = c; return kg_dualgemm(&g->db, &g->ex); }

static void row(const char *op, const char *fmt, int64_t m, int64_t n, int64_t k, const char *variant, double t_kg,
                double t_peer, double wbytes, double flops, const char *check) {
  printf("%-8s %-6s %5lld %6lld %6lld %-52s %9.3f %9.3f %7.2f %7.2f %7.2f  %s\n", op, fmt, (long long)m, (long long)n,
         (long long)k, variant, t_kg * 1e3, t_peer * 1e3, t_peer / t_kg, wbytes / t_kg / 1e9, flops / t_kg / 1e9, check);
  fflush(stdout);
  if (strcmp(check, "ok") != 0) g_failed = 1;
}

static void bench_gemm(kg_fp4_format fmt, int64_t m, int64_t n, int64_t k, int reps, fp4w *w, uint16_t *wb) {
  uint16_t *a = xmalloc(sizeof(uint16_t) * (size_t)(m * k)), *d = xmalloc(sizeof(uint16_t) * (size_t)(m * n));
  for (int64_t i = 0; i < m * k; i++) a[i] = rnd_bf16();
  gemm_ctx g = { .ex = { .backend = KG_BACKEND_C } };
  g.f = (kg_gemm_fp4_args){ .m = m, .n = n, .k = k, .dtype = KG_BF16, .format = fmt, .sf_layout = KG_SF_SWIZZLED_128X4,
                            .a = a, .lda = k, .b = w->q, .ldb = k / 2, .sf_b = w->sf, .sf_b_bytes = w->sf_bytes,
                            .d = d, .ldd = n, .alpha = 1.0f };
  g.b = (kg_gemm_args){ .mode = KG_MODE_GEMM, .m = m, .n = n, .k = k, .batch_count = 1, .split_k_slices = 1,
                        .type_ab = KG_BF16, .type_cd = KG_BF16, .layout_a = KG_ROW, .layout_b = KG_COL,
                        .layout_cd = KG_ROW, .a = a, .lda = k, .b = wb, .ldb = k, .d = d, .ldd = n, .alpha = 1.0f };
  const char *name = "?";
  kg_gemm_fp4_select(&g.f, &g.ex, &name);
  double tp = time_median(call_bf16, &g, reps, "kg_gemm bf16");
  memset(d, 0xff, sizeof(uint16_t) * (size_t)(m * n));   /* NaN poison before the timed FP4 calls */
  double tk = time_median(call_fp4, &g, reps, "kg_gemm_fp4");
  const char *check = check_rows(a, w, NULL, d, m);
  row("gemm", fmt == KG_FP4_NVFP4 ? "nvfp4" : "mxfp4", m, n, k, name + 3, tk, tp, (double)fp4w_bytes(w),
      2.0 * (double)m * (double)n * (double)k, check);
  free(a); free(d);
}

static void bench_dual(kg_fp4_format fmt, int64_t m, int64_t n, int64_t k, int reps, fp4w *w0, fp4w *w1, uint16_t *b0,
                       uint16_t *b1) {
  uint16_t *a = xmalloc(sizeof(uint16_t) * (size_t)(m * k)), *d = xmalloc(sizeof(uint16_t) * (size_t)(m * n));
  for (int64_t i = 0; i < m * k; i++) a[i] = rnd_bf16();
  gemm_ctx g = { .ex = { .backend = KG_BACKEND_C } };
  g.df = (kg_dualgemm_fp4_args){ .mode = KG_MODE_GEMM, .m = m, .n = n, .k = k, .batch_count = 1, .dtype = KG_BF16,
                                 .format = fmt, .sf_layout = KG_SF_SWIZZLED_128X4, .op = KG_DUAL_SWIGLU,
                                 .a = a, .lda = k, .b0 = w0->q, .ldb0 = k / 2, .sf_b0 = w0->sf,
                                 .sf_b0_bytes = w0->sf_bytes, .b1 = w1->q, .ldb1 = k / 2, .sf_b1 = w1->sf,
                                 .sf_b1_bytes = w1->sf_bytes, .d2 = d, .ldd2 = n, .alpha0 = 1.0f, .alpha1 = 1.0f };
  g.db = (kg_dualgemm_args){ .mode = KG_MODE_GEMM, .m = m, .n = n, .k = k, .batch_count = 1, .split_k_slices = 1,
                             .type_ab = KG_BF16, .type_cd = KG_BF16, .layout_a = KG_ROW, .layout_b0 = KG_COL,
                             .layout_b1 = KG_COL, .layout_cd = KG_ROW, .op = KG_DUAL_SWIGLU, .a = a, .lda = k,
                             .b0 = b0, .ldb0 = k, .b1 = b1, .ldb1 = k, .d2 = d, .ldd2 = n, .alpha0 = 1.0f,
                             .alpha1 = 1.0f };
  const char *name = "?";
  kg_dualgemm_fp4_select(&g.df, &g.ex, &name);
  double tp = time_median(call_dual_bf16, &g, reps, "kg_dualgemm bf16");
  memset(d, 0xff, sizeof(uint16_t) * (size_t)(m * n));
  double tk = time_median(call_dual_fp4, &g, reps, "kg_dualgemm_fp4");
  const char *check = check_rows(a, w0, w1, d, m);
  row("dual", fmt == KG_FP4_NVFP4 ? "nvfp4" : "mxfp4", m, n, k, name + 3, tk, tp,
      (double)(fp4w_bytes(w0) + fp4w_bytes(w1)), 4.0 * (double)m * (double)n * (double)k, check);
  free(a); free(d);
}

typedef struct quant_ctx { kg_fp4_args q; kg_exec ex; } quant_ctx;
static kg_status call_quant(void *c) { quant_ctx *q = c; return kg_fp4_quantize(&q->q, &q->ex); }

static void bench_quantize(int64_t rows, int64_t k, int reps) {
  uint16_t *x = xmalloc(sizeof(uint16_t) * (size_t)(rows * k));
  for (int64_t i = 0; i < rows * k; i++) x[i] = rnd_bf16();
  size_t sfb = 0;
  if (kg_sf_size(KG_SF_SWIZZLED_128X4, rows, kg_fp4_kv(KG_FP4_NVFP4, k), 1, &sfb) != KG_SUCCESS) exit(2);
  uint8_t *q = xmalloc((size_t)(rows * k / 2)), *sf = xmalloc(sfb);
  float gs = kg_nvfp4_global_scale(1.0f);
  quant_ctx c = { .q = { .format = KG_FP4_NVFP4, .sf_layout = KG_SF_SWIZZLED_128X4, .dtype = KG_BF16, .batch = 1,
                         .rows = rows, .k = k, .x = x, .ldx = k, .q = q, .ldq = k / 2, .sf = sf, .sf_bytes = sfb,
                         .global_scale = &gs },
                  .ex = { .backend = KG_BACKEND_C } };
  double t = time_median(call_quant, &c, reps, "kg_fp4_quantize");
  /* check: the codes and scales dequantize back within one FP4 step of x's block amax */
  const char *check = "ok";
  for (int s = 0; s < 64; s++) {
    int64_t r = (int64_t)(rnd32() % (uint32_t)rows), kk = (int64_t)(rnd32() % (uint32_t)k);
    unsigned byte = q[r * (k / 2) + kk / 2], code = kk % 2 ? byte >> 4 : byte & 15u;
    double sv = e4m3(sf[kg_sf_offset(KG_SF_SWIZZLED_128X4, rows, kg_fp4_kv(KG_FP4_NVFP4, k), 0, r, kk / 16)]);
    double back = e2m1(code) * sv / gs, xv = f32_of_bf16(x[r * k + kk]);
    if (!(fabs(back - xv) <= 2.0 * sv / gs + 1e-12)) check = "FAIL";   /* an FP4 step is at most 2 * scale */
  }
  printf("%-8s %-6s %5lld %6lld %6lld %-52s %9.3f %9s %7s %7.2f %7s  %s\n", "quantize", "nvfp4", (long long)rows, 0LL,
         (long long)k, "kg_fp4_c_quantize_nvfp4_bf16_sf128x4", t * 1e3, "-", "-",
         (double)(rows * k) * 2.0 / t / 1e9, "-", check);
  if (strcmp(check, "ok") != 0) g_failed = 1;
  free(x); free(q); free(sf);
}

static kg_status call_dequant(void *c) { quant_ctx *q = c; return kg_fp4_dequantize(&q->q, &q->ex); }

/* NVFP4 [rows, k] (128x4 scales) to bf16: GB/s of bf16 written. */
static void bench_dequantize(int64_t rows, int64_t k, int reps) {
  fp4w w = make_fp4w(KG_FP4_NVFP4, rows, k);
  uint16_t *x = xmalloc(sizeof(uint16_t) * (size_t)(rows * k));
  memset(x, 0xff, sizeof(uint16_t) * (size_t)(rows * k));   /* NaN poison */
  quant_ctx c = { .q = { .format = KG_FP4_NVFP4, .sf_layout = KG_SF_SWIZZLED_128X4, .dtype = KG_BF16, .batch = 1,
                         .rows = rows, .k = k, .x = x, .ldx = k, .q = w.q, .ldq = k / 2, .sf = w.sf,
                         .sf_bytes = w.sf_bytes, .global_scale = &w.gs },
                  .ex = { .backend = KG_BACKEND_C } };
  double t = time_median(call_dequant, &c, reps, "kg_fp4_dequantize");
  const char *check = "ok";   /* the values are exact in bf16 (at most 6 significant bits) */
  for (int s = 0; s < 64; s++) {
    int64_t r = (int64_t)(rnd32() % (uint32_t)rows), kk = (int64_t)(rnd32() % (uint32_t)k);
    if (!((double)f32_of_bf16(x[r * k + kk]) == fp4w_at(&w, r, kk))) check = "FAIL";
  }
  printf("%-8s %-6s %5lld %6lld %6lld %-52s %9.3f %9s %7s %7.2f %7s  %s\n", "dequant", "nvfp4", (long long)rows, 0LL,
         (long long)k, "kg_fp4_c_dequantize_nvfp4_bf16_sf128x4", t * 1e3, "-", "-",
         (double)(rows * k) * 2.0 / t / 1e9, "-", check);
  if (strcmp(check, "ok") != 0) g_failed = 1;
  free(x);
  free_fp4w(&w);
}

static double copy_gbs(void) {
  const size_t n = (size_t)256 << 20;
  char *a = xmalloc(n), *b = xmalloc(n);
  memset(a, 1, n); memset(b, 2, n);
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = now_s();
    memcpy(b, a, n);
    double t = now_s() - t0;
    if (t < best) best = t;
  }
  volatile char sink = b[n / 2];
  (void)sink;
  free(a); free(b);
  return 2.0 * (double)n / best / 1e9;
}

static void header(void) {
  char cpu[256] = "unknown";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "model name", 10)) {
        char *p = strchr(line, ':');
        if (p) { snprintf(cpu, sizeof cpu, "%s", p + 2); cpu[strcspn(cpu, "\n")] = 0; }
        break;
      }
    fclose(f);
  }
  const char *commit = getenv("KG_COMMIT");
  char sha[64] = "unknown";
  if (commit && *commit) snprintf(sha, sizeof sha, "%s", commit);
  else {
    FILE *g = popen("git rev-parse --short HEAD 2>/dev/null", "r");
    if (g) { if (fgets(sha, sizeof sha, g)) sha[strcspn(sha, "\n")] = 0; pclose(g); }
  }
  time_t t = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
#if defined(_OPENMP)
  const int threads = omp_get_max_threads();
#else
  const int threads = 1;
#endif
  printf("==== kg C backend vs kg bf16 on the dequantized weights ====\n");
  printf("CPU          %s\n", cpu);
  printf("threads      %d (the C backend's: OMP_NUM_THREADS; problems under 4e6 multiply-adds: 1)\n", threads);
  printf("compiler     %s\n", __VERSION__);
  printf("commit       %s\n", sha);
  printf("date         %s\n", date);
  printf("ceiling      memcpy %.1f GB/s (256 MiB, read+write)\n", copy_gbs());
  printf("%-8s %-6s %5s %6s %6s %-52s %9s %9s %7s %7s %7s  %s\n", "op", "fmt", "M", "N", "K", "kg variant", "kg ms",
         "bf16 ms", "bf16/kg", "w GB/s", "GFLOP/s", "check");
}

int main(void) {
  const int reps = (int)env_long("KG_BENCH_REPS", 20);
  int64_t ms[16], nm = 0;
  const char *ms_env = getenv("KG_BENCH_MS");
  if (ms_env && *ms_env) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", ms_env);
    for (char *s = strtok(buf, ","); s && nm < 16; s = strtok(NULL, ",")) ms[nm++] = strtoll(s, NULL, 10);
  } else {
    const int64_t dflt[] = { 1, 2, 4, 8, 16, 128 };
    for (nm = 0; nm < 6; nm++) ms[nm] = dflt[nm];
  }
  header();
  const int64_t shapes[2][2] = { { 4096, 4096 }, { 14336, 4096 } };
  if (wants("KG_BENCH_OPS", "gemm"))
    for (int f = 0; f < 2; f++)
      for (int s = 0; s < 2; s++) {
        const kg_fp4_format fmt = f ? KG_FP4_MXFP4 : KG_FP4_NVFP4;
        if (fmt == KG_FP4_MXFP4 && s) continue;   /* MXFP4: the 4096 x 4096 rows */
        fp4w w = make_fp4w(fmt, shapes[s][0], shapes[s][1]);
        uint16_t *wb = fp4w_bf16(&w);
        for (int64_t i = 0; i < nm; i++) bench_gemm(fmt, ms[i], w.n, w.k, reps, &w, wb);
        free(wb);
        free_fp4w(&w);
      }
  if (wants("KG_BENCH_OPS", "dual")) {
    fp4w w0 = make_fp4w(KG_FP4_NVFP4, 14336, 4096), w1 = make_fp4w(KG_FP4_NVFP4, 14336, 4096);
    uint16_t *b0 = fp4w_bf16(&w0), *b1 = fp4w_bf16(&w1);
    for (int64_t i = 0; i < nm; i++)
      if (ms[i] <= 16) bench_dual(KG_FP4_NVFP4, ms[i], 14336, 4096, reps, &w0, &w1, b0, b1);
    free(b0); free(b1);
    free_fp4w(&w0); free_fp4w(&w1);
  }
  if (wants("KG_BENCH_OPS", "quantize")) bench_quantize(4096, 4096, reps);
  if (wants("KG_BENCH_OPS", "dequantize")) bench_dequantize(4096, 4096, reps);
  return g_failed;
}
