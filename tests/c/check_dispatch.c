/*
** check_dispatch.c -- DispatchTest: first-fit selection (kg_gemm_select),
** forced variants, kg_explain's text and its truncation, the variant list.
*/
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "kg_internal.h"
#include "test_util.h"

enum { DBUF = 8192 };
static float da[DBUF], db[DBUF], dc[DBUF], dd[DBUF];

static kg_gemm_args dbase(void) {
  for (int i = 0; i < DBUF; i++) { da[i] = 1.0f; db[i] = 1.0f; dc[i] = 0.0f; dd[i] = 0.0f; }
  return tu_args(16, 32, 8, da, db, dc, dd);
}

static const char *aligned_c_variant(void) {
  int i = tu_find_variant("c", KG_F32, "rrr", 2);
  return i >= 0 ? kg_variant_name(i) : NULL;
}

static const char *generic_c_variant(kg_dtype t) {
  int i = tu_find_variant("c", t, "xxx", 1);
  return i >= 0 ? kg_variant_name(i) : NULL;
}

static const char *selected(const kg_gemm_args *g, const kg_exec *e) {
  const char *name = NULL;
  kg_status st = kg_gemm_select(g, e, &name);
  ck_assert_msg(st == KG_SUCCESS, "kg_gemm_select: %s", kg_status_string(st));
  ck_assert_ptr_nonnull(name);
  return name;
}

static int gemm_variant_count(void) {
  int n = 0;
  for (int i = 0; i < kg_variant_count(); i++) n += strncmp(kg_variant_name(i), "kg_gemm_", 8) == 0;
  return n;
}

/* Index of name in the variant list, -1 if absent. */
static int variant_index(const char *name, size_t len) {
  for (int i = 0; i < kg_variant_count(); i++) {
    const char *v = kg_variant_name(i);
    if (strlen(v) == len && strncmp(v, name, len) == 0) return i;
  }
  return -1;
}

/* Checks the shape of a full explain text: optional "arguments: " first line;
** then one line per considered variant, "NAME: chosen (...)",
** "NAME: rejected: REASON" or "NAME: not considered: ...", each variant at most
** once. Returns the number of lines naming a variant; *chosen gets the chosen
** name (static copy) or "" when none. */
static int check_explain_lines(const char *text, const char **chosen) {
  static char chosen_buf[256];
  chosen_buf[0] = '\0';
  *chosen = chosen_buf;
  int seen[1024] = { 0 };
  int lines = 0, nchosen = 0;
  const char *p = text;
  ck_assert_msg(strlen(text) > 0, "empty explain text");
  ck_assert_msg(text[strlen(text) - 1] == '\n', "explain text does not end with a newline:\n%s", text);
  while (*p) {
    const char *eol = strchr(p, '\n');
    ck_assert_ptr_nonnull(eol);
    size_t len = (size_t)(eol - p);
    if (strncmp(p, "arguments: ", 11) == 0 || strncmp(p, "no variant named", 16) == 0 ||
        strncmp(p, "workspace: ", 11) == 0) {
      p = eol + 1;
      continue;
    }
    const char *colon = memchr(p, ':', len);
    ck_assert_msg(colon != NULL, "explain line without ':': %.*s", (int)len, p);
    int idx = variant_index(p, (size_t)(colon - p));
    ck_assert_msg(idx >= 0, "explain line names no variant: %.*s", (int)len, p);
    ck_assert_msg(idx < 1024 && !seen[idx], "variant listed twice: %.*s", (int)len, p);
    ck_assert_msg(strncmp(p, "kg_gemm_", 8) == 0, "GEMM explain lists a variant of another op: %.*s", (int)len, p);
    seen[idx] = 1;
    const char *rest = colon + 1;
    if (strncmp(rest, " chosen", 7) == 0) {
      nchosen++;
      snprintf(chosen_buf, sizeof chosen_buf, "%.*s", (int)(colon - p), p);
    } else if (strncmp(rest, " rejected: ", 11) == 0) {
      ck_assert_msg(rest + 11 < eol, "rejection without a reason: %.*s", (int)len, p);
    } else {
      ck_assert_msg(strncmp(rest, " not considered", 15) == 0, "unexpected explain line: %.*s", (int)len, p);
    }
    lines++;
    p = eol + 1;
  }
  ck_assert_int_le(nchosen, 1);
  return lines;
}

