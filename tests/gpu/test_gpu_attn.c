/*
** test_gpu_attn.c -- every compiled CUDA attention variant (kg_attn_cuda_*) against the
** double-precision reference of tests/c/attn_ref.h, computed here on the CPU (never against
** other generated code or the C-backend variants).
**
** Built by `make test-gpu` (plain C, libkg + cudart; no Lua, no libcheck). Each variant is
** forced by name (kg_exec.variant); op, dtype, KV layout and head dim come from the name
** kg_attn_cuda_<op>[_<dtype>][_<nhd|hnd>][_d<head_dim>].
**
** What runs:
**   - math: exp2, log2, rcp, rsqrt, tanh of the CUDA dialect against libm in double on a spread
**     of inputs (negatives, tiny and huge magnitudes, near 1, specials) with the stated bounds:
**     exp2 <= 2 ulp (x in [-125, 127]; ex2.approx.ftz), log2 <= 2^-21 absolute on [0.5, 2] and
**     <= 3 ulp elsewhere (lg2.approx.ftz, normal x), rcp <= 1 ulp, rsqrt <= 2 ulp, tanh <= 2^-20
**     absolute and, below |x| = 0.125 (odd polynomial), <= 2^-20 relative; specials exact; the
**     warp shuffles (xor for every lane mask, xor_sum / xor_max for every width) exactly.
**   - rope: both pairings, default and Llama 3.1 frequencies, full and partial rotary_dim,
**     positions by id and by request offsets, q and k with strides, in place and out of place,
**     head dims 64, 96, 128, 256 (bound of attn_ref.h), gaps untouched.
**   - append: rounds of ragged and decode appends against a CPU copy of the whole cache, page
**     sizes 1, 3, 7, 16, 17, batch 1, 3, 7, 23, head dims 64, 128, 256, padded stride_page.
**   - decode: per variant, single decode over kv lengths 1, 3, 27, 129, 257, 1024, 4096, 32768 x
**     qo/kv heads (32,1), (32,4), (32,8), (32,32), (10,2), (12,2), (7,1) (odd groups 5, 6, 7),
**     RoPE off / default / Llama 3.1 cycling, soft cap and sliding window on some, the device's own
**     split-KV plan (the planner splits small batches) and forced chunks; batch decode over paged
**     caches (page sizes 1, 7, 16, ragged lengths, empty requests, explicit q positions, the
**     max_kv_len hint exact / above / below); a NaN key poisons exactly its heads; misaligned K
**     is refused with KG_ERROR_MISALIGNED_OPERAND. Bound: ar_attend's per element (it applies to
**     every dtype; NaN never passes); gaps of o and the tail of lse keep their poison.
**   - merge: pairs, in place with a mask, K-way (K = 0, 1, 2, 9, 81, 513) and ragged, bit-equal
**     between K-way and ragged, within 2^-20 of the double merge.
** Every output buffer is poisoned (NaN) before each call. One line per failing case (first
** detail), a line per variant, last line "N passed, M failed"; exit 1 on any failure, 2 when a
** CUDA call fails.
** Usage: test_gpu_attn [SUBSTRING] -- only the variants whose name contains it.
**
** Checking the test itself without a GPU: compiled with -DKG_GPU_TEST_HOST the same program runs
** the C-backend variants (kg_attn_c_*, host memory), e.g.
**   make KG_CUDA=0 KG_HIP=0 lib && cc -std=c11 -O2 -DKG_GPU_TEST_HOST -Iruntime/include \
**     -Iruntime/src tests/gpu/test_gpu_attn.c build/c/libkg.a -lm -lpthread -o build/test_attn_host
** That validates the test's reference and bookkeeping only (tests/c/check_attn_*.c check the C
** variants); the GPU build is the test.
*/
#include <stdarg.h>

#include "gpu_test.h"
#include "../c/attn_ref.h"

#define VPREFIX "kg_attn_" BACKEND_NAME "_"

/* A copy of host buffer h (n bytes) in backend memory. */
static void *up(const void *h, size_t n) {
  void *d = dev_alloc(n);
  h2d(d, h, n);
  return d;
}

/* Poison: NaN in every type (f32 0x7fbadbad, 16-bit 0x7fff). */
static void poison(void *buf, kg_dtype t, int64_t n) {
  if (t == KG_F32) for (int64_t i = 0; i < n; i++) ((uint32_t *)buf)[i] = 0x7fbadbadu;
  else for (int64_t i = 0; i < n; i++) ((uint16_t *)buf)[i] = 0x7fffu;
}
static int is_poison(const void *buf, kg_dtype t, int64_t i) {
  return t == KG_F32 ? ((const uint32_t *)buf)[i] == 0x7fbadbadu : ((const uint16_t *)buf)[i] == 0x7fffu;
}

/* ---- case bookkeeping ---------------------------------------------------------------------------- */

static char g_case[400];
static long g_errs;

static void case_begin(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_case, sizeof g_case, fmt, ap);
  va_end(ap);
  g_errs = 0;
}
static void bad(const char *fmt, ...) {
  if (g_errs++ == 0) {
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("FAIL %s: %s\n", g_case, msg);
  }
}
static void case_end(void) {
  if (g_errs) {
    g_fail++;
    if (g_errs > 1) printf("     (%ld failing checks in this case)\n", g_errs);
  } else {
    g_pass++;
  }
}
static int expect_status(kg_status st, kg_status want, const char *what) {
  if (st == want) return 1;
  bad("%s returned %s, expected %s", what, kg_status_string(st), kg_status_string(want));
  return 0;
}

/* ---- variants ------------------------------------------------------------------------------------- */

enum { OP_MATH, OP_ROPE, OP_APPEND, OP_DECODE, OP_MERGE, N_OPS };
static const char *OP_NAMES[N_OPS] = { "math", "rope", "append", "decode", "merge" };

typedef struct avar {
  const char *name;
  int op;
  kg_dtype t;
  int layout;   /* -1: none */
  int D;        /* 0: any */
} avar;

static int parse_variant(const char *name, avar *v) {
  memset(v, 0, sizeof *v);
  v->name = name;
  v->layout = -1;
  if (strncmp(name, VPREFIX, strlen(VPREFIX)) != 0) return 0;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", name + strlen(VPREFIX));
  char *tok = strtok(buf, "_");
  if (!tok) return 0;
  v->op = -1;
  for (int i = 0; i < N_OPS; i++) if (!strcmp(tok, OP_NAMES[i])) v->op = i;
  if (v->op < 0) return 0;
  v->t = KG_F32;
  while ((tok = strtok(NULL, "_"))) {
    if (!strcmp(tok, "f32")) v->t = KG_F32;
    else if (!strcmp(tok, "f16")) v->t = KG_F16;
    else if (!strcmp(tok, "bf16")) v->t = KG_BF16;
    else if (!strcmp(tok, "nhd")) v->layout = KG_KV_NHD;
    else if (!strcmp(tok, "hnd")) v->layout = KG_KV_HND;
    else if (tok[0] == 'd') v->D = atoi(tok + 1);
    else return 0;
  }
  if (v->op == OP_DECODE && (v->D == 0 || v->layout < 0)) return 0;
  if (v->op == OP_APPEND && v->layout < 0) return 0;
  return 1;
}

