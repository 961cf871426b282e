/*
** check_fp4.c -- FP4Test: block-scaled FP4 (NVFP4, MXFP4) on the C backend.
**
** Every expectation comes from a reference written here, independent of the
** runtime and the generated code: E2M1 / E4M3 by nearest-value search with
** ties to the even code, UE8M0 scale rules by powers of two in double,
** scale-buffer layouts by explicit loops over 512-byte (128x4) and 32-byte
** (8x4) atoms. Quantizers are compared by the parity rule of fp4.md: scale
** bytes bit-equal, elements equal except adjacent-code flips where the exact
** pre-rounding value sits within rounding error of a midpoint (counted and
** reported in FP4 steps).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp4_ref.h"
#include "test_util.h"

#define POISON8 0xA5u

/* ---- reference numerics ------------------------------------------------------- */

/* E4M3 code of v >= 0: nearest finite value, ties to the even code, saturating at 448. */
static unsigned ref_e4m3_code(double v) {
  if (!(v > 0.0)) return 0;
  if (v >= 448.0) return 0x7e;
  unsigned best = 0;
  double bd = INFINITY;
  for (unsigned c = 0; c <= 0x7e; c++) {
    double d = fabs(v - ref_e4m3(c));
    if (d < bd || (d == bd && c % 2 == 0)) { best = c; bd = d; }
  }
  return best;
}

