/*
** check_attn_rope.c -- PosEncTest: kg_rope_apply on the C backend against the
** double reference of attn_ref.h (frequencies from kg.h's formula in double,
** cos / sin in double), both pairings (non-interleaved: i with i + d/2;
** interleaved: 2j with 2j+1), the default and the Llama 3.1 frequencies,
** full and partial rotary_dim, positions by id and by request offsets (ragged
** requests), q and k with different head counts and strided rows, in place
** and out of place, f32 / f16 / bf16, positions up to 40000 (large angles).
** Bound per element (attn_ref.h): u |ref| + (|x_lo| + |x_hi|)(|angle| 2^-22 +
** 2^-21). Features past rotary_dim are copied exactly (or left alone in
** place); every gap of the outputs keeps its NaN poison.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "test_util.h"

typedef struct rcase {
  kg_dtype t;
  int D, rd, interleave, llama, Hq, Hk;
  int nnz, batch;          /* batch > 0: positions by request offsets */
  int in_place, q_only, k_only;
} rcase;

static void run_rope(const rcase *c, uint64_t seed) {
  const int D = c->D, nnz = c->nnz;
  const size_t es = kg_dtype_size(c->t);
  /* strided rows: head stride D + 3, token stride heads * (D + 3) + 5 */
  const int64_t heads[2] = { c->k_only ? 0 : c->Hq, c->q_only ? 0 : c->Hk };
  void *in[2] = { NULL, NULL }, *out[2] = { NULL, NULL };
  int64_t sh[2], sn[2], osh[2], osn[2];
  for (int op = 0; op < 2; op++) {
    if (!heads[op]) continue;
    sh[op] = D + 3; sn[op] = heads[op] * sh[op] + 5;
    osh[op] = c->in_place ? sh[op] : D; osn[op] = c->in_place ? sn[op] : heads[op] * D + 2;
    in[op] = tu_alloc((size_t)(nnz * sn[op] + 8) * es);
    tu_poison(in[op], c->t, nnz * sn[op] + 8);
    for (int n = 0; n < nnz; n++)
      for (int h = 0; h < heads[op]; h++)
        for (int f = 0; f < D; f++) ar_put(in[op], c->t, n * sn[op] + h * sh[op] + f, 3.0 * ar_sym(&seed));
    if (c->in_place) out[op] = in[op];
    else {
      out[op] = tu_alloc((size_t)(nnz * osn[op] + 8) * es);
      tu_poison(out[op], c->t, nnz * osn[op] + 8);
    }
  }
  /* keep the inputs to compare against */
  double *orig[2] = { NULL, NULL };
  for (int op = 0; op < 2; op++) {
    if (!heads[op]) continue;
    orig[op] = (double *)tu_alloc((size_t)(nnz * sn[op] + 8) * sizeof(double));
    for (int64_t i = 0; i < nnz * sn[op] + 8; i++) orig[op][i] = ar_get(in[op], c->t, i);
  }
  int32_t *pos_ids = (int32_t *)tu_alloc((size_t)nnz * 4 + 4), *indptr = NULL, *offsets = NULL;
  int32_t *pos = (int32_t *)tu_alloc((size_t)nnz * 4 + 4);
  if (c->batch > 0) {
    indptr = (int32_t *)tu_alloc((size_t)(c->batch + 1) * 4);
    offsets = (int32_t *)tu_alloc((size_t)c->batch * 4);
    indptr[0] = 0;
    for (int b = 0; b < c->batch; b++) {
      indptr[b + 1] = b == c->batch - 1 ? nnz : (int32_t)ar_int(&seed, indptr[b], nnz);   /* empty requests too */
      offsets[b] = (int32_t)ar_int(&seed, 0, 40000);
      for (int n = indptr[b]; n < indptr[b + 1]; n++) pos[n] = offsets[b] + (n - indptr[b]);
    }
  } else {
    for (int n = 0; n < nnz; n++) pos[n] = pos_ids[n] = (int32_t)ar_int(&seed, 0, 40000);
  }
  kg_rope_args a;
  memset(&a, 0, sizeof a);
  a.dtype = c->t; a.nnz = nnz; a.head_dim = D; a.num_qo_heads = c->Hq; a.num_kv_heads = c->Hk;
  if (heads[0]) {
    a.q = in[0]; a.q_stride_n = sn[0]; a.q_stride_h = sh[0];
    a.q_out = out[0]; a.q_out_stride_n = osn[0]; a.q_out_stride_h = osh[0];
  }
  if (heads[1]) {
    a.k = in[1]; a.k_stride_n = sn[1]; a.k_stride_h = sh[1];
    a.k_out = out[1]; a.k_out_stride_n = osn[1]; a.k_out_stride_h = osh[1];
  }
  if (c->batch > 0) { a.batch = c->batch; a.indptr = indptr; a.offsets = offsets; }
  else a.pos_ids = pos_ids;
  a.rope.mode = c->llama ? KG_ROPE_LLAMA31 : KG_ROPE_DEFAULT;
  a.rope.interleave = c->interleave;
  a.rope.rotary_dim = c->rd;
  if (c->llama) { a.rope.scale = 8.0f; a.rope.theta = 500000.0f; }
  else if (c->D == 128) a.rope.theta = 1000000.0f;
  kg_exec ex = tu_exec_c();
  char what[256];
  snprintf(what, sizeof what, "%s D=%d rd=%d inter=%d llama=%d Hq=%d Hk=%d nnz=%d batch=%d in_place=%d q_only=%d k_only=%d",
           ar_dtype_name(c->t), D, c->rd, c->interleave, c->llama, c->Hq, c->Hk, nnz, c->batch, c->in_place, c->q_only,
           c->k_only);
  kg_status st = kg_rope_apply(&a, &ex);
  ck_assert_msg(st == KG_SUCCESS, "%s: %s", what, kg_status_string(st));
  double f[128], x[AR_MAX_D], y[AR_MAX_D], err[AR_MAX_D];
  ar_rope_freqs(&a.rope, D, f);
  const int rd = c->rd ? c->rd : D;
  long bad = 0;
  char first[512] = "";
  for (int op = 0; op < 2; op++) {
    if (!heads[op]) continue;
    for (int n = 0; n < nnz; n++)
      for (int h = 0; h < heads[op]; h++) {
        for (int i = 0; i < D; i++) x[i] = orig[op][n * sn[op] + h * sh[op] + i];
        ar_rope_row(x, y, err, D, rd, c->interleave, f, (double)pos[n]);
        for (int i = 0; i < D; i++) {
          const double got = ar_get(out[op], c->t, n * osn[op] + h * osh[op] + i);
          const double tol = i < rd ? ar_unit(c->t) * fabs(y[i]) + err[i] : 0.0;
          if (!(fabs(got - y[i]) <= tol)) {
            if (!bad++)
              snprintf(first, sizeof first, "%s: %s token %d (pos %d) head %d feature %d: %.9g, reference %.9g, bound %.3g",
                       what, op ? "k" : "q", n, pos[n], h, i, got, y[i], tol);
          }
        }
      }
    /* gaps: in place, the input's gaps are unchanged; out of place, the output's stay poison */
    for (int64_t i = 0; i < nnz * osn[op] + 8; i++) {
      const int64_t n = i / osn[op], r = i % osn[op], h = r / osh[op], f = r % osh[op];
      const int gap = n >= nnz || h >= heads[op] || f >= D;
      if (!gap) continue;
      const int ok = c->in_place ? (ar_get(out[op], c->t, i) == orig[op][i] || (isnan(orig[op][i]) &&
                                                                                isnan(ar_get(out[op], c->t, i))))
                                 : tu_is_poison(out[op], c->t, i);
      if (!ok && !bad++) snprintf(first, sizeof first, "%s: %s gap element %lld was written", what, op ? "k" : "q", (long long)i);
    }
  }
  ck_assert_msg(bad == 0, "%ld bad elements; first: %s", bad, first);
  for (int op = 0; op < 2; op++) {
    if (!heads[op]) continue;
    if (!c->in_place) tu_free(out[op]);
    tu_free(in[op]);
    tu_free(orig[op]);
  }
  tu_free(pos_ids); tu_free(pos); tu_free(indptr); tu_free(offsets);
}

