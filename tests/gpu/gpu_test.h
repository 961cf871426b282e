/*
** gpu_test.h -- what every GPU test program (tests/gpu/test_gpu*.c) shares: the pass / fail
** counters and the closing line, host allocation, the CUDA error check and the backend memory
** shims, plus the f16 / bf16 conversions written here (never the runtime's converters).
** Static functions; include once per program, after the standard headers.
**
** Compiled with -DKG_GPU_TEST_HOST a program runs the C-backend variants (kg_*_c_*) in host
** memory (malloc, memcpy for transfers, no CUDA): that checks the test's reference and
** bookkeeping on a machine without a GPU (`make test-gpu-host`). Otherwise it runs the CUDA
** variants through cudart on g_stream.
*/
#ifndef KG_GPU_TEST_H
#define KG_GPU_TEST_H

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KG_GPU_TEST_HOST
#include <cuda_runtime.h>
#endif

#include "kg.h"

/* The backend under test and its name in variant names (kg_<family>_<BACKEND_NAME>_...). */
#ifdef KG_GPU_TEST_HOST
#define BACKEND KG_BACKEND_C
#define BACKEND_NAME "c"
#else
#define BACKEND KG_BACKEND_CUDA
#define BACKEND_NAME "cuda"
#endif

/* ---- counters --------------------------------------------------------------------------------- */

static int g_pass, g_fail;

/* The closing line "N passed, M failed", flushed. */
static inline void summary(void) {
  printf("%d passed, %d failed\n", g_pass, g_fail);
  fflush(stdout);
}

/* Zeroed host memory (at least 1 byte); exits 2 when there is none. */
static inline void *xmalloc(size_t bytes) {
  void *p = calloc(bytes ? bytes : 1, 1);
  if (!p) { fprintf(stderr, "out of host memory (%zu bytes)\n", bytes); exit(2); }
  return p;
}

/* ---- backend memory ----------------------------------------------------------------------------
** dev_alloc(n): n bytes plus 16 of slack (a test may offset a pointer to misalign it); dev_free;
** h2d / d2h: complete, synchronous copies; dev_sync: after every kg call, the work on g_stream
** finished and no error is pending. g_stream is the stream every kg_exec gets. */

#ifdef KG_GPU_TEST_HOST
static void *g_stream = NULL;
static inline void *dev_alloc(size_t n) { return xmalloc(n + 16); }
static inline void dev_free(void *p) { free(p); }
static inline void h2d(void *d, const void *h, size_t n) { memcpy(d, h, n); }
static inline void d2h(void *h, const void *d, size_t n) { memcpy(h, d, n); }
static inline void dev_sync(void) {}
#else
static cudaStream_t g_stream;

/* A failing CUDA call: a FAIL line, the closing line, exit 2. */
#define CK(call)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      printf("FAIL CUDA %s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      g_fail++;                                                                               \
      summary();                                                                              \
      exit(2);                                                                                \
    }                                                                                         \
  } while (0)

static inline void *dev_alloc(size_t n) {
  void *p = NULL;
  CK(cudaMalloc(&p, n + 16));
  return p;
}
static inline void dev_free(void *p) { CK(cudaFree(p)); }
static inline void h2d(void *d, const void *h, size_t n) {
  CK(cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, g_stream));
  CK(cudaStreamSynchronize(g_stream));
}
static inline void d2h(void *h, const void *d, size_t n) {
  CK(cudaMemcpyAsync(h, d, n, cudaMemcpyDeviceToHost, g_stream));
  CK(cudaStreamSynchronize(g_stream));
}
static inline void dev_sync(void) {
  CK(cudaStreamSynchronize(g_stream));
  CK(cudaGetLastError());
}
#endif

/* kg_exec of the backend under test on g_stream, forcing `variant` (NULL: dispatch). */
static inline kg_exec exec_for(const char *variant) {
  kg_exec e;
  memset(&e, 0, sizeof e);
  e.backend = BACKEND;
  e.stream = (void *)g_stream;
  e.variant = variant;
  return e;
}

/* ---- the references, threaded -----------------------------------------------------------------
** par_for(n, work, fn, ctx): fn(ctx, lo, hi) over [0, n) in up to PAR_THREADS parts, each part
** given to its own thread when work (the caller's estimate of the operations) is at least 2^22;
** a thread that cannot start leaves its part to the caller. fn writes only its own items' results,
** so what is computed never depends on the thread count. */
enum { PAR_THREADS = 16 };

typedef struct par_part {
  void (*fn)(void *ctx, int64_t lo, int64_t hi);
  void *ctx;
  int64_t lo, hi;
} par_part;

static inline void *par_run(void *arg) {
  const par_part *p = (const par_part *)arg;
  p->fn(p->ctx, p->lo, p->hi);
  return NULL;
}

static inline void par_for(int64_t n, int64_t work, void (*fn)(void *ctx, int64_t lo, int64_t hi), void *ctx) {
  pthread_t th[PAR_THREADS];
  par_part parts[PAR_THREADS];
  const int nt = work >= ((int64_t)1 << 22) && n >= 2 ? (n < PAR_THREADS ? (int)n : PAR_THREADS) : 1;
  int started[PAR_THREADS] = { 0 };
  for (int t = 0; t < nt; t++) {
    parts[t] = (par_part){ fn, ctx, n * t / nt, n * (t + 1) / nt };
    if (nt > 1 && pthread_create(&th[t], NULL, par_run, &parts[t]) == 0) started[t] = 1;
    else par_run(&parts[t]);
  }
  for (int t = 0; t < nt; t++)
    if (started[t]) pthread_join(th[t], NULL);
}

