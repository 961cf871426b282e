/*
** check_validation.c -- ValidationTest: every kg_status reachable from a real
** bad input. Each case starts from a valid 8x8x8 f32 row-major problem and
** breaks one thing. expect() checks that kg_gemm, kg_gemm_select,
** kg_gemm_workspace_size and kg_explain agree on the status and that a
** failed call leaves D untouched.
*/
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"

enum { VM = 8, VN = 8, VK = 8, VBUF = 8192 };

/* Buffers big enough for every valid call made here (batched 2 x 8x8 too). */
static float va[VBUF], vb[VBUF], vc[VBUF], vd[VBUF];
static unsigned char vws[VBUF * 4];

static kg_gemm_args base(void) {
  for (int i = 0; i < VBUF; i++) { va[i] = (float)(i % 5 - 2); vb[i] = (float)(i % 3 - 1); vc[i] = 1.0f; }
  tu_poison(vd, KG_F32, VBUF);
  return tu_args(VM, VN, VK, va, vb, vc, vd);
}

static int d_untouched(void) {
  for (int i = 0; i < VBUF; i++)
    if (!tu_is_poison(vd, KG_F32, i)) return 0;
  return 1;
}

/* All entry points report st for (g, e); a failure writes nothing to D. */
#define expect(g, e, st) expect_at(__LINE__, (g), (e), (st))
static void expect_at(int line, const kg_gemm_args *g, const kg_exec *e, kg_status st) {
  const char *name = "sentinel";
  size_t bytes = 12345;
  char why[4096];
  kg_status s_sel = kg_gemm_select(g, e, &name);
  kg_status s_ws = kg_gemm_workspace_size(g, e, &bytes);
  kg_status s_ex = kg_explain(KG_OP_GEMM, g, e, why, sizeof why);
  if (g) tu_poison(vd, KG_F32, VBUF);
  kg_status s_run = kg_gemm(g, e);
  ck_assert_msg(s_run == st, "line %d: kg_gemm returned '%s', expected '%s'; explain:\n%s", line,
                kg_status_string(s_run), kg_status_string(st), why);
  ck_assert_msg(s_ex == st, "line %d: kg_explain returned '%s', expected '%s':\n%s", line,
                kg_status_string(s_ex), kg_status_string(st), why);
  /* select and the size query stop before the workspace check */
  kg_status st_sel = st == KG_ERROR_WORKSPACE_TOO_SMALL ? KG_SUCCESS : st;
  ck_assert_msg(s_sel == st_sel, "line %d: kg_gemm_select returned '%s', expected '%s'", line,
                kg_status_string(s_sel), kg_status_string(st_sel));
  ck_assert_msg(s_ws == st_sel, "line %d: kg_gemm_workspace_size returned '%s', expected '%s'", line,
                kg_status_string(s_ws), kg_status_string(st_sel));
  if (st_sel != KG_SUCCESS) {
    ck_assert_msg(name == NULL, "line %d: kg_gemm_select left *name set on failure", line);
    ck_assert_msg(bytes == 0, "line %d: kg_gemm_workspace_size left *bytes = %zu on failure", line, bytes);
  } else {
    ck_assert_msg(name != NULL, "line %d: kg_gemm_select succeeded without a name", line);
  }
  if (st != KG_SUCCESS && g && g->d == (void *)vd)
    ck_assert_msg(d_untouched(), "line %d: failed call ('%s') wrote to D", line, kg_status_string(st));
}

/* ---- the valid baseline --------------------------------------------------------- */

START_TEST(test_baseline_valid) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  expect(&g, &e, KG_SUCCESS);
  g.c = NULL; g.beta = 0.0f;
  expect(&g, &e, KG_SUCCESS);
  g.beta = -0.0f;  /* negative zero is zero */
  expect(&g, &e, KG_SUCCESS);
}
END_TEST

/* ---- KG_ERROR_INVALID_ARGUMENT --------------------------------------------------- */

