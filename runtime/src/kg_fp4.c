/*
** kg_fp4.c -- block-scaled FP4 (NVFP4, MXFP4): host helpers (E2M1, global
** scale, scale-buffer sizes, offsets and the 6-D view), argument checks,
** first-fit dispatch and explain for quantize, dequantize and the scale
** conversions (swizzle, unswizzle, reswizzle). The rules are kg.h's.
**
** Invariant (as for GEMM): a generated FP4 variant runs only after these
** checks passed and its descriptor matched, so generated code never
** re-validates: sizes >= 1, k even, lds cover rows, sf buffers have exactly
** their layout's size, every offset fits int64.
*/
#include <stdio.h>
#include <string.h>

#include "kg_internal.h"
#include "kg_half.h"

/* ---- element and scale helpers -------------------------------------------- */

int kg_fp4_block_size(kg_fp4_format f) {
  switch (f) {
    case KG_FP4_NVFP4: return 16;
    case KG_FP4_MXFP4: return 32;
  }
  return 0;
}

int64_t kg_fp4_kv(kg_fp4_format f, int64_t k) {
  int bs = kg_fp4_block_size(f);
  if (bs == 0 || k < 1) return 0;
  return k / bs + (k % bs != 0);
}

uint8_t kg_e2m1_encode(float x) {
  uint32_t u = kg__f32_bits(x);
  float a = kg__bits_f32(u & 0x7fffffffu);
  if (a != a) return 0;  /* NaN -> +0 */
  uint8_t c;
  if (a <= 0.25f) c = 0;
  else if (a < 0.75f) c = 1;
  else if (a <= 1.25f) c = 2;
  else if (a < 1.75f) c = 3;
  else if (a <= 2.5f) c = 4;
  else if (a < 3.5f) c = 5;
  else if (a <= 5.0f) c = 6;
  else c = 7;
  return (uint8_t)(c | ((u >> 28) & 8u));
}

float kg_e2m1_decode(uint8_t code) {
  static const float mag[8] = { 0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f };
  float v = mag[code & 7u];
  return (code & 8u) ? -v : v;
}

float kg_nvfp4_global_scale(float amax) {
  if (!(amax > 0.0f) || kg__f32_bits(amax) >= 0x7f800000u) return 1.0f;  /* 0, negative, NaN, Inf */
  float gs = 2688.0f / amax;  /* 448 * 6 */
  if (kg__f32_bits(gs) >= 0x7f800000u) return 1.0f;
  return gs;
}

static int kg__sf_layout_valid(int l) {
  return l == KG_SF_LINEAR || l == KG_SF_SWIZZLED_128X4 || l == KG_SF_SWIZZLED_8X4;
}
static const char *kg__sf_layout_string(int l) {
  switch (l) {
    case KG_SF_LINEAR: return "linear";
    case KG_SF_SWIZZLED_128X4: return "128x4";
    case KG_SF_SWIZZLED_8X4: return "8x4";
  }
  return "unknown";
}
static const char *kg__fp4_format_string(int f) {
  return f == KG_FP4_NVFP4 ? "nvfp4" : f == KG_FP4_MXFP4 ? "mxfp4" : "unknown";
}
static const char *kg__mx_round_string(int r) {
  return r == KG_MX_ROUND_UP ? "up" : r == KG_MX_ROUND_DOWN ? "down" : r == KG_MX_ROUND_OCP ? "ocp" : "unknown";
}

/* Row and column padding of a layout. */
static void kg__sf_pad(int layout, int64_t *mp, int64_t *kp) {
  *mp = layout == KG_SF_SWIZZLED_128X4 ? 128 : layout == KG_SF_SWIZZLED_8X4 ? 8 : 1;
  *kp = layout == KG_SF_LINEAR ? 1 : 4;
}

