/*
** kg.c -- argument checks, first-fit dispatch and kg_explain.
**
** Invariant: a generated launch function is called only after kg__gemm_check
** returned KG_SUCCESS and the variant's predicates (kg__gemm_accepts) held,
** so generated code never re-validates.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kg_internal.h"
#include "kg_half.h"

#ifdef KG_WITH_CUDA
int kg__cuda_available(void);
void kg__cuda_clear_error(void);
#else
static int kg__cuda_available(void) { return 0; }
static void kg__cuda_clear_error(void) {}
#endif
#ifdef KG_WITH_HIP
int kg__hip_available(void);
void kg__hip_clear_error(void);
#else
static int kg__hip_available(void) { return 0; }
static void kg__hip_clear_error(void) {}
#endif

/* ---- status, names ------------------------------------------------------ */

const char *kg_status_string(kg_status s) {
  switch (s) {
    case KG_SUCCESS: return "success";
    case KG_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case KG_ERROR_INVALID_PROBLEM: return "invalid problem";
    case KG_ERROR_MISALIGNED_OPERAND: return "misaligned operand";
    case KG_ERROR_NOT_SUPPORTED: return "not supported";
    case KG_ERROR_WORKSPACE_TOO_SMALL: return "workspace too small";
    case KG_ERROR_BACKEND_UNAVAILABLE: return "backend unavailable";
    case KG_ERROR_BACKEND: return "backend error";
    case KG_ERROR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

static _Thread_local char kg__backend_msg[256];

/* Every backend failure comes here (the launchers' KG_ERROR_BACKEND paths): the message is kept
** and the GPU runtimes' pending error of this thread is cleared, so that no later call, kg's or
** the caller's, reads it as its own (a failed cudaLaunchKernelEx, for one, leaves it set). */
void kg__set_backend_error(const char *msg) {
  snprintf(kg__backend_msg, sizeof kg__backend_msg, "%s", msg ? msg : "");
  kg__cuda_clear_error();
  kg__hip_clear_error();
}
const char *kg_last_backend_error(void) { return kg__backend_msg; }

const char *kg_backend_string(kg_backend b) {
  switch (b) {
    case KG_BACKEND_C: return "c";
    case KG_BACKEND_CUDA: return "cuda";
    case KG_BACKEND_HIP: return "hip";
  }
  return "unknown";
}

int kg_backend_available(kg_backend b) {
  switch (b) {
    case KG_BACKEND_C: return 1;
    case KG_BACKEND_CUDA: return kg__cuda_available();
    case KG_BACKEND_HIP: return kg__hip_available();
  }
  return 0;
}

size_t kg_dtype_size(kg_dtype t) {
  switch (t) {
    case KG_F32: return 4;
    case KG_F16: case KG_BF16: return 2;
  }
  return 0;
}

const char *kg_dtype_string(kg_dtype t) {
  switch (t) {
    case KG_F32: return "f32";
    case KG_F16: return "f16";
    case KG_BF16: return "bf16";
  }
  return "unknown";
}

uint16_t kg_f32_to_f16_bits(float f) { return kg_f32_to_f16(f); }
float kg_f16_bits_to_f32(uint16_t h) { return kg_f16_to_f32(h); }
uint16_t kg_f32_to_bf16_bits(float f) { return kg_f32_to_bf16(f); }
float kg_bf16_bits_to_f32(uint16_t h) { return kg_bf16_to_f32(h); }

int kg_variant_count(void) { return kg_variants_count; }
const char *kg_variant_name(int i) {
  return (i >= 0 && i < kg_variants_count) ? kg_variants[i].name : NULL;
}

/* ---- explain sink: a bounded text buffer -------------------------------- */

/* kg__sink is declared in kg_internal.h (kg_fp4.c shares it). */
void kg__say(kg__sink *s, const char *fmt, ...) {
  if (!s || !s->buf || s->cap == 0) return;
  if (s->len + 1 >= s->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
  va_end(ap);
  if (n > 0) s->len = (s->len + (size_t)n < s->cap) ? s->len + (size_t)n : s->cap - 1;
}

/* ---- problem view --------------------------------------------------------
** Every op describes itself as a kg__problem: sizes, mode, types, layouts and
** a list of matrix operands. Checks and variant predicates work on that view,
** so each op adds only its own rules. */

enum { KG__MAX_OPERANDS = 8 };

typedef struct kg__operand {
  const char *name;     /* "a", "b0", ... as in the args struct */
  const void *ptr;      /* NULL: operand absent (the op check allowed it) */
  int layout;
  int64_t rows, cols, ld, bs;
  kg_dtype dtype;
  int may_broadcast;    /* ld 0 allowed: one row (row-major) / column (col-major) */
  int output;           /* written: batches must not overlap */
} kg__operand;

typedef struct kg__problem {
  kg_op op;
  kg_mode mode;
  int64_t m, n, k, batch_count, slices;
  kg_dtype type_ab, type_cd;
  int layout_a, layout_b, layout_b1, layout_cd;  /* layout_b1: KG_LAYOUT_ANY for GEMM */
  int dual_op, store_d0, store_d1;
  int nops;
  kg__operand ops[KG__MAX_OPERANDS];
} kg__problem;

static void kg__add(kg__problem *p, const char *name, const void *ptr, int layout, int64_t rows, int64_t cols,
                    int64_t ld, int64_t bs, kg_dtype t, int may_broadcast, int output) {
  kg__operand o = { name, ptr, layout, rows, cols, ld, bs, t, may_broadcast, output };
  p->ops[p->nops++] = o;
}

/* ---- checks ------------------------------------------------------------- */

static int kg__valid_dtype(int t) { return t == KG_F32 || t == KG_F16 || t == KG_BF16; }
static int kg__valid_layout(int l) { return l == KG_ROW || l == KG_COL; }

/* Highest element offset + 1 of a rows x cols matrix (batch copies apart),
** or -1 on int64 overflow (of elements or of bytes). */
static int64_t kg__extent(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                          int64_t batch, int64_t bs) {
  int64_t a, b, c, e;
  if (__builtin_mul_overflow(rows - 1, rs, &a)) return -1;
  if (__builtin_mul_overflow(cols - 1, cs, &b)) return -1;
  if (__builtin_mul_overflow(batch - 1, bs, &c)) return -1;
  if (__builtin_add_overflow(a, b, &e) || __builtin_add_overflow(e, c, &e) ||
      __builtin_add_overflow(e, 1, &e)) return -1;
  if (__builtin_mul_overflow(e, (int64_t)8, &a)) return -1;
  return e;
}

/* ld covers the layout (0 allowed when it broadcasts), batch stride is
** non-negative, the extent fits int64, output batches do not overlap. */
static kg_status kg__check_operand(kg__sink *sink, const kg__operand *o, int64_t batch) {
  int64_t need = o->layout == KG_ROW ? o->cols : o->rows;
  if (o->ld < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ld%s = %lld is negative", o->name, (long long)o->ld);
  if (!(o->ld == 0 && o->may_broadcast) && o->ld < need)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ld%s = %lld is smaller than the %s-major extent %lld%s", o->name,
             (long long)o->ld, o->layout == KG_ROW ? "row" : "column", (long long)need,
             o->may_broadcast ? " (0 broadcasts)" : "");
  if (o->bs < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "batch_stride_%s = %lld is negative", o->name, (long long)o->bs);
  int64_t rs, cs;
  kg__strides(o->layout, o->ld, &rs, &cs);
  if (kg__extent(o->rows, o->cols, rs, cs, batch, o->bs) < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "operand %s extent overflows int64", o->name);
  if (o->output && batch > 1 && o->bs < kg__extent(o->rows, o->cols, rs, cs, 1, 0))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch_stride_%s %lld makes output batches overlap", o->name, (long long)o->bs);
  const kg__ptr_rule al[] = { { o->name, o->ptr, kg_dtype_size(o->dtype) } };
  return kg__check_aligned(al, 1, sink);
}

kg_status kg__check_exec(const kg_exec *exec, kg__sink *sink) {
  if (!exec) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "exec is NULL");
  if (exec->backend != KG_BACKEND_C && exec->backend != KG_BACKEND_CUDA && exec->backend != KG_BACKEND_HIP)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown backend %d", (int)exec->backend);
  if (exec->flags & ~(unsigned)KG_EXEC_PDL)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown exec flags 0x%x (allowed: KG_EXEC_PDL)", exec->flags & ~(unsigned)KG_EXEC_PDL);
  if (exec->workspace_size > 0 && !exec->workspace)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "workspace_size is %zu but workspace is NULL", exec->workspace_size);
  if (!kg_backend_available(exec->backend))
    KG__FAIL(KG_ERROR_BACKEND_UNAVAILABLE, "backend %s is not compiled in or has no device",
             kg_backend_string(exec->backend));
  return KG_SUCCESS;
}

kg_status kg__check_aligned(const kg__ptr_rule *rules, int n, kg__sink *sink) {
  for (int i = 0; i < n; i++)
    if (rules[i].ptr && (uintptr_t)rules[i].ptr % rules[i].align != 0)
      KG__FAIL(KG_ERROR_MISALIGNED_OPERAND, "%s = %p is not aligned to its %zu-byte elements", rules[i].name,
               rules[i].ptr, rules[i].align);
  return KG_SUCCESS;
}

/* Rules every op shares: enums, sizes, modes, operands, exec. */
static kg_status kg__check_problem(const kg__problem *p, const kg_exec *exec, kg__sink *sink) {
  kg_status st;
  if (p->mode != KG_MODE_GEMM && p->mode != KG_MODE_BATCHED && p->mode != KG_MODE_SPLITK_SERIAL)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown mode %d", (int)p->mode);
  if (!kg__valid_dtype(p->type_ab) || !kg__valid_dtype(p->type_cd))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown dtype (type_ab %d, type_cd %d)", (int)p->type_ab, (int)p->type_cd);
  for (int i = 0; i < p->nops; i++)
    if (!kg__valid_layout(p->ops[i].layout))
      KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown layout %d for %s (allowed: KG_ROW, KG_COL)",
               p->ops[i].layout, p->ops[i].name);
  if (p->m <= 0 || p->n <= 0 || p->k <= 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes must be >= 1 (m %lld, n %lld, k %lld)",
             (long long)p->m, (long long)p->n, (long long)p->k);
  if (p->batch_count < 1) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "batch_count %lld < 1", (long long)p->batch_count);
  if (p->slices < 1) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "split_k_slices %lld < 1", (long long)p->slices);
  if (p->mode == KG_MODE_BATCHED && p->slices > 1)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batched mode with split_k_slices %lld: batch and K slice both need the grid's z",
             (long long)p->slices);
  if (p->mode == KG_MODE_SPLITK_SERIAL && p->batch_count > 1)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "serial split-K with batch_count %lld: use batched mode or split-K, not both",
             (long long)p->batch_count);
  if (p->mode == KG_MODE_GEMM && (p->batch_count > 1 || p->slices > 1))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "gemm mode takes batch_count 1 and split_k_slices 1");
  if (p->batch_count > KG_MAX_BATCH)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch_count %lld exceeds the grid limit %d", (long long)p->batch_count, KG_MAX_BATCH);
  if (p->slices > p->k)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "split_k_slices %lld exceeds k %lld", (long long)p->slices, (long long)p->k);
  if (p->slices > KG_MAX_BATCH)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "split_k_slices %lld exceeds the grid limit %d", (long long)p->slices, KG_MAX_BATCH);
  int64_t batch = p->mode == KG_MODE_BATCHED ? p->batch_count : 1;
  for (int i = 0; i < p->nops; i++)
    if (p->ops[i].ptr && (st = kg__check_operand(sink, &p->ops[i], batch))) return st;
  return kg__check_exec(exec, sink);
}

