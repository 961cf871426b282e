/*
** bench_gemm.c -- kg_gemm (CUDA backend) against cuBLAS, bf16, one GPU.
**
** Method (docs: bench/README.md, /shared/bench.md):
**   - ceilings measured in the same run: a 1 GiB device-to-device copy (bytes
**     read + written) and cuBLAS bf16 8192^3 (cublasGemmEx, CUBLAS_COMPUTE_32F);
**   - every row: A row-major [M,K]; B column-major (weights stored [N,K], the
**     kg "rc" layout; KG_BENCH_B=row switches to row-major [K,N], "rr");
**     D row-major [M,N]; bf16 in and out, f32 accumulation, alpha 1, beta 0;
**   - cuBLAS is column-major, so it computes D^T = B^T . A^T:
**       cublasGemmEx(opB, N, N, M, K, B, ldb, A, K, D^T, N) with
**       opB = T, ldb = K for B col-major; opB = N, ldb = N for B row-major;
**   - timing: CUDA events, warm-up, median of >= 20 samples; a sample is
**     `inner` back-to-back launches (>= ~1 ms for small problems) over input
**     sets rotated so that their total exceeds 2.5x L2 (>= 3 sets); kg and
**     cuBLAS are timed in separate blocks (each warmed up ~200 ms, sustained);
**   - checks of the outputs the timed launches wrote (set 0): outputs
**     poisoned with NaN first; kg vs cuBLAS over the whole output
**     (||kg - cuBLAS|| / ||cuBLAS||, and no NaN/Inf); kg and cuBLAS against a
**     CPU double reference on >= 64 random elements plus the corners
**     (|d - ref| / max(|ref|, ||a_i * b_j||_2)). A failed check marks the row
**     FAIL and the exit status 1; a failed CUDA/cuBLAS call exits with 2.
**
** Environment:
**   KG_BENCH_QUICK=1     only 4096^3, 8192^3 and M=16 (N,K)=(14336,4096)
**   KG_BENCH_REPS=N      timed samples per row (default 30, at least 20)
**   KG_BENCH_B=row|col   layout of B (default col)
**   KG_BENCH_VARIANT=NAME  force a kg variant (exec.variant)
**   KG_BENCH_SEED=N      RNG seed (default 1)
**   KG_COMMIT=SHA        commit to print when git is not available
*/
#include "bench_common.h"

#include "kg.h"

#define MAX_SETS 64
#define TOL_REF 1e-2    /* bf16 output rounding alone is <= 2^-8 = 3.9e-3 */
#define TOL_KG_CB 1e-2  /* two bf16 roundings: ~2e-3 norm-wise */
#define N_RANDOM_SAMPLES 64
#define SAMPLE_MS 1.0   /* target duration of one timed sample */
#define WARM_MS 200.0   /* target duration of the warm-up, per operation */

typedef struct shape {
  int64_t batch, m, n, k;
  int quick;
} shape;

static const shape SHAPES[] = {
  { 1, 8192, 8192, 8192, 1 },
  { 1,   16,  4096,  4096, 0 },
  { 1,   16, 14336,  4096, 1 },
  { 1,   16,  4096, 14336, 0 },
  { 1,  128,  4096,  4096, 0 },
  { 1,  128, 14336,  4096, 0 },
  { 1,  128,  4096, 14336, 0 },
  { 1, 1024,  4096,  4096, 0 },
  { 1, 1024, 14336,  4096, 0 },
  { 1, 1024,  4096, 14336, 0 },
  { 1, 4096,  4096,  4096, 1 },  /* 4096^3 */
  { 1, 4096, 14336,  4096, 0 },
  { 1, 4096,  4096, 14336, 0 },
  { 32, 1024, 1024, 1024, 0 },
  { 37,  321,  256,  512, 0 },
};
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

typedef struct row {
  char shape[48];
  char variant[128];
  int64_t batch, m;
  int has_kg, has_cb;
  double flops, bytes;
  double kg_ms, kg_min, kg_max, cb_ms, cb_min, cb_max;
  double err_kg_ref, err_cb_ref, err_kg_cb;
  long long kg_nonfinite, cb_nonfinite;
  int nsets, inner_kg, inner_cb, nsamples_ref;
  int ok;
  char note[256];
} row;

