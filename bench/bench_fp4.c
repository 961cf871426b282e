/*
** bench_fp4.c -- kg's block-scaled FP4 kernels on the GPU against cuBLAS bf16 on
** the dequantized weights, in the same run (../shared/bench.md).
**
** Rows:
**   - W4A16 GEMM  D = A.W^T, A bf16 [M, K] row-major, W FP4 [N, K] (NVFP4 and
**     MXFP4, 128x4 scales), D bf16: M in {1, 16, 128, 1024, 4096} x (N, K) in
**     {(4096, 4096), (14336, 4096), (4096, 14336)}. Peer: cublasGemmEx on the
**     bf16 weights that kg_fp4_dequantize produced from the same FP4 bytes.
**   - W4A16 DualGemm SwiGLU, K = 4096, N = 14336, M in {1, 16, 128, 1024, 4096,
**     8192}. Peer: the best of two cuBLAS GEMMs + silu*mul and one cuBLAS GEMM
**     on [W0 || W1] + silu*mul (bench/peer_kernels.cu), on dequantized weights.
**   - Batched W4A16 DualGemm SwiGLU, the MoE gate-up projection ("moe8", M column
**     "8x<m>"): 8 experts, each with its own W0, W1 (and scale groups, global
**     scales) and its own m rows of A, K = 4096, N = 14336, m in {16, 256, 1024}
**     (MXFP4: 16, 1024; KG_BENCH_MS: its values). m = 16 is a decode step's MoE
**     (e.g. 64 tokens, top-2 of 8 experts). Peer: the same two forms with
**     cublasGemmStridedBatchedEx over the experts, silu*mul over all rows.
**   - quantize: bf16 [16384, 7168] -> NVFP4 (with a global scale) and MXFP4,
**     128x4 scales; TB/s of input read.
** Weights: random bf16, their amax by kg_amax, the NVFP4 global scale by
** kg_nvfp4_global_scale, kg_fp4_quantize, then kg_fp4_dequantize for the peer.
** Enough weight sets are rotated that no launch finds its weights in L2.
** kg calls: each FP4 GEMM / DualGemm row asks kg_gemm_fp4_workspace_size /
** kg_dualgemm_fp4_workspace_size and passes a workspace of that size (allocated
** once, outside the timed region; grown for a larger row): kg runs what its
** dispatch picks with that workspace, the in-kernel FP4 variant (the tensorop
** kernels where they take the row, the size query then answering 0) or the
** dequantize path ("deq+<kg_gemm or kg_dualgemm variant>" in the variant column:
** the weights dequantized into the workspace, then the bf16 tensor-core GEMM).
** Reported per row: kg variant, kg us, peer us, peer/kg (above 1: kg faster),
** kg TB/s on the FP4 weight bytes (packed values + scales) and that as % of the
** device-to-device copy ceiling measured in the same run; where the variant
** honours KG_EXEC_PDL (kg.h: the skinny kernels), also the same kg call with that
** flag ("pdl us", "peer/pdl"): the timed launches run back to back, so each may
** start, and load its first weights, while the one ahead finishes (the peer
** launches as usual). Its output equals kg's without the flag bit for bit where the launcher takes
** the same kernel and K split; where it takes another under the flag (the skinny kernels'
** narrow-block and XS rules) the sums may round differently, and the output passes the same
** checks as kg's ("other bits" in the check column). Per weight shape
** also the read floor ("read us"): bench/peer_kernels.cu's kgb_read_bytes streaming the same FP4
** weight bytes and nothing else, timed the same way (rotated sets, back-to-back launches), and
** "peer/read", the largest peer/kg any kernel that reads those bytes could reach in this run;
** with the pdl columns also that kernel as a programmatic dependent launch ("rd pdl", the
** floor of the "pdl us" column) and "peer/rdp".
** Checks of the timed run (outputs poisoned with NaN first): 64 sampled
** outputs against a double-precision reference on the dequantized weights
** (host loop here), and kg against the peer norm-wise.
** Exit status: 0 all checks passed, 1 a check failed, 2 a CUDA / cuBLAS call failed.
**
** Environment:
**   KG_BENCH_QUICK=1       only M in {16, 4096} and one quantizer row
**   KG_BENCH_MS=128,4096   the GEMM and DualGemm rows run exactly these M values (any M >= 1,
**                          up to 16 values), NVFP4 and MXFP4 alike (wins over KG_BENCH_QUICK and
**                          the MXFP4 defaults); the quantizer rows are unchanged
**   KG_BENCH_VARIANT=NAME  force exec.variant for the FP4 GEMM / DualGemm rows: an FP4 variant
**                          (e.g. kg_fp4gemm_cuda_mma_nvfp4_bf16_sf128x4: the in-kernel path) or a
**                          dequantize path name as select prints it ("dequantize + kg_gemm_cuda_...");
**                          rows of the other op (or shape) it does not fit show "-" for kg
**   KG_BENCH_OPS=dual,moe8 only the rows of these ops (gemm, dual, moe8, quantize; default all)
**   KG_BENCH_PDL=0         no KG_EXEC_PDL columns, nor the PDL read floor (default 1)
**   KG_BENCH_REPS=N        timed samples per operation (default 30, at least 20)
**   KG_BENCH_SEED=N        RNG seed (default 1)
**   KG_BENCH_GRAPH=1       every figure (kg, peer, read floor) from CUDA graph replays of the same
**                          back-to-back launches (bench_common.h bench_time); default: stream launches
**   KG_COMMIT=SHA          commit to print when git is not available
*/
#include "bench_common.h"

#include "kg.h"

/* bench/peer_kernels.cu */
int kgb_silu_mul_bf16(const void *x0, int64_t ldx0, const void *x1, int64_t ldx1, void *out, int64_t ldo, int64_t m,
                      int64_t n, void *stream);
int kgb_read_bytes(const void *p0, int64_t n0, const void *p1, int64_t n1, const void *p2, int64_t n2, void *sink,
                   int pdl, void *stream);