START_TEST(test_null_args) {
  kg_exec e = tu_exec_c();
  const char *name = "x";
  size_t bytes = 1;
  char buf[256];
  ck_assert_int_eq(kg_gemm(NULL, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_gemm_select(NULL, &e, &name), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_ptr_null(name);
  ck_assert_int_eq(kg_gemm_workspace_size(NULL, &e, &bytes), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, NULL, &e, buf, sizeof buf), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_gemm(NULL, NULL), KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_null_exec) {
  kg_gemm_args g = base();
  expect(&g, NULL, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_null_a) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  g.a = NULL;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_null_b) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  g.b = NULL;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_null_d) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  g.d = NULL;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_null_c_beta_nonzero) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  g.c = NULL;
  g.beta = 0.5f;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g.beta = (float)NAN;  /* NaN is not zero either */
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_null_out_pointers) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  ck_assert_int_eq(kg_gemm_workspace_size(&g, &e, NULL), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_gemm_select(&g, &e, NULL), KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_workspace_null_with_size) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  e.workspace = NULL;
  e.workspace_size = 64;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* sizes: _i picks which of m, n, k and whether 0 or negative */
START_TEST(test_bad_size) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  int64_t v = (_i & 1) ? -1 : 0;
  if (_i == 6) v = INT64_MIN;
  switch ((_i >> 1) % 3) {
    case 0: g.m = v; break;
    case 1: g.n = v; break;
    case 2: g.k = v; break;
  }
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_unknown_mode) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  g.mode = (kg_mode)3;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g.mode = (kg_mode)-1;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_unknown_dtype) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  g.type_ab = (kg_dtype)3;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = base();
  g.type_cd = (kg_dtype)-1;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_unknown_layout) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  g.layout_a = (kg_layout)2;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = base();
  g.layout_b = (kg_layout)-1;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = base();
  g.layout_cd = (kg_layout)7;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_unknown_backend) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  e.backend = (kg_backend)9;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  e.backend = (kg_backend)-1;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* exec.flags: KG_EXEC_PDL is accepted (the C backend launches as without it); any other bit is refused */
START_TEST(test_exec_flags) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  e.flags = KG_EXEC_PDL;
  expect(&g, &e, KG_SUCCESS);
  e.flags = 2u;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  e.flags = KG_EXEC_PDL | 0x80000000u;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  char why[512];
  kg_explain(KG_OP_GEMM, &g, &e, why, sizeof why);
  ck_assert_msg(strstr(why, "KG_EXEC_PDL") != NULL, "explain does not name the allowed flags:\n%s", why);
}
END_TEST

START_TEST(test_bad_batch_count_and_slices) {
  kg_gemm_args g = base();
  kg_exec e = tu_exec_c();
  g.batch_count = 0;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g.batch_count = -3;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = base();
  g.split_k_slices = 0;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g.mode = KG_MODE_SPLITK_SERIAL;
  g.split_k_slices = -1;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* ld smaller than the layout needs: A is m x k (row: lda >= k, col: lda >= m),
** B k x n, C/D m x n. A non-square problem tells row from column apart. */
START_TEST(test_ld_too_small) {
  kg_exec e = tu_exec_c();
  for (int l = 0; l < 2; l++) {
    kg_layout lay = l ? KG_COL : KG_ROW;
    kg_gemm_args g = base();
    g.m = 4; g.n = 6; g.k = 5;
    g.layout_a = g.layout_b = g.layout_cd = lay;
    g.lda = tu_min_ld(lay, 4, 5);
    g.ldb = tu_min_ld(lay, 5, 6);
    g.ldc = g.ldd = tu_min_ld(lay, 4, 6);
    expect(&g, &e, KG_SUCCESS);
    kg_gemm_args h = g; h.lda -= 1; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
    h = g; h.ldb -= 1; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
    h = g; h.ldc -= 1; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
    h = g; h.ldc = 1; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
    h = g; h.ldd -= 1; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
    h = g; h.ldd = 0; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);  /* only C broadcasts */
    h = g; h.lda = 0; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
    /* the other layout's minimum is not enough: row A needs k=5, col A needs m=4 */
    h = g; h.lda = l ? 5 : 4; h.ldb = l ? 6 : 5;
    expect(&h, &e, l ? KG_SUCCESS : KG_ERROR_INVALID_ARGUMENT);
    h = g; h.lda = l ? 3 : 4;
    expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
  }
}
END_TEST

