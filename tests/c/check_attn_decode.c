/*
** check_attn_decode.c -- SingleDecodeTest and BatchDecodeTest: kg_decode_single
** and kg_decode_batch on the C backend against the double reference of
** attn_ref.h (ar_attend, whose error bound applies to every dtype), and the
** split-KV planner.
**
** Matrix (../shared/reference/attention.md, scaled for CPU time): kv lengths
** 1, 3, 27, 129, 257, 1024, 4096, 32768; 32 qo heads over 1, 4, 8, 32 kv heads
** and the odd groups 5, 6, 7; head_dim 64, 128, 256; NHD and HND; RoPE off,
** default and Llama 3.1 (both pairings, partial rotary_dim); f32, f16, bf16;
** page sizes 1, 7, 16 (batch). Options mixed in: soft cap, sliding window,
** explicit sm_scale and q positions, forced split-KV chunks (the C planner
** never splits by itself), max_kv_len above and below the real lengths,
** empty requests, a padded stride_page.
** Outputs (o with gaps between heads and requests, lse, workspace) are
** poisoned with NaN first; every element must be within its bound (NaN never
** passes) and every gap must still hold the poison.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_ref.h"
#include "kg_internal.h"
#include "test_util.h"

typedef struct dcase {
  kg_dtype t;
  kg_kv_layout l;
  int D, Hq, Hk;
  int64_t P;                 /* page size (batch) */
  int batch;
  const int64_t *lens;
  int rope;                  /* 0 none, 1 default, 2 llama31 */
  int interleave, rd;        /* rd 0: head_dim */
  int64_t window;            /* sliding window in tokens, 0: none */
  double cap;
  int64_t chunk;             /* forced kv_chunk_size, 0: planner */
  int64_t max_len_delta;     /* batch: max_kv_len = longest + delta (0 when that is < 1) */
  int qpos;                  /* 1: explicit q positions */
  double sm_scale;           /* 0: default */
  int single;
  int64_t pad;               /* stride_page padding (batch) */
  const char *variant;       /* forced variant (kg_exec.variant), NULL: dispatch */
} dcase;

static char g_fail_msg[512];
static long g_fails;

static void note_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note_fail(const char *fmt, ...) {
  if (g_fails++ == 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_fail_msg, sizeof g_fail_msg, fmt, ap);
    va_end(ap);
  }
}

static void describe(const dcase *c, char *buf, size_t cap) {
  snprintf(buf, cap, "%s %s %s D=%d Hq=%d Hk=%d P=%lld batch=%d rope=%d/%d/%d win=%lld cap=%g chunk=%lld qpos=%d%s%s",
           c->single ? "single" : "batch", ar_dtype_name(c->t), c->l == KG_KV_NHD ? "NHD" : "HND", c->D, c->Hq, c->Hk,
           (long long)c->P, c->batch, c->rope, c->interleave, c->rd, (long long)c->window, c->cap, (long long)c->chunk,
           c->qpos, c->variant ? " variant=" : "", c->variant ? c->variant : "");
}

