/*
** test_gpu_fp4.c -- every compiled CUDA block-scaled FP4 variant (kg_fp4_cuda_*) against a
** reference computed here on the CPU (never against other generated code, never against the
** C-backend variants or the runtime's E2M1 / global-scale helpers).
**
** Built by `make test-gpu` (plain C, libkg + cudart; no Lua, no libcheck). Each variant is forced
** by name (kg_exec.variant); op, format, dtype, scale layout and MXFP4 scale rule come from the
** name kg_fp4_cuda_<op>[_<nvfp4|mxfp4>_<f32|f16|bf16>]_sf<linear|128x4|8x4>[_r<up|down|ocp>].
**
** The reference (kg.h FP4 section, shared/reference/fp4.md):
**   - E2M1 by nearest-value search over the 8 magnitudes, ties to the even code, saturating at 6,
**     sign kept (-0 is code 8), NaN -> +0; E4M3 by nearest-value search over a table of the 127
**     finite codes (ties to even, saturating at 448); UE8M0 by powers of two in double (round up
**     2^ceil(log2(amax/6)), round down 2^floor(log2(amax/6)), OCP 2^(floor(log2 amax) - 2),
**     clamped to bytes 0..254); f16 / bf16 conversions written out in gpu_test.h; the E2M1, E4M3 and
**     UE8M0 helpers shared with tests/c/check_fp4.c are in tests/c/fp4_ref.h.
**   - NVFP4: amax in f32 (NaN ignored), sf = e4m3(gs * (amax / 6.0f)) and the dequantization scale
**     dq = f32(sf) / gs with the f32 operations kg.h prescribes; MXFP4: dq = 2^(sf - 127). The value
**     each element rounds from is x / dq in double (the exact pre-rounding value).
**   - Scale layouts by explicit loops over 512-byte (128x4) and 32-byte (8x4) atoms.
** Parity (fp4.md "within 0.5 FP4 step", decided as tests/c/check_fp4.c does): scale bytes must be
** bit-equal, padding zero. An element code may differ from the reference only by an adjacent-code
** flip of the same sign where the exact value x / dq lies within 1e-6 (relative) of the midpoint
** of the two codes: kernels round twice in f32 (es = 1 / dq, then x * es), which moves values by
** a few 2^-24 relative, so a value that is a tie, or within that distance of one, may land on
** either side. One tightening over check_fp4.c: where dq is a power of two (every MXFP4 block;
** NVFP4 blocks whose f32(sf) / gs is 2^n, e.g. the tie rows with gs NULL) x * es is exact in f32,
** there is no rounding error, and no flip is allowed -- so a wrong tie rule (ties away from zero,
** ties to odd) fails. Anything else is a failure. Flips are counted and reported per variant in
** FP4 steps (an adjacent flip is 1 step), with the number of exact ties checked.
**
** What runs:
**   - quantize: shapes with rows 1, 5, 7, 9, 33, 129, 130, 300 (not multiples of 128 or 8), k 2, 18,
**     40, 64, 96, 100, 200, 522, 1000, 1040 (not multiples of the block; 522 not of 8 either), batch 1,
**     2, 3 with gapped batch strides and with dense ones (every row 16-byte aligned, as vectorized
**     kernels want it), ld > needed on x and q; NVFP4 with a NULL global scale and with per-group gs = 2688 / amax (f32, as
**     kg_nvfp4_global_scale is specified); inputs normal-ish with per-row power-of-two scales,
**     exact E2M1 grid values, rows of exact ties (a block of amax 6 * 2^t and elements on the
**     tie points * 2^t), rows of specials (0, -0, NaN, +-Inf, the dtype's largest finite value,
**     its smallest subnormal and normal, all-zero / all-NaN / all -0 / all-tiny blocks); one
**     large case per variant (E = 2, 4096 x 4096, dense batch strides). x gaps and guards hold the dtype's largest
**     finite value, so a kernel reading outside its rows changes a scale.
**   - dequantize: the same shapes, and shapes whose pointers, lds and batch strides allow 4-byte
**     q loads and 16-byte x stores (rows 129, 130, 257, 300; k 40, 48, 100, 200, 520, 4096, 8200:
**     ragged blocks, rows ending in a part of 8 elements, rows split in chunks; batched with aligned
**     gaps) and the same with one alignment broken at a time (ldx, ldq, batch strides, x and q
**     pointers 1 or 2 units past aligned); random element bytes, random scale bytes (NVFP4: every
**     E4M3 byte including NaN 0x7f / 0xff and negatives; MXFP4: mostly 100..154, plus 0, 1, 127,
**     253, 254 and NaN 0xff), NULL and non-trivial per-group global scales; outputs must be
**     bit-equal to the reference decode rounded to the dtype (any NaN where the reference is NaN);
**     one large case (aligned batch strides).
**   - odd k (41) is refused with KG_ERROR_INVALID_PROBLEM by every quantize / dequantize variant,
**     an MXFP4 quantize variant forced with another scale rule with KG_ERROR_NOT_SUPPORTED, and
**     nothing is written.
**   - swizzle / unswizzle: rows 1, 7, 8, 9, 31, 33, 127, 128, 129, 300 x kv 1, 2, 3, 4, 5, 7, 9 x
**     groups 1, 3: byte-identical to the reference loops, padding zero; unswizzle also with
**     garbage in the source padding (it must be dropped); swizzle(unswizzle(s)) == s for
**     zero-padded s (through the matching swizzle variant).
**   - reswizzle: shard lists {100, 28, 77}, {128, 128}, {1, 7, 9, 130}, {33}, {300, 1, 5}, 20
**     shards and KG_SF_MAX_SHARDS shards, kv 1, 3, 6, groups 1, 3, with zero and garbage shard
**     padding.
** Every output buffer is poisoned with 0xAB bytes (guard bytes before and after included) before
** each run and every byte of it is checked afterwards: the logical outputs against the reference,
** everything else (ld gaps, batch gaps, guards) must still be 0xAB. Inputs (and their guards) must
** be unchanged. Every CUDA call is checked.
** One line per failing case (and up to 8 lines of detail); a line per quantize variant with its
** parity figures; last line "N passed, M failed"; exit 1 on any failure, 2 when a CUDA call fails.
** Usage: test_gpu_fp4 [SUBSTRING] -- with an argument, only the variants whose name contains it
** (the unswizzle round trip still uses the swizzle variant of its layout).
**
** Checking the test itself without a GPU: compiled with -DKG_GPU_TEST_HOST the same program
** runs the C-backend variants (kg_fp4_c_*, host memory, memcpy for transfers), e.g.
**   make KG_CUDA=0 KG_HIP=0 lib && cc -std=c11 -O2 -DKG_GPU_TEST_HOST -Iruntime/include \
**     tests/gpu/test_gpu_fp4.c build/c/libkg.a -lm -lpthread -o build/test_fp4_host
** That only validates the test's reference and bookkeeping (the C variants are checked
** by tests/c/check_fp4.c); the GPU build is the test.
*/
#include <stdarg.h>

#include "gpu_test.h"
#include "../c/fp4_ref.h"

#define VPREFIX "kg_fp4_" BACKEND_NAME "_"

#define POISON 0xABu
#define GUARD ((size_t)256)   /* bytes before and after every buffer */
#ifndef LARGE_ROWS
#define LARGE_ROWS 4096   /* the large case: E = 2, LARGE_ROWS x LARGE_K */
#endif
#define LARGE_K 4096

/* A backend buffer of n payload bytes with GUARD bytes on each side; h is the host image of the
** whole allocation, saved a copy of what was uploaded. */
typedef struct dbuf {
  size_t n;
  uint8_t *d, *h, *saved;
} dbuf;

