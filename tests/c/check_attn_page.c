/*
** check_attn_page.c -- PageTest: the paged KV cache on the C backend.
** kg_paged_kv_offset against kg.h's formula, then many rounds of appends
** against a CPU copy of the cache: each round grows the requests (a ragged
** "prefill" chunk of random length per request, or one decode token per
** request), allocating pages from a shuffled free list the way a server does,
** appends through kg_paged_kv_append / kg_paged_kv_append_decode and compares
** every element of both caches (written slots, untouched slots, unowned
** pages, the gaps of a padded stride_page) with the copy. Page sizes 1, 3, 7,
** 16, 17; batch 1, 3, 7, 23; head_dim 64, 128, 256; NHD and HND; f32, f16,
** bf16 (every page size x batch, each with both layouts; every dtype x
** head_dim pair in each layout). Refusals: positions past a request,
** out-of-range requests and page ids, two tokens in one slot -- with the
** cache left unchanged.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_ref.h"
#include "test_util.h"

typedef struct pstate {
  kg_kv_layout l;
  kg_dtype t;
  int64_t H, P, D, num_pages, pad, batch;
  int32_t *indices, *indptr, *last;   /* the table kg sees (rebuilt each round) */
  int32_t **pages;                    /* per request: its pages, in order */
  int64_t *npages, *len;
  int32_t *free_list;
  int64_t nfree;
  void *k, *v;                        /* the cache */
  uint16_t *ck16, *cv16;              /* its copy (bit patterns; f32 as two halves) */
  size_t bytes;
} pstate;

static int64_t sp_of(const pstate *s) { return s->H * s->P * s->D + s->pad; }

static void rebuild_table(pstate *s) {
  int64_t n = 0;
  for (int64_t b = 0; b < s->batch; b++) {
    s->indptr[b] = (int32_t)n;
    for (int64_t i = 0; i < s->npages[b]; i++) s->indices[n++] = s->pages[b][i];
    s->last[b] = s->len[b] ? (int32_t)(s->len[b] - (s->len[b] - 1) / s->P * s->P) : 0;
  }
  s->indptr[s->batch] = (int32_t)n;
}

/* Grows request b by add tokens, taking pages from the free list. */
static void grow(pstate *s, int64_t b, int64_t add) {
  s->len[b] += add;
  while (s->npages[b] * s->P < s->len[b]) {
    ck_assert_msg(s->nfree > 0, "test bug: out of pages");
    s->pages[b][s->npages[b]++] = s->free_list[--s->nfree];
  }
}

/* The CPU copy takes element src of the new rows at cache offset off. */
static void copy_bits(const pstate *s, int64_t off, const void *src_k, const void *src_v, int64_t src) {
  const size_t es = kg_dtype_size(s->t);
  memcpy((char *)s->ck16 + off * es, (const char *)src_k + src * es, es);
  memcpy((char *)s->cv16 + off * es, (const char *)src_v + src * es, es);
}

static void compare_all(const pstate *s, const char *what) {
  ck_assert_msg(memcmp(s->k, s->ck16, s->bytes) == 0 && memcmp(s->v, s->cv16, s->bytes) == 0,
                "%s: the cache differs from the CPU copy", what);
}

static void setup(pstate *s, kg_kv_layout l, kg_dtype t, int64_t H, int64_t P, int64_t D, int64_t batch, int64_t pad,
                  int64_t max_len, uint64_t *seed) {
  memset(s, 0, sizeof *s);
  s->l = l; s->t = t; s->H = H; s->P = P; s->D = D; s->batch = batch; s->pad = pad;
  s->num_pages = batch * ((max_len + P - 1) / P) + 5;
  s->bytes = (size_t)(s->num_pages * sp_of(s)) * kg_dtype_size(t);
  s->k = tu_alloc(s->bytes); s->v = tu_alloc(s->bytes);
  s->ck16 = (uint16_t *)tu_alloc(s->bytes); s->cv16 = (uint16_t *)tu_alloc(s->bytes);
  for (int64_t i = 0; i < s->num_pages * sp_of(s); i++) {   /* recognizable garbage everywhere */
    ar_put(s->k, t, i, 1000.0 + (double)(i % 977));
    ar_put(s->v, t, i, -1000.0 - (double)(i % 983));
  }
  memcpy(s->ck16, s->k, s->bytes);
  memcpy(s->cv16, s->v, s->bytes);
  s->indices = (int32_t *)tu_alloc((size_t)s->num_pages * 4);
  s->indptr = (int32_t *)tu_alloc((size_t)(batch + 1) * 4);
  s->last = (int32_t *)tu_alloc((size_t)batch * 4);
  s->pages = (int32_t **)tu_alloc((size_t)batch * sizeof(int32_t *));
  for (int64_t b = 0; b < batch; b++) s->pages[b] = (int32_t *)tu_alloc((size_t)s->num_pages * 4);
  s->npages = (int64_t *)tu_alloc((size_t)batch * 8);
  s->len = (int64_t *)tu_alloc((size_t)batch * 8);
  memset(s->npages, 0, (size_t)batch * 8);
  memset(s->len, 0, (size_t)batch * 8);
  s->free_list = (int32_t *)tu_alloc((size_t)s->num_pages * 4);
  for (int64_t i = 0; i < s->num_pages; i++) s->free_list[i] = (int32_t)i;
  for (int64_t i = s->num_pages - 1; i > 0; i--) {
    const int64_t j = ar_int(seed, 0, i);
    const int32_t x = s->free_list[i]; s->free_list[i] = s->free_list[j]; s->free_list[j] = x;
  }
  s->nfree = s->num_pages;
}

