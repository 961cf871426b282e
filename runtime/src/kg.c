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
#else
static int kg__cuda_available(void) { return 0; }
#endif
#ifdef KG_WITH_HIP
int kg__hip_available(void);
#else
static int kg__hip_available(void) { return 0; }
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

void kg__set_backend_error(const char *msg) {
  snprintf(kg__backend_msg, sizeof kg__backend_msg, "%s", msg ? msg : "");
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

typedef struct kg__sink { char *buf; size_t cap, len; } kg__sink;

static void kg__say(kg__sink *s, const char *fmt, ...) {
  if (!s || !s->buf || s->cap == 0) return;
  if (s->len + 1 >= s->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(s->buf + s->len, s->cap - s->len, fmt, ap);
  va_end(ap);
  if (n > 0) s->len = (s->len + (size_t)n < s->cap) ? s->len + (size_t)n : s->cap - 1;
}

/* ---- checks ------------------------------------------------------------- */

#define KG__FAIL(st, ...) do { kg__say(sink, "arguments: " __VA_ARGS__); kg__say(sink, "\n"); return (st); } while (0)

static int kg__valid_dtype(int t) { return t == KG_F32 || t == KG_F16 || t == KG_BF16; }
static int kg__valid_layout(int l) { return l == KG_ROW || l == KG_COL; }

/* Highest element offset + 1 of a rows x cols matrix (batch copies apart),
** or -1 on int64 overflow. */
static int64_t kg__extent(int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                          int64_t batch, int64_t bs) {
  int64_t a, b, c, e;
  if (__builtin_mul_overflow(rows - 1, rs, &a)) return -1;
  if (__builtin_mul_overflow(cols - 1, cs, &b)) return -1;
  if (__builtin_mul_overflow(batch - 1, bs, &c)) return -1;
  if (__builtin_add_overflow(a, b, &e) || __builtin_add_overflow(e, c, &e) ||
      __builtin_add_overflow(e, 1, &e)) return -1;
  if (__builtin_mul_overflow(e, (int64_t)8, &a)) return -1;  /* bytes fit too */
  return e;
}

/* Checks one operand: ld covers the layout (ld 0 allowed when may_broadcast),
** batch stride non-negative, extent fits int64. */
static kg_status kg__check_operand(kg__sink *sink, const char *name, int layout, int64_t rows,
                                   int64_t cols, int64_t ld, int64_t bs, int64_t batch,
                                   int may_broadcast) {
  int64_t need = layout == KG_ROW ? cols : rows;
  if (ld < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ld%s = %lld is negative", name, (long long)ld);
  if (!(ld == 0 && may_broadcast) && ld < need)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "ld%s = %lld is smaller than the %s-major extent %lld%s", name,
             (long long)ld, layout == KG_ROW ? "row" : "column", (long long)need,
             may_broadcast ? " (0 broadcasts)" : "");
  if (bs < 0) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "batch_stride_%s = %lld is negative", name, (long long)bs);
  int64_t rs, cs;
  kg__strides(layout, ld, &rs, &cs);
  if (kg__extent(rows, cols, rs, cs, batch, bs) < 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "operand %s extent overflows int64", name);
  return KG_SUCCESS;
}

static kg_status kg__check_exec(const kg_exec *exec, kg__sink *sink) {
  if (!exec) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "exec is NULL");
  if (exec->backend != KG_BACKEND_C && exec->backend != KG_BACKEND_CUDA && exec->backend != KG_BACKEND_HIP)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown backend %d", (int)exec->backend);
  if (exec->workspace_size > 0 && !exec->workspace)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "workspace_size is %zu but workspace is NULL", exec->workspace_size);
  if (!kg_backend_available(exec->backend))
    KG__FAIL(KG_ERROR_BACKEND_UNAVAILABLE, "backend %s is not compiled in or has no device",
             kg_backend_string(exec->backend));
  return KG_SUCCESS;
}