static dbuf buf_new(size_t n) {
  dbuf b;
  b.n = n;
  b.d = (uint8_t *)dev_alloc(n + 2 * GUARD);
  b.h = (uint8_t *)xmalloc(n + 2 * GUARD);
  b.saved = (uint8_t *)xmalloc(n + 2 * GUARD);
  memset(b.h, POISON, n + 2 * GUARD);
  return b;
}
static void *bdev(const dbuf *b) { return b->d + GUARD; }     /* payload on the backend */
static uint8_t *bhost(const dbuf *b) { return b->h + GUARD; }  /* payload in the host image */
static void buf_upload(dbuf *b) {
  memcpy(b->saved, b->h, b->n + 2 * GUARD);
  h2d(b->d, b->h, b->n + 2 * GUARD);
}
static void buf_download(dbuf *b) { d2h(b->h, b->d, b->n + 2 * GUARD); }
static void buf_free(dbuf *b) {
  dev_free(b->d);
  free(b->h);
  free(b->saved);
  memset(b, 0, sizeof *b);
}

/* ---- case bookkeeping --------------------------------------------------------------------------- */

static char g_case[320];
static long g_errs;

static void case_begin(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_case, sizeof g_case, fmt, ap);
  va_end(ap);
  g_errs = 0;
}
static void bad(const char *fmt, ...) {
  if (g_errs < 8) {
    va_list ap;
    printf("  %s: ", g_case);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
  }
  g_errs++;
}
static int case_end(void) {
  if (g_errs) {
    printf("FAIL %s: %ld mismatches\n", g_case, g_errs);
    g_fail++;
    return 0;
  }
  g_pass++;
  return 1;
}

/* kg call status; on KG_ERROR_BACKEND the message too. */
static int expect_status(kg_status got, kg_status want, const char *what) {
  if (got == want) return 1;
  bad("%s returned %s (%s), want %s", what, kg_status_string(got),
      got == KG_ERROR_BACKEND ? kg_last_backend_error() : "", kg_status_string(want));
  return 0;
}

/* Input buffer unchanged, guards included. */
static void check_unchanged(dbuf *b, const char *what) {
  buf_download(b);
  if (memcmp(b->h, b->saved, b->n + 2 * GUARD) != 0) {
    size_t o = 0;
    while (b->h[o] == b->saved[o]) o++;
    bad("input %s changed at byte %lld (0x%02x, was 0x%02x)", what, (long long)o - (long long)GUARD, b->h[o],
        b->saved[o]);
  }
}
/* Output guards still poisoned. */
static void check_guards(const dbuf *b, const char *what) {
  for (size_t o = 0; o < GUARD; o++) {
    if (b->h[o] != POISON) { bad("%s: guard byte %lld before the buffer written", what, (long long)o - (long long)GUARD); break; }
  }
  for (size_t o = 0; o < GUARD; o++) {
    if (b->h[GUARD + b->n + o] != POISON) { bad("%s: guard byte %zu after the buffer written", what, o); break; }
  }
}

/* ---- RNG: splitmix64 ---------------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) / 9007199254740992.0; }
static int rng_int(uint64_t *s, int lo, int hi) { return lo + (int)(rng_next(s) % (uint64_t)(hi - lo + 1)); }
/* sum of 4 uniforms, centred and scaled to sd ~1 */
static double rng_normalish(uint64_t *s) {
  return (rng_uniform(s) + rng_uniform(s) + rng_uniform(s) + rng_uniform(s) - 2.0) * 1.7320508;
}

/* ---- element types (conversions in gpu_test.h) ------------------------------------------------- */

static size_t esize(kg_dtype t) { return t == KG_F32 ? 4 : 2; }
static const char *tname(kg_dtype t) { return t == KG_F32 ? "f32" : t == KG_F16 ? "f16" : "bf16"; }

/* Value as stored. */
static double get_el(kg_dtype t, const void *buf, int64_t i) {
  if (t == KG_F32) return ((const float *)buf)[i];
  uint16_t h = ((const uint16_t *)buf)[i];
  return t == KG_BF16 ? bf16_to_f64(h) : f16_to_f64(h);
}
/* Bits of v rounded to t (to f32 first, then to t). */
static uint32_t bits_of(kg_dtype t, double v) {
  float f = (float)v;
  if (t == KG_F32) return f2u(f);
  return t == KG_BF16 ? f32_to_bf16(f) : f32_to_f16(f);
}
static uint32_t raw_el(kg_dtype t, const void *buf, int64_t i) {
  return t == KG_F32 ? ((const uint32_t *)buf)[i] : ((const uint16_t *)buf)[i];
}
static void put_raw(kg_dtype t, void *buf, int64_t i, uint32_t bits) {
  if (t == KG_F32) ((uint32_t *)buf)[i] = bits;
  else ((uint16_t *)buf)[i] = (uint16_t)bits;
}
static void put_el(kg_dtype t, void *buf, int64_t i, double v) { put_raw(t, buf, i, bits_of(t, v)); }
static int bits_nan(kg_dtype t, uint32_t b) {
  if (t == KG_F32) return (b & 0x7fffffffu) > 0x7f800000u;
  if (t == KG_BF16) return (b & 0x7fffu) > 0x7f80u;
  return (b & 0x7fffu) > 0x7c00u;
}
/* Largest finite value, smallest subnormal and smallest normal of t (bit patterns). */
static uint32_t t_huge(kg_dtype t) { return t == KG_F32 ? 0x7f7fffffu : t == KG_BF16 ? 0x7f7fu : 0x7bffu; }
static uint32_t t_tiny_sub(kg_dtype t) { (void)t; return 1u; }
static uint32_t t_tiny_norm(kg_dtype t) { return t == KG_F32 ? 0x00800000u : t == KG_BF16 ? 0x0080u : 0x0400u; }
static uint32_t t_neg(kg_dtype t, uint32_t b) { return b | (t == KG_F32 ? 0x80000000u : 0x8000u); }

/* ---- reference numerics ------------------------------------------------------------------------- */

static const double TIE_POINTS[7] = { 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0 };

/* e exactly on an E2M1 decision point (a tie between two codes)? */
static int is_tie(double e) {
  for (int i = 0; i < 7; i++)
    if (fabs(e) == TIE_POINTS[i]) return 1;
  return 0;
}

static double E4M3_TAB[127];   /* values of codes 0 .. 0x7e, increasing */
static void e4m3_init(void) {
  for (unsigned c = 0; c < 127; c++) E4M3_TAB[c] = ref_e4m3(c);
}

/* E4M3 code of v: nearest finite non-negative value, ties to the even code, saturating at 448;
** v <= 0 and NaN give 0. Binary search for the neighbours, then the nearer one. */
static unsigned e4m3_code(double v) {
  if (!(v > 0.0)) return 0;
  if (v >= 448.0) return 0x7e;
  unsigned lo = 0, hi = 0x7e;   /* TAB[lo] <= v < TAB[hi] */
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) / 2;
    if (E4M3_TAB[mid] <= v) lo = mid; else hi = mid;
  }
  double dl = v - E4M3_TAB[lo], dh = E4M3_TAB[hi] - v;
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return lo % 2 == 0 ? lo : hi;
}

/* NVFP4 global scale of a group amax (kg.h: 2688 / amax in f32; 1 when that is not finite and > 0). */
static float ref_global_scale(float amax) {
  if (!(amax > 0.0f) || isinf(amax)) return 1.0f;
  float gs = 2688.0f / amax;
  return isfinite(gs) ? gs : 1.0f;
}