static kg_status kg__gemm_problem(const kg_gemm_args *g, kg__problem *p, kg__sink *sink) {
  if (!g) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if (!g->a || !g->b || !g->d) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "a, b and d must not be NULL");
  if (!g->c && g->beta != 0.0f) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "c is NULL but beta != 0");
  memset(p, 0, sizeof *p);
  p->op = KG_OP_GEMM; p->mode = g->mode;
  p->m = g->m; p->n = g->n; p->k = g->k; p->batch_count = g->batch_count; p->slices = g->split_k_slices;
  p->type_ab = g->type_ab; p->type_cd = g->type_cd;
  p->layout_a = g->layout_a; p->layout_b = g->layout_b; p->layout_b1 = KG_LAYOUT_ANY; p->layout_cd = g->layout_cd;
  kg__add(p, "a", g->a, g->layout_a, g->m, g->k, g->lda, g->batch_stride_a, g->type_ab, 0, 0);
  kg__add(p, "b", g->b, g->layout_b, g->k, g->n, g->ldb, g->batch_stride_b, g->type_ab, 0, 0);
  kg__add(p, "c", g->c, g->layout_cd, g->m, g->n, g->ldc, g->batch_stride_c, g->type_cd, 1, 0);
  kg__add(p, "d", g->d, g->layout_cd, g->m, g->n, g->ldd, g->batch_stride_d, g->type_cd, 0, 1);
  return KG_SUCCESS;
}

