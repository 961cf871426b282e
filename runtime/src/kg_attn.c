/*
** kg_attn.c -- decode attention: argument checks, jobs, the split-KV planner,
** first-fit dispatch and explain for the math primitives, RoPE, paged-KV
** append, single / batch decode and the cascade merges. The rules are kg.h's
** "Decode attention" section.
**
** Invariant (as for GEMM): a generated attention variant runs only after
** these checks passed and its descriptor matched, on a job whose options are
** resolved (sm_scale, RoPE frequencies, strides, plan), so generated code
** never re-validates. The C backend also checks the contents of index arrays
** (host memory); GPU kernels cannot, and clamp instead (kg.h).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kg_internal.h"

#ifndef KG_WITH_CUDA
int kg__cuda_sm_count(void) { return 0; }
#endif
#ifndef KG_WITH_HIP
int kg__hip_sm_count(void) { return 0; }
#endif

#define KG__I32_MAX 2147483647LL

/* ---- small helpers ---------------------------------------------------------- */

int kg__attn_op(kg_op op) { return op >= KG_OP_MATH && op <= KG_OP_MERGE_STATES_VARLEN; }

int kg_math_lanes(kg_backend b) {
  switch (b) {
    case KG_BACKEND_C: return 32;
    case KG_BACKEND_CUDA: return 32;
    case KG_BACKEND_HIP: return 64;
  }
  return 0;
}

static int kg__dtype_ok(int t) { return t == KG_F32 || t == KG_F16 || t == KG_BF16; }
static int kg__layout_ok(int l) { return l == KG_KV_NHD || l == KG_KV_HND; }
static const char *kg__kv_layout_string(int l) { return l == KG_KV_NHD ? "nhd" : l == KG_KV_HND ? "hnd" : "none"; }

/* a*b + c without int64 overflow; -1 when it would overflow (a, b, c >= 0). */
static int64_t kg__mad(int64_t a, int64_t b, int64_t c) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r)) return -1;
  return r;
}

/* Highest element offset + 1 of count_n x count_h rows of dim elements with
** strides sn, sh (all >= 0); -1 on overflow, also of the bytes (x8). */
static int64_t kg__rows_extent(int64_t count_n, int64_t sn, int64_t count_h, int64_t sh, int64_t dim) {
  int64_t a = kg__mad(count_n - 1, sn, 0), b = kg__mad(count_h - 1, sh, dim);
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &a) || kg__mad(a, 8, 0) < 0) return -1;
  return a;
}

/* 1 when the count_n x count_h rows of dim elements never share an element. */
static int kg__rows_disjoint(int64_t count_n, int64_t sn, int64_t count_h, int64_t sh, int64_t dim) {
  int64_t s1 = sn, n1 = count_n, s2 = sh, n2 = count_h;
  if (n1 <= 1) { s1 = s2; n1 = n2; n2 = 1; }
  if (n2 > 1 && s2 < s1) { int64_t t = s1; s1 = s2; s2 = t; t = n1; n1 = n2; n2 = t; }
  if (n1 > 1 && s1 < dim) return 0;
  if (n2 > 1 && (n1 > 1 ? s2 < s1 * n1 : s2 < dim)) return 0;
  return 1;
}

static int kg__ranges_overlap(const void *a, size_t na, const void *b, size_t nb) {
  if (!a || !b || !na || !nb) return 0;
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x < y + nb && y < x + na;
}

/* ---- RoPE -------------------------------------------------------------------- */

/* Checks rope (mode != NONE) for head_dim and writes its frequencies (kg.h). */
static kg_status kg__rope_prepare(const kg_rope *r, int64_t head_dim, kg_rope_freqs *out, kg__sink *sink) {
  memset(out, 0, sizeof *out);
  if (r->mode == KG_ROPE_NONE) return KG_SUCCESS;
  if (r->mode != KG_ROPE_DEFAULT && r->mode != KG_ROPE_LLAMA31)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown rope.mode %d (allowed: KG_ROPE_NONE, KG_ROPE_DEFAULT, KG_ROPE_LLAMA31)",
             (int)r->mode);
  if (r->interleave != 0 && r->interleave != 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "rope.interleave = %d (allowed: 0, 1)", r->interleave);
  const int64_t rd = r->rotary_dim ? r->rotary_dim : head_dim;
  if (rd < 2 || rd % 2 != 0 || rd > head_dim || rd > 2 * KG_ROPE_MAX_PAIRS)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "rope.rotary_dim = %lld (allowed: 0 for head_dim, or even, 2 .. min(head_dim "
             "%lld, %d))", (long long)r->rotary_dim, (long long)head_dim, 2 * KG_ROPE_MAX_PAIRS);
  const double scale = r->scale == 0.0f ? 1.0 : r->scale, theta = r->theta == 0.0f ? 1e4 : r->theta;
  if (!(scale > 0.0) || isinf(scale)) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "rope.scale = %g (allowed: > 0, finite; 0: 1)", scale);
  if (!(theta > 0.0) || isinf(theta)) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "rope.theta = %g (allowed: > 0, finite; 0: 1e4)", theta);
  double low = 1.0, high = 4.0, old = 8192.0;
  if (r->mode == KG_ROPE_LLAMA31) {
    if (r->low_freq_factor != 0.0f) low = r->low_freq_factor;
    if (r->high_freq_factor != 0.0f) high = r->high_freq_factor;
    if (r->old_context_len != 0.0f) old = r->old_context_len;
    if (!(low > 0.0) || isinf(low) || !(high > low) || isinf(high) || !(old > 0.0) || isinf(old))
      KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "rope: Llama 3.1 factors low %g, high %g, old_context_len %g (allowed: 0 < low "
               "< high, old_context_len > 0, finite)", low, high, old);
  }
  const double pi = 3.14159265358979323846;
  const double a = old / (2.0 * pi * high - 2.0 * pi * low), b = -1.0 / (high / low - 1.0);
  out->rotary_dim = (int)rd;
  out->interleave = r->interleave;
  for (int64_t j = 0; j < rd / 2; j++) {
    const double base = pow(theta, -2.0 * (double)j / (double)rd);
    double f = base / scale;
    if (r->mode == KG_ROPE_LLAMA31) {
      double smooth = base * a + b;
      smooth = smooth < 0.0 ? 0.0 : smooth > 1.0 ? 1.0 : smooth;
      f = (1.0 - smooth) * base / scale + smooth * base;
    }
    out->freq[j] = (float)f;
  }
  return KG_SUCCESS;
}

/* ---- paged cache -------------------------------------------------------------- */

static int64_t kg__default_stride_page(const kg_paged_kv *kv) {
  return kv->num_kv_heads * kv->page_size * kv->head_dim;
}

int64_t kg_paged_kv_offset(const kg_paged_kv *kv, int64_t page, int64_t head, int64_t slot) {
  if (!kv || !kg__layout_ok(kv->layout) || kv->page_size < 1 || kv->num_kv_heads < 1 || kv->head_dim < 1) return -1;
  if (page < 0 || page >= kv->num_pages || head < 0 || head >= kv->num_kv_heads || slot < 0 || slot >= kv->page_size)
    return -1;
  if (kg__mad(kv->num_kv_heads, kv->page_size, 0) < 0 || kg__mad(kv->num_kv_heads * kv->page_size, kv->head_dim, 0) < 0)
    return -1;
  const int64_t sp = kv->stride_page ? kv->stride_page : kg__default_stride_page(kv);
  const int64_t sn = kv->layout == KG_KV_NHD ? kv->num_kv_heads * kv->head_dim : kv->head_dim;
  const int64_t sh = kv->layout == KG_KV_NHD ? kv->head_dim : kv->page_size * kv->head_dim;
  const int64_t a = kg__mad(page, sp, 0), b = kg__mad(head, sh, 0), c = kg__mad(slot, sn, 0);
  int64_t r;
  if (a < 0 || b < 0 || c < 0 || __builtin_add_overflow(a, b, &r) || __builtin_add_overflow(r, c, &r)) return -1;
  return r;
}