/* ---- reference layouts: explicit atom loops ------------------------------------------------------
** map[off] = index (g*rows + m)*kv + kb of the scale stored at byte off, or -1 for padding. */
static int64_t *layout_map(int layout, int64_t rows, int64_t kv, int64_t groups, size_t *bytes) {
  int64_t n, o = 0;
  int64_t *map;
  if (layout == KG_SF_LINEAR) {
    n = groups * rows * kv;
    map = (int64_t *)xmalloc((size_t)n * sizeof(int64_t));
    for (int64_t g = 0; g < groups; g++)
      for (int64_t m = 0; m < rows; m++)
        for (int64_t kb = 0; kb < kv; kb++, o++) map[o] = (g * rows + m) * kv + kb;
    *bytes = (size_t)n;
    return map;
  }
  const int big = layout == KG_SF_SWIZZLED_128X4;
  const int64_t atom_rows = big ? 128 : 8, atom = big ? 512 : 32;
  const int64_t mt = (rows + atom_rows - 1) / atom_rows, kt = (kv + 3) / 4;
  n = groups * mt * kt * atom;
  map = (int64_t *)xmalloc((size_t)n * sizeof(int64_t));
  for (int64_t g = 0; g < groups; g++)
    for (int64_t a = 0; a < mt; a++)          /* atoms of one group: row block a, column block b */
      for (int64_t b = 0; b < kt; b++)
        for (int64_t p = 0; p < atom; p++, o++) {
          int64_t m, kb;
          if (big) {   /* 32 lines of 16 bytes; line r: rows r, r+32, r+64, r+96, 4 columns each */
            const int64_t line = p / 16, q = p % 16;
            m = a * 128 + (q / 4) * 32 + line;
            kb = b * 4 + q % 4;
          } else {     /* 8 rows of 4 columns */
            m = a * 8 + p / 4;
            kb = b * 4 + p % 4;
          }
          map[o] = (m < rows && kb < kv) ? (g * rows + m) * kv + kb : -1;
        }
  *bytes = (size_t)n;
  return map;
}

/* inv[(g*rows + m)*kv + kb] = byte offset; every scale exactly once (else the reference is wrong). */
static int64_t *layout_inverse(const int64_t *map, size_t bytes, int64_t count) {
  int64_t *inv = (int64_t *)xmalloc((size_t)(count > 0 ? count : 1) * sizeof(int64_t));
  for (int64_t i = 0; i < count; i++) inv[i] = -1;
  for (size_t o = 0; o < bytes; o++)
    if (map[o] >= 0) {
      if (map[o] >= count || inv[map[o]] != -1) { printf("FAIL test: reference layout map is not a bijection\n"); exit(2); }
      inv[map[o]] = (int64_t)o;
    }
  for (int64_t i = 0; i < count; i++)
    if (inv[i] < 0) { printf("FAIL test: reference layout map misses scale %lld\n", (long long)i); exit(2); }
  return inv;
}

static const char *lname(int l) { return l == KG_SF_LINEAR ? "linear" : l == KG_SF_SWIZZLED_128X4 ? "128x4" : "8x4"; }
static const char *fname(int f) { return f == KG_FP4_NVFP4 ? "nvfp4" : "mxfp4"; }
static const char *rname(int r) { return r == KG_MX_ROUND_UP ? "up" : r == KG_MX_ROUND_DOWN ? "down" : "ocp"; }

/* ---- variants ----------------------------------------------------------------------------------- */

enum { OP_QUANT, OP_DEQUANT, OP_SWIZZLE, OP_UNSWIZZLE, OP_RESWIZZLE };

typedef struct fvar {
  const char *name;
  int op;
  int format;        /* kg_fp4_format, -1 for conversions */
  kg_dtype dtype;
  int layout;        /* kg_sf_layout */
  int round;         /* kg_mx_scale_round, -1 when none */
  /* parity figures (quantize) */
  long long elements, flips, exact_ties;
  double max_steps;
} fvar;

static int parse_variant(const char *name, fvar *o) {
  memset(o, 0, sizeof *o);
  o->name = name;
  o->format = o->round = -1;
  o->dtype = KG_F32;
  if (strncmp(name, VPREFIX, strlen(VPREFIX)) != 0) return 0;
  char buf[160], *tok[8];
  snprintf(buf, sizeof buf, "%s", name + strlen(VPREFIX));
  int n = 0;
  for (char *p = strtok(buf, "_"); p && n < 8; p = strtok(NULL, "_")) tok[n++] = p;
  if (n < 2) return 0;
  int i = 1;
  if (!strcmp(tok[0], "quantize") || !strcmp(tok[0], "dequantize")) {
    o->op = !strcmp(tok[0], "quantize") ? OP_QUANT : OP_DEQUANT;
    if (n < 4) return 0;
    if (!strcmp(tok[1], "nvfp4")) o->format = KG_FP4_NVFP4;
    else if (!strcmp(tok[1], "mxfp4")) o->format = KG_FP4_MXFP4;
    else return 0;
    if (!strcmp(tok[2], "f32")) o->dtype = KG_F32;
    else if (!strcmp(tok[2], "f16")) o->dtype = KG_F16;
    else if (!strcmp(tok[2], "bf16")) o->dtype = KG_BF16;
    else return 0;
    i = 3;
  } else if (!strcmp(tok[0], "swizzle")) o->op = OP_SWIZZLE;
  else if (!strcmp(tok[0], "unswizzle")) o->op = OP_UNSWIZZLE;
  else if (!strcmp(tok[0], "reswizzle")) o->op = OP_RESWIZZLE;
  else return 0;
  if (!strcmp(tok[i], "sflinear")) o->layout = KG_SF_LINEAR;
  else if (!strcmp(tok[i], "sf128x4")) o->layout = KG_SF_SWIZZLED_128X4;
  else if (!strcmp(tok[i], "sf8x4")) o->layout = KG_SF_SWIZZLED_8X4;
  else return 0;
  i++;
  if (o->op == OP_QUANT && o->format == KG_FP4_MXFP4) {
    if (i >= n) return 0;
    if (!strcmp(tok[i], "rup")) o->round = KG_MX_ROUND_UP;
    else if (!strcmp(tok[i], "rdown")) o->round = KG_MX_ROUND_DOWN;
    else if (!strcmp(tok[i], "rocp")) o->round = KG_MX_ROUND_OCP;
    else return 0;
    i++;
  }
  if (i != n) return 0;
  if (o->op >= OP_SWIZZLE && o->layout == KG_SF_LINEAR) return 0;
  return 1;
}

/* ---- quantize / dequantize problems ------------------------------------------------------------- */

/* batch groups of rows x k; ld = k (+ xpad elements for x, + qpad bytes for q); batch gaps: bgap 0
** odd (5 elements of x, 3 bytes of q), bgap > 0 bgap * 8 elements and bgap * 16 bytes, bgap < 0 none
** (dense: with ld a multiple of 8 elements / 4 bytes every row of every group stays 16-byte (x) and
** 4-byte (q) aligned); x and q start off elements / bytes past a 256-byte aligned address. */
typedef struct qshape { int64_t batch, rows, k, xpad, qpad, bgap, off; } qshape;
static const qshape QSHAPES[] = {
  { 1, 1, 2, 0, 0, 0, 0 },  { 1, 7, 40, 3, 1, 0, 0 },  { 3, 129, 100, 5, 3, 0, 0 }, { 1, 300, 64, 0, 0, 0, 0 },
  { 3, 9, 96, 4, 5, 0, 0 },  { 2, 130, 18, 2, 0, 0, 0 }, { 3, 7, 100, 1, 2, 0, 0 },   { 1, 129, 96, 0, 7, 0, 0 },
  { 2, 130, 1040, 8, 8, -1, 0 }, { 3, 9, 200, 0, 0, -1, 0 }, { 1, 5, 522, 6, 3, -1, 0 }, { 1, 33, 1000, 0, 0, -1, 0 },
};
#define NQSHAPES ((int)(sizeof QSHAPES / sizeof QSHAPES[0]))
/* dequantize only, besides QSHAPES: the GPU kernels' 4-byte q loads and 16-byte x stores
** (aligned pointers, lds and batch strides), with rows not a multiple of 128, ragged blocks
** (k % 32 != 0) and rows of a part vector (k % 8 != 0) taking them; rows long enough to be split
** (k 8200: chunks); batched groups with per-group global scales; each alignment broken alone
** (ldx, ldq, batch strides, x and q pointers) */
static const qshape DQSHAPES[] = {
  { 1, 300, 4096, 0, 0, 0, 0 },  { 1, 129, 40, 0, 0, 0, 0 },   { 1, 130, 100, 4, 2, 0, 0 },
  { 3, 129, 200, 0, 0, 1, 0 },   { 3, 33, 8200, 8, 4, 2, 0 },  { 2, 257, 48, 0, 0, 3, 0 },
  { 2, 33, 520, 1, 0, 1, 0 },    { 2, 33, 520, 0, 1, 1, 0 },   { 3, 33, 520, 0, 0, 0, 0 },
  { 2, 33, 520, 0, 0, 1, 1 },    { 1, 7, 1032, 3, 2, 0, 2 },   { 1, 1, 6, 0, 0, 0, 0 },
};
#define NDQSHAPES ((int)(sizeof DQSHAPES / sizeof DQSHAPES[0]))