kg_status kg_sf_size(kg_sf_layout layout, int64_t rows, int64_t kv, int64_t groups, size_t *bytes) {
  if (!bytes) return KG_ERROR_INVALID_ARGUMENT;
  *bytes = 0;
  if (!kg__sf_layout_valid(layout) || rows < 1 || kv < 1 || groups < 1) return KG_ERROR_INVALID_ARGUMENT;
  int64_t mp, kp, a, b;
  kg__sf_pad(layout, &mp, &kp);
  int64_t mpad = rows / mp + (rows % mp != 0), kpad = kv / kp + (kv % kp != 0);
  if (__builtin_mul_overflow(mpad, mp, &a) || __builtin_mul_overflow(kpad, kp, &b) ||
      __builtin_mul_overflow(a, b, &a) || __builtin_mul_overflow(a, groups, &a) ||
      (uint64_t)a > (uint64_t)SIZE_MAX)
    return KG_ERROR_INVALID_ARGUMENT;
  *bytes = (size_t)a;
  return KG_SUCCESS;
}

int64_t kg_sf_offset(kg_sf_layout layout, int64_t rows, int64_t kv, int64_t g, int64_t m, int64_t kb) {
  size_t one;
  if (g < 0 || m < 0 || kb < 0 || m >= rows || kb >= kv) return -1;
  /* the size of g+1 groups must exist (no overflow) */
  if (g == INT64_MAX || kg_sf_size(layout, rows, kv, g + 1, &one) != KG_SUCCESS) return -1;
  switch (layout) {
    case KG_SF_LINEAR: return (g * rows + m) * kv + kb;
    case KG_SF_SWIZZLED_128X4: {
      int64_t mt = (rows + 127) / 128, kt = (kv + 3) / 4;
      return ((g * mt + m / 128) * kt + kb / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + kb % 4;
    }
    case KG_SF_SWIZZLED_8X4: {
      int64_t mt = (rows + 7) / 8, kt = (kv + 3) / 4;
      return ((g * mt + m / 8) * kt + kb / 4) * 32 + (m % 8) * 4 + kb % 4;
    }
  }
  return -1;
}

kg_status kg_sf_view_128x4(int64_t rows, int64_t kv, int64_t groups, kg_sf_view *out) {
  size_t bytes;
  if (!out) return KG_ERROR_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  kg_status st = kg_sf_size(KG_SF_SWIZZLED_128X4, rows, kv, groups, &bytes);
  if (st != KG_SUCCESS) return st;
  int64_t mt = (rows + 127) / 128, kt = (kv + 3) / 4;
  const int64_t shape[6] = { 32, 4, mt, 4, kt, groups };
  const int64_t stride[6] = { 16, 4, kt * 512, 1, 512, mt * kt * 512 };
  memcpy(out->shape, shape, sizeof shape);
  memcpy(out->stride, stride, sizeof stride);
  return KG_SUCCESS;
}

int64_t kg_sf_view_index(const kg_sf_view *view, int64_t m, int64_t kb, int64_t g) {
  if (!view || m < 0 || kb < 0 || g < 0) return -1;
  const int64_t c[6] = { m % 32, (m % 128) / 32, m / 128, kb % 4, kb / 4, g };
  int64_t off = 0;
  for (int i = 0; i < 6; i++) {
    if (c[i] >= view->shape[i]) return -1;
    off += c[i] * view->stride[i];
  }
  return off;
}

/* ---- checks ----------------------------------------------------------------- */

#define KG__FAIL(st, ...) do { kg__say(sink, "arguments: " __VA_ARGS__); kg__say(sink, "\n"); return (st); } while (0)

int kg__fp4_op(kg_op op) {
  return op == KG_OP_FP4_QUANTIZE || op == KG_OP_FP4_DEQUANTIZE || op == KG_OP_SF_SWIZZLE ||
         op == KG_OP_SF_UNSWIZZLE || op == KG_OP_SF_RESWIZZLE || op == KG_OP_GEMM_FP4;
}

/* What dispatch matches on, whatever the op. */
typedef struct kg__fp4_key {
  kg_op op;
  kg_dtype dtype;      /* quantize / dequantize */
  int format;          /* -1 for conversions */
  int sf_layout;       /* conversions: the swizzled side */
  int mx_round;        /* MXFP4 quantize, else -1 */
  const kg_gemm_fp4_args *gemm;  /* KG_OP_GEMM_FP4: m and alignment predicates; else NULL */
} kg__fp4_key;

/* (rows-1)*ld + (batch-1)*bs + cols: the extent of one operand, -1 on overflow. */
static int64_t kg__fp4_extent(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t bs) {
  int64_t a, b, e;
  if (__builtin_mul_overflow(rows - 1, ld, &a) || __builtin_mul_overflow(batch - 1, bs, &b) ||
      __builtin_add_overflow(a, b, &e) || __builtin_add_overflow(e, cols, &e) ||
      __builtin_mul_overflow(e, (int64_t)8, &a))
    return -1;
  return e;
}

static kg_status kg__fp4_check(kg_op op, const kg_fp4_args *a, kg__fp4_key *key, kg__sink *sink) {
  const int quant = op == KG_OP_FP4_QUANTIZE;
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if (a->format != KG_FP4_NVFP4 && a->format != KG_FP4_MXFP4)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown format %d (allowed: KG_FP4_NVFP4, KG_FP4_MXFP4)", (int)a->format);
  if (!kg__sf_layout_valid(a->sf_layout))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown sf_layout %d (allowed: KG_SF_LINEAR, KG_SF_SWIZZLED_128X4, "
             "KG_SF_SWIZZLED_8X4)", (int)a->sf_layout);
  if (a->dtype != KG_F32 && a->dtype != KG_F16 && a->dtype != KG_BF16)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown dtype %d (allowed: KG_F32, KG_F16, KG_BF16)", (int)a->dtype);
  if (quant && a->format == KG_FP4_MXFP4 && a->mx_round != KG_MX_ROUND_UP && a->mx_round != KG_MX_ROUND_DOWN &&
      a->mx_round != KG_MX_ROUND_OCP)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown mx_round %d (allowed: KG_MX_ROUND_UP, KG_MX_ROUND_DOWN, "
             "KG_MX_ROUND_OCP)", (int)a->mx_round);
  if (!a->x || !a->q || !a->sf) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "x, q and sf must not be NULL");
  if (a->batch < 1 || a->rows < 1 || a->k < 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes must be >= 1 (batch %lld, rows %lld, k %lld)", (long long)a->batch,
             (long long)a->rows, (long long)a->k);
  if (a->k % 2 != 0)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "k = %lld is odd: two E2M1 elements share a byte, k must be even",
             (long long)a->k);
  if (a->ldx < a->k) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ldx = %lld is smaller than k = %lld", (long long)a->ldx,
                              (long long)a->k);
  if (a->ldq < a->k / 2) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ldq = %lld bytes is smaller than k/2 = %lld",
                                  (long long)a->ldq, (long long)(a->k / 2));
  int64_t bsx = a->batch > 1 ? a->batch_stride_x : 0, bsq = a->batch > 1 ? a->batch_stride_q : 0;
  if (bsx < 0 || bsq < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "batch strides must not be negative (x %lld, q %lld)", (long long)bsx,
             (long long)bsq);
  if (kg__fp4_extent(a->rows, a->k, a->ldx, a->batch, bsx) < 0 ||
      kg__fp4_extent(a->rows, a->k / 2, a->ldq, a->batch, bsq) < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "operand extent overflows int64");
  if (a->batch > 1) {
    if (quant && bsq < kg__fp4_extent(a->rows, a->k / 2, a->ldq, 1, 0))
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch_stride_q %lld makes output batches overlap", (long long)bsq);
    if (!quant && bsx < kg__fp4_extent(a->rows, a->k, a->ldx, 1, 0))
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch_stride_x %lld makes output batches overlap", (long long)bsx);
  }
  int64_t kv = kg_fp4_kv(a->format, a->k);
  size_t need;
  if (kg_sf_size(a->sf_layout, a->rows, kv, a->batch, &need) != KG_SUCCESS)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "scale buffer size overflows");
  if (a->sf_bytes != need)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "sf_bytes = %zu but the %s scale buffer of %lld x %lld scales x %lld groups "
             "is %zu bytes (kg_sf_size)", a->sf_bytes, kg__sf_layout_string(a->sf_layout), (long long)a->rows,
             (long long)kv, (long long)a->batch, need);
  if (a->format == KG_FP4_MXFP4 && a->global_scale)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "global_scale is for NVFP4; MXFP4 takes NULL");
  key->op = op;
  key->dtype = a->dtype;
  key->format = a->format;
  key->sf_layout = a->sf_layout;
  key->mx_round = quant && a->format == KG_FP4_MXFP4 ? (int)a->mx_round : -1;
  return KG_SUCCESS;
}