START_TEST(test_negative_ld) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  g.lda = -8; expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = base(); g.ldb = -1; expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = base(); g.ldc = -8; expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  g = base(); g.ldd = INT64_MIN; expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_negative_batch_stride) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  g.mode = KG_MODE_BATCHED;
  g.batch_count = 2;
  g.batch_stride_a = g.batch_stride_b = g.batch_stride_c = g.batch_stride_d = 64;
  expect(&g, &e, KG_SUCCESS);
  kg_gemm_args h = g; h.batch_stride_a = -64; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
  h = g; h.batch_stride_b = -1; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
  h = g; h.batch_stride_c = -64; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
  h = g; h.batch_stride_d = -64; expect(&h, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_extent_overflow) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  /* row-major A: (m - 1) * lda overflows int64 */
  g.m = (int64_t)1 << 40;
  g.lda = (int64_t)1 << 40;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  /* column-major B: (n - 1) * ldb overflows */
  g = base();
  g.layout_b = KG_COL;
  g.n = (int64_t)1 << 33;
  g.ldb = (int64_t)1 << 33;
  g.ldc = g.ldd = (int64_t)1 << 33;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  /* element count fits, byte count does not */
  g = base();
  g.m = (int64_t)1 << 31;
  g.k = 8; g.lda = (int64_t)1 << 31;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  /* huge n in D alone */
  g = base();
  g.n = INT64_MAX; g.ldb = INT64_MAX; g.ldc = INT64_MAX; g.ldd = INT64_MAX;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
  /* batch stride times batch count overflows */
  g = base();
  g.mode = KG_MODE_BATCHED;
  g.batch_count = KG_MAX_BATCH;
  g.batch_stride_a = INT64_MAX / 1000;
  g.batch_stride_b = g.batch_stride_c = 0;
  g.batch_stride_d = 64;
  expect(&g, &e, KG_ERROR_INVALID_ARGUMENT);
}
END_TEST

/* ---- KG_ERROR_INVALID_PROBLEM ------------------------------------------------------ */

START_TEST(test_batched_with_split_k) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  g.mode = KG_MODE_BATCHED;
  g.batch_count = 2;
  g.batch_stride_a = g.batch_stride_b = g.batch_stride_c = g.batch_stride_d = 64;
  g.split_k_slices = 2;
  expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g.batch_count = 1;  /* even with one batch */
  expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
}
END_TEST

START_TEST(test_splitk_with_batches) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  g.mode = KG_MODE_SPLITK_SERIAL;
  g.split_k_slices = 2;
  g.batch_count = 2;
  g.batch_stride_a = g.batch_stride_b = g.batch_stride_c = g.batch_stride_d = 64;
  expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g.split_k_slices = 1;
  expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
}
END_TEST

START_TEST(test_gemm_mode_with_batches) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  g.batch_count = 2;
  g.batch_stride_a = g.batch_stride_b = g.batch_stride_c = g.batch_stride_d = 64;
  expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g = base();
  g.split_k_slices = 2;
  expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
}
END_TEST

START_TEST(test_batch_count_limit) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  g.mode = KG_MODE_BATCHED;
  g.m = g.n = g.k = 1;
  g.lda = g.ldb = g.ldc = g.ldd = 1;
  g.batch_stride_a = g.batch_stride_b = g.batch_stride_c = 0;
  g.batch_stride_d = 1;
  /* the limit itself is accepted (select only: no need to run 65535 problems) */
  g.batch_count = KG_MAX_BATCH;
  const char *name = NULL;
  ck_assert_int_eq(kg_gemm_select(&g, &e, &name), KG_SUCCESS);
  ck_assert_ptr_nonnull(name);
  /* beyond it: never wrapped to a small count (65536 -> 0, 65537 -> 1) */
  const int64_t bad[] = { KG_MAX_BATCH + 1, KG_MAX_BATCH + 2, 2 * (int64_t)(KG_MAX_BATCH + 1) + 1,
                          ((int64_t)1 << 32) + 1, INT64_MAX };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    g.batch_count = bad[i];
    expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  }
}
END_TEST

START_TEST(test_split_k_exceeds_k) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  g.mode = KG_MODE_SPLITK_SERIAL;
  g.k = 3;
  g.lda = 3;
  g.split_k_slices = 4;
  expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g.split_k_slices = INT64_MAX;
  expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  g.split_k_slices = 3;  /* one K element per slice is fine */
  e.workspace = vws;
  e.workspace_size = sizeof vws;
  expect(&g, &e, KG_SUCCESS);
  /* at most KG_MAX_BATCH slices (the grid's z), however long K is; nothing is read or run */
  g.k = 4 * (int64_t)KG_MAX_BATCH;
  g.lda = g.k;
  g.split_k_slices = KG_MAX_BATCH + 1;
  expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  char why[512];
  kg_explain(KG_OP_GEMM, &g, &e, why, sizeof why);
  ck_assert_msg(strstr(why, "split_k_slices 65536 exceeds the grid limit 65535"), "%s", why);
  const char *name = NULL;
  g.split_k_slices = KG_MAX_BATCH;
  ck_assert_int_eq(kg_gemm_select(&g, &e, &name), KG_SUCCESS);
}
END_TEST