/* ---- math ------------------------------------------------------------------------------------------- */

static double ulp_at(double r) {
  r = fabs(r);
  if (r < ldexp(1.0, -126)) return ldexp(1.0, -149);
  int e;
  frexp(r, &e);
  return ldexp(1.0, e - 24);
}

/* y = f(x) on the backend for n inputs. */
static int math_eval(const avar *v, kg_math_fn fn, const float *x, float *y, int64_t n, int arg) {
  float *dx = (float *)up(x, (size_t)n * 4), *dy = (float *)dev_alloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) y[i] = NAN;
  h2d(dy, y, (size_t)n * 4);
  kg_math_args a;
  memset(&a, 0, sizeof a);
  a.fn = fn; a.n = n; a.x = dx; a.y = dy; a.lane_mask = arg; a.width = arg;
  kg_exec e = exec_for(v->name);
  kg_status st = kg_math_eval(&a, &e);
  dev_sync();
  d2h(y, dy, (size_t)n * 4);
  dev_free(dx);
  dev_free(dy);
  return expect_status(st, KG_SUCCESS, "kg_math_eval");
}

static double ref_rcp(double x) { return 1.0 / x; }
static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }

static void math_fn_case(const avar *v, kg_math_fn fn, const char *nm, double (*ref)(double), double lo, double hi,
                         int log_spread) {
  enum { N = 4096 };
  static float x[N], y[N];
  uint64_t s = 0x3a7full + (uint64_t)fn;
  int n = 0;
  for (int i = 0; i < 3000; i++) {
    const double t = i < 2000 ? i / 1999.0 : ar_uniform(&s);
    if (log_spread) {
      double m = exp(log(fabs(lo)) + (log(fabs(hi)) - log(fabs(lo))) * t);
      x[n++] = (float)(lo < 0 && i % 2 ? -m : m);
    } else {
      x[n++] = (float)(lo + (hi - lo) * t);
    }
  }
  if (fn == KG_MATH_EXP2) for (int i = 0; i < 200; i++) x[n++] = (float)ldexp((i % 2 ? -1 : 1) * (1 + i), -30 + i / 10);
  if (fn == KG_MATH_LOG2) for (int i = 0; i < 400; i++) x[n++] = 1.0f + (float)ldexp(i - 200, -12);
  if (fn == KG_MATH_TANH) {
    for (int i = 0; i < 300; i++) x[n++] = (float)ldexp((i % 2 ? -1.0 : 1.0) * (1.0 + i / 300.0), -40 + i / 10);
    for (int i = 0; i < 200; i++) x[n++] = (float)(0.1 + i * 0.0005);
  }
  case_begin("%s %s on %d inputs", v->name, nm, n);
  if (math_eval(v, fn, x, y, n, 0)) {
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
      const double r = ref((double)x[i]), e = fabs((double)y[i] - r);
      int ok;
      double measure;
      if (fn == KG_MATH_LOG2 && x[i] >= 0.5f && x[i] <= 2.0f) { measure = e / ldexp(1.0, -21); ok = e <= ldexp(1.0, -21); }
      else if (fn == KG_MATH_TANH) {
        measure = e / ldexp(1.0, -20);
        ok = e <= ldexp(1.0, -20) && (fabs(x[i]) >= 0.125 || e <= ldexp(1.0, -20) * fabs(r));
      } else {
        const double bound = fn == KG_MATH_EXP2 ? 2.0 : fn == KG_MATH_LOG2 ? 3.0 : fn == KG_MATH_RCP ? 1.0 : 2.0;
        measure = e / ulp_at(r) / bound;
        ok = e <= bound * ulp_at(r);
      }
      if (!ok) bad("%s(%.9g) = %.9g, libm %.17g", nm, x[i], y[i], r);
      if (measure > worst) worst = measure;
    }
    printf("  %s %s: worst %.3f of the bound\n", v->name, nm, worst);
  }
  case_end();
}

static void math_cases(const avar *v) {
  math_fn_case(v, KG_MATH_EXP2, "exp2", exp2, -125.0, 127.0, 0);
  math_fn_case(v, KG_MATH_LOG2, "log2", log2, 1.2e-38, 3e38, 1);
  math_fn_case(v, KG_MATH_RCP, "rcp", ref_rcp, -1e37, 1e-37, 1);
  math_fn_case(v, KG_MATH_RSQRT, "rsqrt", ref_rsqrt, 1e-37, 1e37, 1);
  math_fn_case(v, KG_MATH_TANH, "tanh", tanh, -20.0, 20.0, 0);
  /* specials */
  float x[16] = { -INFINITY, INFINITY, NAN, 0.0f, -0.0f }, y[16];
  case_begin("%s specials", v->name);
  if (math_eval(v, KG_MATH_EXP2, x, y, 5, 0) && !(y[0] == 0.0f && isinf(y[1]) && y[1] > 0 && isnan(y[2]) && y[3] == 1.0f))
    bad("exp2 specials: %g %g %g %g", y[0], y[1], y[2], y[3]);
  if (math_eval(v, KG_MATH_LOG2, x + 1, y, 3, 0) && !(isinf(y[0]) && y[0] > 0 && isnan(y[1]) && isinf(y[2]) && y[2] < 0))
    bad("log2 specials: %g %g %g", y[0], y[1], y[2]);
  if (math_eval(v, KG_MATH_TANH, x, y, 5, 0) &&
      !(y[0] == -1.0f && y[1] == 1.0f && isnan(y[2]) && y[3] == 0.0f && y[4] == 0.0f && signbit(y[4])))
    bad("tanh specials: %g %g %g %g %g", y[0], y[1], y[2], y[3], y[4]);
  case_end();
  /* shuffles, exactly */
  const int lanes = kg_math_lanes(BACKEND), n = 8 * lanes;
  float *xs = (float *)xmalloc((size_t)n * 4), *ys = (float *)xmalloc((size_t)n * 4);
  uint64_t s = 17;
  case_begin("%s shuffles over %d lanes", v->name, lanes);
  for (int i = 0; i < n; i++) xs[i] = (float)ar_int(&s, -1000, 1000);
  for (int mask = 0; mask < lanes; mask++)
    if (math_eval(v, KG_MATH_SHFL_XOR, xs, ys, n, mask))
      for (int i = 0; i < n; i++)
        if (ys[i] != xs[(i / lanes) * lanes + ((i % lanes) ^ mask)]) { bad("shfl_xor mask %d lane %d: %g", mask, i, ys[i]); break; }
  for (int w = 1; w <= lanes; w *= 2) {
    if (math_eval(v, KG_MATH_XOR_SUM, xs, ys, n, w))
      for (int i = 0; i < n; i++) {
        double want = 0.0;
        for (int j = i / w * w; j < i / w * w + w; j++) want += xs[j];
        if (ys[i] != want) { bad("xor_sum width %d lane %d: %g, want %g", w, i, ys[i], want); break; }
      }
    if (math_eval(v, KG_MATH_XOR_MAX, xs, ys, n, w))
      for (int i = 0; i < n; i++) {
        float want = -INFINITY;
        for (int j = i / w * w; j < i / w * w + w; j++) if (xs[j] > want) want = xs[j];
        if (ys[i] != want) { bad("xor_max width %d lane %d: %g, want %g", w, i, ys[i], want); break; }
      }
  }
  case_end();
  free(xs);
  free(ys);
}