/* f16 value of a bit pattern, written out here (not the runtime's converter). */
static double ref_f16(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return (h & 0x8000u) ? -v : v;
}
static double ref_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* ---- reference layouts: explicit atom loops ----------------------------------------
** map[off] = index of (g, m, kb) = (g*rows + m)*kv + kb, or -1 for padding. */
static int64_t *ref_layout_map(kg_sf_layout layout, int64_t rows, int64_t kv, int64_t groups, size_t *bytes) {
  int64_t n;
  if (layout == KG_SF_LINEAR) {
    n = groups * rows * kv;
    int64_t *map = (int64_t *)tu_alloc((size_t)n * sizeof(int64_t));
    for (int64_t g = 0, o = 0; g < groups; g++)
      for (int64_t m = 0; m < rows; m++)
        for (int64_t kb = 0; kb < kv; kb++, o++) map[o] = (g * rows + m) * kv + kb;
    *bytes = (size_t)n;
    return map;
  }
  const int big = layout == KG_SF_SWIZZLED_128X4;
  const int64_t atom_rows = big ? 128 : 8, atom = big ? 512 : 32;
  const int64_t mt = (rows + atom_rows - 1) / atom_rows, kt = (kv + 3) / 4;
  n = groups * mt * kt * atom;
  int64_t *map = (int64_t *)tu_alloc((size_t)n * sizeof(int64_t));
  int64_t o = 0;
  for (int64_t g = 0; g < groups; g++)
    for (int64_t a = 0; a < mt; a++)          /* atoms of one group: row block a, column block b */
      for (int64_t b = 0; b < kt; b++)
        for (int64_t p = 0; p < atom; p++, o++) {
          int64_t m, kb;
          if (big) {   /* 32 lines of 16 bytes; line r: rows r, r+32, r+64, r+96, 4 columns each */
            int64_t line = p / 16, q = p % 16;
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

/* Offset of (g, m, kb) in a map (linear search avoided: inverse table). */
static int64_t *ref_inverse(const int64_t *map, size_t bytes, int64_t count) {
  int64_t *inv = (int64_t *)tu_alloc((size_t)count * sizeof(int64_t));
  for (int64_t i = 0; i < count; i++) inv[i] = -1;
  for (size_t o = 0; o < bytes; o++)
    if (map[o] >= 0) {
      ck_assert_msg(map[o] < count && inv[map[o]] == -1, "reference map is not a bijection");
      inv[map[o]] = (int64_t)o;
    }
  for (int64_t i = 0; i < count; i++) ck_assert_msg(inv[i] >= 0, "reference map misses scale %lld", (long long)i);
  return inv;
}

/* ---- variants ------------------------------------------------------------------- */

typedef struct fvar {
  char name[128];
  char op[16];
  int format;        /* kg_fp4_format or -1 */
  int dtype;         /* kg_dtype or -1 */
  int layout;        /* kg_sf_layout */
  int round;         /* kg_mx_scale_round or -1 */
} fvar;

static int parse_fp4(const char *name, fvar *o) {
  memset(o, 0, sizeof *o);
  o->format = o->dtype = o->round = -1;
  if (strncmp(name, "kg_fp4_c_", 9) != 0) return 0;
  snprintf(o->name, sizeof o->name, "%s", name);
  char buf[128];
  snprintf(buf, sizeof buf, "%s", name + 9);
  char *tok[8];
  int n = 0;
  for (char *p = strtok(buf, "_"); p && n < 8; p = strtok(NULL, "_")) tok[n++] = p;
  if (n < 2) return 0;
  snprintf(o->op, sizeof o->op, "%s", tok[0]);
  int i = 1;
  if (strcmp(tok[0], "quantize") == 0 || strcmp(tok[0], "dequantize") == 0) {
    if (n < 4) return 0;
    o->format = strcmp(tok[1], "nvfp4") == 0 ? KG_FP4_NVFP4 : strcmp(tok[1], "mxfp4") == 0 ? KG_FP4_MXFP4 : -1;
    o->dtype = strcmp(tok[2], "f32") == 0 ? KG_F32 : strcmp(tok[2], "f16") == 0 ? KG_F16
             : strcmp(tok[2], "bf16") == 0 ? KG_BF16 : -1;
    i = 3;
  }
  if (i >= n) return 0;
  o->layout = strcmp(tok[i], "sflinear") == 0 ? KG_SF_LINEAR : strcmp(tok[i], "sf128x4") == 0 ? KG_SF_SWIZZLED_128X4
            : strcmp(tok[i], "sf8x4") == 0 ? KG_SF_SWIZZLED_8X4 : -1;
  if (i + 1 < n) o->round = strcmp(tok[i + 1], "rup") == 0 ? KG_MX_ROUND_UP : strcmp(tok[i + 1], "rdown") == 0
                            ? KG_MX_ROUND_DOWN : strcmp(tok[i + 1], "rocp") == 0 ? KG_MX_ROUND_OCP : -2;
  return o->layout >= 0 && o->round != -2;
}

/* C variants of one op, in table order. */
static int c_variants(const char *op, fvar *out, int cap) {
  int n = 0;
  for (int i = 0; i < kg_variant_count(); i++) {
    fvar f;
    if (!parse_fp4(kg_variant_name(i), &f) || strcmp(f.op, op) != 0) continue;
    ck_assert_msg(n < cap, "more than %d C %s variants", cap, op);
    out[n++] = f;
  }
  return n;
}

static const char *lname(int l) { return l == KG_SF_LINEAR ? "linear" : l == KG_SF_SWIZZLED_128X4 ? "128x4" : "8x4"; }

/* ---- problems --------------------------------------------------------------------- */

typedef struct fprob {
  kg_fp4_args a;
  int64_t kv;
  size_t x_elems, q_bytes;
  float *gs;           /* batch values or NULL */
} fprob;

/* A problem with strided rows and (batch > 1) gapped batches; buffers
** allocated and poisoned (x with NaN poison, q and sf with POISON8). */
static fprob make_prob(int format, kg_dtype dtype, int layout, int round, int64_t batch, int64_t rows, int64_t k,
                       int64_t xpad, int64_t qpad) {
  fprob p;
  memset(&p, 0, sizeof p);
  kg_fp4_args *a = &p.a;
  a->format = (kg_fp4_format)format;
  a->sf_layout = (kg_sf_layout)layout;
  a->mx_round = (kg_mx_scale_round)(round < 0 ? 0 : round);
  a->dtype = dtype;
  a->batch = batch; a->rows = rows; a->k = k;
  a->ldx = k + xpad;
  a->ldq = k / 2 + qpad;
  a->batch_stride_x = batch > 1 ? rows * a->ldx + 5 : 0;
  a->batch_stride_q = batch > 1 ? rows * a->ldq + 3 : 0;
  p.x_elems = (size_t)((batch - 1) * a->batch_stride_x + rows * a->ldx);
  p.q_bytes = (size_t)((batch - 1) * a->batch_stride_q + rows * a->ldq);
  a->x = tu_alloc(p.x_elems * kg_dtype_size(dtype));
  tu_poison(a->x, dtype, (int64_t)p.x_elems);
  a->q = tu_alloc(p.q_bytes);
  memset(a->q, POISON8, p.q_bytes);
  p.kv = (k + (format == KG_FP4_NVFP4 ? 16 : 32) - 1) / (format == KG_FP4_NVFP4 ? 16 : 32);
  ck_assert_int_eq(kg_sf_size((kg_sf_layout)layout, rows, p.kv, batch, &a->sf_bytes), KG_SUCCESS);
  a->sf = tu_alloc(a->sf_bytes);
  memset(a->sf, POISON8, a->sf_bytes);
  return p;
}

static void free_prob(fprob *p) {
  tu_free(p->a.x);
  tu_free(p->a.q);
  tu_free(p->a.sf);
  tu_free(p->gs);
}

static int64_t xi(const fprob *p, int64_t g, int64_t m, int64_t j) { return g * p->a.batch_stride_x + m * p->a.ldx + j; }
static int64_t qi(const fprob *p, int64_t g, int64_t m, int64_t j) { return g * p->a.batch_stride_q + m * p->a.ldq + j / 2; }
static unsigned qcode(const fprob *p, int64_t g, int64_t m, int64_t j) {
  unsigned b = ((const uint8_t *)p->a.q)[qi(p, g, m, j)];
  return j % 2 ? b >> 4 : b & 15u;
}

/* Reference scale offset: the layout map's inverse, built once per problem. */
typedef struct fref {
  int64_t *map, *inv;
  size_t bytes;
} fref;
static fref ref_of(const fprob *p) {
  fref r;
  r.map = ref_layout_map(p->a.sf_layout, p->a.rows, p->kv, p->a.batch, &r.bytes);
  r.inv = ref_inverse(r.map, r.bytes, p->a.batch * p->a.rows * p->kv);
  ck_assert_uint_eq(r.bytes, p->a.sf_bytes);
  return r;
}
static void free_ref(fref *r) { tu_free(r->map); tu_free(r->inv); }
static int64_t ref_off(const fprob *p, const fref *r, int64_t g, int64_t m, int64_t kb) {
  return r->inv[(g * p->a.rows + m) * p->kv + kb];
}

/* Parity report of one comparison. */
typedef struct parity { int64_t elements, flips; double max_steps; } parity;

/* Checks quantize outputs of p against the reference; x as stored. */
static void check_quantize(const fprob *p, const char *name, parity *par) {
  const kg_fp4_args *a = &p->a;
  const int bs = a->format == KG_FP4_NVFP4 ? 16 : 32;
  fref r = ref_of(p);
  const uint8_t *sf = (const uint8_t *)a->sf;
  /* padding bytes of the scale buffer are zero */
  for (size_t o = 0; o < r.bytes; o++)
    if (r.map[o] < 0) ck_assert_msg(sf[o] == 0, "%s: scale padding byte %zu is 0x%02x", name, o, sf[o]);
  for (int64_t g = 0; g < a->batch; g++)
    for (int64_t m = 0; m < a->rows; m++) {
      for (int64_t kb = 0; kb < p->kv; kb++) {
        const int64_t j0 = kb * bs, j1 = j0 + bs < a->k ? j0 + bs : a->k;
        float amax = 0.0f;
        for (int64_t j = j0; j < j1; j++) {
          float v = (float)tu_get(a->x, a->dtype, xi(p, g, m, j));
          if (fabsf(v) > amax) amax = fabsf(v);  /* NaN never compares greater */
        }
        unsigned want_sf;
        double dq;   /* exact element scale: x / dq is the value to round */
        if (a->format == KG_FP4_NVFP4) {
          const float gs = p->gs ? p->gs[g] : 1.0f;
          const float sfv = gs * (amax / 6.0f);             /* f32 ops, as kg.h specifies */
          want_sf = ref_e4m3_code(sfv);
          dq = (float)ref_e4m3(want_sf) / gs;          /* f32 division */
        } else {
          want_sf = ref_mx_byte(amax, a->mx_round);
          dq = ldexp(1.0, (int)want_sf - 127);
        }
        const unsigned got_sf = sf[ref_off(p, &r, g, m, kb)];
        ck_assert_msg(got_sf == want_sf, "%s: scale (g %lld, m %lld, kb %lld) is 0x%02x, want 0x%02x (amax %.9g)", name,
                      (long long)g, (long long)m, (long long)kb, got_sf, want_sf, (double)amax);
        for (int64_t j = j0; j < j1; j++) {
          const double x = (float)tu_get(a->x, a->dtype, xi(p, g, m, j));
          const double e = dq != 0.0 ? x / dq : x * 0.0;
          const unsigned want = ref_e2m1_code(e), got = qcode(p, g, m, j);
          par->elements++;
          if (got == want) continue;
          /* a flip: adjacent codes of one sign and e within rounding error of their midpoint */
          const double vg = ref_e2m1(got), vw = ref_e2m1(want);
          const double mid = 0.5 * (vg + vw), steps = fabs(vg - vw) / ref_e2m1_step(fmin(fabs(vg), fabs(vw)));
          const int adjacent = (got & 8u) == (want & 8u) && abs((int)(got & 7u) - (int)(want & 7u)) == 1;
          ck_assert_msg(adjacent && fabs(e - mid) <= 1e-6 * fabs(mid),
                        "%s: element (g %lld, m %lld, j %lld) = %.9g (scaled %.9g) has code %u, want %u", name,
                        (long long)g, (long long)m, (long long)j, x, e, got, want);
          par->flips++;
          if (steps > par->max_steps) par->max_steps = steps;
        }
      }
      /* bytes between k/2 and ldq are untouched */
      for (int64_t b = a->k / 2; b < a->ldq; b++)
        ck_assert_msg(((const uint8_t *)a->q)[g * a->batch_stride_q + m * a->ldq + b] == POISON8,
                      "%s: q gap byte (g %lld, m %lld, +%lld) written", name, (long long)g, (long long)m, (long long)b);
    }
  free_ref(&r);
}

static kg_exec exec_for(const char *variant) {
  kg_exec e = tu_exec_c();
  e.variant = variant;
  return e;
}

/* Fills x (as stored) with values of varied magnitude: per row a power-of-two
** scale in [2^-lo, 2^hi], sprinkled zeros, and exact E2M1 grid values. */
static void fill_x(fprob *p, tu_rng *rng, int lo, int hi) {
  kg_fp4_args *a = &p->a;
  for (int64_t g = 0; g < a->batch; g++)
    for (int64_t m = 0; m < a->rows; m++) {
      const double s = ldexp(1.0, tu_rng_int(rng, -lo, hi));
      for (int64_t j = 0; j < a->k; j++) {
        int kind = tu_rng_int(rng, 0, 19);
        double v = kind == 0 ? 0.0 : kind == 1 ? s * ref_e2m1((unsigned)tu_rng_int(rng, 0, 15))
                                              : s * 3.0 * tu_rng_normalish(rng);
        tu_set(a->x, a->dtype, xi(p, g, m, j), v);
      }
    }
}

/* Per-group NVFP4 global scales from the stored values (kg_nvfp4_global_scale). */
static void set_global_scales(fprob *p) {
  kg_fp4_args *a = &p->a;
  p->gs = (float *)tu_alloc((size_t)a->batch * sizeof(float));
  for (int64_t g = 0; g < a->batch; g++) {
    float amax = 0.0f;
    for (int64_t m = 0; m < a->rows; m++)
      for (int64_t j = 0; j < a->k; j++) {
        float v = fabsf((float)tu_get(a->x, a->dtype, xi(p, g, m, j)));
        if (v > amax) amax = v;
      }
    p->gs[g] = kg_nvfp4_global_scale(amax);
    const float want = amax > 0.0f && isfinite(amax) && isfinite(2688.0f / amax) ? 2688.0f / amax : 1.0f;
    ck_assert_float_eq(p->gs[g], want);
  }
  a->global_scale = p->gs;
}

/* ---- E2M1 ----------------------------------------------------------------------- */

START_TEST(test_e2m1_decision_points) {
  static const struct { float x; unsigned code; } t[] = {
    { 0.0f, 0 }, { 0.25f, 0 }, { 0.2500001f, 1 }, { 0.2499999f, 0 }, { 0.5f, 1 }, { 0.7499999f, 1 }, { 0.75f, 2 },
    { 1.0f, 2 }, { 1.25f, 2 }, { 1.2500001f, 3 }, { 1.5f, 3 }, { 1.7499999f, 3 }, { 1.75f, 4 }, { 2.0f, 4 },
    { 2.5f, 4 }, { 2.5000002f, 5 }, { 3.0f, 5 }, { 3.4999998f, 5 }, { 3.5f, 6 }, { 4.0f, 6 }, { 5.0f, 6 },
    { 5.0000005f, 7 }, { 6.0f, 7 }, { 6.5f, 7 }, { 7.0f, 7 }, { 100.0f, 7 }, { 3.4e38f, 7 }, { 1e-30f, 0 },
    { 1e-45f, 0 }, { 0.1f, 0 }, { 0.3f, 1 }, { 0.9f, 2 },
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    ck_assert_msg(ref_e2m1_code(t[i].x) == t[i].code, "reference: %.9g -> %u", (double)t[i].x, ref_e2m1_code(t[i].x));
    ck_assert_msg(kg_e2m1_encode(t[i].x) == t[i].code, "%.9g -> %u, want %u", (double)t[i].x,
                  kg_e2m1_encode(t[i].x), t[i].code);
    ck_assert_msg(kg_e2m1_encode(-t[i].x) == (t[i].code | 8u), "-%.9g -> %u, want %u", (double)t[i].x,
                  kg_e2m1_encode(-t[i].x), t[i].code | 8u);
  }
  ck_assert_uint_eq(kg_e2m1_encode(-0.0f), 8);        /* -0 keeps its sign */
  ck_assert_uint_eq(kg_e2m1_encode(INFINITY), 7);     /* saturate */
  ck_assert_uint_eq(kg_e2m1_encode(-INFINITY), 15);
  ck_assert_uint_eq(kg_e2m1_encode(NAN), 0);          /* NaN policy: +0 */
  ck_assert_uint_eq(kg_e2m1_encode(-NAN), 0);
  ck_assert_uint_eq(ref_e2m1_code(-NAN), 0);
  for (unsigned c = 0; c < 16; c++) {
    float v = kg_e2m1_decode((uint8_t)c);
    ck_assert_msg(v == ref_e2m1(c) && !!signbit(v) == !!(c & 8u), "decode %u = %g", c, (double)v);
    ck_assert_uint_eq(kg_e2m1_encode(v), c);           /* every code round-trips, -0 included */
    ck_assert_msg(kg_e2m1_decode((uint8_t)(c | 0xf0u)) == v, "decode ignores the high nibble");
  }
}
END_TEST

START_TEST(test_e2m1_exhaustive_f16_host) {
  for (uint32_t h = 0; h < 65536; h++) {
    float f = (float)ref_f16((uint16_t)h);
    unsigned want = ref_e2m1_code(f), got = kg_e2m1_encode(f);
    ck_assert_msg(got == want, "f16 0x%04x (%.9g): code %u, want %u", h, (double)f, got, want);
  }
}
END_TEST

/* Every f16 (and every bf16) value with |v| below the limit, and NaNs, through
** a generated quantizer whose scale is exactly 1: NVFP4 and MXFP4 round-up
** with a 6.0 in each block's first element (no saturation, limit 6), and
** MXFP4 OCP with a 4.0 there (amax in [4, 8): scale 1, limit 8, so the
** saturating range (6, 8) is covered). */
static void exhaustive_through(const fvar *f, double limit, float lead) {
  const int bs = f->format == KG_FP4_NVFP4 ? 16 : 32;
  const kg_dtype t = (kg_dtype)f->dtype;
  /* the 16-bit patterns of the input type (f32 inputs take the f16 values) */
  uint16_t *vals = (uint16_t *)tu_alloc(65536 * sizeof(uint16_t));
  int64_t n = 0;
  for (uint32_t h = 0; h < 65536; h++) {
    double v = t == KG_BF16 ? ref_bf16((uint16_t)h) : ref_f16((uint16_t)h);
    if (isnan(v) || fabs(v) < limit) vals[n++] = (uint16_t)h;
  }
  const int per = bs - 1;
  const int64_t rows = (n + per - 1) / per;
  fprob p = make_prob(f->format, t, f->layout, f->round, 1, rows, bs, 0, 0);
  for (int64_t m = 0, i = 0; m < rows; m++) {
    tu_set(p.a.x, t, xi(&p, 0, m, 0), lead);
    for (int j = 1; j < bs; j++, i++) {
      int64_t h = i < n ? vals[i] : 0;
      if (t == KG_F32) ((float *)p.a.x)[xi(&p, 0, m, j)] = (float)ref_f16((uint16_t)h);
      else ((uint16_t *)p.a.x)[xi(&p, 0, m, j)] = (uint16_t)h;
    }
  }
  kg_exec e = exec_for(f->name);
  ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_SUCCESS);
  fref r = ref_of(&p);
  const unsigned want_sf = f->format == KG_FP4_NVFP4 ? 0x38u : 127u;   /* 1.0 in E4M3 / UE8M0 */
  for (int64_t m = 0; m < rows; m++) {
    ck_assert_uint_eq(((uint8_t *)p.a.sf)[ref_off(&p, &r, 0, m, 0)], want_sf);
    for (int j = 0; j < bs; j++) {
      double v = tu_get(p.a.x, t, xi(&p, 0, m, j));
      unsigned got = qcode(&p, 0, m, j), want = ref_e2m1_code(v);
      ck_assert_msg(got == want, "%s: %.9g -> code %u, want %u", f->name, v, got, want);
    }
  }
  free_ref(&r);
  free_prob(&p);
  tu_free(vals);
}

START_TEST(test_e2m1_exhaustive_generated) {
  fvar vs[64];
  int n = c_variants("quantize", vs, 64), ran = 0;
  for (int i = 0; i < n; i++) {
    if (vs[i].layout != KG_SF_LINEAR) continue;
    if (vs[i].format == KG_FP4_NVFP4 || vs[i].round == KG_MX_ROUND_UP) { exhaustive_through(&vs[i], 6.0, 6.0f); ran++; }
    if (vs[i].round == KG_MX_ROUND_OCP) { exhaustive_through(&vs[i], 8.0, 4.0f); ran++; }
  }
  ck_assert_int_eq(ran, 9);   /* f32, f16, bf16 x (NVFP4, MXFP4 up, MXFP4 OCP) */
}
END_TEST

/* ---- scales ------------------------------------------------------------------------ */

START_TEST(test_nvfp4_global_scale) {
  ck_assert_float_eq(kg_nvfp4_global_scale(448.0f * 6.0f), 1.0f);
  ck_assert_float_eq(kg_nvfp4_global_scale(1.0f), 2688.0f);
  ck_assert_float_eq(kg_nvfp4_global_scale(3.0f), 2688.0f / 3.0f);
  ck_assert_float_eq(kg_nvfp4_global_scale(0.0f), 1.0f);
  ck_assert_float_eq(kg_nvfp4_global_scale(-0.0f), 1.0f);
  ck_assert_float_eq(kg_nvfp4_global_scale(-5.0f), 1.0f);
  ck_assert_float_eq(kg_nvfp4_global_scale(NAN), 1.0f);
  ck_assert_float_eq(kg_nvfp4_global_scale(INFINITY), 1.0f);
  ck_assert_float_eq(kg_nvfp4_global_scale(1e-37f), 1.0f);   /* 2688 / amax overflows */
  ck_assert_float_eq(kg_nvfp4_global_scale(1e-30f), 2688.0f / 1e-30f);
  ck_assert_int_eq(kg_fp4_block_size(KG_FP4_NVFP4), 16);
  ck_assert_int_eq(kg_fp4_block_size(KG_FP4_MXFP4), 32);
  ck_assert_int_eq(kg_fp4_block_size((kg_fp4_format)7), 0);
  ck_assert_int_eq(kg_fp4_kv(KG_FP4_NVFP4, 16), 1);
  ck_assert_int_eq(kg_fp4_kv(KG_FP4_NVFP4, 18), 2);
  ck_assert_int_eq(kg_fp4_kv(KG_FP4_MXFP4, 2), 1);
  ck_assert_int_eq(kg_fp4_kv(KG_FP4_MXFP4, 64), 2);
  ck_assert_int_eq(kg_fp4_kv(KG_FP4_MXFP4, 0), 0);
}
END_TEST

/* Every E4M3 code and every midpoint between neighbours (ties to even), as
** block amaxes 6 * v (exact in f32), through each C NVFP4 f32 quantizer. */
START_TEST(test_nvfp4_scale_every_e4m3_decision) {
  fvar vs[64];
  int n = c_variants("quantize", vs, 64), ran = 0;
  double targets[512];
  int nt = 0;
  for (unsigned c = 0; c <= 0x7e; c++) {
    targets[nt++] = ref_e4m3(c);
    if (c < 0x7e) targets[nt++] = 0.5 * (ref_e4m3(c) + ref_e4m3(c + 1));
  }
  targets[nt++] = 460.0;   /* rounds to 448 */
  targets[nt++] = 464.0;   /* tie between 448 and 480: even is 448 */
  targets[nt++] = 500.0;   /* saturates */
  targets[nt++] = 0.0005;  /* below half the smallest subnormal */
  for (int i = 0; i < n; i++) {
    if (vs[i].format != KG_FP4_NVFP4 || vs[i].dtype != KG_F32) continue;
    fprob p = make_prob(KG_FP4_NVFP4, KG_F32, vs[i].layout, -1, 1, nt, 16, 0, 0);
    for (int m = 0; m < nt; m++)
      for (int j = 0; j < 16; j++)
        ((float *)p.a.x)[xi(&p, 0, m, j)] = j == 3 ? (float)(6.0 * targets[m]) : (float)(targets[m] * (j % 5) / 7.0);
    kg_exec e = exec_for(vs[i].name);
    ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_SUCCESS);
    fref r = ref_of(&p);
    for (int m = 0; m < nt; m++) {
      unsigned got = ((uint8_t *)p.a.sf)[ref_off(&p, &r, 0, m, 0)], want = ref_e4m3_code(targets[m]);
      ck_assert_msg(got == want, "%s: scale of amax/6 = %.9g is 0x%02x, want 0x%02x", vs[i].name, targets[m], got, want);
    }
    parity par = { 0, 0, 0.0 };
    check_quantize(&p, vs[i].name, &par);
    free_ref(&r);
    free_prob(&p);
    ran++;
  }
  ck_assert_int_eq(ran, 3);
}
END_TEST

/* UE8M0 scale rules at their decision points, through every C MXFP4 f32 quantizer. */
START_TEST(test_mx_scale_rules) {
  fvar vs[64];
  int n = c_variants("quantize", vs, 64), ran = 0;
  double amaxes[600];
  int na = 0;
  for (int k = -130; k <= 126; k += 3) {
    amaxes[na++] = ldexp(1.0, k);
    amaxes[na++] = ldexp(6.0, k - 2);                               /* 6 * 2^e: round up and down agree */
    amaxes[na++] = nextafterf((float)ldexp(6.0, k - 2), INFINITY);   /* just above: round up moves */
    amaxes[na++] = nextafterf((float)ldexp(6.0, k - 2), 0.0f);       /* just below */
    amaxes[na++] = ldexp(1.75, k);
  }
  amaxes[na++] = 0.0;
  amaxes[na++] = 1e-45;       /* smallest subnormal */
  amaxes[na++] = 3.4e38;
  amaxes[na++] = INFINITY;
  for (int i = 0; i < n; i++) {
    if (vs[i].format != KG_FP4_MXFP4 || vs[i].dtype != KG_F32) continue;
    fprob p = make_prob(KG_FP4_MXFP4, KG_F32, vs[i].layout, vs[i].round, 1, na, 64, 0, 0);
    for (int m = 0; m < na; m++)
      for (int j = 0; j < 64; j++) {
        float a = (float)amaxes[m];
        ((float *)p.a.x)[xi(&p, 0, m, j)] = j == 7 || j == 40 ? (j == 40 ? -a : a) : (float)((double)a * (j % 9) / 11.0);
      }
    ((float *)p.a.x)[xi(&p, 0, 0, 5)] = NAN;   /* NaN never wins the amax */
    kg_exec e = exec_for(vs[i].name);
    ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_SUCCESS);
    fref r = ref_of(&p);
    for (int m = 0; m < na; m++)
      for (int kb = 0; kb < 2; kb++) {
        unsigned got = ((uint8_t *)p.a.sf)[ref_off(&p, &r, 0, m, kb)];
        unsigned want = ref_mx_byte((float)amaxes[m], vs[i].round);
        ck_assert_msg(got == want, "%s: amax %.9g: scale %u, want %u", vs[i].name, (double)(float)amaxes[m], got, want);
      }
    parity par = { 0, 0, 0.0 };
    check_quantize(&p, vs[i].name, &par);
    free_ref(&r);
    free_prob(&p);
    ran++;
  }
  ck_assert_int_eq(ran, 9);   /* 3 layouts x 3 rules */
  /* spot values of the rules */
  ck_assert_uint_eq(ref_mx_byte(6.0, 0), 127);
  ck_assert_uint_eq(ref_mx_byte(6.0, 1), 127);
  ck_assert_uint_eq(ref_mx_byte(6.0, 2), 127);
  ck_assert_uint_eq(ref_mx_byte(4.0, 0), 127);
  ck_assert_uint_eq(ref_mx_byte(4.0, 1), 126);
  ck_assert_uint_eq(ref_mx_byte(4.0, 2), 127);
  ck_assert_uint_eq(ref_mx_byte(7.0, 0), 128);
  ck_assert_uint_eq(ref_mx_byte(7.0, 1), 127);
  ck_assert_uint_eq(ref_mx_byte(7.0, 2), 127);
}
END_TEST