START_TEST(test_overlapping_output_batches) {
  kg_exec e = tu_exec_c();
  for (int l = 0; l < 2; l++) {
    kg_gemm_args g = base();
    g.mode = KG_MODE_BATCHED;
    g.batch_count = 3;
    g.m = 4; g.n = 6; g.k = 5;
    g.layout_a = g.layout_b = g.layout_cd = l ? KG_COL : KG_ROW;
    g.lda = l ? 4 : 5; g.ldb = l ? 5 : 6;
    g.ldc = g.ldd = l ? 7 : 9;  /* padded */
    g.batch_stride_a = g.batch_stride_b = 64;
    g.batch_stride_c = 0;
    int64_t ext = tu_extent(g.layout_cd, 4, 6, g.ldd); /* row: 3*9+6 = 33, col: 5*7+4 = 39 */
    g.batch_stride_d = ext;  /* adjacent: fine, the padding may be shared */
    expect(&g, &e, KG_SUCCESS);
    g.batch_stride_d = ext - 1;
    expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
    g.batch_stride_d = 1;
    expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
    g.batch_stride_d = 0;  /* every batch onto one output */
    expect(&g, &e, KG_ERROR_INVALID_PROBLEM);
  }
}
END_TEST

/* ---- KG_ERROR_NOT_SUPPORTED ---------------------------------------------------------- */

START_TEST(test_no_variant_for_types) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  g.type_ab = KG_F16;
  g.type_cd = KG_F32;
  expect(&g, &e, KG_ERROR_NOT_SUPPORTED);
  g.type_ab = KG_F32;
  g.type_cd = KG_BF16;
  expect(&g, &e, KG_ERROR_NOT_SUPPORTED);
}
END_TEST

START_TEST(test_forced_unknown_variant) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  e.variant = "kg_gemm_c_blocked_f32_xxx_1x1x1_a1_no_such_variant";
  expect(&g, &e, KG_ERROR_NOT_SUPPORTED);
  e.variant = "";
  expect(&g, &e, KG_ERROR_NOT_SUPPORTED);
  /* a variant of another op is no GEMM variant */
  for (int i = 0; i < kg_variant_count(); i++)
    if (strncmp(kg_variant_name(i), "kg_gemm_", 8) != 0) {
      e.variant = kg_variant_name(i);
      expect(&g, &e, KG_ERROR_NOT_SUPPORTED);
      break;
    }
}
END_TEST

START_TEST(test_forced_variant_wrong_types) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  int i = tu_find_variant("c", KG_BF16, NULL, 1);
  ck_assert_msg(i >= 0, "no C bf16 variant compiled in");
  e.variant = kg_variant_name(i);
  expect(&g, &e, KG_ERROR_NOT_SUPPORTED);
}
END_TEST

/* ---- KG_ERROR_BACKEND_UNAVAILABLE -------------------------------------------------------- */

static void backend_unavailable(kg_backend b) {
  if (kg_backend_available(b)) {
    printf("SKIP backend_unavailable(%s): a device is visible here\n", kg_backend_string(b));
    return;
  }
  kg_exec e = tu_exec_c();
  e.backend = b;
  kg_gemm_args g = base();
  expect(&g, &e, KG_ERROR_BACKEND_UNAVAILABLE);
  g.type_ab = g.type_cd = KG_F16;
  expect(&g, &e, KG_ERROR_BACKEND_UNAVAILABLE);
}

START_TEST(test_cuda_unavailable) { backend_unavailable(KG_BACKEND_CUDA); }
END_TEST

START_TEST(test_hip_unavailable) { backend_unavailable(KG_BACKEND_HIP); }
END_TEST

/* ---- KG_ERROR_WORKSPACE_TOO_SMALL --------------------------------------------------------- */