static kg_status kg__dualgemm_problem(const kg_dualgemm_args *g, kg__problem *p, kg__sink *sink) {
  if (!g) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if (!g->a || !g->b0 || !g->b1 || !g->d2) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "a, b0, b1 and d2 must not be NULL");
  if (g->op != KG_DUAL_SWIGLU && g->op != KG_DUAL_GEGLU && g->op != KG_DUAL_MUL)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown op %d (allowed: KG_DUAL_SWIGLU, KG_DUAL_GEGLU, KG_DUAL_MUL)", (int)g->op);
  if (!!g->store_d0 != !!g->d0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "store_d0 is %d but d0 is %s", g->store_d0, g->d0 ? "set" : "NULL");
  if (!!g->store_d1 != !!g->d1)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "store_d1 is %d but d1 is %s", g->store_d1, g->d1 ? "set" : "NULL");
  if (!g->c0 && g->beta0 != 0.0f) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "c0 is NULL but beta0 != 0");
  if (!g->c1 && g->beta1 != 0.0f) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "c1 is NULL but beta1 != 0");
  if (g->ldb1 == 0 && g->layout_b1 != KG_COL)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ldb1 = 0 (broadcast vector) needs column-major B1");
  memset(p, 0, sizeof *p);
  p->op = KG_OP_DUALGEMM; p->mode = g->mode;
  p->m = g->m; p->n = g->n; p->k = g->k; p->batch_count = g->batch_count; p->slices = g->split_k_slices;
  p->type_ab = g->type_ab; p->type_cd = g->type_cd;
  p->layout_a = g->layout_a; p->layout_b = g->layout_b0; p->layout_b1 = g->layout_b1; p->layout_cd = g->layout_cd;
  p->dual_op = g->op; p->store_d0 = !!g->store_d0; p->store_d1 = !!g->store_d1;
  kg__add(p, "a", g->a, g->layout_a, g->m, g->k, g->lda, g->batch_stride_a, g->type_ab, 0, 0);
  kg__add(p, "b0", g->b0, g->layout_b0, g->k, g->n, g->ldb0, g->batch_stride_b0, g->type_ab, 0, 0);
  kg__add(p, "b1", g->b1, g->layout_b1, g->k, g->n, g->ldb1, g->batch_stride_b1, g->type_ab, 1, 0);
  kg__add(p, "c0", g->c0, g->layout_cd, g->m, g->n, g->ldc0, g->batch_stride_c0, g->type_cd, 1, 0);
  kg__add(p, "c1", g->c1, g->layout_cd, g->m, g->n, g->ldc1, g->batch_stride_c1, g->type_cd, 1, 0);
  kg__add(p, "d0", g->d0, g->layout_cd, g->m, g->n, g->ldd0, g->batch_stride_d0, g->type_cd, 0, 1);
  kg__add(p, "d1", g->d1, g->layout_cd, g->m, g->n, g->ldd1, g->batch_stride_d1, g->type_cd, 0, 1);
  kg__add(p, "d2", g->d2, g->layout_cd, g->m, g->n, g->ldd2, g->batch_stride_d2, g->type_cd, 0, 1);
  return KG_SUCCESS;
}

