/*
** bench_common.h -- helpers shared by the kgen benchmarks (host C only).
**
** Error checks that never let a CUDA or cuBLAS failure pass silently, a
** seeded RNG for bf16 inputs, bf16 conversions, medians, environment knobs,
** the timing loop, the device-to-device copy ceiling and the run header (GPU, CUDA, commit).
** Everything is static: include it from exactly one translation unit per
** program.
*/
#ifndef KG_BENCH_COMMON_H
#define KG_BENCH_COMMON_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  /* popen, pclose under -std=c11 */
#endif

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <cublas_v2.h>

/* ---- fatal errors --------------------------------------------------------
** A failed CUDA or cuBLAS call ends the program with status 2 after calling
** the hook (the GEMM bench prints the rows finished so far). */
static void (*bench_fatal_hook)(void) = NULL;

static void bench_fatal(const char *what, const char *msg, const char *file, int line) {
  fflush(stdout);
  fprintf(stderr, "\nFATAL %s:%d: %s: %s\n", file, line, what, msg);
  fprintf(stdout, "\nFATAL %s:%d: %s: %s\n", file, line, what, msg);
  if (bench_fatal_hook) {
    void (*h)(void) = bench_fatal_hook;
    bench_fatal_hook = NULL;
    h();
  }
  fflush(stdout);
  exit(2);
}

#define CK(call) do {                                                          \
    cudaError_t ck_e_ = (call);                                                \
    if (ck_e_ != cudaSuccess)                                                  \
      bench_fatal(#call, cudaGetErrorString(ck_e_), __FILE__, __LINE__);       \
  } while (0)

#define CB(call) do {                                                          \
    cublasStatus_t cb_s_ = (call);                                             \
    if (cb_s_ != CUBLAS_STATUS_SUCCESS)                                        \
      bench_fatal(#call, cublasGetStatusString(cb_s_), __FILE__, __LINE__);    \
  } while (0)

/* ---- environment --------------------------------------------------------- */
static long bench_env_long(const char *name, long dflt) {
  const char *s = getenv(name);
  if (!s || !*s) return dflt;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  return (end && *end == '\0') ? v : dflt;
}

static const char *bench_env_str(const char *name) {
  const char *s = getenv(name);
  return (s && *s) ? s : NULL;
}