static void teardown_state(pstate *s) {
  for (int64_t b = 0; b < s->batch; b++) tu_free(s->pages[b]);
  tu_free(s->pages); tu_free(s->k); tu_free(s->v); tu_free(s->ck16); tu_free(s->cv16); tu_free(s->indices);
  tu_free(s->indptr); tu_free(s->last); tu_free(s->npages); tu_free(s->len); tu_free(s->free_list);
}

static kg_paged_kv desc(const pstate *s) {
  kg_paged_kv kv;
  memset(&kv, 0, sizeof kv);
  kv.layout = s->l; kv.dtype = s->t; kv.num_pages = s->num_pages; kv.page_size = s->P; kv.num_kv_heads = s->H;
  kv.head_dim = s->D; kv.k_data = s->k; kv.v_data = s->v; kv.stride_page = s->pad ? sp_of(s) : 0; kv.batch = s->batch;
  kv.indices = s->indices; kv.indptr = s->indptr; kv.last_page_len = s->last;
  return kv;
}

/* One configuration: rounds of ragged chunks and decode tokens. */
static void run_config(kg_kv_layout l, kg_dtype t, int64_t H, int64_t P, int64_t D, int64_t batch, int64_t pad,
                       uint64_t seed) {
  pstate s;
  const int rounds = 6;
  const int64_t chunk_max = 9;
  setup(&s, l, t, H, P, D, batch, pad, rounds * chunk_max + rounds, &seed);
  char what[200];
  snprintf(what, sizeof what, "%s %s H=%lld P=%lld D=%lld batch=%lld pad=%lld", ar_dtype_name(t),
           l == KG_KV_NHD ? "NHD" : "HND", (long long)H, (long long)P, (long long)D, (long long)batch, (long long)pad);
  const size_t es = kg_dtype_size(t);
  kg_exec ex = tu_exec_c();
  for (int r = 0; r < rounds; r++) {
    const int decode = r % 2 == 1;
    int64_t nnz = 0, *add = (int64_t *)tu_alloc((size_t)batch * 8);
    for (int64_t b = 0; b < batch; b++) { add[b] = decode ? 1 : ar_int(&seed, 0, chunk_max); nnz += add[b]; }
    int32_t *bi = (int32_t *)tu_alloc((size_t)(nnz ? nnz : 1) * 4), *pos = (int32_t *)tu_alloc((size_t)(nnz ? nnz : 1) * 4);
    /* tokens in a shuffled order: batch index and position say where each goes */
    int64_t n = 0;
    for (int64_t b = 0; b < batch; b++)
      for (int64_t i = 0; i < add[b]; i++, n++) { bi[n] = (int32_t)b; pos[n] = (int32_t)(s.len[b] + i); }
    if (!decode)
      for (int64_t i = nnz - 1; i > 0; i--) {
        const int64_t j = ar_int(&seed, 0, i);
        int32_t x = bi[i]; bi[i] = bi[j]; bi[j] = x;
        x = pos[i]; pos[i] = pos[j]; pos[j] = x;
      }
    for (int64_t b = 0; b < batch; b++) grow(&s, b, add[b]);
    rebuild_table(&s);
    /* new rows, strided: token stride H*(D+2)+1, head stride D+2 */
    const int64_t sh = D + 2, sn = H * sh + 1;
    void *kn = tu_alloc((size_t)(nnz * sn + 1) * es), *vn = tu_alloc((size_t)(nnz * sn + 1) * es);
    for (int64_t i = 0; i < nnz * sn + 1; i++) { ar_put(kn, t, i, ar_sym(&seed)); ar_put(vn, t, i, ar_sym(&seed)); }
    for (int64_t i = 0; i < nnz; i++) {
      const int64_t b = bi[i], p = pos[i];
      const int64_t page = s.pages[b][p / P];
      for (int64_t h = 0; h < H; h++) {
        const int64_t off = ar_kv_offset(l, H, P, D, s.pad ? sp_of(&s) : 0, page, h, p % P);
        for (int64_t f = 0; f < D; f++) copy_bits(&s, off + f, kn, vn, i * sn + h * sh + f);
      }
    }
    kg_paged_kv_append_args a;
    memset(&a, 0, sizeof a);
    a.kv = desc(&s);
    a.nnz = nnz;
    a.k = kn; a.k_stride_n = sn; a.k_stride_h = sh;
    a.v = vn; a.v_stride_n = sn; a.v_stride_h = sh;
    kg_status st;
    if (decode) st = kg_paged_kv_append_decode(&a, &ex);
    else {
      a.batch_indices = bi; a.positions = pos;
      st = kg_paged_kv_append(&a, &ex);
    }
    ck_assert_msg(st == KG_SUCCESS, "%s round %d: %s", what, r, kg_status_string(st));
    char rw[260];
    snprintf(rw, sizeof rw, "%s round %d (%s, %lld tokens)", what, r, decode ? "decode" : "ragged", (long long)nnz);
    compare_all(&s, rw);
    /* the reference reading of the cache (attn_ref.h's offsets) sees the appended rows */
    if (nnz > 0) {
      const int64_t i = ar_int(&seed, 0, nnz - 1);
      const int64_t b = bi[i], p = pos[i];
      const int64_t off = ar_kv_offset(l, H, P, D, s.pad ? sp_of(&s) : 0, s.indices[s.indptr[b] + p / P], H - 1, p % P);
      ck_assert(ar_get(s.k, t, off + D - 1) == ar_get(kn, t, i * sn + (H - 1) * sh + D - 1));
    }
    tu_free(kn); tu_free(vn); tu_free(bi); tu_free(pos); tu_free(add);
  }
  teardown_state(&s);
}