typedef struct fprob {
  kg_fp4_args a;
  int bs;              /* block size */
  int64_t kv;
  size_t x_elems, q_bytes;   /* of the buffers: xoff / qoff, then the operand */
  int64_t xoff, qoff;         /* elements / bytes before the operand's first */
  dbuf x, q, sf, gs;
  float *gsv;          /* host copy of the global scales, NULL when none */
  int64_t *map, *inv;  /* reference scale layout */
} fprob;

static void prob_new(fprob *p, int format, kg_dtype t, int layout, int round, const qshape *s) {
  memset(p, 0, sizeof *p);
  kg_fp4_args *a = &p->a;
  a->format = (kg_fp4_format)format;
  a->sf_layout = (kg_sf_layout)layout;
  a->mx_round = (kg_mx_scale_round)(round < 0 ? 0 : round);
  a->dtype = t;
  a->batch = s->batch; a->rows = s->rows; a->k = s->k;
  a->ldx = s->k + s->xpad;
  a->ldq = s->k / 2 + s->qpad;
  a->batch_stride_x = s->batch > 1 ? s->rows * a->ldx + (s->bgap < 0 ? 0 : s->bgap ? 8 * s->bgap : 5) : 0;
  a->batch_stride_q = s->batch > 1 ? s->rows * a->ldq + (s->bgap < 0 ? 0 : s->bgap ? 16 * s->bgap : 3) : 0;
  p->bs = format == KG_FP4_NVFP4 ? 16 : 32;
  p->kv = (s->k + p->bs - 1) / p->bs;
  p->xoff = p->qoff = s->off;
  p->x_elems = (size_t)(p->xoff + (s->batch - 1) * a->batch_stride_x + s->rows * a->ldx);
  p->q_bytes = (size_t)(p->qoff + (s->batch - 1) * a->batch_stride_q + s->rows * a->ldq);
  size_t sfb;
  p->map = layout_map(layout, s->rows, p->kv, s->batch, &sfb);
  p->inv = layout_inverse(p->map, sfb, s->batch * s->rows * p->kv);
  p->x = buf_new(p->x_elems * esize(t));
  p->q = buf_new(p->q_bytes);
  p->sf = buf_new(sfb);
  p->gs = buf_new((size_t)s->batch * sizeof(float));
  a->x = (uint8_t *)bdev(&p->x) + p->xoff * (int64_t)esize(t);
  a->q = (uint8_t *)bdev(&p->q) + p->qoff;
  a->sf = bdev(&p->sf);
  a->sf_bytes = sfb;
}

static void prob_free(fprob *p) {
  buf_free(&p->x); buf_free(&p->q); buf_free(&p->sf); buf_free(&p->gs);
  free(p->gsv); free(p->map); free(p->inv);
}

static int64_t xi(const fprob *p, int64_t g, int64_t m, int64_t j) {
  return p->xoff + g * p->a.batch_stride_x + m * p->a.ldx + j;
}
static int64_t qi(const fprob *p, int64_t g, int64_t m, int64_t b) {
  return p->qoff + g * p->a.batch_stride_q + m * p->a.ldq + b;
}
/* Is element / byte offset o of an operand (from its first element / byte) inside a logical row? */
static int in_rows(int64_t o, int64_t batch, int64_t bstride, int64_t rows, int64_t ld, int64_t cols) {
  if (o < 0) return 0;
  int64_t g = batch > 1 ? o / bstride : 0, rem = batch > 1 ? o % bstride : o;
  return g < batch && rem / ld < rows && rem % ld < cols;
}
/* The same for element / byte offset o of the x / q buffer. */
static int in_x(const fprob *p, int64_t o) {
  return in_rows(o - p->xoff, p->a.batch, p->a.batch_stride_x, p->a.rows, p->a.ldx, p->a.k);
}
static int in_q(const fprob *p, int64_t o) {
  return in_rows(o - p->qoff, p->a.batch, p->a.batch_stride_q, p->a.rows, p->a.ldq, p->a.k / 2);
}
static int64_t sf_off(const fprob *p, int64_t g, int64_t m, int64_t kb) {
  return p->inv[(g * p->a.rows + m) * p->kv + kb];
}

/* ---- inputs ------------------------------------------------------------------------------------- */

/* A special value of t (bit pattern); big: the ones that set a group's amax (Inf, largest finite). */
static uint32_t special_bits(kg_dtype t, uint64_t *r, int big) {
  for (;;) {
    int k = rng_int(r, 0, 10);
    uint32_t b;
    switch (k) {
      case 0: b = 0; break;                                          /* +0 */
      case 1: b = t_neg(t, 0); break;                                /* -0 */
      case 2: b = t == KG_F32 ? 0x7fc00000u : t == KG_BF16 ? 0x7fc0u : 0x7e00u; break;   /* NaN */
      case 3: b = t == KG_F32 ? 0xffc00001u : t == KG_BF16 ? 0xffc1u : 0xfe01u; break;   /* -NaN */
      case 4: case 5:
        if (!big) continue;
        b = t == KG_F32 ? 0x7f800000u : t == KG_BF16 ? 0x7f80u : 0x7c00u;              /* Inf */
        if (k == 5) b = t_neg(t, b);
        break;
      case 6: case 7:
        if (!big) continue;
        b = k == 6 ? t_huge(t) : t_neg(t, t_huge(t)); break;
      case 8: b = t_tiny_sub(t); break;
      case 9: b = t_neg(t, t_tiny_sub(t)); break;
      default: b = rng_int(r, 0, 1) ? t_tiny_norm(t) : t_neg(t, t_tiny_norm(t)); break;
    }
    return b;
  }
}