/* ---- rope -------------------------------------------------------------------------------------------- */

static void rope_case(const avar *v, int D, int rd, int interleave, int llama, int Hq, int Hk, int nnz, int batch,
                      int in_place, uint64_t seed) {
  const kg_dtype t = v->t;
  const size_t es = kg_dtype_size(t);
  const int64_t heads[2] = { Hq, Hk };
  int64_t sh[2], sn[2], osh[2], osn[2], nin[2], nout[2];
  void *hin[2], *hout[2], *din[2], *dout[2];
  for (int op = 0; op < 2; op++) {
    sh[op] = D + 3; sn[op] = heads[op] * sh[op] + 5;
    osh[op] = in_place ? sh[op] : D; osn[op] = in_place ? sn[op] : heads[op] * D + 2;
    nin[op] = nnz * sn[op] + 8; nout[op] = nnz * osn[op] + 8;
    hin[op] = xmalloc((size_t)nin[op] * es);
    poison(hin[op], t, nin[op]);
    for (int n = 0; n < nnz; n++)
      for (int h = 0; h < heads[op]; h++)
        for (int f = 0; f < D; f++) ar_put(hin[op], t, n * sn[op] + h * sh[op] + f, 3.0 * ar_sym(&seed));
    din[op] = up(hin[op], (size_t)nin[op] * es);
    hout[op] = xmalloc((size_t)nout[op] * es);
    if (in_place) dout[op] = din[op];
    else {
      poison(hout[op], t, nout[op]);
      dout[op] = up(hout[op], (size_t)nout[op] * es);
    }
  }
  int32_t *pos = (int32_t *)xmalloc((size_t)nnz * 4 + 4), *indptr = (int32_t *)xmalloc((size_t)(batch + 1) * 4 + 4);
  int32_t *offs = (int32_t *)xmalloc((size_t)batch * 4 + 4);
  if (batch > 0) {
    indptr[0] = 0;
    for (int b = 0; b < batch; b++) {
      indptr[b + 1] = b == batch - 1 ? nnz : (int32_t)ar_int(&seed, indptr[b], nnz);
      offs[b] = (int32_t)ar_int(&seed, 0, 40000);
      for (int n = indptr[b]; n < indptr[b + 1]; n++) pos[n] = offs[b] + (n - indptr[b]);
    }
  } else {
    for (int n = 0; n < nnz; n++) pos[n] = (int32_t)ar_int(&seed, 0, 40000);
  }
  void *dpos = up(pos, (size_t)nnz * 4 + 4), *dind = up(indptr, (size_t)(batch + 1) * 4 + 4), *doff = up(offs, (size_t)batch * 4 + 4);
  kg_rope_args a;
  memset(&a, 0, sizeof a);
  a.dtype = t; a.nnz = nnz; a.head_dim = D; a.num_qo_heads = Hq; a.num_kv_heads = Hk;
  a.q = din[0]; a.q_stride_n = sn[0]; a.q_stride_h = sh[0]; a.q_out = dout[0]; a.q_out_stride_n = osn[0]; a.q_out_stride_h = osh[0];
  a.k = din[1]; a.k_stride_n = sn[1]; a.k_stride_h = sh[1]; a.k_out = dout[1]; a.k_out_stride_n = osn[1]; a.k_out_stride_h = osh[1];
  if (batch > 0) { a.batch = batch; a.indptr = (const int32_t *)dind; a.offsets = (const int32_t *)doff; }
  else a.pos_ids = (const int32_t *)dpos;
  a.rope.mode = llama ? KG_ROPE_LLAMA31 : KG_ROPE_DEFAULT;
  a.rope.interleave = interleave;
  a.rope.rotary_dim = rd;
  if (llama) { a.rope.scale = 8.0f; a.rope.theta = 500000.0f; }
  case_begin("%s D=%d rd=%d interleave=%d llama=%d Hq=%d Hk=%d nnz=%d batch=%d in_place=%d", v->name, D, rd, interleave,
             llama, Hq, Hk, nnz, batch, in_place);
  kg_exec e = exec_for(v->name);
  kg_status st = kg_rope_apply(&a, &e);
  dev_sync();
  if (expect_status(st, KG_SUCCESS, "kg_rope_apply")) {
    double f[128], x[AR_MAX_D], y[AR_MAX_D], err[AR_MAX_D];
    ar_rope_freqs(&a.rope, D, f);
    const int r = rd ? rd : D;
    for (int op = 0; op < 2; op++) {
      d2h(hout[op], dout[op], (size_t)nout[op] * es);
      for (int n = 0; n < nnz; n++)
        for (int h = 0; h < heads[op]; h++) {
          for (int i = 0; i < D; i++) x[i] = ar_get(hin[op], t, n * sn[op] + h * sh[op] + i);
          ar_rope_row(x, y, err, D, r, interleave, f, (double)pos[n]);
          for (int i = 0; i < D; i++) {
            const double got = ar_get(hout[op], t, n * osn[op] + h * osh[op] + i);
            const double tol = i < r ? ar_unit(t) * fabs(y[i]) + err[i] : 0.0;
            if (!(fabs(got - y[i]) <= tol))
              bad("%s token %d head %d feature %d: %.9g, reference %.9g (bound %.3g)", op ? "k" : "q", n, h, i, got, y[i], tol);
          }
        }
      for (int64_t i = 0; i < nout[op]; i++) {
        const int64_t n = i / osn[op], rr = i % osn[op], h = rr / osh[op], ff = rr % osh[op];
        if (!(n >= nnz || h >= heads[op] || ff >= D)) continue;
        const int ok = in_place ? memcmp((char *)hout[op] + i * es, (char *)hin[op] + i * es, es) == 0 : is_poison(hout[op], t, i);
        if (!ok) { bad("%s gap element %lld written", op ? "k" : "q", (long long)i); break; }
      }
    }
  }
  case_end();
  for (int op = 0; op < 2; op++) {
    if (!in_place) dev_free(dout[op]);
    dev_free(din[op]);
    free(hin[op]);
    free(hout[op]);
  }
  dev_free(dpos); dev_free(dind); dev_free(doff);
  free(pos); free(indptr); free(offs);
}

static void rope_cases(const avar *v) {
  static const int DS[] = { 64, 96, 128, 256 };
  for (int i = 0; i < 32; i++) {
    const int D = DS[i % 4];
    rope_case(v, D, i % 3 == 1 ? D / 2 : i % 3 == 2 ? D - 32 : 0, (i / 4) % 2, (i / 8) % 2, i % 5 == 0 ? 7 : 32,
              i % 5 == 0 ? 1 : 8, 1 + (i * 13) % 61, i % 2 ? 1 + i % 5 : 0, (i / 16) % 2, 0x40de0000ull + (uint64_t)i);
  }
}