/* The line of the explain text that starts with "name: ", or NULL. */
static const char *line_of(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, name, n) == 0 && p[n] == ':') return p + n + 1;
  return NULL;
}

/* ---- selection ------------------------------------------------------------------------- */

START_TEST(test_select_aligned_picks_specialized) {
  const char *a4 = aligned_c_variant();
  if (!a4) {
    printf("SKIP test_select_aligned_picks_specialized: no C f32 rrr variant with align > 1\n");
    return;
  }
  kg_gemm_args g = dbase();
  kg_exec e = tu_exec_c();
  ck_assert_str_eq(selected(&g, &e), a4);
  g.c = NULL; g.beta = 0.0f;
  ck_assert_str_eq(selected(&g, &e), a4);
  g.mode = KG_MODE_BATCHED;
  g.batch_count = 3;
  g.batch_stride_a = 128; g.batch_stride_b = 256; g.batch_stride_d = 512;
  ck_assert_str_eq(selected(&g, &e), a4);
  g = dbase();
  g.ldc = 0;  /* bias row: ld 0 is a multiple of 4 */
  ck_assert_str_eq(selected(&g, &e), a4);
}
END_TEST

START_TEST(test_select_misaligned_falls_back) {
  const char *gen = generic_c_variant(KG_F32);
  ck_assert_msg(gen != NULL, "no generic C f32 variant (xxx, a1)");
  kg_exec e = tu_exec_c();
  kg_gemm_args g = dbase(), h;
  h = g; h.a = da + 1; ck_assert_str_eq(selected(&h, &e), gen);
  h = g; h.b = db + 3; ck_assert_str_eq(selected(&h, &e), gen);
  h = g; h.c = dc + 1; ck_assert_str_eq(selected(&h, &e), gen);
  h = g; h.d = dd + 2; ck_assert_str_eq(selected(&h, &e), gen);
  h = g; h.lda = 9; ck_assert_str_eq(selected(&h, &e), gen);
  h = g; h.ldd = 33; ck_assert_str_eq(selected(&h, &e), gen);
  h = g; h.m = 16; h.n = 30; h.ldb = h.ldc = h.ldd = 30; ck_assert_str_eq(selected(&h, &e), gen);
  h = g; h.mode = KG_MODE_BATCHED; h.batch_count = 2; h.batch_stride_a = 130; h.batch_stride_b = 256;
  h.batch_stride_c = 512; h.batch_stride_d = 512;
  ck_assert_str_eq(selected(&h, &e), gen);
  /* layouts the specialized variant does not take */
  h = g; h.layout_b = KG_COL; h.ldb = 8; ck_assert_str_eq(selected(&h, &e), gen);
  h = g; h.layout_cd = KG_COL; h.ldc = h.ldd = 16; ck_assert_str_eq(selected(&h, &e), gen);
}
END_TEST

START_TEST(test_select_by_dtype) {
  kg_exec e = tu_exec_c();
  const kg_dtype ts[] = { KG_F16, KG_BF16 };
  for (int i = 0; i < 2; i++) {
    kg_gemm_args g = dbase();
    g.type_ab = g.type_cd = ts[i];
    const char *want = generic_c_variant(ts[i]);
    ck_assert_msg(want != NULL, "no generic C %s variant", tu_dtype_name(ts[i]));
    const char *got = selected(&g, &e);
    tu_variant_info vi;
    ck_assert(tu_parse_variant(got, &vi));
    ck_assert_int_eq(vi.type_ab, ts[i]);
    ck_assert_str_eq(vi.backend, "c");
  }
}
END_TEST