/* ---- random numbers and bf16 --------------------------------------------- */
static uint64_t bench_rng_next(uint64_t *s) {  /* splitmix64 */
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static inline float bench_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Round to nearest even; inputs here are finite. */
static inline uint16_t bench_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* n bf16 values uniform in (-1, 1), never zero. */
static void bench_fill_bf16(uint16_t *h, size_t n, uint64_t *state) {
  size_t i = 0;
  while (i < n) {
    uint64_t r = bench_rng_next(state);
    for (int q = 0; q < 4 && i < n; q++, i++) {
      int v = (int)((r >> (16 * q)) & 0xFFFFu) - 32768;
      h[i] = bench_f32_to_bf16(((float)v + 0.5f) * (1.0f / 32768.0f));
    }
  }
}

/* ---- statistics ---------------------------------------------------------- */
static int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts v in place; returns the median. */
static double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
  return (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- timing --------------------------------------------------------------
** bench_time times one operation: fn(ctx, set) enqueues one launch reading
** input set `set` (rotated over 0 .. nsets-1) on stream st and returns
** nonzero on failure (t->failed is then set and timing stops). About warm_ms
** of warm-up launches, then reps samples back to back of t->inner launches
** each (about sample_ms, rounded up to whole rounds of the sets so every
** sample reads each set equally); t->med / min / max are per-launch ms.
** Operations are timed in separate blocks, not interleaved, so each is
** measured in its own sustained state (a slow kernel between samples would
** let the clocks and power of the other recover and flatter it).
** before_samples (may be NULL) is called after the warm-up, right before the
** samples: e.g. to poison outputs that the timed launches must rewrite.
** KG_BENCH_GRAPH=1: each sample is one replay of a CUDA graph captured from the
** t->inner launches (the same calls, the same rotation of sets), which takes the
** host out of the gaps between launches, as a decode step under a graph runs.
** t->host_us: host time per call while enqueuing (stream launches, after a
** synchronize, so the queue does not block): above the per-launch time, the
** stream figures measure the host, not the GPU. */
typedef int (*bench_launch_fn)(void *ctx, int set);
typedef struct bench_timer {
  bench_launch_fn fn;
  void *ctx;
  void (*before_samples)(void *ctx);
  int active, failed, inner, counter;
  double med, min, max;
  double host_us;
} bench_timer;

/* KG_BENCH_GRAPH=1: samples are graph replays (bench_time). */
static int bench_graph_mode(void) {
  static int mode = -1;
  if (mode < 0) mode = bench_env_long("KG_BENCH_GRAPH", 0) != 0;
  return mode;
}

/* The header line that says how the figures were timed. */
static void bench_print_timing(void) {
  printf("timing       %s\n", bench_graph_mode() ? "CUDA graph replays of the back-to-back launches (KG_BENCH_GRAPH=1)"
                                                  : "back-to-back stream launches");
}

static double bench_wall_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static double bench_event_ms(cudaEvent_t a, cudaEvent_t b) {
  float t = 0;
  CK(cudaEventElapsedTime(&t, a, b));
  return (double)t;
}

static int bench_launch_n(bench_timer *t, int nsets, int count) {
  for (int i = 0; i < count; i++) {
    if (t->fn(t->ctx, t->counter % nsets)) { t->failed = 1; return 1; }
    t->counter++;
  }
  return 0;
}

static void bench_time(bench_timer *t, int nsets, int reps, cudaStream_t st, double warm_ms, double sample_ms) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  cudaEvent_t *ev = (cudaEvent_t *)calloc(2 * (size_t)reps, sizeof *ev);
  double *ms = (double *)calloc((size_t)reps, sizeof *ms);
  if (!ev || !ms) { fprintf(stderr, "out of host memory\n"); exit(2); }
  for (int i = 0; i < 2 * reps; i++) CK(cudaEventCreate(&ev[i]));

  if (bench_launch_n(t, nsets, nsets)) goto out;  /* first touch of every set */
  CK(cudaStreamSynchronize(st));
  CK(cudaEventRecord(e0, st));
  if (bench_launch_n(t, nsets, nsets)) goto out;
  CK(cudaEventRecord(e1, st));
  CK(cudaStreamSynchronize(st));
  double est = bench_event_ms(e0, e1) / nsets;
  if (est <= 0) est = 1e-3;
  long warm = (long)ceil(warm_ms / est);
  if (warm > 20000) warm = 20000;
  if (bench_launch_n(t, nsets, (int)warm)) goto out;
  long inner = (long)ceil(sample_ms / est);
  t->inner = (int)(inner < 1 ? 1 : inner > 1000 ? 1000 : inner);
  t->inner = (t->inner + nsets - 1) / nsets * nsets;

  {   /* host cost per call: a burst after a synchronize, shorter than the launch queue */
    const int burst = t->inner < 64 ? t->inner : 64;
    CK(cudaStreamSynchronize(st));
    const double h0 = bench_wall_us();
    if (bench_launch_n(t, nsets, burst)) goto out;
    t->host_us = (bench_wall_us() - h0) / burst;
    CK(cudaStreamSynchronize(st));
  }

  if (bench_graph_mode()) {
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
    const int bad = bench_launch_n(t, nsets, t->inner);
    CK(cudaStreamEndCapture(st, &g));
    if (bad) { CK(cudaGraphDestroy(g)); goto out; }
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, st));   /* upload and warm */
    if (t->before_samples) t->before_samples(t->ctx);
    for (int r = 0; r < reps; r++) {
      CK(cudaEventRecord(ev[2 * r], st));
      CK(cudaGraphLaunch(ge, st));
      CK(cudaEventRecord(ev[2 * r + 1], st));
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(g));
  } else {
    if (t->before_samples) t->before_samples(t->ctx);
    for (int r = 0; r < reps; r++) {
      CK(cudaEventRecord(ev[2 * r], st));
      if (bench_launch_n(t, nsets, t->inner)) goto out;
      CK(cudaEventRecord(ev[2 * r + 1], st));
    }
  }
  CK(cudaStreamSynchronize(st));
  CK(cudaGetLastError());
  for (int r = 0; r < reps; r++) ms[r] = bench_event_ms(ev[2 * r], ev[2 * r + 1]) / t->inner;
  t->med = bench_median(ms, reps);
  t->min = ms[0];
  t->max = ms[reps - 1];
out:
  CK(cudaStreamSynchronize(st));
  CK(cudaGetLastError());
  for (int i = 0; i < 2 * reps; i++) CK(cudaEventDestroy(ev[i]));
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  free(ev);
  free(ms);
}