/* KG_OP_GEMM_FP4: every rule of kg.h's W4A16 section except the per-variant
** ones (m limit, alignment), which kg__fp4_rejects says. */
static kg_status kg__gemm_fp4_check(const kg_gemm_fp4_args *a, kg__fp4_key *key, kg__sink *sink) {
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if (a->format != KG_FP4_NVFP4 && a->format != KG_FP4_MXFP4)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown format %d (allowed: KG_FP4_NVFP4, KG_FP4_MXFP4)", (int)a->format);
  if (!kg__sf_layout_valid(a->sf_layout))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown sf_layout %d (allowed: KG_SF_LINEAR, KG_SF_SWIZZLED_128X4, "
             "KG_SF_SWIZZLED_8X4)", (int)a->sf_layout);
  if (a->dtype != KG_F16 && a->dtype != KG_BF16)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "dtype %d: activations are 16-bit (allowed: KG_F16, KG_BF16)", (int)a->dtype);
  if (!a->a || !a->b || !a->sf_b || !a->d) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "a, b, sf_b and d must not be NULL");
  if (!a->c && a->beta != 0.0f) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "c is NULL but beta != 0");
  if (a->m < 1 || a->n < 1 || a->k < 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes must be >= 1 (m %lld, n %lld, k %lld)", (long long)a->m,
             (long long)a->n, (long long)a->k);
  if (a->k % 2 != 0)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "k = %lld is odd: two E2M1 elements share a byte, k must be even",
             (long long)a->k);
  if (a->lda < a->k) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "lda = %lld is smaller than k = %lld", (long long)a->lda,
                              (long long)a->k);
  if (a->ldb < a->k / 2) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ldb = %lld bytes is smaller than k/2 = %lld",
                                  (long long)a->ldb, (long long)(a->k / 2));
  if (a->c && a->ldc != 0 && a->ldc < a->n)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ldc = %lld is smaller than n = %lld (0 broadcasts one row)",
             (long long)a->ldc, (long long)a->n);
  if (a->ldc < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ldc = %lld is negative", (long long)a->ldc);
  if (a->ldd < a->n) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ldd = %lld is smaller than n = %lld", (long long)a->ldd,
                              (long long)a->n);
  if (kg__fp4_extent(a->m, a->k, a->lda, 1, 0) < 0 || kg__fp4_extent(a->n, a->k / 2, a->ldb, 1, 0) < 0 ||
      kg__fp4_extent(a->m, a->n, a->ldd, 1, 0) < 0 || kg__fp4_extent(a->m, a->n, a->ldc, 1, 0) < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "operand extent overflows int64");
  int64_t kv = kg_fp4_kv(a->format, a->k);
  size_t need;
  if (kg_sf_size(a->sf_layout, a->n, kv, 1, &need) != KG_SUCCESS)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "scale buffer size overflows");
  if (a->sf_b_bytes != need)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "sf_b_bytes = %zu but the %s %s scale buffer of %lld rows x %lld scales is %zu "
             "bytes (kg_sf_size)", a->sf_b_bytes, kg__fp4_format_string(a->format),
             kg__sf_layout_string(a->sf_layout), (long long)a->n, (long long)kv, need);
  if (a->format == KG_FP4_MXFP4 && a->global_scale_b)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "global_scale_b is for NVFP4; MXFP4 takes NULL");
  key->op = KG_OP_GEMM_FP4;
  key->dtype = a->dtype;
  key->format = a->format;
  key->sf_layout = a->sf_layout;
  key->mx_round = -1;
  key->gemm = a;
  return KG_SUCCESS;
}

