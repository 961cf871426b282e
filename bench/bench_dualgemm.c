/*
** bench_dualgemm.c -- kg_dualgemm (CUDA backend) bf16 SwiGLU against cuBLAS-based peers, one GPU.
**
** Problem (the LLM FFN gate/up projection): K = 4096, N = 14336, M in {1, 16, 128, 1024, 4096,
** 8192}; A row-major [M,K]; B0, B1 column-major (weights stored [N,K], K contiguous); D2 row-major
** [M,N] = silu(A.B0) * (A.B1), bf16 in and out, f32 accumulation; D0 / D1 not stored.
** The weights are one [2N,K] buffer per input set: B0 = its first N rows, B1 = the next N, so kg
** and both peers read the same bytes.
**
** Peers, measured in the same run (/shared/bench.md), the best of the two is the baseline:
**   (a) two cublasGemmEx (D0, D1 in bf16, row-major [M,N]) + kgb_silu_mul_bf16 (peer_kernels.cu:
**       one pass, vectorized, grid-stride);
**   (b) one cublasGemmEx against the concatenated weights [B0 || B1] (N' = 2N, output [M,2N]) +
**       kgb_silu_mul_bf16 reading the two halves.
** cuBLAS is column-major, so it computes D^T = B^T . A^T: cublasGemmEx(T, N, n, M, K, W, K, A, K,
** D, ldd) with W the [n,K] weights (bench_gemm.c does the same).
**
** Method:
**   - ceiling in the same run: a 1 GiB device-to-device copy (bytes read + written);
**   - CUDA events, each operation in its own block after a ~200 ms warm-up, median of >= 20
**     samples; a sample is `inner` back-to-back launches (>= ~1 ms); launches alternate between
**     input sets (>= 2; each holds 2 x 117 MB of weights, so 2 sets already exceed 2x the 60 MB
**     L2); random bf16 inputs uniform in (-1, 1), never zero;
**   - checks of the outputs the timed launches wrote (set 0; outputs poisoned with NaN first):
**     no non-finite element; kg vs each peer over the whole output (||kg - peer|| / ||peer||);
**     kg and both peers against a CPU double reference on 64 random elements plus the corners:
**     |d - ref| / scale with ref = silu(x0r) * x1r (x0r, x1r the bf16-rounded exact products) and
**     scale = 1.2 max(|x0|, n0) |x1| + |silu(x0)| max(|x1|, n1), n_i = ||a_row o b_i col||_2 (the
**     error a bf16 rounding of D0 / D1 / D2 can cause, with a floor against cancellation);
**   - reported per M: kg variant (kg_dualgemm_select), kg us, peer (a) us, peer (b) us, best-peer
**     us, best-peer / kg (above 1: kg faster), kg TB/s on the weight bytes (2 N K 2) and that as
**     % of the copy ceiling. No kg variant for an M: '-' (not a failure).
** Exit status: 0 all checks passed, 1 a check failed, 2 a CUDA / cuBLAS call failed.
**
** Environment:
**   KG_BENCH_QUICK=1       only M in {1, 16, 4096}
**   KG_BENCH_MS=1,16       only the listed M values (of those above)
**   KG_BENCH_REPS=N        timed samples per operation (default 30, at least 20)
**   KG_BENCH_VARIANT=NAME  force a kg variant (exec.variant)
**   KG_BENCH_SEED=N        RNG seed (default 1)
**   KG_COMMIT=SHA          commit to print when git is not available
*/
#include "bench_common.h"

#include "kg.h"

/* bench/peer_kernels.cu */
int kgb_silu_mul_bf16(const void *x0, int64_t ldx0, const void *x1, int64_t ldx1, void *out, int64_t ldo, int64_t m,
                      int64_t n, void *stream);

#define K_DIM 4096
#define N_DIM 14336
#define MAX_SETS 8
#define TOL_REF 2e-2     /* bf16 roundings of D0, D1 (a flip: 2^-7 each) and D2 (2^-8), relative to scale */
#define TOL_KG_PEER 1e-2 /* norm-wise; typically ~2e-3 */
#define N_RANDOM_SAMPLES 64
#define SAMPLE_MS 1.0
#define WARM_MS 200.0