/* Runs one case; returns the number of failing elements (first described in g_fail_msg). */
static long run_case(const dcase *c, uint64_t seed) {
  const int D = c->D, Hq = c->Hq, Hk = c->Hk, G = Hq / Hk;
  const int batch = c->single ? 1 : c->batch;
  int64_t maxlen = 0;
  for (int b = 0; b < batch; b++) if (c->lens[b] > maxlen) maxlen = c->lens[b];
  ar_cache kc;
  /* single decode: one page of kv_len slots is exactly the contiguous tensor */
  ar_cache_build(&kc, c->l, c->t, Hk, c->single ? c->lens[0] : c->P, D, batch, c->lens, c->single ? 0 : 3,
                 c->single ? 0 : c->pad, seed);
  const size_t es = kg_dtype_size(c->t);
  /* q and o with gaps between heads and requests (contiguous for single) */
  const int64_t q_sh = c->single ? D : D + 8, q_sn = c->single ? (int64_t)Hq * D : Hq * q_sh + 16;
  const int64_t o_sh = c->single ? D : D + 4, o_sn = c->single ? (int64_t)Hq * D : Hq * o_sh + 8;
  const int64_t qn = batch * q_sn, on = batch * o_sn;
  void *q = tu_alloc((size_t)qn * es), *o = tu_alloc((size_t)on * es);
  float *lse = (float *)tu_alloc((size_t)(batch * Hq + 4) * sizeof(float));
  tu_poison(q, c->t, qn);
  tu_poison(o, c->t, on);
  tu_poison(lse, KG_F32, batch * Hq + 4);
  for (int b = 0; b < batch; b++)
    for (int h = 0; h < Hq; h++)
      for (int f = 0; f < D; f++) ar_put(q, c->t, b * q_sn + h * q_sh + f, 2.5 * ar_sym(&seed));
  int32_t *qpos = (int32_t *)tu_alloc((size_t)batch * 4);
  for (int b = 0; b < batch; b++) qpos[b] = (int32_t)ar_int(&seed, 0, 6000);

  kg_decode_params pr;
  memset(&pr, 0, sizeof pr);
  pr.sm_scale = (float)c->sm_scale;
  pr.logits_soft_cap = (float)c->cap;
  pr.sliding_window = c->window;
  pr.kv_chunk_size = c->chunk;
  if (c->rope) {
    pr.rope.mode = c->rope == 1 ? KG_ROPE_DEFAULT : KG_ROPE_LLAMA31;
    pr.rope.interleave = c->interleave;
    pr.rope.rotary_dim = c->rd;
    if (c->rope == 2) { pr.rope.scale = 8.0f; pr.rope.theta = 500000.0f; }
  }
  kg_exec ex = tu_exec_c();
  ex.variant = c->variant;
  kg_status st;
  kg_decode_plan_info plan;
  kg_decode_args ba;
  memset(&ba, 0, sizeof ba);
  kg_decode_single_args sa;
  memset(&sa, 0, sizeof sa);
  if (c->single) {
    memset(&sa, 0, sizeof sa);
    sa.dtype = c->t; sa.layout = c->l;
    sa.num_qo_heads = Hq; sa.num_kv_heads = Hk; sa.head_dim = D; sa.kv_len = c->lens[0];
    sa.q = q; sa.k = kc.k; sa.v = kc.v; sa.o = o; sa.lse = lse;
    sa.q_rope_pos = c->qpos ? qpos[0] : -1;
    sa.params = pr;
    st = kg_decode_single_plan(&sa, &ex, &plan);
  } else {
    memset(&ba, 0, sizeof ba);
    ba.num_qo_heads = Hq;
    ba.q = q; ba.q_stride_n = q_sn; ba.q_stride_h = q_sh;
    ba.o = o; ba.o_stride_n = o_sn; ba.o_stride_h = o_sh;
    ba.lse = lse;
    ba.kv = ar_cache_desc(&kc, kc.k, kc.v, kc.indices, kc.indptr, kc.last);
    ba.q_rope_pos = c->qpos ? qpos : NULL;
    ba.max_kv_len = maxlen + c->max_len_delta > 0 ? maxlen + c->max_len_delta : 0;
    ba.params = pr;
    st = kg_decode_plan(&ba, &ex, &plan);
  }
  char what[400];
  describe(c, what, sizeof what);
  ck_assert_msg(st == KG_SUCCESS, "%s: plan: %s", what, kg_status_string(st));
  void *ws = NULL;
  if (plan.workspace_bytes > 0) {
    ws = tu_alloc(plan.workspace_bytes);
    tu_poison(ws, KG_F32, (int64_t)(plan.workspace_bytes / 4));
    ex.workspace = ws;
    ex.workspace_size = plan.workspace_bytes;
  }
  {   /* forced chunks: ceil(bound / chunk) with the window-limited length bound */
    int64_t bound = c->single ? c->lens[0] : ba.max_kv_len;
    if (c->window > 0 && bound > c->window) bound = c->window;
    const int64_t want = c->chunk > 0 && bound > 0 ? (bound + c->chunk - 1) / c->chunk : 1;
    ck_assert_msg(plan.num_chunks == want, "%s: %lld chunks planned, want %lld", what, (long long)plan.num_chunks,
                  (long long)want);
  }
  st = c->single ? kg_decode_single(&sa, &ex) : kg_decode_batch(&ba, &ex);
  ck_assert_msg(st == KG_SUCCESS, "%s: %s", what, kg_status_string(st));

  /* reference */
  double freq[128];
  if (c->rope) ar_rope_freqs(&pr.rope, D, freq);
  const double sm = c->sm_scale != 0.0 ? (double)(float)c->sm_scale : 1.0 / sqrt((double)D);
  double *K = (double *)tu_alloc((size_t)(maxlen ? maxlen : 1) * D * sizeof(double));
  double *V = (double *)tu_alloc((size_t)(maxlen ? maxlen : 1) * D * sizeof(double));
  double qd[AR_MAX_D], ro[AR_MAX_D], tol[AR_MAX_D], rl, rlt;
  long fails = 0;
  g_fails = 0;
  for (int b = 0; b < batch; b++) {
    const int64_t L = c->lens[b];
    const int64_t w0 = c->window > 0 && L > c->window ? L - c->window : 0;
    for (int hk = 0; hk < Hk; hk++) {
      ar_cache_gather(&kc, b, hk, w0, L, K, V);
      for (int g = 0; g < G; g++) {
        const int h = hk * G + g;
        for (int f = 0; f < D; f++) qd[f] = ar_get(q, c->t, b * q_sn + h * q_sh + f);
        /* the wave decode rounds the weights to the element type before p.v (kg.h) */
        const double eps_w = c->variant && strstr(c->variant, "_wave_") ? ar_unit(c->t) : 0.0;
        ar_attn_opts op = { D, sm, c->cap, c->rope ? (c->rd ? c->rd : D) : 0, c->interleave, freq,
                            c->qpos ? (double)qpos[b] : (double)(L - 1), ldexp(1.0, -22), c->t, eps_w };
        ar_attend(&op, qd, K, V, L - w0, w0, ro, &rl, tol, &rlt);
        for (int f = 0; f < D; f++) {
          const double got = ar_get(o, c->t, b * o_sn + h * o_sh + f), err = fabs(got - ro[f]);
          if (!(err <= tol[f])) {
            fails++;
            note_fail("%s: b=%d h=%d f=%d: o %.9g, reference %.9g, error %.3g > bound %.3g", what, b, h, f, got, ro[f],
                      err, tol[f]);
          }
        }
        const double gl = lse[b * Hq + h];
        const int ok = isinf(rl) ? (gl == rl) : fabs(gl - rl) <= rlt;
        if (!ok) {
          fails++;
          note_fail("%s: b=%d h=%d: lse %.9g, reference %.9g (bound %.3g)", what, b, h, gl, rl, rlt);
        }
      }
    }
  }
  /* the gaps of o and the tail of lse still hold the poison */
  for (int b = 0; b < batch; b++)
    for (int64_t i = 0; i < o_sn; i++) {
      const int64_t h = i / o_sh, f = i % o_sh;
      if ((h >= Hq || f >= D) && !tu_is_poison(o, c->t, b * o_sn + i)) {
        fails++;
        note_fail("%s: o gap element %lld of request %d was written", what, (long long)i, b);
      }
    }
  for (int i = batch * Hq; i < batch * Hq + 4; i++)
    if (!tu_is_poison(lse, KG_F32, i)) { fails++; note_fail("%s: lse[%d] past the end was written", what, i); }
  tu_free(K); tu_free(V); tu_free(q); tu_free(o); tu_free(lse); tu_free(qpos); tu_free(ws);
  ar_cache_free(&kc);
  return fails;
}