/* kg_gemm_select names the variant that kg_explain calls chosen. */
START_TEST(test_select_matches_explain) {
  kg_exec e = tu_exec_c();
  char buf[8192];
  for (int v = 0; v < 6; v++) {
    kg_gemm_args g = dbase();
    if (v == 1) g.a = da + 1;
    if (v == 2) { g.type_ab = g.type_cd = KG_F16; }
    if (v == 3) { g.type_ab = g.type_cd = KG_BF16; g.layout_a = KG_COL; g.lda = 16; }
    if (v == 4) { g.layout_cd = KG_COL; g.ldc = g.ldd = 16; }
    if (v == 5) { g.mode = KG_MODE_SPLITK_SERIAL; g.split_k_slices = 2;
                  e.workspace = dd + 4096; e.workspace_size = 4096; }
    const char *name = selected(&g, &e);
    ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_SUCCESS);
    const char *chosen;
    int lines = check_explain_lines(buf, &chosen);
    ck_assert_msg(strcmp(chosen, name) == 0, "case %d: select says %s, explain chose '%s':\n%s", v, name,
                  chosen, buf);
    /* unforced: every GEMM variant is listed */
    ck_assert_msg(lines == gemm_variant_count(), "case %d: %d lines for %d GEMM variants:\n%s", v, lines,
                  gemm_variant_count(), buf);
    const char *l = line_of(buf, name);
    ck_assert_ptr_nonnull(l);
    ck_assert_msg(strncmp(l, " chosen", 7) == 0, "chosen line: %s", l);
  }
}
END_TEST

START_TEST(test_explain_rejection_reasons) {
  const char *a4 = aligned_c_variant();
  const char *gen = generic_c_variant(KG_F32);
  const char *g16 = generic_c_variant(KG_F16);
  ck_assert_ptr_nonnull(gen);
  ck_assert_ptr_nonnull(g16);
  kg_exec e = tu_exec_c();
  char buf[8192];
  /* misaligned: the specialized variant says why, the generic one is chosen */
  kg_gemm_args g = dbase();
  g.lda = 9;
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_SUCCESS);
  const char *chosen;
  check_explain_lines(buf, &chosen);
  ck_assert_str_eq(chosen, gen);
  if (a4) {
    const char *l = line_of(buf, a4);
    ck_assert_ptr_nonnull(l);
    ck_assert_msg(strncmp(l, " rejected: ", 11) == 0 && strstr(l, "align") != NULL,
                  "the aligned variant's line should give an alignment reason: %s", buf);
  }
  /* type mismatch names the types */
  const char *l16 = line_of(buf, g16);
  ck_assert_ptr_nonnull(l16);
  ck_assert_msg(strncmp(l16, " rejected: ", 11) == 0 && strstr(l16, "f16") && strstr(l16, "f32"),
                "f16 variant's rejection should name the types: %s", buf);
  /* layout mismatch */
  g = dbase();
  g.layout_b = KG_COL;
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_SUCCESS);
  if (a4) {
    const char *l = line_of(buf, a4);
    ck_assert_ptr_nonnull(l);
    ck_assert_msg(strncmp(l, " rejected: ", 11) == 0 && strstr(l, "layout"), "%s", buf);
  }
  /* GEMM variants of other backends are rejected by backend */
  for (int i = 0; i < kg_variant_count(); i++) {
    tu_variant_info vi;
    if (!tu_parse_variant(kg_variant_name(i), &vi) || strcmp(vi.backend, "c") == 0) continue;
    const char *l = line_of(buf, kg_variant_name(i));
    ck_assert_ptr_nonnull(l);
    /* listed after the chosen one (HIP's place in the table): not considered */
    ck_assert_msg(strncmp(l, " rejected: backend", 18) == 0 || strncmp(l, " not considered", 15) == 0, "%s:%s",
                  kg_variant_name(i), l);
  }
}
END_TEST