/* Builds the problem view of (op, args) and runs every check. */
static kg_status kg__problem_of(kg_op op, const void *args, const kg_exec *exec, kg__problem *p, kg__sink *sink) {
  kg_status st;
  switch (op) {
    case KG_OP_GEMM: st = kg__gemm_problem((const kg_gemm_args *)args, p, sink); break;
    case KG_OP_DUALGEMM: st = kg__dualgemm_problem((const kg_dualgemm_args *)args, p, sink); break;
    default: KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown op %d", (int)op);
  }
  return st != KG_SUCCESS ? st : kg__check_problem(p, exec, sink);
}

/* ---- variant predicates -------------------------------------------------- */

int64_t kg__mul3_sat(int64_t a, int64_t b, int64_t c) {
  int64_t ab, abc;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return INT64_MAX;
  return abc;
}

const char *kg__tma_rejects(const kg__tma_map *maps, int n, char *why, size_t why_size) {
  for (int i = 0; i < n; i++) {
    const kg__tma_map *t = &maps[i];
    if (t->inner > KG__TMA_EXTENT_MAX || t->outer > KG__TMA_EXTENT_MAX) {
      snprintf(why, why_size, "operand %s: extents %lld x %lld, above the bulk copies' %lld (int32 coordinates)",
               t->name, (long long)t->outer, (long long)t->inner, (long long)KG__TMA_EXTENT_MAX);
      return why;
    }
    if (t->stride1 >= KG__TMA_STRIDE_LIMIT || t->stride2 >= KG__TMA_STRIDE_LIMIT) {
      snprintf(why, why_size, "operand %s: strides of %lld and %lld bytes, the bulk copies' tensor maps take "
               "below 2^40", t->name, (long long)t->stride1, (long long)t->stride2);
      return why;
    }
  }
  return NULL;
}