/* Fills the logical elements of x (host image); its gaps and guards get the largest finite value.
** Row kinds by (m + g) % 4 (plain fills use kind 0 only): 0, 1 normal-ish times a per-row power of
** two with some zeros and exact grid values; 2 ties: per block one element 6 * 2^t (the amax, so
** the scale is 2^t with gs NULL and with every MXFP4 rule) and the others on the E2M1 tie points
** or grid values times 2^t; 3 specials: per block all-zero, all-NaN, all -0, all-tiny, or
** normal-ish with 1 in 6 elements special (Inf and the largest finite value only in the groups
** whose bit is set in big_groups_mask). */
static void fill_x(fprob *p, uint64_t *r, int plain, int big_groups_mask) {
  kg_fp4_args *a = &p->a;
  const kg_dtype t = a->dtype;
  uint8_t *x = bhost(&p->x);
  for (size_t i = 0; i < (p->x.n + 2 * GUARD) / esize(t); i++) put_raw(t, p->x.h, (int64_t)i, t_huge(t));   /* gaps, guards */
  /* row scales 2^-R .. 2^R: NVFP4 within the E4M3 range (2^-9 .. 448) plus some saturation */
  const int R = a->format == KG_FP4_NVFP4 ? 6 : t == KG_F16 ? 5 : 24;
  for (int64_t g = 0; g < a->batch; g++) {
    const int big = (big_groups_mask >> (g < 30 ? g : 30)) & 1;
    for (int64_t m = 0; m < a->rows; m++) {
      const int kind = plain ? 0 : (int)((m + g) % 4);
      const double s = ldexp(1.0, rng_int(r, -R, R));
      if (kind <= 1) {
        for (int64_t j = 0; j < a->k; j++) {
          const int c = rng_int(r, 0, 31);
          double v = c == 0 ? 0.0 : c == 1 ? s * ref_e2m1((unsigned)rng_int(r, 0, 15)) : s * 2.0 * rng_normalish(r);
          put_el(t, x, xi(p, g, m, j), v);
        }
      } else if (kind == 2) {
        const int tp = rng_int(r, -6, 6);
        for (int64_t j0 = 0; j0 < a->k; j0 += p->bs) {
          const int64_t n = a->k - j0 < p->bs ? a->k - j0 : p->bs;
          const int64_t lead = j0 + rng_int(r, 0, (int)n - 1);
          for (int64_t j = j0; j < j0 + n; j++) {
            const double sign = rng_int(r, 0, 1) ? -1.0 : 1.0;
            double v = j == lead ? 6.0 : rng_int(r, 0, 3) ? TIE_POINTS[rng_int(r, 0, 6)] : REF_E2M1_MAG[rng_int(r, 0, 7)];
            put_el(t, x, xi(p, g, m, j), sign * ldexp(v, tp));
          }
        }
      } else {
        for (int64_t j0 = 0; j0 < a->k; j0 += p->bs) {
          const int64_t n = a->k - j0 < p->bs ? a->k - j0 : p->bs;
          const int bk = rng_int(r, 0, 7);
          for (int64_t j = j0; j < j0 + n; j++) {
            const int64_t o = xi(p, g, m, j);
            switch (bk) {
              case 0: put_raw(t, x, o, 0); break;
              case 1: put_raw(t, x, o, t == KG_F32 ? 0x7fc00000u : t == KG_BF16 ? 0x7fc0u : 0x7e00u); break;
              case 2: put_raw(t, x, o, t_neg(t, 0)); break;
              case 3: {   /* all tiny: subnormals of 1..15 ulps, either sign */
                const uint32_t mag = (uint32_t)rng_int(r, 1, 15);
                put_raw(t, x, o, rng_int(r, 0, 1) ? t_neg(t, mag) : mag);
                break;
              }
              default:
                if (rng_int(r, 0, 5) == 0) put_raw(t, x, o, special_bits(t, r, big));
                else put_el(t, x, o, s * 2.0 * rng_normalish(r));
            }
          }
        }
      }
    }
  }
}

/* Per-group global scales from the stored values; uploaded. */
static void set_global_scales(fprob *p) {
  kg_fp4_args *a = &p->a;
  const uint8_t *x = bhost(&p->x);
  p->gsv = (float *)xmalloc((size_t)a->batch * sizeof(float));
  for (int64_t g = 0; g < a->batch; g++) {
    float amax = 0.0f;
    for (int64_t m = 0; m < a->rows; m++)
      for (int64_t j = 0; j < a->k; j++) {
        float v = fabsf((float)get_el(a->dtype, x, xi(p, g, m, j)));
        if (v > amax) amax = v;   /* NaN never compares greater */
      }
    p->gsv[g] = ref_global_scale(amax);
  }
  memcpy(bhost(&p->gs), p->gsv, (size_t)a->batch * sizeof(float));
  a->global_scale = (const float *)bdev(&p->gs);
}

/* ---- quantize ----------------------------------------------------------------------------------- */

static void check_quantize(fprob *p, fvar *v) {
  const kg_fp4_args *a = &p->a;
  const kg_dtype t = a->dtype;
  const uint8_t *x = bhost(&p->x), *q = bhost(&p->q), *sf = bhost(&p->sf);
  /* inputs unchanged; output guards, gaps and scale padding */
  check_unchanged(&p->x, "x");
  if (a->global_scale) check_unchanged(&p->gs, "global_scale");
  buf_download(&p->q);
  buf_download(&p->sf);
  check_guards(&p->q, "q");
  check_guards(&p->sf, "sf");
  for (size_t o = 0; o < p->q_bytes; o++)
    if (!in_q(p, (int64_t)o) && q[o] != POISON) {
      bad("q byte %zu outside the rows (ld / batch gap) written: 0x%02x", o, q[o]);
      break;
    }
  for (size_t o = 0; o < a->sf_bytes; o++)
    if (p->map[o] < 0 && sf[o] != 0) bad("scale padding byte %zu is 0x%02x, want 0", o, sf[o]);
  /* scales and elements */
  for (int64_t g = 0; g < a->batch; g++)
    for (int64_t m = 0; m < a->rows; m++)
      for (int64_t kb = 0; kb < p->kv; kb++) {
        const int64_t j0 = kb * p->bs, j1 = j0 + p->bs < a->k ? j0 + p->bs : a->k;
        float amax = 0.0f;
        for (int64_t j = j0; j < j1; j++) {
          float av = fabsf((float)get_el(t, x, xi(p, g, m, j)));
          if (av > amax) amax = av;
        }
        unsigned want_sf;
        double dq;   /* dequantization scale: x / dq is the value each element rounds from */
        if (a->format == KG_FP4_NVFP4) {
          const float gs = p->gsv ? p->gsv[g] : 1.0f;
          const float sfv = gs * (amax / 6.0f);   /* f32 operations, as kg.h specifies */
          want_sf = e4m3_code(sfv);
          dq = (float)ref_e4m3(want_sf) / gs;    /* f32 division */
        } else {
          want_sf = ref_mx_byte(amax, a->mx_round);
          dq = ldexp(1.0, (int)want_sf - 127);
        }
        int ex;
        const int exact = dq == 0.0 || frexp(dq, &ex) == 0.5;   /* x / dq is exact in f32 */
        const unsigned got_sf = sf[sf_off(p, g, m, kb)];
        if (got_sf != want_sf)
          bad("scale (g %lld, m %lld, kb %lld) is 0x%02x, want 0x%02x (block amax %.9g)", (long long)g, (long long)m,
              (long long)kb, got_sf, want_sf, (double)amax);
        for (int64_t j = j0; j < j1; j++) {
          const double xv = get_el(t, x, xi(p, g, m, j));
          const double e = dq != 0.0 ? xv / dq : xv * 0.0;
          const uint8_t byte = q[qi(p, g, m, j / 2)];
          const unsigned got = j % 2 ? byte >> 4 : byte & 15u, want = ref_e2m1_code(e);
          v->elements++;
          if (exact && is_tie(e)) v->exact_ties++;
          if (got == want) continue;
          /* allowed: an adjacent code of the same sign where e is within rounding error of their
          ** midpoint; none where the scale is a power of two (no rounding error at all) */
          const double vg = ref_e2m1(got), vw = ref_e2m1(want), mid = 0.5 * (vg + vw);
          const int adjacent = (got & 8u) == (want & 8u) && abs((int)(got & 7u) - (int)(want & 7u)) == 1;
          if (!exact && adjacent && fabs(e - mid) <= 1e-6 * fabs(mid)) {
            const double steps = fabs(vg - vw) / ref_e2m1_step(fmin(fabs(vg), fabs(vw)));
            v->flips++;
            if (steps > v->max_steps) v->max_steps = steps;
            continue;
          }
          bad("element (g %lld, m %lld, j %lld) = %.9g (x / scale = %.9g) has code %u, want %u", (long long)g,
              (long long)m, (long long)j, xv, e, got, want);
        }
      }
}