#define MAX_SETS 8
#define MAX_EXPERTS 8
#define MAX_ROWS 160
#define N_SAMPLES 64
#define TOL_REF 2e-2      /* bf16 output rounding (and D0/D1 roundings for SwiGLU), relative to scale */
#define TOL_KG_PEER 1e-2  /* norm-wise: both sum the same products in f32 */
#define SAMPLE_MS 1.0
#define WARM_MS 200.0

static struct {
  cudaStream_t st;
  cublasHandle_t cublas;
  int reps, quick;
  uint64_t seed;
  bench_run run;                /* device, versions, commit, date */
  double copy_tbs, copy_ms;
  int nrows, fails;
  char table[MAX_ROWS][360];
  const char *force_variant;    /* KG_BENCH_VARIANT */
  int pdl;                      /* KG_BENCH_PDL */
  const char *ms;               /* KG_BENCH_MS */
  const char *ops;              /* KG_BENCH_OPS */
  void *ws;                     /* workspace of the FP4 GEMM / DualGemm rows (grows) */
  void *sink;                   /* 4 device bytes for kgb_read_bytes */
  size_t ws_bytes;
} G;

/* Whether the GEMM / DualGemm rows run M: KG_BENCH_MS (a comma-separated list) when set, else dflt. */
static int m_selected(int64_t m, int dflt) {
  if (!G.ms) return dflt;
  for (const char *s = G.ms; *s;) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s) return 0;
    if (v == (long long)m) return 1;
    s = *end == ',' ? end + 1 : end;
  }
  return 0;
}

/* Whether the rows of op (gemm, dual, moe8, quantize) run: KG_BENCH_OPS lists it, or is not set. */
static int op_selected(const char *op) {
  if (!G.ops) return 1;
  const size_t n = strlen(op);
  for (const char *s = G.ops; *s;) {
    const char *end = strchr(s, ',');
    const size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len == n && !strncmp(s, op, n)) return 1;
    s = end ? end + 1 : s + len;
  }
  return 0;
}

/* The list of KG_BENCH_MS, checked: positive integers separated by commas. */
static int ms_valid(const char *list) {
  int n = 0;
  for (const char *s = list; *s;) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 1 || (*end && *end != ',')) return 0;
    n++;
    s = *end == ',' ? end + 1 : end;
  }
  return n > 0;
}

/* The variant column: the name without "kg_..._cuda_"; the dequantize path as "deq+<inner>". */
static void short_variant(const char *name, char *out, size_t cap) {
  static const char DEQ[] = "dequantize + ";
  const int deq = strncmp(name, DEQ, sizeof DEQ - 1) == 0;
  const char *inner = deq ? name + sizeof DEQ - 1 : name, *s = strstr(inner, "_cuda_");
  snprintf(out, cap, "%s%s", deq ? "deq+" : "", s ? s + 6 : inner);
}

static void table_add(const char *line) {
  if (G.nrows < MAX_ROWS) snprintf(G.table[G.nrows++], sizeof G.table[0], "%s", line);
}

/* ---- FP4 weights --------------------------------------------------------------------------------
** nw matrices of [n, k] per expert and set (DualGemm: W0 rows 0..n-1, W1 rows n..2n-1 of one
** [2n, k] bf16 buffer, so the peer can also run one GEMM on [W0 || W1]); experts one after
** another. Each matrix has its own scales and NVFP4 global scale per expert: matrix i's scale
** buffer holds one group per expert, its global scales are gs[i * experts + e]. */
typedef struct weights {
  kg_fp4_format format;
  int64_t n, k, kv;
  int nw, nsets, experts;
  size_t sf_bytes;                   /* per matrix (all experts' groups) */
  uint8_t *q[MAX_SETS];              /* [experts * nw * n, k/2] */
  uint8_t *sf[MAX_SETS][2];
  float *gs[MAX_SETS];               /* nw * experts floats (NVFP4) */
  uint16_t *deq[MAX_SETS];           /* [experts * nw * n, k] bf16, dequantized */
  uint16_t *h_deq;                   /* host copy of set 0's deq */
  double fp4_bytes;                  /* bytes kg must read per launch: values + scales */
  double read_ms;                    /* read floor: kgb_read_bytes of those bytes, timed as kg is */
  double read_pdl_ms;                /* the same launched as a programmatic dependent launch (G.pdl) */
  int read_err, read_pdl;
} weights;

static void check_kg(kg_status st, const char *what) {
  if (st != KG_SUCCESS) {
    fprintf(stderr, "%s: %s %s\n", what, kg_status_string(st), kg_last_backend_error());
    if (bench_fatal_hook) bench_fatal_hook();
    exit(2);
  }
}

static kg_exec cuda_exec(void) {
  kg_exec e;
  memset(&e, 0, sizeof e);
  e.backend = KG_BACKEND_CUDA;
  e.stream = (void *)G.st;
  return e;
}

/* The read floor's launch on set s: the packed values and scales of every matrix, once. */
static int launch_read(void *ctx, int s) {
  weights *w = (weights *)ctx;
  const int64_t qb = (int64_t)w->experts * w->nw * w->n * (w->k / 2), sb = (int64_t)w->sf_bytes;
  int e = kgb_read_bytes(w->q[s], qb, w->sf[s][0], sb, w->nw > 1 ? w->sf[s][1] : NULL, w->nw > 1 ? sb : 0, G.sink,
                         w->read_pdl, (void *)G.st);
  if (e) { w->read_err = e; return 1; }
  return 0;
}

/* Per-launch ms (median) of the read floor on w's sets; pdl: as programmatic dependent launches. */
static double time_read(weights *w, int pdl) {
  bench_timer t;
  memset(&t, 0, sizeof t);
  t.fn = launch_read; t.ctx = w; t.active = 1;
  w->read_pdl = pdl;
  bench_time(&t, w->nsets, G.reps, G.st, WARM_MS, SAMPLE_MS);
  w->read_pdl = 0;
  if (t.failed)
    bench_fatal(pdl ? "kgb_read_bytes (pdl)" : "kgb_read_bytes", cudaGetErrorString((cudaError_t)w->read_err), __FILE__,
                __LINE__);
  return t.med;
}