START_TEST(test_workspace_too_small) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  g.mode = KG_MODE_SPLITK_SERIAL;
  g.split_k_slices = 2;
  size_t need = 0;
  ck_assert_int_eq(kg_gemm_workspace_size(&g, &e, &need), KG_SUCCESS);
  ck_assert_msg(need >= (size_t)(VM * VN) * sizeof(float),
                "serial split-K on the C backend should need an m x n f32 workspace (%zu bytes), "
                "the size query says %zu", (size_t)(VM * VN) * sizeof(float), need);
  ck_assert_uint_le(need, sizeof vws);
  /* none at all */
  expect(&g, &e, KG_ERROR_WORKSPACE_TOO_SMALL);
  /* one byte short */
  e.workspace = vws;
  e.workspace_size = need - 1;
  expect(&g, &e, KG_ERROR_WORKSPACE_TOO_SMALL);
  /* exactly enough, and more than enough */
  e.workspace_size = need;
  expect(&g, &e, KG_SUCCESS);
  e.workspace_size = sizeof vws;
  expect(&g, &e, KG_SUCCESS);
  /* the workspace query does not depend on the workspace given */
  size_t again = 0;
  ck_assert_int_eq(kg_gemm_workspace_size(&g, &e, &again), KG_SUCCESS);
  ck_assert_uint_eq(again, need);
}
END_TEST

START_TEST(test_workspace_not_needed) {
  /* one slice needs no workspace: NULL is fine */
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base();
  size_t need = 99;
  ck_assert_int_eq(kg_gemm_workspace_size(&g, &e, &need), KG_SUCCESS);
  ck_assert_uint_eq(need, 0);
  g.mode = KG_MODE_SPLITK_SERIAL;
  ck_assert_int_eq(kg_gemm_workspace_size(&g, &e, &need), KG_SUCCESS);
  ck_assert_uint_eq(need, 0);
  expect(&g, &e, KG_SUCCESS);
}
END_TEST

/* ---- KG_ERROR_MISALIGNED_OPERAND ------------------------------------------------------------ */

/* The C variant with an alignment need: f32 row/row/row, align 4 (looked up by
** name; "_a4"). NULL when none is compiled in. */
static const char *aligned_c_variant(void) {
  int i = tu_find_variant("c", KG_F32, "rrr", 2);
  return i >= 0 ? kg_variant_name(i) : NULL;
}

START_TEST(test_misaligned_operand) {
  const char *name = aligned_c_variant();
  if (!name) {
    printf("SKIP test_misaligned_operand: no C f32 variant with align > 1 (name suffix _aN, N > 1)\n");
    return;
  }
  tu_variant_info vi;
  tu_parse_variant(name, &vi);
  ck_assert_int_eq(vi.align, 4);
  kg_exec e = tu_exec_c();
  e.variant = name;
  kg_gemm_args g = base();
  expect(&g, &e, KG_SUCCESS);                     /* 8x8x8, 64-byte aligned: accepted */
  kg_gemm_args h;
  h = g; h.a = va + 1; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.b = vb + 1; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.c = vc + 2; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.d = vd + 3; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.a = (const char *)va + 2; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND); /* not even f32-aligned */
  h = g; h.lda = 9; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.ldb = 10; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.ldc = 11; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.ldd = 9; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.a = va + 4; h.lda = 12; h.d = vd + 8; expect(&h, &e, KG_SUCCESS);
  /* batch strides count in batched mode */
  g.mode = KG_MODE_BATCHED;
  g.batch_count = 2;
  g.batch_stride_a = g.batch_stride_b = g.batch_stride_c = g.batch_stride_d = 64;
  expect(&g, &e, KG_SUCCESS);
  h = g; h.batch_stride_a = 65; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.batch_stride_b = 66; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.batch_stride_c = 1; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.batch_stride_d = 67; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  /* misalignment is reported only when alignment was the sole objection */
  h = g; h.batch_stride_a = 65; h.layout_b = KG_COL; expect(&h, &e, KG_ERROR_NOT_SUPPORTED);
}
END_TEST