static const int64_t MS[] = { 1, 16, 128, 1024, 4096, 8192 };
static const int QUICK[] = { 1, 1, 0, 0, 1, 0 };
#define N_MS ((int)(sizeof MS / sizeof MS[0]))

/* Whether row i of MS runs: KG_BENCH_MS (a comma-separated list of M values) wins over KG_BENCH_QUICK. */
static int m_selected(int i, int quick) {
  const char *list = bench_env_str("KG_BENCH_MS");
  if (!list) return !quick || QUICK[i];
  for (const char *s = list; *s;) {
    char *end;
    long long m = strtoll(s, &end, 10);
    if (end == s) return 0;
    if (m == (long long)MS[i]) return 1;
    s = *end == ',' ? end + 1 : end;
  }
  return 0;
}

enum { OP_KG = 0, OP_PA, OP_PB, N_OPS };
static const char *OP_NAMES[N_OPS] = { "kg", "peer (a) 2 GEMM + silu*mul", "peer (b) GEMM [B0||B1] + silu*mul" };

typedef struct row {
  int64_t m;
  char variant[128];
  int has_kg;
  double ms[N_OPS], mn[N_OPS], mx[N_OPS];
  int inner[N_OPS];
  double err_ref[N_OPS];          /* max over samples */
  double err_kg_peer[2];          /* kg vs (a), kg vs (b) */
  long long nonfinite[N_OPS];
  int nsamples;
  int ok;
  char note[512];
} row;

static struct {
  cudaStream_t st;
  cublasHandle_t cublas;
  int reps;
  const char *force_variant;
  uint64_t seed;
  bench_run run;                /* device, versions, commit, date */
  double copy_tbs, copy_ms;
  int quick;
  int nsets;
  uint16_t *dW[MAX_SETS];  /* [2N, K] per set: B0 rows 0..N-1, B1 rows N..2N-1 */
  uint16_t *hW0;           /* host copy of set 0 */
  row rows[N_MS];
  int nrows;
} G;

/* ---- one M on the device ---------------------------------------------------------------------- */
typedef struct problem {
  int64_t m;
  uint16_t *dA[MAX_SETS];
  uint16_t *dD2[N_OPS][MAX_SETS];  /* kg, peer (a), peer (b) outputs, per set */
  uint16_t *dTmp[MAX_SETS];        /* peers' D0 / D1: 2 M N elements */
  kg_dualgemm_args args;
  kg_exec exec;
  kg_status kg_err;
  int peer_err;                    /* kgb_silu_mul_bf16's cudaError_t */
} problem;

static void fill_args(problem *p) {
  kg_dualgemm_args *a = &p->args;
  memset(a, 0, sizeof *a);
  a->mode = KG_MODE_GEMM;
  a->m = p->m; a->n = N_DIM; a->k = K_DIM;
  a->batch_count = 1; a->split_k_slices = 1;
  a->type_ab = KG_BF16; a->type_cd = KG_BF16;
  a->layout_a = KG_ROW; a->layout_b0 = KG_COL; a->layout_b1 = KG_COL; a->layout_cd = KG_ROW;
  a->op = KG_DUAL_SWIGLU;
  a->store_d0 = 0; a->store_d1 = 0;
  a->a = p->dA[0]; a->lda = K_DIM;
  a->b0 = G.dW[0]; a->ldb0 = K_DIM;
  a->b1 = G.dW[0] + (size_t)N_DIM * K_DIM; a->ldb1 = K_DIM;
  a->c0 = NULL; a->c1 = NULL;
  a->d2 = p->dD2[OP_KG][0]; a->ldd2 = N_DIM;
  a->alpha0 = 1.0f; a->alpha1 = 1.0f; a->beta0 = 0.0f; a->beta1 = 0.0f;
}