START_TEST(test_offset_formula) {
  kg_paged_kv kv;
  memset(&kv, 0, sizeof kv);
  kv.num_pages = 5; kv.page_size = 7; kv.num_kv_heads = 3; kv.head_dim = 64;
  for (int l = 0; l < 2; l++)
    for (int64_t sp = 0; sp <= 3 * 7 * 64 + 40; sp += 3 * 7 * 64 + 40) {
      kv.layout = (kg_kv_layout)l;
      kv.stride_page = sp;
      for (int64_t p = 0; p < 5; p++)
        for (int64_t h = 0; h < 3; h++)
          for (int64_t e = 0; e < 7; e++) {
            const int64_t want = l == KG_KV_NHD ? p * (sp ? sp : 3 * 7 * 64) + e * 3 * 64 + h * 64
                                                : p * (sp ? sp : 3 * 7 * 64) + h * 7 * 64 + e * 64;
            ck_assert_int_eq(kg_paged_kv_offset(&kv, p, h, e), want);
          }
      ck_assert_int_eq(kg_paged_kv_offset(&kv, 5, 0, 0), -1);
      ck_assert_int_eq(kg_paged_kv_offset(&kv, 0, 3, 0), -1);
      ck_assert_int_eq(kg_paged_kv_offset(&kv, 0, 0, 7), -1);
      ck_assert_int_eq(kg_paged_kv_offset(&kv, -1, 0, 0), -1);
    }
  ck_assert_int_eq(kg_paged_kv_offset(NULL, 0, 0, 0), -1);
}
END_TEST

START_TEST(test_append_rounds) {
  static const int64_t PS[] = { 1, 3, 7, 16, 17 };
  static const int64_t BS[] = { 1, 3, 7, 23 };
  static const int64_t DS[] = { 64, 128, 256 };
  static const kg_dtype TS[] = { KG_F32, KG_F16, KG_BF16 };
  int c = 0;
  for (int pi = 0; pi < 5; pi++)
    for (int bi = 0; bi < 4; bi++, c++)
      for (int l = 0; l < 2; l++)
        run_config((kg_kv_layout)l, TS[c % 3], 1 + (c % 3), PS[pi], DS[(c / 3 + l) % 3], BS[bi],
                   c % 7 == 3 ? 40 : 0, 0x9a9e0000ull + (uint64_t)(2 * c + l));
}
END_TEST