/* ref_dots: for every (i, j) of an m x n output, s[i * n + j] = sum over q < k of a[i * lda + q] *
** w[j * ldw + q] and sa[i * n + j] = sum of |a * w|, in q order. Rows of a and w are double, decoded
** by the caller; the output elements are split over threads (m = 1 with a wide n splits too). */
typedef struct ref_dots_ctx {
  const double *a, *w;
  int64_t lda, ldw, n, k;
  double *s, *sa;
} ref_dots_ctx;

static inline void ref_dots_part(void *ctx, int64_t e0, int64_t e1) {
  const ref_dots_ctx *j = (const ref_dots_ctx *)ctx;
  for (int64_t e = e0; e < e1; e++) {
    const double *x = j->a + (e / j->n) * j->lda, *y = j->w + (e % j->n) * j->ldw;
    double s = 0.0, sa = 0.0;
    for (int64_t q = 0; q < j->k; q++) {
      const double p = x[q] * y[q];
      s += p;
      sa += fabs(p);
    }
    j->s[e] = s;
    j->sa[e] = sa;
  }
}

static inline void ref_dots(const double *a, int64_t lda, const double *w, int64_t ldw, int64_t m, int64_t n, int64_t k,
                            double *s, double *sa) {
  ref_dots_ctx c = { a, w, lda, ldw, n, k, s, sa };
  par_for(m * n, m * n * k, ref_dots_part, &c);
}

/* ---- f16 / bf16, written here (round to nearest even) ------------------------------------------ */

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* bf16 / f16 bits of an f32 (NaN stays NaN, overflow to Inf, subnormals kept). */
static inline uint16_t f32_to_bf16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static inline uint16_t f32_to_f16(float f) {
  uint32_t x = f2u(f), ax = x & 0x7fffffffu;
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  if (ax > 0x7f800000u) return sign | 0x7e00u;            /* NaN */
  if (ax >= 0x477ff000u) return sign | 0x7c00u;           /* >= 65520 rounds to inf */
  if (ax < 0x38800000u)                                   /* below 2^-14: subnormal or zero */
    return sign | (uint16_t)rintf(u2f(ax) * 16777216.0f); /* units of 2^-24; 1024 is 2^-14 */
  uint32_t h = (((ax >> 23) - 112u) << 10) | ((ax >> 13) & 0x3ffu), rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return sign | (uint16_t)h;
}

/* Exact values of bf16 / f16 bits. */
static inline double bf16_to_f64(uint16_t h) { return u2f((uint32_t)h << 16); }
static inline double f16_to_f64(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp((double)m, -24) : ldexp((double)(m | 1024), e - 25);
  return (h & 0x8000u) ? -v : v;
}
static inline double val16(uint16_t h, int bf) { return bf ? bf16_to_f64(h) : f16_to_f64(h); }

/* Nearest-even 16-bit pattern (bf: bf16, else f16) of an input value v: normal, |v| < 65504, or
** (f16) below 2^-14, which gives a signed zero. Inputs only: no NaN, Inf or subnormal handling. */
static inline uint16_t to16(double v, int bf) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  if (bf) return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  double a = fabs(v);
  if (a < ldexp(1.0, -14)) return (uint16_t)(v < 0 ? 0x8000u : 0);
  int e;
  double fr = frexp(a, &e);   /* a = fr * 2^e, fr in [0.5, 1) */
  double mant = nearbyint((fr * 2.0 - 1.0) * 1024.0);
  int ex = e - 1 + 15;
  if (mant >= 1024.0) { mant = 0; ex++; }
  return (uint16_t)((v < 0 ? 0x8000u : 0) | ((unsigned)ex << 10) | (unsigned)mant);
}

/* Value of v rounded to the output type (nearest even; overflow to Inf, f16 subnormals). */
static inline double round16(double v, int bf) {
  if (bf) return bf16_to_f64(to16(v, 1));
  if (fabs(v) >= 65520.0) return v > 0 ? INFINITY : -INFINITY;
  if (fabs(v) < ldexp(1.0, -14)) return nearbyint(v * ldexp(1.0, 24)) * ldexp(1.0, -24);   /* subnormals */
  return f16_to_f64(to16(v, 0));
}

/* Whether a 16-bit output got (bf16 when bf, else f16) matches the reference ref within tol:
** |got - ref| <= tol, or got is the Inf of ref's sign and some value within tol of ref rounds to
** Inf in the output type (|ref| + tol at least its overflow threshold: f16 65520, bf16
** (2 - 2^-8) 2^127). NaN never matches. */
static inline int out16_matches(double got, double ref, double tol, int bf) {
  if (isnan(got) || isnan(ref)) return 0;
  if (!isinf(got)) return fabs(got - ref) <= tol;
  const double over = bf ? ldexp(2.0 - ldexp(1.0, -8), 127) : 65520.0;
  return (got > 0) == (ref > 0) && fabs(ref) + tol >= over;
}

#endif /* KG_GPU_TEST_H */