/* Checks the cache description and fills the kernel view. */
static kg_status kg__kv_check(const kg_paged_kv *kv, kg_backend backend, kg_kv_job *job, kg__sink *sink) {
  if (!kg__layout_ok(kv->layout))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown kv.layout %d (allowed: KG_KV_NHD, KG_KV_HND)", (int)kv->layout);
  if (!kg__dtype_ok(kv->dtype))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown kv.dtype %d (allowed: KG_F32, KG_F16, KG_BF16)", (int)kv->dtype);
  if (kv->num_pages < 1 || kv->page_size < 1 || kv->num_kv_heads < 1 || kv->head_dim < 1 || kv->batch < 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "kv sizes must be >= 1 (num_pages %lld, page_size %lld, num_kv_heads %lld, "
             "head_dim %lld, batch %lld)", (long long)kv->num_pages, (long long)kv->page_size,
             (long long)kv->num_kv_heads, (long long)kv->head_dim, (long long)kv->batch);
  if (kv->page_size > KG__I32_MAX || kv->batch > KG__I32_MAX)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "kv.page_size and kv.batch must be below 2^31");
  if (!kv->k_data || !kv->v_data || !kv->indices || !kv->indptr || !kv->last_page_len)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "kv.k_data, v_data, indices, indptr and last_page_len must not be NULL");
  const size_t es = kg_dtype_size(kv->dtype);
  const kg__ptr_rule al[] = { { "kv.k_data", kv->k_data, es }, { "kv.v_data", kv->v_data, es },
                              { "kv.indices", kv->indices, 4 }, { "kv.indptr", kv->indptr, 4 },
                              { "kv.last_page_len", kv->last_page_len, 4 } };
  const kg_status st = kg__check_aligned(al, KG__COUNT(al), sink);
  if (st) return st;
  const int64_t hpd = kg__mad(kv->num_kv_heads, kv->page_size, 0) < 0 ? -1
                      : kg__mad(kv->num_kv_heads * kv->page_size, kv->head_dim, 0);
  if (hpd < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "kv page size overflows int64");
  const int64_t sp = kv->stride_page ? kv->stride_page : hpd;
  if (sp < hpd)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "kv.stride_page = %lld is below one page (%lld elements; 0 for that)",
             (long long)kv->stride_page, (long long)hpd);
  if (kg__mad(kv->num_pages - 1, sp, hpd) < 0 || kg__mad(kg__mad(kv->num_pages - 1, sp, hpd), 8, 0) < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "kv cache extent overflows int64");
  memset(job, 0, sizeof *job);
  job->num_pages = kv->num_pages;
  job->page_size = kv->page_size;
  job->num_kv_heads = kv->num_kv_heads;
  job->head_dim = kv->head_dim;
  job->stride_page = sp;
  job->stride_n = kv->layout == KG_KV_NHD ? kv->num_kv_heads * kv->head_dim : kv->head_dim;
  job->stride_h = kv->layout == KG_KV_NHD ? kv->head_dim : kv->page_size * kv->head_dim;
  job->k = kv->k_data;
  job->v = kv->v_data;
  job->batch = kv->batch;
  job->indices = kv->indices;
  job->indptr = kv->indptr;
  job->last_page_len = kv->last_page_len;
  if (backend != KG_BACKEND_C) return KG_SUCCESS;
  /* host memory: the table's contents. indptr first, whole: once it is non-decreasing every
  ** page list lies inside indices[indptr[0] .. indptr[batch]), the caller's array. */
  if (kv->indptr[0] < 0) KG__FAIL(KG_ERROR_INVALID_PROBLEM, "kv.indptr[0] = %d is negative", kv->indptr[0]);
  for (int64_t b = 0; b < kv->batch; b++)
    if (kv->indptr[b + 1] < kv->indptr[b])
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "kv.indptr decreases at request %lld (%lld -> %lld)", (long long)b,
               (long long)kv->indptr[b], (long long)kv->indptr[b + 1]);
  for (int64_t b = 0; b < kv->batch; b++) {
    const int64_t p0 = kv->indptr[b], p1 = kv->indptr[b + 1];
    if (p1 > p0 && (kv->last_page_len[b] < 1 || kv->last_page_len[b] > kv->page_size))
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "kv.last_page_len[%lld] = %d (allowed: 1 .. page_size %lld)", (long long)b,
               kv->last_page_len[b], (long long)kv->page_size);
    if ((p1 - p0) * kv->page_size > KG__I32_MAX)
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "request %lld is longer than 2^31 - 1 tokens", (long long)b);
    for (int64_t i = p0; i < p1; i++)
      if (kv->indices[i] < 0 || kv->indices[i] >= kv->num_pages)
        KG__FAIL(KG_ERROR_INVALID_PROBLEM, "kv.indices[%lld] = %d (allowed: 0 .. num_pages - 1 = %lld)", (long long)i,
                 kv->indices[i], (long long)(kv->num_pages - 1));
  }
  return KG_SUCCESS;
}

/* Length of request b of a checked host-side cache. */
static int64_t kg__kv_len_host(const kg_kv_job *kv, int64_t b) {
  const int64_t np = (int64_t)kv->indptr[b + 1] - kv->indptr[b];
  return np <= 0 ? 0 : (np - 1) * kv->page_size + kv->last_page_len[b];
}

/* ---- what dispatch matches on ---------------------------------------------------- */

typedef struct kg__attn_key {
  kg_op table_op;           /* op of the variants: KG_OP_MATH, ..., KG_OP_MERGE_STATES */
  kg_dtype dtype;
  int kv_layout;            /* -1: none */
  int64_t head_dim;
  /* decode: alignment of the K/V vectors and the plan inputs */
  const void *k, *v;
  int64_t stride_page;
  int64_t batch, num_kv_heads, group, max_len, forced_chunk;
  int single;
  int rope;                 /* decode: RoPE on the fly */
} kg__attn_key;

typedef struct kg__attn_call {
  kg__attn_key key;
  kg_rope_job rope;
  kg_append_job append;
  kg_decode_job decode;
  kg_merge_job merge;
} kg__attn_call;

/* ---- split-KV planner -------------------------------------------------------------- */

/* KG__CHUNK_COST: what a chunk costs beyond its tokens (its prologue and epilogue,
** its share of the merge), in tokens; fitted on the H200 (bf16, d = 128): 1024
** blocks on 396 slots took 306 us as 1 chunk of 2048 and 326 us as 3 of 704. */
enum { KG__MIN_CHUNK = 256, KG__MAX_WAVE_SPLIT = 4, KG__CHUNK_COST = 256 };