static int kg__ranges_overlap(const void *a, size_t na, const void *b, size_t nb) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x < y + nb && y < x + na;
}

static kg_status kg__sf_swizzled_layout(int layout, kg__sink *sink) {
  if (layout != KG_SF_SWIZZLED_128X4 && layout != KG_SF_SWIZZLED_8X4)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "layout %s: allowed: KG_SF_SWIZZLED_128X4, KG_SF_SWIZZLED_8X4 (the other side "
             "is linear)", kg__sf_layout_string(layout));
  return KG_SUCCESS;
}

static kg_status kg__sf_swizzle_check(kg_op op, const kg_sf_swizzle_args *a, kg_sf_job *job, kg__fp4_key *key,
                                      kg__sink *sink) {
  kg_status st;
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if ((st = kg__sf_swizzled_layout(a->layout, sink))) return st;
  if (!a->src || !a->dst) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "src and dst must not be NULL");
  if (a->rows < 1 || a->kv < 1 || a->groups < 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes must be >= 1 (rows %lld, kv %lld, groups %lld)", (long long)a->rows,
             (long long)a->kv, (long long)a->groups);
  int src_layout = op == KG_OP_SF_SWIZZLE ? KG_SF_LINEAR : (int)a->layout;
  int dst_layout = op == KG_OP_SF_SWIZZLE ? (int)a->layout : KG_SF_LINEAR;
  size_t src_need, dst_need;
  if (kg_sf_size(src_layout, a->rows, a->kv, a->groups, &src_need) != KG_SUCCESS ||
      kg_sf_size(dst_layout, a->rows, a->kv, a->groups, &dst_need) != KG_SUCCESS)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "scale buffer size overflows");
  if (a->src_bytes != src_need)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "src_bytes = %zu but the %s source is %zu bytes (kg_sf_size)", a->src_bytes,
             kg__sf_layout_string(src_layout), src_need);
  if (a->dst_bytes != dst_need)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "dst_bytes = %zu but the %s destination is %zu bytes (kg_sf_size)",
             a->dst_bytes, kg__sf_layout_string(dst_layout), dst_need);
  if (kg__ranges_overlap(a->src, a->src_bytes, a->dst, a->dst_bytes))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "src and dst overlap");
  memset(job, 0, sizeof *job);
  job->src_layout = src_layout;
  job->dst_layout = dst_layout;
  job->rows = a->rows; job->kv = a->kv; job->groups = a->groups;
  job->nshards = 1;
  job->src[0] = (const uint8_t *)a->src;
  job->row0[0] = 0; job->row0[1] = a->rows;
  job->dst = (uint8_t *)a->dst;
  key->op = op; key->dtype = KG_F32; key->format = -1; key->sf_layout = a->layout; key->mx_round = -1;
  return KG_SUCCESS;
}