/* ---- append ----------------------------------------------------------------------------------------- */

static void append_config(const avar *v, int64_t H, int64_t P, int64_t D, int64_t batch, int64_t pad, uint64_t seed) {
  const kg_dtype t = v->t;
  const kg_kv_layout l = (kg_kv_layout)v->layout;
  const size_t es = kg_dtype_size(t);
  const int rounds = 6;
  const int64_t chunk_max = 9, max_len = rounds * chunk_max;
  const int64_t num_pages = batch * ((max_len + P - 1) / P) + 5, sp = H * P * D + pad;
  const size_t bytes = (size_t)(num_pages * sp) * es;
  void *hk = xmalloc(bytes), *hv = xmalloc(bytes), *ck = xmalloc(bytes), *cv = xmalloc(bytes);
  for (int64_t i = 0; i < num_pages * sp; i++) {
    ar_put(hk, t, i, 1000.0 + (double)(i % 977));
    ar_put(hv, t, i, -1000.0 - (double)(i % 983));
  }
  memcpy(ck, hk, bytes);
  memcpy(cv, hv, bytes);
  void *dk = up(hk, bytes), *dv = up(hv, bytes);
  int32_t *free_list = (int32_t *)xmalloc((size_t)num_pages * 4), *indices = (int32_t *)xmalloc((size_t)num_pages * 4);
  int32_t *indptr = (int32_t *)xmalloc((size_t)(batch + 1) * 4), *last = (int32_t *)xmalloc((size_t)batch * 4);
  int32_t **pages = (int32_t **)xmalloc((size_t)batch * sizeof *pages);
  int64_t *npages = (int64_t *)xmalloc((size_t)batch * 8), *len = (int64_t *)xmalloc((size_t)batch * 8), nfree = num_pages;
  for (int64_t b = 0; b < batch; b++) pages[b] = (int32_t *)xmalloc((size_t)num_pages * 4);
  for (int64_t i = 0; i < num_pages; i++) free_list[i] = (int32_t)i;
  for (int64_t i = num_pages - 1; i > 0; i--) {
    const int64_t j = ar_int(&seed, 0, i);
    const int32_t x = free_list[i]; free_list[i] = free_list[j]; free_list[j] = x;
  }
  void *dind = dev_alloc((size_t)num_pages * 4), *dptr = dev_alloc((size_t)(batch + 1) * 4), *dlast = dev_alloc((size_t)batch * 4);
  case_begin("%s H=%lld P=%lld D=%lld batch=%lld pad=%lld", v->name, (long long)H, (long long)P, (long long)D,
             (long long)batch, (long long)pad);
  for (int r = 0; r < rounds && !g_errs; r++) {
    const int decode = r % 2 == 1;
    int64_t nnz = 0, *add = (int64_t *)xmalloc((size_t)batch * 8);
    for (int64_t b = 0; b < batch; b++) { add[b] = decode ? 1 : ar_int(&seed, 0, chunk_max); nnz += add[b]; }
    int32_t *bi = (int32_t *)xmalloc((size_t)nnz * 4 + 4), *pos = (int32_t *)xmalloc((size_t)nnz * 4 + 4);
    int64_t n = 0;
    for (int64_t b = 0; b < batch; b++)
      for (int64_t i = 0; i < add[b]; i++, n++) { bi[n] = (int32_t)b; pos[n] = (int32_t)(len[b] + i); }
    if (!decode)
      for (int64_t i = nnz - 1; i > 0; i--) {
        const int64_t j = ar_int(&seed, 0, i);
        int32_t x = bi[i]; bi[i] = bi[j]; bi[j] = x;
        x = pos[i]; pos[i] = pos[j]; pos[j] = x;
      }
    for (int64_t b = 0; b < batch; b++) {
      len[b] += add[b];
      while (npages[b] * P < len[b]) pages[b][npages[b]++] = free_list[--nfree];
    }
    int64_t k = 0;
    for (int64_t b = 0; b < batch; b++) {
      indptr[b] = (int32_t)k;
      for (int64_t i = 0; i < npages[b]; i++) indices[k++] = pages[b][i];
      last[b] = len[b] ? (int32_t)(len[b] - (len[b] - 1) / P * P) : 0;
    }
    indptr[batch] = (int32_t)k;
    h2d(dind, indices, (size_t)num_pages * 4);
    h2d(dptr, indptr, (size_t)(batch + 1) * 4);
    h2d(dlast, last, (size_t)batch * 4);
    const int64_t shh = D + 2, snn = H * shh + 1;
    void *kn = xmalloc((size_t)(nnz * snn + 1) * es), *vn = xmalloc((size_t)(nnz * snn + 1) * es);
    for (int64_t i = 0; i < nnz * snn + 1; i++) { ar_put(kn, t, i, ar_sym(&seed)); ar_put(vn, t, i, ar_sym(&seed)); }
    for (int64_t i = 0; i < nnz; i++) {
      const int64_t page = pages[bi[i]][pos[i] / P];
      for (int64_t h = 0; h < H; h++) {
        const int64_t off = ar_kv_offset(l, H, P, D, pad ? sp : 0, page, h, pos[i] % P);
        memcpy((char *)ck + off * es, (char *)kn + (i * snn + h * shh) * es, (size_t)D * es);
        memcpy((char *)cv + off * es, (char *)vn + (i * snn + h * shh) * es, (size_t)D * es);
      }
    }
    void *dkn = up(kn, (size_t)(nnz * snn + 1) * es), *dvn = up(vn, (size_t)(nnz * snn + 1) * es);
    void *dbi = up(bi, (size_t)nnz * 4 + 4), *dpos = up(pos, (size_t)nnz * 4 + 4);
    kg_paged_kv_append_args a;
    memset(&a, 0, sizeof a);
    a.kv.layout = l; a.kv.dtype = t; a.kv.num_pages = num_pages; a.kv.page_size = P; a.kv.num_kv_heads = H;
    a.kv.head_dim = D; a.kv.k_data = dk; a.kv.v_data = dv; a.kv.stride_page = pad ? sp : 0; a.kv.batch = batch;
    a.kv.indices = (const int32_t *)dind; a.kv.indptr = (const int32_t *)dptr; a.kv.last_page_len = (const int32_t *)dlast;
    a.nnz = nnz; a.k = dkn; a.k_stride_n = snn; a.k_stride_h = shh; a.v = dvn; a.v_stride_n = snn; a.v_stride_h = shh;
    kg_exec e = exec_for(v->name);
    kg_status st;
    if (decode) st = kg_paged_kv_append_decode(&a, &e);
    else {
      a.batch_indices = (const int32_t *)dbi; a.positions = (const int32_t *)dpos;
      st = kg_paged_kv_append(&a, &e);
    }
    dev_sync();
    if (expect_status(st, KG_SUCCESS, decode ? "kg_paged_kv_append_decode" : "kg_paged_kv_append")) {
      d2h(hk, dk, bytes);
      d2h(hv, dv, bytes);
      if (memcmp(hk, ck, bytes) != 0 || memcmp(hv, cv, bytes) != 0) {
        int64_t i = 0;
        while (i < (int64_t)(bytes / es) && memcmp((char *)hk + i * es, (char *)ck + i * es, es) == 0 &&
               memcmp((char *)hv + i * es, (char *)cv + i * es, es) == 0) i++;
        bad("round %d (%s, %lld tokens): cache element %lld differs from the CPU copy", r, decode ? "decode" : "ragged",
            (long long)nnz, (long long)i);
      }
    }
    dev_free(dkn); dev_free(dvn); dev_free(dbi); dev_free(dpos);
    free(kn); free(vn); free(bi); free(pos); free(add);
  }
  case_end();
  for (int64_t b = 0; b < batch; b++) free(pages[b]);
  free(pages); free(npages); free(len); free(free_list); free(indices); free(indptr); free(last);
  free(hk); free(hv); free(ck); free(cv);
  dev_free(dk); dev_free(dv); dev_free(dind); dev_free(dptr); dev_free(dlast);
}

