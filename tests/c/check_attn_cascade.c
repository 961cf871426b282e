/*
** check_attn_cascade.c -- CascadeTest: merging softmax states on the C
** backend. Each op against ar_merge (double, kg.h's rule): kg_merge_state,
** kg_merge_state_in_place (with and without a mask), kg_merge_states over K
** in {0, 1, 2, 9, 81, 513} and kg_merge_states_varlen over ragged sets
** (empty rows included); chains of pairwise merges, the K-way merge and the
** ragged merge agree; dense scores, sparse ones (most states -inf, some rows
** all -inf) and wide ranges (lse spread over +-60); K = 1 copies exactly;
** NaN propagates. The cascade identity: decode over a shared prefix merged
** with decode over each request's own suffix equals decode over the whole
** sequence (prefix pages + suffix pages), and both match the reference.
** Bounds: an output feature within u |ref| + 2^-20 sum_i w_i |v_i| (f32 weights
** and sums; the inputs are exact), an lse within 2^-20 (1 + |lse|); -inf and
** NaN exactly where the reference has them.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attn_ref.h"
#include "test_util.h"

/* States: v [rows][H][D] of type t, s [rows][H] with the pattern:
** 0 dense (lse in +-8), 1 sparse (70% -inf), 2 wide (lse in +-60). */
static void fill_states(void *v, float *s, kg_dtype t, int64_t rows, int64_t H, int64_t D, int pattern, uint64_t *seed) {
  for (int64_t i = 0; i < rows * H * D; i++) ar_put(v, t, i, 2.0 * ar_sym(seed));
  for (int64_t i = 0; i < rows * H; i++) {
    const double u = ar_uniform(seed);
    s[i] = pattern == 1 && u < 0.7 ? -INFINITY : (float)((pattern == 2 ? 60.0 : 8.0) * ar_sym(seed));
  }
}

/* Checks out/s_out row r (H x D) against the double merge of cnt states. */
static long check_row(const char *what, int64_t r, kg_dtype t, int64_t H, int64_t D, int64_t cnt,
                      const void *const *vin, const int64_t *vrow, const float *const *sin, const int64_t *srow,
                      const void *out, const float *s_out) {
  long bad = 0;
  double *vals = (double *)tu_alloc((size_t)(cnt * D + 1) * sizeof(double));
  const double *vp[1024];
  double ss[1024], ref[AR_MAX_D], rs;
  ck_assert(cnt <= 1024 && D <= AR_MAX_D);
  for (int64_t h = 0; h < H; h++) {
    for (int64_t i = 0; i < cnt; i++) {
      ss[i] = sin[i][srow[i] * H + h];
      vp[i] = vals + i * D;
      for (int64_t f = 0; f < D; f++) vals[i * D + f] = ar_get(vin[i], t, (vrow[i] * H + h) * D + f);
    }
    ar_merge(cnt, vp, ss, D, ref, &rs);
    double m = -INFINITY, w = 0.0;
    for (int64_t i = 0; i < cnt; i++) if (ss[i] > m) m = ss[i];
    for (int64_t i = 0; i < cnt && m > -INFINITY; i++) w += exp2(ss[i] - m);
    for (int64_t f = 0; f < D; f++) {
      double absum = 0.0;
      for (int64_t i = 0; i < cnt && m > -INFINITY; i++) absum += exp2(ss[i] - m) / w * fabs(vals[i * D + f]);
      const double got = ar_get(out, t, (r * H + h) * D + f);
      const double tol = ar_unit(t) * fabs(ref[f]) + ldexp(1.0, -20) * absum;
      if (!(fabs(got - ref[f]) <= tol) && !bad++)
        ck_abort_msg("%s: row %lld head %lld feature %lld: %.9g, reference %.9g (bound %.3g)", what, (long long)r,
                     (long long)h, (long long)f, got, ref[f], tol);
    }
    if (s_out) {
      const double got = s_out[r * H + h];
      const int ok = isinf(rs) ? got == rs : fabs(got - rs) <= ldexp(1.0, -20) * (1.0 + fabs(rs));
      if (!ok) ck_abort_msg("%s: row %lld head %lld: lse %.9g, reference %.9g", what, (long long)r, (long long)h, got, rs);
    }
  }
  tu_free(vals);
  return bad;
}