START_TEST(test_rope_matrix) {
  static const kg_dtype T[] = { KG_F32, KG_F16, KG_BF16 };
  static const int DS[] = { 64, 128, 256, 96 };
  for (int i = 0; i < 48; i++) {
    rcase c;
    memset(&c, 0, sizeof c);
    c.t = T[i % 3];
    c.D = DS[(i / 3) % 4];
    c.interleave = (i / 12) % 2;
    c.llama = (i / 24) % 2;
    c.rd = i % 4 == 1 ? c.D / 2 : i % 4 == 2 ? c.D - 32 : 0;
    c.Hq = i % 5 == 0 ? 7 : 4;
    c.Hk = i % 5 == 0 ? 1 : 2;
    c.nnz = 1 + (i * 7) % 23;
    c.batch = i % 2 ? 1 + i % 4 : 0;
    c.in_place = i % 3 == 1;
    c.q_only = i % 8 == 5;
    c.k_only = i % 8 == 6;
    run_rope(&c, 0x40de0000ull + (uint64_t)i);
  }
}
END_TEST

/* The Llama 3.1 rule on its own: with the default factors (old context 8192,
** low 1, high 4, scale 8) the lowest frequencies are divided by 8, the highest
** kept, the middle ones interpolated; a case that separates it from the
** default rule (rotating by the default frequencies fails the bound). */
START_TEST(test_llama31_frequencies) {
  kg_rope r;
  memset(&r, 0, sizeof r);
  r.mode = KG_ROPE_LLAMA31; r.scale = 8.0f; r.theta = 500000.0f;
  double f[64], g[64];
  ar_rope_freqs(&r, 128, f);
  r.mode = KG_ROPE_DEFAULT;
  ar_rope_freqs(&r, 128, g);
  ck_assert(fabs(f[0] - 1.0) < 1e-12);                 /* high frequency: kept */
  ck_assert(fabs(f[63] - g[63]) < 1e-18);              /* low frequency: base / 8 */
  int interp = 0;
  for (int j = 0; j < 64; j++) interp += f[j] != g[j] * 8.0 && f[j] != g[j];
  ck_assert_msg(interp > 0, "no frequency in the smoothing band");
  /* rotated with kg's Llama 3.1 frequencies, a q row at position 30000 differs
  ** from the default rotation by far more than the bound */
  float x[128], y[128];
  uint64_t s = 9;
  for (int i = 0; i < 128; i++) x[i] = (float)ar_sym(&s);
  int32_t p = 30000;
  kg_rope_args a;
  memset(&a, 0, sizeof a);
  a.dtype = KG_F32; a.nnz = 1; a.head_dim = 128; a.num_qo_heads = 1;
  a.q = x; a.q_stride_n = 128; a.q_stride_h = 128; a.q_out = y; a.q_out_stride_n = 128; a.q_out_stride_h = 128;
  a.pos_ids = &p;
  a.rope.mode = KG_ROPE_LLAMA31; a.rope.scale = 8.0f; a.rope.theta = 500000.0f;
  kg_exec ex = tu_exec_c();
  ck_assert_int_eq(kg_rope_apply(&a, &ex), KG_SUCCESS);
  double xd[128], yd[128];
  for (int i = 0; i < 128; i++) xd[i] = x[i];
  ar_rope_row(xd, yd, NULL, 128, 128, 0, g, 30000.0);
  double diff = 0.0;
  for (int i = 0; i < 128; i++) diff = fmax(diff, fabs(y[i] - yd[i]));
  ck_assert_msg(diff > 0.1, "Llama 3.1 rotation equals the default one (max diff %g)", diff);
}
END_TEST