#define RUN(c, seed) do {                                                              \
    long f_ = run_case(&(c), (seed));                                                  \
    ck_assert_msg(f_ == 0, "%ld failing elements; first: %s", f_, g_fail_msg);         \
  } while (0)

static const int64_t LENS[] = { 1, 3, 27, 129, 257, 1024, 4096, 32768 };
static const int HEADS[][2] = { { 32, 1 }, { 32, 4 }, { 32, 8 }, { 32, 32 }, { 10, 2 }, { 12, 2 }, { 7, 1 } };
static const int DIMS[] = { 64, 128, 256 };
static const kg_dtype TYPES[] = { KG_F32, KG_F16, KG_BF16 };

/* Every (dtype, head_dim, layout) twice over a cycle of lengths, head
** configurations and options; 32768 tokens with at most 32 x 128 q features. */
START_TEST(test_single_matrix) {
  for (int i = 0; i < 36; i++) {
    dcase c;
    memset(&c, 0, sizeof c);
    c.single = 1;
    c.t = TYPES[i % 3];
    c.D = DIMS[(i / 3) % 3];
    c.l = (i / 9) % 2 ? KG_KV_HND : KG_KV_NHD;
    c.Hq = HEADS[i % 7][0];
    c.Hk = HEADS[i % 7][1];
    int64_t len = LENS[(i * 5 + i / 8) % 8];
    if (len == 32768 && c.Hq * c.D > 32 * 128) len = 4096;
    c.lens = &len;
    c.rope = (i / 2) % 3;
    c.interleave = (i / 6) % 2;
    c.rd = c.rope && i % 4 == 3 ? c.D / 2 : 0;
    c.window = i % 5 == 4 ? 100 : 0;
    c.cap = i % 7 == 5 ? 30.0 : 0.0;
    c.chunk = i % 3 == 1 ? 77 : i % 3 == 2 ? 512 : 0;
    c.qpos = i % 4 == 1;
    c.sm_scale = i % 6 == 2 ? 0.05 : 0.0;
    RUN(c, 0xdec0de00ull + (uint64_t)i);
  }
}
END_TEST

