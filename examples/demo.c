/*
** demo.c -- calls kg_gemm on the C backend (and on CUDA when a GPU is
** present) for a few problems, printing the variant the dispatcher chose and
** the largest error against a double-precision loop written here.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg.h"
#ifdef KG_WITH_CUDA
#include <cuda_runtime.h>
#endif

typedef struct problem { const char *what; kg_dtype t; kg_layout la, lb; int64_t m, n, k; } problem;

static float rnd(unsigned *s) { *s = *s * 1664525u + 1013904223u; return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f; }

static float get(const void *p, kg_dtype t, int64_t i) {
  if (t == KG_F32) return ((const float *)p)[i];
  uint16_t h = ((const uint16_t *)p)[i];
  return t == KG_F16 ? kg_f16_bits_to_f32(h) : kg_bf16_bits_to_f32(h);
}
static void put(void *p, kg_dtype t, int64_t i, float x) {
  if (t == KG_F32) ((float *)p)[i] = x;
  else ((uint16_t *)p)[i] = t == KG_F16 ? kg_f32_to_f16_bits(x) : kg_f32_to_bf16_bits(x);
}

/* Runs one problem on one backend; returns 0 on success. */
static int run(const problem *pr, kg_backend be) {
  size_t es = kg_dtype_size(pr->t);
  int64_t m = pr->m, n = pr->n, k = pr->k;
  int64_t lda = pr->la == KG_ROW ? k : m, ldb = pr->lb == KG_ROW ? n : k;
  void *a = malloc(m * k * es), *b = malloc(k * n * es), *d = malloc(m * n * es);
  unsigned s = 42;
  for (int64_t i = 0; i < m * k; i++) put(a, pr->t, i, rnd(&s));
  for (int64_t i = 0; i < k * n; i++) put(b, pr->t, i, rnd(&s));
  kg_gemm_args g = { .mode = KG_MODE_GEMM, .m = m, .n = n, .k = k, .batch_count = 1, .split_k_slices = 1,
                     .type_ab = pr->t, .type_cd = pr->t, .layout_a = pr->la, .layout_b = pr->lb,
                     .layout_cd = KG_ROW, .a = a, .lda = lda, .b = b, .ldb = ldb, .d = d, .ldd = n,
                     .alpha = 1.0f, .beta = 0.0f };
  kg_exec ex = { .backend = be };
#ifdef KG_WITH_CUDA
  void *da = NULL, *db = NULL, *dd = NULL;
  if (be == KG_BACKEND_CUDA) {
    cudaMalloc(&da, m * k * es); cudaMalloc(&db, k * n * es); cudaMalloc(&dd, m * n * es);
    cudaMemcpy(da, a, m * k * es, cudaMemcpyHostToDevice);
    cudaMemcpy(db, b, k * n * es, cudaMemcpyHostToDevice);
    g.a = da; g.b = db; g.d = dd;
  }
#endif
  const char *name = "-";
  kg_status st = kg_gemm_select(&g, &ex, &name);
  if (st == KG_SUCCESS) st = kg_gemm(&g, &ex);
#ifdef KG_WITH_CUDA
  if (be == KG_BACKEND_CUDA) {
    if (st == KG_SUCCESS && cudaMemcpy(d, dd, m * n * es, cudaMemcpyDeviceToHost) != cudaSuccess) st = KG_ERROR_BACKEND;
    cudaFree(da); cudaFree(db); cudaFree(dd);
  }
#endif
  double maxerr = 0;
  if (st == KG_SUCCESS) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double ref = 0;
        for (int64_t p = 0; p < k; p++)
          ref += (double)get(a, pr->t, pr->la == KG_ROW ? i * lda + p : p * lda + i) *
                 (double)get(b, pr->t, pr->lb == KG_ROW ? p * ldb + j : j * ldb + p);
        double e = fabs(ref - get(d, pr->t, i * n + j));
        if (!(e <= maxerr)) maxerr = e;   /* NaN propagates */
      }
  }
  printf("%-5s %-28s %s  %s\n", kg_backend_string(be), pr->what,
         st == KG_SUCCESS ? name : kg_status_string(st), "");
  if (st == KG_SUCCESS) printf("      max |error| = %.3g\n", maxerr);
  free(a); free(b); free(d);
  return st != KG_SUCCESS || !(maxerr < 0.05 * sqrt((double)k));
}

int main(void) {
  static const problem problems[] = {
    { "f32 row x row 100x72x36", KG_F32, KG_ROW, KG_ROW, 100, 72, 36 },
    { "f32 col x row 33x17x250", KG_F32, KG_COL, KG_ROW, 33, 17, 250 },
    { "bf16 row x col 256x256x512", KG_BF16, KG_ROW, KG_COL, 256, 256, 512 },
    { "f16 row x row 65x129x200", KG_F16, KG_ROW, KG_ROW, 65, 129, 200 },
  };
  int fails = 0;
  for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++) {
    fails += run(&problems[i], KG_BACKEND_C);
    if (kg_backend_available(KG_BACKEND_CUDA)) fails += run(&problems[i], KG_BACKEND_CUDA);
  }
  if (!kg_backend_available(KG_BACKEND_CUDA)) printf("(CUDA backend: no GPU here, skipped)\n");
  printf("%s\n", fails ? "demo: FAILED" : "demo: ok");
  return fails != 0;
}