/* ---- global run state ------------------------------------------------------ */
static struct {
  cudaStream_t st;
  cublasHandle_t cublas;
  int bcol;
  int reps;
  const char *force_variant;
  uint64_t seed;
  bench_run run;                /* device, versions, commit, date */
  double copy_tbs, copy_ms;
  double cb_peak_tflops, cb_peak_ms;
  int quick;
  row rows[N_SHAPES];
  int nrows;
} G;

/* ---- one problem on the device ---------------------------------------------- */
typedef struct problem {
  int64_t batch, m, n, k;
  int nsets;
  size_t nA, nB, nD;  /* elements per set, all batches */
  uint16_t *dA[MAX_SETS], *dB[MAX_SETS], *dDk[MAX_SETS], *dDc[MAX_SETS];
  kg_gemm_args args;
  kg_exec exec;
  kg_status kg_err;   /* first kg_gemm failure */
} problem;

static void fill_args(problem *p) {
  kg_gemm_args *a = &p->args;
  memset(a, 0, sizeof *a);
  a->mode = p->batch > 1 ? KG_MODE_BATCHED : KG_MODE_GEMM;
  a->m = p->m; a->n = p->n; a->k = p->k;
  a->batch_count = p->batch;
  a->split_k_slices = 1;
  a->type_ab = KG_BF16; a->type_cd = KG_BF16;
  a->layout_a = KG_ROW;
  a->layout_b = G.bcol ? KG_COL : KG_ROW;
  a->layout_cd = KG_ROW;
  a->a = p->dA[0]; a->lda = p->k;
  a->b = p->dB[0]; a->ldb = G.bcol ? p->k : p->n;
  a->c = NULL; a->ldc = 0;
  a->d = p->dDk[0]; a->ldd = p->n;
  if (p->batch > 1) {
    a->batch_stride_a = p->m * p->k;
    a->batch_stride_b = p->k * p->n;
    a->batch_stride_c = 0;
    a->batch_stride_d = p->m * p->n;
  }
  a->alpha = 1.0f; a->beta = 0.0f;
}

static int launch_kg(void *ctx, int s) {
  problem *p = (problem *)ctx;
  p->args.a = p->dA[s]; p->args.b = p->dB[s]; p->args.d = p->dDk[s];
  kg_status st = kg_gemm(&p->args, &p->exec);
  if (st != KG_SUCCESS) { p->kg_err = st; return 1; }
  return 0;
}