/* The HIP wave64 matrix-core decode on the emulated wavefront (the C "wave"
** variants, forced by name): single and paged batch decode, group sizes below,
** at and above one 16-head tile, ragged and empty requests, windows, soft cap,
** forced splits; a forced wave variant refuses RoPE on the fly. */
START_TEST(test_wave_decode) {
  static const kg_dtype WT[] = { KG_F16, KG_BF16 };
  static const int WHEADS[][2] = { { 32, 8 }, { 32, 1 }, { 10, 2 }, { 16, 1 }, { 7, 7 }, { 17, 1 } };
  static const int64_t PS[] = { 1, 7, 16 };
  char name[64];
  int64_t lens[7];
  uint64_t r = 0x3a7e0ull;
  for (int i = 0; i < 24; i++) {
    dcase c;
    memset(&c, 0, sizeof c);
    c.t = WT[i % 2];
    c.D = DIMS[(i / 2) % 3];
    c.l = (i / 6) % 2 ? KG_KV_HND : KG_KV_NHD;
    snprintf(name, sizeof name, "kg_attn_c_decode_wave_%s_%s_d%d", c.t == KG_F16 ? "f16" : "bf16",
             c.l == KG_KV_NHD ? "nhd" : "hnd", c.D);
    c.variant = name;
    c.Hq = WHEADS[i % 6][0];
    c.Hk = WHEADS[i % 6][1];
    c.single = i % 4 == 0;
    c.P = PS[i % 3];
    c.batch = c.single ? 1 : 1 + i % 7;
    for (int b = 0; b < c.batch; b++) lens[b] = ar_int(&r, 1, i % 5 == 0 ? 900 : 200);
    if (c.batch > 2) lens[1] = 0;   /* an empty request */
    c.lens = lens;
    c.window = i % 4 == 3 ? 57 : 0;
    c.cap = i % 5 == 1 ? 20.0 : 0.0;
    c.chunk = i % 3 == 1 ? 64 : i % 3 == 2 ? 100 : 0;
    c.max_len_delta = i % 4 == 1 ? 100 : 0;
    c.sm_scale = i % 6 == 2 ? 0.05 : 0.0;
    RUN(c, 0x3a7e0000ull + (uint64_t)i);
  }
  /* RoPE on the fly: the forced wave variant is refused, nothing written */
  int64_t len = 40;
  dcase c;
  memset(&c, 0, sizeof c);
  c.t = KG_BF16; c.l = KG_KV_NHD; c.D = 64; c.Hq = 4; c.Hk = 1; c.single = 1; c.lens = &len;
  ar_cache kc;
  ar_cache_build(&kc, c.l, c.t, 1, len, 64, 1, &len, 0, 0, 3);
  static uint16_t q[4 * 64], o[4 * 64];
  kg_decode_single_args sa;
  memset(&sa, 0, sizeof sa);
  sa.dtype = KG_BF16; sa.layout = KG_KV_NHD;
  sa.num_qo_heads = 4; sa.num_kv_heads = 1; sa.head_dim = 64; sa.kv_len = len;
  sa.q = q; sa.k = kc.k; sa.v = kc.v; sa.o = o;
  sa.q_rope_pos = -1;
  sa.params.rope.mode = KG_ROPE_DEFAULT;
  for (int j = 0; j < 4 * 64; j++) o[j] = 0x7fc1;
  kg_exec ex = tu_exec_c();
  ex.variant = "kg_attn_c_decode_wave_bf16_nhd_d64";
  ck_assert_int_eq(kg_decode_single(&sa, &ex), KG_ERROR_NOT_SUPPORTED);
  for (int j = 0; j < 4 * 64; j++) ck_assert_msg(o[j] == 0x7fc1, "o[%d] written", j);
  sa.params.rope.mode = KG_ROPE_NONE;
  ck_assert_int_eq(kg_decode_single(&sa, &ex), KG_SUCCESS);
  ar_cache_free(&kc);
}
END_TEST

/* The split path agrees with the unsplit one (both against the reference)
** for chunk sizes that do and do not divide the length, and with a window. */
START_TEST(test_single_split_chunks) {
  static const int64_t chunks[] = { 0, 1, 16, 100, 255, 1000 };
  for (int i = 0; i < 6; i++) {
    int64_t len = 1000;
    dcase c = { KG_BF16, i % 2 ? KG_KV_HND : KG_KV_NHD, 128, 8, 2, 0, 1, &len, i % 3, 0, 0, 0, 0.0, chunks[i], 0, 0,
                0.0, 1, 0, NULL };
    RUN(c, 0x5b117000ull + (uint64_t)i);
    c.window = 300;
    RUN(c, 0x5b118000ull + (uint64_t)i);
  }
}
END_TEST

/* Batch decode over paged caches: page sizes 1, 7, 16, ragged lengths with
** empty requests, the matrix's head configurations, every dtype / dim /
** layout, RoPE with explicit and default q positions, forced splits, the
** max_kv_len hint exact, larger and smaller than the longest request. */
START_TEST(test_batch_matrix) {
  static const int64_t PS[] = { 1, 7, 16 };
  static const int BATCH[] = { 1, 3, 7, 17 };
  int64_t lens[17];
  uint64_t r = 0xba7c4ull;
  for (int i = 0; i < 24; i++) {
    dcase c;
    memset(&c, 0, sizeof c);
    c.t = TYPES[i % 3];
    c.D = DIMS[(i / 3) % 3];
    c.l = (i / 9) % 2 ? KG_KV_HND : KG_KV_NHD;
    c.Hq = HEADS[(i + 2) % 7][0];
    c.Hk = HEADS[(i + 2) % 7][1];
    c.P = PS[i % 3];
    c.batch = BATCH[(i / 3) % 4];
    for (int b = 0; b < c.batch; b++) lens[b] = ar_int(&r, 1, i % 5 == 0 ? 700 : 300);
    if (c.batch > 2) lens[1] = 0;                    /* an empty request */
    if (i % 6 == 5) lens[0] = 2000;                  /* one long request */
    c.lens = lens;
    c.rope = (i / 2) % 3;
    c.interleave = i % 2;
    c.rd = c.rope && i % 5 == 2 ? c.D - 16 : 0;
    c.window = i % 4 == 3 ? 57 : i % 8 == 1 ? 1 : 0;
    c.cap = i % 5 == 1 ? 20.0 : 0.0;
    c.chunk = i % 3 == 0 ? 0 : i % 3 == 1 ? 64 : 129;
    c.max_len_delta = i % 4 == 0 ? 0 : i % 4 == 1 ? 100 : -50;
    c.qpos = i % 2;
    c.pad = i % 7 == 3 ? 24 : 0;
    RUN(c, 0xba7c0000ull + (uint64_t)i);
  }
}
END_TEST