START_TEST(test_forced_variant) {
  const char *gen = generic_c_variant(KG_F32);
  ck_assert_ptr_nonnull(gen);
  kg_exec e = tu_exec_c();
  e.variant = gen;
  kg_gemm_args g = dbase();  /* aligned: dispatch alone would take the specialized one */
  ck_assert_str_eq(selected(&g, &e), gen);
  char buf[4096];
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_SUCCESS);
  const char *chosen;
  ck_assert_int_eq(check_explain_lines(buf, &chosen), 1);
  ck_assert_str_eq(chosen, gen);
  /* the forced variant actually runs: 16x32x8 of ones is 8 everywhere */
  ck_assert_int_eq(kg_gemm(&g, &e), KG_SUCCESS);
  for (int i = 0; i < 16 * 32; i++) ck_assert_float_eq(dd[i], 8.0f);
  /* a forced copy of the name (not the table's pointer) works the same */
  char copy[256];
  snprintf(copy, sizeof copy, "%s", gen);
  e.variant = copy;
  ck_assert_str_eq(selected(&g, &e), gen);
  /* a forced variant that does not fit reports why, and nothing else */
  g.type_ab = g.type_cd = KG_BF16;
  const char *name = "x";
  ck_assert_int_eq(kg_gemm_select(&g, &e, &name), KG_ERROR_NOT_SUPPORTED);
  ck_assert_ptr_null(name);
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_ERROR_NOT_SUPPORTED);
  ck_assert_int_eq(check_explain_lines(buf, &chosen), 1);
  ck_assert_str_eq(chosen, "");
  ck_assert_ptr_nonnull(strstr(buf, "rejected: types"));
  /* an unknown name says so */
  e.variant = "kg_gemm_c_nonexistent";
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_ERROR_NOT_SUPPORTED);
  ck_assert_msg(strstr(buf, "kg_gemm_c_nonexistent") != NULL, "explain should name the unknown variant:\n%s", buf);
}
END_TEST

/* Forcing the aligned variant with c == NULL: ldc and batch_stride_c describe
** no operand, so they must not make it misaligned. */
START_TEST(test_forced_aligned_ignores_absent_c) {
  const char *a4 = aligned_c_variant();
  if (!a4) {
    printf("SKIP test_forced_aligned_ignores_absent_c: no C f32 rrr variant with align > 1\n");
    return;
  }
  kg_exec e = tu_exec_c();
  e.variant = a4;
  kg_gemm_args g = dbase();
  g.c = NULL;
  g.beta = 0.0f;
  g.ldc = 3;  /* meaningless without C; validation ignores it too */
  const char *name = NULL;
  char buf[4096];
  kg_status st = kg_gemm_select(&g, &e, &name);
  kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf);
  ck_assert_msg(st == KG_SUCCESS, "c == NULL with ldc 3: forced %s gave '%s':\n%s", a4, kg_status_string(st), buf);
  g.ldc = 16;
  g.mode = KG_MODE_BATCHED;
  g.batch_count = 2;
  g.batch_stride_a = 128; g.batch_stride_b = 256; g.batch_stride_d = 512;
  g.batch_stride_c = 7;
  st = kg_gemm_select(&g, &e, &name);
  kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf);
  ck_assert_msg(st == KG_SUCCESS, "c == NULL with batch_stride_c 7: forced %s gave '%s':\n%s", a4,
                kg_status_string(st), buf);
}
END_TEST

/* ---- explain: errors and truncation ------------------------------------------------------ */

START_TEST(test_explain_argument_errors) {
  char buf[1024];
  kg_exec e = tu_exec_c();
  kg_gemm_args g = dbase();
  g.m = 0;
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strncmp(buf, "arguments: ", 11) == 0, "got: %s", buf);
  ck_assert_ptr_null(strstr(buf, "chosen"));
  g = dbase();
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, NULL, buf, sizeof buf), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strncmp(buf, "arguments: ", 11) == 0 && strstr(buf, "exec"), "got: %s", buf);
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, NULL, &e, buf, sizeof buf), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strncmp(buf, "arguments: ", 11) == 0, "got: %s", buf);
  g.lda = 3;
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(strncmp(buf, "arguments: ", 11) == 0 && strstr(buf, "lda"), "got: %s", buf);
  g = dbase();
  g.mode = KG_MODE_BATCHED;
  g.batch_count = 2;
  g.split_k_slices = 2;
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_ERROR_INVALID_PROBLEM);
  ck_assert_msg(strncmp(buf, "arguments: ", 11) == 0, "got: %s", buf);
  g = dbase();
  e.backend = KG_BACKEND_HIP;
  if (!kg_backend_available(KG_BACKEND_HIP)) {
    ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_ERROR_BACKEND_UNAVAILABLE);
    ck_assert_msg(strncmp(buf, "arguments: ", 11) == 0 && strstr(buf, "hip"), "got: %s", buf);
  }
  /* unknown op */
  e = tu_exec_c();
  ck_assert_int_eq(kg_explain((kg_op)42, &g, &e, buf, sizeof buf), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_msg(buf[0] != '\0', "unknown op: explain should say something");
}
END_TEST

