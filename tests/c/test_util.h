/*
** test_util.h -- helpers shared by the Check suites of the C runtime:
** deterministic RNG, typed element access through the public conversions,
** poisoned buffers, a plain double-precision reference GEMM and the parsing
** of canonical variant names.
*/
#ifndef KG_TEST_UTIL_H
#define KG_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <check.h>

#include "kg.h"

/* ---- suites (one per file) ------------------------------------------------ */
Suite *validation_suite(void);
Suite *dispatch_suite(void);
Suite *gemm_suite(void);
Suite *dualgemm_suite(void);
Suite *fp4_suite(void);
Suite *gemm_fp4_suite(void);
Suite *dualgemm_fp4_suite(void);
Suite *wave_mfma_suite(void);       /* check_wave.c: MfmaTile16x16x16Test */
Suite *wave_transpose_suite(void);  /* Transpose4x4HalfTest */
Suite *wave_rowsum_suite(void);     /* RowsumTest */
Suite *math_suite(void);
Suite *pos_enc_suite(void);
Suite *page_suite(void);
Suite *single_decode_suite(void);
Suite *batch_decode_suite(void);
Suite *cascade_suite(void);

/* ---- RNG: xorshift64*, fixed seeds ---------------------------------------- */
typedef struct tu_rng { uint64_t s; } tu_rng;
void tu_rng_seed(tu_rng *r, uint64_t seed);
uint64_t tu_rng_next(tu_rng *r);
double tu_rng_uniform(tu_rng *r);      /* [0, 1) */
double tu_rng_normalish(tu_rng *r);    /* sum of 4 uniforms, centred: mean 0, sd ~0.58 */
int tu_rng_int(tu_rng *r, int lo, int hi); /* uniform in [lo, hi] */

/* ---- typed elements -------------------------------------------------------- */
/* Value as stored (f16/bf16 through kg_*_bits_to_f32). */
double tu_get(const void *buf, kg_dtype t, int64_t i);
/* Stores v rounded to t (kg_f32_to_*_bits); returns the stored value. */
double tu_set(void *buf, kg_dtype t, int64_t i, double v);
/* Rounds v to t the way a kernel does: to f32 first, then to t. */
double tu_round(kg_dtype t, double v);
/* Unit roundoff of t: 2^-24 (f32), 2^-11 (f16), 2^-8 (bf16). */
double tu_unit_roundoff(kg_dtype t);
const char *tu_dtype_name(kg_dtype t);

/* ---- poisoned buffers -------------------------------------------------------
** The poison is a NaN pattern in every type: f32 0x7fbadbad, f16/bf16 0x7fff
** (both NaN as f16 and as bf16). */
#define TU_POISON32 0x7fbadbadu
#define TU_POISON16 0x7fffu
void tu_poison(void *buf, kg_dtype t, int64_t count);
int tu_is_poison(const void *buf, kg_dtype t, int64_t i);
/* malloc that never returns NULL (aborts the test process instead) and
** returns memory aligned to 64 bytes. Free with tu_free. */
void *tu_alloc(size_t bytes);
void tu_free(void *p);

/* ---- reference GEMM ---------------------------------------------------------
** One problem, in double: acc[i*n+j] = sum_p A(i,p) B(p,j) and
** absacc[i*n+j] = sum_p |A(i,p)| |B(p,j)| (absacc may be NULL). Elements are
** read with tu_get through (rs, cs) strides, i.e. exactly as stored. */
void tu_ref_gemm(int64_t m, int64_t n, int64_t k,
                 const void *a, kg_dtype ta, int64_t a_rs, int64_t a_cs,
                 const void *b, int64_t b_rs, int64_t b_cs,
                 double *acc, double *absacc);

/* Element strides of layout l with leading dimension ld. */
void tu_strides(kg_layout l, int64_t ld, int64_t *rs, int64_t *cs);
/* Smallest valid ld of a rows x cols matrix in layout l. */
int64_t tu_min_ld(kg_layout l, int64_t rows, int64_t cols);
/* Highest element offset + 1 of one rows x cols matrix. */
int64_t tu_extent(kg_layout l, int64_t rows, int64_t cols, int64_t ld);
int64_t tu_round_up(int64_t x, int64_t mult);

/* ---- arguments ------------------------------------------------------------- */
/* A valid f32 row-major m x n x k gemm-mode problem whose lds are tight. The
** pointers are set to the given buffers (which may be dummies when the call is
** expected to fail before touching memory). */
kg_gemm_args tu_args(int64_t m, int64_t n, int64_t k, const void *a, const void *b,
                     const void *c, void *d);
kg_exec tu_exec_c(void);
/* The C backend's threads (kg_internal.h): sets OpenMP's thread count and
** returns the previous one; built without OpenMP, does nothing and returns 1. */
int tu_set_threads(int n);

/* ---- variant names ----------------------------------------------------------
** Canonical names look like kg_gemm_<backend>_<kernel>_<dtype>_<LLL>_..._a<N>
** where LLL are r/c/x for A, B and C/D. */
typedef struct tu_variant_info {
  const char *name;
  char backend[16];
  int type_ab, type_cd;   /* kg_dtype, -1 when unknown */
  char layouts[4];        /* e.g. "rrr", "xxx"; "" when unknown */
  int align;              /* 1 when no _aN suffix */
} tu_variant_info;
/* 1 when name parses. */
int tu_parse_variant(const char *name, tu_variant_info *out);
/* Index of the first compiled-in variant that parses and matches backend,
** type and layouts ("rrr" etc., NULL: any) with align >= min_align; -1 if none. */
int tu_find_variant(const char *backend, kg_dtype t, const char *layouts, int min_align);
/* 1 when layout letter L ('r', 'c' or 'x') accepts layout l. */
int tu_layout_letter_accepts(char L, kg_layout l);

#endif /* KG_TEST_UTIL_H */