/* A NaN in one token's key makes that request's q heads of that kv head NaN
** (every feature and the lse), nothing else; an empty request gives exact 0
** and -inf. */
START_TEST(test_batch_nan_and_empty) {
  const int64_t lens[3] = { 40, 0, 33 };
  ar_cache kc;
  const int D = 64, Hq = 4, Hk = 2;
  uint64_t seed = 0x4a4ull;
  ar_cache_build(&kc, KG_KV_NHD, KG_F16, Hk, 16, D, 3, lens, 0, 0, seed);
  ar_put(kc.k, KG_F16, ar_cache_offset(&kc, 2, 17, 1) + 5, NAN);
  uint16_t q[3 * 4 * 64], o[3 * 4 * 64];
  float lse[12];
  for (int i = 0; i < 3 * 4 * 64; i++) ar_put(q, KG_F16, i, ar_sym(&seed));
  tu_poison(o, KG_F16, 3 * 4 * 64);
  tu_poison(lse, KG_F32, 12);
  kg_decode_args a;
  memset(&a, 0, sizeof a);
  a.num_qo_heads = Hq;
  a.q = q; a.q_stride_n = Hq * D; a.q_stride_h = D;
  a.o = o; a.o_stride_n = Hq * D; a.o_stride_h = D;
  a.lse = lse;
  a.kv = ar_cache_desc(&kc, kc.k, kc.v, kc.indices, kc.indptr, kc.last);
  kg_exec ex = tu_exec_c();
  ck_assert_int_eq(kg_decode_batch(&a, &ex), KG_SUCCESS);
  for (int b = 0; b < 3; b++)
    for (int h = 0; h < Hq; h++) {
      const int nan_head = b == 2 && h / (Hq / Hk) == 1;
      for (int f = 0; f < D; f++) {
        const double v = ar_get(o, KG_F16, (b * Hq + h) * D + f);
        if (nan_head) ck_assert_msg(isnan(v), "b=%d h=%d f=%d: %g, want NaN", b, h, f, v);
        else if (b == 1) ck_assert_msg(v == 0.0 && !signbit(v), "empty request: o = %g, want 0", v);
        else ck_assert_msg(isfinite(v), "b=%d h=%d f=%d: %g, want finite", b, h, f, v);
      }
      const float l = lse[b * Hq + h];
      if (nan_head) ck_assert_msg(isnan(l), "lse %g, want NaN", l);
      else if (b == 1) ck_assert_msg(isinf(l) && l < 0, "empty request: lse %g, want -inf", l);
      else ck_assert_msg(isfinite(l), "lse %g", l);
    }
  ar_cache_free(&kc);
}
END_TEST