/* ceil(a / b) for a >= 0, b >= 1, without overflow. */
static int64_t kg__cdiv(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* Chunk size for cutting max_len tokens into about n chunks (a multiple of tile,
** at least KG__MIN_CHUNK). */
static int64_t kg__chunk_for(int64_t max_len, int64_t n, int64_t tile) {
  int64_t cs = kg__cdiv(max_len, n);
  if (cs < KG__MIN_CHUNK) cs = KG__MIN_CHUNK;
  return kg__cdiv(cs, tile) * tile;
}

/* Estimated time of b blocks of chunks of c tokens on `slots` slots: waves times the
** cost of one chunk. */
static double kg__wave_cost(double b, int64_t c, int64_t slots) {
  return ceil(b / (double)slots) * (double)(c + KG__CHUNK_COST);
}

void kg__decode_split(int64_t blocks, int64_t max_len, int64_t sm_count, int64_t blocks_per_sm, int64_t tile,
                      int64_t *chunk, int64_t *chunks) {
  if (blocks < 1) blocks = 1;
  if (blocks_per_sm < 1) blocks_per_sm = 1;
  if (tile < 1) tile = 16;
  if (max_len < 1) { *chunk = 1; *chunks = 1; return; }
  const int64_t slots = (sm_count > 0 ? sm_count : 1) * blocks_per_sm;
  int64_t cs;
  if (blocks < slots) {
    cs = kg__chunk_for(max_len, slots / blocks, tile);   /* at most one wave */
  } else {
    /* Several waves already: cut into the n <= KG__MAX_WAVE_SPLIT chunks of the least
    ** estimated time (kg__wave_cost). 512 blocks on 396 slots: 3 chunks (4 waves of a
    ** third) beat 1 (2 waves of the whole); 1024 blocks: 1 (3 waves) beats 3 (8). */
    cs = max_len;
    double best = kg__wave_cost((double)blocks, max_len, slots);
    for (int64_t n = 2; n <= KG__MAX_WAVE_SPLIT; n++) {
      const int64_t c = kg__chunk_for(max_len, n, tile), nc = kg__cdiv(max_len, c);
      if (nc != n) continue;   /* chunks too short to make n of them */
      const double cost = kg__wave_cost((double)blocks * (double)n, c, slots);
      if (cost < best) { best = cost; cs = c; }
    }
  }
  int64_t nc = kg__cdiv(max_len, cs);
  if (nc <= 1) { nc = 1; cs = max_len; }
  *chunk = cs;
  *chunks = nc;
}

/* Plan of decode variant v for key k: chunks per request and their size.
** Forced: chunks of forced_chunk tokens. C backend or unknown length: one
** chunk. GPU: the (request, kv head, group tile) blocks fill sm *
** blocks_per_sm slots; when they do not, each request is cut into at most
** slots / blocks chunks (one wave); when they take several waves, into the
** number (up to KG__MAX_WAVE_SPLIT) of the least estimated time. Chunks are
** at least KG__MIN_CHUNK tokens and a multiple of the variant's tile. */
static void kg__plan(const kg_variant *v, const kg__attn_key *k, kg_backend backend, kg_decode_plan_info *out) {
  const int64_t gt = v->tile_m > 0 ? v->tile_m : 16;
  const int64_t groups = kg__cdiv(k->group, gt);
  const int64_t base = k->batch * k->num_kv_heads * groups;
  const int64_t L = k->max_len;
  int64_t cs, nc;
  memset(out, 0, sizeof *out);
  out->sm_count = kg__sm_count(backend);
  if (k->forced_chunk > 0 && L > 0) {
    cs = k->forced_chunk < L ? k->forced_chunk : L;   /* any kv_chunk_size: chunk offsets stay inside int64 */
    nc = kg__cdiv(L, cs);
  } else if (backend == KG_BACKEND_C || L <= 0) {
    cs = L > 0 ? L : 1;
    nc = 1;
  } else {
    kg__decode_split(base, L, out->sm_count, v->blocks_per_sm, v->tile_n, &cs, &nc);
  }
  if (nc < 1) nc = 1;
  out->chunk_size = cs;
  out->num_chunks = nc;
  out->blocks = kg__mad(base, nc, 0);
  size_t bytes = 0;
  if (nc > 1) {
    /* part_o [batch][nc][Hq][D] then part_lse [batch][nc][Hq], each 16-byte aligned */
    const int64_t rows = kg__mad(kg__mad(k->batch, nc, 0), k->num_kv_heads * k->group, 0);
    const int64_t vals = rows < 0 ? -1 : kg__mad(rows, k->head_dim, 0);
    const int64_t all = vals < 0 ? -1 : kg__mad(1, vals, rows);   /* f32 values of both parts */
    if (all < 0 || kg__mad(all, 4, 32) < 0) bytes = SIZE_MAX;      /* with two 16-byte roundings */
    else bytes = (size_t)((vals * 4 + 15) / 16 * 16 + (rows * 4 + 15) / 16 * 16);
  }
  out->workspace_bytes = bytes;
}

/* ---- variant predicates -------------------------------------------------------------- */

static const char *kg__attn_rejects(const kg_variant *v, const kg__attn_key *k, const kg_exec *exec, int *misaligned) {
  static _Thread_local char why[200];
  *misaligned = 0;
  if (v->backend != exec->backend) {
    snprintf(why, sizeof why, "backend %s, wanted %s", kg_backend_string(v->backend), kg_backend_string(exec->backend));
    return why;
  }
  if (v->type_ab != k->dtype) {
    snprintf(why, sizeof why, "dtype %s, wanted %s", kg_dtype_string(v->type_ab), kg_dtype_string(k->dtype));
    return why;
  }
  if (k->kv_layout >= 0 && v->kv_layout != k->kv_layout) {
    snprintf(why, sizeof why, "kv layout %s, wanted %s", kg__kv_layout_string(v->kv_layout),
             kg__kv_layout_string(k->kv_layout));
    return why;
  }
  if (v->head_dim != 0 && v->head_dim != k->head_dim) {
    snprintf(why, sizeof why, "head_dim %d, wanted %lld", v->head_dim, (long long)k->head_dim);
    return why;
  }
  if (k->table_op == KG_OP_DECODE_BATCH && k->rope && !v->rope) {
    snprintf(why, sizeof why, "no RoPE on the fly (the %s decode kernel)", v->kernel);
    return why;
  }
  if (k->table_op == KG_OP_DECODE_BATCH) {
    kg_decode_plan_info plan;
    kg__plan(v, k, exec->backend, &plan);
    if (v->backend != KG_BACKEND_C && (plan.blocks < 0 || plan.blocks > KG__I32_MAX)) {
      snprintf(why, sizeof why, "%lld blocks exceed the grid limit 2^31 - 1", (long long)plan.blocks);
      return why;
    }
    if (plan.workspace_bytes == SIZE_MAX) return "the split-KV workspace size overflows";
    if (v->align > 1) {
      const int64_t bytes = (int64_t)kg_dtype_size(k->dtype) * v->align;
      if ((uintptr_t)k->k % (uintptr_t)bytes != 0 || (uintptr_t)k->v % (uintptr_t)bytes != 0 ||
          k->stride_page % v->align != 0) {
        *misaligned = 1;
        snprintf(why, sizeof why, "k and v need %lld-byte aligned pointers and stride_page a multiple of %d elements "
                 "(16-byte copies)", (long long)bytes, v->align);
        return why;
      }
    }
  }
  return NULL;
}

static const char *kg__attn_rejects_ctx(const kg_variant *v, const void *ctx, const kg_exec *exec, int *misaligned) {
  return kg__attn_rejects(v, (const kg__attn_key *)ctx, exec, misaligned);
}

/* ---- checks per op ---------------------------------------------------------------------- */

static kg_status kg__math_check(const kg_math_args *a, const kg_exec *exec, kg__attn_key *key, kg__sink *sink) {
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if ((int)a->fn < (int)KG_MATH_EXP2 || (int)a->fn > (int)KG_MATH_XOR_MAX)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown fn %d (allowed: KG_MATH_EXP2 .. KG_MATH_XOR_MAX)", (int)a->fn);
  if (!a->x || !a->y) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "x and y must not be NULL");
  const kg__ptr_rule al[] = { { "x", a->x, 4 }, { "y", a->y, 4 } };
  kg_status st = kg__check_aligned(al, KG__COUNT(al), sink);
  if (st) return st;
  if (a->n < 1 || a->n > KG__I32_MAX * 64)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "n = %lld (allowed: 1 .. 2^37)", (long long)a->n);
  if (kg__ranges_overlap(a->x, (size_t)a->n * 4, a->y, (size_t)a->n * 4))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "x and y overlap");
  const int lanes = kg_math_lanes(exec->backend);
  if (a->fn >= KG_MATH_SHFL_XOR) {
    if (lanes == 0 || a->n % lanes != 0)
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "shuffles need n = %lld a multiple of the %d lanes", (long long)a->n, lanes);
    if (a->fn == KG_MATH_SHFL_XOR && (a->lane_mask < 0 || a->lane_mask >= lanes))
      KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "lane_mask = %d (allowed: 0 .. %d)", a->lane_mask, lanes - 1);
    if (a->fn != KG_MATH_SHFL_XOR && (a->width < 1 || a->width > lanes || (a->width & (a->width - 1)) != 0))
      KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "width = %d (allowed: a power of two, 1 .. %d)", a->width, lanes);
  }
  key->table_op = KG_OP_MATH;
  key->dtype = KG_F32;
  key->kv_layout = -1;
  return KG_SUCCESS;
}