static kg_status kg__gemm_check(const kg_gemm_args *g, const kg_exec *exec, kg__sink *sink) {
  kg_status st;
  if (!g) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "args is NULL");
  if (g->mode != KG_MODE_GEMM && g->mode != KG_MODE_BATCHED && g->mode != KG_MODE_SPLITK_SERIAL)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown mode %d", (int)g->mode);
  if (!kg__valid_dtype(g->type_ab) || !kg__valid_dtype(g->type_cd))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown dtype (type_ab %d, type_cd %d)", (int)g->type_ab, (int)g->type_cd);
  if (!kg__valid_layout(g->layout_a) || !kg__valid_layout(g->layout_b) || !kg__valid_layout(g->layout_cd))
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "unknown layout (allowed: KG_ROW, KG_COL)");
  if (g->m <= 0 || g->n <= 0 || g->k <= 0)
    KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "sizes must be >= 1 (m %lld, n %lld, k %lld)",
             (long long)g->m, (long long)g->n, (long long)g->k);
  if (g->batch_count < 1) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "batch_count %lld < 1", (long long)g->batch_count);
  if (g->split_k_slices < 1) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "split_k_slices %lld < 1", (long long)g->split_k_slices);
  if (!g->a || !g->b || !g->d) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "a, b and d must not be NULL");
  if (!g->c && g->beta != 0.0f) KG__FAIL(KG_ERROR_INVALID_ARGUMENT, "c is NULL but beta != 0");
  if (g->mode == KG_MODE_BATCHED && g->split_k_slices > 1)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batched mode with split_k_slices %lld: batch and K slice both need the grid's z",
             (long long)g->split_k_slices);
  if (g->mode == KG_MODE_SPLITK_SERIAL && g->batch_count > 1)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "serial split-K with batch_count %lld: use batched mode or split-K, not both",
             (long long)g->batch_count);
  if (g->mode == KG_MODE_GEMM && (g->batch_count > 1 || g->split_k_slices > 1))
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "gemm mode takes batch_count 1 and split_k_slices 1");
  if (g->batch_count > KG_MAX_BATCH)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch_count %lld exceeds the grid limit %d", (long long)g->batch_count, KG_MAX_BATCH);
  if (g->split_k_slices > g->k)
    KG__FAIL(KG_ERROR_INVALID_PROBLEM, "split_k_slices %lld exceeds k %lld", (long long)g->split_k_slices, (long long)g->k);
  int64_t batch = g->mode == KG_MODE_BATCHED ? g->batch_count : 1;
  if ((st = kg__check_operand(sink, "a", g->layout_a, g->m, g->k, g->lda, g->batch_stride_a, batch, 0))) return st;
  if ((st = kg__check_operand(sink, "b", g->layout_b, g->k, g->n, g->ldb, g->batch_stride_b, batch, 0))) return st;
  if (g->c && (st = kg__check_operand(sink, "c", g->layout_cd, g->m, g->n, g->ldc, g->batch_stride_c, batch, 1))) return st;
  if ((st = kg__check_operand(sink, "d", g->layout_cd, g->m, g->n, g->ldd, g->batch_stride_d, batch, 0))) return st;
  if (batch > 1) {
    int64_t rs, cs;
    kg__strides(g->layout_cd, g->ldd, &rs, &cs);
    if (g->batch_stride_d < kg__extent(g->m, g->n, rs, cs, 1, 0))
      KG__FAIL(KG_ERROR_INVALID_PROBLEM, "batch_stride_d %lld makes output batches overlap",
               (long long)g->batch_stride_d);
  }
  return kg__check_exec(exec, sink);
}

/* ---- variant predicates -------------------------------------------------- */

static int kg__aligned(const void *p, int64_t bytes) { return ((uintptr_t)p % (uintptr_t)bytes) == 0; }

