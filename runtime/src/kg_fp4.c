/*
** kg_fp4.c -- block-scaled FP4 (NVFP4, MXFP4): host helpers (E2M1, global
** scale, scale-buffer sizes, offsets and the 6-D view), argument checks,
** first-fit dispatch and explain for quantize, dequantize, the scale
** conversions (swizzle, unswizzle, reswizzle), the FP4 GEMM (W4A16, W4A4),
** the FP4 DualGemm and amax. The rules are kg.h's.
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
  int64_t off = 0, term;
  for (int i = 0; i < 6; i++) {
    /* a caller-built view may hold any values: no negative stride, no int64 overflow */
    if (c[i] >= view->shape[i] || view->stride[i] < 0) return -1;
    if (__builtin_mul_overflow(c[i], view->stride[i], &term) || __builtin_add_overflow(off, term, &off)) return -1;
  }
  return off;
}

/* ---- checks ----------------------------------------------------------------- */

int kg__fp4_op(kg_op op) {
  return op == KG_OP_FP4_QUANTIZE || op == KG_OP_FP4_DEQUANTIZE || op == KG_OP_SF_SWIZZLE ||
         op == KG_OP_SF_UNSWIZZLE || op == KG_OP_SF_RESWIZZLE || op == KG_OP_GEMM_FP4 || op == KG_OP_DUALGEMM_FP4 ||
         op == KG_OP_AMAX;
}

/* FP4 GEMM / DualGemm: what the variant predicates read (m limit, grid, mode,
** W4A4, fused op, stores, 16-byte alignment of the vector loads). */
typedef struct kg__fp4_mm {
  int64_t m, n, k, batch;    /* batch: problems in the grid (1 unless batched) */
  int batched, a_fp4, sf_layout_a, dual, dual_op, store_d0, store_d1;
  int64_t slices;            /* serial split-K slices; above 1, bcast_b1 (W1 a broadcast vector) */
  int bcast_b1, col;         /* and col (column-major A, C, D) run on the dequantize path only */
  const void *a; int64_t lda, bsa;
  int nb;                    /* weights: 1 (GEMM) or 2 (DualGemm) */
  const void *b[2]; int64_t ldb[2], bsb[2];
  const void *sf_b[2];       /* the weights' scales */
} kg__fp4_mm;

/* What dispatch matches on, whatever the op. */
typedef struct kg__fp4_key {
  kg_op op;
  kg_dtype dtype;      /* quantize / dequantize / amax input, GEMM C/D type */
  int format;          /* -1 for conversions and amax */
  int sf_layout;       /* conversions: the swizzled side; -1 for amax */
  int mx_round;        /* MXFP4 quantize, else -1 */
  const kg__fp4_mm *mm;   /* FP4 GEMM / DualGemm predicates; else NULL */
  kg__fp4_mm mm_store;
  int ws_query;        /* FP4 GEMM / DualGemm workspace size query: a workspace is assumed */
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
  const kg__ptr_rule al[] = { { "x", a->x, kg_dtype_size(a->dtype) }, { "global_scale", a->global_scale, 4 } };
  kg_status st = kg__check_aligned(al, KG__COUNT(al), sink);
  if (st) return st;
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

/* One operand of an FP4 GEMM / DualGemm for the checks: rows x cols units
** (elements or bytes), ld, batch stride; output operands must not overlap
** across batches; may_bcast: ld 0 allowed (bias row). */
static kg_status kg__mm_operand(const char *name, int64_t rows, int64_t cols, int64_t ld, int64_t bs, int64_t batch,
                                int may_bcast, int output, kg__sink *sink) {
  if (ld < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ld%s = %lld is negative", name, (long long)ld);
  if (!(may_bcast && ld == 0) && ld < cols)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ld%s = %lld is smaller than %lld%s", name, (long long)ld, (long long)cols,
             may_bcast ? " (0 broadcasts one row)" : "");
  if (batch > 1 && bs < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "batch_stride_%s = %lld is negative", name, (long long)bs);
  if (kg__fp4_extent(rows, cols, ld, batch, batch > 1 ? bs : 0) < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "operand %s extent overflows int64", name);
  if (output && batch > 1 && bs < kg__fp4_extent(rows, cols, ld, 1, 0))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch_stride_%s %lld makes output batches overlap", name, (long long)bs);
  return KG_SUCCESS;
}

/* Scale buffer of an FP4 operand: groups = scale groups (kg.h), exact size. */
static kg_status kg__mm_scales(const char *name, int format, int layout, int64_t rows, int64_t kv, int64_t groups,
                               size_t bytes, const float *gs, kg__sink *sink) {
  size_t need;
  if (kg_sf_size(layout, rows, kv, groups, &need) != KG_SUCCESS)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "scale buffer size of %s overflows", name);
  if (bytes != need)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "%s_bytes = %zu but the %s %s scale buffer of %lld rows x %lld scales x %lld "
             "group%s is %zu bytes (kg_sf_size)", name, bytes, kg__fp4_format_string(format),
             kg__sf_layout_string(layout), (long long)rows, (long long)kv, (long long)groups, groups == 1 ? "" : "s",
             need);
  if (format == KG_FP4_MXFP4 && gs)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "global_scale of %s is for NVFP4; MXFP4 takes NULL", name);
  return KG_SUCCESS;
}

/* The A operand of both ops: W4A16 (dtype elements) or W4A4 (FP4 bytes + scales). */
static kg_status kg__mm_a(int a_fp4, int format, int64_t m, int64_t k, int64_t kv, const void *sf_a, int sf_layout_a,
                          size_t sf_a_bytes, const float *gs_a, int64_t lda, int64_t bsa, int64_t batch, int col,
                          kg__sink *sink) {
  kg_status st;
  if (a_fp4 != 0 && a_fp4 != 1) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "a_fp4 = %d (allowed: 0 W4A16, 1 W4A4)", a_fp4);
  if (!a_fp4) {
    if (sf_a || gs_a)
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "sf_a / global_scale_a are set but a_fp4 = 0 (A is not FP4)");
    return kg__mm_operand("a", col ? k : m, col ? m : k, lda, bsa, batch, 0, 0, sink);
  }
  if (!kg__sf_layout_valid(sf_layout_a))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown sf_layout_a %d (allowed: KG_SF_LINEAR, KG_SF_SWIZZLED_128X4, "
             "KG_SF_SWIZZLED_8X4)", (int)sf_layout_a);
  if (!sf_a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "a_fp4 = 1 but sf_a is NULL");
  if ((st = kg__mm_operand("a", m, k / 2, lda, bsa, batch, 0, 0, sink))) return st;
  return kg__mm_scales("sf_a", format, sf_layout_a, m, kv, batch > 1 && bsa != 0 ? batch : 1, sf_a_bytes, gs_a, sink);
}

/* Rules shared by the FP4 GEMM and DualGemm: enums, sizes, k. */
static kg_status kg__mm_common(int dtype, int format, int sf_layout, int64_t m, int64_t n, int64_t k,
                               kg__sink *sink) {
  if (format != KG_FP4_NVFP4 && format != KG_FP4_MXFP4)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown format %d (allowed: KG_FP4_NVFP4, KG_FP4_MXFP4)", format);
  if (!kg__sf_layout_valid(sf_layout))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown sf_layout %d (allowed: KG_SF_LINEAR, KG_SF_SWIZZLED_128X4, "
             "KG_SF_SWIZZLED_8X4)", sf_layout);
  if (dtype != KG_F16 && dtype != KG_BF16)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "dtype %d: activations are 16-bit (allowed: KG_F16, KG_BF16)", dtype);
  if (m < 1 || n < 1 || k < 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes must be >= 1 (m %lld, n %lld, k %lld)", (long long)m, (long long)n,
             (long long)k);
  if (k % 2 != 0)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "k = %lld is odd: two E2M1 elements share a byte, k must be even",
             (long long)k);
  return KG_SUCCESS;
}