/* The planner's rule (kg__decode_split) with H200 figures (132 SMs) and the
** C planner: no split unless forced, exact workspace sizes. */
START_TEST(test_planner) {
  int64_t cs, nc;
  /* bench shapes, d=128 CUDA variant: 4 blocks per SM, 16-token tiles, 8 kv heads, group fits one tile */
  kg__decode_split(1 * 8, 32768, 132, 4, 16, &cs, &nc);
  ck_assert_msg(nc == 64 && cs == 512, "(1, 32768): %lld chunks of %lld", (long long)nc, (long long)cs);
  kg__decode_split(16 * 8, 4096, 132, 4, 16, &cs, &nc);
  ck_assert_msg(nc == 4 && cs == 1024, "(16, 4096): %lld chunks of %lld", (long long)nc, (long long)cs);
  kg__decode_split(64 * 8, 4096, 132, 4, 16, &cs, &nc);
  ck_assert_msg(nc == 1 && cs == 4096, "(64, 4096): %lld chunks of %lld", (long long)nc, (long long)cs);
  kg__decode_split(128 * 8, 2048, 132, 4, 16, &cs, &nc);
  ck_assert_msg(nc == 1 && cs == 2048, "(128, 2048): %lld chunks", (long long)nc);
  /* short sequences are not cut below 256 tokens; one wave at most */
  kg__decode_split(1, 300, 132, 4, 16, &cs, &nc);
  ck_assert_msg(nc == 2 && cs == 256, "(1, 300): %lld chunks of %lld", (long long)nc, (long long)cs);
  kg__decode_split(1, 200, 132, 4, 16, &cs, &nc);
  ck_assert_msg(nc == 1 && cs == 200, "(1, 200): %lld chunks", (long long)nc);
  /* the tensor-core d=128 CUDA variant: 3 blocks per SM (396 slots), 64-token tiles */
  kg__decode_split(1 * 8, 32768, 132, 3, 64, &cs, &nc);
  ck_assert_msg(nc == 47 && cs == 704, "tc (1, 32768): %lld chunks of %lld", (long long)nc, (long long)cs);
  kg__decode_split(16 * 8, 4096, 132, 3, 64, &cs, &nc);
  ck_assert_msg(nc == 3 && cs == 1408, "tc (16, 4096): %lld chunks of %lld", (long long)nc, (long long)cs);
  /* several waves: 512 blocks take 2 waves of 396 slots, 3 chunks each 4 waves of a third */
  kg__decode_split(64 * 8, 4096, 132, 3, 64, &cs, &nc);
  ck_assert_msg(nc == 3 && cs == 1408, "tc (64, 4096): %lld chunks of %lld", (long long)nc, (long long)cs);
  /* 1024 blocks: 3 waves of the whole beat 8 of a third (measured on the H200) */
  kg__decode_split(128 * 8, 2048, 132, 3, 64, &cs, &nc);
  ck_assert_msg(nc == 1 && cs == 2048, "tc (128, 2048): %lld chunks of %lld", (long long)nc, (long long)cs);
  /* 1024 blocks already fill 97% of 2 waves of 528: no split */
  kg__decode_split(1024, 2048, 132, 4, 16, &cs, &nc);
  ck_assert_msg(nc == 1, "(1024 blocks, 2048): %lld chunks", (long long)nc);
  for (int64_t blocks = 1; blocks < 1400; blocks += 37)
    for (int64_t L = 1; L < 70000; L = L * 3 + 1) {
      kg__decode_split(blocks, L, 132, 4, 16, &cs, &nc);
      ck_assert(nc >= 1 && cs >= 1 && (nc - 1) * cs < L && nc * cs >= L);
      ck_assert(nc == 1 || (blocks < 528 ? blocks * nc <= 528 : nc <= 4));
      ck_assert(nc == 1 || (cs % 16 == 0 && cs >= 256));
    }
  /* the C planner */
  int64_t lens[2] = { 3000, 10 };
  ar_cache kc;
  ar_cache_build(&kc, KG_KV_NHD, KG_F32, 2, 16, 64, 2, lens, 0, 0, 7);
  static float q[2 * 4 * 64], o[2 * 4 * 64];
  kg_decode_args a;
  memset(&a, 0, sizeof a);
  a.num_qo_heads = 4;
  a.q = q; a.q_stride_n = 256; a.q_stride_h = 64;
  a.o = o; a.o_stride_n = 256; a.o_stride_h = 64;
  a.kv = ar_cache_desc(&kc, kc.k, kc.v, kc.indices, kc.indptr, kc.last);
  a.max_kv_len = 3000;
  kg_exec ex = tu_exec_c();
  kg_decode_plan_info p;
  ck_assert_int_eq(kg_decode_plan(&a, &ex, &p), KG_SUCCESS);
  ck_assert_msg(p.num_chunks == 1 && p.workspace_bytes == 0 && p.sm_count == 1 && p.blocks == 2 * 2,
                "C plan: %lld chunks, %zu bytes, %lld SMs, %lld blocks", (long long)p.num_chunks, p.workspace_bytes,
                (long long)p.sm_count, (long long)p.blocks);
  a.params.kv_chunk_size = 1000;
  ck_assert_int_eq(kg_decode_plan(&a, &ex, &p), KG_SUCCESS);
  ck_assert_int_eq(p.num_chunks, 3);
  /* part_o 2 x 3 x 4 x 64 floats, part_lse 2 x 3 x 4 floats (16-byte rounded) */
  ck_assert_uint_eq(p.workspace_bytes, (size_t)(2 * 3 * 4 * 64 * 4 + 2 * 3 * 4 * 4));
  size_t bytes = 1;
  ck_assert_int_eq(kg_decode_workspace_size(&a, &ex, &bytes), KG_SUCCESS);
  ck_assert_uint_eq(bytes, p.workspace_bytes);
  /* too small a workspace is refused, and kg_explain says how much is needed */
  ck_assert_int_eq(kg_decode_batch(&a, &ex), KG_ERROR_WORKSPACE_TOO_SMALL);
  char why[4096];
  ck_assert_int_eq(kg_explain(KG_OP_DECODE_BATCH, &a, &ex, why, sizeof why), KG_ERROR_WORKSPACE_TOO_SMALL);
  ck_assert_msg(strstr(why, "workspace: 6240 bytes needed (3 chunks of 1000 tokens)") != NULL, "%s", why);
  /* the largest hints plan without overflow: a forced chunk is at most max_kv_len tokens; the
  ** output is that of the exact hint, bit for bit */
  static float o2[2 * 4 * 64];
  for (int i = 0; i < 2 * 4 * 64; i++) q[i] = (float)((i * 37) % 19 - 9) * 0.125f;
  a.params.kv_chunk_size = 0;
  ck_assert_int_eq(kg_decode_batch(&a, &ex), KG_SUCCESS);
  memcpy(o2, o, sizeof o);
  a.max_kv_len = 2147483647;
  a.params.kv_chunk_size = INT64_MAX;
  ck_assert_int_eq(kg_decode_plan(&a, &ex, &p), KG_SUCCESS);
  ck_assert_msg(p.num_chunks == 1 && p.chunk_size == 2147483647 && p.workspace_bytes == 0,
                "huge hints: %lld chunks of %lld, %zu bytes", (long long)p.num_chunks, (long long)p.chunk_size,
                p.workspace_bytes);
  memset(o, 0xff, sizeof o);
  ck_assert_int_eq(kg_decode_batch(&a, &ex), KG_SUCCESS);
  ck_assert_msg(memcmp(o, o2, sizeof o) == 0, "huge hints changed the output");
  a.params.kv_chunk_size = 0;
  ck_assert_int_eq(kg_decode_plan(&a, &ex, &p), KG_SUCCESS);
  ck_assert_int_eq(p.num_chunks, 1);
  ar_cache_free(&kc);
}
END_TEST