/* One q or k operand of RoPE. */
static kg_status kg__rope_operand(const char *nm, const void *in, int64_t sn, int64_t sh, void *out, int64_t osn,
                                  int64_t osh, int64_t heads, const kg_rope_args *a, kg__sink *sink) {
  if (!in) return KG_SUCCESS;
  if (!out) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "%s is set but %s_out is NULL", nm, nm);
  if (heads < 1) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "%s has %lld heads (allowed: >= 1)", nm, (long long)heads);
  if (sn < 0 || sh < 0 || osn < 0 || osh < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "%s strides must not be negative", nm);
  if (a->nnz == 0) return KG_SUCCESS;
  const int64_t ein = kg__rows_extent(a->nnz, sn, heads, sh, a->head_dim);
  const int64_t eout = kg__rows_extent(a->nnz, osn, heads, osh, a->head_dim);
  if (ein < 0 || eout < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "%s extent overflows int64", nm);
  if (!kg__rows_disjoint(a->nnz, osn, heads, osh, a->head_dim))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "%s_out strides (%lld, %lld) make rows of %lld elements overlap", nm,
             (long long)osn, (long long)osh, (long long)a->head_dim);
  const size_t es = kg_dtype_size(a->dtype);
  if (out == in) {
    if (osn != sn || osh != sh)
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "%s_out == %s (in place) needs the same strides", nm, nm);
  } else if (kg__ranges_overlap(in, (size_t)ein * es, out, (size_t)eout * es)) {
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "%s_out overlaps %s without being it (in place)", nm, nm);
  }
  return KG_SUCCESS;
}

static kg_status kg__rope_check(const kg_rope_args *a, const kg_exec *exec, kg__attn_key *key, kg_rope_job *job,
                                kg__sink *sink) {
  kg_status st;
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if (!kg__dtype_ok(a->dtype))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown dtype %d (allowed: KG_F32, KG_F16, KG_BF16)", (int)a->dtype);
  if (a->rope.mode == KG_ROPE_NONE)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "rope.mode is KG_ROPE_NONE (allowed: KG_ROPE_DEFAULT, KG_ROPE_LLAMA31)");
  if (a->nnz < 0 || a->nnz > KG__I32_MAX || a->head_dim < 2)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes: nnz %lld (allowed: 0 .. 2^31 - 1), head_dim %lld (allowed: >= 2)",
             (long long)a->nnz, (long long)a->head_dim);
  if (!a->q && !a->k) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "q and k are both NULL");
  const size_t es = kg_dtype_size(a->dtype);
  const kg__ptr_rule al[] = { { "q", a->q, es }, { "q_out", a->q_out, es }, { "k", a->k, es }, { "k_out", a->k_out, es },
                              { "pos_ids", a->pos_ids, 4 }, { "indptr", a->indptr, 4 }, { "offsets", a->offsets, 4 } };
  if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
  memset(job, 0, sizeof *job);
  if ((st = kg__rope_prepare(&a->rope, a->head_dim, &job->rope, sink))) return st;
  if ((st = kg__rope_operand("q", a->q, a->q_stride_n, a->q_stride_h, a->q_out, a->q_out_stride_n, a->q_out_stride_h,
                             a->num_qo_heads, a, sink)))
    return st;
  if ((st = kg__rope_operand("k", a->k, a->k_stride_n, a->k_stride_h, a->k_out, a->k_out_stride_n, a->k_out_stride_h,
                             a->num_kv_heads, a, sink)))
    return st;
  if (a->q && a->k && a->nnz > 0) {
    const int64_t eq = kg__rows_extent(a->nnz, a->q_out_stride_n, a->num_qo_heads, a->q_out_stride_h, a->head_dim);
    const int64_t ek = kg__rows_extent(a->nnz, a->k_out_stride_n, a->num_kv_heads, a->k_out_stride_h, a->head_dim);
    if (kg__ranges_overlap(a->q_out, (size_t)eq * es, a->k_out, (size_t)ek * es))
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "q_out and k_out overlap");
  }
  if (!a->pos_ids) {
    if (a->batch < 1 || a->batch > KG__I32_MAX || !a->indptr || !a->offsets)
      KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "pos_ids is NULL: batch >= 1, indptr and offsets are needed");
  }
  if (exec->backend == KG_BACKEND_C && a->nnz > 0) {
    if (a->pos_ids) {
      for (int64_t i = 0; i < a->nnz; i++)
        if (a->pos_ids[i] < 0) KG__FAIL(KG_ERROR_INVALID_PROBLEM, "pos_ids[%lld] = %d is negative", (long long)i, a->pos_ids[i]);
    } else {
      if (a->indptr[0] != 0 || a->indptr[a->batch] != a->nnz)
        KG__FAIL(KG_ERROR_INVALID_PROBLEM, "indptr must run from 0 to nnz = %lld (has %d .. %d)", (long long)a->nnz,
                 a->indptr[0], a->indptr[a->batch]);
      for (int64_t b = 0; b < a->batch; b++) {
        if (a->indptr[b + 1] < a->indptr[b])
          KG__FAIL(KG_ERROR_INVALID_PROBLEM, "indptr decreases at request %lld", (long long)b);
        if (a->offsets[b] < 0) KG__FAIL(KG_ERROR_INVALID_PROBLEM, "offsets[%lld] = %d is negative", (long long)b, a->offsets[b]);
      }
    }
  }
  job->nnz = a->nnz;
  job->head_dim = a->head_dim;
  job->heads[0] = a->q ? a->num_qo_heads : 0;
  job->heads[1] = a->k ? a->num_kv_heads : 0;
  job->in[0] = a->q; job->out[0] = a->q_out;
  job->in_sn[0] = a->q_stride_n; job->in_sh[0] = a->q_stride_h;
  job->out_sn[0] = a->q_out_stride_n; job->out_sh[0] = a->q_out_stride_h;
  job->in[1] = a->k; job->out[1] = a->k_out;
  job->in_sn[1] = a->k_stride_n; job->in_sh[1] = a->k_stride_h;
  job->out_sn[1] = a->k_out_stride_n; job->out_sh[1] = a->k_out_stride_h;
  job->pos_ids = a->pos_ids;
  job->batch = a->pos_ids ? 0 : a->batch;
  job->indptr = a->indptr;
  job->offsets = a->offsets;
  key->table_op = KG_OP_ROPE;
  key->dtype = a->dtype;
  key->kv_layout = -1;
  key->head_dim = a->head_dim;
  return KG_SUCCESS;
}

