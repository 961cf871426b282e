/*
** bench_decode.c -- kg_decode_batch (CUDA backend) bf16 batch decode over a paged KV cache, one GPU.
**
** Problem (/shared/bench.md, "decode attention bf16"): GQA 32 q heads / 8 kv heads, head_dim 128,
** (batch, kv_len) in {(1, 32768), (16, 4096), (64, 4096), (128, 2048)}, page_size 16, every request
** kv_len tokens long, pages of each request scattered over the cache (a random permutation, as a
** server's allocator leaves them), NHD pages ([page, slot, head, dim]; KG_BENCH_LAYOUT=hnd for HND),
** sm_scale 1/sqrt(128), no RoPE, soft cap or window; o and lse written. The split-KV plan is kg's
** own (kg_decode_plan with max_kv_len = kv_len and the device's SM count); the workspace is
** allocated from kg_decode_workspace_size.
**
** Figures, per shape: kg time (median), TB/s counting the K and V bytes only (batch * kv_len *
** 8 heads * 128 * 2 bytes * 2; q, o, page table and workspace are < 1% here), and that as a
** fraction of the device-to-device copy ceiling measured in the same run (bench_common.h: a 1 GiB
** cudaMemcpyAsync, bytes read + written). Targets (H200): >= 85% of copy at (64, 4096) and
** (128, 2048), >= 70% at (1, 32768). Peer: PyTorch scaled_dot_product_attention is the peer where
** PyTorch is present; this C program does not run it (column "peer" says so): bench/peer_sdpa.py
** does, in the same `make bench` run, on the same shapes.
**
** Method:
**   - bench_time (bench_common.h): CUDA events on one non-blocking stream; warm-up of about
**     200 ms; median of >= 20 samples; a
**     sample is `inner` back-to-back launches (>= ~1 ms) alternating between 2 input sets (each
**     set its own K/V cache, page table, q, o, lse and workspace; every shape's set is >= 134 MB,
**     so two sets exceed 2x the 60 MB L2 and K/V come from memory);
**   - random bf16 inputs uniform in (-1, 1), never zero (q scaled by 2 for a peaked softmax);
**   - check of the timed run: o and lse of set 0 are poisoned (NaN) before the timing, and after it
**     (the last launch on set 0 wrote them) every element must be finite and 16 sampled (request,
**     head) pairs, corners included, must match the double reference of tests/c/attn_ref.h within
**     its per-element bound (ar_attend).
** Exit status: 0 all checks passed, 1 a check failed, 2 a CUDA call failed.
**
** Environment:
**   KG_BENCH_QUICK=1        only (1, 32768) and (64, 4096)
**   KG_BENCH_SHAPES=1x32768,64x4096   only the listed shapes (of those above)
**   KG_BENCH_REPS=N         timed samples per shape (default 30, at least 20)
**   KG_BENCH_LAYOUT=hnd     HND pages instead of NHD
**   KG_BENCH_VARIANT=NAME   force a kg variant (exec.variant)
**   KG_BENCH_CHUNK=N        force kv_chunk_size (0: the planner)
**   KG_BENCH_SEED=N         RNG seed (default 1)
**   KG_COMMIT=SHA           commit to print when git is not available
*/
#include "bench_common.h"

#include "kg.h"
#include "../tests/c/attn_ref.h"

#define HQ 32
#define HK 8
#define HD 128
#define PAGE 16
#define NSETS 2
#define N_SAMPLES 16
#define SAMPLE_MS 1.0
#define WARM_MS 200.0

static const int64_t SHAPES[][2] = { { 1, 32768 }, { 16, 4096 }, { 64, 4096 }, { 128, 2048 } };
static const int QUICK[] = { 1, 0, 1, 0 };
static const double TARGET[] = { 0.70, 0.0, 0.85, 0.85 };
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

static int shape_selected(int i, int quick) {
  const char *list = bench_env_str("KG_BENCH_SHAPES");
  if (!list) return !quick || QUICK[i];
  char want[32];
  snprintf(want, sizeof want, "%lldx%lld", (long long)SHAPES[i][0], (long long)SHAPES[i][1]);
  for (const char *s = list; *s;) {
    size_t n = strcspn(s, ",");
    if (n == strlen(want) && strncmp(s, want, n) == 0) return 1;
    s += n;
    if (*s == ',') s++;
  }
  return 0;
}

