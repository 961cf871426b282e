/*
** fp4_ffn.c -- the FP4 weight path of an FFN / MoE gate-up projection, end to
** end through the public API, on the C backend (and on CUDA when a GPU is
** present):
**   1. amax of each bf16 weight (kg_amax) -> NVFP4 global scale
**      (kg_nvfp4_global_scale);
**   2. quantize each weight to NVFP4 with 128x4 scales (kg_sf_size sizes the
**      scale buffer, kg_fp4_quantize fills it);
**   3. h = silu(x.Wg^T) * (x.Wu^T) in one call (kg_dualgemm_fp4).
** Checks h against a double-precision loop written here over the weights as
** quantized (kg_fp4_dequantize on the C backend gives them back), and prints
** how far the FP4 result is from the same product on the bf16 weights.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg.h"
#ifdef KG_WITH_CUDA
#include <cuda_runtime.h>
#endif

enum { TOKENS = 5, HIDDEN = 320, FFN = 200 };

static float rnd(unsigned *s) { *s = *s * 1664525u + 1013904223u; return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f; }
static float bf(uint16_t h) { return kg_bf16_bits_to_f32(h); }
static double silu(double v) { return v / (1.0 + exp(-v)); }

/* Backend memory: a copy of n bytes of host memory src (NULL: uninitialized). */
static void *dev_alloc(kg_backend be, const void *src, size_t n) {
#ifdef KG_WITH_CUDA
  if (be == KG_BACKEND_CUDA) {
    void *p = NULL;
    if (cudaMalloc(&p, n) != cudaSuccess) return NULL;
    if (src && cudaMemcpy(p, src, n, cudaMemcpyHostToDevice) != cudaSuccess) { cudaFree(p); return NULL; }
    return p;
  }
#endif
  (void)be;
  void *p = malloc(n);
  if (p && src) memcpy(p, src, n);
  return p;
}
static void dev_free(kg_backend be, void *p) {
#ifdef KG_WITH_CUDA
  if (be == KG_BACKEND_CUDA) { cudaFree(p); return; }
#endif
  (void)be;
  free(p);
}
static int to_host(kg_backend be, void *dst, const void *src, size_t n) {
#ifdef KG_WITH_CUDA
  if (be == KG_BACKEND_CUDA) return cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
#endif
  (void)be;
  memcpy(dst, src, n);
  return 0;
}

/* One FP4 weight in backend memory: packed codes, 128x4 scales, global scale. */
typedef struct fp4_weight { void *q, *sf; size_t sf_bytes; float *gs; } fp4_weight;

/* Steps 1 and 2 for the bf16 weight w [FFN, HIDDEN] (host memory). */
static kg_status quantize_weight(kg_backend be, const uint16_t *w, fp4_weight *out) {
  const kg_exec ex = { .backend = be };
  kg_status st = kg_sf_size(KG_SF_SWIZZLED_128X4, FFN, kg_fp4_kv(KG_FP4_NVFP4, HIDDEN), 1, &out->sf_bytes);
  if (st != KG_SUCCESS) return st;
  void *dw = dev_alloc(be, w, sizeof(uint16_t) * FFN * HIDDEN);
  float *damax = dev_alloc(be, NULL, sizeof(float));
  out->q = dev_alloc(be, NULL, (size_t)FFN * HIDDEN / 2);
  out->sf = dev_alloc(be, NULL, out->sf_bytes);
  out->gs = NULL;
  if (!dw || !damax || !out->q || !out->sf) st = KG_ERROR_BACKEND;
  /* 1. the tensor's amax, then its global scale (a host function) */
  const kg_amax_args am = { .dtype = KG_BF16, .batch = 1, .rows = FFN, .cols = HIDDEN, .x = dw, .ldx = HIDDEN, .out = damax };
  if (st == KG_SUCCESS) st = kg_amax(&am, &ex);
  float amax = 0.0f;
  if (st == KG_SUCCESS && to_host(be, &amax, damax, sizeof amax) != 0) st = KG_ERROR_BACKEND;
  const float gs = kg_nvfp4_global_scale(amax);
  if (st == KG_SUCCESS && !(out->gs = dev_alloc(be, &gs, sizeof gs))) st = KG_ERROR_BACKEND;
  /* 2. codes and scales, the scale buffer in the layout the kernels read */
  const kg_fp4_args qa = { .format = KG_FP4_NVFP4, .sf_layout = KG_SF_SWIZZLED_128X4, .dtype = KG_BF16,
                           .batch = 1, .rows = FFN, .k = HIDDEN, .x = dw, .ldx = HIDDEN,
                           .q = out->q, .ldq = HIDDEN / 2, .sf = out->sf, .sf_bytes = out->sf_bytes,
                           .global_scale = out->gs };
  if (st == KG_SUCCESS) st = kg_fp4_quantize(&qa, &ex);
  dev_free(be, dw);
  dev_free(be, damax);
  return st;
}

