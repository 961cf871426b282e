/*
** kg_wave.c -- entry points of the wave64 primitives (kg.h, Wave64 section):
** argument checks, first-fit dispatch over the wave variants, launch.
**
** Invariant: a wave variant runs only after these checks passed and its
** descriptor matched, so generated code never re-validates: the pointers it
** reads and writes are non-NULL and aligned, lds cover the rows, and every
** offset fits int64.
*/
#include <stdio.h>

#include "kg_internal.h"

/* Largest ld: 64 rows of 4-byte elements stay far inside int64 bytes. */
#define KG__WAVE_MAX_LD (INT64_MAX / 256)

/* What dispatch matches on: the op's 16-bit input type (-1: untyped). */
typedef struct kg__wave_key { int dtype; } kg__wave_key;

static const char *kg__wave_rejects(const kg_variant *v, const void *ctx, const kg_exec *exec, int *misaligned) {
  static _Thread_local char why[120];
  const kg__wave_key *k = (const kg__wave_key *)ctx;
  *misaligned = 0;
  if (v->backend != exec->backend) {
    snprintf(why, sizeof why, "backend %s, wanted %s", kg_backend_string(v->backend), kg_backend_string(exec->backend));
    return why;
  }
  if (k->dtype >= 0 && (int)v->type_ab != k->dtype) {
    snprintf(why, sizeof why, "dtype %s, wanted %s", kg_dtype_string(v->type_ab), kg_dtype_string((kg_dtype)k->dtype));
    return why;
  }
  return NULL;
}

/* exec check, first fit, launch. */
static kg_status kg__wave_run(kg_op op, int dtype, const kg_wave_job *job, const kg_exec *exec) {
  const kg_variant *v = NULL;
  kg__wave_key key = { dtype };
  kg_status st = kg__check_exec(exec, NULL);
  if (st != KG_SUCCESS) return st;
  st = kg__first_fit(op, kg__wave_rejects, &key, exec, &v, NULL);
  return st != KG_SUCCESS ? st : v->wave_launch(job, exec);
}

static int kg__wave_ld_ok(int64_t ld, int64_t cols) { return ld >= cols && ld <= KG__WAVE_MAX_LD; }
static int kg__wave_aligned(const void *p, size_t bytes) { return (uintptr_t)p % bytes == 0; }

kg_status kg_wave_mfma16x16x16(kg_dtype dtype, const void *a, int64_t lda, const void *b, int64_t ldb,
                               const float *c, int64_t ldc, float *d, int64_t ldd, const kg_exec *exec) {
  if (dtype != KG_F16 && dtype != KG_BF16) return KG_ERROR_INVALID_ARGUMENT;
  if (!a || !b || !d) return KG_ERROR_INVALID_ARGUMENT;
  if (!kg__wave_ld_ok(lda, 16) || !kg__wave_ld_ok(ldb, 16) || !kg__wave_ld_ok(ldd, 16) ||
      (c && !kg__wave_ld_ok(ldc, 16)))
    return KG_ERROR_INVALID_ARGUMENT;
  if (!kg__wave_aligned(a, 2) || !kg__wave_aligned(b, 2) || !kg__wave_aligned(c, 4) || !kg__wave_aligned(d, 4))
    return KG_ERROR_MISALIGNED_OPERAND;
  kg_wave_job job = { a, b, c, d, lda, ldb, c ? ldc : 0, ldd };
  return kg__wave_run(KG_OP_WAVE_MFMA16X16X16, (int)dtype, &job, exec);
}

kg_status kg_wave_transpose4x4(const void *x, int64_t ldx, void *y, int64_t ldy, const kg_exec *exec) {
  if (!x || !y) return KG_ERROR_INVALID_ARGUMENT;
  if (!kg__wave_ld_ok(ldx, 4) || !kg__wave_ld_ok(ldy, 4)) return KG_ERROR_INVALID_ARGUMENT;
  if (!kg__wave_aligned(x, 2) || !kg__wave_aligned(y, 2)) return KG_ERROR_MISALIGNED_OPERAND;
  kg_wave_job job = { x, NULL, NULL, y, ldx, 0, 0, ldy };
  return kg__wave_run(KG_OP_WAVE_TRANSPOSE4X4, -1, &job, exec);
}

kg_status kg_wave_rowsum16(kg_dtype dtype, const void *s, int64_t lds, float *d, int64_t ldd, const kg_exec *exec) {
  if (dtype != KG_F16 && dtype != KG_BF16) return KG_ERROR_INVALID_ARGUMENT;
  if (!s || !d) return KG_ERROR_INVALID_ARGUMENT;
  if (!kg__wave_ld_ok(lds, 16) || !kg__wave_ld_ok(ldd, 16)) return KG_ERROR_INVALID_ARGUMENT;
  if (!kg__wave_aligned(s, 2) || !kg__wave_aligned(d, 4)) return KG_ERROR_MISALIGNED_OPERAND;
  kg_wave_job job = { s, NULL, NULL, d, lds, 0, 0, ldd };
  return kg__wave_run(KG_OP_WAVE_ROWSUM16, (int)dtype, &job, exec);
}