typedef struct row {
  int64_t batch, kv_len;
  char variant[128];
  int64_t chunks, chunk_size, blocks;
  double ms, mn, mx, tbs, frac;
  int inner, ok;
  long long nonfinite;
  double worst;            /* max over samples of |err| / bound */
  char note[400];
} row;

static struct {
  cudaStream_t st;
  int reps, quick;
  kg_kv_layout layout;
  const char *force_variant;
  int64_t force_chunk;
  uint64_t seed;
  bench_run run;                /* device, versions, commit, date */
  double copy_tbs, copy_ms;
  row rows[N_SHAPES];
  int nrows;
} G;

typedef struct dset {
  uint16_t *k, *v, *q, *o;
  float *lse;
  int32_t *indices, *indptr, *last;
  void *ws;
  kg_decode_args args;
} dset;

/* One timed operation for bench_time: kg_decode_batch on input set `set`. */
typedef struct timed {
  dset *sets;
  kg_exec *ex;
  kg_status err;
  size_t o_bytes, lse_bytes;   /* set 0's outputs, poisoned before the samples */
} timed;

static int timed_launch(void *ctx, int set) {
  timed *t = (timed *)ctx;
  t->ex->workspace = t->sets[set].ws;
  kg_status st = kg_decode_batch(&t->sets[set].args, t->ex);
  if (st != KG_SUCCESS) { t->err = st; return 1; }
  return 0;
}

static void timed_poison(void *ctx) {
  timed *t = (timed *)ctx;
  CK(cudaMemsetAsync(t->sets[0].o, 0xFF, t->o_bytes, G.st));
  CK(cudaMemsetAsync(t->sets[0].lse, 0xFF, t->lse_bytes, G.st));
}