static int kg__cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static kg_status kg__append_check(kg_op op, const kg_paged_kv_append_args *a, const kg_exec *exec, kg__attn_key *key,
                                  kg_append_job *job, kg__sink *sink) {
  kg_status st;
  const int decode = op == KG_OP_PAGED_KV_APPEND_DECODE;
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  memset(job, 0, sizeof *job);
  if ((st = kg__kv_check(&a->kv, exec->backend, &job->kv, sink))) return st;
  if (a->nnz < 0 || a->nnz > KG__I32_MAX) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "nnz = %lld (allowed: 0 .. 2^31 - 1)", (long long)a->nnz);
  if (!a->k || !a->v) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "k and v must not be NULL");
  const size_t es = kg_dtype_size(a->kv.dtype);
  const kg__ptr_rule al[] = { { "k", a->k, es }, { "v", a->v, es }, { "batch_indices", a->batch_indices, 4 },
                              { "positions", a->positions, 4 } };
  if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
  if (a->k_stride_n < 0 || a->k_stride_h < 0 || a->v_stride_n < 0 || a->v_stride_h < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "k and v strides must not be negative");
  if (a->nnz > 0 && (kg__rows_extent(a->nnz, a->k_stride_n, a->kv.num_kv_heads, a->k_stride_h, a->kv.head_dim) < 0 ||
                     kg__rows_extent(a->nnz, a->v_stride_n, a->kv.num_kv_heads, a->v_stride_h, a->kv.head_dim) < 0))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "k or v extent overflows int64");
  if (decode) {
    if (a->batch_indices || a->positions)
      KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "decode append takes no batch_indices / positions (token b -> request b)");
    if (a->nnz != a->kv.batch)
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "decode append appends one token per request: nnz %lld, batch %lld",
               (long long)a->nnz, (long long)a->kv.batch);
  } else if (!a->batch_indices || !a->positions) {
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "batch_indices and positions must not be NULL (decode append: "
             "kg_paged_kv_append_decode)");
  }
  if (exec->backend == KG_BACKEND_C && a->nnz > 0) {
    int64_t *slots = (int64_t *)malloc((size_t)a->nnz * sizeof *slots);
    if (!slots) KG__FAIL(KG_ERROR_INTERNAL, "out of host memory checking %lld tokens", (long long)a->nnz);
    for (int64_t i = 0; i < a->nnz; i++) {
      const int64_t b = decode ? i : a->batch_indices[i];
      if (b < 0 || b >= a->kv.batch) {
        free(slots);
        KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch_indices[%lld] = %lld (allowed: 0 .. batch - 1)", (long long)i,
                 (long long)b);
      }
      const int64_t len = kg__kv_len_host(&job->kv, b);
      const int64_t pos = decode ? len - 1 : a->positions[i];
      if (pos < 0 || pos >= len) {
        free(slots);
        KG__FAIL(KG_ERROR_INVALID_PROBLEM, "token %lld: position %lld outside request %lld of length %lld (the page "
                 "table must count appended tokens)", (long long)i, (long long)pos, (long long)b, (long long)len);
      }
      const int64_t page = job->kv.indices[job->kv.indptr[b] + pos / job->kv.page_size];
      slots[i] = page * job->kv.page_size + pos % job->kv.page_size;
    }
    qsort(slots, (size_t)a->nnz, sizeof *slots, kg__cmp_i64);
    for (int64_t i = 1; i < a->nnz; i++)
      if (slots[i] == slots[i - 1]) {
        const int64_t s = slots[i];
        free(slots);
        KG__FAIL(KG_ERROR_INVALID_PROBLEM, "two tokens go to page %lld slot %lld", (long long)(s / a->kv.page_size),
                 (long long)(s % a->kv.page_size));
      }
    free(slots);
  }
  job->nnz = a->nnz;
  job->k = a->k; job->v = a->v;
  job->k_sn = a->k_stride_n; job->k_sh = a->k_stride_h;
  job->v_sn = a->v_stride_n; job->v_sh = a->v_stride_h;
  job->batch_indices = decode ? NULL : a->batch_indices;
  job->positions = decode ? NULL : a->positions;
  key->table_op = KG_OP_PAGED_KV_APPEND;
  key->dtype = a->kv.dtype;
  key->kv_layout = a->kv.layout;
  key->head_dim = a->kv.head_dim;
  return KG_SUCCESS;
}

/* Options shared by single and batch decode. */
static kg_status kg__decode_params(const kg_decode_params *pr, int64_t head_dim, kg_decode_job *job, kg__sink *sink) {
  kg_status st;
  if (isnan(pr->sm_scale) || isinf(pr->sm_scale))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "params.sm_scale = %g (allowed: finite; 0: 1/sqrt(head_dim))", pr->sm_scale);
  if (!(pr->logits_soft_cap >= 0.0f) || isinf(pr->logits_soft_cap))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "params.logits_soft_cap = %g (allowed: 0 (none) or > 0, finite)",
             pr->logits_soft_cap);
  if (pr->sliding_window < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "params.sliding_window = %lld (allowed: 0 (none) or >= 1 tokens)",
             (long long)pr->sliding_window);
  if (pr->kv_chunk_size < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "params.kv_chunk_size = %lld (allowed: 0 (planner) or >= 1)",
             (long long)pr->kv_chunk_size);
  if ((st = kg__rope_prepare(&pr->rope, head_dim, &job->rope, sink))) return st;
  const double sm = pr->sm_scale != 0.0f ? pr->sm_scale : 1.0 / sqrt((double)head_dim);
  const double log2e = 1.4426950408889634;
  if (pr->logits_soft_cap > 0.0f) {
    job->soft_cap = 1;
    job->logit_scale = (float)(sm / pr->logits_soft_cap);
    job->soft_cap_log2 = (float)(pr->logits_soft_cap * log2e);
  } else {
    job->logit_scale = (float)(sm * log2e);
  }
  job->window_left = pr->sliding_window - 1;
  return KG_SUCCESS;
}

static kg_status kg__decode_batch_check(const kg_decode_args *a, const kg_exec *exec, kg__attn_key *key,
                                        kg_decode_job *job, kg__sink *sink) {
  kg_status st;
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  memset(job, 0, sizeof *job);
  if ((st = kg__kv_check(&a->kv, exec->backend, &job->kv, sink))) return st;
  const int64_t D = a->kv.head_dim, Hk = a->kv.num_kv_heads, Hq = a->num_qo_heads;
  if (Hq < 1 || Hq % Hk != 0)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "num_qo_heads = %lld must be a positive multiple of num_kv_heads = %lld",
             (long long)Hq, (long long)Hk);
  if (!a->q || !a->o) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "q and o must not be NULL");
  const kg__ptr_rule al[] = { { "q", a->q, kg_dtype_size(a->kv.dtype) }, { "o", a->o, kg_dtype_size(a->kv.dtype) },
                              { "lse", a->lse, 4 }, { "q_rope_pos", a->q_rope_pos, 4 } };
  if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
  if (a->q_stride_n < 0 || a->q_stride_h < 0 || a->o_stride_n < 0 || a->o_stride_h < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "q and o strides must not be negative");
  const int64_t eq = kg__rows_extent(a->kv.batch, a->q_stride_n, Hq, a->q_stride_h, D);
  const int64_t eo = kg__rows_extent(a->kv.batch, a->o_stride_n, Hq, a->o_stride_h, D);
  if (eq < 0 || eo < 0 || kg__mad(a->kv.batch, Hq, 0) < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "q or o extent overflows int64");
  if (!kg__rows_disjoint(a->kv.batch, a->o_stride_n, Hq, a->o_stride_h, D))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "o strides (%lld, %lld) make rows of %lld elements overlap",
             (long long)a->o_stride_n, (long long)a->o_stride_h, (long long)D);
  const size_t es = kg_dtype_size(a->kv.dtype);
  if (kg__ranges_overlap(a->q, (size_t)eq * es, a->o, (size_t)eo * es))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "o overlaps q");
  if (a->lse && kg__ranges_overlap(a->lse, (size_t)(a->kv.batch * Hq) * 4, a->o, (size_t)eo * es))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "lse overlaps o");
  if (a->max_kv_len < 0 || a->max_kv_len > KG__I32_MAX)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "max_kv_len = %lld (allowed: 0 (unknown) .. 2^31 - 1)", (long long)a->max_kv_len);
  if (a->params.kv_chunk_size > 0 && a->max_kv_len == 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "params.kv_chunk_size needs max_kv_len (the workspace holds the chunks of the "
             "longest request)");
  if ((st = kg__decode_params(&a->params, D, job, sink))) return st;
  if (exec->backend == KG_BACKEND_C && a->q_rope_pos)
    for (int64_t b = 0; b < a->kv.batch; b++)
      if (a->q_rope_pos[b] < 0)
        KG__FAIL(KG_ERROR_INVALID_PROBLEM, "q_rope_pos[%lld] = %d is negative", (long long)b, a->q_rope_pos[b]);
  job->num_qo_heads = Hq;
  job->group = Hq / Hk;
  job->q = a->q; job->q_sn = a->q_stride_n; job->q_sh = a->q_stride_h;
  job->o = a->o; job->o_sn = a->o_stride_n; job->o_sh = a->o_stride_h;
  job->lse = a->lse;
  job->q_pos = a->q_rope_pos;
  job->q_pos_fixed = -1;
  int64_t L = a->max_kv_len;
  if (a->params.sliding_window > 0 && L > a->params.sliding_window) L = a->params.sliding_window;
  key->table_op = KG_OP_DECODE_BATCH;
  key->dtype = a->kv.dtype;
  key->kv_layout = a->kv.layout;
  key->head_dim = D;
  key->k = a->kv.k_data; key->v = a->kv.v_data;
  key->stride_page = job->kv.stride_page;
  key->batch = a->kv.batch; key->num_kv_heads = Hk; key->group = Hq / Hk;
  key->max_len = L;
  key->forced_chunk = a->params.kv_chunk_size;
  key->rope = job->rope.rotary_dim > 0;
  return KG_SUCCESS;
}