START_TEST(test_explain_workspace) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = dbase();
  g.mode = KG_MODE_SPLITK_SERIAL;
  g.split_k_slices = 4;
  size_t need = 0;
  ck_assert_int_eq(kg_gemm_workspace_size(&g, &e, &need), KG_SUCCESS);
  if (need == 0) {
    printf("SKIP test_explain_workspace: serial split-K needs no workspace here\n");
    return;
  }
  char buf[8192];
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, sizeof buf), KG_ERROR_WORKSPACE_TOO_SMALL);
  char want[64];
  snprintf(want, sizeof want, "%zu", need);
  ck_assert_msg(strstr(buf, "workspace") && strstr(buf, want), "explain should give the size %zu:\n%s", need, buf);
}
END_TEST

START_TEST(test_explain_truncation) {
  kg_exec e = tu_exec_c();
  kg_gemm_args g = dbase();
  g.lda = 9;  /* some rejections, one choice */
  char full[8192];
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, full, sizeof full), KG_SUCCESS);
  size_t n = strlen(full);
  ck_assert_uint_gt(n, 20);
  ck_assert_uint_lt(n, sizeof full - 1);
  /* every cap from 1 to past the full length: NUL-terminated prefix, no write past cap */
  char buf[8192 + 16];
  for (size_t cap = 1; cap <= n + 2; cap++) {
    memset(buf, '#', sizeof buf);
    ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, cap), KG_SUCCESS);
    size_t len = 0;
    while (len < cap && buf[len] != '\0') len++;
    ck_assert_msg(len < cap, "cap %zu: not NUL-terminated", cap);
    size_t want = n < cap - 1 ? n : cap - 1;
    ck_assert_msg(len == want, "cap %zu: length %zu, expected %zu", cap, len, want);
    ck_assert_msg(strncmp(buf, full, len) == 0, "cap %zu: not a prefix of the full text", cap);
    for (size_t i = cap; i < cap + 16; i++)
      ck_assert_msg(buf[i] == '#', "cap %zu: byte %zu past the cap was written", cap, i);
  }
  /* cap 1 and 10 by name */
  memset(buf, '#', sizeof buf);
  kg_explain(KG_OP_GEMM, &g, &e, buf, 1);
  ck_assert_int_eq(buf[0], '\0');
  ck_assert_int_eq(buf[1], '#');
  memset(buf, '#', sizeof buf);
  kg_explain(KG_OP_GEMM, &g, &e, buf, 10);
  ck_assert_uint_eq(strlen(buf), 9);
  ck_assert_int_eq(buf[10], '#');
  /* cap 0 writes nothing; NULL buffer is allowed */
  memset(buf, '#', sizeof buf);
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, 0), KG_SUCCESS);
  ck_assert_int_eq(buf[0], '#');
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, NULL, 0), KG_SUCCESS);
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, NULL, 100), KG_SUCCESS);
  /* truncated argument errors too */
  g.m = -1;
  memset(buf, '#', sizeof buf);
  ck_assert_int_eq(kg_explain(KG_OP_GEMM, &g, &e, buf, 5), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_str_eq(buf, "argu");
  ck_assert_int_eq(buf[5], '#');
}
END_TEST

/* ---- the variant list --------------------------------------------------------------------- */