/* Row-major D[M,N] = A[M,K] . B  <=>  column-major D^T[N,M] = B^T . A^T.
** Memory of A (row-major [M,K]) is column-major A^T (K x M, ld K): op N.
** B col-major (K x N, ld K) enters transposed (op T) to give B^T (N x K);
** B row-major [K,N] is column-major B^T (N x K, ld N): op N. */
static int launch_cb(void *ctx, int s) {
  problem *p = (problem *)ctx;
  const float alpha = 1.0f, beta = 0.0f;
  cublasOperation_t opB = G.bcol ? CUBLAS_OP_T : CUBLAS_OP_N;
  int ldb = (int)(G.bcol ? p->k : p->n);
  if (p->batch == 1) {
    CB(cublasGemmEx(G.cublas, opB, CUBLAS_OP_N, (int)p->n, (int)p->m, (int)p->k, &alpha,
                    p->dB[s], CUDA_R_16BF, ldb, p->dA[s], CUDA_R_16BF, (int)p->k, &beta,
                    p->dDc[s], CUDA_R_16BF, (int)p->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else {
    CB(cublasGemmStridedBatchedEx(G.cublas, opB, CUBLAS_OP_N, (int)p->n, (int)p->m, (int)p->k, &alpha,
                                  p->dB[s], CUDA_R_16BF, ldb, (long long)(p->k * p->n),
                                  p->dA[s], CUDA_R_16BF, (int)p->k, (long long)(p->m * p->k), &beta,
                                  p->dDc[s], CUDA_R_16BF, (int)p->n, (long long)(p->m * p->n),
                                  (int)p->batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  return 0;
}

/* ---- checks ------------------------------------------------------------------ */
/* |d - ref| / max(|ref|, ||a_i * b_j||_2) for output (b, i, j). */
static double ref_err(const problem *p, const uint16_t *hA, const uint16_t *hB, const uint16_t *hD,
                      int64_t b, int64_t i, int64_t j) {
  const uint16_t *arow = hA + (size_t)(b * p->m * p->k + i * p->k);
  const uint16_t *bb = hB + (size_t)(b * p->k * p->n);
  double ref = 0, s2 = 0;
  for (int64_t kk = 0; kk < p->k; kk++) {
    double av = bench_bf16_to_f32(arow[kk]);
    double bv = bench_bf16_to_f32(G.bcol ? bb[j * p->k + kk] : bb[kk * p->n + j]);
    ref += av * bv;
    s2 += av * bv * av * bv;
  }
  double d = bench_bf16_to_f32(hD[(size_t)(b * p->m * p->n + i * p->n + j)]);
  double scale = fabs(ref) > sqrt(s2) ? fabs(ref) : sqrt(s2);
  if (scale == 0) scale = 1;
  double e = fabs(d - ref) / scale;
  return isfinite(d) ? e : INFINITY;
}

static void check_outputs(problem *p, row *rw, const uint16_t *hA, const uint16_t *hB, uint64_t *rng) {
  size_t bytesD = p->nD * 2;
  uint16_t *hDk = rw->has_kg ? (uint16_t *)malloc(bytesD) : NULL;
  uint16_t *hDc = (uint16_t *)malloc(bytesD);
  if ((rw->has_kg && !hDk) || !hDc) { fprintf(stderr, "out of host memory\n"); exit(2); }
  CK(cudaMemcpy(hDc, p->dDc[0], bytesD, cudaMemcpyDeviceToHost));
  if (hDk) CK(cudaMemcpy(hDk, p->dDk[0], bytesD, cudaMemcpyDeviceToHost));

  /* whole output: non-finite counts, kg vs cuBLAS norm-wise */
  double diff2 = 0, ref2 = 0;
  long long nk = 0, nc = 0;
  for (size_t x = 0; x < p->nD; x++) {
    double c = bench_bf16_to_f32(hDc[x]);
    if (!isfinite(c)) { nc++; continue; }
    ref2 += c * c;
    if (hDk) {
      double k = bench_bf16_to_f32(hDk[x]);
      if (!isfinite(k)) { nk++; continue; }
      diff2 += (k - c) * (k - c);
    }
  }
  rw->kg_nonfinite = nk;
  rw->cb_nonfinite = nc;
  rw->err_kg_cb = hDk ? (ref2 > 0 ? sqrt(diff2 / ref2) : INFINITY) : NAN;

  /* samples: corners of the first and last batch, then random elements */
  int64_t cb_[2] = { 0, p->batch - 1 }, ci[2] = { 0, p->m - 1 }, cj[2] = { 0, p->n - 1 };
  double ek = 0, ec = 0;
  int ns = 0;
  for (int q = 0; q < 8 + N_RANDOM_SAMPLES; q++) {
    int64_t b, i, j;
    if (q < 8) {
      b = cb_[q >> 2]; i = ci[(q >> 1) & 1]; j = cj[q & 1];
      if (q >= 4 && p->batch == 1) continue;
    } else {
      b = (int64_t)(bench_rng_next(rng) % (uint64_t)p->batch);
      i = (int64_t)(bench_rng_next(rng) % (uint64_t)p->m);
      j = (int64_t)(bench_rng_next(rng) % (uint64_t)p->n);
    }
    double e = ref_err(p, hA, hB, hDc, b, i, j);
    if (!(e <= ec)) ec = e;  /* NaN / Inf propagate */
    if (hDk) {
      e = ref_err(p, hA, hB, hDk, b, i, j);
      if (!(e <= ek)) ek = e;
    }
    ns++;
  }
  rw->nsamples_ref = ns;
  rw->err_cb_ref = ec;
  rw->err_kg_ref = hDk ? ek : NAN;
  free(hDk);
  free(hDc);

  char *n = rw->note;
  size_t cap = sizeof rw->note, len = strlen(n);
#define NOTE(...) do { if (len < cap) { int w_ = snprintf(n + len, cap - len, __VA_ARGS__); if (w_ > 0) len += (size_t)w_; } } while (0)
  if (rw->has_kg) {
    if (nk) { rw->ok = 0; NOTE("kg: %lld non-finite outputs (unwritten?); ", nk); }
    if (!(ek <= TOL_REF)) { rw->ok = 0; NOTE("kg vs CPU ref %.3g > %.0e; ", ek, TOL_REF); }
    if (!(rw->err_kg_cb <= TOL_KG_CB)) { rw->ok = 0; NOTE("kg vs cuBLAS %.3g > %.0e; ", rw->err_kg_cb, TOL_KG_CB); }
  }
  if (nc) { rw->ok = 0; NOTE("cuBLAS: %lld non-finite outputs; ", nc); }
  if (!(ec <= TOL_REF)) { rw->ok = 0; NOTE("cuBLAS vs CPU ref %.3g > %.0e (bench mapping?); ", ec, TOL_REF); }
#undef NOTE
}

/* ---- one row -------------------------------------------------------------------- */
static void shape_label(const shape *s, char *buf, size_t cap) {
  if (s->batch > 1)
    snprintf(buf, cap, "%lldx %lldx%lldx%lld", (long long)s->batch, (long long)s->m, (long long)s->n,
             (long long)s->k);
  else
    snprintf(buf, cap, "%lldx%lldx%lld", (long long)s->m, (long long)s->n, (long long)s->k);
}

/* Runs one shape. with_kg 0: cuBLAS only (the ceiling). */
static void run_shape(const shape *s, int idx, row *rw, int with_kg) {
  memset(rw, 0, sizeof *rw);
  shape_label(s, rw->shape, sizeof rw->shape);
  rw->batch = s->batch;
  rw->m = s->m;
  rw->ok = 1;
  rw->has_cb = 1;
  rw->err_kg_ref = rw->err_kg_cb = NAN;
  snprintf(rw->variant, sizeof rw->variant, "-");

  problem P;
  memset(&P, 0, sizeof P);
  problem *p = &P;
  p->batch = s->batch; p->m = s->m; p->n = s->n; p->k = s->k;
  p->nA = (size_t)(s->batch * s->m * s->k);
  p->nB = (size_t)(s->batch * s->k * s->n);
  p->nD = (size_t)(s->batch * s->m * s->n);
  rw->flops = 2.0 * (double)s->batch * (double)s->m * (double)s->n * (double)s->k;
  rw->bytes = 2.0 * (double)(p->nA + p->nB + p->nD);

  size_t set_bytes = 2 * (p->nA + p->nB + p->nD);  /* what one launch touches */
  size_t alloc_set = 2 * (p->nA + p->nB + 2 * p->nD);
  int nsets = (int)((2.5 * (double)G.run.l2_bytes + (double)set_bytes - 1) / (double)set_bytes);
  if (nsets < 3) nsets = 3;
  if (nsets > MAX_SETS) nsets = MAX_SETS;
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  while (nsets > 3 && (double)alloc_set * nsets > 0.8 * (double)free_b) nsets--;
  if ((double)alloc_set * nsets > 0.8 * (double)free_b) {
    rw->ok = 0;
    snprintf(rw->note, sizeof rw->note, "not enough device memory (%zu MB free)", free_b >> 20);
    return;
  }
  p->nsets = nsets;
  rw->nsets = nsets;

  /* inputs: sets filled last to first so that hA / hB end holding set 0 */
  uint64_t rng = G.seed * 0x100000001B3ull + (uint64_t)idx * 7919u + 1;
  uint16_t *hA = (uint16_t *)malloc(p->nA * 2), *hB = (uint16_t *)malloc(p->nB * 2);
  if (!hA || !hB) { fprintf(stderr, "out of host memory\n"); exit(2); }
  for (int q = 0; q < nsets; q++) {
    CK(cudaMalloc((void **)&p->dA[q], p->nA * 2));
    CK(cudaMalloc((void **)&p->dB[q], p->nB * 2));
    CK(cudaMalloc((void **)&p->dDk[q], p->nD * 2));
    CK(cudaMalloc((void **)&p->dDc[q], p->nD * 2));
    CK(cudaMemsetAsync(p->dDk[q], 0xFF, p->nD * 2, G.st));  /* NaN poison */
    CK(cudaMemsetAsync(p->dDc[q], 0xFF, p->nD * 2, G.st));
  }
  for (int q = nsets - 1; q >= 0; q--) {
    bench_fill_bf16(hA, p->nA, &rng);
    bench_fill_bf16(hB, p->nB, &rng);
    CK(cudaMemcpy(p->dA[q], hA, p->nA * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p->dB[q], hB, p->nB * 2, cudaMemcpyHostToDevice));
  }
  CK(cudaStreamSynchronize(G.st));

  /* kg: select, workspace */
  void *ws = NULL;
  fill_args(p);
  p->exec.backend = KG_BACKEND_CUDA;
  p->exec.stream = (void *)G.st;
  p->exec.variant = G.force_variant;
  if (with_kg) {
    const char *name = NULL;
    kg_status st = kg_gemm_select(&p->args, &p->exec, &name);
    if (st != KG_SUCCESS) {
      char why[2048];
      kg_explain(KG_OP_GEMM, &p->args, &p->exec, why, sizeof why);
      rw->ok = 0;
      snprintf(rw->note, sizeof rw->note, "kg_gemm_select: %s; ", kg_status_string(st));
      printf("  kg_explain:\n%s", why);
    } else {
      const char *pre = "kg_gemm_cuda_";
      snprintf(rw->variant, sizeof rw->variant, "%s",
               strncmp(name, pre, strlen(pre)) == 0 ? name + strlen(pre) : name);
      size_t wsb = 0;
      st = kg_gemm_workspace_size(&p->args, &p->exec, &wsb);
      if (st != KG_SUCCESS) {
        rw->ok = 0;
        snprintf(rw->note, sizeof rw->note, "kg_gemm_workspace_size: %s; ", kg_status_string(st));
      } else {
        if (wsb) CK(cudaMalloc(&ws, wsb));
        p->exec.workspace = ws;
        p->exec.workspace_size = wsb;
        rw->has_kg = 1;
      }
    }
  }

  bench_timer ops[2];
  memset(ops, 0, sizeof ops);
  ops[0].fn = launch_kg; ops[0].ctx = p; ops[0].active = rw->has_kg;
  ops[1].fn = launch_cb; ops[1].ctx = p; ops[1].active = 1;
  for (int o = 0; o < 2; o++)
    if (ops[o].active) bench_time(&ops[o], p->nsets, G.reps, G.st, WARM_MS, SAMPLE_MS);
  if (rw->has_kg && ops[0].failed) {
    rw->has_kg = 0;
    rw->ok = 0;
    size_t l = strlen(rw->note);
    snprintf(rw->note + l, sizeof rw->note - l, "kg_gemm: %s %s; ", kg_status_string(p->kg_err),
             kg_last_backend_error());
  }
  rw->inner_kg = ops[0].inner; rw->inner_cb = ops[1].inner;
  rw->kg_ms = ops[0].med; rw->kg_min = ops[0].min; rw->kg_max = ops[0].max;
  rw->cb_ms = ops[1].med; rw->cb_min = ops[1].min; rw->cb_max = ops[1].max;

  check_outputs(p, rw, hA, hB, &rng);

  free(hA);
  free(hB);
  if (ws) CK(cudaFree(ws));
  for (int q = 0; q < nsets; q++) {
    CK(cudaFree(p->dA[q])); CK(cudaFree(p->dB[q]));
    CK(cudaFree(p->dDk[q])); CK(cudaFree(p->dDc[q]));
  }
}

/* ---- printing ---------------------------------------------------------------------- */
static double tflops(double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : NAN; }
static double tbs(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e12 : NAN; }

/* Fraction of the roofline (max of compute and memory time at the ceilings). */
static double roof_pct(const row *r) {
  if (!r->has_kg || !(r->kg_ms > 0) || !(G.cb_peak_tflops > 0) || !(G.copy_tbs > 0)) return NAN;
  double tc = r->flops / (G.cb_peak_tflops * 1e12), tm = r->bytes / (G.copy_tbs * 1e12);
  return 100.0 * (tc > tm ? tc : tm) / (r->kg_ms * 1e-3);
}

static void print_row_detail(int i, int n, const row *r) {
  printf("[%2d/%d] %s: %.4g GFLOP, %.1f MB minimum traffic, %d input sets rotated\n", i + 1, n, r->shape,
         r->flops / 1e9, r->bytes / 1e6, r->nsets);
  if (r->has_kg)
    printf("   kg      %-44s %9.4f ms (min %.4f max %.4f, %d/sample) %7.1f TFLOP/s %6.3f TB/s\n",
           r->variant, r->kg_ms, r->kg_min, r->kg_max, r->inner_kg, tflops(r->flops, r->kg_ms),
           tbs(r->bytes, r->kg_ms));
  if (r->has_cb && r->cb_ms > 0)
    printf("   cuBLAS  %-44s %9.4f ms (min %.4f max %.4f, %d/sample) %7.1f TFLOP/s %6.3f TB/s\n",
           r->batch > 1 ? "cublasGemmStridedBatchedEx" : "cublasGemmEx",
           r->cb_ms, r->cb_min, r->cb_max, r->inner_cb, tflops(r->flops, r->cb_ms), tbs(r->bytes, r->cb_ms));
  printf("   check   kg/cuBLAS %.3f; max rel err vs CPU ref (%d samples): kg %.2e, cuBLAS %.2e; "
         "||kg-cuBLAS||/||cuBLAS|| %.2e; non-finite kg %lld cuBLAS %lld -> %s%s%s\n",
         r->has_kg && r->cb_ms > 0 ? r->cb_ms / r->kg_ms : NAN, r->nsamples_ref, r->err_kg_ref,
         r->err_cb_ref, r->err_kg_cb, r->kg_nonfinite, r->cb_nonfinite, r->ok ? "ok" : "FAIL",
         r->note[0] ? ": " : "", r->note);
  fflush(stdout);
}

static void print_header(void) {
  printf("GPU          %s (sm_%d%d, %d SMs, %.0f GiB, L2 %.0f MB)\n", G.run.gpu, G.run.cc_major, G.run.cc_minor, G.run.sms,
         (double)G.run.mem_total / (1 << 30), (double)G.run.l2_bytes / 1e6);
  printf("CUDA         runtime %s, driver supports %s, cuBLAS %s\n", G.run.rt_ver, G.run.drv_ver, G.run.cublas_ver);
  printf("commit       %s\n", G.run.commit);
  printf("date         %s\n", G.run.date);
  printf("ceilings     copy %.3f TB/s (D2D 1 GiB, read+write, %.3f ms); cuBLAS bf16 8192^3 %.1f TFLOP/s (%.3f ms)\n",
         G.copy_tbs, G.copy_ms, G.cb_peak_tflops, G.cb_peak_ms);
  bench_print_timing();
}

static void print_table(void) {
  printf("\n==== kg vs cuBLAS: bf16 in/out, f32 accumulate, A row-major [M,K], B %s, D row-major [M,N] ====\n",
         G.bcol ? "col-major (weights [N,K], rc)" : "row-major [K,N] (rr)");
  print_header();
  printf("%-20s %-40s %9s %8s %8s %7s %7s %6s %8s %5s\n", "shape (MxNxK)", "kg variant", "kg ms", "kg TF/s",
         "cuB TF/s", "kg/cuB", "kg TB/s", "roof%", "max err", "check");
  int fails = 0;
  for (int i = 0; i < G.nrows; i++) {
    const row *r = &G.rows[i];
    char tb[16] = "-", roof[16] = "-", ms[16] = "-", tf[16] = "-", ratio[16] = "-", err[16] = "-", ctf[16] = "-";
    if (r->has_kg) {
      snprintf(ms, sizeof ms, "%.4f", r->kg_ms);
      snprintf(tf, sizeof tf, "%.1f", tflops(r->flops, r->kg_ms));
      if (r->m <= 16) snprintf(tb, sizeof tb, "%.3f", tbs(r->bytes, r->kg_ms));
      snprintf(roof, sizeof roof, "%.1f", roof_pct(r));
      if (r->cb_ms > 0) snprintf(ratio, sizeof ratio, "%.3f", r->cb_ms / r->kg_ms);
      snprintf(err, sizeof err, "%.1e", r->err_kg_ref);
    }
    if (r->cb_ms > 0) snprintf(ctf, sizeof ctf, "%.1f", tflops(r->flops, r->cb_ms));
    printf("%-20s %-40.40s %9s %8s %8s %7s %7s %6s %8s %5s\n", r->shape, r->variant, ms, tf, ctf, ratio, tb, roof,
           err, r->ok ? "ok" : "FAIL");
    fails += !r->ok;
  }
  printf("kg/cuB = cuBLAS time / kg time (>1: kg faster). TB/s on minimum bytes (A+B+D once), M<=16 rows. "
         "roof%% = roofline time at the ceilings above / kg time. max err = kg vs CPU double reference.\n");
  printf("result: %d of %d rows passed%s\n", G.nrows - fails, G.nrows, fails ? " -- FAILURES above" : "");
  fflush(stdout);
}

static void fatal_hook(void) {
  if (G.nrows) print_table();
}

/* ---- main ---------------------------------------------------------------------------- */
int main(int argc, char **argv) {
  (void)argc;
  G.quick = bench_env_long("KG_BENCH_QUICK", 0) != 0;
  G.reps = (int)bench_env_long("KG_BENCH_REPS", 30);
  if (G.reps < 20) G.reps = 20;
  const char *bl = bench_env_str("KG_BENCH_B");
  G.bcol = !(bl && (strcmp(bl, "row") == 0 || strcmp(bl, "r") == 0));
  G.force_variant = bench_env_str("KG_BENCH_VARIANT");
  G.seed = (uint64_t)bench_env_long("KG_BENCH_SEED", 1);
  bench_fatal_hook = fatal_hook;

  if (!kg_backend_available(KG_BACKEND_CUDA)) {
    fprintf(stderr, "bench_gemm: the kg CUDA backend is not available (not compiled in, or no GPU)\n");
    return 2;
  }
  CK(cudaStreamCreateWithFlags(&G.st, cudaStreamNonBlocking));
  CB(cublasCreate(&G.cublas));
  CB(cublasSetStream(G.cublas, G.st));
  bench_run_init(&G.run, G.cublas);

  printf("bench_gemm: %s%s; reps %d (median); B %s%s%s; seed %llu\n", argv[0], G.quick ? " (KG_BENCH_QUICK=1)" : "",
         G.reps, G.bcol ? "col-major" : "row-major", G.force_variant ? "; forced variant " : "",
         G.force_variant ? G.force_variant : "", (unsigned long long)G.seed);

  /* ceilings */
  G.copy_tbs = bench_copy_tbs((size_t)1 << 30, G.reps, G.st, &G.copy_ms);
  {
    row peak;
    int save = G.bcol;
    G.bcol = 1;  /* cuBLAS's best layout (TN) */
    const shape s8k = { 1, 8192, 8192, 8192, 1 };
    run_shape(&s8k, 1000, &peak, 0);
    G.bcol = save;
    if (!peak.ok) {
      printf("ceiling: cuBLAS 8192^3 check failed: %s\n", peak.note);
      return 2;
    }
    G.cb_peak_ms = peak.cb_ms;
    G.cb_peak_tflops = tflops(peak.flops, peak.cb_ms);
  }
  print_header();
  fflush(stdout);

  int n = 0;
  for (int i = 0; i < N_SHAPES; i++) n += !G.quick || SHAPES[i].quick;
  for (int i = 0; i < N_SHAPES; i++) {
    if (G.quick && !SHAPES[i].quick) continue;
    row *r = &G.rows[G.nrows];
    run_shape(&SHAPES[i], i, r, 1);
    G.nrows++;
    print_row_detail(G.nrows - 1, n, r);
  }

  print_table();
  bench_fatal_hook = NULL;
  int fails = 0;
  for (int i = 0; i < G.nrows; i++) fails += !G.rows[i].ok;
  CB(cublasDestroy(G.cublas));
  CK(cudaStreamDestroy(G.st));
  return fails ? 1 : 0;
}