/* ---- ceilings ------------------------------------------------------------ */
/* Device-to-device cudaMemcpyAsync of `bytes`; returns TB/s counting bytes
** read plus bytes written (2 * bytes per copy), median of reps copies. */
static double bench_copy_tbs(size_t bytes, int reps, cudaStream_t st, double *med_ms_out) {
  void *src = NULL, *dst = NULL;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMalloc(&dst, bytes));
  CK(cudaMemsetAsync(src, 0x5A, bytes, st));
  CK(cudaMemsetAsync(dst, 0xA5, bytes, st));
  for (int i = 0; i < 20; i++) CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st));
  cudaEvent_t *ev = (cudaEvent_t *)malloc(sizeof(cudaEvent_t) * 2 * (size_t)reps);
  double *ms = (double *)malloc(sizeof(double) * (size_t)reps);
  if (!ev || !ms) { fprintf(stderr, "out of host memory\n"); exit(2); }
  for (int i = 0; i < 2 * reps; i++) CK(cudaEventCreate(&ev[i]));
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(ev[2 * r], st));
    CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st));
    CK(cudaEventRecord(ev[2 * r + 1], st));
  }
  CK(cudaStreamSynchronize(st));
  for (int r = 0; r < reps; r++) {
    float t = 0;
    CK(cudaEventElapsedTime(&t, ev[2 * r], ev[2 * r + 1]));
    ms[r] = t;
  }
  double med = bench_median(ms, reps);
  for (int i = 0; i < 2 * reps; i++) CK(cudaEventDestroy(ev[i]));
  free(ev);
  free(ms);
  CK(cudaFree(src));
  CK(cudaFree(dst));
  if (med_ms_out) *med_ms_out = med;
  return 2.0 * (double)bytes / (med * 1e-3) / 1e12;
}

/* ---- run identity ---------------------------------------------------------- */
/* Commit: $KG_COMMIT, else `git rev-parse` (+ "-dirty"), else "unknown". */
static void bench_commit(char *buf, size_t cap) {
  const char *env = bench_env_str("KG_COMMIT");
  if (env) { snprintf(buf, cap, "%s", env); return; }
  snprintf(buf, cap, "unknown (no git; set KG_COMMIT)");
  FILE *p = popen("git rev-parse --short=12 HEAD 2>/dev/null", "r");
  if (!p) return;
  char sha[64] = "";
  if (fgets(sha, sizeof sha, p)) sha[strcspn(sha, "\r\n")] = '\0';
  if (pclose(p) != 0 || !sha[0]) return;
  int dirty = 0;
  p = popen("git status --porcelain --untracked-files=no 2>/dev/null", "r");
  if (p) {
    char line[8];
    if (fgets(line, sizeof line, p)) dirty = 1;
    pclose(p);
  }
  snprintf(buf, cap, "%s%s", sha, dirty ? "-dirty" : "");
}

static void bench_utc_now(char *buf, size_t cap) {
  time_t t = time(NULL);
  struct tm tmv;
  gmtime_r(&t, &tmv);
  strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tmv);
}

static void bench_version_string(int v, char *buf, size_t cap) {
  snprintf(buf, cap, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* ---- the run's device and versions ----------------------------------------
** bench_run_init fills what every benchmark prints in its header: the GPU of
** the current device, its SM count, compute capability, memory and L2 size
** (l2_bytes at least 60 MB: benchmarks rotate input sets past twice it), the
** CUDA runtime / driver versions, the cuBLAS version when a handle is given
** (else "-"), the commit and the UTC date. */
typedef struct bench_run {
  char gpu[256];
  int sms, cc_major, cc_minor;
  size_t mem_total, l2_bytes;
  char rt_ver[16], drv_ver[16], cublas_ver[32], commit[96], date[40];
} bench_run;

static void bench_run_init(bench_run *r, cublasHandle_t cublas) {
  int dev = 0, v = 0;
  struct cudaDeviceProp prop;
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&prop, dev));
  snprintf(r->gpu, sizeof r->gpu, "%s", prop.name);
  r->sms = prop.multiProcessorCount;
  r->cc_major = prop.major; r->cc_minor = prop.minor;
  r->mem_total = prop.totalGlobalMem;
  r->l2_bytes = (size_t)prop.l2CacheSize;
  if (r->l2_bytes < (size_t)60e6) r->l2_bytes = (size_t)60e6;
  CK(cudaRuntimeGetVersion(&v)); bench_version_string(v, r->rt_ver, sizeof r->rt_ver);
  CK(cudaDriverGetVersion(&v)); bench_version_string(v, r->drv_ver, sizeof r->drv_ver);
  snprintf(r->cublas_ver, sizeof r->cublas_ver, "-");
  if (cublas) {
    CB(cublasGetVersion(cublas, &v));
    snprintf(r->cublas_ver, sizeof r->cublas_ver, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
  }
  bench_commit(r->commit, sizeof r->commit);
  bench_utc_now(r->date, sizeof r->date);
}

#endif /* KG_BENCH_COMMON_H */