/* KG_OP_GEMM_FP4: every rule of kg.h's FP4 GEMM section except the per-variant
** ones (m limit, alignment), which kg__fp4_rejects says. */
static kg_status kg__gemm_fp4_check(const kg_gemm_fp4_args *a, kg__fp4_key *key, kg__sink *sink) {
  kg_status st;
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if ((st = kg__mm_common(a->dtype, a->format, a->sf_layout, a->m, a->n, a->k, sink))) return st;
  if (!a->a || !a->b || !a->sf_b || !a->d) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "a, b, sf_b and d must not be NULL");
  if (!a->c && a->beta != 0.0f) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "c is NULL but beta != 0");
  const size_t es = kg_dtype_size(a->dtype);
  const kg__ptr_rule al[] = { { "a", a->a, a->a_fp4 ? 1 : es }, { "c", a->c, es }, { "d", a->d, es },
                              { "global_scale_b", a->global_scale_b, 4 }, { "global_scale_a", a->global_scale_a, 4 } };
  if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
  int64_t kv = kg_fp4_kv(a->format, a->k);
  if ((st = kg__mm_a(a->a_fp4, a->format, a->m, a->k, kv, a->sf_a, a->sf_layout_a, a->sf_a_bytes, a->global_scale_a,
                     a->lda, 0, 1, 0, sink)))
    return st;
  if ((st = kg__mm_operand("b", a->n, a->k / 2, a->ldb, 0, 1, 0, 0, sink))) return st;
  if (a->c && (st = kg__mm_operand("c", a->m, a->n, a->ldc, 0, 1, 1, 0, sink))) return st;
  if ((st = kg__mm_operand("d", a->m, a->n, a->ldd, 0, 1, 0, 1, sink))) return st;
  if ((st = kg__mm_scales("sf_b", a->format, a->sf_layout, a->n, kv, 1, a->sf_b_bytes, a->global_scale_b, sink)))
    return st;
  key->op = KG_OP_GEMM_FP4;
  key->dtype = a->dtype;
  key->format = a->format;
  key->sf_layout = a->sf_layout;
  key->mx_round = -1;
  kg__fp4_mm *mm = &key->mm_store;
  memset(mm, 0, sizeof *mm);
  mm->m = a->m; mm->n = a->n; mm->k = a->k; mm->batch = 1; mm->slices = 1;
  mm->a_fp4 = a->a_fp4; mm->sf_layout_a = a->a_fp4 ? (int)a->sf_layout_a : -1;
  mm->a = a->a; mm->lda = a->lda;
  mm->nb = 1; mm->b[0] = a->b; mm->ldb[0] = a->ldb; mm->sf_b[0] = a->sf_b;
  key->mm = mm;
  return KG_SUCCESS;
}

static const char *kg__dual_op_name(int op) {
  return op == KG_DUAL_SWIGLU ? "swiglu" : op == KG_DUAL_GEGLU ? "geglu" : op == KG_DUAL_MUL ? "mul" : "unknown";
}

/* KG_OP_DUALGEMM_FP4: kg.h's FP4 DualGemm rules except the per-variant ones. */
static kg_status kg__dualgemm_fp4_check(const kg_dualgemm_fp4_args *a, kg__fp4_key *key, kg__sink *sink) {
  kg_status st;
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if (a->mode != KG_MODE_GEMM && a->mode != KG_MODE_BATCHED && a->mode != KG_MODE_SPLITK_SERIAL)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown mode %d (allowed: KG_MODE_GEMM, KG_MODE_BATCHED, "
             "KG_MODE_SPLITK_SERIAL)", (int)a->mode);
  if ((st = kg__mm_common(a->dtype, a->format, a->sf_layout, a->m, a->n, a->k, sink))) return st;
  if (a->op != KG_DUAL_SWIGLU && a->op != KG_DUAL_GEGLU && a->op != KG_DUAL_MUL)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown op %d (allowed: KG_DUAL_SWIGLU, KG_DUAL_GEGLU, KG_DUAL_MUL)", (int)a->op);
  if ((a->layout_a != KG_ROW && a->layout_a != KG_COL) || (a->layout_cd != KG_ROW && a->layout_cd != KG_COL))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown layout_a %d / layout_cd %d (allowed: KG_ROW, KG_COL)", (int)a->layout_a,
             (int)a->layout_cd);
  if (a->a_fp4 == 1 && a->layout_a != KG_ROW)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "layout_a KG_COL with a_fp4: FP4 A is packed along K (allowed: KG_ROW)");
  if (!a->a || !a->b0 || !a->b1 || !a->sf_b0 || !a->sf_b1 || !a->d2)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "a, b0, b1, sf_b0, sf_b1 and d2 must not be NULL");
  if (!!a->store_d0 != !!a->d0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "store_d0 is %d but d0 is %s", a->store_d0, a->d0 ? "set" : "NULL");
  if (!!a->store_d1 != !!a->d1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "store_d1 is %d but d1 is %s", a->store_d1, a->d1 ? "set" : "NULL");
  if (!a->c0 && a->beta0 != 0.0f) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "c0 is NULL but beta0 != 0");
  if (!a->c1 && a->beta1 != 0.0f) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "c1 is NULL but beta1 != 0");
  const size_t es = kg_dtype_size(a->dtype);
  const kg__ptr_rule al[] = { { "a", a->a, a->a_fp4 ? 1 : es }, { "c0", a->c0, es }, { "c1", a->c1, es },
                              { "d0", a->d0, es }, { "d1", a->d1, es }, { "d2", a->d2, es },
                              { "global_scale_b0", a->global_scale_b0, 4 }, { "global_scale_b1", a->global_scale_b1, 4 },
                              { "global_scale_a", a->global_scale_a, 4 } };
  if ((st = kg__check_aligned(al, KG__COUNT(al), sink))) return st;
  if (a->batch_count < 1) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "batch_count %lld < 1", (long long)a->batch_count);
  if (a->mode == KG_MODE_GEMM && a->batch_count > 1)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "gemm mode takes batch_count 1");
  if (a->batch_count > KG_MAX_BATCH)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch_count %lld exceeds the grid limit %d", (long long)a->batch_count,
             KG_MAX_BATCH);
  const int split = a->mode == KG_MODE_SPLITK_SERIAL;
  if (split && a->batch_count > 1)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "serial split-K with batch_count %lld: use batched mode or split-K, not both",
             (long long)a->batch_count);
  if (split && a->split_k_slices < 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "split_k_slices %lld < 1", (long long)a->split_k_slices);
  if (split && a->split_k_slices > a->k)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "split_k_slices %lld exceeds k %lld", (long long)a->split_k_slices,
             (long long)a->k);
  if (split && a->split_k_slices > KG_MAX_BATCH)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "split_k_slices %lld exceeds the grid limit %d", (long long)a->split_k_slices,
             KG_MAX_BATCH);
  if (!split && a->split_k_slices != 0 && a->split_k_slices != 1)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "split_k_slices %lld outside KG_MODE_SPLITK_SERIAL (allowed there: 0 or 1)",
             (long long)a->split_k_slices);
  const int bcast = a->ldb1 == 0;   /* W1: one row (per batch), broadcast to every output column */
  const int64_t batch = a->mode == KG_MODE_BATCHED ? a->batch_count : 1;
  const int64_t kv = kg_fp4_kv(a->format, a->k);
  if ((st = kg__mm_a(a->a_fp4, a->format, a->m, a->k, kv, a->sf_a, a->sf_layout_a, a->sf_a_bytes, a->global_scale_a,
                     a->lda, a->batch_stride_a, batch, a->layout_a == KG_COL, sink)))
    return st;
  if ((st = kg__mm_operand("b0", a->n, a->k / 2, a->ldb0, a->batch_stride_b0, batch, 0, 0, sink)) ||
      (st = kg__mm_operand("b1", bcast ? 1 : a->n, a->k / 2, a->ldb1, a->batch_stride_b1, batch, 1, 0, sink)))
    return st;
  /* C and D: m x n in layout_cd (column-major: n columns of m; ld 0 then adds one bias column) */
  const int64_t rcd = a->layout_cd == KG_COL ? a->n : a->m, ccd = a->layout_cd == KG_COL ? a->m : a->n;
  if (a->c0 && (st = kg__mm_operand("c0", rcd, ccd, a->ldc0, a->batch_stride_c0, batch, 1, 0, sink))) return st;
  if (a->c1 && (st = kg__mm_operand("c1", rcd, ccd, a->ldc1, a->batch_stride_c1, batch, 1, 0, sink))) return st;
  if (a->d0 && (st = kg__mm_operand("d0", rcd, ccd, a->ldd0, a->batch_stride_d0, batch, 0, 1, sink))) return st;
  if (a->d1 && (st = kg__mm_operand("d1", rcd, ccd, a->ldd1, a->batch_stride_d1, batch, 0, 1, sink))) return st;
  if ((st = kg__mm_operand("d2", rcd, ccd, a->ldd2, a->batch_stride_d2, batch, 0, 1, sink))) return st;
  if ((st = kg__mm_scales("sf_b0", a->format, a->sf_layout, a->n, kv, batch > 1 && a->batch_stride_b0 != 0 ? batch : 1,
                          a->sf_b0_bytes, a->global_scale_b0, sink)) ||
      (st = kg__mm_scales("sf_b1", a->format, a->sf_layout, bcast ? 1 : a->n, kv,
                          batch > 1 && a->batch_stride_b1 != 0 ? batch : 1,
                          a->sf_b1_bytes, a->global_scale_b1, sink)))
    return st;
  key->op = KG_OP_DUALGEMM_FP4;
  key->dtype = a->dtype;
  key->format = a->format;
  key->sf_layout = a->sf_layout;
  key->mx_round = -1;
  kg__fp4_mm *mm = &key->mm_store;
  memset(mm, 0, sizeof *mm);
  mm->m = a->m; mm->n = a->n; mm->k = a->k; mm->batch = batch; mm->batched = a->mode == KG_MODE_BATCHED;
  mm->slices = split ? a->split_k_slices : 1;
  mm->bcast_b1 = bcast;
  mm->col = a->layout_a == KG_COL || a->layout_cd == KG_COL;
  mm->a_fp4 = a->a_fp4; mm->sf_layout_a = a->a_fp4 ? (int)a->sf_layout_a : -1;
  mm->dual = 1; mm->dual_op = a->op; mm->store_d0 = !!a->store_d0; mm->store_d1 = !!a->store_d1;
  mm->a = a->a; mm->lda = a->lda; mm->bsa = batch > 1 ? a->batch_stride_a : 0;
  mm->nb = 2;
  mm->b[0] = a->b0; mm->ldb[0] = a->ldb0; mm->bsb[0] = batch > 1 ? a->batch_stride_b0 : 0;
  mm->b[1] = a->b1; mm->ldb[1] = a->ldb1; mm->bsb[1] = batch > 1 ? a->batch_stride_b1 : 0;
  mm->sf_b[0] = a->sf_b0; mm->sf_b[1] = a->sf_b1;
  key->mm = mm;
  return KG_SUCCESS;
}