static void free_weight(kg_backend be, fp4_weight *w) { dev_free(be, w->q); dev_free(be, w->sf); dev_free(be, w->gs); }

/* The weight as quantized, in f32 on the host: dequantized on the C backend
** from host copies of its codes, scales and global scale. */
static kg_status dequantized(kg_backend be, const fp4_weight *w, float *out) {
  const kg_exec cpu = { .backend = KG_BACKEND_C };
  uint8_t *q = malloc((size_t)FFN * HIDDEN / 2), *sf = malloc(w->sf_bytes);
  float gs = 0.0f;
  kg_status st = q && sf ? KG_SUCCESS : KG_ERROR_BACKEND;
  if (st == KG_SUCCESS && (to_host(be, q, w->q, (size_t)FFN * HIDDEN / 2) != 0 || to_host(be, sf, w->sf, w->sf_bytes) != 0 ||
                           to_host(be, &gs, w->gs, sizeof gs) != 0)) st = KG_ERROR_BACKEND;
  const kg_fp4_args da = { .format = KG_FP4_NVFP4, .sf_layout = KG_SF_SWIZZLED_128X4, .dtype = KG_F32,
                           .batch = 1, .rows = FFN, .k = HIDDEN, .x = out, .ldx = HIDDEN,
                           .q = q, .ldq = HIDDEN / 2, .sf = sf, .sf_bytes = w->sf_bytes, .global_scale = &gs };
  if (st == KG_SUCCESS) st = kg_fp4_dequantize(&da, &cpu);
  free(q);
  free(sf);
  return st;
}

/* h [TOKENS, FFN] from x and the weights wg, wu (each [FFN, HIDDEN], f32 on the host), in double. */
static void reference(const uint16_t *x, const float *wg, const float *wu, double *h) {
  for (int t = 0; t < TOKENS; t++)
    for (int j = 0; j < FFN; j++) {
      double g = 0, u = 0;
      for (int p = 0; p < HIDDEN; p++) {
        g += (double)bf(x[t * HIDDEN + p]) * wg[j * HIDDEN + p];
        u += (double)bf(x[t * HIDDEN + p]) * wu[j * HIDDEN + p];
      }
      h[t * FFN + j] = silu(g) * u;
    }
}