/* One quantize run: inputs per mode, optional global scale, poisoned outputs, checked. */
static void quantize_case(fvar *v, const qshape *s, int with_gs, uint64_t seed, int plain) {
  fprob p;
  prob_new(&p, v->format, v->dtype, v->layout, v->round, s);
  case_begin("%s quantize E%lld %lldx%lld ldx %lld ldq %lld %s", v->name, (long long)s->batch, (long long)s->rows,
             (long long)s->k, (long long)p.a.ldx, (long long)p.a.ldq,
             v->format == KG_FP4_MXFP4 ? "" : with_gs ? "gs" : "gs NULL");
  uint64_t r = seed;
  /* with a global scale, Inf / the largest value only in the last group of a batch (so the others
  ** get a meaningful gs); without, everywhere */
  const int big_mask = !with_gs ? -1 : s->batch > 1 ? 1 << (s->batch - 1) : 0;
  fill_x(&p, &r, plain, big_mask);
  if (with_gs) set_global_scales(&p);
  buf_upload(&p.x);
  buf_upload(&p.q);
  buf_upload(&p.sf);
  buf_upload(&p.gs);
  kg_exec e = exec_for(v->name);
  kg_status st = kg_fp4_quantize(&p.a, &e);
  dev_sync();
  if (expect_status(st, KG_SUCCESS, "kg_fp4_quantize")) check_quantize(&p, v);
  case_end();
  prob_free(&p);
}

/* Refusals that must write nothing: odd k (both ops), another MXFP4 scale rule (quantize). */
static void refusal_cases(fvar *v) {
  const qshape s = { 2, 5, 41, 1, 1, 0, 0 };
  for (int which = 0; which < 2; which++) {
    if (which == 1 && !(v->op == OP_QUANT && v->format == KG_FP4_MXFP4)) continue;
    fprob p;
    qshape s2 = s;
    if (which == 1) s2.k = 64;
    prob_new(&p, v->format, v->dtype, v->layout, v->round, &s2);
    case_begin("%s refuses %s", v->name, which == 0 ? "odd k = 41" : "another MXFP4 scale rule");
    uint64_t r = 99;
    fill_x(&p, &r, 1, -1);
    if (v->op == OP_DEQUANT) {
      for (size_t o = 0; o < p.q_bytes; o++) bhost(&p.q)[o] = (uint8_t)rng_next(&r);
      memset(bhost(&p.sf), 0x38, p.sf.n);
    }
    if (which == 1) p.a.mx_round = (kg_mx_scale_round)(v->round == KG_MX_ROUND_UP ? KG_MX_ROUND_OCP : KG_MX_ROUND_UP);
    buf_upload(&p.x); buf_upload(&p.q); buf_upload(&p.sf);
    kg_exec e = exec_for(v->name);
    kg_status st = v->op == OP_QUANT ? kg_fp4_quantize(&p.a, &e) : kg_fp4_dequantize(&p.a, &e);
    dev_sync();
    expect_status(st, which == 0 ? KG_ERROR_INVALID_PROBLEM : KG_ERROR_NOT_SUPPORTED,
                  v->op == OP_QUANT ? "kg_fp4_quantize" : "kg_fp4_dequantize");
    check_unchanged(&p.x, "x");
    check_unchanged(&p.q, "q");
    check_unchanged(&p.sf, "sf");
    case_end();
    prob_free(&p);
  }
}

/* ---- dequantize --------------------------------------------------------------------------------- */

static void dequantize_case(fvar *v, const qshape *s, int with_gs, uint64_t seed) {
  fprob p;
  const kg_dtype t = v->dtype;
  prob_new(&p, v->format, t, v->layout, -1, s);
  case_begin("%s dequantize E%lld %lldx%lld ldx %lld ldq %lld bs %lld/%lld off %lld %s", v->name, (long long)s->batch,
             (long long)s->rows, (long long)s->k, (long long)p.a.ldx, (long long)p.a.ldq, (long long)p.a.batch_stride_x,
             (long long)p.a.batch_stride_q, (long long)s->off, v->format == KG_FP4_MXFP4 ? "" : with_gs ? "gs" : "gs NULL");
  uint64_t r = seed;
  const kg_fp4_args *a = &p.a;
  uint8_t *q = bhost(&p.q), *sf = bhost(&p.sf), *x = bhost(&p.x);
  for (size_t o = 0; o < p.q_bytes; o++)
    q[o] = in_q(&p, (int64_t)o) ? (uint8_t)rng_next(&r) : 0x77;
  for (size_t o = 0; o < a->sf_bytes; o++) {
    unsigned b;
    if (v->format == KG_FP4_NVFP4) b = (unsigned)(rng_next(&r) & 255u);   /* every E4M3 byte */
    else {
      static const unsigned edge[] = { 0, 1, 127, 253, 254, 255 };
      b = rng_int(&r, 0, 15) == 0 ? edge[rng_int(&r, 0, 5)] : (unsigned)rng_int(&r, 100, 154);
    }
    sf[o] = p.map[o] < 0 ? 0 : (uint8_t)b;
  }
  if (with_gs) {
    p.gsv = (float *)xmalloc((size_t)s->batch * sizeof(float));
    for (int64_t g = 0; g < s->batch; g++)
      p.gsv[g] = g % 3 == 0 ? (float)(0.37 + 5.5 * rng_uniform(&r)) : g % 3 == 1 ? 896.0f : 1.0f / 3.0f;
    memcpy(bhost(&p.gs), p.gsv, (size_t)s->batch * sizeof(float));
    p.a.global_scale = (const float *)bdev(&p.gs);
  }
  buf_upload(&p.x); buf_upload(&p.q); buf_upload(&p.sf); buf_upload(&p.gs);
  kg_exec e = exec_for(v->name);
  kg_status st = kg_fp4_dequantize(&p.a, &e);
  dev_sync();
  if (expect_status(st, KG_SUCCESS, "kg_fp4_dequantize")) {
    check_unchanged(&p.q, "q");
    check_unchanged(&p.sf, "sf");
    if (with_gs) check_unchanged(&p.gs, "global_scale");
    buf_download(&p.x);
    check_guards(&p.x, "x");
    for (size_t o = 0; o < p.x_elems * esize(t); o++) {
      const int64_t el = (int64_t)(o / esize(t));
      if (!in_x(&p, el) && x[o] != POISON) {
        bad("x byte %zu outside the rows (ld / batch gap) written: 0x%02x", o, x[o]);
        break;
      }
    }
    for (int64_t g = 0; g < a->batch; g++)
      for (int64_t m = 0; m < a->rows; m++)
        for (int64_t j = 0; j < a->k; j++) {
          const unsigned sb = sf[sf_off(&p, g, m, j / p.bs)];
          float scale;
          if (v->format == KG_FP4_NVFP4) scale = (float)ref_e4m3(sb) / (p.gsv ? p.gsv[g] : 1.0f);   /* f32 */
          else scale = sb == 255 ? NAN : (float)ldexp(1.0, (int)sb - 127);
          const uint8_t byte = q[qi(&p, g, m, j / 2)];
          const unsigned code = j % 2 ? byte >> 4 : byte & 15u;
          const float want32 = (float)(ref_e2m1(code) * (double)scale);   /* one f32 rounding */
          const uint32_t want = bits_of(t, want32), got = raw_el(t, x, xi(&p, g, m, j));
          if (got == want || (bits_nan(t, want) && bits_nan(t, got))) continue;
          bad("(g %lld, m %lld, j %lld): code %u scale byte 0x%02x: 0x%x (%.9g), want 0x%x (%.9g)", (long long)g,
              (long long)m, (long long)j, code, sb, got, get_el(t, x, xi(&p, g, m, j)), want, (double)want32);
        }
  }
  case_end();
  prob_free(&p);
}