START_TEST(test_variant_list) {
  int n = kg_variant_count();
  ck_assert_int_gt(n, 0);
  ck_assert_int_gt(gemm_variant_count(), 0);
  ck_assert_ptr_null(kg_variant_name(-1));
  ck_assert_ptr_null(kg_variant_name(n));
  ck_assert_ptr_null(kg_variant_name(n + 1));
  ck_assert_ptr_null(kg_variant_name(INT_MAX));
  ck_assert_ptr_null(kg_variant_name(INT_MIN));
  int c_variants = 0, cuda = 0, hip = 0;
  for (int i = 0; i < n; i++) {
    const char *s = kg_variant_name(i);
    ck_assert_msg(s != NULL, "variant %d has no name", i);
    ck_assert_msg(strncmp(s, "kg_", 3) == 0, "variant %d: '%s'", i, s);
    for (int j = 0; j < i; j++) ck_assert_msg(strcmp(s, kg_variant_name(j)) != 0, "duplicate name %s", s);
    if (strncmp(s, "kg_gemm_", 8) != 0) continue;  /* other ops: names of their own */
    tu_variant_info vi;
    ck_assert_msg(tu_parse_variant(s, &vi), "cannot parse variant name %s", s);
    c_variants += strcmp(vi.backend, "c") == 0;
    cuda += strcmp(vi.backend, "cuda") == 0;
    hip += strcmp(vi.backend, "hip") == 0;
  }
  ck_assert_int_ge(c_variants, 3);  /* one per dtype at least */
#ifdef KG_WITH_CUDA
  ck_assert_int_gt(cuda, 0);
#else
  ck_assert_int_eq(cuda, 0);
#endif
#ifdef KG_WITH_HIP
  ck_assert_int_gt(hip, 0);
#else
  ck_assert_int_eq(hip, 0);
#endif
  /* a generic C variant for every dtype: dispatch always has a fallback */
  const kg_dtype ts[] = { KG_F32, KG_F16, KG_BF16 };
  for (int i = 0; i < 3; i++)
    ck_assert_msg(tu_find_variant("c", ts[i], "xxx", 1) >= 0, "no generic C %s variant", tu_dtype_name(ts[i]));
}
END_TEST

START_TEST(test_names_and_sizes) {
  ck_assert_str_eq(kg_backend_string(KG_BACKEND_C), "c");
  ck_assert_str_eq(kg_backend_string(KG_BACKEND_CUDA), "cuda");
  ck_assert_str_eq(kg_backend_string(KG_BACKEND_HIP), "hip");
  ck_assert_ptr_nonnull(kg_backend_string((kg_backend)17));
  ck_assert_int_eq(kg_backend_available(KG_BACKEND_C), 1);
  ck_assert_int_eq(kg_backend_available((kg_backend)17), 0);
#ifndef KG_WITH_CUDA
  ck_assert_int_eq(kg_backend_available(KG_BACKEND_CUDA), 0);
#endif
#ifndef KG_WITH_HIP
  ck_assert_int_eq(kg_backend_available(KG_BACKEND_HIP), 0);
#endif
  ck_assert_uint_eq(kg_dtype_size(KG_F32), 4);
  ck_assert_uint_eq(kg_dtype_size(KG_F16), 2);
  ck_assert_uint_eq(kg_dtype_size(KG_BF16), 2);
  ck_assert_uint_eq(kg_dtype_size((kg_dtype)9), 0);
  ck_assert_str_eq(kg_dtype_string(KG_F32), "f32");
  ck_assert_str_eq(kg_dtype_string(KG_F16), "f16");
  ck_assert_str_eq(kg_dtype_string(KG_BF16), "bf16");
  ck_assert_ptr_nonnull(kg_dtype_string((kg_dtype)9));
}
END_TEST