/* Runs the pipeline on one backend; returns 0 on success. */
static int run(kg_backend be, const uint16_t *x, const uint16_t *wg, const uint16_t *wu, const double *h_bf16) {
  fp4_weight g = { 0 }, u = { 0 };
  kg_status st = quantize_weight(be, wg, &g);
  if (st == KG_SUCCESS) st = quantize_weight(be, wu, &u);
  void *dx = dev_alloc(be, x, sizeof(uint16_t) * TOKENS * HIDDEN), *dh = dev_alloc(be, NULL, sizeof(uint16_t) * TOKENS * FFN);
  if (st == KG_SUCCESS && (!dx || !dh)) st = KG_ERROR_BACKEND;
  /* 3. h = silu(x.Wg^T) * (x.Wu^T): D2 only (store_d0 = store_d1 = 0) */
  const kg_dualgemm_fp4_args dg = {
    .mode = KG_MODE_GEMM, .m = TOKENS, .n = FFN, .k = HIDDEN, .batch_count = 1,
    .dtype = KG_BF16, .format = KG_FP4_NVFP4, .sf_layout = KG_SF_SWIZZLED_128X4, .op = KG_DUAL_SWIGLU,
    .a = dx, .lda = HIDDEN,
    .b0 = g.q, .ldb0 = HIDDEN / 2, .sf_b0 = g.sf, .sf_b0_bytes = g.sf_bytes, .global_scale_b0 = g.gs,
    .b1 = u.q, .ldb1 = HIDDEN / 2, .sf_b1 = u.sf, .sf_b1_bytes = u.sf_bytes, .global_scale_b1 = u.gs,
    .d2 = dh, .ldd2 = FFN, .alpha0 = 1.0f, .alpha1 = 1.0f,
  };
  const kg_exec ex = { .backend = be };
  const char *name = "-";
  if (st == KG_SUCCESS) st = kg_dualgemm_fp4_select(&dg, &ex, &name);
  if (st == KG_SUCCESS) st = kg_dualgemm_fp4(&dg, &ex);
  uint16_t *h = malloc(sizeof(uint16_t) * TOKENS * FFN);
  float *wgq = malloc(sizeof(float) * FFN * HIDDEN), *wuq = malloc(sizeof(float) * FFN * HIDDEN);
  double *ref = malloc(sizeof(double) * TOKENS * FFN);
  if (st == KG_SUCCESS && (!h || !wgq || !wuq || !ref)) st = KG_ERROR_BACKEND;
  if (st == KG_SUCCESS && to_host(be, h, dh, sizeof(uint16_t) * TOKENS * FFN) != 0) st = KG_ERROR_BACKEND;
  if (st == KG_SUCCESS) st = dequantized(be, &g, wgq);
  if (st == KG_SUCCESS) st = dequantized(be, &u, wuq);
  printf("%-5s SwiGLU %dx%dx%d NVFP4 weights  %s\n", kg_backend_string(be), TOKENS, FFN, HIDDEN,
         st == KG_SUCCESS ? name : kg_status_string(st));
  int fail = st != KG_SUCCESS;
  if (st == KG_SUCCESS) {
    reference(x, wgq, wuq, ref);
    /* norm-wise errors: against the quantized weights (bf16 output rounding
    ** only), and against the bf16 weights (what FP4 quantization costs) */
    double e2 = 0, r2 = 0, q2 = 0, b2 = 0;
    for (int i = 0; i < TOKENS * FFN; i++) {
      const double v = bf(h[i]);
      e2 += (v - ref[i]) * (v - ref[i]); r2 += ref[i] * ref[i];
      q2 += (v - h_bf16[i]) * (v - h_bf16[i]); b2 += h_bf16[i] * h_bf16[i];
    }
    const double err = sqrt(e2 / r2), qerr = sqrt(q2 / b2);
    printf("      |h - ref| / |ref| = %.2g (ref: the quantized weights); against the bf16 weights %.2g\n", err, qerr);
    fail = !(err < 1e-2) || !(qerr < 0.25);   /* NaN fails */
  }
  free(h); free(wgq); free(wuq); free(ref);
  dev_free(be, dx); dev_free(be, dh);
  free_weight(be, &g); free_weight(be, &u);
  return fail;
}

int main(void) {
  uint16_t *x = malloc(sizeof(uint16_t) * TOKENS * HIDDEN);
  uint16_t *wg = malloc(sizeof(uint16_t) * FFN * HIDDEN), *wu = malloc(sizeof(uint16_t) * FFN * HIDDEN);
  float *wgf = malloc(sizeof(float) * FFN * HIDDEN), *wuf = malloc(sizeof(float) * FFN * HIDDEN);
  double *h_bf16 = malloc(sizeof(double) * TOKENS * FFN);
  if (!x || !wg || !wu || !wgf || !wuf || !h_bf16) { printf("fp4_ffn: out of memory\n"); return 1; }
  unsigned s = 7;
  for (int i = 0; i < TOKENS * HIDDEN; i++) x[i] = kg_f32_to_bf16_bits(rnd(&s));
  for (int i = 0; i < FFN * HIDDEN; i++) {
    wg[i] = kg_f32_to_bf16_bits(0.05f * rnd(&s)); wgf[i] = bf(wg[i]);
    wu[i] = kg_f32_to_bf16_bits(0.05f * rnd(&s)); wuf[i] = bf(wu[i]);
  }
  reference(x, wgf, wuf, h_bf16);
  int fails = run(KG_BACKEND_C, x, wg, wu, h_bf16);
  if (kg_backend_available(KG_BACKEND_CUDA)) fails += run(KG_BACKEND_CUDA, x, wg, wu, h_bf16);
  else printf("(CUDA backend: no GPU here, skipped)\n");
  printf("%s\n", fails ? "fp4_ffn: FAILED" : "fp4_ffn: ok");
  free(x); free(wg); free(wu); free(wgf); free(wuf); free(h_bf16);
  return fails != 0;
}