/* ---- scale-buffer conversions ------------------------------------------------------------------- */

static const int64_t SROWS[] = { 1, 7, 8, 9, 31, 33, 127, 128, 129, 300 };
static const int64_t SKV[] = { 1, 2, 3, 4, 5, 7, 9 };

/* swizzle: random linear bytes -> swizzled, against the map; unswizzle: swizzled (zero or garbage
** padding) -> linear, then back through `back` (the swizzle variant of that layout, may be NULL)
** when the padding was zero. */
static void convert_case(const fvar *v, int64_t rows, int64_t kv, int64_t groups, int garbage, const char *back,
                         uint64_t seed) {
  const int64_t n = groups * rows * kv;
  size_t sbytes;
  int64_t *map = layout_map(v->layout, rows, kv, groups, &sbytes);
  uint64_t r = seed;
  case_begin("%s %lld rows x %lld kv x %lld groups%s", v->name, (long long)rows, (long long)kv, (long long)groups,
             garbage ? " (garbage padding)" : "");
  dbuf lin = buf_new((size_t)n), sw = buf_new(sbytes);
  kg_exec e = exec_for(v->name);
  if (v->op == OP_SWIZZLE) {
    for (int64_t i = 0; i < n; i++) bhost(&lin)[i] = (uint8_t)rng_next(&r);
    buf_upload(&lin);
    buf_upload(&sw);
    kg_sf_swizzle_args s = { (kg_sf_layout)v->layout, rows, kv, groups, bdev(&lin), (size_t)n, bdev(&sw), sbytes };
    kg_status st = kg_sf_swizzle(&s, &e);
    dev_sync();
    if (expect_status(st, KG_SUCCESS, "kg_sf_swizzle")) {
      check_unchanged(&lin, "src");
      buf_download(&sw);
      check_guards(&sw, "dst");
      for (size_t o = 0; o < sbytes; o++) {
        const unsigned want = map[o] < 0 ? 0u : bhost(&lin)[map[o]], got = bhost(&sw)[o];
        if (got != want) bad("byte %zu is 0x%02x, want 0x%02x%s", o, got, want, map[o] < 0 ? " (padding)" : "");
      }
    }
  } else {
    for (size_t o = 0; o < sbytes; o++)
      bhost(&sw)[o] = map[o] >= 0 ? (uint8_t)rng_next(&r) : garbage ? (uint8_t)(1 + rng_next(&r) % 255) : 0;
    buf_upload(&sw);
    buf_upload(&lin);
    kg_sf_swizzle_args u = { (kg_sf_layout)v->layout, rows, kv, groups, bdev(&sw), sbytes, bdev(&lin), (size_t)n };
    kg_status st = kg_sf_unswizzle(&u, &e);
    dev_sync();
    if (expect_status(st, KG_SUCCESS, "kg_sf_unswizzle")) {
      check_unchanged(&sw, "src");
      buf_download(&lin);
      check_guards(&lin, "dst");
      for (size_t o = 0; o < sbytes; o++)
        if (map[o] >= 0 && bhost(&lin)[map[o]] != bhost(&sw)[o])
          bad("scale %lld is 0x%02x, want 0x%02x (swizzled byte %zu)", (long long)map[o], bhost(&lin)[map[o]],
              bhost(&sw)[o], o);
      if (!garbage && back && g_errs == 0) {   /* swizzle(unswizzle(s)) is s, byte for byte */
        dbuf again = buf_new(sbytes);
        buf_upload(&again);
        kg_exec e2 = exec_for(back);
        kg_sf_swizzle_args s = { (kg_sf_layout)v->layout, rows, kv, groups, bdev(&lin), (size_t)n, bdev(&again), sbytes };
        st = kg_sf_swizzle(&s, &e2);
        dev_sync();
        if (expect_status(st, KG_SUCCESS, "kg_sf_swizzle (round trip)")) {
          buf_download(&again);
          check_guards(&again, "round trip dst");
          if (memcmp(bhost(&again), bhost(&sw), sbytes) != 0) bad("swizzle(unswizzle(s)) is not byte-identical to s");
        }
        buf_free(&again);
      }
    }
  }
  case_end();
  buf_free(&lin);
  buf_free(&sw);
  free(map);
}

static void reswizzle_case(const fvar *v, const int64_t *rows_of, int ns, int64_t kv, int64_t groups, int garbage,
                           uint64_t seed, const char *label) {
  uint64_t r = seed;
  dbuf src[KG_SF_MAX_SHARDS];
  int64_t *sinv[KG_SF_MAX_SHARDS];
  kg_sf_shard sh[KG_SF_MAX_SHARDS];
  int64_t total = 0;
  case_begin("%s shards %s kv %lld groups %lld%s", v->name, label, (long long)kv, (long long)groups,
             garbage ? " (garbage shard padding)" : "");
  for (int s = 0; s < ns; s++) {
    size_t bytes;
    int64_t *map = layout_map(v->layout, rows_of[s], kv, groups, &bytes);
    src[s] = buf_new(bytes);
    for (size_t o = 0; o < bytes; o++)
      bhost(&src[s])[o] = map[o] >= 0 ? (uint8_t)(1 + rng_next(&r) % 255) : garbage ? (uint8_t)rng_next(&r) : 0;
    buf_upload(&src[s]);
    sinv[s] = layout_inverse(map, bytes, groups * rows_of[s] * kv);
    free(map);
    sh[s].sf = bdev(&src[s]);
    sh[s].rows = rows_of[s];
    sh[s].sf_bytes = bytes;
    total += rows_of[s];
  }
  size_t dbytes;
  int64_t *dmap = layout_map(v->layout, total, kv, groups, &dbytes);
  dbuf dst = buf_new(dbytes);
  buf_upload(&dst);
  kg_sf_reswizzle_args a = { (kg_sf_layout)v->layout, kv, groups, ns, sh, bdev(&dst), dbytes };
  kg_exec e = exec_for(v->name);
  kg_status st = kg_sf_reswizzle(&a, &e);
  dev_sync();
  if (expect_status(st, KG_SUCCESS, "kg_sf_reswizzle")) {
    for (int s = 0; s < ns; s++) check_unchanged(&src[s], "shard");
    buf_download(&dst);
    check_guards(&dst, "dst");
    /* reference: unswizzle each shard by its own map, concatenate rows per group, swizzle */
    for (size_t o = 0; o < dbytes; o++) {
      unsigned want = 0;
      if (dmap[o] >= 0) {
        const int64_t kb = dmap[o] % kv, m = dmap[o] / kv % total, g = dmap[o] / kv / total;
        int64_t r0 = 0;
        int s = 0;
        while (m >= r0 + rows_of[s]) r0 += rows_of[s++];
        want = bhost(&src[s])[sinv[s][(g * rows_of[s] + (m - r0)) * kv + kb]];
      }
      if (bhost(&dst)[o] != want)
        bad("byte %zu is 0x%02x, want 0x%02x%s", o, bhost(&dst)[o], want, dmap[o] < 0 ? " (padding)" : "");
    }
  }
  case_end();
  buf_free(&dst);
  free(dmap);
  for (int s = 0; s < ns; s++) { buf_free(&src[s]); free(sinv[s]); }
}