START_TEST(test_merge_state_pairs) {
  static const kg_dtype T[] = { KG_F32, KG_F16, KG_BF16 };
  uint64_t seed = 11;
  kg_exec ex = tu_exec_c();
  for (int c = 0; c < 9; c++) {
    const kg_dtype t = T[c % 3];
    const int64_t n = 5 + c, H = 1 + c % 4, D = c % 2 ? 128 : 72;
    const int pattern = c / 3;
    const size_t es = kg_dtype_size(t);
    void *va = tu_alloc((size_t)(n * H * D) * es), *vb = tu_alloc((size_t)(n * H * D) * es);
    void *vo = tu_alloc((size_t)(n * H * D + 8) * es);
    float *sa = (float *)tu_alloc((size_t)(n * H) * 4), *sb = (float *)tu_alloc((size_t)(n * H) * 4);
    float *so = (float *)tu_alloc((size_t)(n * H + 4) * 4);
    fill_states(va, sa, t, n, H, D, pattern, &seed);
    fill_states(vb, sb, t, n, H, D, pattern, &seed);
    sa[0] = sb[0] = -INFINITY;   /* both -inf: 0 and -inf */
    tu_poison(vo, t, n * H * D + 8);
    tu_poison(so, KG_F32, n * H + 4);
    kg_merge_state_args a = { t, n, H, D, va, sa, vb, sb, vo, so };
    ck_assert_int_eq(kg_merge_state(&a, &ex), KG_SUCCESS);
    char what[64];
    snprintf(what, sizeof what, "merge_state %s pattern %d", ar_dtype_name(t), pattern);
    for (int64_t r = 0; r < n; r++) {
      const void *vin[2] = { va, vb };
      const float *sin[2] = { sa, sb };
      const int64_t rows[2] = { r, r };
      check_row(what, r, t, H, D, 2, vin, rows, sin, rows, vo, so);
    }
    for (int i = 0; i < 8; i++) ck_assert(tu_is_poison(vo, t, n * H * D + i));
    for (int i = 0; i < 4; i++) ck_assert(tu_is_poison(so, KG_F32, n * H + i));
    ck_assert(so[0] == -INFINITY && ar_get(vo, t, 0) == 0.0);
    /* in place, masked: rows with mask 0 unchanged, the others merged */
    uint8_t *mask = (uint8_t *)tu_alloc((size_t)n);
    for (int64_t r = 0; r < n; r++) mask[r] = (uint8_t)(r % 3 != 1);
    void *vc = tu_alloc((size_t)(n * H * D) * es);
    float *sc = (float *)tu_alloc((size_t)(n * H) * 4);
    memcpy(vc, va, (size_t)(n * H * D) * es);
    memcpy(sc, sa, (size_t)(n * H) * 4);
    kg_merge_state_in_place_args ip = { t, n, H, D, vc, sc, vb, sb, mask };
    ck_assert_int_eq(kg_merge_state_in_place(&ip, &ex), KG_SUCCESS);
    for (int64_t r = 0; r < n; r++) {
      if (!mask[r]) {
        ck_assert(memcmp((char *)vc + (size_t)(r * H * D) * es, (char *)va + (size_t)(r * H * D) * es, (size_t)(H * D) * es) == 0);
        ck_assert(memcmp(sc + r * H, sa + r * H, (size_t)H * 4) == 0);
      } else {
        /* merged in place: the same bits as the out-of-place merge */
        ck_assert(memcmp((char *)vc + (size_t)(r * H * D) * es, (char *)vo + (size_t)(r * H * D) * es, (size_t)(H * D) * es) == 0);
        ck_assert(memcmp(sc + r * H, so + r * H, (size_t)H * 4) == 0);
      }
    }
    ip.mask = NULL;
    memcpy(vc, va, (size_t)(n * H * D) * es);
    memcpy(sc, sa, (size_t)(n * H) * 4);
    ck_assert_int_eq(kg_merge_state_in_place(&ip, &ex), KG_SUCCESS);
    ck_assert(memcmp(vc, vo, (size_t)(n * H * D) * es) == 0 && memcmp(sc, so, (size_t)(n * H) * 4) == 0);
    tu_free(va); tu_free(vb); tu_free(vo); tu_free(sa); tu_free(sb); tu_free(so); tu_free(mask); tu_free(vc); tu_free(sc);
  }
}
END_TEST