/* The tensor maps of a GEMM / DualGemm tensorop launcher (templates/gemm/tensorop.kgt): A and the B
** operands, contiguous dimension first; a batch dimension where an operand has a batch stride in
** batched mode, else dimension 2 spans the operand; a broadcast vector (ld 0) is one padded row. */
static const char *kg__gemm_tma_rejects(const kg__problem *p, char *why, size_t why_size) {
  kg__tma_map maps[3];
  const int n = p->op == KG_OP_DUALGEMM ? 3 : 2;   /* a, b / b0, b1 lead p->ops */
  for (int i = 0; i < n; i++) {
    const kg__operand *o = &p->ops[i];
    const int64_t es = (int64_t)kg_dtype_size(o->dtype);
    const int row = o->layout == KG_ROW;
    const int vec = o->ld == 0;
    const int64_t outer = vec ? 1 : row ? o->rows : o->cols;
    const int64_t s1 = vec ? ((row ? o->cols : o->rows) * es + 15) / 16 * 16 : kg__mul3_sat(o->ld, es, 1);
    const int per_batch = p->mode == KG_MODE_BATCHED && o->bs != 0 && p->batch_count > 1;
    const kg__tma_map t = { o->name, row ? o->cols : o->rows, outer, s1,
                            per_batch ? kg__mul3_sat(o->bs, es, 1) : kg__mul3_sat(s1, outer, 1) };
    maps[i] = t;
  }
  return kg__tma_rejects(maps, n, why, why_size);
}

static int kg__layout_fits(int want, int have) { return want == KG_LAYOUT_ANY || want == have; }

static const char *kg__dual_op_string(int op) {
  return op == KG_DUAL_SWIGLU ? "swiglu" : op == KG_DUAL_GEGLU ? "geglu" : op == KG_DUAL_MUL ? "mul" : "unknown";
}