/* KG_OP_AMAX: kg.h's amax rules. */
static kg_status kg__amax_check(const kg_amax_args *a, kg__fp4_key *key, kg__sink *sink) {
  if (!a) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if (a->dtype != KG_F32 && a->dtype != KG_F16 && a->dtype != KG_BF16)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown dtype %d (allowed: KG_F32, KG_F16, KG_BF16)", (int)a->dtype);
  if (!a->x || !a->out) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "x and out must not be NULL");
  const kg__ptr_rule al[] = { { "x", a->x, kg_dtype_size(a->dtype) }, { "out", a->out, 4 } };
  kg_status st = kg__check_aligned(al, KG__COUNT(al), sink);
  if (st) return st;
  if (a->batch < 1 || a->rows < 1 || a->cols < 1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes must be >= 1 (batch %lld, rows %lld, cols %lld)", (long long)a->batch,
             (long long)a->rows, (long long)a->cols);
  if (a->batch > KG_MAX_BATCH)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch %lld exceeds the grid limit %d", (long long)a->batch, KG_MAX_BATCH);
  if (a->ldx < a->cols)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ldx = %lld is smaller than cols = %lld", (long long)a->ldx,
             (long long)a->cols);
  int64_t bs = a->batch > 1 ? a->batch_stride_x : 0;
  if (bs < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "batch_stride_x = %lld is negative", (long long)bs);
  if (kg__fp4_extent(a->rows, a->cols, a->ldx, a->batch, bs) < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "operand extent overflows int64");
  key->op = KG_OP_AMAX;
  key->dtype = a->dtype;
  key->format = -1;
  key->sf_layout = -1;
  key->mx_round = -1;
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

/* Whether the table holds tensorop variant v's twin with tm rows of A per tile: the same op, key
** (formats, types, DualGemm op and stores) and columns per tile. */
static int kg__fp4t_sibling(const kg_variant *v, int tm) {
  for (int i = 0; i < kg_variants_count; i++) {
    const kg_variant *w = &kg_variants[i];
    if (w->op == v->op && w->backend == v->backend && w->tile_m == tm && w->tile_n == v->tile_n && w->fill_m > 0 &&
        w->type_ab == v->type_ab && w->type_cd == v->type_cd && w->fp4_format == v->fp4_format &&
        w->sf_layout == v->sf_layout && w->a_fp4 == v->a_fp4 && w->dual_op == v->dual_op &&
        w->store_d0 == v->store_d0 && w->store_d1 == v->store_d1 && strcmp(w->kernel, v->kernel) == 0)
      return 1;
  }
  return 0;
}