/* ---- layouts ---------------------------------------------------------------------- */

static const int64_t LROWS[] = { 1, 7, 8, 9, 31, 32, 33, 127, 128, 129, 200, 256, 300 };
static const int64_t LKV[] = { 1, 2, 3, 4, 5, 7, 8, 9 };
static const kg_sf_layout LAYOUTS[] = { KG_SF_LINEAR, KG_SF_SWIZZLED_128X4, KG_SF_SWIZZLED_8X4 };

START_TEST(test_sf_size_and_offsets) {
  for (int li = 0; li < 3; li++)
    for (size_t ri = 0; ri < sizeof LROWS / sizeof LROWS[0]; ri++)
      for (size_t ki = 0; ki < sizeof LKV / sizeof LKV[0]; ki++)
        for (int64_t groups = 1; groups <= 3; groups += 2) {
          const kg_sf_layout l = LAYOUTS[li];
          const int64_t rows = LROWS[ri], kv = LKV[ki];
          size_t bytes, ref_bytes;
          ck_assert_int_eq(kg_sf_size(l, rows, kv, groups, &bytes), KG_SUCCESS);
          int64_t *map = ref_layout_map(l, rows, kv, groups, &ref_bytes);
          ck_assert_msg(bytes == ref_bytes, "%s %lldx%lld x%lld: size %zu, want %zu", lname(l), (long long)rows,
                        (long long)kv, (long long)groups, bytes, ref_bytes);
          int64_t *inv = ref_inverse(map, ref_bytes, groups * rows * kv);
          for (int64_t g = 0; g < groups; g++)
            for (int64_t m = 0; m < rows; m++)
              for (int64_t kb = 0; kb < kv; kb++) {
                int64_t got = kg_sf_offset(l, rows, kv, g, m, kb), want = inv[(g * rows + m) * kv + kb];
                ck_assert_msg(got == want, "%s %lldx%lld: offset of (g %lld, m %lld, kb %lld) is %lld, want %lld",
                              lname(l), (long long)rows, (long long)kv, (long long)g, (long long)m, (long long)kb,
                              (long long)got, (long long)want);
              }
          ck_assert_int_eq(kg_sf_offset(l, rows, kv, 0, rows, 0), -1);
          ck_assert_int_eq(kg_sf_offset(l, rows, kv, 0, 0, kv), -1);
          ck_assert_int_eq(kg_sf_offset(l, rows, kv, -1, 0, 0), -1);
          ck_assert_int_eq(kg_sf_offset(l, rows, kv, 0, -1, 0), -1);
          tu_free(map);
          tu_free(inv);
        }
  size_t b = 99;
  ck_assert_int_eq(kg_sf_size(KG_SF_LINEAR, 0, 1, 1, &b), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_uint_eq(b, 0);
  ck_assert_int_eq(kg_sf_size(KG_SF_LINEAR, 1, 0, 1, &b), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_sf_size(KG_SF_LINEAR, 1, 1, 0, &b), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_sf_size((kg_sf_layout)9, 1, 1, 1, &b), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_sf_size(KG_SF_LINEAR, 1, 1, 1, NULL), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_sf_size(KG_SF_SWIZZLED_128X4, INT64_MAX / 2, INT64_MAX / 2, 1, &b), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_sf_offset((kg_sf_layout)9, 4, 4, 0, 0, 0), -1);
  /* the sizes people quote: 128 rows x 4 columns is one 512-byte atom; 8x4 is 32 bytes */
  ck_assert_int_eq(kg_sf_size(KG_SF_SWIZZLED_128X4, 1, 1, 1, &b), KG_SUCCESS);
  ck_assert_uint_eq(b, 512);
  ck_assert_int_eq(kg_sf_size(KG_SF_SWIZZLED_8X4, 1, 1, 1, &b), KG_SUCCESS);
  ck_assert_uint_eq(b, 32);
  ck_assert_int_eq(kg_sf_size(KG_SF_SWIZZLED_128X4, 129, 5, 2, &b), KG_SUCCESS);
  ck_assert_uint_eq(b, 2 * 2 * 2 * 512);
}
END_TEST

START_TEST(test_sf_view_128x4) {
  for (size_t ri = 0; ri < sizeof LROWS / sizeof LROWS[0]; ri++)
    for (size_t ki = 0; ki < sizeof LKV / sizeof LKV[0]; ki++)
      for (int64_t groups = 1; groups <= 3; groups++) {
        const int64_t rows = LROWS[ri], kv = LKV[ki], mt = (rows + 127) / 128, kt = (kv + 3) / 4;
        kg_sf_view v;
        ck_assert_int_eq(kg_sf_view_128x4(rows, kv, groups, &v), KG_SUCCESS);
        const int64_t shape[6] = { 32, 4, mt, 4, kt, groups };
        const int64_t stride[6] = { 16, 4, kt * 512, 1, 512, mt * kt * 512 };
        for (int i = 0; i < 6; i++) {
          ck_assert_int_eq(v.shape[i], shape[i]);
          ck_assert_int_eq(v.stride[i], stride[i]);
        }
        size_t bytes;
        int64_t *map = ref_layout_map(KG_SF_SWIZZLED_128X4, rows, kv, groups, &bytes);
        int64_t *inv = ref_inverse(map, bytes, groups * rows * kv);
        /* the view covers the padded buffer exactly once */
        ck_assert_int_eq(shape[0] * shape[1] * shape[2] * shape[3] * shape[4] * shape[5], (int64_t)bytes);
        for (int64_t g = 0; g < groups; g++)
          for (int64_t m = 0; m < rows; m++)
            for (int64_t kb = 0; kb < kv; kb++)
              ck_assert_int_eq(kg_sf_view_index(&v, m, kb, g), inv[(g * rows + m) * kv + kb]);
        ck_assert_int_eq(kg_sf_view_index(&v, mt * 128, 0, 0), -1);
        ck_assert_int_eq(kg_sf_view_index(&v, 0, kt * 4, 0), -1);
        ck_assert_int_eq(kg_sf_view_index(&v, 0, 0, groups), -1);
        ck_assert_int_eq(kg_sf_view_index(&v, -1, 0, 0), -1);
        /* padding positions inside the view name padding bytes */
        if (rows % 128) ck_assert_int_eq(map[kg_sf_view_index(&v, mt * 128 - 1, 0, 0)], -1);
        tu_free(map);
        tu_free(inv);
      }
  kg_sf_view v;
  ck_assert_int_eq(kg_sf_view_128x4(0, 1, 1, &v), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_sf_view_128x4(1, 1, 1, NULL), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_sf_view_index(NULL, 0, 0, 0), -1);
  /* a view the caller fills in: negative strides and offsets past int64 give -1 */
  ck_assert_int_eq(kg_sf_view_128x4(256, 8, 2, &v), KG_SUCCESS);
  kg_sf_view w = v;
  w.stride[2] = -1;
  ck_assert_int_eq(kg_sf_view_index(&w, 200, 0, 0), -1);
  ck_assert_int_eq(kg_sf_view_index(&w, 100, 0, 0), -1);   /* the view is refused, not the coordinate */
  for (int i = 0; i < 6; i++) w.shape[i] = w.stride[i] = INT64_MAX;
  ck_assert_int_eq(kg_sf_view_index(&w, 1000, 7, 3), -1);
  ck_assert_int_eq(kg_sf_view_index(&w, 0, 0, 0), 0);
  w.stride[5] = INT64_MAX / 2;
  w.stride[4] = INT64_MAX / 2 + 2;
  ck_assert_int_eq(kg_sf_view_index(&w, 0, 4, 1), -1);   /* two terms that overflow only added */
}
END_TEST

/* swizzle / unswizzle through the C variants against the atom-loop reference. */
START_TEST(test_swizzle_unswizzle) {
  tu_rng rng;
  tu_rng_seed(&rng, 41);
  kg_exec e = tu_exec_c();
  for (int li = 1; li < 3; li++)
    for (size_t ri = 0; ri < sizeof LROWS / sizeof LROWS[0]; ri++)
      for (size_t ki = 0; ki < sizeof LKV / sizeof LKV[0]; ki += 2)
        for (int64_t groups = 1; groups <= 2; groups++) {
          const kg_sf_layout l = LAYOUTS[li];
          const int64_t rows = LROWS[ri], kv = LKV[ki], n = groups * rows * kv;
          size_t sbytes;
          int64_t *map = ref_layout_map(l, rows, kv, groups, &sbytes);
          const size_t guard = 64;
          uint8_t *lin = (uint8_t *)tu_alloc((size_t)n + guard), *sw = (uint8_t *)tu_alloc(sbytes + guard);
          uint8_t *back = (uint8_t *)tu_alloc((size_t)n + guard), *again = (uint8_t *)tu_alloc(sbytes + guard);
          for (int64_t i = 0; i < n; i++) lin[i] = (uint8_t)tu_rng_next(&rng);
          memset(sw, POISON8, sbytes + guard);
          memset(back, POISON8, (size_t)n + guard);
          memset(again, POISON8, sbytes + guard);
          kg_sf_swizzle_args s = { l, rows, kv, groups, lin, (size_t)n, sw, sbytes };
          ck_assert_int_eq(kg_sf_swizzle(&s, &e), KG_SUCCESS);
          for (size_t o = 0; o < sbytes; o++) {
            unsigned want = map[o] < 0 ? 0u : lin[map[o]];
            ck_assert_msg(sw[o] == want, "swizzle %s %lldx%lld g%lld: byte %zu is 0x%02x, want 0x%02x", lname(l),
                          (long long)rows, (long long)kv, (long long)groups, o, sw[o], want);
          }
          for (size_t o = 0; o < guard; o++) ck_assert_uint_eq(sw[sbytes + o], POISON8);
          kg_sf_swizzle_args u = { l, rows, kv, groups, sw, sbytes, back, (size_t)n };
          ck_assert_int_eq(kg_sf_unswizzle(&u, &e), KG_SUCCESS);
          ck_assert_msg(memcmp(back, lin, (size_t)n) == 0, "unswizzle(swizzle(x)) != x");
          for (size_t o = 0; o < guard; o++) ck_assert_uint_eq(back[n + (int64_t)o], POISON8);
          kg_sf_swizzle_args s2 = { l, rows, kv, groups, back, (size_t)n, again, sbytes };
          ck_assert_int_eq(kg_sf_swizzle(&s2, &e), KG_SUCCESS);
          ck_assert_msg(memcmp(again, sw, sbytes) == 0, "swizzle(unswizzle(s)) is not byte-identical");
          tu_free(map); tu_free(lin); tu_free(sw); tu_free(back); tu_free(again);
        }
}
END_TEST

START_TEST(test_reswizzle_shards) {
  static const int64_t SHARDS[][4] = { { 100, 28, 77, 0 }, { 128, 128, 0, 0 }, { 1, 7, 9, 130 }, { 33, 0, 0, 0 } };
  tu_rng rng;
  tu_rng_seed(&rng, 77);
  kg_exec e = tu_exec_c();
  for (int li = 1; li < 3; li++)
    for (size_t si = 0; si < sizeof SHARDS / sizeof SHARDS[0]; si++)
      for (int64_t kv = 1; kv <= 6; kv += 5)
        for (int64_t groups = 1; groups <= 2; groups++) {
          const kg_sf_layout l = LAYOUTS[li];
          kg_sf_shard sh[4];
          uint8_t *src[4];
          int64_t *sinv[4];
          int ns = 0;
          int64_t total = 0;
          for (; ns < 4 && SHARDS[si][ns] > 0; ns++) {
            const int64_t r = SHARDS[si][ns];
            size_t bytes;
            int64_t *map = ref_layout_map(l, r, kv, groups, &bytes);
            src[ns] = (uint8_t *)tu_alloc(bytes);
            /* a valid swizzled shard: random scales, zero padding */
            for (size_t o = 0; o < bytes; o++) src[ns][o] = map[o] < 0 ? 0 : (uint8_t)(1 + tu_rng_next(&rng) % 255);
            sh[ns].sf = src[ns]; sh[ns].rows = r; sh[ns].sf_bytes = bytes;
            sinv[ns] = ref_inverse(map, bytes, groups * r * kv);
            tu_free(map);
            total += r;
          }
          size_t dbytes;
          int64_t *dmap = ref_layout_map(l, total, kv, groups, &dbytes);
          uint8_t *dst = (uint8_t *)tu_alloc(dbytes);
          memset(dst, POISON8, dbytes);
          kg_sf_reswizzle_args a = { l, kv, groups, ns, sh, dst, dbytes };
          ck_assert_int_eq(kg_sf_reswizzle(&a, &e), KG_SUCCESS);
          /* reference: unswizzle each shard by its own map, concatenate rows per group, swizzle */
          for (size_t o = 0; o < dbytes; o++) {
            unsigned want = 0;
            if (dmap[o] >= 0) {
              int64_t kb = dmap[o] % kv, m = dmap[o] / kv % total, g = dmap[o] / kv / total, r0 = 0;
              int s = 0;
              while (m >= r0 + sh[s].rows) r0 += sh[s++].rows;
              want = src[s][sinv[s][(g * sh[s].rows + (m - r0)) * kv + kb]];
            }
            ck_assert_msg(dst[o] == want, "reswizzle %s shards #%zu kv %lld g%lld: byte %zu is 0x%02x, want 0x%02x",
                          lname(l), si, (long long)kv, (long long)groups, o, dst[o], want);
          }
          tu_free(dmap);
          tu_free(dst);
          for (int s = 0; s < ns; s++) { tu_free(src[s]); tu_free(sinv[s]); }
        }
}
END_TEST

START_TEST(test_sf_conversion_validation) {
  uint8_t lin[64], sw[4096];
  memset(lin, 0, sizeof lin);
  memset(sw, 0, sizeof sw);
  kg_exec e = tu_exec_c();
  kg_sf_swizzle_args s = { KG_SF_SWIZZLED_128X4, 5, 3, 2, lin, 30, sw, 1024 };
  ck_assert_int_eq(kg_sf_swizzle(&s, &e), KG_SUCCESS);
  kg_sf_swizzle_args b = s;
  b.layout = KG_SF_LINEAR;
  ck_assert_int_eq(kg_sf_swizzle(&b, &e), KG_ERROR_INVALID_ARGUMENT);
  b = s; b.layout = (kg_sf_layout)7;
  ck_assert_int_eq(kg_sf_swizzle(&b, &e), KG_ERROR_INVALID_ARGUMENT);
  b = s; b.src_bytes = 31;
  ck_assert_int_eq(kg_sf_swizzle(&b, &e), KG_ERROR_INVALID_PROBLEM);
  b = s; b.dst_bytes = 1025;
  ck_assert_int_eq(kg_sf_swizzle(&b, &e), KG_ERROR_INVALID_PROBLEM);
  b = s; b.layout = KG_SF_SWIZZLED_8X4;   /* 8x4 of 5x3x2 is 64 bytes: the 128x4-sized dst is caught */
  ck_assert_int_eq(kg_sf_swizzle(&b, &e), KG_ERROR_INVALID_PROBLEM);
  b = s; b.rows = 0;
  ck_assert_int_eq(kg_sf_swizzle(&b, &e), KG_ERROR_INVALID_ARGUMENT);
  b = s; b.dst = NULL;
  ck_assert_int_eq(kg_sf_swizzle(&b, &e), KG_ERROR_INVALID_ARGUMENT);
  b = s; b.dst = lin + 8;   /* overlap */
  b.dst_bytes = 1024;
  ck_assert_int_eq(kg_sf_swizzle(&b, &e), KG_ERROR_INVALID_PROBLEM);
  ck_assert_int_eq(kg_sf_swizzle(NULL, &e), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_sf_swizzle(&s, NULL), KG_ERROR_INVALID_ARGUMENT);
  kg_sf_swizzle_args u = { KG_SF_SWIZZLED_128X4, 5, 3, 2, sw, 1024, lin, 30 };
  ck_assert_int_eq(kg_sf_unswizzle(&u, &e), KG_SUCCESS);
  u.src_bytes = 30; u.dst_bytes = 1024;   /* the linear and swizzled sizes swapped */
  ck_assert_int_eq(kg_sf_unswizzle(&u, &e), KG_ERROR_INVALID_PROBLEM);

  kg_sf_shard sh[2] = { { sw, 5, 512 }, { sw + 512, 3, 512 } };
  uint8_t *dst = (uint8_t *)tu_alloc(512);
  kg_sf_reswizzle_args r = { KG_SF_SWIZZLED_128X4, 1, 1, 2, sh, dst, 512 };
  ck_assert_int_eq(kg_sf_reswizzle(&r, &e), KG_SUCCESS);
  kg_sf_reswizzle_args rb = r;
  rb.nshards = 0;
  ck_assert_int_eq(kg_sf_reswizzle(&rb, &e), KG_ERROR_INVALID_ARGUMENT);
  rb.nshards = KG_SF_MAX_SHARDS + 1;
  ck_assert_int_eq(kg_sf_reswizzle(&rb, &e), KG_ERROR_INVALID_ARGUMENT);
  rb = r; rb.shards = NULL;
  ck_assert_int_eq(kg_sf_reswizzle(&rb, &e), KG_ERROR_INVALID_ARGUMENT);
  rb = r; rb.dst_bytes = 1024;
  ck_assert_int_eq(kg_sf_reswizzle(&rb, &e), KG_ERROR_INVALID_PROBLEM);
  kg_sf_shard bad[2] = { { sw, 5, 512 }, { sw + 512, 3, 30 } };
  rb = r; rb.shards = bad;
  ck_assert_int_eq(kg_sf_reswizzle(&rb, &e), KG_ERROR_INVALID_PROBLEM);
  bad[1].sf_bytes = 512; bad[1].rows = 0;
  ck_assert_int_eq(kg_sf_reswizzle(&rb, &e), KG_ERROR_INVALID_ARGUMENT);
  bad[1].rows = 3; bad[1].sf = dst;   /* a shard overlapping dst */
  ck_assert_int_eq(kg_sf_reswizzle(&rb, &e), KG_ERROR_INVALID_PROBLEM);
  rb = r; rb.layout = KG_SF_LINEAR;
  ck_assert_int_eq(kg_sf_reswizzle(&rb, &e), KG_ERROR_INVALID_ARGUMENT);
  tu_free(dst);
}
END_TEST

/* ---- quantize ------------------------------------------------------------------------ */

typedef struct qshape { int64_t batch, rows, k, xpad, qpad; } qshape;
static const qshape QSHAPES[] = {
  { 1, 1, 2, 0, 0 }, { 1, 3, 32, 0, 0 }, { 1, 5, 50, 3, 2 }, { 3, 9, 96, 4, 5 }, { 2, 130, 64, 0, 1 },
  { 3, 7, 18, 2, 0 },
};

static void quantize_cases(int format) {
  fvar vs[64];
  int n = c_variants("quantize", vs, 64), ran = 0;
  parity total = { 0, 0, 0.0 };
  tu_rng rng;
  tu_rng_seed(&rng, (uint64_t)(11 + format));
  for (int i = 0; i < n; i++) {
    if (vs[i].format != format) continue;
    for (size_t si = 0; si < sizeof QSHAPES / sizeof QSHAPES[0]; si++)
      for (int with_gs = 0; with_gs <= (format == KG_FP4_NVFP4); with_gs++) {
        const qshape *s = &QSHAPES[si];
        fprob p = make_prob(format, (kg_dtype)vs[i].dtype, vs[i].layout, vs[i].round, s->batch, s->rows, s->k,
                            s->xpad, s->qpad);
        fill_x(&p, &rng, 12, 12);
        if (si == 3) {   /* specials in one block: NaN (ignored, encodes +0), Inf (saturates), -0 */
          tu_set(p.a.x, p.a.dtype, xi(&p, 1, 2, 5), NAN);
          tu_set(p.a.x, p.a.dtype, xi(&p, 1, 3, 40), INFINITY);
          tu_set(p.a.x, p.a.dtype, xi(&p, 1, 3, 41), -INFINITY);
          tu_set(p.a.x, p.a.dtype, xi(&p, 2, 4, 70), -0.0);
          for (int j = 64; j < 96; j++) tu_set(p.a.x, p.a.dtype, xi(&p, 0, 8, j), 0.0);   /* an all-zero block */
        }
        if (with_gs) set_global_scales(&p);
        /* the variant dispatch picks, and the same variant forced */
        const char *name = NULL;
        kg_exec e = tu_exec_c();
        ck_assert_int_eq(kg_fp4_select(KG_OP_FP4_QUANTIZE, &p.a, &e, &name), KG_SUCCESS);
        ck_assert_str_eq(name, vs[i].name);
        ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_SUCCESS);
        check_quantize(&p, vs[i].name, &total);
        /* the x input is untouched (its gaps still poisoned) */
        for (int64_t g = 0; g < p.a.batch; g++)
          for (int64_t m = 0; m < p.a.rows; m++)
            for (int64_t j = p.a.k; j < p.a.ldx; j++) ck_assert(tu_is_poison(p.a.x, p.a.dtype, xi(&p, g, m, j)));
        if (si == 3 && p.a.rows > 4) {
          ck_assert_uint_eq(qcode(&p, 1, 2, 5), 0);
          ck_assert_uint_eq(qcode(&p, 1, 3, 40), 7);
          ck_assert_uint_eq(qcode(&p, 1, 3, 41), 15);
          ck_assert_uint_eq(qcode(&p, 2, 4, 70), 8);
          ck_assert_uint_eq(qcode(&p, 0, 8, 64), 0);
        }
        free_prob(&p);
        ran++;
      }
  }
  ck_assert_int_ge(ran, format == KG_FP4_NVFP4 ? 9 * 6 * 2 : 27 * 6);
  printf("FP4Test %s quantize: %lld elements, %lld tie flips, max %.2f FP4 steps\n",
         format == KG_FP4_NVFP4 ? "NVFP4" : "MXFP4", (long long)total.elements, (long long)total.flips,
         total.max_steps);
}