static void run_shape(int idx, row *rw) {
  const int64_t B = SHAPES[idx][0], L = SHAPES[idx][1];
  memset(rw, 0, sizeof *rw);
  rw->batch = B;
  rw->kv_len = L;
  rw->ok = 1;
  snprintf(rw->variant, sizeof rw->variant, "-");
  const int64_t pages_per = (L + PAGE - 1) / PAGE, num_pages = B * pages_per;
  const size_t cache_elems = (size_t)num_pages * PAGE * HK * HD;
  const size_t q_elems = (size_t)B * HQ * HD;
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  if ((double)(2 * cache_elems * 2) * NSETS > 0.85 * (double)free_b) {
    rw->ok = 0;
    snprintf(rw->note, sizeof rw->note, "not enough device memory (%zu MB free)", free_b >> 20);
    return;
  }
  uint64_t rng = G.seed * 0x100000001B3ull + (uint64_t)idx * 7919u + 17;
  uint16_t *hk = (uint16_t *)malloc(cache_elems * 2), *hv = (uint16_t *)malloc(cache_elems * 2);
  uint16_t *hq = (uint16_t *)malloc(q_elems * 2);
  int32_t *hind = (int32_t *)malloc((size_t)num_pages * 4), *hptr = (int32_t *)malloc((size_t)(B + 1) * 4);
  int32_t *hlast = (int32_t *)malloc((size_t)B * 4);
  if (!hk || !hv || !hq || !hind || !hptr || !hlast) { fprintf(stderr, "out of host memory\n"); exit(2); }
  dset S[NSETS];
  memset(S, 0, sizeof S);
  kg_exec ex;
  memset(&ex, 0, sizeof ex);
  ex.backend = KG_BACKEND_CUDA;
  ex.stream = (void *)G.st;
  ex.variant = G.force_variant;
  /* sets filled last to first so that the host buffers end holding set 0 */
  for (int s = NSETS - 1; s >= 0; s--) {
    dset *d = &S[s];
    bench_fill_bf16(hk, cache_elems, &rng);
    bench_fill_bf16(hv, cache_elems, &rng);
    bench_fill_bf16(hq, q_elems, &rng);
    for (size_t i = 0; i < q_elems; i++) hq[i] = bench_f32_to_bf16(2.0f * bench_bf16_to_f32(hq[i]));
    for (int64_t i = 0; i < num_pages; i++) hind[i] = (int32_t)i;
    for (int64_t i = num_pages - 1; i > 0; i--) {
      const int64_t j = (int64_t)(bench_rng_next(&rng) % (uint64_t)(i + 1));
      const int32_t x = hind[i]; hind[i] = hind[j]; hind[j] = x;
    }
    for (int64_t b = 0; b <= B; b++) hptr[b] = (int32_t)(b * pages_per);
    for (int64_t b = 0; b < B; b++) hlast[b] = (int32_t)(L - (pages_per - 1) * PAGE);
    CK(cudaMalloc((void **)&d->k, cache_elems * 2));
    CK(cudaMalloc((void **)&d->v, cache_elems * 2));
    CK(cudaMalloc((void **)&d->q, q_elems * 2));
    CK(cudaMalloc((void **)&d->o, q_elems * 2));
    CK(cudaMalloc((void **)&d->lse, (size_t)B * HQ * 4));
    CK(cudaMalloc((void **)&d->indices, (size_t)num_pages * 4));
    CK(cudaMalloc((void **)&d->indptr, (size_t)(B + 1) * 4));
    CK(cudaMalloc((void **)&d->last, (size_t)B * 4));
    CK(cudaMemcpy(d->k, hk, cache_elems * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->v, hv, cache_elems * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->q, hq, q_elems * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->indices, hind, (size_t)num_pages * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->indptr, hptr, (size_t)(B + 1) * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d->last, hlast, (size_t)B * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(d->o, 0xFF, q_elems * 2));           /* NaN poison */
    CK(cudaMemset(d->lse, 0xFF, (size_t)B * HQ * 4));
    kg_decode_args *a = &d->args;
    memset(a, 0, sizeof *a);
    a->num_qo_heads = HQ;
    a->q = d->q; a->q_stride_n = HQ * HD; a->q_stride_h = HD;
    a->o = d->o; a->o_stride_n = HQ * HD; a->o_stride_h = HD;
    a->lse = d->lse;
    a->kv.layout = G.layout; a->kv.dtype = KG_BF16;
    a->kv.num_pages = num_pages; a->kv.page_size = PAGE; a->kv.num_kv_heads = HK; a->kv.head_dim = HD;
    a->kv.k_data = d->k; a->kv.v_data = d->v; a->kv.batch = B;
    a->kv.indices = d->indices; a->kv.indptr = d->indptr; a->kv.last_page_len = d->last;
    a->max_kv_len = L;
    a->params.kv_chunk_size = G.force_chunk;
    size_t ws = 0;
    ex.workspace = NULL; ex.workspace_size = 0;   /* the query checks exec: no stale size from the last set */
    kg_status st = kg_decode_workspace_size(a, &ex, &ws);
    if (st != KG_SUCCESS) {
      char why[4096];
      kg_explain(KG_OP_DECODE_BATCH, a, &ex, why, sizeof why);
      rw->ok = 0;
      snprintf(rw->note, sizeof rw->note, "kg: %s: %.300s", kg_status_string(st), why);
      goto cleanup;
    }
    if (ws) CK(cudaMalloc(&d->ws, ws));
    ex.workspace_size = ws;
  }
  ex.workspace = S[0].ws;
  {
    const char *name = NULL;
    kg_decode_plan_info plan;
    if (kg_decode_select(&S[0].args, &ex, &name) == KG_SUCCESS) snprintf(rw->variant, sizeof rw->variant, "%s", name);
    if (kg_decode_plan(&S[0].args, &ex, &plan) == KG_SUCCESS) {
      rw->chunks = plan.num_chunks; rw->chunk_size = plan.chunk_size; rw->blocks = plan.blocks;
    }
  }
  /* timing (bench_time): first touch, estimate, warm-up, samples; set 0's outputs are
  ** poisoned right before the samples, which must rewrite them */
  {
    timed tc = { S, &ex, KG_SUCCESS, q_elems * 2, (size_t)B * HQ * 4 };
    bench_timer t;
    memset(&t, 0, sizeof t);
    t.fn = timed_launch;
    t.ctx = &tc;
    t.before_samples = timed_poison;
    bench_time(&t, NSETS, G.reps, G.st, WARM_MS, SAMPLE_MS);
    rw->inner = t.inner;
    if (t.failed) {
      rw->ok = 0;
      snprintf(rw->note, sizeof rw->note, "kg_decode_batch: %s", kg_status_string(tc.err));
    } else {
      rw->ms = t.med;
      rw->mn = t.min;
      rw->mx = t.max;
      const double bytes = (double)B * (double)L * HK * HD * 2.0 * 2.0;
      rw->tbs = bytes / (rw->ms * 1e-3) / 1e12;
      rw->frac = rw->tbs / G.copy_tbs;
    }
  }
  /* check of the timed run: set 0's o and lse */
  if (rw->ok) {
    uint16_t *ho = (uint16_t *)malloc(q_elems * 2);
    float *hl = (float *)malloc((size_t)B * HQ * 4);
    double *K = (double *)malloc((size_t)L * HD * 8), *V = (double *)malloc((size_t)L * HD * 8);
    if (!ho || !hl || !K || !V) { fprintf(stderr, "out of host memory\n"); exit(2); }
    CK(cudaMemcpy(ho, S[0].o, q_elems * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hl, S[0].lse, (size_t)B * HQ * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < q_elems; i++) rw->nonfinite += !isfinite(bench_bf16_to_f32(ho[i]));
    for (int64_t i = 0; i < B * HQ; i++) rw->nonfinite += !isfinite(hl[i]);
    /* the reference reads the host copy of set 0 through its page table (attn_ref.h's cache view) */
    ar_cache c;
    memset(&c, 0, sizeof c);
    c.layout = G.layout; c.dtype = KG_BF16; c.H = HK; c.P = PAGE; c.D = HD; c.num_pages = num_pages; c.batch = B;
    c.indices = hind; c.indptr = hptr; c.last = hlast; c.k = hk; c.v = hv;
    double qd[AR_MAX_D], ro[AR_MAX_D], tol[AR_MAX_D], rl, rlt;
    for (int sN = 0; sN < N_SAMPLES; sN++) {
      const int64_t b = sN == 0 ? 0 : sN == 1 ? B - 1 : (int64_t)(bench_rng_next(&rng) % (uint64_t)B);
      const int64_t h = sN == 0 ? 0 : sN == 1 ? HQ - 1 : (int64_t)(bench_rng_next(&rng) % HQ);
      ar_cache_gather(&c, b, h / (HQ / HK), 0, L, K, V);
      for (int f = 0; f < HD; f++) qd[f] = bench_bf16_to_f32(hq[(b * HQ + h) * HD + f]);
      /* eps_w: kg.h's matrix-core decode (these shapes on CUDA) rounds the weights to bf16 before p.v */
      ar_attn_opts op = { HD, 1.0 / sqrt((double)HD), 0.0, 0, 0, NULL, 0.0, 0.0, KG_BF16, ar_unit(KG_BF16) };
      ar_attend(&op, qd, K, V, L, 0, ro, &rl, tol, &rlt);
      for (int f = 0; f < HD; f++) {
        const double got = bench_bf16_to_f32(ho[(b * HQ + h) * HD + f]), e = fabs(got - ro[f]) / tol[f];
        if (!(e <= rw->worst)) rw->worst = e;   /* NaN propagates */
      }
      const double el = fabs(hl[b * HQ + h] - rl) / rlt;
      if (!(el <= rw->worst)) rw->worst = el;
    }
    if (rw->nonfinite) {
      rw->ok = 0;
      snprintf(rw->note, sizeof rw->note, "%lld non-finite outputs (unwritten?)", rw->nonfinite);
    } else if (!(rw->worst <= 1.0)) {
      rw->ok = 0;
      snprintf(rw->note, sizeof rw->note, "error %.3g x the reference bound", rw->worst);
    }
    free(ho); free(hl); free(K); free(V);
  }
cleanup:
  for (int s = 0; s < NSETS; s++) {
    dset *d = &S[s];
    if (d->k) CK(cudaFree(d->k));
    if (d->v) CK(cudaFree(d->v));
    if (d->q) CK(cudaFree(d->q));
    if (d->o) CK(cudaFree(d->o));
    if (d->lse) CK(cudaFree(d->lse));
    if (d->indices) CK(cudaFree(d->indices));
    if (d->indptr) CK(cudaFree(d->indptr));
    if (d->last) CK(cudaFree(d->last));
    if (d->ws) CK(cudaFree(d->ws));
  }
  free(hk); free(hv); free(hq); free(hind); free(hptr); free(hlast);
}

static void print_table(void) {
  printf("\n==== decode attention bf16, GQA %d/%d, d=%d, page %d, %s pages ====\n", HQ, HK, HD, PAGE,
         G.layout == KG_KV_NHD ? "NHD" : "HND");
  printf("%-11s %-36s %-16s %10s %8s %8s %7s %-6s %s\n", "batch x len", "kg variant", "split (chunks)", "kg us", "TB/s",
         "% copy", "target", "check", "peer");
  for (int i = 0; i < G.nrows; i++) {
    const row *r = &G.rows[i];
    char shape[32], split[40], tgt[16];
    snprintf(shape, sizeof shape, "%lldx%lld", (long long)r->batch, (long long)r->kv_len);
    snprintf(split, sizeof split, "%lld x %lld", (long long)r->chunks, (long long)r->chunk_size);
    int t = -1;
    for (int j = 0; j < N_SHAPES; j++) if (SHAPES[j][0] == r->batch && SHAPES[j][1] == r->kv_len) t = j;
    snprintf(tgt, sizeof tgt, t >= 0 && TARGET[t] > 0 ? ">= %.0f%%" : "-", t >= 0 ? 100.0 * TARGET[t] : 0.0);
    printf("%-11s %-36s %-16s %10.1f %8.3f %7.1f%% %7s %-6s %s\n", shape, r->variant, split, r->ms * 1e3, r->tbs,
           100.0 * r->frac, tgt, r->ok ? "ok" : "FAIL", "PyTorch SDPA: not run (C program)");
    if (r->note[0]) printf("            note: %s\n", r->note);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  G.reps = (int)bench_env_long("KG_BENCH_REPS", 30);
  if (G.reps < 20) G.reps = 20;
  G.quick = bench_env_long("KG_BENCH_QUICK", 0) != 0;
  const char *lay = bench_env_str("KG_BENCH_LAYOUT");
  G.layout = lay && !strcmp(lay, "hnd") ? KG_KV_HND : KG_KV_NHD;
  G.force_variant = bench_env_str("KG_BENCH_VARIANT");
  G.force_chunk = bench_env_long("KG_BENCH_CHUNK", 0);
  G.seed = (uint64_t)bench_env_long("KG_BENCH_SEED", 1);
  CK(cudaStreamCreateWithFlags(&G.st, cudaStreamNonBlocking));
  bench_run_init(&G.run, NULL);
  printf("bench_decode: %s, %d SMs, sm_%d%d, %.1f GiB; CUDA runtime %s, driver %s; commit %s; %s\n", G.run.gpu, G.run.sms,
         G.run.cc_major, G.run.cc_minor, (double)G.run.mem_total / (1u << 30), G.run.rt_ver, G.run.drv_ver, G.run.commit, G.run.date);
  G.copy_tbs = bench_copy_tbs((size_t)1 << 30, G.reps, G.st, &G.copy_ms);
  printf("ceiling: device-to-device copy of 1 GiB: %.3f TB/s (read + write), median %.3f ms\n", G.copy_tbs, G.copy_ms);
  bench_print_timing();
  int failed = 0;
  for (int i = 0; i < N_SHAPES; i++) {
    if (!shape_selected(i, G.quick)) continue;
    row *r = &G.rows[G.nrows++];
    run_shape(i, r);
    printf("%lldx%lld: %s, %lld chunks of %lld, %lld blocks: %.1f us, %.3f TB/s (%.1f%% of copy)%s%s\n",
           (long long)r->batch, (long long)r->kv_len, r->variant, (long long)r->chunks, (long long)r->chunk_size,
           (long long)r->blocks, r->ms * 1e3, r->tbs, 100.0 * r->frac, r->ok ? "" : " FAIL: ", r->ok ? "" : r->note);
    failed |= !r->ok;
  }
  print_table();
  CK(cudaStreamDestroy(G.st));
  return failed ? 1 : 0;
}