static void weights_make(weights *w, kg_fp4_format f, int64_t n, int64_t k, int nw, int experts, uint64_t *rng) {
  memset(w, 0, sizeof *w);
  if (experts < 1 || experts > MAX_EXPERTS) { fprintf(stderr, "bench_fp4: %d experts\n", experts); exit(2); }
  w->format = f; w->n = n; w->k = k; w->nw = nw; w->experts = experts;
  w->kv = kg_fp4_kv(f, k);
  check_kg(kg_sf_size(KG_SF_SWIZZLED_128X4, n, w->kv, experts, &w->sf_bytes), "kg_sf_size");
  w->fp4_bytes = (double)nw * ((double)experts * (double)n * (double)k / 2 + (double)w->sf_bytes);
  /* sets of more than 2.5 x L2 together; one where a set alone is that large */
  int sets = (int)ceil(2.5 * (double)G.run.l2_bytes / w->fp4_bytes);
  w->nsets = sets < 1 ? 1 : sets > MAX_SETS ? MAX_SETS : sets;
  if (w->nsets == 1 && w->fp4_bytes < 2.5 * (double)G.run.l2_bytes) w->nsets = 2;
  const size_t elems = (size_t)experts * (size_t)nw * (size_t)n * (size_t)k;
  uint16_t *h = (uint16_t *)malloc(elems * 2);
  w->h_deq = (uint16_t *)malloc(elems * 2);
  if (!h || !w->h_deq) { fprintf(stderr, "out of host memory\n"); exit(2); }
  kg_exec ex = cuda_exec();
  for (int s = 0; s < w->nsets; s++) {
    CK(cudaMalloc((void **)&w->q[s], elems / 2));
    CK(cudaMalloc((void **)&w->deq[s], elems * 2));
    CK(cudaMalloc((void **)&w->gs[s], (size_t)(nw * experts) * sizeof(float)));
    bench_fill_bf16(h, elems, rng);
    CK(cudaMemcpy(w->deq[s], h, elems * 2, cudaMemcpyHostToDevice));
    /* matrix i of expert e: rows (e nw + i) n .. of deq and q */
    const int64_t xstride = (int64_t)nw * n * k, qstride = (int64_t)nw * n * (k / 2);
    for (int i = 0; i < nw; i++) {
      CK(cudaMalloc((void **)&w->sf[s][i], w->sf_bytes));
      const uint16_t *x = w->deq[s] + (size_t)i * (size_t)n * (size_t)k;
      const float *gs = NULL;
      if (f == KG_FP4_NVFP4) {
        float *gi = w->gs[s] + i * experts, amax[MAX_EXPERTS], g[MAX_EXPERTS];
        kg_amax_args am = { KG_BF16, experts, n, k, x, k, xstride, gi };
        check_kg(kg_amax(&am, &ex), "kg_amax");
        CK(cudaMemcpyAsync(amax, gi, (size_t)experts * sizeof(float), cudaMemcpyDeviceToHost, G.st));
        CK(cudaStreamSynchronize(G.st));
        for (int e = 0; e < experts; e++) g[e] = kg_nvfp4_global_scale(amax[e]);
        CK(cudaMemcpy(gi, g, (size_t)experts * sizeof(float), cudaMemcpyHostToDevice));
        gs = gi;
      }
      kg_fp4_args qa;
      memset(&qa, 0, sizeof qa);
      qa.format = f; qa.sf_layout = KG_SF_SWIZZLED_128X4; qa.mx_round = KG_MX_ROUND_UP;
      qa.dtype = KG_BF16; qa.batch = experts; qa.rows = n; qa.k = k;
      qa.x = (void *)x; qa.ldx = k; qa.batch_stride_x = xstride;
      qa.q = w->q[s] + (size_t)i * (size_t)n * (size_t)(k / 2); qa.ldq = k / 2; qa.batch_stride_q = qstride;
      qa.sf = w->sf[s][i]; qa.sf_bytes = w->sf_bytes;
      qa.global_scale = gs;
      check_kg(kg_fp4_quantize(&qa, &ex), "kg_fp4_quantize");
      check_kg(kg_fp4_dequantize(&qa, &ex), "kg_fp4_dequantize");  /* x <- the weights kg multiplies */
    }
  }
  CK(cudaStreamSynchronize(G.st));
  CK(cudaMemcpy(w->h_deq, w->deq[0], elems * 2, cudaMemcpyDeviceToHost));
  free(h);
  w->read_ms = time_read(w, 0);
  if (G.pdl) w->read_pdl_ms = time_read(w, 1);
}

static void weights_free(weights *w) {
  for (int s = 0; s < w->nsets; s++) {
    CK(cudaFree(w->q[s])); CK(cudaFree(w->deq[s])); CK(cudaFree(w->gs[s]));
    for (int i = 0; i < w->nw; i++) CK(cudaFree(w->sf[s][i]));
  }
  free(w->h_deq);
}

/* ---- one M -------------------------------------------------------------------------------------- */
/* OP_KG_PDL: kg with exec.flags = KG_EXEC_PDL. GEMM: P1 = cuBLAS; DualGemm: P1 = 2 GEMMs, P2 = 1 GEMM. */
enum { OP_KG = 0, OP_KG_PDL, OP_P1, OP_P2, N_OPS };

typedef struct problem {
  const weights *w;
  int dual;
  int64_t m;
  uint16_t *a[MAX_SETS];
  uint16_t *d[N_OPS][MAX_SETS];   /* outputs [m, n] */
  uint16_t *tmp[MAX_SETS];        /* peers' D0 || D1: [m, 2n] */
  kg_exec exec, exec_pdl;
  kg_status kg_err;
  int peer_err;
} problem;

/* The row's workspace: G.ws grown to ws bytes (outside the timed region), given to p->exec; none for 0. */
static void workspace_reserve(size_t ws, problem *p) {
  if (ws > G.ws_bytes) {
    if (G.ws) CK(cudaFree(G.ws));
    G.ws = NULL;
    CK(cudaMalloc(&G.ws, ws));
    G.ws_bytes = ws;
  }
  p->exec.workspace = ws ? G.ws : NULL;
  p->exec.workspace_size = ws ? G.ws_bytes : 0;
}