/* Every backend, every variant: pointers aligned to their elements (kg.h), whatever the
** variant's own alignment; a misaligned one is refused before anything is read or written. */
START_TEST(test_element_alignment) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = base(), h;
  expect(&g, &e, KG_SUCCESS);
  h = g; h.a = (const char *)va + 2; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.b = (const char *)vb + 1; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.c = (const char *)vc + 3; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.d = (char *)vd + 2; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  char why[1024];
  kg_explain(KG_OP_GEMM, &h, &e, why, sizeof why);
  ck_assert_msg(strstr(why, "arguments: d = ") && strstr(why, "is not aligned to its 4-byte elements"), "%s", why);
  /* 16-bit elements: 2-byte steps are aligned, odd addresses are not */
  g.type_ab = g.type_cd = KG_BF16;
  h = g; h.a = (const char *)va + 2; expect(&h, &e, KG_SUCCESS);
  h = g; h.a = (const char *)va + 1; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
  h = g; h.d = (char *)vd + 6; expect(&h, &e, KG_SUCCESS);
  h = g; h.d = (char *)vd + 5; expect(&h, &e, KG_ERROR_MISALIGNED_OPERAND);
}
END_TEST

/* ---- status strings ------------------------------------------------------------------- */

START_TEST(test_status_strings) {
  const kg_status all[] = { KG_SUCCESS, KG_ERROR_INVALID_ARGUMENT, KG_ERROR_INVALID_PROBLEM,
                            KG_ERROR_MISALIGNED_OPERAND, KG_ERROR_NOT_SUPPORTED,
                            KG_ERROR_WORKSPACE_TOO_SMALL, KG_ERROR_BACKEND_UNAVAILABLE,
                            KG_ERROR_BACKEND, KG_ERROR_INTERNAL };
  const int n = (int)(sizeof all / sizeof all[0]);
  for (int i = 0; i < n; i++) {
    const char *s = kg_status_string(all[i]);
    ck_assert_msg(s != NULL && s[0] != '\0', "status %d has no text", (int)all[i]);
    for (int j = 0; j < i; j++)
      ck_assert_msg(strcmp(s, kg_status_string(all[j])) != 0, "statuses %d and %d share the text '%s'",
                    (int)all[i], (int)all[j], s);
  }
  ck_assert_ptr_nonnull(kg_status_string((kg_status)1000));
  ck_assert_ptr_nonnull(kg_status_string((kg_status)-1));
  ck_assert_ptr_nonnull(kg_last_backend_error());
}
END_TEST

Suite *validation_suite(void) {
  Suite *s = suite_create("ValidationTest");
  TCase *tc = tcase_create("status");
  tcase_add_test(tc, test_baseline_valid);
  tcase_add_test(tc, test_null_args);
  tcase_add_test(tc, test_null_exec);
  tcase_add_test(tc, test_exec_flags);
  tcase_add_test(tc, test_null_a);
  tcase_add_test(tc, test_null_b);
  tcase_add_test(tc, test_null_d);
  tcase_add_test(tc, test_null_c_beta_nonzero);
  tcase_add_test(tc, test_null_out_pointers);
  tcase_add_test(tc, test_workspace_null_with_size);
  tcase_add_loop_test(tc, test_bad_size, 0, 7);
  tcase_add_test(tc, test_unknown_mode);
  tcase_add_test(tc, test_unknown_dtype);
  tcase_add_test(tc, test_unknown_layout);
  tcase_add_test(tc, test_unknown_backend);
  tcase_add_test(tc, test_bad_batch_count_and_slices);
  tcase_add_test(tc, test_ld_too_small);
  tcase_add_test(tc, test_negative_ld);
  tcase_add_test(tc, test_negative_batch_stride);
  tcase_add_test(tc, test_extent_overflow);
  tcase_add_test(tc, test_batched_with_split_k);
  tcase_add_test(tc, test_splitk_with_batches);
  tcase_add_test(tc, test_gemm_mode_with_batches);
  tcase_add_test(tc, test_batch_count_limit);
  tcase_add_test(tc, test_split_k_exceeds_k);
  tcase_add_test(tc, test_overlapping_output_batches);
  tcase_add_test(tc, test_no_variant_for_types);
  tcase_add_test(tc, test_forced_unknown_variant);
  tcase_add_test(tc, test_forced_variant_wrong_types);
  tcase_add_test(tc, test_cuda_unavailable);
  tcase_add_test(tc, test_hip_unavailable);
  tcase_add_test(tc, test_workspace_too_small);
  tcase_add_test(tc, test_workspace_not_needed);
  tcase_add_test(tc, test_misaligned_operand);
  tcase_add_test(tc, test_element_alignment);
  tcase_add_test(tc, test_status_strings);
  suite_add_tcase(s, tc);
  return s;
}