/* Why variant v cannot run p (NULL when it can). *misaligned is set when the
** objection is alignment (checked last, so it is then the only one). */
static const char *kg__rejects(const kg_variant *v, const kg__problem *p, const kg_exec *exec, int *misaligned) {
  static _Thread_local char why[160];
  *misaligned = 0;
  if (v->backend != exec->backend) {
    snprintf(why, sizeof why, "backend %s, wanted %s", kg_backend_string(v->backend), kg_backend_string(exec->backend));
    return why;
  }
  if (v->type_ab != p->type_ab || v->type_cd != p->type_cd) {
    snprintf(why, sizeof why, "types %s->%s, wanted %s->%s", kg_dtype_string(v->type_ab), kg_dtype_string(v->type_cd),
             kg_dtype_string(p->type_ab), kg_dtype_string(p->type_cd));
    return why;
  }
  if (!kg__layout_fits(v->layout_a, p->layout_a) || !kg__layout_fits(v->layout_b, p->layout_b) ||
      (p->op == KG_OP_DUALGEMM && !kg__layout_fits(v->layout_b1, p->layout_b1)) ||
      !kg__layout_fits(v->layout_cd, p->layout_cd))
    return "layouts differ";
  if (p->op == KG_OP_DUALGEMM) {
    if (v->dual_op != p->dual_op) {
      snprintf(why, sizeof why, "op %s, wanted %s", kg__dual_op_string(v->dual_op), kg__dual_op_string(p->dual_op));
      return why;
    }
    if (v->store_d0 != p->store_d0 || v->store_d1 != p->store_d1) {
      snprintf(why, sizeof why, "stores d0=%d d1=%d, wanted d0=%d d1=%d", v->store_d0, v->store_d1, p->store_d0,
               p->store_d1);
      return why;
    }
  }
  if (!(v->modes & KG_MODE_BIT(p->mode))) return "mode not supported";
  if (v->max_m > 0 && p->m > v->max_m) {
    snprintf(why, sizeof why, "m %lld above the variant's limit %d", (long long)p->m, v->max_m);
    return why;
  }
  if (v->backend != KG_BACKEND_C && (p->m + v->tile_m - 1) / v->tile_m > 65535)
    return "m needs more than 65535 tiles (grid y limit)";
  if (v->max_tiles_per_sm > 0 && v->backend != KG_BACKEND_C && !exec->variant) {
    /* a preference, not a limit of the kernel: a variant forced by name runs any size.
    ** In double: the product of the four counts may pass int64. */
    const int sms = kg__sm_count(v->backend);
    const double tiles = (double)((p->m + v->tile_m - 1) / v->tile_m) * (double)((p->n + v->tile_n - 1) / v->tile_n) *
                         (double)p->batch_count * (double)p->slices;
    if (tiles > (double)v->max_tiles_per_sm * sms) {
      snprintf(why, sizeof why, "%.0f tiles of %dx%d, above the variant's %d per SM on %d SMs (for problems "
               "that leave a larger tile's SMs idle)", tiles, v->tile_m, v->tile_n, v->max_tiles_per_sm, sms);
      return why;
    }
  }
  if (v->backend != KG_BACKEND_C && strcmp(v->kernel, "tensorop") == 0) {
    /* the kernels order their blocks in int arithmetic: grid x times 16 and the tile count below 2^31 */
    const int64_t tiles_m = (p->m + v->tile_m - 1) / v->tile_m, tiles_n = (p->n + v->tile_n - 1) / v->tile_n;
    if (tiles_n > INT32_MAX / 16 || tiles_m * tiles_n > INT32_MAX)
      return "more than 2^27 - 1 columns or 2^31 - 1 tiles in all (the kernel's block order)";
  }
  if (v->tma && kg__gemm_tma_rejects(p, why, sizeof why)) return why;
  if (v->align > 1) {
    for (int i = 0; i < p->nops; i++) {
      const kg__operand *o = &p->ops[i];
      int64_t bytes = (int64_t)kg_dtype_size(o->dtype) * v->align;
      if (!o->ptr) continue;
      if ((uintptr_t)o->ptr % (uintptr_t)bytes != 0 || o->ld % v->align != 0 ||
          (p->mode == KG_MODE_BATCHED && o->bs % v->align != 0)) {
        *misaligned = 1;
        snprintf(why, sizeof why, "operand %s: needs pointer, ld and batch stride aligned to %d elements",
                 o->name, v->align);
        return why;
      }
    }
  }
  return NULL;
}

int kg__sm_count(kg_backend b) {
  const int n = b == KG_BACKEND_CUDA ? kg__cuda_sm_count() : b == KG_BACKEND_HIP ? kg__hip_sm_count() : 1;
  return n > 0 ? n : 1;
}

kg_status kg__first_fit(kg_op op, kg__rejects_fn rejects, const void *ctx, const kg_exec *exec,
                        const kg_variant **out, kg__sink *sink) {
  int any_misaligned = 0, named = 0;
  const kg_variant *chosen = NULL;
  for (int i = 0; i < kg_variants_count; i++) {
    const kg_variant *v = &kg_variants[i];
    if (v->op != op) continue;
    if (exec->variant && strcmp(exec->variant, v->name) != 0) continue;
    named = 1;
    if (chosen) { kg__say(sink, "%s: not considered: %s chosen first\n", v->name, chosen->name); continue; }
    int mis;
    const char *why = rejects(v, ctx, exec, &mis);
    if (why) {
      any_misaligned |= mis;
      kg__say(sink, "%s: rejected: %s\n", v->name, why);
      continue;
    }
    chosen = v;
    kg__say(sink, "%s: chosen (%s)\n", v->name, v->spec);
  }
  if (!chosen) {
    if (exec->variant && !named) kg__say(sink, "no variant named '%s'\n", exec->variant);
    return any_misaligned ? KG_ERROR_MISALIGNED_OPERAND : KG_ERROR_NOT_SUPPORTED;
  }
  *out = chosen;
  return KG_SUCCESS;
}

static const char *kg__problem_rejects(const kg_variant *v, const void *ctx, const kg_exec *exec, int *misaligned) {
  return kg__rejects(v, (const kg__problem *)ctx, exec, misaligned);
}