/* Why variant v cannot run g (NULL when it can). *misaligned is set when the
** only objection is alignment. */
static const char *kg__gemm_rejects(const kg_variant *v, const kg_gemm_args *g, const kg_exec *exec,
                                    int *misaligned) {
  static _Thread_local char why[160];
  *misaligned = 0;
  if (v->backend != exec->backend) {
    snprintf(why, sizeof why, "backend %s, wanted %s", kg_backend_string(v->backend), kg_backend_string(exec->backend));
    return why;
  }
  if (v->type_ab != g->type_ab || v->type_cd != g->type_cd) {
    snprintf(why, sizeof why, "types %s->%s, wanted %s->%s", kg_dtype_string(v->type_ab), kg_dtype_string(v->type_cd),
             kg_dtype_string(g->type_ab), kg_dtype_string(g->type_cd));
    return why;
  }
  if ((v->layout_a != KG_LAYOUT_ANY && v->layout_a != (int)g->layout_a) ||
      (v->layout_b != KG_LAYOUT_ANY && v->layout_b != (int)g->layout_b) ||
      (v->layout_cd != KG_LAYOUT_ANY && v->layout_cd != (int)g->layout_cd))
    return "layouts differ";
  if (!(v->modes & KG_MODE_BIT(g->mode))) return "mode not supported";
  if (v->backend != KG_BACKEND_C && (g->m + v->tile_m - 1) / v->tile_m > 65535)
    return "m needs more than 65535 tiles (grid y limit)";
  if (v->align > 1) {
    int64_t ea = (int64_t)kg_dtype_size(g->type_ab) * v->align, ec = (int64_t)kg_dtype_size(g->type_cd) * v->align;
    int ok = kg__aligned(g->a, ea) && kg__aligned(g->b, ea) && kg__aligned(g->d, ec) &&
             (!g->c || kg__aligned(g->c, ec)) && g->lda % v->align == 0 && g->ldb % v->align == 0 &&
             g->ldc % v->align == 0 && g->ldd % v->align == 0;
    if (ok && g->mode == KG_MODE_BATCHED)
      ok = g->batch_stride_a % v->align == 0 && g->batch_stride_b % v->align == 0 &&
           g->batch_stride_c % v->align == 0 && g->batch_stride_d % v->align == 0;
    if (!ok) {
      *misaligned = 1;
      snprintf(why, sizeof why, "needs pointers, lds and batch strides aligned to %d elements", v->align);
      return why;
    }
  }
  return NULL;
}

/* First-fit selection; says per candidate why it was taken or rejected. */
static kg_status kg__gemm_select(const kg_gemm_args *g, const kg_exec *exec, const kg_variant **out,
                                 kg__sink *sink) {
  kg_status st = kg__gemm_check(g, exec, sink);
  if (st != KG_SUCCESS) return st;
  int any_misaligned = 0, named = 0;
  const kg_variant *chosen = NULL;
  for (int i = 0; i < kg_variants_count; i++) {
    const kg_variant *v = &kg_variants[i];
    if (v->op != KG_OP_GEMM) continue;
    if (exec->variant && strcmp(exec->variant, v->name) != 0) continue;
    named = 1;
    if (chosen) { kg__say(sink, "%s: not considered: %s chosen first\n", v->name, chosen->name); continue; }
    int mis;
    const char *why = kg__gemm_rejects(v, g, exec, &mis);
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

/* ---- entry points -------------------------------------------------------- */

kg_status kg_gemm_select(const kg_gemm_args *args, const kg_exec *exec, const char **name) {
  const kg_variant *v = NULL;
  if (!name) return KG_ERROR_INVALID_ARGUMENT;
  kg_status st = kg__gemm_select(args, exec, &v, NULL);
  *name = st == KG_SUCCESS ? v->name : NULL;
  return st;
}

kg_status kg_gemm_workspace_size(const kg_gemm_args *args, const kg_exec *exec, size_t *bytes) {
  const kg_variant *v = NULL;
  if (!bytes) return KG_ERROR_INVALID_ARGUMENT;
  *bytes = 0;
  kg_status st = kg__gemm_select(args, exec, &v, NULL);
  if (st == KG_SUCCESS) *bytes = v->gemm_workspace(args);
  return st;
}

kg_status kg_gemm(const kg_gemm_args *args, const kg_exec *exec) {
  const kg_variant *v = NULL;
  kg_status st = kg__gemm_select(args, exec, &v, NULL);
  if (st != KG_SUCCESS) return st;
  size_t need = v->gemm_workspace(args);
  if (need > 0 && (!exec->workspace || exec->workspace_size < need)) return KG_ERROR_WORKSPACE_TOO_SMALL;
  return v->gemm_launch(args, exec);
}

kg_status kg_explain(kg_op op, const void *args, const kg_exec *exec, char *buf, size_t cap) {
  kg__sink sink = { buf, cap, 0 };
  if (buf && cap) buf[0] = '\0';
  const kg_variant *v = NULL;
  switch (op) {
    case KG_OP_GEMM: {
      kg_status st = kg__gemm_select((const kg_gemm_args *)args, exec, &v, &sink);
      if (st == KG_SUCCESS) {
        size_t need = v->gemm_workspace((const kg_gemm_args *)args);
        if (need > 0 && (!exec->workspace || exec->workspace_size < need)) {
          kg__say(&sink, "workspace: %zu bytes needed, %zu given\n", need, exec->workspace_size);
          return KG_ERROR_WORKSPACE_TOO_SMALL;
        }
      }
      return st;
    }
  }
  kg__say(&sink, "unknown op %d\n", (int)op);
  return KG_ERROR_INVALID_ARGUMENT;
}