START_TEST(test_quantize_nvfp4) { quantize_cases(KG_FP4_NVFP4); }
END_TEST

START_TEST(test_quantize_mxfp4) { quantize_cases(KG_FP4_MXFP4); }
END_TEST

/* Every C variant the spec promises exists (the C backend ships every combination). */
START_TEST(test_c_variants_complete) {
  fvar vs[64];
  ck_assert_int_eq(c_variants("quantize", vs, 64), 3 * 3 * (1 + 3));
  ck_assert_int_eq(c_variants("dequantize", vs, 64), 2 * 3 * 3);
  ck_assert_int_eq(c_variants("swizzle", vs, 64), 2);
  ck_assert_int_eq(c_variants("unswizzle", vs, 64), 2);
  ck_assert_int_eq(c_variants("reswizzle", vs, 64), 2);
}
END_TEST

/* ---- dequantize ------------------------------------------------------------------------ */

START_TEST(test_dequantize) {
  fvar vs[64];
  int n = c_variants("dequantize", vs, 64);
  tu_rng rng;
  tu_rng_seed(&rng, 5);
  for (int i = 0; i < n; i++)
    for (size_t si = 0; si < sizeof QSHAPES / sizeof QSHAPES[0]; si++)
      for (int with_gs = 0; with_gs <= (vs[i].format == KG_FP4_NVFP4); with_gs++) {
        const qshape *s = &QSHAPES[si];
        const kg_dtype t = (kg_dtype)vs[i].dtype;
        fprob p = make_prob(vs[i].format, t, vs[i].layout, -1, s->batch, s->rows, s->k, s->xpad, s->qpad);
        for (size_t b = 0; b < p.q_bytes; b++) ((uint8_t *)p.a.q)[b] = (uint8_t)tu_rng_next(&rng);
        fref r = ref_of(&p);
        uint8_t *sf = (uint8_t *)p.a.sf;
        for (size_t o = 0; o < r.bytes; o++) {
          unsigned v = (unsigned)(tu_rng_next(&rng) % (vs[i].format == KG_FP4_NVFP4 ? 0x7f : 255));
          if (vs[i].format == KG_FP4_MXFP4) v = 100 + v % 50;   /* 2^-27 .. 2^22 (f16 overflows to Inf: so does the reference) */
          sf[o] = r.map[o] < 0 ? 0 : (uint8_t)v;
        }
        if (with_gs) {
          p.gs = (float *)tu_alloc((size_t)p.a.batch * sizeof(float));
          for (int64_t g = 0; g < p.a.batch; g++) p.gs[g] = (float)(0.37 + 5.5 * tu_rng_uniform(&rng));
          p.a.global_scale = p.gs;
        }
        kg_exec e = tu_exec_c();
        const char *name = NULL;
        ck_assert_int_eq(kg_fp4_select(KG_OP_FP4_DEQUANTIZE, &p.a, &e, &name), KG_SUCCESS);
        ck_assert_str_eq(name, vs[i].name);
        ck_assert_int_eq(kg_fp4_dequantize(&p.a, &e), KG_SUCCESS);
        const int bs = vs[i].format == KG_FP4_NVFP4 ? 16 : 32;
        for (int64_t g = 0; g < p.a.batch; g++)
          for (int64_t m = 0; m < p.a.rows; m++) {
            for (int64_t j = 0; j < p.a.k; j++) {
              const unsigned sb = sf[ref_off(&p, &r, g, m, j / bs)];
              float scale;
              if (vs[i].format == KG_FP4_NVFP4) scale = (float)ref_e4m3(sb) / (p.gs ? p.gs[g] : 1.0f);
              else scale = (float)ldexp(1.0, (int)sb - 127);
              const float want32 = (float)ref_e2m1(qcode(&p, g, m, j)) * scale;
              const double want = tu_round(t, want32), got = tu_get(p.a.x, t, xi(&p, g, m, j));
              ck_assert_msg(got == want || (isnan(got) && isnan(want)),
                            "%s: (g %lld, m %lld, j %lld) = %.9g, want %.9g", vs[i].name, (long long)g, (long long)m,
                            (long long)j, got, want);
              ck_assert_msg(!!signbit(got) == !!signbit(want), "%s: sign of (g %lld, m %lld, j %lld)", vs[i].name,
                            (long long)g, (long long)m, (long long)j);
            }
            for (int64_t j = p.a.k; j < p.a.ldx; j++)
              ck_assert_msg(tu_is_poison(p.a.x, t, xi(&p, g, m, j)), "%s: x gap written", vs[i].name);
          }
        /* between batches nothing is written either */
        if (p.a.batch > 1)
          for (int64_t g = 0; g + 1 < p.a.batch; g++)
            for (int64_t z = xi(&p, g, p.a.rows - 1, p.a.ldx); z < xi(&p, g + 1, 0, 0); z++)
              ck_assert(tu_is_poison(p.a.x, t, z));
        free_ref(&r);
        free_prob(&p);
      }
}
END_TEST