START_TEST(test_rope_validation) {
  float q[4 * 64], o[4 * 64];
  int32_t p[4] = { 0, 1, 2, 3 };
  kg_rope_args a;
  memset(&a, 0, sizeof a);
  a.dtype = KG_F32; a.nnz = 4; a.head_dim = 64; a.num_qo_heads = 1;
  a.q = q; a.q_stride_n = 64; a.q_stride_h = 64; a.q_out = o; a.q_out_stride_n = 64; a.q_out_stride_h = 64;
  a.pos_ids = p; a.rope.mode = KG_ROPE_DEFAULT;
  for (int i = 0; i < 4 * 64; i++) q[i] = 1.0f;
  kg_exec ex = tu_exec_c();
  ck_assert_int_eq(kg_rope_apply(&a, &ex), KG_SUCCESS);
  kg_rope_args b = a;
  b.rope.mode = KG_ROPE_NONE;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.rope.rotary_dim = 63;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.rope.rotary_dim = 66;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.rope.theta = -1.0f;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.rope.mode = KG_ROPE_LLAMA31; b.rope.low_freq_factor = 4.0f; b.rope.high_freq_factor = 2.0f;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.q_out = q + 10;   /* partial overlap */
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_PROBLEM);
  b = a; b.q_out = q; b.q_out_stride_h = 65;   /* in place with other strides */
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_PROBLEM);
  b = a; b.q_out_stride_n = 32;   /* output rows overlap */
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_PROBLEM);
  b = a; b.q = NULL;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.num_kv_heads = INT64_MAX; b.k_stride_n = -5;   /* k NULL: its sizes are not looked at */
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_SUCCESS);
  p[2] = -1;
  ck_assert_int_eq(kg_rope_apply(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  int32_t indptr[3] = { 0, 2, 3 }, offs[2] = { 5, 6 };
  b = a; b.pos_ids = NULL; b.batch = 2; b.indptr = indptr; b.offsets = offs;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_PROBLEM);   /* indptr ends at 3, nnz 4 */
  indptr[2] = 4;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_SUCCESS);
  b.indptr = NULL;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_INVALID_ARGUMENT);
  b = a; b.pos_ids = NULL; b.batch = 2; b.indptr = indptr; b.offsets = offs; b.dtype = KG_BF16;
  const char *name = NULL;
  ck_assert_int_eq(kg_attn_select(KG_OP_ROPE, &b, &ex, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_attn_c_rope_bf16");
  /* nothing to do */
  b = a; b.nnz = 0; p[2] = 2;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_SUCCESS);
  /* pointers aligned to their elements: checked before the positions are read */
  b = a; b.q = (const char *)q + 2;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_MISALIGNED_OPERAND);
  b = a; b.dtype = KG_BF16; b.q = (const char *)q + 2; b.q_out = (char *)o + 2;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_SUCCESS);
  b = a; b.pos_ids = (const int32_t *)((const char *)p + 1);
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_MISALIGNED_OPERAND);
  b = a; b.pos_ids = NULL; b.batch = 2; b.indptr = (const int32_t *)((const char *)indptr + 2); b.offsets = offs;
  ck_assert_int_eq(kg_rope_apply(&b, &ex), KG_ERROR_MISALIGNED_OPERAND);
}
END_TEST

Suite *pos_enc_suite(void) {
  Suite *s = suite_create("PosEncTest");
  TCase *tc = tcase_create("rope");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_rope_matrix);
  tcase_add_test(tc, test_llama31_frequencies);
  tcase_add_test(tc, test_rope_validation);
  suite_add_tcase(s, tc);
  return s;
}