/* K-way, chained pairwise and ragged merges of the same states. */
START_TEST(test_merge_states_k) {
  static const int64_t KS[] = { 0, 1, 2, 9, 81, 513 };
  static const kg_dtype T[] = { KG_F32, KG_F16, KG_BF16 };
  uint64_t seed = 12;
  kg_exec ex = tu_exec_c();
  for (int c = 0; c < 18; c++) {
    const int64_t K = KS[c % 6], n = 3, H = 2, D = 64;
    const kg_dtype t = T[c % 3];
    const int pattern = (c / 6) % 3;
    const size_t es = kg_dtype_size(t);
    void *v = tu_alloc((size_t)(n * K * H * D + 1) * es), *vo = tu_alloc((size_t)(n * H * D) * es);
    void *vr = tu_alloc((size_t)(n * H * D) * es);
    float *s = (float *)tu_alloc((size_t)(n * K * H + 1) * 4), *so = (float *)tu_alloc((size_t)(n * H) * 4);
    float *sr = (float *)tu_alloc((size_t)(n * H) * 4);
    fill_states(v, s, t, n * K, H, D, pattern, &seed);
    if (pattern == 1 && K > 0) for (int64_t i = 0; i < K * H; i++) s[i] = -INFINITY;   /* row 0 all -inf */
    tu_poison(vo, t, n * H * D);
    tu_poison(so, KG_F32, n * H);
    kg_merge_states_args a = { t, n, K, H, D, v, s, vo, so };
    ck_assert_int_eq(kg_merge_states(&a, &ex), KG_SUCCESS);
    char what[64];
    snprintf(what, sizeof what, "merge_states K=%lld %s pattern %d", (long long)K, ar_dtype_name(t), pattern);
    const void *vin[513];
    const float *sin[513];
    int64_t rows[513];
    for (int64_t r = 0; r < n; r++) {
      for (int64_t i = 0; i < K; i++) { vin[i] = v; sin[i] = s; rows[i] = r * K + i; }
      check_row(what, r, t, H, D, K, vin, rows, sin, rows, vo, so);
    }
    if (K == 1) {   /* one state: copied */
      if (pattern != 1) ck_assert(memcmp(vo, v, (size_t)(n * H * D) * es) == 0 && memcmp(so, s, (size_t)(n * H) * 4) == 0);
    }
    if (K == 0) for (int64_t i = 0; i < n * H; i++) ck_assert(so[i] == -INFINITY && ar_get(vo, t, i * D) == 0.0);
    /* the ragged merge with indptr r*K agrees bit for bit */
    int32_t ip[4] = { 0, (int32_t)K, (int32_t)(2 * K), (int32_t)(3 * K) };
    tu_poison(vr, t, n * H * D);
    kg_merge_states_varlen_args va = { t, n, H, D, ip, v, s, vr, sr };
    ck_assert_int_eq(kg_merge_states_varlen(&va, &ex), KG_SUCCESS);
    ck_assert(memcmp(vr, vo, (size_t)(n * H * D) * es) == 0 && memcmp(sr, so, (size_t)(n * H) * 4) == 0);
    /* a chain of pairwise merges (in place, f32 states) lands within the bound of the reference too */
    if (K >= 2 && t == KG_F32) {
      float *cv = (float *)tu_alloc((size_t)(H * D) * 4), *cs = (float *)tu_alloc((size_t)H * 4);
      for (int64_t r = 0; r < n; r++) {
        memcpy(cv, (float *)v + (r * K) * H * D, (size_t)(H * D) * 4);
        memcpy(cs, s + r * K * H, (size_t)H * 4);
        for (int64_t i = 1; i < K; i++) {
          kg_merge_state_in_place_args p = { KG_F32, 1, H, D, cv, cs, (float *)v + (r * K + i) * H * D,
                                             s + (r * K + i) * H, NULL };
          ck_assert_int_eq(kg_merge_state_in_place(&p, &ex), KG_SUCCESS);
        }
        for (int64_t i = 0; i < K; i++) { vin[i] = v; sin[i] = s; rows[i] = r * K + i; }
        /* a chain rounds K - 1 times: compare with a K-scaled bound through check_row on a copy */
        for (int64_t h = 0; h < H; h++)
          for (int64_t f = 0; f < D; f++) {
            const double want = ar_get(vo, KG_F32, (r * H + h) * D + f), got = cv[h * D + f];
            ck_assert_msg(fabs(got - want) <= 4e-7 * (double)K * (1.0 + fabs(want)), "%s chain row %lld: %.9g vs %.9g",
                          what, (long long)r, got, want);
          }
      }
      tu_free(cv); tu_free(cs);
    }
    tu_free(v); tu_free(vo); tu_free(vr); tu_free(s); tu_free(so); tu_free(sr);
  }
}
END_TEST