/* Statuses and kg_explain of the decode entry points (C backend). */
START_TEST(test_decode_validation) {
  int64_t lens[2] = { 20, 5 };
  ar_cache kc;
  ar_cache_build(&kc, KG_KV_HND, KG_BF16, 2, 8, 128, 2, lens, 1, 0, 3);
  static uint16_t q[2 * 4 * 128], o[2 * 4 * 128];
  kg_decode_args a;
  memset(&a, 0, sizeof a);
  a.num_qo_heads = 4;
  a.q = q; a.q_stride_n = 512; a.q_stride_h = 128;
  a.o = o; a.o_stride_n = 512; a.o_stride_h = 128;
  a.kv = ar_cache_desc(&kc, kc.k, kc.v, kc.indices, kc.indptr, kc.last);
  kg_exec ex = tu_exec_c();
  char why[8192];
  const char *name = NULL;
  ck_assert_int_eq(kg_decode_select(&a, &ex, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_attn_c_decode_bf16_hnd_d128");
  ck_assert_int_eq(kg_explain(KG_OP_DECODE_BATCH, &a, &ex, why, sizeof why), KG_SUCCESS);
  ck_assert_msg(strstr(why, "kg_attn_c_decode_bf16_hnd_d128: chosen") != NULL, "%s", why);
  ck_assert_msg(strstr(why, "kg_attn_c_decode_bf16_hnd_d64: rejected: head_dim 64, wanted 128") != NULL, "%s", why);
  ck_assert_msg(strstr(why, "kg_attn_c_decode_f32_nhd_d128: not considered: kg_attn_c_decode_bf16_hnd_d128 chosen first")
                != NULL, "%s", why);
  ck_assert_msg(strstr(why, "kg_attn_cuda_") == NULL || strstr(why, "rejected: backend cuda, wanted c") != NULL, "%s", why);
  ck_assert_int_eq(kg_decode_batch(&a, &ex), KG_SUCCESS);
  /* no variant for head_dim 96: not supported, and explain says why */
  kg_decode_args b = a;
  b.kv.head_dim = 96;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_NOT_SUPPORTED);
  ck_assert_int_eq(kg_explain(KG_OP_DECODE_BATCH, &b, &ex, why, sizeof why), KG_ERROR_NOT_SUPPORTED);
  ck_assert_msg(strstr(why, "kg_attn_c_decode_bf16_hnd_d128: rejected: head_dim 128, wanted 96") != NULL, "%s", why);
  ck_assert_msg(strstr(why, "kg_attn_c_decode_bf16_nhd_d128: rejected: kv layout nhd, wanted hnd") != NULL, "%s", why);
  ck_assert_msg(strstr(why, "kg_attn_c_decode_f16_hnd_d128: rejected: dtype f16, wanted bf16") != NULL, "%s", why);
  /* a forced variant of another layout */
  ex.variant = "kg_attn_c_decode_bf16_nhd_d128";
  ck_assert_int_eq(kg_decode_batch(&a, &ex), KG_ERROR_NOT_SUPPORTED);
  ex.variant = "kg_attn_c_decode_bf16_hnd_d128";
  ck_assert_int_eq(kg_decode_batch(&a, &ex), KG_SUCCESS);
  ex.variant = NULL;
  /* argument and problem errors */
  b = a; b.num_qo_heads = 5;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_PROBLEM);
  b = a; b.q = NULL;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.o = q + 64;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_PROBLEM);   /* o overlaps q */
  b = a; b.o_stride_h = 64;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_PROBLEM);   /* rows of o overlap */
  b = a; b.params.logits_soft_cap = -1.0f;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.params.sliding_window = -2;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.params.sm_scale = INFINITY;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.params.rope.mode = KG_ROPE_DEFAULT; b.params.rope.rotary_dim = 130;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.params.kv_chunk_size = 8;   /* forced chunks need max_kv_len */
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.kv.layout = (kg_kv_layout)3;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  int32_t bad_last[2] = { 9, 5 };   /* above the page size 8 */
  b = a; b.kv.last_page_len = bad_last;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_PROBLEM);
  int32_t bad_ptr[3] = { 0, 3, 2 };
  b = a; b.kv.indptr = bad_ptr;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_PROBLEM);
  /* request 0's pages would run past indices[indptr[batch]]: refused from indptr alone (the
  ** whole indptr is checked before any page id is read) */
  int32_t far_ptr[3] = { 0, 40, 4 };
  b = a; b.kv.indptr = far_ptr;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_PROBLEM);
  ck_assert_int_eq(kg_explain(KG_OP_DECODE_BATCH, &b, &ex, why, sizeof why), KG_ERROR_INVALID_PROBLEM);
  ck_assert_msg(strstr(why, "kv.indptr decreases at request 1 (40 -> 4)") != NULL, "%s", why);
  int32_t qp[2] = { 3, -1 };
  b = a; b.q_rope_pos = qp;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_INVALID_PROBLEM);
  /* pointers aligned to their elements, checked before the tables are read */
  static float lse_buf[16];
  b = a; b.lse = (float *)((char *)lse_buf + 2);
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_MISALIGNED_OPERAND);
  b = a; b.o = (char *)o + 1;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_MISALIGNED_OPERAND);
  b = a; b.q_rope_pos = (const int32_t *)((const char *)qp + 1);
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_MISALIGNED_OPERAND);
  b = a; b.kv.last_page_len = (const int32_t *)((const char *)bad_last + 2);
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_ERROR_MISALIGNED_OPERAND);
  b = a; b.lse = lse_buf;
  ck_assert_int_eq(kg_decode_batch(&b, &ex), KG_SUCCESS);
  kg_exec cu = ex;
  cu.backend = KG_BACKEND_CUDA;
  if (!kg_backend_available(KG_BACKEND_CUDA)) ck_assert_int_eq(kg_decode_batch(&a, &cu), KG_ERROR_BACKEND_UNAVAILABLE);
  ck_assert_int_eq(kg_decode_batch(NULL, &ex), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_decode_batch(&a, NULL), KG_ERROR_INVALID_ARGUMENT);
  size_t bytes = 7;
  ck_assert_int_eq(kg_decode_workspace_size(&a, &ex, NULL), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_decode_workspace_size(&a, &ex, &bytes), KG_SUCCESS);
  ck_assert_uint_eq(bytes, 0);
  /* single decode */
  kg_decode_single_args s;
  memset(&s, 0, sizeof s);
  s.dtype = KG_BF16; s.layout = KG_KV_NHD; s.num_qo_heads = 4; s.num_kv_heads = 2; s.head_dim = 128; s.kv_len = 10;
  s.q = q; s.k = kc.k; s.v = kc.v; s.o = o; s.q_rope_pos = -1;
  ck_assert_int_eq(kg_decode_single(&s, &ex), KG_SUCCESS);
  ck_assert_int_eq(kg_explain(KG_OP_DECODE_SINGLE, &s, &ex, why, sizeof why), KG_SUCCESS);
  ck_assert_msg(strstr(why, "kg_attn_c_decode_bf16_nhd_d128: chosen") != NULL, "%s", why);
  kg_decode_single_args t = s;
  t.kv_len = 0;
  ck_assert_int_eq(kg_decode_single(&t, &ex), KG_ERROR_INVALID_ARGUMENT);
  t = s; t.q_rope_pos = -5;
  ck_assert_int_eq(kg_decode_single(&t, &ex), KG_ERROR_INVALID_ARGUMENT);
  t = s; t.o = kc.k;
  ck_assert_int_eq(kg_decode_single(&t, &ex), KG_ERROR_INVALID_PROBLEM);
  t = s; t.k = (const char *)kc.k + 1;
  ck_assert_int_eq(kg_decode_single(&t, &ex), KG_ERROR_MISALIGNED_OPERAND);
  t = s; t.lse = (float *)((char *)lse_buf + 1);
  ck_assert_int_eq(kg_decode_single(&t, &ex), KG_ERROR_MISALIGNED_OPERAND);
  t = s; t.params.kv_chunk_size = 3;
  kg_decode_plan_info p;
  ck_assert_int_eq(kg_decode_single_plan(&t, &ex, &p), KG_SUCCESS);
  ck_assert_int_eq(p.num_chunks, 4);
  ck_assert_int_eq(kg_decode_single(&t, &ex), KG_ERROR_WORKSPACE_TOO_SMALL);
  ar_cache_free(&kc);
}
END_TEST

Suite *single_decode_suite(void) {
  Suite *s = suite_create("SingleDecodeTest");
  TCase *tc = tcase_create("single");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_single_matrix);
  tcase_add_test(tc, test_single_split_chunks);
  suite_add_tcase(s, tc);
  return s;
}

Suite *batch_decode_suite(void) {
  Suite *s = suite_create("BatchDecodeTest");
  TCase *tc = tcase_create("batch");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_batch_matrix);
  tcase_add_test(tc, test_batch_nan_and_empty);
  tcase_add_test(tc, test_wave_decode);
  tcase_add_test(tc, test_planner);
  tcase_add_test(tc, test_decode_validation);
  suite_add_tcase(s, tc);
  return s;
}