START_TEST(test_append_refusals) {
  pstate s;
  uint64_t seed = 77;
  setup(&s, KG_KV_HND, KG_F16, 2, 4, 64, 3, 0, 20, &seed);
  grow(&s, 0, 5); grow(&s, 1, 0); grow(&s, 2, 9);
  rebuild_table(&s);
  uint16_t k[4 * 2 * 64], v[4 * 2 * 64];
  for (int i = 0; i < 4 * 2 * 64; i++) { ar_put(k, KG_F16, i, 0.5); ar_put(v, KG_F16, i, -0.5); }
  int32_t bi[4] = { 0, 2, 2, 0 }, pos[4] = { 4, 8, 7, 3 };
  kg_paged_kv_append_args a;
  memset(&a, 0, sizeof a);
  a.kv = desc(&s); a.nnz = 4;
  a.k = k; a.k_stride_n = 128; a.k_stride_h = 64; a.v = v; a.v_stride_n = 128; a.v_stride_h = 64;
  a.batch_indices = bi; a.positions = pos;
  kg_exec ex = tu_exec_c();
  char why[4096];
  pos[1] = 9;   /* request 2 has 9 tokens: position 9 is past it */
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  ck_assert_int_eq(kg_explain(KG_OP_PAGED_KV_APPEND, &a, &ex, why, sizeof why), KG_ERROR_INVALID_PROBLEM);
  ck_assert_msg(strstr(why, "position 9 outside request 2 of length 9") != NULL, "%s", why);
  pos[1] = 8; bi[2] = 1;   /* request 1 is empty */
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  bi[2] = 3;
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  bi[2] = 2; pos[3] = 4;   /* two tokens in request 0 slot 4 */
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  ck_assert_int_eq(kg_explain(KG_OP_PAGED_KV_APPEND, &a, &ex, why, sizeof why), KG_ERROR_INVALID_PROBLEM);
  ck_assert_msg(strstr(why, "two tokens go to page") != NULL, "%s", why);
  pos[3] = 3;
  const int32_t saved = s.indices[1];
  s.indices[1] = (int32_t)s.num_pages;   /* a page id out of range */
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  s.indices[1] = saved;
  s.last[2] = 5;   /* last page length above the page size */
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  rebuild_table(&s);
  compare_all(&s, "after refusals");   /* nothing was written */
  a.kv.layout = (kg_kv_layout)7;
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  a.kv = desc(&s); a.kv.stride_page = 10;
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  a.kv = desc(&s); a.positions = NULL;
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  /* decode append: one token per request, no indices; request 1 is empty */
  a.positions = NULL; a.batch_indices = NULL; a.nnz = 3;
  ck_assert_int_eq(kg_paged_kv_append_decode(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  a.nnz = 2;
  ck_assert_int_eq(kg_paged_kv_append_decode(&a, &ex), KG_ERROR_INVALID_PROBLEM);
  a.positions = pos; a.nnz = 3;
  ck_assert_int_eq(kg_paged_kv_append_decode(&a, &ex), KG_ERROR_INVALID_ARGUMENT);
  compare_all(&s, "after decode refusals");
  /* pointers aligned to their elements, checked before the tables are read */
  a.positions = pos; a.batch_indices = bi; a.nnz = 4;
  a.k = (const char *)k + 1;
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_MISALIGNED_OPERAND);
  a.k = k; a.positions = (const int32_t *)((const char *)pos + 2);
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_MISALIGNED_OPERAND);
  a.positions = pos; a.kv.indptr = (const int32_t *)((const char *)a.kv.indptr + 1);
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_ERROR_MISALIGNED_OPERAND);
  a.kv = desc(&s); a.kv.k_data = (char *)a.kv.k_data + 1;
  ck_assert_int_eq(kg_explain(KG_OP_PAGED_KV_APPEND, &a, &ex, why, sizeof why), KG_ERROR_MISALIGNED_OPERAND);
  ck_assert_msg(strstr(why, "kv.k_data = ") && strstr(why, "is not aligned to its 2-byte elements"), "%s", why);
  a.kv = desc(&s);
  compare_all(&s, "after misaligned refusals");
  /* the valid call goes through, and selects by layout and dtype */
  a.positions = pos; a.batch_indices = bi; a.nnz = 4;
  const char *name = NULL;
  ck_assert_int_eq(kg_attn_select(KG_OP_PAGED_KV_APPEND, &a, &ex, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_attn_c_append_f16_hnd");
  ck_assert_int_eq(kg_paged_kv_append(&a, &ex), KG_SUCCESS);
  ck_assert(memcmp(s.k, s.ck16, s.bytes) != 0);
  teardown_state(&s);
}
END_TEST

Suite *page_suite(void) {
  Suite *s = suite_create("PageTest");
  TCase *tc = tcase_create("page");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_offset_formula);
  tcase_add_test(tc, test_append_rounds);
  tcase_add_test(tc, test_append_refusals);
  suite_add_tcase(s, tc);
  return s;
}