static kg_status kg__sf_reswizzle_check(const kg_sf_reswizzle_args *a, kg_sf_job *job, kg__fp4_key *key,
                                        kg__sink *sink) {
  kg_status st;
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if ((st = kg__sf_swizzled_layout(a->layout, sink))) return st;
  if (!a->dst) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "dst must not be NULL");
  if (a->nshards < 1 || a->nshards > KG_SF_MAX_SHARDS)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "nshards = %d (allowed: 1 .. %d)", a->nshards, KG_SF_MAX_SHARDS);
  if (!a->shards) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "shards must not be NULL");
  if (a->kv < 1 || a->groups < 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes must be >= 1 (kv %lld, groups %lld)", (long long)a->kv,
             (long long)a->groups);
  memset(job, 0, sizeof *job);
  int64_t rows = 0;
  for (int s = 0; s < a->nshards; s++) {
    const kg_sf_shard *sh = &a->shards[s];
    size_t need;
    if (!sh->sf) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "shard %d: sf must not be NULL", s);
    if (sh->rows < 1) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "shard %d: rows %lld < 1", s, (long long)sh->rows);
    if (kg_sf_size(a->layout, sh->rows, a->kv, a->groups, &need) != KG_SUCCESS)
      KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "shard %d: scale buffer size overflows", s);
    if (sh->sf_bytes != need)
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "shard %d: sf_bytes = %zu but the %s buffer of %lld rows is %zu bytes "
               "(kg_sf_size)", s, sh->sf_bytes, kg__sf_layout_string(a->layout), (long long)sh->rows, need);
    job->src[s] = (const uint8_t *)sh->sf;
    job->row0[s] = rows;
    if (__builtin_add_overflow(rows, sh->rows, &rows)) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "total rows overflow");
  }
  job->row0[a->nshards] = rows;
  size_t dst_need;
  if (kg_sf_size(a->layout, rows, a->kv, a->groups, &dst_need) != KG_SUCCESS)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "scale buffer size overflows");
  if (a->dst_bytes != dst_need)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "dst_bytes = %zu but the %s destination of %lld rows is %zu bytes (kg_sf_size)",
             a->dst_bytes, kg__sf_layout_string(a->layout), (long long)rows, dst_need);
  for (int s = 0; s < a->nshards; s++)
    if (kg__ranges_overlap(a->shards[s].sf, a->shards[s].sf_bytes, a->dst, a->dst_bytes))
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "shard %d overlaps dst", s);
  job->src_layout = job->dst_layout = a->layout;
  job->rows = rows; job->kv = a->kv; job->groups = a->groups;
  job->nshards = a->nshards;
  job->dst = (uint8_t *)a->dst;
  key->op = KG_OP_SF_RESWIZZLE; key->dtype = KG_F32; key->format = -1; key->sf_layout = a->layout; key->mx_round = -1;
  return KG_SUCCESS;
}