/* 1 where the tensorop tiles of tm rows (x tn columns) of the GEMM / DualGemm of k may sum their K
** splits through the workspace: a size query, or exec's workspace fits (kg__fp4t_ws_fits). */
static int kg__fp4t_ws(const kg__fp4_key *k, int tm, int tn, int sms, const kg_exec *exec) {
  const kg__fp4_mm *g = k->mm;
  const int64_t tiles = kg__fp4t_tiles(g->m, g->n, g->batch, tm, tn);
  if (k->ws_query) return kg__fp4t_plan_for(tiles, g->k, sms, 1).global;
  return kg__fp4t_ws_fits(tiles, g->k, sms, tm, exec->workspace, exec->workspace_size);
}

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
  if ((k->format >= 0 || k->op == KG_OP_AMAX) && v->type_ab != k->dtype) {
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
  const kg__fp4_mm *g = k->mm;
  if (g) {
    if (v->a_fp4 != g->a_fp4) {
      snprintf(why, sizeof why, "A %s, wanted %s", v->a_fp4 ? "FP4 (W4A4)" : "16-bit (W4A16)",
               g->a_fp4 ? "FP4 (W4A4)" : "16-bit (W4A16)");
      return why;
    }
    if (g->a_fp4 && v->sf_layout_a != g->sf_layout_a) {
      snprintf(why, sizeof why, "A scale layout %s, wanted %s", kg__sf_layout_string(v->sf_layout_a),
               kg__sf_layout_string(g->sf_layout_a));
      return why;
    }
    if (g->dual && v->dual_op != g->dual_op) {
      snprintf(why, sizeof why, "op %s, wanted %s", kg__dual_op_name(v->dual_op), kg__dual_op_name(g->dual_op));
      return why;
    }
    if (g->dual && (v->store_d0 != g->store_d0 || v->store_d1 != g->store_d1)) {
      snprintf(why, sizeof why, "stores d0=%d d1=%d, wanted d0=%d d1=%d", v->store_d0, v->store_d1, g->store_d0,
               g->store_d1);
      return why;
    }
    if (g->batched && !(v->modes & KG_MODE_BIT(KG_MODE_BATCHED))) return "batched mode not supported";
    if (v->max_m > 0 && g->m > v->max_m) {
      snprintf(why, sizeof why, "m %lld above the variant's limit %d (the %s %s kernel is for small M)",
               (long long)g->m, v->max_m, kg_backend_string(v->backend), v->kernel);
      return why;
    }
    if (v->backend != KG_BACKEND_C && (g->n + 3) / 4 > 2147483647) return "n needs more than 2^31-1 blocks";
    if (v->backend != KG_BACKEND_C && v->max_m == 0 && (g->m + 63) / 64 > 65535)
      return "m needs more than 65535 tiles (grid y limit)";
    if (v->tile_n > 0 && strcmp(v->kernel, "tensorop") == 0 && (g->n + v->tile_n - 1) / v->tile_n * g->batch > 2147483647)
      return "n times the batch count needs more than 2^31-1 blocks (grid x limit)";
    if (v->tma) {
      /* the launcher's tensor maps (templates/fp4/gemm_tensorop.kgt): A [m][k] of 16-bit elements,
      ** each W [n][(k+1)/2] bytes; dimension 2 per batch where the operand has a batch stride
      ** (batched), else spanning the operand */
      static const char *const W[2][2] = { { "b", "b0" }, { "", "b1" } };
      const int64_t es = (int64_t)kg_dtype_size(k->dtype);
      kg__tma_map maps[3] = { { "a", g->k, g->m, kg__mul3_sat(g->lda, es, 1),
                                g->batched && g->bsa != 0 ? kg__mul3_sat(g->bsa, es, 1) : kg__mul3_sat(g->lda, es, g->m) } };
      for (int i = 0; i < g->nb; i++) {
        const kg__tma_map t = { W[i][g->dual], (g->k + 1) / 2, g->n, g->ldb[i],
                                g->batched && g->bsb[i] != 0 ? g->bsb[i] : kg__mul3_sat(g->ldb[i], g->n, 1) };
        maps[1 + i] = t;
      }
      if (kg__tma_rejects(maps, 1 + g->nb, why, sizeof why)) return why;
    }
    if (v->align > 1) {
      const int64_t a_unit = g->a_fp4 ? 16 : 8;   /* 16 bytes: 8 elements of 16-bit A, 16 bytes of FP4 A */
      const char *bad = (uintptr_t)g->a % 16 != 0 ? "a: pointer must be 16-byte aligned"
                        : g->lda % a_unit != 0    ? (g->a_fp4 ? "a: lda must be a multiple of 16 bytes"
                                                               : "a: lda must be a multiple of 8 elements")
                        : g->bsa % a_unit != 0    ? (g->a_fp4 ? "a: batch stride must be a multiple of 16 bytes"
                                                               : "a: batch stride must be a multiple of 8 elements")
                                                  : NULL;
      for (int i = 0; !bad && i < g->nb; i++) {
        static const char *const PTR[2][2] = { { "b: pointer must be 16-byte aligned", "b0: pointer must be 16-byte aligned" },
                                               { "", "b1: pointer must be 16-byte aligned" } };
        static const char *const LD[2][2] = { { "b: ldb must be a multiple of 16 bytes", "b0: ldb0 must be a multiple of 16 bytes" },
                                              { "", "b1: ldb1 must be a multiple of 16 bytes" } };
        static const char *const BS[2] = { "b0: batch stride must be a multiple of 16 bytes",
                                           "b1: batch stride must be a multiple of 16 bytes" };
        if ((uintptr_t)g->b[i] % 16 != 0) bad = PTR[i][g->dual];
        else if (g->ldb[i] % 16 != 0) bad = LD[i][g->dual];
        else if (g->bsb[i] % 16 != 0) bad = BS[i];
      }
      if (bad) {
        *misaligned = 1;
        snprintf(why, sizeof why, "operand %s (16-byte loads)", bad);
        return why;
      }
      /* the tensorop kernel copies 512-byte groups of 128x4 scales in bulk */
      for (int i = 0; strcmp(v->kernel, "tensorop") == 0 && i < g->nb; i++)
        if ((uintptr_t)g->sf_b[i] % 16 != 0) {
          static const char *const SF[2][2] = { { "sf_b", "sf_b0" }, { "", "sf_b1" } };
          *misaligned = 1;
          snprintf(why, sizeof why, "operand %s: pointer must be 16-byte aligned (bulk copies of the scales)",
                   SF[i][g->dual]);
          return why;
        }
    }
    if (v->fill_m > 0 && v->backend != KG_BACKEND_C && !exec->variant) {
      /* a preference, not a limit of the kernel: a variant forced by name runs any size */
      if (2 * g->m <= v->tile_m) {
        snprintf(why, sizeof why, "m %lld fills at most half of its %d-row tiles (the small-M kernels run)",
                 (long long)g->m, v->tile_m);
        return why;
      }
      const int sms = kg__sm_count(v->backend);
      /* the tile size: another one compiled in and estimated faster takes the problem (kg__fp4t_cost,
      ** each with the workspace where it fits that size's plan) */
      const int ws = kg__fp4t_ws(k, v->tile_m, v->tile_n, sms, exec);
      const int64_t own = kg__fp4t_cost(g->m, g->n, g->k, g->batch, v->tile_m, v->tile_n, sms, ws);
      for (int i = 0; i < KG__FP4T_TILES; i++) {
        const int tm = kg__fp4t_tile_m(i);
        if (tm == v->tile_m || 2 * g->m <= tm || !kg__fp4t_sibling(v, tm)) continue;
        const int64_t other = kg__fp4t_cost(g->m, g->n, g->k, g->batch, tm, v->tile_n, sms,
                                            kg__fp4t_ws(k, tm, v->tile_n, sms, exec));
        if (other < own) {
          snprintf(why, sizeof why, "tiles of %d rows of A are estimated faster here than %d (%lld against %lld)", tm,
                   v->tile_m, (long long)other, (long long)own);
          return why;
        }
      }
      /* the blocks: tiles (of every batch) times the K splits the kernel launches where it splits
      ** them all (kg__fp4t_plan_for; grids that split only their last round fill the SMs) */
      const int64_t tiles = kg__fp4t_tiles(g->m, g->n, g->batch, v->tile_m, v->tile_n);
      const kg__fp4t_plan plan = kg__fp4t_plan_for(tiles, g->k, sms, ws);
      const int splits = plan.whole == 0 ? plan.splits : 1;
      /* unsplit grids from 3/4 of the SMs, split ones (shorter blocks) from 2/3 (H200: 32 tiles x 3
      ** splits, 96 blocks, 4096x14336 at m = 256: 66 us against the skinny kernel's 90) */
      const int num = splits > 1 ? 2 : 3, den = splits > 1 ? 3 : 4;
      if (g->m <= v->fill_m && den * tiles * splits < num * (int64_t)sms) {
        snprintf(why, sizeof why, "m %lld <= %d and %lld tiles of %dx%d (x %d K splits) fill less than %d/%d of %d SMs "
                 "(the small-M kernels or the dequantize path run)", (long long)g->m, v->fill_m, (long long)tiles,
                 v->tile_m, v->tile_n, splits, num, den, sms);
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

/* The op's argument checks, then the exec check; no variant chosen yet. */
static kg_status kg__fp4_check_op(kg_op op, const void *args, const kg_exec *exec, kg__fp4_call *call,
                                  kg__sink *sink) {
  kg_status st;
  call->key.mm = NULL;
  call->key.ws_query = 0;
  switch (op) {
    case KG_OP_FP4_QUANTIZE: case KG_OP_FP4_DEQUANTIZE:
      st = kg__fp4_check(op, (const kg_fp4_args *)args, &call->key, sink); break;
    case KG_OP_SF_SWIZZLE: case KG_OP_SF_UNSWIZZLE:
      st = kg__sf_swizzle_check(op, (const kg_sf_swizzle_args *)args, &call->job, &call->key, sink); break;
    case KG_OP_SF_RESWIZZLE:
      st = kg__sf_reswizzle_check((const kg_sf_reswizzle_args *)args, &call->job, &call->key, sink); break;
    case KG_OP_GEMM_FP4:
      st = kg__gemm_fp4_check((const kg_gemm_fp4_args *)args, &call->key, sink); break;
    case KG_OP_DUALGEMM_FP4:
      st = kg__dualgemm_fp4_check((const kg_dualgemm_fp4_args *)args, &call->key, sink); break;
    case KG_OP_AMAX:
      st = kg__amax_check((const kg_amax_args *)args, &call->key, sink); break;
    default: KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown op %d", (int)op);
  }
  if (st != KG_SUCCESS) return st;
  return kg__check_exec(exec, sink);
}

static kg_status kg__fp4_select(kg_op op, const void *args, const kg_exec *exec, kg__fp4_call *call,
                                const kg_variant **out, kg__sink *sink) {
  kg_status st = kg__fp4_check_op(op, args, exec, call, sink);
  if (st != KG_SUCCESS) return st;
  return kg__first_fit(op, kg__fp4_rejects_ctx, &call->key, exec, out, sink);
}

/* ---- the dequantize path of the FP4 GEMM and DualGemm (kg.h) --------------------------
** On CUDA and HIP, when dispatch picks an FP4 kernel without an m limit (the
** `mma` kernels: m above the small-M kernels' limit, or no small-M kernel
** takes the problem) and exec->workspace holds the size query's bytes, the
** FP4 operands are dequantized into the workspace by the kg_fp4_dequantize
** variants, [rows, ldw] of the activation type with ldw = k rounded up to 8
** (16-byte rows: the tensor-core GEMMs' alignment), and kg_gemm /
** kg_dualgemm's tensor-core variant multiplies them (B column-major: the
** weights' [n, k] storage). The global scales stay in backend memory, so the
** dequantize applies them (kg_fp4_dequantize's rule) and alpha passes through.
** Workspace: W (W0 with its scale groups, then W1), then A (W4A4), each region
** a multiple of 16 bytes, then the inner variant's own workspace where it has
** one. The size query plans with a stand-in base address (aligned, never
** dereferenced). The FP4 DualGemm's path-only forms (serial split-K, the
** broadcast W1 vector, column-major A, C, D) run here alone, on every backend
** (the C one included) and with any kg_dualgemm variant: its split-K mode, its
** ldb1 = 0 column or its layouts on the dequantized weights. */

#define KG__DEQ_PREFIX "dequantize + "
#define KG__DEQ_STANDIN ((uintptr_t)4096)

typedef struct kg__deq_plan {
  size_t bytes;                 /* workspace bytes */
  int ndeq;
  kg_fp4_args deq[3];           /* W (W0, W1), then A (W4A4) */
  const kg_variant *deq_v[3];   /* their kg_fp4_dequantize variants */
  kg_gemm_args g;               /* KG_OP_GEMM_FP4 */
  kg_dualgemm_args dg;          /* KG_OP_DUALGEMM_FP4 */
  const kg_variant *inner;      /* the kg_gemm / kg_dualgemm variant */
  void *inner_ws;               /* its own workspace (split-K sums), after the operands; */
  size_t inner_bytes;           /* 0: none */
} kg__deq_plan;

static int64_t kg__round8(int64_t k) { return (k + 7) / 8 * 8; }

static const kg_variant *kg__variant_named(const char *name) {
  for (int i = 0; i < kg_variants_count; i++)
    if (kg_variants[i].name == name || strcmp(kg_variants[i].name, name) == 0) return &kg_variants[i];
  return NULL;
}

/* The dequantized operands must be exact in the activation type, or off by
** kg_fp4_dequantize's one rounding (bf16 with NVFP4 global scales). */
static kg_status kg__deq_exact(kg_dtype dtype, int format, int any_gs, char *why, size_t cap) {
  if (dtype == KG_F16 && format == KG_FP4_MXFP4) {
    snprintf(why, cap, "f16 activations with MXFP4: e2m1 * 2^(e-127) can leave f16's range");
    return KG_ERROR_NOT_SUPPORTED;
  }
  if (dtype == KG_F16 && any_gs) {
    snprintf(why, cap, "f16 activations with NVFP4 global scales: e2m1 * f32(sf) / gs can leave f16's range");
    return KG_ERROR_NOT_SUPPORTED;
  }
  return KG_SUCCESS;
}

/* Adds the dequantization of one FP4 operand to the plan: groups scale groups
** of rows x k elements (bytes q, ldq, batch stride bsq; scales sf in layout;
** global scales gs) into [groups][rows][ldx] elements at workspace offset
** *off, which advances. *x: where the copy starts. */
static kg_status kg__deq_add(kg__deq_plan *p, const kg_exec *iex, uintptr_t base, size_t *off, const char *what,
                             int format, int layout, kg_dtype dtype, int64_t groups, int64_t rows, int64_t k,
                             int64_t ldx, const void *q, int64_t ldq, int64_t bsq, const void *sf, size_t sf_bytes,
                             const float *gs, void **x, char *why, size_t cap) {
  int64_t elems, region;
  size_t end;
  if (__builtin_mul_overflow(rows, ldx, &elems) || __builtin_mul_overflow(elems, groups, &region) ||
      __builtin_mul_overflow(region, (int64_t)kg_dtype_size(dtype), &region) || (uint64_t)region > SIZE_MAX ||
      __builtin_add_overflow(*off, (size_t)region, &end) || end > (size_t)(UINTPTR_MAX - base)) {
    snprintf(why, cap, "the dequantized %s (%lld x %lld x %lld elements) does not fit a workspace", what,
             (long long)groups, (long long)rows, (long long)ldx);
    return KG_ERROR_NOT_SUPPORTED;
  }
  kg_fp4_args *d = &p->deq[p->ndeq];
  memset(d, 0, sizeof *d);
  d->format = (kg_fp4_format)format;
  d->sf_layout = (kg_sf_layout)layout;
  d->dtype = dtype;
  d->batch = groups; d->rows = rows; d->k = k;
  d->x = (void *)(base + *off); d->ldx = ldx; d->batch_stride_x = groups > 1 ? elems : 0;
  d->q = (void *)q; d->ldq = ldq; d->batch_stride_q = groups > 1 ? bsq : 0;
  d->sf = (void *)sf; d->sf_bytes = sf_bytes;
  d->global_scale = gs;
  kg__fp4_call call;
  kg_status st = kg__fp4_select(KG_OP_FP4_DEQUANTIZE, d, iex, &call, &p->deq_v[p->ndeq], NULL);
  if (st != KG_SUCCESS) {
    snprintf(why, cap, "no kg_fp4_dequantize variant takes %s (%s %s %s scales): %s", what,
             kg__fp4_format_string(format), kg_dtype_string(dtype), kg__sf_layout_string(layout),
             kg_status_string(st));
    return st;
  }
  *x = d->x;
  *off = end;
  p->ndeq++;
  return KG_SUCCESS;
}

/* After kg_gemm_select / kg_dualgemm_select gave st and name: the variant, or why not. only: a
** path-only form (kg__mm_choose): any kernel, and its own workspace too. */
static kg_status kg__deq_inner(kg__deq_plan *p, int dual, kg_status st, const char *name, const char *forced,
                               int only, char *why, size_t cap) {
  const char *fam = dual ? "kg_dualgemm" : "kg_gemm";
  if (st != KG_SUCCESS) {
    snprintf(why, cap, "%s takes no variant%s%s%s for the dequantized operands: %s (kg_explain(%s, ...) says why)", fam,
             forced ? " named '" : "", forced ? forced : "", forced ? "'" : "", kg_status_string(st),
             dual ? "KG_OP_DUALGEMM" : "KG_OP_GEMM");
    return st;
  }
  p->inner = kg__variant_named(name);
  if (!p->inner) {
    snprintf(why, cap, "%s chose '%s', which the table does not list", fam, name);
    return KG_ERROR_INTERNAL;
  }
  if (!forced && !only && strcmp(p->inner->kernel, "tensorop") != 0) {
    snprintf(why, cap, "%s would run %s, a %s kernel (the path takes tensor-core kernels only)", fam, name,
             p->inner->kernel);
    return KG_ERROR_NOT_SUPPORTED;
  }
  const size_t ws = dual ? p->inner->dualgemm_workspace(&p->dg) : p->inner->gemm_workspace(&p->g);
  if (ws != 0 && !only) {
    snprintf(why, cap, "%s needs a workspace of its own", name);
    return KG_ERROR_NOT_SUPPORTED;
  }
  p->inner_bytes = ws;
  return KG_SUCCESS;
}

/* Plans the path for checked args with the workspace at base: KG_SUCCESS, or
** the reason (why) and the status a forced path returns. forced: the kg_gemm
** / kg_dualgemm variant that exec->variant names after the prefix, or NULL;
** only: a path-only form (kg__mm_choose). */
static kg_status kg__deq_plan_make(kg_op op, const void *args, const kg_exec *exec, uintptr_t base,
                                   const char *forced, int only, kg__deq_plan *p, char *why, size_t cap) {
  kg_status st;
  size_t off = 0;
  const char *name = NULL;
  memset(p, 0, sizeof *p);
  kg_exec iex = *exec;
  iex.workspace = NULL; iex.workspace_size = 0; iex.variant = NULL;
  if (op == KG_OP_GEMM_FP4) {
    const kg_gemm_fp4_args *a = (const kg_gemm_fp4_args *)args;
    const int64_t ldw = kg__round8(a->k);
    void *w = NULL, *ad = NULL;
    if ((st = kg__deq_exact(a->dtype, a->format, a->global_scale_b || a->global_scale_a, why, cap)) ||
        (st = kg__deq_add(p, &iex, base, &off, "W", a->format, a->sf_layout, a->dtype, 1, a->n, a->k, ldw, a->b,
                          a->ldb, 0, a->sf_b, a->sf_b_bytes, a->global_scale_b, &w, why, cap)) ||
        (a->a_fp4 && (st = kg__deq_add(p, &iex, base, &off, "A", a->format, a->sf_layout_a, a->dtype, 1, a->m, a->k,
                                       ldw, a->a, a->lda, 0, a->sf_a, a->sf_a_bytes, a->global_scale_a, &ad, why,
                                       cap))))
      return st;
    kg_gemm_args *g = &p->g;
    g->mode = KG_MODE_GEMM;
    g->m = a->m; g->n = a->n; g->k = a->k; g->batch_count = 1; g->split_k_slices = 1;
    g->type_ab = g->type_cd = a->dtype;
    g->layout_a = KG_ROW; g->layout_b = KG_COL; g->layout_cd = KG_ROW;
    g->a = a->a_fp4 ? ad : a->a; g->lda = a->a_fp4 ? ldw : a->lda;
    g->b = w; g->ldb = ldw;
    g->c = a->c; g->ldc = a->ldc;
    g->d = a->d; g->ldd = a->ldd;
    g->alpha = a->alpha; g->beta = a->beta;
    iex.variant = forced;
    st = kg_gemm_select(g, &iex, &name);
    if ((st = kg__deq_inner(p, 0, st, name, forced, 0, why, cap))) return st;
  } else {
    const kg_dualgemm_fp4_args *a = (const kg_dualgemm_fp4_args *)args;
    const int64_t ldw = kg__round8(a->k), batch = a->mode == KG_MODE_BATCHED ? a->batch_count : 1;
    const int split = a->mode == KG_MODE_SPLITK_SERIAL && a->split_k_slices > 1, bcast = a->ldb1 == 0;
    const int64_t bsa = batch > 1 ? a->batch_stride_a : 0, bsb0 = batch > 1 ? a->batch_stride_b0 : 0,
                  bsb1 = batch > 1 ? a->batch_stride_b1 : 0;
    /* scale groups as kg.h defines them: one per batch for a non-zero stride */
    const int64_t g0 = bsb0 ? batch : 1, g1 = bsb1 ? batch : 1, ga = bsa ? batch : 1;
    void *w0 = NULL, *w1 = NULL, *ad = NULL;
    if ((st = kg__deq_exact(a->dtype, a->format, a->global_scale_b0 || a->global_scale_b1 || a->global_scale_a, why,
                            cap)) ||
        (st = kg__deq_add(p, &iex, base, &off, "W0", a->format, a->sf_layout, a->dtype, g0, a->n, a->k, ldw, a->b0,
                          a->ldb0, bsb0, a->sf_b0, a->sf_b0_bytes, a->global_scale_b0, &w0, why, cap)) ||
        (st = kg__deq_add(p, &iex, base, &off, "W1", a->format, a->sf_layout, a->dtype, g1, bcast ? 1 : a->n, a->k,
                          ldw, a->b1, bcast ? a->k / 2 : a->ldb1, bsb1, a->sf_b1, a->sf_b1_bytes, a->global_scale_b1,
                          &w1, why, cap)) ||
        (a->a_fp4 && (st = kg__deq_add(p, &iex, base, &off, "A", a->format, a->sf_layout_a, a->dtype, ga, a->m, a->k,
                                       ldw, a->a, a->lda, bsa, a->sf_a, a->sf_a_bytes, a->global_scale_a, &ad, why,
                                       cap))))
      return st;
    kg_dualgemm_args *g = &p->dg;
    const int b = batch > 1;
    g->mode = split ? KG_MODE_SPLITK_SERIAL : b ? KG_MODE_BATCHED : KG_MODE_GEMM;
    g->m = a->m; g->n = a->n; g->k = a->k; g->batch_count = batch; g->split_k_slices = split ? a->split_k_slices : 1;
    g->type_ab = g->type_cd = a->dtype;
    g->layout_a = a->a_fp4 ? KG_ROW : a->layout_a; g->layout_b0 = KG_COL; g->layout_b1 = KG_COL;
    g->layout_cd = a->layout_cd;
    g->op = a->op; g->store_d0 = !!a->store_d0; g->store_d1 = !!a->store_d1;
    g->a = a->a_fp4 ? ad : a->a; g->lda = a->a_fp4 ? ldw : a->lda;
    g->batch_stride_a = a->a_fp4 ? (ga > 1 ? a->m * ldw : 0) : bsa;
    g->b0 = w0; g->ldb0 = ldw; g->batch_stride_b0 = g0 > 1 ? a->n * ldw : 0;
    g->b1 = w1; g->ldb1 = bcast ? 0 : ldw; g->batch_stride_b1 = g1 > 1 ? (bcast ? ldw : a->n * ldw) : 0;
    g->c0 = a->c0; g->ldc0 = a->ldc0; g->batch_stride_c0 = b ? a->batch_stride_c0 : 0;
    g->c1 = a->c1; g->ldc1 = a->ldc1; g->batch_stride_c1 = b ? a->batch_stride_c1 : 0;
    g->d0 = a->d0; g->ldd0 = a->ldd0; g->batch_stride_d0 = b ? a->batch_stride_d0 : 0;
    g->d1 = a->d1; g->ldd1 = a->ldd1; g->batch_stride_d1 = b ? a->batch_stride_d1 : 0;
    g->d2 = a->d2; g->ldd2 = a->ldd2; g->batch_stride_d2 = b ? a->batch_stride_d2 : 0;
    g->alpha0 = a->alpha0; g->beta0 = a->beta0; g->alpha1 = a->alpha1; g->beta1 = a->beta1;
    iex.variant = forced;
    st = kg_dualgemm_select(g, &iex, &name);
    if ((st = kg__deq_inner(p, 1, st, name, forced, only, why, cap))) return st;
  }
  if (p->inner_bytes > 0) {   /* 16-byte aligned after the operands (each a multiple of 16 bytes) */
    size_t end;
    off = (off + 15) / 16 * 16;
    if (__builtin_add_overflow(off, p->inner_bytes, &end) || end > (size_t)(UINTPTR_MAX - base)) {
      snprintf(why, cap, "the dequantized operands and %s's own workspace do not fit a workspace", p->inner->name);
      return KG_ERROR_NOT_SUPPORTED;
    }
    p->inner_ws = (void *)(base + off);
    off = end;
  }
  p->bytes = off;
  return KG_SUCCESS;
}

/* What an FP4 GEMM / DualGemm call runs: the in-kernel variant v, or (path)
** the dequantize path. */
typedef struct kg__mm_choice {
  kg__fp4_call call;
  const kg_variant *v;      /* NULL when exec->variant forces the path */
  int path;                 /* query: the path would run with the size's workspace */
  kg__deq_plan plan;
  size_t split_bytes;       /* v tensorop: the workspace its K splits could sum through (0: none) */
} kg__mm_choice;

/* Tensorop variant ch->v: its K splits through the workspace (ch->split_bytes, and an explain
** line where they apply: taken, or what workspace would allow them). */
static void kg__fp4t_say_splits(kg__mm_choice *ch, const kg_exec *exec, int query, kg__sink *sink) {
  const kg__fp4_mm *g = ch->call.key.mm;
  const kg_variant *v = ch->v;
  const int sms = kg__sm_count(v->backend);
  const int64_t tiles = kg__fp4t_tiles(g->m, g->n, g->batch, v->tile_m, v->tile_n);
  const kg__fp4t_plan with = kg__fp4t_plan_for(tiles, g->k, sms, 1), without = kg__fp4t_plan_for(tiles, g->k, sms, 0);
  ch->split_bytes = kg__fp4t_ws_bytes(with, tiles, v->tile_m);
  if (query || ch->split_bytes == 0) return;
  if (kg__fp4t_ws_fits(tiles, g->k, sms, v->tile_m, exec->workspace, exec->workspace_size))
    kg__say(sink, "%s: %lld tiles in %d K splits each, summed through the workspace (%zu bytes)\n", v->name,
            (long long)(tiles - with.whole), with.splits, ch->split_bytes);
  else
    kg__say(sink, "%s: %lld tiles in %d K splits each (clusters); a workspace of %zu bytes, 16-byte aligned "
            "(%s_workspace_size), would give %d\n", v->name, (long long)(tiles - without.whole), without.splits,
            ch->split_bytes, g->dual ? "kg_dualgemm_fp4" : "kg_gemm_fp4", with.splits);
}

/* What kg__mm_choose is asked for: a call (or its explain), the workspace size query (exec's
** workspace not looked at: a workspace is assumed), or the name of what runs (kg_*_select,
** which stops before the workspace check, as kg_gemm_select does; for problems that only the
** dequantize path takes, the path whatever the workspace). */
enum { KG__MM_RUN, KG__MM_QUERY, KG__MM_SELECT };

/* Checks and dispatch of KG_OP_GEMM_FP4 / KG_OP_DUALGEMM_FP4, explain lines into sink. */
static kg_status kg__mm_choose(kg_op op, const void *args, const kg_exec *exec, int purpose, kg__mm_choice *ch,
                               kg__sink *sink) {
  const int query = purpose == KG__MM_QUERY;
  char why[400];
  kg_status st;
  const size_t np = strlen(KG__DEQ_PREFIX);
  const int dual = op == KG_OP_DUALGEMM_FP4;
  ch->v = NULL;
  ch->path = 0;
  ch->split_bytes = 0;
  if ((st = kg__fp4_check_op(op, args, exec, &ch->call, sink)) != KG_SUCCESS) return st;
  ch->call.key.ws_query = query;
  const char *forced = exec->variant && strncmp(exec->variant, KG__DEQ_PREFIX, np) == 0 ? exec->variant + np : NULL;
  const kg__fp4_mm *mm = ch->call.key.mm;
  const int only = mm->slices > 1 || mm->bcast_b1 || mm->col;   /* no in-kernel variant takes it */
  const char *only_what = mm->slices > 1 ? "serial split-K" : mm->bcast_b1 ? "a broadcast W1 vector"
                                                                           : "column-major A, C or D";
  if (only && !forced) {
    if (exec->variant) {
      kg__say(sink, "%s: rejected: %s runs on the dequantize path only (\"%s<kg_dualgemm variant>\")\n",
              exec->variant, only_what, KG__DEQ_PREFIX);
      return KG_ERROR_NOT_SUPPORTED;
    }
    kg__say(sink, "%s: the in-kernel FP4 variants do not take it; the dequantize path does\n", only_what);
  } else if (!forced) {
    if ((st = kg__first_fit(op, kg__fp4_rejects_ctx, &ch->call.key, exec, &ch->v, sink)) != KG_SUCCESS) return st;
    if (exec->backend == KG_BACKEND_C) return KG_SUCCESS;   /* the path is for GPU backends */
    if (strcmp(ch->v->kernel, "tensorop") == 0) kg__fp4t_say_splits(ch, exec, query, sink);
    if (exec->variant) {
      kg__say(sink, "dequantize path: not taken: exec->variant forces %s\n", ch->v->name);
      return KG_SUCCESS;
    }
    /* a small-M kernel keeps m up to its path_m (all its m where that is 0); above, the path
    ** runs where it can, else the kernel */
    const long long m = (long long)ch->call.key.mm->m;
    if (ch->v->max_m > 0 && (ch->v->path_m == 0 || m <= ch->v->path_m)) {
      kg__say(sink, "dequantize path: not taken: %s takes m = %lld (a small-M kernel)\n", ch->v->name, m);
      return KG_SUCCESS;
    }
    if (strcmp(ch->v->kernel, "tensorop") == 0) {
      kg__say(sink, "dequantize path: not taken: %s decodes the weights on the tensor-core path itself\n",
              ch->v->name);
      return KG_SUCCESS;
    }
  } else if (exec->backend == KG_BACKEND_C && !only) {
    kg__say(sink, "%s: rejected: the dequantize path is for the GPU backends (the C backend runs its blocked "
            "kernels)\n", exec->variant);
    return KG_ERROR_NOT_SUPPORTED;
  }
  const uintptr_t ws = (uintptr_t)exec->workspace;
  const int ws_aligned = exec->workspace && ws % 16 == 0;
  st = kg__deq_plan_make(op, args, exec, !query && ws_aligned ? ws : KG__DEQ_STANDIN, forced, only, &ch->plan, why,
                         sizeof why);
  if (st != KG_SUCCESS) {
    if (!forced && !only) {
      kg__say(sink, "dequantize path: not taken: %s\n", why);
      return KG_SUCCESS;
    }
    kg__say(sink, "%s: rejected: %s\n", forced ? exec->variant : "dequantize path", why);
    return st;
  }
  if (query || (purpose == KG__MM_SELECT && only)) {
    ch->path = 1;
    return KG_SUCCESS;
  }
  const size_t need = ch->plan.bytes, have = exec->workspace ? exec->workspace_size : 0;
  if (have < need || !ws_aligned) {
    if (have < need)
      snprintf(why, sizeof why, "workspace %zu bytes given, %zu needed (%s_workspace_size)", have, need,
               dual ? "kg_dualgemm_fp4" : "kg_gemm_fp4");
    else
      snprintf(why, sizeof why, "workspace not 16-byte aligned");
    if (forced || only) {
      kg__say(sink, "%s: rejected: %s\n", forced ? exec->variant : "dequantize path", why);
      return have < need ? KG_ERROR_WORKSPACE_TOO_SMALL : KG_ERROR_MISALIGNED_OPERAND;
    }
    kg__say(sink, "dequantize path: not taken: %s; %s runs\n", why, ch->v->name);
    return KG_SUCCESS;
  }
  ch->path = 1;
  const char *ops = ch->plan.ndeq == 1 ? "W" : ch->plan.ndeq == 2 ? (dual ? "W0, W1" : "W and A") : "W0, W1 and A";
  kg__say(sink, "%s%s: chosen%s%s (%s dequantized to %s in the workspace, %zu of %zu bytes)\n", KG__DEQ_PREFIX,
          ch->plan.inner->name, ch->v ? " instead of " : "", ch->v ? ch->v->name : "", ops,
          kg_dtype_string(ch->plan.deq[0].dtype), need, have);
  return KG_SUCCESS;
}

/* The path: dequantize into the workspace, then the GEMM, in stream order. */
static kg_status kg__deq_run(kg_op op, const kg__deq_plan *p, const kg_exec *exec) {
  kg_exec iex = *exec;
  iex.workspace = NULL; iex.workspace_size = 0; iex.variant = NULL;
  for (int i = 0; i < p->ndeq; i++) {
    kg_status st = p->deq_v[i]->fp4_launch(&p->deq[i], &iex);
    if (st != KG_SUCCESS) return st;
  }
  iex.workspace = p->inner_ws; iex.workspace_size = p->inner_bytes;
  return op == KG_OP_GEMM_FP4 ? p->inner->gemm_launch(&p->g, &iex) : p->inner->dualgemm_launch(&p->dg, &iex);
}

/* "dequantize + <inner variant>", in thread-local storage per op. */
static const char *kg__deq_name(kg_op op, const kg_variant *inner) {
  static _Thread_local char names[2][192];
  char *b = names[op == KG_OP_DUALGEMM_FP4];
  snprintf(b, sizeof names[0], "%s%s", KG__DEQ_PREFIX, inner->name);
  return b;
}

static int kg__fp4_mm_op(kg_op op) { return op == KG_OP_GEMM_FP4 || op == KG_OP_DUALGEMM_FP4; }

kg_status kg__fp4_explain(kg_op op, const void *args, const kg_exec *exec, kg__sink *sink) {
  if (kg__fp4_mm_op(op)) {
    kg__mm_choice ch;
    return kg__mm_choose(op, args, exec, KG__MM_RUN, &ch, sink);
  }
  kg__fp4_call call;
  const kg_variant *v = NULL;
  return kg__fp4_select(op, args, exec, &call, &v, sink);
}

kg_status kg_fp4_select(kg_op op, const void *args, const kg_exec *exec, const char **name) {
  if (!name) return KG_ERROR_INVALID_ARGUMENT;
  *name = NULL;
  if (!kg__fp4_op(op)) return KG_ERROR_INVALID_ARGUMENT;
  if (kg__fp4_mm_op(op)) {
    kg__mm_choice ch;
    kg_status st = kg__mm_choose(op, args, exec, KG__MM_SELECT, &ch, NULL);
    if (st == KG_SUCCESS) *name = ch.path ? kg__deq_name(op, ch.plan.inner) : ch.v->name;
    return st;
  }
  kg__fp4_call call;
  const kg_variant *v = NULL;
  kg_status st = kg__fp4_select(op, args, exec, &call, &v, NULL);
  if (st == KG_SUCCESS) *name = v->name;
  return st;
}

static kg_status kg__fp4_run(kg_op op, const void *args, const kg_exec *exec) {
  if (kg__fp4_mm_op(op)) {
    kg__mm_choice ch;
    kg_status st = kg__mm_choose(op, args, exec, KG__MM_RUN, &ch, NULL);
    if (st != KG_SUCCESS) return st;
    if (ch.path) return kg__deq_run(op, &ch.plan, exec);
    if (op == KG_OP_GEMM_FP4) return ch.v->gemm_fp4_launch((const kg_gemm_fp4_args *)args, exec);
    return ch.v->dualgemm_fp4_launch((const kg_dualgemm_fp4_args *)args, exec);
  }
  kg__fp4_call call;
  const kg_variant *v = NULL;
  kg_status st = kg__fp4_select(op, args, exec, &call, &v, NULL);
  if (st != KG_SUCCESS) return st;
  if (op == KG_OP_FP4_QUANTIZE || op == KG_OP_FP4_DEQUANTIZE) return v->fp4_launch((const kg_fp4_args *)args, exec);
  if (op == KG_OP_AMAX) return v->amax_launch((const kg_amax_args *)args, exec);
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
/* Workspace of the FP4 GEMM ops: the dequantize path's bytes where it would
** run, else 0 (the in-kernel variants need none). */
static kg_status kg__fp4_mm_workspace(kg_op op, const void *args, const kg_exec *exec, size_t *bytes) {
  if (!bytes) return KG_ERROR_INVALID_ARGUMENT;
  *bytes = 0;
  kg__mm_choice ch;
  kg_status st = kg__mm_choose(op, args, exec, KG__MM_QUERY, &ch, NULL);
  if (st == KG_SUCCESS) *bytes = ch.path ? ch.plan.bytes : ch.split_bytes;
  return st;
}
kg_status kg_gemm_fp4_workspace_size(const kg_gemm_fp4_args *args, const kg_exec *exec, size_t *bytes) {
  return kg__fp4_mm_workspace(KG_OP_GEMM_FP4, args, exec, bytes);
}

kg_status kg_dualgemm_fp4(const kg_dualgemm_fp4_args *args, const kg_exec *exec) {
  return kg__fp4_run(KG_OP_DUALGEMM_FP4, args, exec);
}
kg_status kg_dualgemm_fp4_select(const kg_dualgemm_fp4_args *args, const kg_exec *exec, const char **name) {
  return kg_fp4_select(KG_OP_DUALGEMM_FP4, args, exec, name);
}
kg_status kg_dualgemm_fp4_workspace_size(const kg_dualgemm_fp4_args *args, const kg_exec *exec, size_t *bytes) {
  return kg__fp4_mm_workspace(KG_OP_DUALGEMM_FP4, args, exec, bytes);
}

kg_status kg_amax(const kg_amax_args *args, const kg_exec *exec) {
  return kg__fp4_run(KG_OP_AMAX, args, exec);
}