static kg_status kg__decode_single_check(const kg_decode_single_args *a, const kg_exec *exec, kg__attn_key *key,
                                         kg_decode_job *job, kg__sink *sink) {
  kg_status st;
  (void)exec;
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if (!kg__dtype_ok(a->dtype))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown dtype %d (allowed: KG_F32, KG_F16, KG_BF16)", (int)a->dtype);
  if (!kg__layout_ok(a->layout))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown layout %d (allowed: KG_KV_NHD, KG_KV_HND)", (int)a->layout);
  const int64_t D = a->head_dim, Hk = a->num_kv_heads, Hq = a->num_qo_heads, L = a->kv_len;
  if (D < 1 || Hk < 1 || L < 1 || L > KG__I32_MAX)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes: head_dim %lld, num_kv_heads %lld (allowed: >= 1), kv_len %lld "
             "(allowed: 1 .. 2^31 - 1)", (long long)D, (long long)Hk, (long long)L);
  if (Hq < 1 || Hq % Hk != 0)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "num_qo_heads = %lld must be a positive multiple of num_kv_heads = %lld",
             (long long)Hq, (long long)Hk);
  if (!a->q || !a->k || !a->v || !a->o) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "q, k, v and o must not be NULL");
  const size_t es = kg_dtype_size(a->dtype);
  const kg__ptr_rule al[] = { { "q", a->q, es }, { "k", a->k, es }, { "v", a->v, es }, { "o", a->o, es },
                              { "lse", a->lse, 4 } };
  if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
  if (a->q_rope_pos < -1) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "q_rope_pos = %lld (allowed: -1 or >= 0)", (long long)a->q_rope_pos);
  const int64_t ekv = kg__mad(L, Hk, 0) < 0 ? -1 : kg__mad(L * Hk, D, 0);
  if (ekv < 0 || kg__mad(ekv, 8, 0) < 0 || kg__mad(Hq, D, 0) < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "k / v extent overflows int64");
  const size_t qo = (size_t)(Hq * D) * es, kvb = (size_t)ekv * es;
  if (kg__ranges_overlap(a->o, qo, a->q, qo) || kg__ranges_overlap(a->o, qo, a->k, kvb) ||
      kg__ranges_overlap(a->o, qo, a->v, kvb))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "o overlaps q, k or v");
  memset(job, 0, sizeof *job);
  if ((st = kg__decode_params(&a->params, D, job, sink))) return st;
  /* one contiguous sequence: page 0 of kv_len slots */
  job->kv.num_pages = 1;
  job->kv.page_size = L;
  job->kv.num_kv_heads = Hk;
  job->kv.head_dim = D;
  job->kv.stride_page = ekv;
  job->kv.stride_n = a->layout == KG_KV_NHD ? Hk * D : D;
  job->kv.stride_h = a->layout == KG_KV_NHD ? D : L * D;
  job->kv.k = a->k;
  job->kv.v = a->v;
  job->kv.batch = 1;
  job->num_qo_heads = Hq;
  job->group = Hq / Hk;
  job->q = a->q; job->q_sn = Hq * D; job->q_sh = D;
  job->o = a->o; job->o_sn = Hq * D; job->o_sh = D;
  job->lse = a->lse;
  job->q_pos_fixed = a->q_rope_pos;
  int64_t ml = L;
  if (a->params.sliding_window > 0 && ml > a->params.sliding_window) ml = a->params.sliding_window;
  key->table_op = KG_OP_DECODE_BATCH;
  key->dtype = a->dtype;
  key->kv_layout = a->layout;
  key->head_dim = D;
  key->k = a->k; key->v = a->v;
  key->stride_page = 0;
  key->batch = 1; key->num_kv_heads = Hk; key->group = Hq / Hk;
  key->max_len = ml;
  key->forced_chunk = a->params.kv_chunk_size;
  key->single = 1;
  key->rope = job->rope.rotary_dim > 0;
  return KG_SUCCESS;
}

/* Merge ops: a state tensor of rows x heads x dim (values) and rows x heads (lse). */
static kg_status kg__merge_sizes(kg_dtype t, int64_t n, int64_t heads, int64_t dim, kg__sink *sink) {
  if (!kg__dtype_ok(t)) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown dtype %d (allowed: KG_F32, KG_F16, KG_BF16)", (int)t);
  if (n < 0 || heads < 1 || dim < 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes: n %lld (allowed: >= 0), num_heads %lld, head_dim %lld (allowed: >= 1)",
             (long long)n, (long long)heads, (long long)dim);
  if (kg__mad(n, heads, 0) < 0 || kg__mad(kg__mad(n, heads, 0), dim, 0) < 0 ||
      kg__mad(kg__mad(n, heads, 0) * dim, 8, 0) < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "state tensor extent overflows int64");
  return KG_SUCCESS;
}