/* ---- dispatch ---------------------------------------------------------------- */

static const char *kg__fp4_rejects(const kg_variant *v, const kg__fp4_key *k, const kg_exec *exec, int *misaligned) {
  static _Thread_local char why[200];
  *misaligned = 0;
  if (v->backend != exec->backend) {
    snprintf(why, sizeof why, "backend %s, wanted %s", kg_backend_string(v->backend), kg_backend_string(exec->backend));
    return why;
  }
  if (k->format >= 0 && v->fp4_format != k->format) {
    snprintf(why, sizeof why, "format %s, wanted %s", kg__fp4_format_string(v->fp4_format),
             kg__fp4_format_string(k->format));
    return why;
  }
  if (k->format >= 0 && v->type_ab != k->dtype) {
    snprintf(why, sizeof why, "dtype %s, wanted %s", kg_dtype_string(v->type_ab), kg_dtype_string(k->dtype));
    return why;
  }
  if (v->sf_layout != k->sf_layout) {
    snprintf(why, sizeof why, "scale layout %s, wanted %s", kg__sf_layout_string(v->sf_layout),
             kg__sf_layout_string(k->sf_layout));
    return why;
  }
  if (v->mx_round != k->mx_round) {
    snprintf(why, sizeof why, "MXFP4 scale rule %s, wanted %s", kg__mx_round_string(v->mx_round),
             kg__mx_round_string(k->mx_round));
    return why;
  }
  const kg_gemm_fp4_args *g = k->gemm;
  if (g) {
    if (v->max_m > 0 && g->m > v->max_m) {
      snprintf(why, sizeof why, "m %lld above the variant's limit %d (the %s FP4 GEMM has only its small-M kernel)",
               (long long)g->m, v->max_m, kg_backend_string(v->backend));
      return why;
    }
    if (v->backend != KG_BACKEND_C && (g->n + 3) / 4 > 2147483647) return "n needs more than 2^31-1 blocks";
    if (v->align > 1) {
      const char *bad = (uintptr_t)g->a % 16 != 0 ? "a: pointer must be 16-byte aligned"
                        : g->lda % 8 != 0         ? "a: lda must be a multiple of 8 elements"
                        : (uintptr_t)g->b % 16 != 0 ? "b: pointer must be 16-byte aligned"
                        : g->ldb % 16 != 0        ? "b: ldb must be a multiple of 16 bytes" : NULL;
      if (bad) {
        *misaligned = 1;
        snprintf(why, sizeof why, "operand %s (16-byte loads)", bad);
        return why;
      }
    }
  }
  return NULL;
}

static const char *kg__fp4_rejects_ctx(const kg_variant *v, const void *ctx, const kg_exec *exec, int *misaligned) {
  return kg__fp4_rejects(v, (const kg__fp4_key *)ctx, exec, misaligned);
}

typedef struct kg__fp4_call {
  kg__fp4_key key;
  kg_sf_job job;      /* conversions */
} kg__fp4_call;

