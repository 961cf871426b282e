/*
** bench_fp4.c -- kg's block-scaled FP4 GEMM and DualGemm (CUDA backend, W4A16: bf16 activations,
** NVFP4 weights with 128x4 scales) against cuBLAS bf16 on the same weights, one GPU.
**
** Problem (the LLM FFN projections): K = 4096, N = 14336, M in {1, 16, 128, 1024, 4096};
** A row-major [M,K] bf16; weights [N,K] (K contiguous); D / D2 row-major [M,N] bf16.
**   gemm: D = A.W^T                     kg_gemm_fp4     vs cublasGemmEx (bf16 W)
**   dual: D2 = silu(A.W0^T) * (A.W1^T)  kg_dualgemm_fp4 vs 2 cublasGemmEx + kgb_silu_mul_bf16
** The weights are made on the device by kg itself: random bf16 W (uniform in (-1, 1)), kg_amax ->
** kg_nvfp4_global_scale -> kg_fp4_quantize (NVFP4, 128x4); the peers' bf16 weights are
** kg_fp4_dequantize of those bytes, so both sides multiply the same values (the peers' copies are
** rounded to bf16 once).
**
** Method (as bench_dualgemm.c, shorter): CUDA events on one stream, each operation timed in its own
** block after a warm-up of about WARM_MS, median of KG_BENCH_REPS samples (default 30, >= 10); a
** sample is `inner` back-to-back launches (>= ~1 ms), launches alternate between NSETS input sets
** (FP4 weights 33 MB per matrix, so the sets exceed the 60 MB L2 several times).
** Check, per row: kg against the peer over the whole output, ||kg - peer|| / ||peer|| <= 1e-2, and
** no non-finite element (outputs poisoned with NaN first).
** Reported per M and op: kg variant, kg us, peer us, peer / kg (above 1: kg faster), kg TB/s on the
** FP4 weight bytes (0.5625 byte per weight) and the bf16-weight ceiling ratio (3.56x fewer bytes).
** Exit status: 0 all checks passed, 1 a check failed, 2 a CUDA / cuBLAS / kg call failed.
**
** Environment: KG_BENCH_QUICK=1 (M in {1, 16, 1024}), KG_BENCH_REPS=N, KG_BENCH_SEED=N,
** KG_COMMIT=SHA (commit to print where git is absent).
*/
#include "bench_common.h"

#include "kg.h"

/* bench/peer_kernels.cu */
int kgb_silu_mul_bf16(const void *x0, int64_t ldx0, const void *x1, int64_t ldx1, void *out, int64_t ldo, int64_t m,
                      int64_t n, void *stream);

#define K_DIM 4096
#define N_DIM 14336
#define NSETS 4
#define SAMPLE_MS 1.0
#define WARM_MS 200.0
#define TOL 1e-2

static const int64_t MS[] = { 1, 16, 128, 1024, 4096 };
static const int QUICK[] = { 1, 1, 0, 1, 0 };

#define KG(call) do {                                                               \
    kg_status kg_s_ = (call);                                                       \
    if (kg_s_ != KG_SUCCESS)                                                        \
      bench_fatal(#call, kg_status_string(kg_s_), __FILE__, __LINE__);             \
  } while (0)

static struct {
  cudaStream_t st;
  cublasHandle_t cublas;
  kg_exec ex;
  int reps;
  uint8_t *q[NSETS][2];        /* FP4 weights [N, K/2] */
  uint8_t *sf[NSETS][2];       /* 128x4 scales */
  float *gs[NSETS][2];         /* one global scale each (device) */
  uint16_t *w16[NSETS][2];     /* dequantized bf16 weights for the peers */
  size_t sf_bytes;
  int failed;
} G;