static kg_status kg__merge_check(kg_op op, const void *args, const kg_exec *exec, kg__attn_key *key, kg_merge_job *job,
                                 kg__sink *sink) {
  kg_status st;
  if (!args) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  memset(job, 0, sizeof *job);
  kg_dtype t = KG_F32;
  int64_t in_rows = 0;   /* rows of the input state tensor(s) */
  const void *outs[2] = { NULL, NULL };
  const void *ins[4] = { NULL, NULL, NULL, NULL };
  switch (op) {
    case KG_OP_MERGE_STATE: {
      const kg_merge_state_args *a = (const kg_merge_state_args *)args;
      if ((st = kg__merge_sizes(a->dtype, a->n, a->num_heads, a->head_dim, sink))) return st;
      if (!a->v_a || !a->s_a || !a->v_b || !a->s_b || !a->v_out)
        KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "v_a, s_a, v_b, s_b and v_out must not be NULL");
      const size_t es = kg_dtype_size(a->dtype);
      const kg__ptr_rule al[] = { { "v_a", a->v_a, es }, { "s_a", a->s_a, 4 }, { "v_b", a->v_b, es },
                                  { "s_b", a->s_b, 4 }, { "v_out", a->v_out, es }, { "s_out", a->s_out, 4 } };
      if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
      t = a->dtype;
      job->n = a->n; job->num_heads = a->num_heads; job->head_dim = a->head_dim;
      job->v_a = a->v_a; job->s_a = a->s_a; job->v_b = a->v_b; job->s_b = a->s_b;
      job->v_out = a->v_out; job->s_out = a->s_out;
      in_rows = a->n;
      ins[0] = a->v_a; ins[1] = a->s_a; ins[2] = a->v_b; ins[3] = a->s_b;
      outs[0] = a->v_out; outs[1] = a->s_out;
      break;
    }
    case KG_OP_MERGE_STATE_IN_PLACE: {
      const kg_merge_state_in_place_args *a = (const kg_merge_state_in_place_args *)args;
      if ((st = kg__merge_sizes(a->dtype, a->n, a->num_heads, a->head_dim, sink))) return st;
      if (!a->v || !a->s || !a->v_other || !a->s_other)
        KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "v, s, v_other and s_other must not be NULL");
      const size_t es = kg_dtype_size(a->dtype);
      const kg__ptr_rule al[] = { { "v", a->v, es }, { "s", a->s, 4 }, { "v_other", a->v_other, es },
                                  { "s_other", a->s_other, 4 } };
      if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
      t = a->dtype;
      job->n = a->n; job->num_heads = a->num_heads; job->head_dim = a->head_dim;
      job->v_a = a->v; job->s_a = a->s; job->v_b = a->v_other; job->s_b = a->s_other;
      job->v_out = a->v; job->s_out = a->s; job->mask = a->mask;
      in_rows = a->n;
      ins[2] = a->v_other; ins[3] = a->s_other;   /* v, s are the outputs too */
      outs[0] = a->v; outs[1] = a->s;
      break;
    }
    case KG_OP_MERGE_STATES: {
      const kg_merge_states_args *a = (const kg_merge_states_args *)args;
      if ((st = kg__merge_sizes(a->dtype, a->n, a->num_heads, a->head_dim, sink))) return st;
      if (a->num_states < 0 || a->num_states > KG__I32_MAX)
        KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "num_states = %lld (allowed: 0 .. 2^31 - 1)", (long long)a->num_states);
      if ((a->num_states > 0 && (!a->v || !a->s)) || !a->v_out)
        KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "v, s (num_states > 0) and v_out must not be NULL");
      const size_t es = kg_dtype_size(a->dtype);
      const kg__ptr_rule al[] = { { "v", a->v, es }, { "s", a->s, 4 }, { "v_out", a->v_out, es }, { "s_out", a->s_out, 4 } };
      if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
      if (kg__mad(a->n, a->num_states, 0) < 0 || kg__merge_sizes(a->dtype, a->n * a->num_states, a->num_heads,
                                                                  a->head_dim, NULL) != KG_SUCCESS)
        KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "input state tensor extent overflows int64");
      t = a->dtype;
      job->n = a->n; job->num_heads = a->num_heads; job->head_dim = a->head_dim; job->k = a->num_states;
      job->v_a = a->v; job->s_a = a->s; job->v_out = a->v_out; job->s_out = a->s_out;
      in_rows = a->n * a->num_states;
      ins[0] = a->v; ins[1] = a->s;
      outs[0] = a->v_out; outs[1] = a->s_out;
      break;
    }
    case KG_OP_MERGE_STATES_VARLEN: {
      const kg_merge_states_varlen_args *a = (const kg_merge_states_varlen_args *)args;
      if ((st = kg__merge_sizes(a->dtype, a->n, a->num_heads, a->head_dim, sink))) return st;
      if (!a->indptr || !a->v || !a->s || !a->v_out)
        KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "indptr, v, s and v_out must not be NULL");
      const size_t es = kg_dtype_size(a->dtype);
      const kg__ptr_rule al[] = { { "indptr", a->indptr, 4 }, { "v", a->v, es }, { "s", a->s, 4 },
                                  { "v_out", a->v_out, es }, { "s_out", a->s_out, 4 } };
      if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
      t = a->dtype;
      if (exec->backend == KG_BACKEND_C) {
        if (a->indptr[0] != 0) KG__FAIL(KG_ERROR_INVALID_PROBLEM, "indptr[0] = %d (allowed: 0)", a->indptr[0]);
        for (int64_t r = 0; r < a->n; r++)
          if (a->indptr[r + 1] < a->indptr[r])
            KG__FAIL(KG_ERROR_INVALID_PROBLEM, "indptr decreases at row %lld", (long long)r);
        in_rows = a->indptr[a->n];
        if (kg__merge_sizes(a->dtype, in_rows, a->num_heads, a->head_dim, NULL) != KG_SUCCESS)
          KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "input state tensor extent overflows int64");
      }
      job->n = a->n; job->num_heads = a->num_heads; job->head_dim = a->head_dim; job->indptr = a->indptr;
      job->v_a = a->v; job->s_a = a->s; job->v_out = a->v_out; job->s_out = a->s_out;
      ins[0] = a->v; ins[1] = a->s;
      outs[0] = a->v_out; outs[1] = a->s_out;
      break;
    }
    default: KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown op %d", (int)op);
  }
  /* outputs must not overlap inputs (the in-place op's own v, s apart); the
  ** varlen input size is known on the host only */
  const size_t es = kg_dtype_size(t);
  const size_t vo = (size_t)(job->n * job->num_heads * job->head_dim) * es, so = (size_t)(job->n * job->num_heads) * 4;
  const size_t vi = (size_t)(in_rows * job->num_heads * job->head_dim) * es, si = (size_t)(in_rows * job->num_heads) * 4;
  if (kg__ranges_overlap(outs[0], vo, outs[1], so)) KG__FAIL(KG_ERROR_INVALID_PROBLEM, "the output values and lse overlap");
  for (int o = 0; o < 2; o++)
    for (int i = 0; i < 4; i++)
      if (kg__ranges_overlap(outs[o], o ? so : vo, ins[i], i % 2 ? si : vi))
        KG__FAIL(KG_ERROR_INVALID_PROBLEM, "an output overlaps an input state");
  key->table_op = KG_OP_MERGE_STATES;
  key->dtype = t;
  key->kv_layout = -1;
  key->head_dim = job->head_dim;
  return KG_SUCCESS;
}

/* ---- select, plan, run --------------------------------------------------------------------- */

static kg_status kg__attn_select(kg_op op, const void *args, const kg_exec *exec, kg__attn_call *call,
                                 const kg_variant **out, kg_decode_plan_info *plan, kg__sink *sink) {
  kg_status st;
  memset(&call->key, 0, sizeof call->key);
  if ((st = kg__check_exec(exec, sink)) != KG_SUCCESS) return st;
  switch (op) {
    case KG_OP_MATH: st = kg__math_check((const kg_math_args *)args, exec, &call->key, sink); break;
    case KG_OP_ROPE: st = kg__rope_check((const kg_rope_args *)args, exec, &call->key, &call->rope, sink); break;
    case KG_OP_PAGED_KV_APPEND: case KG_OP_PAGED_KV_APPEND_DECODE:
      st = kg__append_check(op, (const kg_paged_kv_append_args *)args, exec, &call->key, &call->append, sink);
      break;
    case KG_OP_DECODE_BATCH:
      st = kg__decode_batch_check((const kg_decode_args *)args, exec, &call->key, &call->decode, sink);
      break;
    case KG_OP_DECODE_SINGLE:
      st = kg__decode_single_check((const kg_decode_single_args *)args, exec, &call->key, &call->decode, sink);
      break;
    case KG_OP_MERGE_STATE: case KG_OP_MERGE_STATE_IN_PLACE: case KG_OP_MERGE_STATES: case KG_OP_MERGE_STATES_VARLEN:
      st = kg__merge_check(op, args, exec, &call->key, &call->merge, sink);
      break;
    default: KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown op %d", (int)op);
  }
  if (st != KG_SUCCESS) return st;
  if ((st = kg__first_fit(call->key.table_op, kg__attn_rejects_ctx, &call->key, exec, out, sink)) != KG_SUCCESS)
    return st;
  memset(plan, 0, sizeof *plan);
  if (call->key.table_op != KG_OP_DECODE_BATCH) return KG_SUCCESS;
  kg__plan(*out, &call->key, exec->backend, plan);
  call->decode.chunk_size = plan->chunk_size;
  call->decode.num_chunks = plan->num_chunks;
  return KG_SUCCESS;
}