static void append_cases(const avar *v) {
  static const int64_t PS[] = { 1, 3, 7, 16, 17 }, BS[] = { 1, 3, 7, 23 }, DS[] = { 64, 128, 256 };
  int c = 0;
  for (int pi = 0; pi < 5; pi++)
    for (int bi = 0; bi < 4; bi++, c++)
      append_config(v, 1 + c % 4, PS[pi], DS[c % 3], BS[bi], c % 7 == 3 ? 40 : 0, 0x9a9e0000ull + (uint64_t)c);
}

/* ---- decode ----------------------------------------------------------------------------------------- */

typedef struct dcase {
  int Hq, Hk;
  int64_t P;               /* 0: single decode */
  int batch;
  const int64_t *lens;
  int rope, interleave, rd;
  int64_t window;
  double cap;
  int64_t chunk;
  int64_t max_len_delta;
  int qpos;
  int nan_key;             /* 1: a NaN in one key of the last request, kv head 0 */
} dcase;

/* The reference of one decode case per query head bh = b * Hq + h: o and its bounds (D each), lse and
** its bound, and whether the head's keys hold a NaN; query heads split over threads (par_for), each
** part gathering a kv head's tokens once for the query heads of its group. */
typedef struct attn_ref {
  const dcase *c;
  const ar_cache *kc;
  const void *q;
  kg_dtype t;
  int D, Hq, Hk;
  int64_t q_sn, q_sh, maxlen;
  const double *freq;
  const int32_t *qpos;
  double *ro, *tol, *rl, *rlt;
  int *nan_head;
} attn_ref;

static void attn_ref_part(void *ctx, int64_t lo, int64_t hi) {
  const attn_ref *r = (const attn_ref *)ctx;
  const dcase *c = r->c;
  const int D = r->D, G = r->Hq / r->Hk;
  const size_t kv_bytes = (size_t)(r->maxlen ? r->maxlen : 1) * D * 8;   /* one kv head's tokens */
  double *K = (double *)xmalloc(kv_bytes), *V = (double *)xmalloc(kv_bytes);
  double qd[AR_MAX_D];
  int64_t have = -1, w0 = 0, L = 0;   /* have: the b * Hk + hk whose tokens K, V hold */
  int nan_head = 0;
  for (int64_t bh = lo; bh < hi; bh++) {
    const int b = (int)(bh / r->Hq), h = (int)(bh % r->Hq), hk = h / G;
    if (have != (int64_t)b * r->Hk + hk) {
      have = (int64_t)b * r->Hk + hk;
      L = c->lens[b];
      w0 = c->window > 0 && L > c->window ? L - c->window : 0;
      ar_cache_gather(r->kc, b, hk, w0, L, K, V);
      nan_head = 0;
      for (int64_t i = 0; i < (L - w0) * D; i++) nan_head |= isnan(K[i]);
    }
    for (int f = 0; f < D; f++) qd[f] = ar_get(r->q, r->t, b * r->q_sn + h * r->q_sh + f);
    /* kg.h: CUDA's tensor-core decode (head_dim <= 128, group <= 16, no RoPE) rounds the weights */
    const double eps_w = !c->rope && G <= 16 && D <= 128 ? ar_unit(r->t) : 0.0;
    ar_attn_opts op = { D, 1.0 / sqrt((double)D), c->cap, c->rope ? (c->rd ? c->rd : D) : 0, c->interleave, r->freq,
                        c->qpos ? (double)r->qpos[b] : (double)(L - 1), ldexp(1.0, -20), r->t, eps_w };
    ar_attend(&op, qd, K, V, L - w0, w0, r->ro + bh * D, &r->rl[bh], r->tol + bh * D, &r->rlt[bh]);
    r->nan_head[bh] = nan_head;
  }
  free(K);
  free(V);
}