/* One weight matrix: random bf16 -> amax -> global scale -> NVFP4 quantize -> bf16 dequantize. */
static void make_weights(int s, int i, uint64_t *rng) {
  const size_t n = (size_t)N_DIM * K_DIM;
  uint16_t *h = (uint16_t *)malloc(n * 2);
  if (!h) { fprintf(stderr, "out of host memory\n"); exit(2); }
  bench_fill_bf16(h, n, rng);
  uint16_t *dx = NULL;
  CK(cudaMalloc((void **)&dx, n * 2));
  CK(cudaMemcpy(dx, h, n * 2, cudaMemcpyHostToDevice));
  free(h);
  float *damax = NULL, amax = 0.0f;
  CK(cudaMalloc((void **)&damax, sizeof(float)));
  kg_amax_args am = { KG_BF16, 1, N_DIM, K_DIM, dx, K_DIM, 0, damax };
  KG(kg_amax(&am, &G.ex));
  CK(cudaMemcpyAsync(&amax, damax, sizeof amax, cudaMemcpyDeviceToHost, G.st));
  CK(cudaStreamSynchronize(G.st));
  const float gs = kg_nvfp4_global_scale(amax);
  CK(cudaMalloc((void **)&G.gs[s][i], sizeof(float)));
  CK(cudaMemcpy(G.gs[s][i], &gs, sizeof gs, cudaMemcpyHostToDevice));
  CK(cudaMalloc((void **)&G.q[s][i], n / 2));
  CK(cudaMalloc((void **)&G.sf[s][i], G.sf_bytes));
  CK(cudaMalloc((void **)&G.w16[s][i], n * 2));
  kg_fp4_args fa;
  memset(&fa, 0, sizeof fa);
  fa.format = KG_FP4_NVFP4; fa.sf_layout = KG_SF_SWIZZLED_128X4; fa.dtype = KG_BF16;
  fa.batch = 1; fa.rows = N_DIM; fa.k = K_DIM;
  fa.x = dx; fa.ldx = K_DIM; fa.q = G.q[s][i]; fa.ldq = K_DIM / 2;
  fa.sf = G.sf[s][i]; fa.sf_bytes = G.sf_bytes; fa.global_scale = G.gs[s][i];
  KG(kg_fp4_quantize(&fa, &G.ex));
  fa.x = G.w16[s][i];
  KG(kg_fp4_dequantize(&fa, &G.ex));
  CK(cudaStreamSynchronize(G.st));
  CK(cudaFree(dx));
  CK(cudaFree(damax));
}

typedef struct problem {
  int64_t m;
  int dual;
  uint16_t *a[NSETS], *d[2][NSETS], *tmp;   /* d[0]: kg, d[1]: peer; tmp: the peer's D0 || D1 */
  int counter[2];
} problem;

static int launch(problem *p, int who, int s) {
  const float one = 1.0f, zero = 0.0f;
  if (who == 0) {
    if (!p->dual) {
      kg_gemm_fp4_args g;
      memset(&g, 0, sizeof g);
      g.m = p->m; g.n = N_DIM; g.k = K_DIM; g.dtype = KG_BF16; g.format = KG_FP4_NVFP4;
      g.sf_layout = KG_SF_SWIZZLED_128X4;
      g.a = p->a[s]; g.lda = K_DIM; g.b = G.q[s][0]; g.ldb = K_DIM / 2;
      g.sf_b = G.sf[s][0]; g.sf_b_bytes = G.sf_bytes; g.global_scale_b = G.gs[s][0];
      g.d = p->d[0][s]; g.ldd = N_DIM; g.alpha = 1.0f;
      return kg_gemm_fp4(&g, &G.ex) != KG_SUCCESS;
    }
    kg_dualgemm_fp4_args g;
    memset(&g, 0, sizeof g);
    g.mode = KG_MODE_GEMM; g.m = p->m; g.n = N_DIM; g.k = K_DIM; g.batch_count = 1;
    g.dtype = KG_BF16; g.format = KG_FP4_NVFP4; g.sf_layout = KG_SF_SWIZZLED_128X4; g.op = KG_DUAL_SWIGLU;
    g.a = p->a[s]; g.lda = K_DIM;
    g.b0 = G.q[s][0]; g.ldb0 = K_DIM / 2; g.sf_b0 = G.sf[s][0]; g.sf_b0_bytes = G.sf_bytes; g.global_scale_b0 = G.gs[s][0];
    g.b1 = G.q[s][1]; g.ldb1 = K_DIM / 2; g.sf_b1 = G.sf[s][1]; g.sf_b1_bytes = G.sf_bytes; g.global_scale_b1 = G.gs[s][1];
    g.d2 = p->d[0][s]; g.ldd2 = N_DIM; g.alpha0 = 1.0f; g.alpha1 = 1.0f;
    return kg_dualgemm_fp4(&g, &G.ex) != KG_SUCCESS;
  }
  /* cuBLAS is column-major: D^T = W . A^T, i.e. GemmEx(T, N, N, M, K, W, K, A, K, D, ldd) */
  uint16_t *out = p->dual ? p->tmp : p->d[1][s];
  for (int i = 0; i < (p->dual ? 2 : 1); i++)
    CB(cublasGemmEx(G.cublas, CUBLAS_OP_T, CUBLAS_OP_N, N_DIM, (int)p->m, K_DIM, &one, G.w16[s][i], CUDA_R_16BF, K_DIM,
                    p->a[s], CUDA_R_16BF, K_DIM, &zero, out + (size_t)i * p->m * N_DIM, CUDA_R_16BF, N_DIM,
                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  if (p->dual)
    return kgb_silu_mul_bf16(p->tmp, N_DIM, p->tmp + (size_t)p->m * N_DIM, N_DIM, p->d[1][s], N_DIM, p->m, N_DIM,
                             (void *)G.st) != 0;
  return 0;
}

/* Median microseconds per launch of `who`, or -1 when a launch failed. */
static double time_op(problem *p, int who) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  /* one launch for the size of a sample, then the warm-up */
  CK(cudaEventRecord(e0, G.st));
  if (launch(p, who, p->counter[who]++ % NSETS)) return -1.0;
  CK(cudaEventRecord(e1, G.st));
  CK(cudaEventSynchronize(e1));
  float t1 = 0;
  CK(cudaEventElapsedTime(&t1, e0, e1));
  int inner = t1 > 0 ? (int)(SAMPLE_MS / t1) + 1 : 1000;
  if (inner > 1000) inner = 1000;
  int warm = t1 > 0 ? (int)(WARM_MS / t1) + 1 : 1000;
  if (warm > 20000) warm = 20000;
  for (int i = 0; i < warm; i++)
    if (launch(p, who, p->counter[who]++ % NSETS)) return -1.0;
  double *ms = (double *)malloc(sizeof(double) * (size_t)G.reps);
  if (!ms) { fprintf(stderr, "out of host memory\n"); exit(2); }
  for (int r = 0; r < G.reps; r++) {
    CK(cudaEventRecord(e0, G.st));
    for (int i = 0; i < inner; i++)
      if (launch(p, who, p->counter[who]++ % NSETS)) { free(ms); return -1.0; }
    CK(cudaEventRecord(e1, G.st));
    CK(cudaEventSynchronize(e1));
    float t = 0;
    CK(cudaEventElapsedTime(&t, e0, e1));
    ms[r] = (double)t / inner;
  }
  double med = bench_median(ms, G.reps);
  free(ms);
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return med * 1e3;
}

/* ||kg - peer|| / ||peer|| over set 0's outputs (each written by the last launches on set 0, as the
** launches alternate over the sets); *nonfinite counts non-finite elements of either. */
static double compare(problem *p, long long *nonfinite) {
  const size_t n = (size_t)p->m * N_DIM;
  uint16_t *h0 = (uint16_t *)malloc(n * 2), *h1 = (uint16_t *)malloc(n * 2);
  if (!h0 || !h1) { fprintf(stderr, "out of host memory\n"); exit(2); }
  CK(cudaMemcpy(h0, p->d[0][0], n * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h1, p->d[1][0], n * 2, cudaMemcpyDeviceToHost));
  double num = 0.0, den = 0.0;
  *nonfinite = 0;
  for (size_t i = 0; i < n; i++) {
    double x = bench_bf16_to_f32(h0[i]), y = bench_bf16_to_f32(h1[i]);
    if (!isfinite(x) || !isfinite(y)) { (*nonfinite)++; continue; }
    num += (x - y) * (x - y);
    den += y * y;
  }
  free(h0);
  free(h1);
  return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0.0);
}