/* The C backend's threads (kg_internal.h): above its threshold the quantizer, dequantizer and
** unswizzle split their work items (blocks; scale bytes) over the threads, each item on one
** thread, so 1 and 3 threads write the same bytes; the 3-thread quantize also passes the
** reference. (Built without OpenMP, one thread runs every call.) */
START_TEST(test_threads_same_bytes) {
  tu_rng rng;
  tu_rng_seed(&rng, 61);
  for (int format = 0; format < 2; format++) {
    fprob p = make_prob(format, KG_BF16, KG_SF_SWIZZLED_128X4, 0, 2, 1100, 4096, 3, 1);
    fill_x(&p, &rng, 6, 6);
    if (format == KG_FP4_NVFP4) set_global_scales(&p);
    const char *name = format == KG_FP4_NVFP4 ? "nvfp4 quantize" : "mxfp4 quantize";
    kg_exec e = tu_exec_c();
    const int saved = tu_set_threads(1);
    ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_SUCCESS);
    uint8_t *q1 = tu_alloc(p.q_bytes), *s1 = tu_alloc(p.a.sf_bytes);
    memcpy(q1, p.a.q, p.q_bytes);
    memcpy(s1, p.a.sf, p.a.sf_bytes);
    memset(p.a.q, POISON8, p.q_bytes);
    memset(p.a.sf, POISON8, p.a.sf_bytes);
    tu_set_threads(3);
    ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_SUCCESS);
    ck_assert_msg(memcmp(q1, p.a.q, p.q_bytes) == 0 && memcmp(s1, p.a.sf, p.a.sf_bytes) == 0,
                  "%s: 3 threads differ from 1", name);
    parity par = { 0, 0, 0.0 };
    check_quantize(&p, name, &par);
    /* dequantize the same bytes back into x */
    const size_t xb = p.x_elems * 2;
    uint8_t *x1 = tu_alloc(xb);
    tu_set_threads(1);
    ck_assert_int_eq(kg_fp4_dequantize(&p.a, &e), KG_SUCCESS);
    memcpy(x1, p.a.x, xb);
    tu_poison(p.a.x, KG_BF16, (int64_t)p.x_elems);
    tu_set_threads(3);
    ck_assert_int_eq(kg_fp4_dequantize(&p.a, &e), KG_SUCCESS);
    ck_assert_msg(memcmp(x1, p.a.x, xb) == 0, "%s: dequantize on 3 threads differs from 1", name);
    /* unswizzle the scales */
    const size_t lb = (size_t)(2 * 1100 * p.kv);
    uint8_t *l1 = tu_alloc(lb), *l3 = tu_alloc(lb);
    kg_sf_swizzle_args u = { KG_SF_SWIZZLED_128X4, 1100, p.kv, 2, p.a.sf, p.a.sf_bytes, l1, lb };
    tu_set_threads(1);
    ck_assert_int_eq(kg_sf_unswizzle(&u, &e), KG_SUCCESS);
    u.dst = l3;
    tu_set_threads(3);
    ck_assert_int_eq(kg_sf_unswizzle(&u, &e), KG_SUCCESS);
    tu_set_threads(saved);
    ck_assert_msg(memcmp(l1, l3, lb) == 0, "%s: unswizzle on 3 threads differs from 1", name);
    tu_free(q1); tu_free(s1); tu_free(x1); tu_free(l1); tu_free(l3);
    free_prob(&p);
  }
}
END_TEST