static void decode_case(const avar *v, const dcase *c, uint64_t seed) {
  const kg_dtype t = v->t;
  const kg_kv_layout l = (kg_kv_layout)v->layout;
  const int D = v->D, Hq = c->Hq, Hk = c->Hk;
  const int single = c->P == 0;
  const int batch = single ? 1 : c->batch;
  const size_t es = kg_dtype_size(t);
  int64_t maxlen = 0;
  for (int b = 0; b < batch; b++) if (c->lens[b] > maxlen) maxlen = c->lens[b];
  ar_cache kc;
  ar_cache_build(&kc, l, t, Hk, single ? c->lens[0] : c->P, D, batch, c->lens, single ? 0 : 3, 0, seed);
  if (c->nan_key) ar_put(kc.k, t, ar_cache_offset(&kc, batch - 1, c->lens[batch - 1] / 2, 0) + 3, NAN);
  const int64_t q_sh = single ? D : D + 8, q_sn = single ? (int64_t)Hq * D : Hq * q_sh + 16;
  const int64_t o_sh = single ? D : D + 8, o_sn = single ? (int64_t)Hq * D : Hq * o_sh + 8;
  const int64_t qn = batch * q_sn, on = batch * o_sn, ln = batch * Hq + 4;
  void *q = xmalloc((size_t)qn * es), *o = xmalloc((size_t)on * es);
  float *lse = (float *)xmalloc((size_t)ln * 4);
  poison(q, t, qn);
  poison(o, t, on);
  poison(lse, KG_F32, ln);
  for (int b = 0; b < batch; b++)
    for (int h = 0; h < Hq; h++)
      for (int f = 0; f < D; f++) ar_put(q, t, b * q_sn + h * q_sh + f, 2.5 * ar_sym(&seed));
  int32_t *qpos = (int32_t *)xmalloc((size_t)batch * 4);
  for (int b = 0; b < batch; b++) qpos[b] = (int32_t)ar_int(&seed, 0, 6000);
  void *dk = up(kc.k, kc.bytes), *dv = up(kc.v, kc.bytes), *dq = up(q, (size_t)qn * es), *dout = up(o, (size_t)on * es);
  float *dlse = (float *)up(lse, (size_t)ln * 4);
  void *dind = up(kc.indices, (size_t)(kc.indptr[batch] ? kc.indptr[batch] : 1) * 4);
  void *dptr = up(kc.indptr, (size_t)(batch + 1) * 4), *dlast = up(kc.last, (size_t)batch * 4);
  void *dqpos = up(qpos, (size_t)batch * 4);
  kg_decode_params pr;
  memset(&pr, 0, sizeof pr);
  pr.logits_soft_cap = (float)c->cap;
  pr.sliding_window = c->window;
  pr.kv_chunk_size = c->chunk;
  if (c->rope) {
    pr.rope.mode = c->rope == 1 ? KG_ROPE_DEFAULT : KG_ROPE_LLAMA31;
    pr.rope.interleave = c->interleave;
    pr.rope.rotary_dim = c->rd;
    if (c->rope == 2) { pr.rope.scale = 8.0f; pr.rope.theta = 500000.0f; }
  }
  kg_decode_args ba;
  kg_decode_single_args sa;
  memset(&ba, 0, sizeof ba);
  memset(&sa, 0, sizeof sa);
  kg_decode_plan_info plan;
  kg_exec e = exec_for(v->name);
  kg_status st;
  if (single) {
    sa.dtype = t; sa.layout = l; sa.num_qo_heads = Hq; sa.num_kv_heads = Hk; sa.head_dim = D; sa.kv_len = c->lens[0];
    sa.q = dq; sa.k = dk; sa.v = dv; sa.o = dout; sa.lse = dlse; sa.q_rope_pos = c->qpos ? qpos[0] : -1;
    sa.params = pr;
    st = kg_decode_single_plan(&sa, &e, &plan);
  } else {
    ba.num_qo_heads = Hq; ba.q = dq; ba.q_stride_n = q_sn; ba.q_stride_h = q_sh;
    ba.o = dout; ba.o_stride_n = o_sn; ba.o_stride_h = o_sh; ba.lse = dlse;
    ba.kv = ar_cache_desc(&kc, dk, dv, (const int32_t *)dind, (const int32_t *)dptr, (const int32_t *)dlast);
    ba.q_rope_pos = c->qpos ? (const int32_t *)dqpos : NULL;
    ba.max_kv_len = maxlen + c->max_len_delta > 0 ? maxlen + c->max_len_delta : 0;
    ba.params = pr;
    st = kg_decode_plan(&ba, &e, &plan);
  }
  case_begin("%s %s Hq=%d Hk=%d P=%lld batch=%d len0=%lld rope=%d/%d/%d window=%lld cap=%g chunk=%lld qpos=%d nan=%d",
             v->name, single ? "single" : "batch", Hq, Hk, (long long)c->P, batch, (long long)c->lens[0], c->rope,
             c->interleave, c->rd, (long long)c->window, c->cap, (long long)c->chunk, c->qpos, c->nan_key);
  void *ws = NULL;
  if (expect_status(st, KG_SUCCESS, "plan")) {
    if (plan.workspace_bytes) {
      float *hw = (float *)xmalloc(plan.workspace_bytes);
      poison(hw, KG_F32, (int64_t)(plan.workspace_bytes / 4));
      ws = up(hw, plan.workspace_bytes);
      free(hw);
      e.workspace = ws;
      e.workspace_size = plan.workspace_bytes;
    }
    st = single ? kg_decode_single(&sa, &e) : kg_decode_batch(&ba, &e);
    dev_sync();
  }
  if (expect_status(st, KG_SUCCESS, single ? "kg_decode_single" : "kg_decode_batch")) {
    d2h(o, dout, (size_t)on * es);
    d2h(lse, dlse, (size_t)ln * 4);
    double freq[128];
    if (c->rope) ar_rope_freqs(&pr.rope, D, freq);
    const int64_t heads = (int64_t)batch * Hq;
    attn_ref r = { c, &kc, q, t, D, Hq, Hk, q_sn, q_sh, maxlen, freq, qpos,
                   (double *)xmalloc((size_t)heads * D * 8), (double *)xmalloc((size_t)heads * D * 8),
                   (double *)xmalloc((size_t)heads * 8), (double *)xmalloc((size_t)heads * 8), (int *)xmalloc((size_t)heads * sizeof(int)) };
    int64_t work = 0;
    for (int b = 0; b < batch; b++) work += c->lens[b] * Hq * D * 4;
    par_for(heads, work, attn_ref_part, &r);
    for (int b = 0; b < batch; b++)
      for (int h = 0; h < Hq; h++) {
        const int64_t bh = (int64_t)b * Hq + h;
        const double *ro = r.ro + bh * D, *tol = r.tol + bh * D, rl = r.rl[bh], rlt = r.rlt[bh];
        const int nan_head = r.nan_head[bh];
        for (int f = 0; f < D; f++) {
          const double got = ar_get(o, t, b * o_sn + h * o_sh + f);
          const int ok = nan_head ? isnan(got) : fabs(got - ro[f]) <= tol[f];
          if (!ok) bad("b=%d h=%d f=%d: o %.9g, reference %.9g (bound %.3g)", b, h, f, got, ro[f], tol[f]);
        }
        const double gl = lse[bh];
        const int ok = nan_head ? isnan(gl) : isinf(rl) ? gl == rl : fabs(gl - rl) <= rlt;
        if (!ok) bad("b=%d h=%d: lse %.9g, reference %.9g (bound %.3g)", b, h, gl, rl, rlt);
      }
    free(r.ro); free(r.tol); free(r.rl); free(r.rlt); free(r.nan_head);
    for (int b = 0; b < batch; b++)
      for (int64_t i = 0; i < o_sn; i++)
        if ((i / o_sh >= Hq || i % o_sh >= D) && !is_poison(o, t, b * o_sn + i)) { bad("o gap %lld of request %d written", (long long)i, b); break; }
    for (int64_t i = batch * Hq; i < ln; i++) if (!is_poison(lse, KG_F32, i)) bad("lse[%lld] past the end written", (long long)i);
  }
  case_end();
  if (ws) dev_free(ws);
  dev_free(dk); dev_free(dv); dev_free(dq); dev_free(dout); dev_free(dlse); dev_free(dind); dev_free(dptr); dev_free(dlast);
  dev_free(dqpos);
  free(q); free(o); free(lse); free(qpos);
  ar_cache_free(&kc);
}

static const int64_t LENS[] = { 1, 3, 27, 129, 257, 1024, 4096, 32768 };
static const int HEADS[][2] = { { 32, 1 }, { 32, 4 }, { 32, 8 }, { 32, 32 }, { 10, 2 }, { 12, 2 }, { 7, 1 } };