static kg_status kg__fp4_select(kg_op op, const void *args, const kg_exec *exec, kg__fp4_call *call,
                                const kg_variant **out, kg__sink *sink) {
  kg_status st;
  call->key.gemm = NULL;
  switch (op) {
    case KG_OP_FP4_QUANTIZE: case KG_OP_FP4_DEQUANTIZE:
      st = kg__fp4_check(op, (const kg_fp4_args *)args, &call->key, sink); break;
    case KG_OP_SF_SWIZZLE: case KG_OP_SF_UNSWIZZLE:
      st = kg__sf_swizzle_check(op, (const kg_sf_swizzle_args *)args, &call->job, &call->key, sink); break;
    case KG_OP_SF_RESWIZZLE:
      st = kg__sf_reswizzle_check((const kg_sf_reswizzle_args *)args, &call->job, &call->key, sink); break;
    case KG_OP_GEMM_FP4:
      st = kg__gemm_fp4_check((const kg_gemm_fp4_args *)args, &call->key, sink); break;
    default: KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown op %d", (int)op);
  }
  if (st != KG_SUCCESS) return st;
  if ((st = kg__check_exec(exec, sink)) != KG_SUCCESS) return st;
  return kg__first_fit(op, kg__fp4_rejects_ctx, &call->key, exec, out, sink);
}

kg_status kg__fp4_explain(kg_op op, const void *args, const kg_exec *exec, kg__sink *sink) {
  kg__fp4_call call;
  const kg_variant *v = NULL;
  return kg__fp4_select(op, args, exec, &call, &v, sink);
}

kg_status kg_fp4_select(kg_op op, const void *args, const kg_exec *exec, const char **name) {
  kg__fp4_call call;
  const kg_variant *v = NULL;
  if (!name) return KG_ERROR_INVALID_ARGUMENT;
  *name = NULL;
  if (!kg__fp4_op(op)) return KG_ERROR_INVALID_ARGUMENT;
  kg_status st = kg__fp4_select(op, args, exec, &call, &v, NULL);
  if (st == KG_SUCCESS) *name = v->name;
  return st;
}

static kg_status kg__fp4_run(kg_op op, const void *args, const kg_exec *exec) {
  kg__fp4_call call;
  const kg_variant *v = NULL;
  kg_status st = kg__fp4_select(op, args, exec, &call, &v, NULL);
  if (st != KG_SUCCESS) return st;
  if (op == KG_OP_FP4_QUANTIZE || op == KG_OP_FP4_DEQUANTIZE) return v->fp4_launch((const kg_fp4_args *)args, exec);
  if (op == KG_OP_GEMM_FP4) return v->gemm_fp4_launch((const kg_gemm_fp4_args *)args, exec);
  return v->sf_launch(&call.job, exec);
}

kg_status kg_fp4_quantize(const kg_fp4_args *args, const kg_exec *exec) {
  return kg__fp4_run(KG_OP_FP4_QUANTIZE, args, exec);
}
kg_status kg_fp4_dequantize(const kg_fp4_args *args, const kg_exec *exec) {
  return kg__fp4_run(KG_OP_FP4_DEQUANTIZE, args, exec);
}
kg_status kg_sf_swizzle(const kg_sf_swizzle_args *args, const kg_exec *exec) {
  return kg__fp4_run(KG_OP_SF_SWIZZLE, args, exec);
}
kg_status kg_sf_unswizzle(const kg_sf_swizzle_args *args, const kg_exec *exec) {
  return kg__fp4_run(KG_OP_SF_UNSWIZZLE, args, exec);
}
kg_status kg_sf_reswizzle(const kg_sf_reswizzle_args *args, const kg_exec *exec) {
  return kg__fp4_run(KG_OP_SF_RESWIZZLE, args, exec);
}

kg_status kg_gemm_fp4(const kg_gemm_fp4_args *args, const kg_exec *exec) {
  return kg__fp4_run(KG_OP_GEMM_FP4, args, exec);
}
kg_status kg_gemm_fp4_select(const kg_gemm_fp4_args *args, const kg_exec *exec, const char **name) {
  return kg_fp4_select(KG_OP_GEMM_FP4, args, exec, name);
}
kg_status kg_gemm_fp4_workspace_size(const kg_gemm_fp4_args *args, const kg_exec *exec, size_t *bytes) {
  const char *name;
  if (!bytes) return KG_ERROR_INVALID_ARGUMENT;
  *bytes = 0;
  return kg_gemm_fp4_select(args, exec, &name);
}