/* dequantize(quantize(x)) is within half an FP4 step of x (f32 both ways),
** saturated elements (MXFP4 round-down / OCP) decode to +-6 * scale. */
START_TEST(test_roundtrip_half_step) {
  fvar qs[64], ds[64];
  int nq = c_variants("quantize", qs, 64), nd = c_variants("dequantize", ds, 64), ran = 0;
  tu_rng rng;
  tu_rng_seed(&rng, 99);
  for (int i = 0; i < nq; i++) {
    if (qs[i].dtype != KG_F32) continue;
    const char *dname = NULL;
    for (int j = 0; j < nd; j++)
      if (ds[j].dtype == KG_F32 && ds[j].format == qs[i].format && ds[j].layout == qs[i].layout) dname = ds[j].name;
    ck_assert_ptr_nonnull(dname);
    fprob p = make_prob(qs[i].format, KG_F32, qs[i].layout, qs[i].round, 2, 37, 100, 1, 1);
    /* NVFP4: a dynamic range the E4M3 scales cover with normal values (their
    ** relative rounding error, 1/16, bounds the saturation); MXFP4: any */
    if (qs[i].format == KG_FP4_NVFP4) fill_x(&p, &rng, 4, 4);
    else fill_x(&p, &rng, 30, 30);
    if (qs[i].format == KG_FP4_NVFP4) set_global_scales(&p);
    kg_exec e = exec_for(qs[i].name);
    ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_SUCCESS);
    float *x0 = (float *)tu_alloc(p.x_elems * sizeof(float));
    memcpy(x0, p.a.x, p.x_elems * sizeof(float));
    tu_poison(p.a.x, KG_F32, (int64_t)p.x_elems);
    e = exec_for(dname);
    ck_assert_int_eq(kg_fp4_dequantize(&p.a, &e), KG_SUCCESS);
    fref r = ref_of(&p);
    const int bs = qs[i].format == KG_FP4_NVFP4 ? 16 : 32;
    double worst = 0.0;
    for (int64_t g = 0; g < p.a.batch; g++)
      for (int64_t m = 0; m < p.a.rows; m++)
        for (int64_t j = 0; j < p.a.k; j++) {
          const unsigned sb = ((uint8_t *)p.a.sf)[ref_off(&p, &r, g, m, j / bs)];
          const double s = qs[i].format == KG_FP4_NVFP4 ? (double)((float)ref_e4m3(sb) / p.gs[g])
                                                        : ldexp(1.0, (int)sb - 127);
          const double x = x0[xi(&p, g, m, j)], y = ((float *)p.a.x)[xi(&p, g, m, j)];
          if (s == 0.0) { ck_assert(y == 0.0); continue; }
          const double v = fabs(x) / s;   /* element units */
          if (v > 6.0) {
            ck_assert_msg(qs[i].format == KG_FP4_NVFP4 ? v <= 6.0 * (1.0 + 1.0 / 16) + 1e-6 : qs[i].round != 0,
                          "%s: |x| / scale = %.9g exceeds 6", qs[i].name, v);
            ck_assert_msg(fabs(y) == (float)(6.0 * s), "%s: saturated element decodes to %.9g, want %.9g", qs[i].name, y,
                          6.0 * s);
            if (qs[i].format == KG_FP4_MXFP4) continue;
          }
          const double err = fabs(x - y) / (ref_e2m1_step(fmin(v, 6.0)) * s);
          if (err > worst) worst = err;
          ck_assert_msg(err <= 0.5 + 1e-6, "%s: x %.9g -> %.9g is %.4f steps away (scale %.9g)", qs[i].name, x, y,
                        err, s);
        }
    free_ref(&r);
    tu_free(x0);
    free_prob(&p);
    ran++;
  }
  ck_assert_int_eq(ran, 3 * 4);
}
END_TEST