/* select + workspace check (decode), then the job is complete. */
static kg_status kg__attn_prepare(kg_op op, const void *args, const kg_exec *exec, kg__attn_call *call,
                                  const kg_variant **out, kg__sink *sink) {
  kg_decode_plan_info plan;
  kg_status st = kg__attn_select(op, args, exec, call, out, &plan, sink);
  if (st != KG_SUCCESS || plan.workspace_bytes == 0) return st;
  if (!exec->workspace || exec->workspace_size < plan.workspace_bytes) {
    kg__say(sink, "workspace: %zu bytes needed (%lld chunks of %lld tokens), %zu given\n", plan.workspace_bytes,
            (long long)plan.num_chunks, (long long)plan.chunk_size, exec->workspace ? exec->workspace_size : 0);
    return KG_ERROR_WORKSPACE_TOO_SMALL;
  }
  if ((uintptr_t)exec->workspace % 16 != 0) {
    kg__say(sink, "workspace: must be 16-byte aligned\n");
    return KG_ERROR_MISALIGNED_OPERAND;
  }
  const kg__attn_key *k = &call->key;
  const int64_t rows = k->batch * plan.num_chunks * k->num_kv_heads * k->group;
  call->decode.part_o = (float *)exec->workspace;
  call->decode.part_lse = (float *)((char *)exec->workspace + (rows * k->head_dim * 4 + 15) / 16 * 16);
  return KG_SUCCESS;
}

kg_status kg__attn_explain(kg_op op, const void *args, const kg_exec *exec, kg__sink *sink) {
  kg__attn_call call;
  const kg_variant *v = NULL;
  return kg__attn_prepare(op, args, exec, &call, &v, sink);
}

static kg_status kg__attn_run(kg_op op, const void *args, const kg_exec *exec) {
  kg__attn_call call;
  const kg_variant *v = NULL;
  kg_status st = kg__attn_prepare(op, args, exec, &call, &v, NULL);
  if (st != KG_SUCCESS) return st;
  switch (call.key.table_op) {
    case KG_OP_MATH: return v->math_launch((const kg_math_args *)args, exec);
    case KG_OP_ROPE: return call.rope.nnz > 0 ? v->rope_launch(&call.rope, exec) : KG_SUCCESS;
    case KG_OP_PAGED_KV_APPEND: return call.append.nnz > 0 ? v->append_launch(&call.append, exec) : KG_SUCCESS;
    case KG_OP_DECODE_BATCH: return v->decode_launch(&call.decode, exec);
    case KG_OP_MERGE_STATES: return call.merge.n > 0 ? v->merge_launch(&call.merge, exec) : KG_SUCCESS;
    default: return KG_ERROR_INTERNAL;
  }
}

kg_status kg_attn_select(kg_op op, const void *args, const kg_exec *exec, const char **name) {
  kg__attn_call call;
  kg_decode_plan_info plan;
  const kg_variant *v = NULL;
  if (!name) return KG_ERROR_INVALID_ARGUMENT;
  *name = NULL;
  if (!kg__attn_op(op)) return KG_ERROR_INVALID_ARGUMENT;
  kg_status st = kg__attn_select(op, args, exec, &call, &v, &plan, NULL);
  if (st == KG_SUCCESS) *name = v->name;
  return st;
}

static kg_status kg__decode_plan_of(kg_op op, const void *args, const kg_exec *exec, kg_decode_plan_info *plan) {
  kg__attn_call call;
  const kg_variant *v = NULL;
  if (!plan) return KG_ERROR_INVALID_ARGUMENT;
  memset(plan, 0, sizeof *plan);
  return kg__attn_select(op, args, exec, &call, &v, plan, NULL);
}

/* ---- entry points ------------------------------------------------------------------------------ */

kg_status kg_math_eval(const kg_math_args *args, const kg_exec *exec) { return kg__attn_run(KG_OP_MATH, args, exec); }
kg_status kg_rope_apply(const kg_rope_args *args, const kg_exec *exec) { return kg__attn_run(KG_OP_ROPE, args, exec); }
kg_status kg_paged_kv_append(const kg_paged_kv_append_args *args, const kg_exec *exec) {
  return kg__attn_run(KG_OP_PAGED_KV_APPEND, args, exec);
}
kg_status kg_paged_kv_append_decode(const kg_paged_kv_append_args *args, const kg_exec *exec) {
  return kg__attn_run(KG_OP_PAGED_KV_APPEND_DECODE, args, exec);
}
kg_status kg_decode_batch(const kg_decode_args *args, const kg_exec *exec) {
  return kg__attn_run(KG_OP_DECODE_BATCH, args, exec);
}
kg_status kg_decode_single(const kg_decode_single_args *args, const kg_exec *exec) {
  return kg__attn_run(KG_OP_DECODE_SINGLE, args, exec);
}
kg_status kg_decode_plan(const kg_decode_args *args, const kg_exec *exec, kg_decode_plan_info *plan) {
  return kg__decode_plan_of(KG_OP_DECODE_BATCH, args, exec, plan);
}
kg_status kg_decode_single_plan(const kg_decode_single_args *args, const kg_exec *exec, kg_decode_plan_info *plan) {
  return kg__decode_plan_of(KG_OP_DECODE_SINGLE, args, exec, plan);
}
/* Workspace of a decode op: its plan's, 0 when the plan fails. */
static kg_status kg__decode_workspace(kg_op op, const void *args, const kg_exec *exec, size_t *bytes) {
  kg_decode_plan_info plan;
  if (!bytes) return KG_ERROR_INVALID_ARGUMENT;
  kg_status st = kg__decode_plan_of(op, args, exec, &plan);
  *bytes = st == KG_SUCCESS ? plan.workspace_bytes : 0;
  return st;
}
kg_status kg_decode_workspace_size(const kg_decode_args *args, const kg_exec *exec, size_t *bytes) {
  return kg__decode_workspace(KG_OP_DECODE_BATCH, args, exec, bytes);
}
kg_status kg_decode_single_workspace_size(const kg_decode_single_args *args, const kg_exec *exec, size_t *bytes) {
  return kg__decode_workspace(KG_OP_DECODE_SINGLE, args, exec, bytes);
}
kg_status kg_decode_select(const kg_decode_args *args, const kg_exec *exec, const char **name) {
  return kg_attn_select(KG_OP_DECODE_BATCH, args, exec, name);
}
kg_status kg_merge_state(const kg_merge_state_args *args, const kg_exec *exec) {
  return kg__attn_run(KG_OP_MERGE_STATE, args, exec);
}
kg_status kg_merge_state_in_place(const kg_merge_state_in_place_args *args, const kg_exec *exec) {
  return kg__attn_run(KG_OP_MERGE_STATE_IN_PLACE, args, exec);
}
kg_status kg_merge_states(const kg_merge_states_args *args, const kg_exec *exec) {
  return kg__attn_run(KG_OP_MERGE_STATES, args, exec);
}
kg_status kg_merge_states_varlen(const kg_merge_states_varlen_args *args, const kg_exec *exec) {
  return kg__attn_run(KG_OP_MERGE_STATES_VARLEN, args, exec);
}