static void decode_cases(const avar *v) {
  int i = 0;
  /* single: every length x every head configuration, options cycling */
  for (int li = 0; li < 8; li++)
    for (int hi = 0; hi < 7; hi++, i++) {
      int64_t len = LENS[li];
      dcase c;
      memset(&c, 0, sizeof c);
      c.Hq = HEADS[hi][0]; c.Hk = HEADS[hi][1]; c.lens = &len;
      c.rope = i % 3; c.interleave = (i / 3) % 2; c.rd = c.rope && i % 4 == 3 ? v->D / 2 : 0;
      c.window = i % 5 == 4 ? 100 : 0;
      c.cap = i % 7 == 5 ? 30.0 : 0.0;
      c.chunk = i % 6 == 1 ? 100 : 0;
      c.qpos = i % 4 == 1;
      decode_case(v, &c, 0xdec0de00ull + (uint64_t)i);
    }
  /* batch over paged caches */
  static const int64_t PS[] = { 1, 7, 16 };
  static const int BATCH[] = { 1, 3, 7, 17, 64 };
  int64_t lens[64];
  uint64_t r = 0xba7c4ull + (uint64_t)v->D;
  for (int j = 0; j < 20; j++, i++) {
    dcase c;
    memset(&c, 0, sizeof c);
    c.Hq = HEADS[(j + 2) % 7][0]; c.Hk = HEADS[(j + 2) % 7][1];
    c.P = PS[j % 3];
    c.batch = BATCH[(j / 3) % 5];
    for (int b = 0; b < c.batch; b++) lens[b] = ar_int(&r, 1, j % 5 == 0 ? 3000 : 400);
    if (c.batch > 2) lens[1] = 0;
    if (j % 6 == 5) lens[0] = 9000;
    c.lens = lens;
    c.rope = (j / 2) % 3; c.interleave = j % 2; c.rd = c.rope && j % 5 == 2 ? v->D - 16 : 0;
    c.window = j % 4 == 3 ? 57 : 0;
    c.cap = j % 5 == 1 ? 20.0 : 0.0;
    c.chunk = j % 3 == 1 ? 64 : j % 3 == 2 ? 129 : 0;
    c.max_len_delta = j % 4 == 0 ? 0 : j % 4 == 1 ? 100 : -50;
    c.qpos = j % 2;
    c.nan_key = j == 7;
    decode_case(v, &c, 0xba7c0000ull + (uint64_t)j);
  }
#ifndef KG_GPU_TEST_HOST
  /* misaligned K (2 bytes off 16): refused, nothing launched */
  {
    int64_t len = 64;
    ar_cache kc;
    ar_cache_build(&kc, (kg_kv_layout)v->layout, v->t, 2, 16, v->D, 1, &len, 0, 0, 5);
    char *dk = (char *)dev_alloc(kc.bytes + 16), *dvv = (char *)dev_alloc(kc.bytes);
    void *dq = dev_alloc((size_t)8 * v->D * 2), *dout = dev_alloc((size_t)8 * v->D * 2);
    void *dind = up(kc.indices, 4), *dptr = up(kc.indptr, 8), *dlast = up(kc.last, 4);
    kg_decode_args a;
    memset(&a, 0, sizeof a);
    a.num_qo_heads = 8; a.q = dq; a.q_stride_n = 8 * v->D; a.q_stride_h = v->D;
    a.o = dout; a.o_stride_n = 8 * v->D; a.o_stride_h = v->D;
    a.kv = ar_cache_desc(&kc, dk + 2, dvv, (const int32_t *)dind, (const int32_t *)dptr, (const int32_t *)dlast);
    kg_exec e = exec_for(v->name);
    case_begin("%s misaligned k", v->name);
    expect_status(kg_decode_batch(&a, &e), KG_ERROR_MISALIGNED_OPERAND, "kg_decode_batch");
    dev_sync();
    case_end();
    dev_free(dk); dev_free(dvv); dev_free(dq); dev_free(dout); dev_free(dind); dev_free(dptr); dev_free(dlast);
    ar_cache_free(&kc);
  }
#endif
}

/* ---- merge ------------------------------------------------------------------------------------------ */