/* ---- validation and dispatch ------------------------------------------------------------- */

static fprob valid_prob(void) {
  fprob p = make_prob(KG_FP4_NVFP4, KG_BF16, KG_SF_SWIZZLED_128X4, -1, 1, 4, 32, 0, 0);
  for (int64_t i = 0; i < (int64_t)p.x_elems; i++) tu_set(p.a.x, KG_BF16, i, 1.0);
  return p;
}

/* A failing call writes nothing. */
static void expect_q(const kg_fp4_args *a, kg_status want, const char *what) {
  kg_exec e = tu_exec_c();
  kg_status st = kg_fp4_quantize(a, &e);
  ck_assert_msg(st == want, "%s: quantize returned %s, want %s", what, kg_status_string(st), kg_status_string(want));
  if (a && st != KG_SUCCESS && a->q && a->sf) {
    ck_assert_msg(((const uint8_t *)a->q)[0] == POISON8, "%s: q written on failure", what);
    ck_assert_msg(((const uint8_t *)a->sf)[0] == POISON8, "%s: sf written on failure", what);
  }
  char buf[8192];
  ck_assert_int_eq(kg_explain(KG_OP_FP4_QUANTIZE, a, &e, buf, sizeof buf), want);
  if (want == KG_ERROR_INVALID_ARGUMENT || want == KG_ERROR_INVALID_PROBLEM)
    ck_assert_msg(strncmp(buf, "arguments: ", 11) == 0, "%s: explain says:\n%s", what, buf);
}

