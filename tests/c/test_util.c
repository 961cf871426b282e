/* test_util.c -- see test_util.h. */
#include "test_util.h"
#if defined(_OPENMP)
#include <omp.h>
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- RNG -------------------------------------------------------------------- */

void tu_rng_seed(tu_rng *r, uint64_t seed) {
  r->s = seed ? seed * 0x9e3779b97f4a7c15ull : 0x2545f4914f6cdd1dull;
  if (!r->s) r->s = 1;
}

uint64_t tu_rng_next(tu_rng *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 0x2545f4914f6cdd1dull;
}

double tu_rng_uniform(tu_rng *r) { return (double)(tu_rng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

double tu_rng_normalish(tu_rng *r) {
  return tu_rng_uniform(r) + tu_rng_uniform(r) + tu_rng_uniform(r) + tu_rng_uniform(r) - 2.0;
}

int tu_rng_int(tu_rng *r, int lo, int hi) {
  return lo + (int)(tu_rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* ---- typed elements ---------------------------------------------------------- */

double tu_get(const void *buf, kg_dtype t, int64_t i) {
  switch (t) {
    case KG_F32: return ((const float *)buf)[i];
    case KG_F16: return kg_f16_bits_to_f32(((const uint16_t *)buf)[i]);
    case KG_BF16: return kg_bf16_bits_to_f32(((const uint16_t *)buf)[i]);
  }
  return NAN;
}

double tu_set(void *buf, kg_dtype t, int64_t i, double v) {
  switch (t) {
    case KG_F32: ((float *)buf)[i] = (float)v; break;
    case KG_F16: ((uint16_t *)buf)[i] = kg_f32_to_f16_bits((float)v); break;
    case KG_BF16: ((uint16_t *)buf)[i] = kg_f32_to_bf16_bits((float)v); break;
  }
  return tu_get(buf, t, i);
}

double tu_round(kg_dtype t, double v) {
  switch (t) {
    case KG_F32: return (float)v;
    case KG_F16: return kg_f16_bits_to_f32(kg_f32_to_f16_bits((float)v));
    case KG_BF16: return kg_bf16_bits_to_f32(kg_f32_to_bf16_bits((float)v));
  }
  return NAN;
}

double tu_unit_roundoff(kg_dtype t) {
  switch (t) {
    case KG_F32: return ldexp(1.0, -24);
    case KG_F16: return ldexp(1.0, -11);
    case KG_BF16: return ldexp(1.0, -8);
  }
  return 1.0;
}

const char *tu_dtype_name(kg_dtype t) {
  switch (t) {
    case KG_F32: return "f32";
    case KG_F16: return "f16";
    case KG_BF16: return "bf16";
  }
  return "?";
}

/* ---- poison ------------------------------------------------------------------ */

void tu_poison(void *buf, kg_dtype t, int64_t count) {
  if (t == KG_F32) {
    uint32_t *p = (uint32_t *)buf;
    for (int64_t i = 0; i < count; i++) p[i] = TU_POISON32;
  } else {
    uint16_t *p = (uint16_t *)buf;
    for (int64_t i = 0; i < count; i++) p[i] = TU_POISON16;
  }
}

int tu_is_poison(const void *buf, kg_dtype t, int64_t i) {
  if (t == KG_F32) return ((const uint32_t *)buf)[i] == TU_POISON32;
  return ((const uint16_t *)buf)[i] == TU_POISON16;
}

void *tu_alloc(size_t bytes) {
  /* over-allocate and align by hand: -std=c11 without POSIX */
  unsigned char *raw = (unsigned char *)malloc(bytes + 64 + sizeof(void *));
  if (!raw) {
    fprintf(stderr, "test_util: out of memory (%zu bytes)\n", bytes);
    abort();
  }
  uintptr_t p = ((uintptr_t)(raw + sizeof(void *)) + 63u) & ~(uintptr_t)63u;
  ((void **)p)[-1] = raw;
  return (void *)p;
}

void tu_free(void *p) {
  if (p) free(((void **)p)[-1]);
}

/* ---- reference ----------------------------------------------------------------- */

void tu_strides(kg_layout l, int64_t ld, int64_t *rs, int64_t *cs) {
  if (l == KG_ROW) { *rs = ld; *cs = 1; } else { *rs = 1; *cs = ld; }
}

int64_t tu_min_ld(kg_layout l, int64_t rows, int64_t cols) { return l == KG_ROW ? cols : rows; }

int64_t tu_extent(kg_layout l, int64_t rows, int64_t cols, int64_t ld) {
  int64_t rs, cs;
  tu_strides(l, ld, &rs, &cs);
  return (rows - 1) * rs + (cols - 1) * cs + 1;
}

int64_t tu_round_up(int64_t x, int64_t mult) { return mult <= 1 ? x : (x + mult - 1) / mult * mult; }

/* The reference dominates the suite's run time: let GCC vectorize it. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
void tu_ref_gemm(int64_t m, int64_t n, int64_t k,
                 const void *a, kg_dtype ta, int64_t a_rs, int64_t a_cs,
                 const void *b, int64_t b_rs, int64_t b_cs,
                 double *acc, double *absacc) {
  double *ad = (double *)malloc(sizeof(double) * (size_t)(m * k));
  double *bd = (double *)malloc(sizeof(double) * (size_t)(k * n));
  double *bab = absacc ? (double *)malloc(sizeof(double) * (size_t)(k * n)) : NULL;
  if (!ad || !bd || (absacc && !bab)) abort();
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++) ad[i * k + p] = tu_get(a, ta, i * a_rs + p * a_cs);
  for (int64_t p = 0; p < k; p++)
    for (int64_t j = 0; j < n; j++) {
      bd[p * n + j] = tu_get(b, ta, p * b_rs + j * b_cs);
      if (bab) bab[p * n + j] = fabs(bd[p * n + j]);
    }
  /* four rows at a time so each B row is loaded once per four output rows */
  for (int64_t i0 = 0; i0 < m; i0 += 4) {
    const int rows = m - i0 < 4 ? (int)(m - i0) : 4;
    for (int r = 0; r < rows; r++)
      for (int64_t j = 0; j < n; j++) {
        acc[(i0 + r) * n + j] = 0.0;
        if (absacc) absacc[(i0 + r) * n + j] = 0.0;
      }
    if (rows == 4) {
      double *restrict o0 = acc + i0 * n, *restrict o1 = o0 + n, *restrict o2 = o1 + n, *restrict o3 = o2 + n;
      for (int64_t p = 0; p < k; p++) {
        const double a0 = ad[i0 * k + p], a1 = ad[(i0 + 1) * k + p];
        const double a2 = ad[(i0 + 2) * k + p], a3 = ad[(i0 + 3) * k + p];
        const double *restrict bp = bd + p * n;
        for (int64_t j = 0; j < n; j++) {
          const double bv = bp[j];
          o0[j] += a0 * bv; o1[j] += a1 * bv; o2[j] += a2 * bv; o3[j] += a3 * bv;
        }
      }
      if (absacc) {
        double *restrict s0 = absacc + i0 * n, *restrict s1 = s0 + n, *restrict s2 = s1 + n, *restrict s3 = s2 + n;
        for (int64_t p = 0; p < k; p++) {
          const double a0 = fabs(ad[i0 * k + p]), a1 = fabs(ad[(i0 + 1) * k + p]);
          const double a2 = fabs(ad[(i0 + 2) * k + p]), a3 = fabs(ad[(i0 + 3) * k + p]);
          const double *restrict bp = bab + p * n;
          for (int64_t j = 0; j < n; j++) {
            const double bv = bp[j];
            s0[j] += a0 * bv; s1[j] += a1 * bv; s2[j] += a2 * bv; s3[j] += a3 * bv;
          }
        }
      }
      continue;
    }
    for (int r = 0; r < rows; r++) {
      const int64_t i = i0 + r;
      double *restrict o = acc + i * n;
      for (int64_t p = 0; p < k; p++) {
        const double av = ad[i * k + p];
        const double *restrict bp = bd + p * n;
        for (int64_t j = 0; j < n; j++) o[j] += av * bp[j];
      }
      if (absacc) {
        double *restrict s = absacc + i * n;
        for (int64_t p = 0; p < k; p++) {
          const double av = fabs(ad[i * k + p]);
          const double *restrict bp = bab + p * n;
          for (int64_t j = 0; j < n; j++) s[j] += av * bp[j];
        }
      }
    }
  }
  free(ad);
  free(bd);
  free(bab);
}

/* ---- arguments ----------------------------------------------------------------- */

kg_gemm_args tu_args(int64_t m, int64_t n, int64_t k, const void *a, const void *b,
                     const void *c, void *d) {
  kg_gemm_args g;
  memset(&g, 0, sizeof g);
  g.mode = KG_MODE_GEMM;
  g.m = m; g.n = n; g.k = k;
  g.batch_count = 1;
  g.split_k_slices = 1;
  g.type_ab = KG_F32;
  g.type_cd = KG_F32;
  g.layout_a = KG_ROW; g.layout_b = KG_ROW; g.layout_cd = KG_ROW;
  g.a = a; g.lda = k;
  g.b = b; g.ldb = n;
  g.c = c; g.ldc = n;
  g.d = d; g.ldd = n;
  g.alpha = 1.0f;
  g.beta = c ? 1.0f : 0.0f;
  return g;
}

kg_exec tu_exec_c(void) {
  kg_exec e;
  memset(&e, 0, sizeof e);
  e.backend = KG_BACKEND_C;
  return e;
}

int tu_set_threads(int n) {
#if defined(_OPENMP)
  const int old = omp_get_max_threads();
  omp_set_num_threads(n);
  return old;
#else
  (void)n;
  return 1;
#endif
}

/* ---- variant names --------------------------------------------------------------- */

static int tu_dtype_prefix(const char *s, int *t) {
  if (strncmp(s, "bf16", 4) == 0) { *t = KG_BF16; return 4; }
  if (strncmp(s, "f16", 3) == 0) { *t = KG_F16; return 3; }
  if (strncmp(s, "f32", 3) == 0) { *t = KG_F32; return 3; }
  return 0;
}

int tu_parse_variant(const char *name, tu_variant_info *out) {
  memset(out, 0, sizeof *out);
  out->name = name;
  out->type_ab = out->type_cd = -1;
  out->align = 1;
  if (!name || strncmp(name, "kg_gemm_", 8) != 0) return 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", name + 8);
  char *tok[32];
  int nt = 0;
  for (char *p = strtok(buf, "_"); p && nt < 32; p = strtok(NULL, "_")) tok[nt++] = p;
  if (nt < 3) return 0;
  snprintf(out->backend, sizeof out->backend, "%s", tok[0]);
  for (int i = 1; i < nt; i++) {
    int t1, t2, l1 = tu_dtype_prefix(tok[i], &t1);
    if (!l1) continue;
    t2 = t1;
    int l2 = tok[i][l1] ? tu_dtype_prefix(tok[i] + l1, &t2) : 0;
    if (tok[i][l1 + l2] != '\0') continue;   /* not a pure dtype token */
    out->type_ab = t1;
    out->type_cd = t2;
    if (i + 1 < nt && strlen(tok[i + 1]) == 3 && strspn(tok[i + 1], "rcx") == 3)
      memcpy(out->layouts, tok[i + 1], 4);
    break;
  }
  const char *last = tok[nt - 1];
  if (last[0] == 'a' && last[1] >= '0' && last[1] <= '9') out->align = atoi(last + 1);
  return out->type_ab >= 0 && out->layouts[0] != '\0';
}

int tu_layout_letter_accepts(char L, kg_layout l) {
  return L == 'x' || (L == 'r' && l == KG_ROW) || (L == 'c' && l == KG_COL);
}

int tu_find_variant(const char *backend, kg_dtype t, const char *layouts, int min_align) {
  for (int i = 0; i < kg_variant_count(); i++) {
    tu_variant_info vi;
    if (!tu_parse_variant(kg_variant_name(i), &vi)) continue;
    if (strcmp(vi.backend, backend) != 0) continue;
    if (vi.type_ab != (int)t || vi.type_cd != (int)t) continue;
    if (layouts && strcmp(vi.layouts, layouts) != 0) continue;
    if (vi.align < min_align) continue;
    return i;
  }
  return -1;
}