/* ---- main --------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;   /* optional: run the variants whose name contains it */
  setvbuf(stdout, NULL, _IOLBF, 0);
  e4m3_init();
  if (!kg_backend_available(BACKEND)) {
    printf("FAIL the kg %s backend is not available (not compiled in, or no GPU)\n", kg_backend_string(BACKEND));
    g_fail++;
    summary();
    return 1;
  }
#ifdef KG_GPU_TEST_HOST
  printf("test_gpu_fp4: HOST BUILD (KG_GPU_TEST_HOST): C-backend variants, host memory\n");
#else
  int dev = 0;
  struct cudaDeviceProp prop;
  CK(cudaGetDevice(&dev));
  CK(cudaGetDeviceProperties(&prop, dev));
  printf("test_gpu_fp4: %s (sm_%d%d)\n", prop.name, prop.major, prop.minor);
  CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
#endif

  /* variants */
  int nv = 0, count[5] = { 0 };
  for (int i = 0; i < kg_variant_count(); i++)
    if (!strncmp(kg_variant_name(i), VPREFIX, strlen(VPREFIX))) nv++;
  fvar *vars = (fvar *)calloc((size_t)(nv ? nv : 1), sizeof *vars);
  if (!vars) { fprintf(stderr, "out of host memory\n"); return 2; }
  nv = 0;
  for (int i = 0; i < kg_variant_count(); i++) {
    const char *name = kg_variant_name(i);
    if (strncmp(name, VPREFIX, strlen(VPREFIX)) != 0) continue;
    if (only && !strstr(name, only)) continue;
    if (!parse_variant(name, &vars[nv])) {
      printf("FAIL %s: cannot parse the variant name\n", name);
      g_fail++;
      continue;
    }
    count[vars[nv].op]++;
    nv++;
  }
  printf("%d FP4 variants (%s*): %d quantize, %d dequantize, %d swizzle, %d unswizzle, %d reswizzle\n", nv, VPREFIX,
         count[OP_QUANT], count[OP_DEQUANT], count[OP_SWIZZLE], count[OP_UNSWIZZLE], count[OP_RESWIZZLE]);
  for (int op = 0; op < 5 && !only; op++)
    if (count[op] == 0) {
      printf("FAIL no %s variant of op %d compiled in\n", VPREFIX, op);
      g_fail++;
    }

  for (int vi = 0; vi < nv; vi++) {
    fvar *v = &vars[vi];
    const uint64_t vseed = 0x5eed0000ull + 7919ull * (uint64_t)vi;
    switch (v->op) {
      case OP_QUANT: {
        for (int si = 0; si < NQSHAPES; si++)
          for (int with_gs = 0; with_gs <= (v->format == KG_FP4_NVFP4); with_gs++)
            quantize_case(v, &QSHAPES[si], with_gs, vseed + 131ull * (uint64_t)si + (uint64_t)with_gs, 0);
        const qshape large = { 2, LARGE_ROWS, LARGE_K, 0, 0, -1, 0 };   /* dense batches */
        quantize_case(v, &large, v->format == KG_FP4_NVFP4, vseed + 77777ull, 1);
        refusal_cases(v);
        printf("%s %s %s %s%s%s: %lld elements (%lld exact ties), %lld tie flips, max %.2f FP4 steps\n", v->name,
               fname(v->format), tname(v->dtype), lname(v->layout), v->round >= 0 ? " round " : "",
               v->round >= 0 ? rname(v->round) : "", v->elements, v->exact_ties, v->flips, v->max_steps);
        if (v->max_steps > 1.0) {   /* cannot happen with the adjacency rule; kept as the stated bound */
          printf("FAIL %s: %.2f FP4 steps > 1\n", v->name, v->max_steps);
          g_fail++;
        }
        break;
      }
      case OP_DEQUANT: {
        for (int si = 0; si < NQSHAPES; si++)
          for (int with_gs = 0; with_gs <= (v->format == KG_FP4_NVFP4); with_gs++)
            dequantize_case(v, &QSHAPES[si], with_gs, vseed + 131ull * (uint64_t)si + (uint64_t)with_gs);
        for (int si = 0; si < NDQSHAPES; si++)
          for (int with_gs = 0; with_gs <= (v->format == KG_FP4_NVFP4); with_gs++)
            dequantize_case(v, &DQSHAPES[si], with_gs, vseed + 5003ull + 131ull * (uint64_t)si + (uint64_t)with_gs);
        const qshape large = { 2, LARGE_ROWS, LARGE_K, 0, 0, 1, 0 };   /* 16-byte aligned batch strides */
        dequantize_case(v, &large, v->format == KG_FP4_NVFP4, vseed + 77777ull);
        refusal_cases(v);
        break;
      }
      case OP_SWIZZLE: case OP_UNSWIZZLE: {
        const char *back = NULL;   /* the swizzle variant of the same layout, for the round trip */
        for (int j = 0; v->op == OP_UNSWIZZLE && j < kg_variant_count(); j++) {
          fvar w;
          if (parse_variant(kg_variant_name(j), &w) && w.op == OP_SWIZZLE && w.layout == v->layout) back = w.name;
        }
        if (v->op == OP_UNSWIZZLE && !back) printf("note: %s: no swizzle variant of its layout, no round trip\n", v->name);
        int c = 0;
        for (size_t ri = 0; ri < sizeof SROWS / sizeof SROWS[0]; ri++)
          for (size_t ki = 0; ki < sizeof SKV / sizeof SKV[0]; ki++)
            for (int64_t groups = 1; groups <= 3; groups += 2, c++) {
              convert_case(v, SROWS[ri], SKV[ki], groups, 0, back, vseed + (uint64_t)c);
              if (v->op == OP_UNSWIZZLE) convert_case(v, SROWS[ri], SKV[ki], groups, 1, back, vseed + 5000ull + (uint64_t)c);
            }
        break;
      }
      case OP_RESWIZZLE: {
        static const int64_t L0[] = { 100, 28, 77 }, L1[] = { 128, 128 }, L2[] = { 1, 7, 9, 130 }, L3[] = { 33 },
                             L4[] = { 300, 1, 5 };
        static const struct { const int64_t *rows; int n; const char *label; } lists[] = {
          { L0, 3, "{100, 28, 77}" }, { L1, 2, "{128, 128}" }, { L2, 4, "{1, 7, 9, 130}" }, { L3, 1, "{33}" },
          { L4, 3, "{300, 1, 5}" },
        };
        int64_t many[KG_SF_MAX_SHARDS];
        uint64_t r = vseed;
        int c = 0;
        for (int64_t kv = 1; kv <= 6; kv = kv == 1 ? 3 : kv + 3)
          for (int64_t groups = 1; groups <= 3; groups += 2)
            for (int garbage = 0; garbage <= 1; garbage++) {
              for (size_t li = 0; li < sizeof lists / sizeof lists[0]; li++, c++)
                reswizzle_case(v, lists[li].rows, lists[li].n, kv, groups, garbage, vseed + (uint64_t)c, lists[li].label);
              for (int i = 0; i < 20; i++) many[i] = rng_int(&r, 1, 20);
              reswizzle_case(v, many, 20, kv, groups, garbage, vseed + 900ull + (uint64_t)c, "20 x 1..20 rows");
              for (int i = 0; i < KG_SF_MAX_SHARDS; i++) many[i] = rng_int(&r, 1, 3);
              reswizzle_case(v, many, KG_SF_MAX_SHARDS, kv, groups, garbage, vseed + 1900ull + (uint64_t)c,
                             "KG_SF_MAX_SHARDS x 1..3 rows");
            }
        break;
      }
    }
  }
  free(vars);
#ifndef KG_GPU_TEST_HOST
  CK(cudaStreamDestroy(g_stream));
#endif
  summary();
  return g_fail ? 1 : 0;
}