/* The tensor-map limits of the bulk-copy (tensorop) variants, at their boundaries: extents up to
** KG__TMA_EXTENT_MAX elements, strides below 2^40 bytes; the first operand over a limit is named. */
START_TEST(test_tma_limits) {
  char why[200];
  const int64_t E = KG__TMA_EXTENT_MAX, L = KG__TMA_STRIDE_LIMIT;
  ck_assert_int_eq(E, 2147483647LL - 1023);
  ck_assert_int_eq(L, 1099511627776LL);
  kg__tma_map maps[2] = { { "a", E, E, L - 16, L - 1 }, { "b", 64, 1, 128, 128 } };
  ck_assert_ptr_null(kg__tma_rejects(maps, 2, why, sizeof why));
  maps[1].inner = E + 1;
  const char *r = kg__tma_rejects(maps, 2, why, sizeof why);
  ck_assert_ptr_eq(r, why);
  ck_assert_msg(strstr(why, "operand b: extents 1 x 2147482625") && strstr(why, "int32 coordinates"), "%s", why);
  maps[1].inner = 64; maps[1].outer = E + 1;
  ck_assert_ptr_nonnull(kg__tma_rejects(maps, 2, why, sizeof why));
  ck_assert_msg(strstr(why, "operand b: extents 2147482625 x 64"), "%s", why);
  maps[1].outer = 1; maps[0].stride1 = L;
  ck_assert_ptr_nonnull(kg__tma_rejects(maps, 2, why, sizeof why));
  ck_assert_msg(strstr(why, "operand a: strides of 1099511627776 and 1099511627775 bytes") && strstr(why, "below 2^40"),
                "%s", why);
  maps[0].stride1 = 16; maps[0].stride2 = L;
  ck_assert_ptr_nonnull(kg__tma_rejects(maps, 2, why, sizeof why));
  maps[0].stride2 = INT64_MAX;   /* kg__mul3_sat's overflow value */
  ck_assert_ptr_nonnull(kg__tma_rejects(maps, 2, why, sizeof why));
  ck_assert_ptr_null(kg__tma_rejects(maps, 0, why, sizeof why));
  /* truncated, never overrun */
  char small[16];
  memset(small, 'x', sizeof small);
  ck_assert_ptr_nonnull(kg__tma_rejects(maps, 2, small, 8));
  ck_assert_uint_eq(strlen(small), 7);
  ck_assert_int_eq(small[8], 'x');
  /* a * b * c saturating at INT64_MAX */
  ck_assert_int_eq(kg__mul3_sat(3, 5, 7), 105);
  ck_assert_int_eq(kg__mul3_sat(0, INT64_MAX, 2), 0);
  ck_assert_int_eq(kg__mul3_sat((int64_t)1 << 39, 2, 1), L);
  ck_assert_int_eq(kg__mul3_sat((int64_t)1 << 32, (int64_t)1 << 31, 1), INT64_MAX);
  ck_assert_int_eq(kg__mul3_sat((int64_t)1 << 32, (int64_t)1 << 30, 2), INT64_MAX);
  ck_assert_int_eq(kg__mul3_sat((int64_t)1 << 31, (int64_t)1 << 31, 1), (int64_t)1 << 62);
  ck_assert_int_eq(kg__mul3_sat((int64_t)1 << 31, (int64_t)1 << 31, 2), INT64_MAX);
}
END_TEST

Suite *dispatch_suite(void) {
  Suite *s = suite_create("DispatchTest");
  TCase *tc = tcase_create("dispatch");
  tcase_add_test(tc, test_select_aligned_picks_specialized);
  tcase_add_test(tc, test_select_misaligned_falls_back);
  tcase_add_test(tc, test_select_by_dtype);
  tcase_add_test(tc, test_select_matches_explain);
  tcase_add_test(tc, test_explain_rejection_reasons);
  tcase_add_test(tc, test_forced_variant);
  tcase_add_test(tc, test_forced_aligned_ignores_absent_c);
  tcase_add_test(tc, test_explain_argument_errors);
  tcase_add_test(tc, test_explain_workspace);
  tcase_add_test(tc, test_explain_truncation);
  tcase_add_test(tc, test_variant_list);
  tcase_add_test(tc, test_names_and_sizes);
  tcase_add_test(tc, test_tma_limits);
  suite_add_tcase(s, tc);
  return s;
}