/* kg's arguments for set s with output d: the GEMM (one expert) */
static void gemm_args(const problem *p, int s, uint16_t *d, kg_gemm_fp4_args *g) {
  const weights *w = p->w;
  memset(g, 0, sizeof *g);
  g->m = p->m; g->n = w->n; g->k = w->k; g->dtype = KG_BF16; g->format = w->format;
  g->sf_layout = KG_SF_SWIZZLED_128X4;
  g->a = p->a[s]; g->lda = w->k;
  g->b = w->q[s]; g->ldb = w->k / 2;
  g->sf_b = w->sf[s][0]; g->sf_b_bytes = w->sf_bytes;
  g->global_scale_b = w->format == KG_FP4_NVFP4 ? w->gs[s] : NULL;
  g->d = d; g->ldd = w->n;
  g->alpha = 1.0f;
}

/* ... and the DualGemm: batched over the experts when there are several (A, D2 [experts, m, ...]) */
static void dual_args(const problem *p, int s, uint16_t *d, kg_dualgemm_fp4_args *g) {
  const weights *w = p->w;
  const int64_t ew = (int64_t)w->nw * w->n * (w->k / 2);   /* bytes from one expert's W0 to the next */
  memset(g, 0, sizeof *g);
  g->mode = w->experts > 1 ? KG_MODE_BATCHED : KG_MODE_GEMM; g->batch_count = w->experts;
  g->m = p->m; g->n = w->n; g->k = w->k; g->dtype = KG_BF16; g->format = w->format;
  g->sf_layout = KG_SF_SWIZZLED_128X4; g->op = KG_DUAL_SWIGLU;
  g->a = p->a[s]; g->lda = w->k; g->batch_stride_a = p->m * w->k;
  g->b0 = w->q[s]; g->ldb0 = w->k / 2; g->batch_stride_b0 = ew;
  g->b1 = w->q[s] + (size_t)w->n * (size_t)(w->k / 2); g->ldb1 = w->k / 2; g->batch_stride_b1 = ew;
  g->sf_b0 = w->sf[s][0]; g->sf_b0_bytes = w->sf_bytes;
  g->sf_b1 = w->sf[s][1]; g->sf_b1_bytes = w->sf_bytes;
  g->global_scale_b0 = w->format == KG_FP4_NVFP4 ? w->gs[s] : NULL;
  g->global_scale_b1 = w->format == KG_FP4_NVFP4 ? w->gs[s] + w->experts : NULL;
  g->d2 = d; g->ldd2 = w->n; g->batch_stride_d2 = p->m * w->n;
  g->alpha0 = 1.0f; g->alpha1 = 1.0f;
}

/* One kg call on set s into the outputs of op o (OP_KG or OP_KG_PDL). */
static int kg_call(problem *p, int s, int o, const kg_exec *exec) {
  kg_status st;
  if (!p->dual) {
    kg_gemm_fp4_args g;
    gemm_args(p, s, p->d[o][s], &g);
    st = kg_gemm_fp4(&g, exec);
  } else {
    kg_dualgemm_fp4_args g;
    dual_args(p, s, p->d[o][s], &g);
    st = kg_dualgemm_fp4(&g, exec);
  }
  if (st != KG_SUCCESS) { p->kg_err = st; return 1; }
  return 0;
}
static int launch_kg(void *ctx, int s) { problem *p = (problem *)ctx; return kg_call(p, s, OP_KG, &p->exec); }
static int launch_kg_pdl(void *ctx, int s) { problem *p = (problem *)ctx; return kg_call(p, s, OP_KG_PDL, &p->exec_pdl); }