static int launch_kg(void *ctx, int s) {
  problem *p = (problem *)ctx;
  p->args.a = p->dA[s];
  p->args.b0 = G.dW[s];
  p->args.b1 = G.dW[s] + (size_t)N_DIM * K_DIM;
  p->args.d2 = p->dD2[OP_KG][s];
  kg_status st = kg_dualgemm(&p->args, &p->exec);
  if (st != KG_SUCCESS) { p->kg_err = st; return 1; }
  return 0;
}

/* Row-major D[M,n] (ld ldd) = A[M,K] . W^T with W [n,K] row-major (= column-major K x n). */
static void gemm_cb(const uint16_t *W, int64_t n, const uint16_t *A, int64_t m, uint16_t *D, int64_t ldd) {
  const float alpha = 1.0f, beta = 0.0f;
  CB(cublasGemmEx(G.cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, K_DIM, &alpha, W, CUDA_R_16BF, K_DIM, A,
                  CUDA_R_16BF, K_DIM, &beta, D, CUDA_R_16BF, (int)ldd, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* (a): D0 = A.B0 -> tmp[0 : MN], D1 = A.B1 -> tmp[MN : 2MN] (both ld N), then silu*mul. */
static int launch_pa(void *ctx, int s) {
  problem *p = (problem *)ctx;
  const size_t mn = (size_t)p->m * N_DIM;
  uint16_t *d0 = p->dTmp[s], *d1 = p->dTmp[s] + mn;
  gemm_cb(G.dW[s], N_DIM, p->dA[s], p->m, d0, N_DIM);
  gemm_cb(G.dW[s] + (size_t)N_DIM * K_DIM, N_DIM, p->dA[s], p->m, d1, N_DIM);
  int e = kgb_silu_mul_bf16(d0, N_DIM, d1, N_DIM, p->dD2[OP_PA][s], N_DIM, p->m, N_DIM, (void *)G.st);
  if (e) { p->peer_err = e; return 1; }
  return 0;
}

/* (b): [D0 || D1] = A.[B0 || B1] -> tmp as [M, 2N], then silu*mul on the two halves. */
static int launch_pb(void *ctx, int s) {
  problem *p = (problem *)ctx;
  uint16_t *d01 = p->dTmp[s];
  gemm_cb(G.dW[s], 2 * N_DIM, p->dA[s], p->m, d01, 2 * N_DIM);
  int e = kgb_silu_mul_bf16(d01, 2 * N_DIM, d01 + N_DIM, 2 * N_DIM, p->dD2[OP_PB][s], N_DIM, p->m, N_DIM,
                            (void *)G.st);
  if (e) { p->peer_err = e; return 1; }
  return 0;
}

/* ---- checks ------------------------------------------------------------------------------------ */
static double silu(double x) { return x / (1.0 + exp(-x)); }
static double round_bf16(double x) { return bench_bf16_to_f32(bench_f32_to_bf16((float)x)); }

/* Reference of output (i, j) and its error scale. */
static void ref_at(const problem *p, const uint16_t *hA, int64_t i, int64_t j, double *ref, double *scale) {
  const uint16_t *arow = hA + (size_t)(i * K_DIM);
  const uint16_t *b0 = G.hW0 + (size_t)j * K_DIM, *b1 = G.hW0 + (size_t)(N_DIM + j) * K_DIM;
  double x0 = 0, x1 = 0, s0 = 0, s1 = 0;
  (void)p;
  for (int64_t kk = 0; kk < K_DIM; kk++) {
    double av = bench_bf16_to_f32(arow[kk]);
    double p0 = av * bench_bf16_to_f32(b0[kk]), p1 = av * bench_bf16_to_f32(b1[kk]);
    x0 += p0; x1 += p1;
    s0 += p0 * p0; s1 += p1 * p1;
  }
  const double x0r = round_bf16(x0), x1r = round_bf16(x1);
  const double n0 = sqrt(s0), n1 = sqrt(s1);
  *ref = silu(x0r) * x1r;
  *scale = 1.2 * (fabs(x0) > n0 ? fabs(x0) : n0) * fabs(x1) + fabs(silu(x0)) * (fabs(x1) > n1 ? fabs(x1) : n1);
  if (!(*scale > 0)) *scale = 1e-30;
}

static void check_outputs(problem *p, row *rw, const uint16_t *hA, uint64_t *rng) {
  const size_t nD = (size_t)p->m * N_DIM, bytesD = nD * 2;
  uint16_t *hD[N_OPS] = { NULL, NULL, NULL };
  for (int o = 0; o < N_OPS; o++) {
    if (o == OP_KG && !rw->has_kg) continue;
    hD[o] = (uint16_t *)malloc(bytesD);
    if (!hD[o]) { fprintf(stderr, "out of host memory\n"); exit(2); }
    CK(cudaMemcpy(hD[o], p->dD2[o][0], bytesD, cudaMemcpyDeviceToHost));
  }

  /* whole output: non-finite counts; kg vs each peer norm-wise */
  for (int o = 0; o < N_OPS; o++) {
    rw->nonfinite[o] = 0;
    if (!hD[o]) continue;
    for (size_t x = 0; x < nD; x++)
      if (!isfinite(bench_bf16_to_f32(hD[o][x]))) rw->nonfinite[o]++;
  }
  for (int q = 0; q < 2; q++) {
    const uint16_t *pe = hD[OP_PA + q];
    rw->err_kg_peer[q] = NAN;
    if (!hD[OP_KG]) continue;
    double diff2 = 0, ref2 = 0;
    for (size_t x = 0; x < nD; x++) {
      double c = bench_bf16_to_f32(pe[x]), k = bench_bf16_to_f32(hD[OP_KG][x]);
      if (!isfinite(c) || !isfinite(k)) continue;  /* counted above */
      ref2 += c * c;
      diff2 += (k - c) * (k - c);
    }
    rw->err_kg_peer[q] = ref2 > 0 ? sqrt(diff2 / ref2) : INFINITY;
  }

  /* samples: the corners, then random elements */
  const int64_t ci[2] = { 0, p->m - 1 }, cj[2] = { 0, N_DIM - 1 };
  double emax[N_OPS] = { 0, 0, 0 };
  int ns = 0;
  for (int q = 0; q < 4 + N_RANDOM_SAMPLES; q++) {
    int64_t i, j;
    if (q < 4) {
      i = ci[q >> 1]; j = cj[q & 1];
    } else {
      i = (int64_t)(bench_rng_next(rng) % (uint64_t)p->m);
      j = (int64_t)(bench_rng_next(rng) % (uint64_t)N_DIM);
    }
    double ref, scale;
    ref_at(p, hA, i, j, &ref, &scale);
    for (int o = 0; o < N_OPS; o++) {
      if (!hD[o]) continue;
      double d = bench_bf16_to_f32(hD[o][(size_t)(i * N_DIM + j)]);
      double e = isfinite(d) ? fabs(d - ref) / scale : INFINITY;
      if (!(e <= emax[o])) emax[o] = e;  /* NaN / Inf propagate */
    }
    ns++;
  }
  rw->nsamples = ns;
  for (int o = 0; o < N_OPS; o++) rw->err_ref[o] = hD[o] ? emax[o] : NAN;
  for (int o = 0; o < N_OPS; o++) free(hD[o]);

  char *n = rw->note;
  size_t cap = sizeof rw->note, len = strlen(n);
#define NOTE(...) do { if (len < cap) { int w_ = snprintf(n + len, cap - len, __VA_ARGS__); if (w_ > 0) len += (size_t)w_; } } while (0)
  static const char *who[N_OPS] = { "kg", "peer (a)", "peer (b)" };
  for (int o = 0; o < N_OPS; o++) {
    if (o == OP_KG && !rw->has_kg) continue;
    if (rw->nonfinite[o]) { rw->ok = 0; NOTE("%s: %lld non-finite outputs (unwritten?); ", who[o], rw->nonfinite[o]); }
    if (!(rw->err_ref[o] <= TOL_REF)) {
      rw->ok = 0;
      NOTE("%s vs CPU ref %.3g > %.0e%s; ", who[o], rw->err_ref[o], TOL_REF, o ? " (bench mapping?)" : "");
    }
  }
  if (rw->has_kg)
    for (int q = 0; q < 2; q++)
      if (!(rw->err_kg_peer[q] <= TOL_KG_PEER)) {
        rw->ok = 0;
        NOTE("kg vs %s %.3g > %.0e; ", who[OP_PA + q], rw->err_kg_peer[q], TOL_KG_PEER);
      }
#undef NOTE
}

/* ---- one M ---------------------------------------------------------------------------------------- */
static void run_m(int64_t m, int idx, row *rw) {
  memset(rw, 0, sizeof *rw);
  rw->m = m;
  rw->ok = 1;
  snprintf(rw->variant, sizeof rw->variant, "-");
  for (int o = 0; o < N_OPS; o++) rw->err_ref[o] = NAN;
  rw->err_kg_peer[0] = rw->err_kg_peer[1] = NAN;

  problem P;
  memset(&P, 0, sizeof P);
  problem *p = &P;
  p->m = m;
  const size_t nA = (size_t)m * K_DIM, nD = (size_t)m * N_DIM;
  const size_t per_set = 2 * (nA + 3 * nD + 2 * nD);
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  if ((double)per_set * G.nsets > 0.9 * (double)free_b) {
    rw->ok = 0;
    snprintf(rw->note, sizeof rw->note, "not enough device memory (%zu MB free, %zu MB needed)", free_b >> 20,
             (per_set * (size_t)G.nsets) >> 20);
    return;
  }

  /* inputs: sets filled last to first so that hA ends holding set 0; outputs poisoned (NaN) */
  uint64_t rng = G.seed * 0x100000001B3ull + (uint64_t)idx * 7919u + 17;
  uint16_t *hA = (uint16_t *)malloc(nA * 2);
  if (!hA) { fprintf(stderr, "out of host memory\n"); exit(2); }
  for (int q = 0; q < G.nsets; q++) {
    CK(cudaMalloc((void **)&p->dA[q], nA * 2));
    CK(cudaMalloc((void **)&p->dTmp[q], 2 * nD * 2));
    for (int o = 0; o < N_OPS; o++) {
      CK(cudaMalloc((void **)&p->dD2[o][q], nD * 2));
      CK(cudaMemsetAsync(p->dD2[o][q], 0xFF, nD * 2, G.st));
    }
    CK(cudaMemsetAsync(p->dTmp[q], 0xFF, 2 * nD * 2, G.st));
  }
  for (int q = G.nsets - 1; q >= 0; q--) {
    bench_fill_bf16(hA, nA, &rng);
    CK(cudaMemcpy(p->dA[q], hA, nA * 2, cudaMemcpyHostToDevice));
  }
  CK(cudaStreamSynchronize(G.st));

  /* kg: select (no variant: '-', not a failure) */
  fill_args(p);
  p->exec.backend = KG_BACKEND_CUDA;
  p->exec.stream = (void *)G.st;
  p->exec.variant = G.force_variant;
  const char *name = NULL;
  kg_status st = kg_dualgemm_select(&p->args, &p->exec, &name);
  void *ws = NULL;
  if (st == KG_SUCCESS) {
    const char *pre = "kg_dualgemm_cuda_";
    snprintf(rw->variant, sizeof rw->variant, "%s", strncmp(name, pre, strlen(pre)) == 0 ? name + strlen(pre) : name);
    size_t wsb = 0;
    st = kg_dualgemm_workspace_size(&p->args, &p->exec, &wsb);
    if (st != KG_SUCCESS) {
      rw->ok = 0;
      snprintf(rw->note, sizeof rw->note, "kg_dualgemm_workspace_size: %s; ", kg_status_string(st));
    } else {
      if (wsb) CK(cudaMalloc(&ws, wsb));
      p->exec.workspace = ws;
      p->exec.workspace_size = wsb;
      rw->has_kg = 1;
    }
  } else if (G.force_variant) {
    char why[4096];
    kg_explain(KG_OP_DUALGEMM, &p->args, &p->exec, why, sizeof why);
    rw->ok = 0;
    snprintf(rw->note, sizeof rw->note, "forced variant refused: %s; ", kg_status_string(st));
    printf("  kg_explain:\n%s", why);
  } else {
    snprintf(rw->note, sizeof rw->note, "no kg variant (%s); ", kg_status_string(st));
  }

  bench_timer ops[N_OPS];
  memset(ops, 0, sizeof ops);
  ops[OP_KG].fn = launch_kg; ops[OP_KG].ctx = p; ops[OP_KG].active = rw->has_kg;
  ops[OP_PA].fn = launch_pa; ops[OP_PA].ctx = p; ops[OP_PA].active = 1;
  ops[OP_PB].fn = launch_pb; ops[OP_PB].ctx = p; ops[OP_PB].active = 1;
  for (int o = 0; o < N_OPS; o++)
    if (ops[o].active) bench_time(&ops[o], G.nsets, G.reps, G.st, WARM_MS, SAMPLE_MS);
  if (rw->has_kg && ops[OP_KG].failed) {
    rw->has_kg = 0;
    rw->ok = 0;
    size_t l = strlen(rw->note);
    snprintf(rw->note + l, sizeof rw->note - l, "kg_dualgemm: %s %s; ", kg_status_string(p->kg_err),
             kg_last_backend_error());
  }
  for (int o = OP_PA; o <= OP_PB; o++)
    if (ops[o].failed) bench_fatal("kgb_silu_mul_bf16", cudaGetErrorString((cudaError_t)p->peer_err), __FILE__, __LINE__);
  for (int o = 0; o < N_OPS; o++) {
    rw->ms[o] = ops[o].active ? ops[o].med : NAN;
    rw->mn[o] = ops[o].min; rw->mx[o] = ops[o].max;
    rw->inner[o] = ops[o].inner;
  }

  check_outputs(p, rw, hA, &rng);

  free(hA);
  if (ws) CK(cudaFree(ws));
  for (int q = 0; q < G.nsets; q++) {
    CK(cudaFree(p->dA[q]));
    CK(cudaFree(p->dTmp[q]));
    for (int o = 0; o < N_OPS; o++) CK(cudaFree(p->dD2[o][q]));
  }
}

/* ---- printing ------------------------------------------------------------------------------------ */
static const double W_BYTES = 2.0 * N_DIM * K_DIM * 2.0;  /* B0 and B1, bf16 */

static double best_peer_ms(const row *r) {
  double a = r->ms[OP_PA], b = r->ms[OP_PB];
  return !(a > 0) ? b : !(b > 0) ? a : a < b ? a : b;
}
static double tbs(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e12 : NAN; }

static void print_row_detail(int i, int n, const row *r) {
  const double flops = 4.0 * (double)r->m * N_DIM * K_DIM;
  printf("[%d/%d] M=%lld N=%d K=%d: %.4g GFLOP, weights %.1f MB, %d input sets alternated\n", i + 1, n,
         (long long)r->m, N_DIM, K_DIM, flops / 1e9, W_BYTES / 1e6, G.nsets);
  for (int o = 0; o < N_OPS; o++) {
    if (o == OP_KG && !r->has_kg) {
      printf("   %-36s %s\n", "kg", r->variant);
      continue;
    }
    printf("   %-36s %10.2f us (min %.2f max %.2f, %d/sample) %7.1f TFLOP/s %6.3f TB/s on weights\n",
           o == OP_KG ? r->variant : OP_NAMES[o], r->ms[o] * 1e3, r->mn[o] * 1e3, r->mx[o] * 1e3, r->inner[o],
           r->ms[o] > 0 ? flops / (r->ms[o] * 1e-3) / 1e12 : NAN, tbs(W_BYTES, r->ms[o]));
  }
  printf("   check   best-peer/kg %.3f; max err vs CPU ref (%d samples): kg %.2e, (a) %.2e, (b) %.2e; "
         "||kg-(a)||/||(a)|| %.2e, ||kg-(b)||/||(b)|| %.2e; non-finite kg %lld (a) %lld (b) %lld -> %s%s%s\n",
         r->has_kg ? best_peer_ms(r) / r->ms[OP_KG] : NAN, r->nsamples, r->err_ref[OP_KG], r->err_ref[OP_PA],
         r->err_ref[OP_PB], r->err_kg_peer[0], r->err_kg_peer[1], r->nonfinite[OP_KG], r->nonfinite[OP_PA],
         r->nonfinite[OP_PB], r->ok ? "ok" : "FAIL", r->note[0] ? ": " : "", r->note);
  fflush(stdout);
}

static void print_header(void) {
  printf("GPU          %s (sm_%d%d, %d SMs, %.0f GiB, L2 %.0f MB)\n", G.run.gpu, G.run.cc_major, G.run.cc_minor, G.run.sms,
         (double)G.run.mem_total / (1 << 30), (double)G.run.l2_bytes / 1e6);
  printf("CUDA         runtime %s, driver supports %s, cuBLAS %s\n", G.run.rt_ver, G.run.drv_ver, G.run.cublas_ver);
  printf("commit       %s\n", G.run.commit);
  printf("date         %s\n", G.run.date);
  printf("ceiling      copy %.3f TB/s (D2D 1 GiB, read+write, %.3f ms)\n", G.copy_tbs, G.copy_ms);
  bench_print_timing();
}

static void print_table(void) {
  printf("\n==== kg DualGemm vs cuBLAS peers: bf16 SwiGLU, K=%d N=%d, A row-major [M,K], B0/B1 col-major "
         "(weights [N,K]), D2 row-major [M,N], D0/D1 not stored ====\n", K_DIM, N_DIM);
  print_header();
  printf("%6s %-44s %10s %10s %10s %10s %8s %7s %6s %5s\n", "M", "kg variant", "kg us", "(a) us", "(b) us",
         "best us", "best/kg", "kg TB/s", "%copy", "check");
  int fails = 0;
  for (int i = 0; i < G.nrows; i++) {
    const row *r = &G.rows[i];
    char kus[16] = "-", aus[16] = "-", bus[16] = "-", best[16] = "-", ratio[16] = "-", tb[16] = "-", pc[16] = "-";
    if (r->ms[OP_PA] > 0) snprintf(aus, sizeof aus, "%.2f", r->ms[OP_PA] * 1e3);
    if (r->ms[OP_PB] > 0) snprintf(bus, sizeof bus, "%.2f", r->ms[OP_PB] * 1e3);
    const double bp = best_peer_ms(r);
    if (bp > 0) snprintf(best, sizeof best, "%.2f", bp * 1e3);
    if (r->has_kg && r->ms[OP_KG] > 0) {
      snprintf(kus, sizeof kus, "%.2f", r->ms[OP_KG] * 1e3);
      if (bp > 0) snprintf(ratio, sizeof ratio, "%.3f", bp / r->ms[OP_KG]);
      snprintf(tb, sizeof tb, "%.3f", tbs(W_BYTES, r->ms[OP_KG]));
      snprintf(pc, sizeof pc, "%.1f", 100.0 * tbs(W_BYTES, r->ms[OP_KG]) / G.copy_tbs);
    }
    printf("%6lld %-44.44s %10s %10s %10s %10s %8s %7s %6s %5s\n", (long long)r->m, r->variant, kus, aus, bus, best,
           ratio, tb, pc, r->ok ? "ok" : "FAIL");
    fails += !r->ok;
  }
  printf("(a) = 2 cublasGemmEx + silu*mul; (b) = 1 cublasGemmEx on [B0||B1] + silu*mul; best/kg = best peer time / "
         "kg time (>1: kg faster). kg TB/s on the weight bytes 2*N*K*2 = %.1f MB; %%copy = that / the copy ceiling.\n",
         W_BYTES / 1e6);
  printf("result: %d of %d rows passed%s\n", G.nrows - fails, G.nrows, fails ? " -- FAILURES above" : "");
  fflush(stdout);
}

static void fatal_hook(void) {
  if (G.nrows) print_table();
}

/* ---- main ------------------------------------------------------------------------------------------ */
int main(int argc, char **argv) {
  (void)argc;
  G.quick = bench_env_long("KG_BENCH_QUICK", 0) != 0;
  G.reps = (int)bench_env_long("KG_BENCH_REPS", 30);
  if (G.reps < 20) G.reps = 20;
  G.force_variant = bench_env_str("KG_BENCH_VARIANT");
  G.seed = (uint64_t)bench_env_long("KG_BENCH_SEED", 1);
  bench_fatal_hook = fatal_hook;

  if (!kg_backend_available(KG_BACKEND_CUDA)) {
    fprintf(stderr, "bench_dualgemm: the kg CUDA backend is not available (not compiled in, or no GPU)\n");
    return 2;
  }
  CK(cudaStreamCreateWithFlags(&G.st, cudaStreamNonBlocking));
  CB(cublasCreate(&G.cublas));
  CB(cublasSetStream(G.cublas, G.st));
  bench_run_init(&G.run, G.cublas);

  /* weight sets: enough that consecutive launches never find their weights in L2 (>= 2) */
  const size_t w_elems = (size_t)2 * N_DIM * K_DIM;
  G.nsets = (int)ceil(2.5 * (double)G.run.l2_bytes / (double)(w_elems * 2));
  if (G.nsets < 2) G.nsets = 2;
  if (G.nsets > MAX_SETS) G.nsets = MAX_SETS;

  printf("bench_dualgemm: %s%s; reps %d (median); %d weight sets of %.1f MB alternated%s%s; seed %llu\n", argv[0],
         G.quick ? " (KG_BENCH_QUICK=1)" : "", G.reps, G.nsets, (double)w_elems * 2 / 1e6,
         G.force_variant ? "; forced variant " : "", G.force_variant ? G.force_variant : "",
         (unsigned long long)G.seed);

  G.copy_tbs = bench_copy_tbs((size_t)1 << 30, G.reps, G.st, &G.copy_ms);
  print_header();
  fflush(stdout);

  uint64_t wrng = G.seed * 0x9E3779B97F4A7C15ull + 3;
  G.hW0 = (uint16_t *)malloc(w_elems * 2);
  if (!G.hW0) { fprintf(stderr, "out of host memory\n"); return 2; }
  for (int q = G.nsets - 1; q >= 0; q--) {  /* last to first: hW0 ends holding set 0 */
    CK(cudaMalloc((void **)&G.dW[q], w_elems * 2));
    bench_fill_bf16(G.hW0, w_elems, &wrng);
    CK(cudaMemcpy(G.dW[q], G.hW0, w_elems * 2, cudaMemcpyHostToDevice));
  }

  int n = 0;
  for (int i = 0; i < N_MS; i++) n += m_selected(i, G.quick);
  for (int i = 0; i < N_MS; i++) {
    if (!m_selected(i, G.quick)) continue;
    row *r = &G.rows[G.nrows];
    run_m(MS[i], i, r);
    G.nrows++;
    print_row_detail(G.nrows - 1, n, r);
  }

  print_table();
  bench_fatal_hook = NULL;
  int fails = 0;
  for (int i = 0; i < G.nrows; i++) fails += !G.rows[i].ok;
  for (int q = 0; q < G.nsets; q++) CK(cudaFree(G.dW[q]));
  free(G.hW0);
  CB(cublasDestroy(G.cublas));
  CK(cudaStreamDestroy(G.st));
  return fails ? 1 : 0;
}