START_TEST(test_validation_statuses) {
  fprob p = valid_prob();
  kg_fp4_args b;
  expect_q(NULL, KG_ERROR_INVALID_ARGUMENT, "NULL args");
  b = p.a; b.format = (kg_fp4_format)5; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "bad format");
  b = p.a; b.sf_layout = (kg_sf_layout)5; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "bad layout");
  b = p.a; b.dtype = (kg_dtype)9; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "bad dtype");
  b = p.a; b.x = NULL; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "NULL x");
  b = p.a; b.q = NULL; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "NULL q");
  b = p.a; b.sf = NULL; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "NULL sf");
  b = p.a; b.rows = 0; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "rows 0");
  b = p.a; b.k = 0; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "k 0");
  b = p.a; b.batch = 0; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "batch 0");
  b = p.a; b.k = 31; b.ldx = 32; expect_q(&b, KG_ERROR_INVALID_PROBLEM, "odd k");
  b = p.a; b.ldx = 31; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "ldx < k");
  b = p.a; b.ldq = 15; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "ldq < k/2");
  b = p.a; b.sf_bytes = 8; expect_q(&b, KG_ERROR_INVALID_PROBLEM, "sf_bytes of a linear buffer with 128x4");
  b = p.a; b.sf_bytes = p.a.sf_bytes + 1; expect_q(&b, KG_ERROR_INVALID_PROBLEM, "sf_bytes one too many");
  b = p.a; b.sf_layout = KG_SF_SWIZZLED_8X4; expect_q(&b, KG_ERROR_INVALID_PROBLEM, "8x4 layout with a 128x4 size");
  b = p.a; b.batch = 2; b.batch_stride_x = 128; b.batch_stride_q = -1;
  expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "negative batch stride");
  b = p.a; b.batch = 2; b.batch_stride_x = 0; b.batch_stride_q = 32;   /* q batches overlap (rows*ldq = 64) */
  b.sf_bytes = 1024;
  expect_q(&b, KG_ERROR_INVALID_PROBLEM, "overlapping q batches");
  b = p.a; b.rows = INT64_MAX / 4; b.ldx = INT64_MAX / 4;
  expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "extent overflow");
  /* MXFP4: global_scale must be NULL; mx_round is checked */
  fprob m = make_prob(KG_FP4_MXFP4, KG_BF16, KG_SF_LINEAR, 0, 1, 2, 64, 0, 0);
  for (int64_t i = 0; i < (int64_t)m.x_elems; i++) tu_set(m.a.x, KG_BF16, i, 0.5);
  float gs = 1.0f;
  b = m.a; b.global_scale = &gs; expect_q(&b, KG_ERROR_INVALID_PROBLEM, "MXFP4 with a global scale");
  b = m.a; b.mx_round = (kg_mx_scale_round)3; expect_q(&b, KG_ERROR_INVALID_ARGUMENT, "bad mx_round");
  b = p.a; b.mx_round = (kg_mx_scale_round)3; expect_q(&b, KG_SUCCESS, "NVFP4 ignores mx_round");
  b = m.a; expect_q(&b, KG_SUCCESS, "MXFP4 baseline");
  /* exec */
  ck_assert_int_eq(kg_fp4_quantize(&p.a, NULL), KG_ERROR_INVALID_ARGUMENT);
  kg_exec e = tu_exec_c();
  e.backend = (kg_backend)9;
  ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_ERROR_INVALID_ARGUMENT);
  if (!kg_backend_available(KG_BACKEND_CUDA)) {
    e = tu_exec_c();
    e.backend = KG_BACKEND_CUDA;
    ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_ERROR_BACKEND_UNAVAILABLE);
  }
  /* typed pointers aligned to their elements (kg.h), on the C backend too; q and sf are bytes */
  memset(p.a.q, POISON8, p.q_bytes);   /* the calls above that passed wrote them */
  memset(p.a.sf, POISON8, p.a.sf_bytes);
  b = p.a; b.x = (char *)p.a.x + 1; expect_q(&b, KG_ERROR_MISALIGNED_OPERAND, "bf16 x at an odd address");
  {
    float gs[2] = { 1.0f, 1.0f };
    b = p.a; b.global_scale = (const float *)((const char *)gs + 1);
    expect_q(&b, KG_ERROR_MISALIGNED_OPERAND, "global_scale one byte into a float");
    char buf[512];
    kg_explain(KG_OP_FP4_QUANTIZE, &b, &e, buf, sizeof buf);
    ck_assert_msg(strstr(buf, "global_scale = ") && strstr(buf, "is not aligned to its 4-byte elements"), "%s", buf);
  }
  {
    fprob f = make_prob(KG_FP4_NVFP4, KG_F32, KG_SF_LINEAR, -1, 1, 4, 32, 0, 0);
    b = f.a; b.x = (char *)f.a.x + 2; expect_q(&b, KG_ERROR_MISALIGNED_OPERAND, "f32 x 2 bytes in");
    free_prob(&f);
  }
  {
    /* q and sf one byte into buffers of their own: the same bytes as the aligned call */
    e = tu_exec_c();
    ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_SUCCESS);
    uint8_t *q1 = (uint8_t *)tu_alloc(p.q_bytes + 1), *s1 = (uint8_t *)tu_alloc(p.a.sf_bytes + 1);
    b = p.a; b.q = q1 + 1; b.sf = s1 + 1;
    ck_assert_int_eq(kg_fp4_quantize(&b, &e), KG_SUCCESS);
    ck_assert(memcmp(q1 + 1, p.a.q, p.q_bytes) == 0);
    ck_assert(memcmp(s1 + 1, p.a.sf, p.a.sf_bytes) == 0);
    tu_free(q1);
    tu_free(s1);
  }
  /* dequantize: same checks; its output batches must not overlap */
  e = tu_exec_c();
  b = p.a; b.batch = 2; b.batch_stride_x = 64; b.batch_stride_q = 64; b.sf_bytes = 1024;
  ck_assert_int_eq(kg_fp4_dequantize(&b, &e), KG_ERROR_INVALID_PROBLEM);
  free_prob(&m);
  free_prob(&p);
}
END_TEST

START_TEST(test_dispatch_forced_and_explain) {
  fprob p = valid_prob();
  kg_exec e = tu_exec_c();
  const char *name = NULL;
  ck_assert_int_eq(kg_fp4_select(KG_OP_FP4_QUANTIZE, &p.a, &e, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_fp4_c_quantize_nvfp4_bf16_sf128x4");
  ck_assert_int_eq(kg_fp4_select(KG_OP_GEMM, &p.a, &e, &name), KG_ERROR_INVALID_ARGUMENT);
  ck_assert_int_eq(kg_fp4_select(KG_OP_FP4_QUANTIZE, &p.a, &e, NULL), KG_ERROR_INVALID_ARGUMENT);
  char buf[16384];
  ck_assert_int_eq(kg_explain(KG_OP_FP4_QUANTIZE, &p.a, &e, buf, sizeof buf), KG_SUCCESS);
  ck_assert_msg(strstr(buf, "kg_fp4_c_quantize_nvfp4_bf16_sf128x4: chosen (specs/fp4.lua:") != NULL, "%s", buf);
  ck_assert_msg(strstr(buf, "kg_fp4_c_quantize_mxfp4_bf16_sf128x4_rup: rejected: format mxfp4, wanted nvfp4"), "%s", buf);
  ck_assert_msg(strstr(buf, "kg_fp4_c_quantize_nvfp4_bf16_sflinear: not considered: "
                            "kg_fp4_c_quantize_nvfp4_bf16_sf128x4 chosen first"), "%s", buf);
  ck_assert_msg(strstr(buf, "kg_fp4_c_dequantize") == NULL && strstr(buf, "kg_gemm_") == NULL,
                "explain lists variants of other ops:\n%s", buf);
  /* every line names a variant of this op, or says why none */
  for (const char *l = buf; *l; l = strchr(l, '\n') + 1) ck_assert_msg(strncmp(l, "kg_fp4_", 7) == 0, "line: %s", l);
  fprob f = make_prob(KG_FP4_NVFP4, KG_F32, KG_SF_LINEAR, -1, 1, 2, 16, 0, 0);
  ck_assert_int_eq(kg_explain(KG_OP_FP4_QUANTIZE, &f.a, &e, buf, sizeof buf), KG_SUCCESS);
  ck_assert_msg(strstr(buf, "kg_fp4_c_quantize_nvfp4_bf16_sf128x4: rejected: dtype bf16, wanted f32"), "%s", buf);
  ck_assert_msg(strstr(buf, "kg_fp4_c_quantize_nvfp4_f32_sf128x4: rejected: scale layout 128x4, wanted linear"), "%s", buf);
  ck_assert_msg(strstr(buf, "kg_fp4_c_quantize_nvfp4_f32_sflinear: chosen"), "%s", buf);
  free_prob(&f);
  e.variant = "kg_fp4_c_quantize_nvfp4_bf16_sf128x4";
  ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_SUCCESS);
  e.variant = "kg_fp4_c_quantize_nvfp4_bf16_sflinear";   /* exists, wrong layout */
  ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_ERROR_NOT_SUPPORTED);
  e.variant = "kg_fp4_c_dequantize_nvfp4_bf16_sf128x4";  /* another op's variant */
  ck_assert_int_eq(kg_fp4_quantize(&p.a, &e), KG_ERROR_NOT_SUPPORTED);
  e.variant = "no_such_variant";
  ck_assert_int_eq(kg_explain(KG_OP_FP4_QUANTIZE, &p.a, &e, buf, sizeof buf), KG_ERROR_NOT_SUPPORTED);
  ck_assert_msg(strstr(buf, "no variant named 'no_such_variant'") != NULL, "%s", buf);
  /* the MXFP4 scale rule is part of the key */
  fprob m = make_prob(KG_FP4_MXFP4, KG_F16, KG_SF_SWIZZLED_8X4, KG_MX_ROUND_OCP, 1, 3, 64, 0, 0);
  e = tu_exec_c();
  ck_assert_int_eq(kg_fp4_select(KG_OP_FP4_QUANTIZE, &m.a, &e, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_fp4_c_quantize_mxfp4_f16_sf8x4_rocp");
  ck_assert_int_eq(kg_fp4_select(KG_OP_FP4_DEQUANTIZE, &m.a, &e, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_fp4_c_dequantize_mxfp4_f16_sf8x4");
  /* the scale conversions: the swizzled layout is the key */
  uint8_t lin[8], sw[512];
  kg_sf_swizzle_args s = { KG_SF_SWIZZLED_128X4, 2, 3, 1, lin, 6, sw, 512 };
  ck_assert_int_eq(kg_fp4_select(KG_OP_SF_SWIZZLE, &s, &e, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_fp4_c_swizzle_sf128x4");
  ck_assert_int_eq(kg_fp4_select(KG_OP_SF_UNSWIZZLE, &s, &e, &name), KG_ERROR_INVALID_PROBLEM);  /* sizes swapped */
  s.layout = KG_SF_SWIZZLED_8X4; s.dst_bytes = 32;
  ck_assert_int_eq(kg_fp4_select(KG_OP_SF_SWIZZLE, &s, &e, &name), KG_SUCCESS);
  ck_assert_str_eq(name, "kg_fp4_c_swizzle_sf8x4");
  free_prob(&m);
  free_prob(&p);
}
END_TEST

Suite *fp4_suite(void) {
  Suite *s = suite_create("FP4Test");
  TCase *tc = tcase_create("fp4");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_e2m1_decision_points);
  tcase_add_test(tc, test_e2m1_exhaustive_f16_host);
  tcase_add_test(tc, test_e2m1_exhaustive_generated);
  tcase_add_test(tc, test_nvfp4_global_scale);
  tcase_add_test(tc, test_nvfp4_scale_every_e4m3_decision);
  tcase_add_test(tc, test_mx_scale_rules);
  tcase_add_test(tc, test_sf_size_and_offsets);
  tcase_add_test(tc, test_sf_view_128x4);
  tcase_add_test(tc, test_swizzle_unswizzle);
  tcase_add_test(tc, test_reswizzle_shards);
  tcase_add_test(tc, test_sf_conversion_validation);
  tcase_add_test(tc, test_c_variants_complete);
  tcase_add_test(tc, test_quantize_nvfp4);
  tcase_add_test(tc, test_quantize_mxfp4);
  tcase_add_test(tc, test_dequantize);
  tcase_add_test(tc, test_roundtrip_half_step);
  tcase_add_test(tc, test_threads_same_bytes);
  tcase_add_test(tc, test_validation_statuses);
  tcase_add_test(tc, test_dispatch_forced_and_explain);
  suite_add_tcase(s, tc);
  return s;
}