/* Row-major D[M, N'] = A[M, K] . W^T with W row-major [N', K]: column-major D^T = W . A^T.
** Experts (batches) > 1: one strided-batched call, expert e's W at w + e ws, A at a + e m k, D at
** d + e m ldd (elements). */
static void gemm_cb(const uint16_t *w, int64_t n, const uint16_t *a, int64_t m, int64_t k, uint16_t *d, int64_t ldd,
                    int experts, int64_t ws) {
  const float alpha = 1.0f, beta = 0.0f;
  if (experts == 1)
    CB(cublasGemmEx(G.cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, w, CUDA_R_16BF, (int)k, a,
                    CUDA_R_16BF, (int)k, &beta, d, CUDA_R_16BF, (int)ldd, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  else
    CB(cublasGemmStridedBatchedEx(G.cublas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, w, CUDA_R_16BF,
                                  (int)k, (long long)ws, a, CUDA_R_16BF, (int)k, (long long)(m * k), &beta, d, CUDA_R_16BF,
                                  (int)ldd, (long long)(m * ldd), experts, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static int launch_p1(void *ctx, int s) {
  problem *p = (problem *)ctx;
  const weights *w = p->w;
  const int64_t ws = (int64_t)w->nw * w->n * w->k, rows = w->experts * p->m;
  if (!p->dual) { gemm_cb(w->deq[s], w->n, p->a[s], p->m, w->k, p->d[OP_P1][s], w->n, 1, 0); return 0; }
  uint16_t *t = p->tmp[s];   /* two GEMMs into the two halves of [rows, 2n], then silu * mul */
  gemm_cb(w->deq[s], w->n, p->a[s], p->m, w->k, t, 2 * w->n, w->experts, ws);
  gemm_cb(w->deq[s] + (size_t)w->n * (size_t)w->k, w->n, p->a[s], p->m, w->k, t + w->n, 2 * w->n, w->experts, ws);
  int e = kgb_silu_mul_bf16(t, 2 * w->n, t + w->n, 2 * w->n, p->d[OP_P1][s], w->n, rows, w->n, (void *)G.st);
  if (e) { p->peer_err = e; return 1; }
  return 0;
}

static int launch_p2(void *ctx, int s) {
  problem *p = (problem *)ctx;
  const weights *w = p->w;
  uint16_t *t = p->tmp[s];   /* one GEMM on [W0 || W1] */
  gemm_cb(w->deq[s], 2 * w->n, p->a[s], p->m, w->k, t, 2 * w->n, w->experts, 2 * w->n * w->k);
  int e = kgb_silu_mul_bf16(t, 2 * w->n, t + w->n, 2 * w->n, p->d[OP_P2][s], w->n, w->experts * p->m, w->n,
                            (void *)G.st);
  if (e) { p->peer_err = e; return 1; }
  return 0;
}

static double round_bf16(double x) { return bench_bf16_to_f32(bench_f32_to_bf16((float)x)); }

/* Reference of output (i, j) on the dequantized weights, and its error scale; row i of all experts'
** rows (expert i / m). */
static void ref_at(const problem *p, const uint16_t *hA, int64_t i, int64_t j, double *ref, double *scale) {
  const weights *w = p->w;
  const int64_t e = i / p->m;
  double x[2] = { 0, 0 }, s2[2] = { 0, 0 };
  for (int q = 0; q < (p->dual ? 2 : 1); q++) {
    const uint16_t *wr = w->h_deq + (size_t)((e * w->nw + q) * w->n + j) * (size_t)w->k;
    for (int64_t kk = 0; kk < w->k; kk++) {
      double t = (double)bench_bf16_to_f32(hA[i * w->k + kk]) * (double)bench_bf16_to_f32(wr[kk]);
      x[q] += t; s2[q] += t * t;
    }
  }
  if (!p->dual) { *ref = x[0]; *scale = fmax(fabs(x[0]), sqrt(s2[0])); }
  else {
    double d0 = round_bf16(x[0]), d1 = round_bf16(x[1]);   /* the op acts on output-typed D0, D1 */
    double g = d0 / (1.0 + exp(-d0));
    *ref = g * d1;
    *scale = fmax(fabs(*ref), (fabs(g) + 1.0) * sqrt(s2[1]) + fabs(d1) * sqrt(s2[0]));
  }
  if (*scale == 0) *scale = 1;
}

/* Checks one kg output hD (nD bf16 values) of problem p: every value finite, norm-wise against
** the peer's hP, and against the double-precision reference at the sampled points (si[t], sj[t]).
** 1 when within the tolerances; else 0 and a note (prefixed by what). */
static int check_output(const problem *p, const uint16_t *hA, const uint16_t *hD, const uint16_t *hP, size_t nD,
                        const int64_t *si, const int64_t *sj, const char *what, char *note, size_t note_size) {
  double max_ref = 0, num = 0, den = 0;
  long long bad = 0;
  for (size_t i = 0; i < nD; i++) {
    double x = bench_bf16_to_f32(hD[i]), y = bench_bf16_to_f32(hP[i]);
    if (!isfinite(x)) bad++;
    num += (x - y) * (x - y); den += y * y;
  }
  for (int t = 0; t < N_SAMPLES; t++) {
    double ref, scale;
    ref_at(p, hA, si[t], sj[t], &ref, &scale);
    double e = fabs(bench_bf16_to_f32(hD[si[t] * p->w->n + sj[t]]) - ref) / scale;
    if (!(e <= max_ref)) max_ref = isfinite(e) ? e : INFINITY;
  }
  double rel = den > 0 ? sqrt(num / den) : sqrt(num);
  if (bad || !(max_ref <= TOL_REF) || !(rel <= TOL_KG_PEER)) {
    snprintf(note, note_size, "%snon-finite %lld, max err vs ref %.3g (tol %.0e), vs peer %.3g (tol %.0e)", what, bad,
             max_ref, TOL_REF, rel, TOL_KG_PEER);
    return 0;
  }
  return 1;
}

/* Runs one M; returns 0 when every check passed. */
static int run_m(const weights *w, int dual, int64_t m, const char *label, uint64_t *rng) {
  problem P;
  memset(&P, 0, sizeof P);
  problem *p = &P;
  p->w = w; p->dual = dual; p->m = m;
  const int64_t rows = (int64_t)w->experts * m;   /* of A and D, all experts' */
  const size_t nA = (size_t)rows * (size_t)w->k, nD = (size_t)rows * (size_t)w->n;
  uint16_t *hA = (uint16_t *)malloc(nA * 2), *hD = (uint16_t *)malloc(nD * 2), *hP = (uint16_t *)malloc(nD * 2),
           *hQ = (uint16_t *)malloc(nD * 2);   /* kg's output under KG_EXEC_PDL */
  if (!hA || !hD || !hP || !hQ) { fprintf(stderr, "out of host memory\n"); exit(2); }
  for (int s = 0; s < w->nsets; s++) {
    CK(cudaMalloc((void **)&p->a[s], nA * 2));
    for (int o = 0; o < N_OPS; o++) {
      if (o == OP_P2 && !dual) continue;
      CK(cudaMalloc((void **)&p->d[o][s], nD * 2));
      CK(cudaMemsetAsync(p->d[o][s], 0xFF, nD * 2, G.st));   /* NaN poison */
    }
    if (dual) CK(cudaMalloc((void **)&p->tmp[s], 2 * nD * 2));
  }
  for (int s = w->nsets - 1; s >= 0; s--) {   /* last to first: hA ends holding set 0 */
    bench_fill_bf16(hA, nA, rng);
    CK(cudaMemcpy(p->a[s], hA, nA * 2, cudaMemcpyHostToDevice));
  }
  p->exec = cuda_exec();
  p->exec.variant = G.force_variant;

  char variant[128] = "-", note[256] = "";
  const char *name = NULL;
  int has_kg = 0;
  size_t ws = 0;
  if (!dual) {
    kg_gemm_fp4_args g;
    gemm_args(p, 0, p->d[OP_KG][0], &g);
    if (kg_gemm_fp4_workspace_size(&g, &p->exec, &ws) == KG_SUCCESS) {
      workspace_reserve(ws, p);
      has_kg = kg_gemm_fp4_select(&g, &p->exec, &name) == KG_SUCCESS;
    }
  } else {
    kg_dualgemm_fp4_args g;
    dual_args(p, 0, p->d[OP_KG][0], &g);
    if (kg_dualgemm_fp4_workspace_size(&g, &p->exec, &ws) == KG_SUCCESS) {
      workspace_reserve(ws, p);
      has_kg = kg_dualgemm_fp4_select(&g, &p->exec, &name) == KG_SUCCESS;
    }
  }
  if (has_kg) short_variant(name, variant, sizeof variant);
  else if (G.force_variant) snprintf(note, sizeof note, "kg: KG_BENCH_VARIANT=%s does not take this row", G.force_variant);

  /* KG_EXEC_PDL: timed too where the variant honours it (kg.h: the skinny kernels) */
  const int has_pdl = has_kg && G.pdl && strstr(name, "_skinny_") != NULL;
  p->exec_pdl = p->exec;
  p->exec_pdl.flags = KG_EXEC_PDL;
  bench_timer ops[N_OPS];
  memset(ops, 0, sizeof ops);
  ops[OP_KG].fn = launch_kg; ops[OP_KG].ctx = p; ops[OP_KG].active = has_kg;
  ops[OP_KG_PDL].fn = launch_kg_pdl; ops[OP_KG_PDL].ctx = p; ops[OP_KG_PDL].active = has_pdl;
  ops[OP_P1].fn = launch_p1; ops[OP_P1].ctx = p; ops[OP_P1].active = 1;
  ops[OP_P2].fn = launch_p2; ops[OP_P2].ctx = p; ops[OP_P2].active = dual;
  for (int o = 0; o < N_OPS; o++)
    if (ops[o].active) bench_time(&ops[o], w->nsets, G.reps, G.st, WARM_MS, SAMPLE_MS);
  if (ops[OP_P1].failed || ops[OP_P2].failed)
    bench_fatal("kgb_silu_mul_bf16", cudaGetErrorString((cudaError_t)p->peer_err), __FILE__, __LINE__);
  int ok = 1;
  if (has_kg && (ops[OP_KG].failed || ops[OP_KG_PDL].failed)) {
    ok = 0; has_kg = 0;
    snprintf(note, sizeof note, "kg%s: %s %s", ops[OP_KG].failed ? "" : " (KG_EXEC_PDL)", kg_status_string(p->kg_err),
             kg_last_backend_error());
  }

  /* checks on set 0, which the timed launches wrote last */
  const int best = dual && ops[OP_P2].med < ops[OP_P1].med ? OP_P2 : OP_P1;
  if (has_kg) {
    CK(cudaMemcpy(hD, p->d[OP_KG][0], nD * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hP, p->d[best][0], nD * 2, cudaMemcpyDeviceToHost));
    int64_t si[N_SAMPLES], sj[N_SAMPLES];
    for (int t = 0; t < N_SAMPLES; t++) {
      si[t] = t == 0 ? 0 : t == 1 ? rows - 1 : (int64_t)(bench_rng_next(rng) % (uint64_t)rows);
      sj[t] = t == 0 ? 0 : t == 1 ? w->n - 1 : (int64_t)(bench_rng_next(rng) % (uint64_t)w->n);
    }
    ok = check_output(p, hA, hD, hP, nD, si, sj, "", note, sizeof note);
    if (ok && has_pdl) {
      /* the same call with KG_EXEC_PDL: the same bits where it takes the same kernel and K split;
      ** under the flag the launcher may take another (the skinny kernels' narrow-block and XS
      ** rules), whose K split can round differently: then it passes the same checks */
      CK(cudaMemcpy(hQ, p->d[OP_KG_PDL][0], nD * 2, cudaMemcpyDeviceToHost));
      if (memcmp(hQ, hD, nD * 2) != 0) {
        ok = check_output(p, hA, hQ, hP, nD, si, sj, "kg with KG_EXEC_PDL: ", note, sizeof note);
        if (ok) snprintf(note, sizeof note, "kg with KG_EXEC_PDL: other bits, within the tolerances");
      }
    }
  }

  char line[360], kus[16] = "-", ratio[16] = "-", tb[16] = "-", pc[16] = "-", pus[16] = "-", pratio[16] = "-", mcol[24];
  char rpus[16] = "-", rpratio[16] = "-";
  if (w->experts > 1) snprintf(mcol, sizeof mcol, "%dx%lld", w->experts, (long long)m);
  else snprintf(mcol, sizeof mcol, "%lld", (long long)m);
  const double peer = ops[best].med;
  if (has_kg) {
    const double tbs = w->fp4_bytes / (ops[OP_KG].med * 1e-3) / 1e12;
    snprintf(kus, sizeof kus, "%.2f", ops[OP_KG].med * 1e3);
    snprintf(ratio, sizeof ratio, "%.3f", peer / ops[OP_KG].med);
    snprintf(tb, sizeof tb, "%.3f", tbs);
    snprintf(pc, sizeof pc, "%.1f", 100.0 * tbs / G.copy_tbs);
    if (has_pdl) {
      snprintf(pus, sizeof pus, "%.2f", ops[OP_KG_PDL].med * 1e3);
      snprintf(pratio, sizeof pratio, "%.3f", peer / ops[OP_KG_PDL].med);
    }
  }
  if (G.pdl && w->read_pdl_ms > 0) {
    snprintf(rpus, sizeof rpus, "%.2f", w->read_pdl_ms * 1e3);
    snprintf(rpratio, sizeof rpratio, "%.3f", peer / w->read_pdl_ms);
  }
  snprintf(line, sizeof line, "%-8s %-5s %6s %6lld %6lld %-54.54s %9s %9.2f %7s %7s %6s %7s %8s %7.2f %9.3f %7s %8s %-5s %5.1f %5.1f",
           label, w->format == KG_FP4_NVFP4 ? "nvfp4" : "mxfp4", mcol, (long long)w->n, (long long)w->k, variant, kus,
           peer * 1e3, ratio, tb, pc, pus, pratio, w->read_ms * 1e3, peer / w->read_ms, rpus, rpratio, ok ? "ok" : "FAIL",
           has_kg ? ops[OP_KG].host_us : 0.0, ops[best].host_us);
  printf("%s%s%s\n", line, *note ? "  -- " : "", note);
  fflush(stdout);
  table_add(line);
  G.fails += !ok;

  for (int s = 0; s < w->nsets; s++) {
    CK(cudaFree(p->a[s]));
    for (int o = 0; o < N_OPS; o++)
      if (p->d[o][s]) CK(cudaFree(p->d[o][s]));
    if (dual) CK(cudaFree(p->tmp[s]));
  }
  free(hA); free(hD); free(hP); free(hQ);
  return !ok;
}

/* ---- quantizer throughput ------------------------------------------------------------------------ */
typedef struct qproblem { kg_fp4_args args; kg_exec exec; } qproblem;

static int launch_quant(void *ctx, int s) {
  (void)s;
  qproblem *q = (qproblem *)ctx;
  return kg_fp4_quantize(&q->args, &q->exec) != KG_SUCCESS;
}

static void run_quant(kg_fp4_format f, uint64_t *rng) {
  const int64_t rows = 16384, k = 7168;
  const size_t elems = (size_t)rows * (size_t)k;
  qproblem Q;
  memset(&Q, 0, sizeof Q);
  uint16_t *h = (uint16_t *)malloc(elems * 2), *x = NULL;
  uint8_t *qq = NULL, *sf = NULL;
  float *gs = NULL;
  if (!h) { fprintf(stderr, "out of host memory\n"); exit(2); }
  bench_fill_bf16(h, elems, rng);
  CK(cudaMalloc((void **)&x, elems * 2));
  CK(cudaMemcpy(x, h, elems * 2, cudaMemcpyHostToDevice));
  CK(cudaMalloc((void **)&qq, elems / 2));
  size_t sfb = 0;
  check_kg(kg_sf_size(KG_SF_SWIZZLED_128X4, rows, kg_fp4_kv(f, k), 1, &sfb), "kg_sf_size");
  CK(cudaMalloc((void **)&sf, sfb));
  CK(cudaMalloc((void **)&gs, sizeof(float)));
  float one = 2.5f;
  CK(cudaMemcpy(gs, &one, sizeof one, cudaMemcpyHostToDevice));
  Q.exec = cuda_exec();
  kg_fp4_args *a = &Q.args;
  a->format = f; a->sf_layout = KG_SF_SWIZZLED_128X4; a->mx_round = KG_MX_ROUND_UP; a->dtype = KG_BF16;
  a->batch = 1; a->rows = rows; a->k = k; a->x = x; a->ldx = k; a->q = qq; a->ldq = k / 2;
  a->sf = sf; a->sf_bytes = sfb; a->global_scale = f == KG_FP4_NVFP4 ? gs : NULL;
  const char *name = "-";
  kg_fp4_select(KG_OP_FP4_QUANTIZE, a, &Q.exec, &name);
  bench_timer t;
  memset(&t, 0, sizeof t);
  t.fn = launch_quant; t.ctx = &Q; t.active = 1;
  bench_time(&t, 1, G.reps, G.st, WARM_MS, SAMPLE_MS);   /* input 235 MB: L2 holds none of it */
  char line[360];
  const char *short_name = strstr(name, "_cuda_") ? strstr(name, "_cuda_") + 6 : name;
  const double in_tbs = (double)elems * 2 / (t.med * 1e-3) / 1e12;
  const double all_tbs = ((double)elems * 2 + (double)elems / 2 + (double)sfb) / (t.med * 1e-3) / 1e12;
  snprintf(line, sizeof line, "quantize %-5s %6lld %6s %6lld %-54.54s %9.2f %9s %7s %7.3f %6.1f %7s %8s %7s %9s %7s %8s %s (read+write %.3f TB/s)",
           f == KG_FP4_NVFP4 ? "nvfp4" : "mxfp4", (long long)rows, "-", (long long)k, short_name,
           t.med * 1e3, "-", "-", in_tbs, 100.0 * in_tbs / G.copy_tbs, "-", "-", "-", "-", "-", "-", t.failed ? "FAIL" : "ok",
           all_tbs);
  printf("%s\n", line);
  table_add(line);
  G.fails += t.failed;
  CK(cudaFree(x)); CK(cudaFree(qq)); CK(cudaFree(sf)); CK(cudaFree(gs));
  free(h);
}

/* ---- main ------------------------------------------------------------------------------------------ */
static void print_header(void) {
  printf("GPU          %s (sm_%d%d, %d SMs, L2 %.0f MB)\n", G.run.gpu, G.run.cc_major, G.run.cc_minor, G.run.sms, (double)G.run.l2_bytes / 1e6);
  printf("CUDA         runtime %s, driver supports %s, cuBLAS %s\n", G.run.rt_ver, G.run.drv_ver, G.run.cublas_ver);
  printf("commit       %s\n", G.run.commit);
  printf("date         %s\n", G.run.date);
  printf("ceiling      copy %.3f TB/s (D2D 1 GiB, read+write, %.3f ms)\n", G.copy_tbs, G.copy_ms);
  bench_print_timing();
}

static const char *COLS = "op       fmt        M      N      K kg variant                                                 kg us   peer us peer/kg kg TB/s  %copy  pdl us peer/pdl read us peer/read  rd pdl peer/rdp check h-kg h-peer";

static void print_table(void) {
  printf("\n==== kg FP4 weights (128x4 scales) vs cuBLAS bf16 on the dequantized weights ====\n");
  print_header();
  printf("%s\n", COLS);
  for (int i = 0; i < G.nrows; i++) printf("%s\n", G.table[i]);
  printf("peer: gemm = cublasGemmEx; dual = best of 2 GEMMs + silu*mul and 1 GEMM on [W0||W1] + silu*mul; moe8 = the same "
         "with cublasGemmStridedBatchedEx over 8 experts (M: experts x rows each). peer/kg > 1: "
         "kg faster. kg TB/s on the FP4 weight bytes (packed values + scales); quantize: TB/s of bf16 input read. pdl: the same "
         "kg variant with exec.flags = KG_EXEC_PDL (back-to-back launches: each may start before the one ahead ends; "
         "skinny variants only; the peer launches as usual). read: the read floor, one kernel that only streams the same FP4 "
         "weight bytes, timed as kg is (launches and ramp included); peer/read: the most any kernel reading those bytes could "
         "show against the peer in this run. rd pdl, peer/rdp: the same read kernel as a programmatic dependent launch, "
         "the floor of the pdl column. h-kg, h-peer: host us per call while enqueuing (above the kg / peer us, those "
         "stream figures time the host).\n");
  printf("result: %d of %d rows passed\n", G.nrows - G.fails, G.nrows);
  fflush(stdout);
}

static void fatal_hook(void) { if (G.nrows) print_table(); }

int main(int argc, char **argv) {
  (void)argc;
  G.quick = bench_env_long("KG_BENCH_QUICK", 0) != 0;
  G.reps = (int)bench_env_long("KG_BENCH_REPS", 30);
  if (G.reps < 20) G.reps = 20;
  G.seed = (uint64_t)bench_env_long("KG_BENCH_SEED", 1);
  G.force_variant = bench_env_str("KG_BENCH_VARIANT");
  G.pdl = bench_env_long("KG_BENCH_PDL", 1) != 0;
  G.ms = bench_env_str("KG_BENCH_MS");
  G.ops = bench_env_str("KG_BENCH_OPS");
  if (G.ms && !ms_valid(G.ms)) {
    fprintf(stderr, "bench_fp4: KG_BENCH_MS=%s: want M values >= 1 separated by commas\n", G.ms);
    return 2;
  }
  bench_fatal_hook = fatal_hook;
  if (!kg_backend_available(KG_BACKEND_CUDA)) {
    fprintf(stderr, "bench_fp4: the kg CUDA backend is not available (not compiled in, or no GPU)\n");
    return 2;
  }
  CK(cudaStreamCreateWithFlags(&G.st, cudaStreamNonBlocking));
  CK(cudaMalloc(&G.sink, 4));
  CB(cublasCreate(&G.cublas));
  CB(cublasSetStream(G.cublas, G.st));
  bench_run_init(&G.run, G.cublas);
  printf("bench_fp4: %s%s; reps %d (median); seed %llu%s%s%s%s\n", argv[0], G.quick ? " (KG_BENCH_QUICK=1)" : "",
         G.reps, (unsigned long long)G.seed, G.ms ? "; M " : "", G.ms ? G.ms : "",
         G.force_variant ? "; variant " : "", G.force_variant ? G.force_variant : "");
  G.copy_tbs = bench_copy_tbs((size_t)1 << 30, G.reps, G.st, &G.copy_ms);
  print_header();
  printf("%s\n", COLS);

  uint64_t rng = G.seed * 0x9E3779B97F4A7C15ull + 11;
  static const int64_t GEMM_MS[] = { 1, 16, 128, 1024, 4096 };
  static const int64_t NK[][2] = { { 4096, 4096 }, { 14336, 4096 }, { 4096, 14336 } };
  static const int64_t DUAL_MS[] = { 1, 16, 128, 1024, 4096, 8192 }, MOE_MS[] = { 16, 256, 1024 };
  /* KG_BENCH_MS: its values in list order (up to 16), else the tables above */
  int64_t MS_LIST[16];
  int n_ms = 0;
  for (const char *q = G.ms; q && *q && n_ms < 16;) {
    char *end;
    MS_LIST[n_ms++] = (int64_t)strtoll(q, &end, 10);
    q = *end == ',' ? end + 1 : end;
  }
  const int N_GEMM_MS = G.ms ? n_ms : 5, N_DUAL_MS = G.ms ? n_ms : 6;
  for (int f = 0; f < 2; f++) {
    const kg_fp4_format fmt = f == 0 ? KG_FP4_NVFP4 : KG_FP4_MXFP4;
    for (int s = 0; s < 3 && op_selected("gemm"); s++) {
      weights w;
      weights_make(&w, fmt, NK[s][0], NK[s][1], 1, 1, &rng);
      for (int i = 0; i < N_GEMM_MS; i++) {
        const int64_t m = G.ms ? MS_LIST[i] : GEMM_MS[i];
        if (m < 1 || !m_selected(m, !((G.quick || fmt == KG_FP4_MXFP4) && m != 16 &&
                                       !(G.quick && m == 4096 && fmt == KG_FP4_NVFP4))))
          continue;
        run_m(&w, 0, m, "gemm", &rng);
      }
      weights_free(&w);
    }
    weights w;
    if (op_selected("dual")) {
      weights_make(&w, fmt, 14336, 4096, 2, 1, &rng);
      for (int i = 0; i < N_DUAL_MS; i++) {
        const int64_t m = G.ms ? MS_LIST[i] : DUAL_MS[i];
        if (m < 1 || !m_selected(m, !(G.quick && m != 16 && m != 4096) && !(fmt == KG_FP4_MXFP4 && m > 16))) continue;
        run_m(&w, 1, m, "dual", &rng);
      }
      weights_free(&w);
    }
    /* the MoE gate-up projection: 8 experts of m rows each (NVFP4 m 16, 256, 1024; MXFP4 16, 1024;
    ** KG_BENCH_MS: its values) */
    const int n_moe = G.quick || !op_selected("moe8") ? 0 : G.ms ? n_ms : 3;
    int64_t moe_ms[16];
    int n_run = 0;
    for (int i = 0; i < n_moe; i++) {
      const int64_t m = G.ms ? MS_LIST[i] : MOE_MS[i];
      if (m >= 1 && (G.ms || fmt == KG_FP4_NVFP4 || m != 256)) moe_ms[n_run++] = m;
    }
    if (n_run == 0) continue;
    weights_make(&w, fmt, 14336, 4096, 2, MAX_EXPERTS, &rng);
    for (int i = 0; i < n_run; i++) run_m(&w, 1, moe_ms[i], "moe8", &rng);
    weights_free(&w);
  }
  if (op_selected("quantize")) run_quant(KG_FP4_NVFP4, &rng);
  if (!G.quick && op_selected("quantize")) run_quant(KG_FP4_MXFP4, &rng);

  print_table();
  bench_fatal_hook = NULL;
  if (G.ws) CK(cudaFree(G.ws));
  CK(cudaFree(G.sink));
  CB(cublasDestroy(G.cublas));
  CK(cudaStreamDestroy(G.st));
  return G.fails ? 1 : 0;
}