static void merge_cases(const avar *v) {
  static const int64_t KS[] = { 0, 1, 2, 9, 81, 513 };
  const kg_dtype t = v->t;
  const size_t es = kg_dtype_size(t);
  for (int c = 0; c < 6; c++) {
    const int64_t K = KS[c], n = 5, H = 3, D = 72;
    uint64_t s = 0x3e7eull + (uint64_t)c;
    const int64_t rows = n * K;
    void *hv = xmalloc((size_t)(rows * H * D + 1) * es), *ho = xmalloc((size_t)(n * H * D) * es), *ho2 = xmalloc((size_t)(n * H * D) * es);
    float *hs = (float *)xmalloc((size_t)(rows * H + 1) * 4), *hso = (float *)xmalloc((size_t)(n * H) * 4);
    float *hso2 = (float *)xmalloc((size_t)(n * H) * 4);
    for (int64_t i = 0; i < rows * H * D; i++) ar_put(hv, t, i, 2.0 * ar_sym(&s));
    for (int64_t i = 0; i < rows * H; i++) hs[i] = c % 2 && ar_uniform(&s) < 0.6 ? -INFINITY : (float)(20.0 * ar_sym(&s));
    poison(ho, t, n * H * D);
    poison(hso, KG_F32, n * H);
    void *dv = up(hv, (size_t)(rows * H * D + 1) * es), *dout = up(ho, (size_t)(n * H * D) * es);
    float *ds = (float *)up(hs, (size_t)(rows * H + 1) * 4), *dso = (float *)up(hso, (size_t)(n * H) * 4);
    int32_t ip[6] = { 0, (int32_t)K, (int32_t)(2 * K), (int32_t)(3 * K), (int32_t)(4 * K), (int32_t)(5 * K) };
    void *dip = up(ip, sizeof ip);
    kg_exec e = exec_for(v->name);
    case_begin("%s merge_states K=%lld", v->name, (long long)K);
    kg_merge_states_args a = { t, n, K, H, D, dv, ds, dout, dso };
    kg_status st = kg_merge_states(&a, &e);
    dev_sync();
    if (expect_status(st, KG_SUCCESS, "kg_merge_states")) {
      d2h(ho, dout, (size_t)(n * H * D) * es);
      d2h(hso, dso, (size_t)(n * H) * 4);
      const double **vp = (const double **)xmalloc((size_t)(K + 1) * sizeof *vp);
      double *vals = (double *)xmalloc((size_t)(K * D + 1) * 8), *ss = (double *)xmalloc((size_t)(K + 1) * 8), ref[AR_MAX_D], rs;
      for (int64_t r = 0; r < n; r++)
        for (int64_t h = 0; h < H; h++) {
          double m = -INFINITY, w = 0.0;
          for (int64_t i = 0; i < K; i++) {
            ss[i] = hs[(r * K + i) * H + h];
            vp[i] = vals + i * D;
            for (int64_t f = 0; f < D; f++) vals[i * D + f] = ar_get(hv, t, ((r * K + i) * H + h) * D + f);
            if (ss[i] > m) m = ss[i];
          }
          ar_merge(K, vp, ss, D, ref, &rs);
          for (int64_t i = 0; i < K && m > -INFINITY; i++) w += exp2(ss[i] - m);
          for (int64_t f = 0; f < D; f++) {
            double absum = 0.0;
            for (int64_t i = 0; i < K && m > -INFINITY; i++) absum += exp2(ss[i] - m) / w * fabs(vals[i * D + f]);
            const double got = ar_get(ho, t, (r * H + h) * D + f);
            if (!(fabs(got - ref[f]) <= ar_unit(t) * fabs(ref[f]) + ldexp(1.0, -20) * absum))
              bad("row %lld head %lld feature %lld: %.9g, reference %.9g", (long long)r, (long long)h, (long long)f, got, ref[f]);
          }
          const double gl = hso[r * H + h];
          if (!(isinf(rs) ? gl == rs : fabs(gl - rs) <= ldexp(1.0, -20) * (1.0 + fabs(rs))))
            bad("row %lld head %lld: lse %.9g, reference %.9g", (long long)r, (long long)h, gl, rs);
        }
      free(vp); free(vals); free(ss);
      /* the ragged merge with indptr r*K: bit-equal */
      kg_merge_states_varlen_args va = { t, n, H, D, (const int32_t *)dip, dv, ds, dout, dso };
      poison(ho2, t, n * H * D);
      h2d(dout, ho2, (size_t)(n * H * D) * es);
      st = kg_merge_states_varlen(&va, &e);
      dev_sync();
      if (expect_status(st, KG_SUCCESS, "kg_merge_states_varlen")) {
        d2h(ho2, dout, (size_t)(n * H * D) * es);
        d2h(hso2, dso, (size_t)(n * H) * 4);
        if (memcmp(ho2, ho, (size_t)(n * H * D) * es) != 0 || memcmp(hso2, hso, (size_t)(n * H) * 4) != 0)
          bad("the ragged merge differs from the K-way merge");
      }
      /* pairs in place with a mask, against the K-way merge of K = 2 */
      if (K == 2) {
        void *dva = up(hv, (size_t)(n * H * D) * es);
        float *dsa = (float *)up(hs, (size_t)(n * H) * 4);
        /* state 0 of row r is row 2r of hv, state 1 row 2r+1: gather them */
        void *a0 = xmalloc((size_t)(n * H * D) * es), *a1 = xmalloc((size_t)(n * H * D) * es);
        float *s0 = (float *)xmalloc((size_t)(n * H) * 4), *s1 = (float *)xmalloc((size_t)(n * H) * 4);
        for (int64_t r = 0; r < n; r++) {
          memcpy((char *)a0 + (size_t)(r * H * D) * es, (char *)hv + (size_t)(2 * r * H * D) * es, (size_t)(H * D) * es);
          memcpy((char *)a1 + (size_t)(r * H * D) * es, (char *)hv + (size_t)((2 * r + 1) * H * D) * es, (size_t)(H * D) * es);
          memcpy(s0 + r * H, hs + 2 * r * H, (size_t)H * 4);
          memcpy(s1 + r * H, hs + (2 * r + 1) * H, (size_t)H * 4);
        }
        h2d(dva, a0, (size_t)(n * H * D) * es);
        h2d(dsa, s0, (size_t)(n * H) * 4);
        void *db = up(a1, (size_t)(n * H * D) * es);
        float *dsb = (float *)up(s1, (size_t)(n * H) * 4);
        uint8_t mask[5] = { 1, 0, 1, 1, 0 };
        void *dmask = up(mask, 5);
        kg_merge_state_in_place_args ipa = { t, n, H, D, dva, dsa, db, dsb, (const uint8_t *)dmask };
        st = kg_merge_state_in_place(&ipa, &e);
        dev_sync();
        if (expect_status(st, KG_SUCCESS, "kg_merge_state_in_place")) {
          void *got = xmalloc((size_t)(n * H * D) * es);
          float *gs = (float *)xmalloc((size_t)(n * H) * 4);
          d2h(got, dva, (size_t)(n * H * D) * es);
          d2h(gs, dsa, (size_t)(n * H) * 4);
          for (int64_t r = 0; r < n; r++) {
            const void *want = mask[r] ? (char *)ho + (size_t)(r * H * D) * es : (char *)a0 + (size_t)(r * H * D) * es;
            const float *wants = mask[r] ? hso + r * H : s0 + r * H;
            if (memcmp((char *)got + (size_t)(r * H * D) * es, want, (size_t)(H * D) * es) != 0 ||
                memcmp(gs + r * H, wants, (size_t)H * 4) != 0)
              bad("in place, row %lld (mask %d) differs from the %s", (long long)r, mask[r], mask[r] ? "K-way merge" : "input");
          }
          free(got); free(gs);
        }
        dev_free(dva); dev_free(dsa); dev_free(db); dev_free(dsb); dev_free(dmask);
        free(a0); free(a1); free(s0); free(s1);
      }
    }
    case_end();
    dev_free(dv); dev_free(dout); dev_free(ds); dev_free(dso); dev_free(dip);
    free(hv); free(ho); free(ho2); free(hs); free(hso); free(hso2);
  }
}

/* ---- main ------------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!kg_backend_available(BACKEND)) {
    printf("FAIL the kg %s backend is not available (not compiled in, or no GPU)\n", kg_backend_string(BACKEND));
    g_fail++;
    summary();
    return 1;
  }
#ifdef KG_GPU_TEST_HOST
  printf("test_gpu_attn: HOST BUILD (KG_GPU_TEST_HOST): C-backend variants, host memory\n");
#else
  int dev = 0;
  struct cudaDeviceProp prop;
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("test_gpu_attn: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
#endif
  int count[N_OPS] = { 0 }, nv = 0;
  avar *vars = (avar *)xmalloc((size_t)(kg_variant_count() + 1) * sizeof *vars);
  for (int i = 0; i < kg_variant_count(); i++) {
    const char *name = kg_variant_name(i);
    if (strncmp(name, VPREFIX, strlen(VPREFIX)) != 0) continue;
    if (only && !strstr(name, only)) continue;
    if (!parse_variant(name, &vars[nv])) {
      printf("FAIL %s: cannot parse the variant name\n", name);
      g_fail++;
      continue;
    }
    count[vars[nv].op]++;
    nv++;
  }
  printf("%d attention variants (%s*): %d math, %d rope, %d append, %d decode, %d merge\n", nv, VPREFIX, count[OP_MATH],
         count[OP_ROPE], count[OP_APPEND], count[OP_DECODE], count[OP_MERGE]);
  for (int op = 0; op < N_OPS && !only; op++)
    if (count[op] == 0) {
      printf("FAIL no %s%s variant compiled in\n", VPREFIX, OP_NAMES[op]);
      g_fail++;
    }
  for (int i = 0; i < nv; i++) {
    const int p0 = g_pass, f0 = g_fail;
    switch (vars[i].op) {
      case OP_MATH: math_cases(&vars[i]); break;
      case OP_ROPE: rope_cases(&vars[i]); break;
      case OP_APPEND: append_cases(&vars[i]); break;
      case OP_DECODE: decode_cases(&vars[i]); break;
      case OP_MERGE: merge_cases(&vars[i]); break;
    }
    printf("%s: %d passed, %d failed\n", vars[i].name, g_pass - p0, g_fail - f0);
  }
  free(vars);
#ifndef KG_GPU_TEST_HOST
  CK(cudaStreamDestroy(g_stream));
#endif
  summary();
  return g_fail ? 1 : 0;
}