int main(void) {
  char commit[96], date[40];
  bench_commit(commit, sizeof commit);
  bench_utc_now(date, sizeof date);
  G.reps = (int)bench_env_long("KG_BENCH_REPS", 30);
  if (G.reps < 10) G.reps = 10;
  const int quick = bench_env_long("KG_BENCH_QUICK", 0) != 0;
  uint64_t rng = (uint64_t)bench_env_long("KG_BENCH_SEED", 1);
  struct cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  CK(cudaStreamCreateWithFlags(&G.st, cudaStreamNonBlocking));
  CB(cublasCreate(&G.cublas));
  CB(cublasSetStream(G.cublas, G.st));
  G.ex.backend = KG_BACKEND_CUDA;
  G.ex.stream = G.st;
  KG(kg_sf_size(KG_SF_SWIZZLED_128X4, N_DIM, K_DIM / 16, 1, &G.sf_bytes));
  printf("bench_fp4: %s (sm_%d%d), commit %s, %s\n", prop.name, prop.major, prop.minor, commit, date);
  printf("K = %d, N = %d, NVFP4 weights with 128x4 scales (W4A16, bf16 activations), %d input sets, median of %d\n",
         K_DIM, N_DIM, NSETS, G.reps);
  double copy_ms = 0.0;
  const double copy_tbs = bench_copy_tbs((size_t)1 << 30, 20, G.st, &copy_ms);
  printf("copy ceiling: %.2f TB/s (1 GiB device-to-device, read + write)\n\n", copy_tbs);
  for (int s = 0; s < NSETS; s++)
    for (int i = 0; i < 2; i++) make_weights(s, i, &rng);
  printf("%-5s %6s  %-58s %10s %10s %8s %8s %8s  %s\n", "op", "M", "kg variant", "kg us", "peer us", "peer/kg",
         "kg TB/s", "rel err", "check");
  for (int dual = 0; dual <= 1; dual++)
    for (size_t mi = 0; mi < sizeof MS / sizeof MS[0]; mi++) {
      if (quick && !QUICK[mi]) continue;
      problem p;
      memset(&p, 0, sizeof p);
      p.m = MS[mi];
      p.dual = dual;
      const size_t an = (size_t)p.m * K_DIM, dn = (size_t)p.m * N_DIM;
      uint16_t *h = (uint16_t *)malloc(an * 2);
      if (!h) { fprintf(stderr, "out of host memory\n"); exit(2); }
      for (int s = 0; s < NSETS; s++) {
        bench_fill_bf16(h, an, &rng);
        CK(cudaMalloc((void **)&p.a[s], an * 2));
        CK(cudaMemcpy(p.a[s], h, an * 2, cudaMemcpyHostToDevice));
        for (int w = 0; w < 2; w++) {
          CK(cudaMalloc((void **)&p.d[w][s], dn * 2));
          CK(cudaMemset(p.d[w][s], 0xff, dn * 2));   /* NaN */
        }
      }
      free(h);
      CK(cudaMalloc((void **)&p.tmp, 2 * dn * 2));
      const char *variant = NULL;
      char vname[128] = "-";
      if (!dual) {
        kg_gemm_fp4_args g;
        memset(&g, 0, sizeof g);
        g.m = p.m; g.n = N_DIM; g.k = K_DIM; g.dtype = KG_BF16; g.format = KG_FP4_NVFP4;
        g.sf_layout = KG_SF_SWIZZLED_128X4; g.a = p.a[0]; g.lda = K_DIM; g.b = G.q[0][0]; g.ldb = K_DIM / 2;
        g.sf_b = G.sf[0][0]; g.sf_b_bytes = G.sf_bytes; g.global_scale_b = G.gs[0][0]; g.d = p.d[0][0]; g.ldd = N_DIM;
        if (kg_gemm_fp4_select(&g, &G.ex, &variant) == KG_SUCCESS) snprintf(vname, sizeof vname, "%s", variant);
      } else {
        kg_dualgemm_fp4_args g;
        memset(&g, 0, sizeof g);
        g.mode = KG_MODE_GEMM; g.m = p.m; g.n = N_DIM; g.k = K_DIM; g.batch_count = 1; g.dtype = KG_BF16;
        g.format = KG_FP4_NVFP4; g.sf_layout = KG_SF_SWIZZLED_128X4; g.op = KG_DUAL_SWIGLU;
        g.a = p.a[0]; g.lda = K_DIM;
        g.b0 = G.q[0][0]; g.ldb0 = K_DIM / 2; g.sf_b0 = G.sf[0][0]; g.sf_b0_bytes = G.sf_bytes;
        g.b1 = G.q[0][1]; g.ldb1 = K_DIM / 2; g.sf_b1 = G.sf[0][1]; g.sf_b1_bytes = G.sf_bytes;
        g.global_scale_b0 = G.gs[0][0]; g.global_scale_b1 = G.gs[0][1]; g.d2 = p.d[0][0]; g.ldd2 = N_DIM;
        if (kg_dualgemm_fp4_select(&g, &G.ex, &variant) == KG_SUCCESS) snprintf(vname, sizeof vname, "%s", variant);
      }
      const double kg_us = variant ? time_op(&p, 0) : -1.0;
      const double peer_us = time_op(&p, 1);
      CK(cudaStreamSynchronize(G.st));
      long long nonfinite = 0;
      const double err = variant && kg_us > 0 ? compare(&p, &nonfinite) : NAN;
      const int ok = !variant || (kg_us > 0 && peer_us > 0 && nonfinite == 0 && err <= TOL);
      if (!ok) G.failed = 1;
      const double wbytes = (dual ? 2.0 : 1.0) * (double)N_DIM * K_DIM * 0.5625;
      printf("%-5s %6lld  %-58s %10.1f %10.1f %8.2f %8.2f %8.1e  %s%s\n", dual ? "dual" : "gemm", (long long)p.m,
             vname, kg_us, peer_us, kg_us > 0 ? peer_us / kg_us : 0.0, kg_us > 0 ? wbytes / (kg_us * 1e-6) / 1e12 : 0.0,
             err, ok ? "ok" : "FAIL", nonfinite ? " (non-finite outputs)" : "");
      for (int s = 0; s < NSETS; s++) {
        CK(cudaFree(p.a[s]));
        CK(cudaFree(p.d[0][s]));
        CK(cudaFree(p.d[1][s]));
      }
      CK(cudaFree(p.tmp));
    }
  printf("\nbench_fp4: %s\n", G.failed ? "FAIL (a check failed)" : "all checks passed");
  CB(cublasDestroy(G.cublas));
  CK(cudaStreamDestroy(G.st));
  return G.failed ? 1 : 0;
}