START_TEST(test_merge_varlen_ragged) {
  uint64_t seed = 13;
  kg_exec ex = tu_exec_c();
  const int64_t n = 9, H = 3, D = 40;
  int32_t ip[10];
  ip[0] = 0;
  for (int r = 0; r < n; r++) ip[r + 1] = ip[r] + (r % 4 == 2 ? 0 : (int32_t)ar_int(&seed, 1, 30));
  const int64_t rows = ip[n];
  float *v = (float *)tu_alloc((size_t)(rows * H * D) * 4), *s = (float *)tu_alloc((size_t)(rows * H) * 4);
  float *vo = (float *)tu_alloc((size_t)(n * H * D) * 4), *so = (float *)tu_alloc((size_t)(n * H) * 4);
  fill_states(v, s, KG_F32, rows, H, D, 0, &seed);
  s[ip[3] * H + 1] = NAN;   /* row 3, head 1: NaN propagates */
  tu_poison(vo, KG_F32, n * H * D);
  kg_merge_states_varlen_args a = { KG_F32, n, H, D, ip, v, s, vo, so };
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_SUCCESS);
  const void *vin[64];
  const float *sin[64];
  int64_t rr[64];
  for (int64_t r = 0; r < n; r++) {
    if (r == 3) continue;
    for (int64_t i = 0; i < ip[r + 1] - ip[r]; i++) { vin[i] = v; sin[i] = s; rr[i] = ip[r] + i; }
    check_row("varlen", r, KG_F32, H, D, ip[r + 1] - ip[r], vin, rr, sin, rr, vo, so);
  }
  for (int64_t f = 0; f < D; f++) ck_assert(isnan(vo[(3 * H + 1) * D + f]));
  ck_assert(isnan(so[3 * H + 1]) && isfinite(so[3 * H]));
  /* refusals: indptr not from 0, decreasing; overlapping output */
  ip[0] = 1;
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  ip[0] = 0;
  const int32_t keep = ip[5];
  ip[5] = ip[4] - 1;
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  ip[5] = keep;
  a.v_out = v + 3;
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  a.v_out = vo; a.s_out = (float *)vo;
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  a.s_out = NULL;   /* lse not written */
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_SUCCESS);
  /* pointers aligned to their elements, checked before indptr is read */
  a.indptr = (const int32_t *)((const char *)ip + 2);
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_ERROR_MISALIGNED_OPERAND);
  a.indptr = ip; a.s = (const float *)((const char *)s + 1);
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_ERROR_MISALIGNED_OPERAND);
  a.s = s; a.v_out = (float *)((char *)vo + 2);
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_ERROR_MISALIGNED_OPERAND);
  a.v_out = vo;
  a.dtype = (kg_dtype)9;
  ck_assert_int_eq(kg_merge_states_varlen(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  kg_merge_states_args m = { KG_F32, 2, -1, H, D, v, s, vo, so };
  ck_assert_int_eq(kg_merge_states(&m, &ex), KG_ERROR_INVALID_ARGUMENT);
  m.num_states = 1; m.s_out = (float *)((char *)so + 2);
  ck_assert_int_eq(kg_merge_states(&m, &ex), KG_ERROR_MISALIGNED_OPERAND);
  kg_merge_state_args pa = { KG_F32, 2, H, D, v, s, v, (const float *)((const char *)s + 2), vo, so };
  ck_assert_int_eq(kg_merge_state(&pa, &ex), KG_ERROR_MISALIGNED_OPERAND);
  kg_merge_state_in_place_args pi = { KG_F32, 2, H, D, (char *)vo + 1, so, v, s, NULL };
  ck_assert_int_eq(kg_merge_state_in_place(&pi, &ex), KG_ERROR_MISALIGNED_OPERAND);
  tu_free(v); tu_free(s); tu_free(vo); tu_free(so);
}
END_TEST

/* Cascade: prefix shared by every request (its own pages), suffixes per
** request. decode(prefix) (+) decode(suffix) == decode(prefix ++ suffix). */
START_TEST(test_cascade_identity) {
  static const kg_dtype T[] = { KG_F32, KG_BF16 };
  for (int c = 0; c < 4; c++) {
    const kg_dtype t = T[c % 2];
    const kg_kv_layout l = c / 2 ? KG_KV_HND : KG_KV_NHD;
    const int64_t B = 4, Hq = 8, Hk = 2, D = 128, P = 16, prefix = 100 + 37 * c;
    int64_t suffix[4] = { 1, 29, 64, 130 }, whole[4];
    for (int b = 0; b < B; b++) whole[b] = prefix + suffix[b];
    uint64_t seed = 0xca5cull + (uint64_t)c;
    /* the whole sequences; the prefix and suffix tables point into the same pages, so the prefix is shared bits */
    ar_cache kc;
    ar_cache_build(&kc, l, t, Hk, P, D, B, whole, 0, 0, seed);
    /* make every request's first `prefix` tokens equal to request 0's (a shared prompt) */
    for (int b = 1; b < B; b++)
      for (int64_t tok = 0; tok < prefix; tok++)
        for (int64_t h = 0; h < Hk; h++) {
          const int64_t src = ar_cache_offset(&kc, 0, tok, h), dst = ar_cache_offset(&kc, b, tok, h);
          for (int64_t f = 0; f < D; f++) {
            ar_put(kc.k, t, dst + f, ar_get(kc.k, t, src + f));
            ar_put(kc.v, t, dst + f, ar_get(kc.v, t, src + f));
          }
        }
    const size_t es = kg_dtype_size(t);
    void *q = tu_alloc((size_t)(B * Hq * D) * es);
    for (int64_t i = 0; i < B * Hq * D; i++) ar_put(q, t, i, 2.0 * ar_sym(&seed));
    kg_exec ex = tu_exec_c();
    /* 1. whole */
    void *ow = tu_alloc((size_t)(B * Hq * D) * es);
    float *lw = (float *)tu_alloc((size_t)(B * Hq) * 4);
    kg_decode_args a;
    memset(&a, 0, sizeof a);
    a.num_qo_heads = Hq; a.q = q; a.q_stride_n = Hq * D; a.q_stride_h = D;
    a.o = ow; a.o_stride_n = Hq * D; a.o_stride_h = D; a.lse = lw;
    a.kv = ar_cache_desc(&kc, kc.k, kc.v, kc.indices, kc.indptr, kc.last);
    ck_assert_int_eq(kg_decode_batch(&a, &ex), KG_SUCCESS);
    /* 2. prefix: request 0's first pages, for one request per query row (batch B, same pages) */
    const int64_t ppages = prefix / P;   /* whole pages of the prefix; the rest of it goes with the suffix */
    int32_t *pi = (int32_t *)tu_alloc((size_t)(B * ppages + 1) * 4), pptr[5], plast[4];
    for (int b = 0; b < B; b++) {
      pptr[b] = (int32_t)(b * ppages);
      for (int64_t i = 0; i < ppages; i++) pi[b * ppages + i] = kc.indices[kc.indptr[0] + i];
      plast[b] = (int32_t)P;
    }
    pptr[B] = (int32_t)(B * ppages);
    void *op = tu_alloc((size_t)(B * Hq * D) * 4);
    float *lp = (float *)tu_alloc((size_t)(B * Hq) * 4);
    kg_decode_args ap = a;
    ap.o = op; ap.lse = lp;
    ap.kv.indices = pi; ap.kv.indptr = pptr; ap.kv.last_page_len = plast;
    ap.q_rope_pos = NULL;
    ck_assert_int_eq(kg_decode_batch(&ap, &ex), KG_SUCCESS);
    /* 3. suffix: each request's remaining pages (its own) */
    int32_t *si = (int32_t *)tu_alloc((size_t)kc.indptr[B] * 4), sptr[5];
    int64_t n = 0;
    for (int b = 0; b < B; b++) {
      sptr[b] = (int32_t)n;
      for (int64_t i = kc.indptr[b] + ppages; i < kc.indptr[b + 1]; i++) si[n++] = kc.indices[i];
    }
    sptr[B] = (int32_t)n;
    void *os = tu_alloc((size_t)(B * Hq * D) * es);
    float *ls = (float *)tu_alloc((size_t)(B * Hq) * 4);
    kg_decode_args as = a;
    as.o = os; as.lse = ls;
    as.kv.indices = si; as.kv.indptr = sptr;
    ck_assert_int_eq(kg_decode_batch(&as, &ex), KG_SUCCESS);
    /* merge: prefix (+) suffix */
    void *om = tu_alloc((size_t)(B * Hq * D) * es);
    float *lm = (float *)tu_alloc((size_t)(B * Hq) * 4);
    kg_merge_state_args m = { t, B * Hq, 1, D, op, lp, os, ls, om, lm };
    ck_assert_int_eq(kg_merge_state(&m, &ex), KG_SUCCESS);
    /* against the whole decode and the reference; the reference's bound doubled for the extra merge */
    double *K = (double *)tu_alloc((size_t)(prefix + 130) * D * 8), *V = (double *)tu_alloc((size_t)(prefix + 130) * D * 8);
    double qd[AR_MAX_D], ro[AR_MAX_D], tol[AR_MAX_D], rl, rlt;
    for (int b = 0; b < B; b++)
      for (int64_t hk = 0; hk < Hk; hk++) {
        ar_cache_gather(&kc, b, hk, 0, whole[b], K, V);
        for (int64_t g = 0; g < Hq / Hk; g++) {
          const int64_t h = hk * (Hq / Hk) + g;
          for (int64_t f = 0; f < D; f++) qd[f] = ar_get(q, t, (b * Hq + h) * D + f);
          ar_attn_opts o = { (int)D, 1.0 / sqrt((double)D), 0.0, 0, 0, NULL, 0.0, 0.0, t, 0.0 };
          ar_attend(&o, qd, K, V, whole[b], 0, ro, &rl, tol, &rlt);
          for (int64_t f = 0; f < D; f++) {
            const double gm = ar_get(om, t, (b * Hq + h) * D + f), gw = ar_get(ow, t, (b * Hq + h) * D + f);
            ck_assert_msg(fabs(gm - ro[f]) <= 2.0 * tol[f] + ar_unit(t) * fabs(ro[f]),
                          "cascade c=%d b=%d h=%lld f=%lld: merged %.9g, reference %.9g (bound %.3g)", c, b, (long long)h,
                          (long long)f, gm, ro[f], 2.0 * tol[f]);
            ck_assert_msg(fabs(gw - ro[f]) <= tol[f], "whole c=%d b=%d: %.9g vs %.9g", c, b, gw, ro[f]);
          }
          ck_assert_msg(fabs(lm[b * Hq + h] - rl) <= 2.0 * rlt, "cascade lse %.9g vs %.9g", lm[b * Hq + h], rl);
        }
      }
    tu_free(K); tu_free(V); tu_free(q); tu_free(ow); tu_free(lw); tu_free(pi); tu_free(op); tu_free(lp); tu_free(si);
    tu_free(os); tu_free(ls); tu_free(om); tu_free(lm);
    ar_cache_free(&kc);
  }
}
END_TEST

Suite *cascade_suite(void) {
  Suite *s = suite_create("CascadeTest");
  TCase *tc = tcase_create("cascade");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_merge_state_pairs);
  tcase_add_test(tc, test_merge_states_k);
  tcase_add_test(tc, test_merge_varlen_ragged);
  tcase_add_test(tc, test_cascade_identity);
  suite_add_tcase(s, tc);
  return s;
}