/* Checks (op, args) and selects the first variant that accepts it. */
static kg_status kg__select(kg_op op, const void *args, const kg_exec *exec, const kg_variant **out,
                            kg__sink *sink) {
  kg__problem p;
  kg_status st = kg__problem_of(op, args, exec, &p, sink);
  if (st != KG_SUCCESS) return st;
  return kg__first_fit(op, kg__problem_rejects, &p, exec, out, sink);
}

static size_t kg__workspace(const kg_variant *v, kg_op op, const void *args) {
  return op == KG_OP_GEMM ? v->gemm_workspace((const kg_gemm_args *)args)
                          : v->dualgemm_workspace((const kg_dualgemm_args *)args);
}

/* select + workspace check: what every entry point does before launching. */
static kg_status kg__prepare(kg_op op, const void *args, const kg_exec *exec, const kg_variant **out,
                             kg__sink *sink) {
  kg_status st = kg__select(op, args, exec, out, sink);
  if (st != KG_SUCCESS) return st;
  size_t need = kg__workspace(*out, op, args);
  if (need > 0 && (!exec->workspace || exec->workspace_size < need)) {
    kg__say(sink, "workspace: %zu bytes needed, %zu given\n", need, exec->workspace ? exec->workspace_size : 0);
    return KG_ERROR_WORKSPACE_TOO_SMALL;
  }
  if (need > 0 && (uintptr_t)exec->workspace % 16 != 0) {
    kg__say(sink, "workspace: must be 16-byte aligned\n");
    return KG_ERROR_MISALIGNED_OPERAND;
  }
  return KG_SUCCESS;
}

/* ---- entry points -------------------------------------------------------- */

static kg_status kg__select_name(kg_op op, const void *args, const kg_exec *exec, const char **name) {
  const kg_variant *v = NULL;
  if (!name) return KG_ERROR_INVALID_ARGUMENT;
  kg_status st = kg__select(op, args, exec, &v, NULL);
  *name = st == KG_SUCCESS ? v->name : NULL;
  return st;
}

static kg_status kg__workspace_size(kg_op op, const void *args, const kg_exec *exec, size_t *bytes) {
  const kg_variant *v = NULL;
  if (!bytes) return KG_ERROR_INVALID_ARGUMENT;
  *bytes = 0;
  kg_status st = kg__select(op, args, exec, &v, NULL);
  if (st == KG_SUCCESS) *bytes = kg__workspace(v, op, args);
  return st;
}

kg_status kg_gemm_select(const kg_gemm_args *args, const kg_exec *exec, const char **name) {
  return kg__select_name(KG_OP_GEMM, args, exec, name);
}

kg_status kg_gemm_workspace_size(const kg_gemm_args *args, const kg_exec *exec, size_t *bytes) {
  return kg__workspace_size(KG_OP_GEMM, args, exec, bytes);
}

kg_status kg_gemm(const kg_gemm_args *args, const kg_exec *exec) {
  const kg_variant *v = NULL;
  kg_status st = kg__prepare(KG_OP_GEMM, args, exec, &v, NULL);
  return st != KG_SUCCESS ? st : v->gemm_launch(args, exec);
}

kg_status kg_dualgemm_select(const kg_dualgemm_args *args, const kg_exec *exec, const char **name) {
  return kg__select_name(KG_OP_DUALGEMM, args, exec, name);
}

kg_status kg_dualgemm_workspace_size(const kg_dualgemm_args *args, const kg_exec *exec, size_t *bytes) {
  return kg__workspace_size(KG_OP_DUALGEMM, args, exec, bytes);
}

kg_status kg_dualgemm(const kg_dualgemm_args *args, const kg_exec *exec) {
  const kg_variant *v = NULL;
  kg_status st = kg__prepare(KG_OP_DUALGEMM, args, exec, &v, NULL);
  return st != KG_SUCCESS ? st : v->dualgemm_launch(args, exec);
}

kg_status kg_explain(kg_op op, const void *args, const kg_exec *exec, char *buf, size_t cap) {
  kg__sink sink = { buf, cap, 0 };
  const kg_variant *v = NULL;
  if (buf && cap) buf[0] = '\0';
  if (kg__fp4_op(op)) return kg__fp4_explain(op, args, exec, &sink);
  if (kg__attn_op(op)) return kg__attn_explain(op, args, exec, &sink);
  return kg__prepare(op, args, exec, &v, &sink);
}
