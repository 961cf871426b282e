/*
** attn_ref.h -- double-precision reference of the decode-attention family,
** written here from kg.h's "Decode attention" section and
** ../shared/reference/attention.md, independent of the runtime and of the
** generated code: f16 / bf16 decoding, RoPE frequencies and rotation, the
** paged-cache slot formula, attention over a token set with its error bound,
** and the merge of softmax states. Static functions only: included by the
** Check suites (tests/c/check_attn_*.c) and by tests/gpu/test_gpu_attn.c.
**
** Error model (ar_attend): the kernels compute in f32 from the stored inputs,
** so the reference reads exactly the stored values and bounds what f32 can
** change:
**   - RoPE: f_j rounded to f32, the angle pos * f_j in f32, f32 sin / cos:
**     a rotated element moves by at most (|x_lo| + |x_hi|)(|angle| 2^-22 + 2^-21);
**   - the f32 dot product: (D + 8) 2^-24 sum |q_i k_i|;
**   - logit scale, exp2 / log2 / tanh approximations (eps_tanh: absolute
**     error of tanh, per backend), giving a bound ds on every base-2 logit;
**   - weights 2^(s - m) then move by at most 2 ln2 ds relatively, so an output
**     feature moves by (4 ln2 ds + 2^-18) sum_t w_t |v_t| (2^-18 covers the f32
**     sums and the split-KV merge), plus the final rounding u |o|;
**   - eps_w: relative rounding of each weight before the p.v product (0 when
**     the kernel keeps them in f32; the element type's unit on tensor cores)
**     adds eps_w sum_t w_t |v_t|.
**   - lse: 1.5 ds + 2^-19 (1 + |lse| + |m| + log2 d).
** The bound is per element; NaN never passes (every check is !(err <= tol)).
*/
#ifndef KG_ATTN_REF_H
#define KG_ATTN_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kg.h"

#define AR_MAX_D 256

/* ---- element values ------------------------------------------------------------ */

static inline double ar_f16(uint16_t h) {
  const int e = (h >> 10) & 31, m = h & 1023;
  const double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
  return (h & 0x8000u) ? -v : v;
}

static inline double ar_bf16(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* Value of element i of a buffer of type t, decoded here. */
static inline double ar_get(const void *buf, kg_dtype t, int64_t i) {
  switch (t) {
    case KG_F32: return ((const float *)buf)[i];
    case KG_F16: return ar_f16(((const uint16_t *)buf)[i]);
    case KG_BF16: return ar_bf16(((const uint16_t *)buf)[i]);
  }
  return NAN;
}

/* Stores v rounded to t (inputs only: the reference reads back what is stored). */
static inline void ar_put(void *buf, kg_dtype t, int64_t i, double v) {
  switch (t) {
    case KG_F32: ((float *)buf)[i] = (float)v; break;
    case KG_F16: ((uint16_t *)buf)[i] = kg_f32_to_f16_bits((float)v); break;
    case KG_BF16: ((uint16_t *)buf)[i] = kg_f32_to_bf16_bits((float)v); break;
  }
}

/* Unit roundoff of an output of type t. */
static inline double ar_unit(kg_dtype t) { return t == KG_F32 ? ldexp(1.0, -24) : t == KG_F16 ? ldexp(1.0, -11) : ldexp(1.0, -8); }

static inline const char *ar_dtype_name(kg_dtype t) { return t == KG_F32 ? "f32" : t == KG_F16 ? "f16" : "bf16"; }

/* ---- RoPE ------------------------------------------------------------------------ */

/* Frequencies f_j (j < rd/2) of kg.h's formula, in double, with the 0 defaults. */
static inline void ar_rope_freqs(const kg_rope *r, int64_t head_dim, double *f) {
  const int64_t rd = r->rotary_dim ? r->rotary_dim : head_dim;
  const double scale = r->scale != 0.0f ? r->scale : 1.0, theta = r->theta != 0.0f ? r->theta : 10000.0;
  const double low = r->low_freq_factor != 0.0f ? r->low_freq_factor : 1.0;
  const double high = r->high_freq_factor != 0.0f ? r->high_freq_factor : 4.0;
  const double old = r->old_context_len != 0.0f ? r->old_context_len : 8192.0;
  const double pi = 3.14159265358979323846;
  for (int64_t j = 0; j < rd / 2; j++) {
    const double base = pow(theta, -2.0 * (double)j / (double)rd);
    if (r->mode == KG_ROPE_LLAMA31) {
      double smooth = base * (old / (2.0 * pi * high - 2.0 * pi * low)) - 1.0 / (high / low - 1.0);
      if (smooth < 0.0) smooth = 0.0;
      if (smooth > 1.0) smooth = 1.0;
      f[j] = (1.0 - smooth) * base / scale + smooth * base;
    } else {
      f[j] = base / scale;
    }
  }
}

/* Pair (lo, hi) of pair index j. */
static inline void ar_rope_pair(int rd, int interleave, int j, int *lo, int *hi) {
  if (interleave) { *lo = 2 * j; *hi = 2 * j + 1; }
  else { *lo = j; *hi = j + rd / 2; }
}

/* y = RoPE(x) at position pos (features >= rd copied); err[i] (may be NULL)
** gets the f32 bound of kernels on y[i] (see the header). */
static inline void ar_rope_row(const double *x, double *y, double *err, int D, int rd, int interleave, const double *f,
                        double pos) {
  for (int i = 0; i < D; i++) {
    y[i] = x[i];
    if (err) err[i] = 0.0;
  }
  for (int j = 0; j < rd / 2; j++) {
    int lo, hi;
    ar_rope_pair(rd, interleave, j, &lo, &hi);
    const double a = pos * f[j], c = cos(a), s = sin(a);
    y[lo] = x[lo] * c - x[hi] * s;
    y[hi] = x[hi] * c + x[lo] * s;
    if (err) err[lo] = err[hi] = (fabs(x[lo]) + fabs(x[hi])) * (fabs(a) * ldexp(1.0, -22) + ldexp(1.0, -21));
  }
}

/* ---- paged cache --------------------------------------------------------------------- */

/* Element offset of (page, head, slot) by kg.h's formula (stride_page 0: default). */
static inline int64_t ar_kv_offset(kg_kv_layout l, int64_t H, int64_t P, int64_t D, int64_t stride_page, int64_t page,
                            int64_t head, int64_t slot) {
  const int64_t sp = stride_page ? stride_page : H * P * D;
  return l == KG_KV_NHD ? page * sp + slot * H * D + head * D : page * sp + head * P * D + slot * D;
}

/* ---- attention over a token set ---------------------------------------------------------- */

typedef struct ar_attn_opts {
  int D;
  double sm_scale;      /* resolved (kg.h: 0 means 1/sqrt(D)) */
  double cap;           /* 0: no soft cap */
  int rd, interleave;   /* rd 0: no RoPE */
  const double *freq;
  double q_pos;
  double eps_tanh;      /* absolute error bound of the backend's tanh */
  kg_dtype out;         /* output element type (rounding of o) */
  double eps_w;         /* relative rounding of the weights before p.v (0: f32) */
} ar_attn_opts;

/* o[D], lse of q against tokens i < n (K, V rows of D doubles, token i at
** position t0 + i); tol[D] and *lse_tol the bounds of the header. n == 0: o = 0,
** lse = -inf, tolerances 0. */
static inline void ar_attend(const ar_attn_opts *op, const double *q, const double *K, const double *V, int64_t n, int64_t t0,
                      double *o, double *lse, double *tol, double *lse_tol) {
  const int D = op->D;
  const double log2e = 1.4426950408889634, ln2 = 0.6931471805599453;
  for (int i = 0; i < D; i++) { o[i] = 0.0; tol[i] = 0.0; }
  *lse = -INFINITY;
  *lse_tol = 0.0;
  if (n == 0) return;
  double qr[AR_MAX_D], qe[AR_MAX_D], kr[AR_MAX_D], ke[AR_MAX_D];
  if (op->rd > 0) ar_rope_row(q, qr, qe, D, op->rd, op->interleave, op->freq, op->q_pos);
  else for (int i = 0; i < D; i++) { qr[i] = q[i]; qe[i] = 0.0; }
  double *s = (double *)malloc((size_t)n * sizeof *s);
  if (!s) abort();
  double m = -INFINITY, ds = 0.0;
  for (int64_t t = 0; t < n; t++) {
    const double *k = K + t * D;
    if (op->rd > 0) ar_rope_row(k, kr, ke, D, op->rd, op->interleave, op->freq, (double)(t0 + t));
    else for (int i = 0; i < D; i++) { kr[i] = k[i]; ke[i] = 0.0; }
    double dot = 0.0, a = 0.0, r = 0.0;
    for (int i = 0; i < D; i++) {
      dot += qr[i] * kr[i];
      a += fabs(qr[i] * kr[i]);
      r += qe[i] * fabs(kr[i]) + fabs(qr[i]) * ke[i];
    }
    double x = dot * op->sm_scale;
    if (op->cap > 0.0) x = op->cap * tanh(x / op->cap);
    s[t] = x * log2e;
    double e = log2e * fabs(op->sm_scale) * (a * (D + 8) * ldexp(1.0, -24) + r) + fabs(s[t]) * ldexp(1.0, -21) +
               ldexp(1.0, -21);
    if (op->cap > 0.0) e += op->cap * log2e * op->eps_tanh;
    if (e > ds) ds = e;
    if (s[t] > m) m = s[t];
  }
  double d = 0.0;
  for (int64_t t = 0; t < n; t++) d += exp2(s[t] - m);
  for (int64_t t = 0; t < n; t++) {
    const double w = exp2(s[t] - m) / d;
    for (int i = 0; i < D; i++) {
      o[i] += w * V[t * D + i];
      tol[i] += w * fabs(V[t * D + i]);
    }
  }
  for (int i = 0; i < D; i++)
    tol[i] = ar_unit(op->out) * fabs(o[i]) + (4.0 * ln2 * ds + ldexp(1.0, -18) + op->eps_w) * tol[i] + 1e-30;
  *lse = m + log2(d);
  /* |m| and log2(d) may cancel in lse: the bound scales with both terms */
  *lse_tol = 1.5 * ds + ldexp(1.0, -19) * (1.0 + fabs(*lse) + fabs(m) + log2(d));
  free(s);
}

/* ---- merging states ----------------------------------------------------------------------------- */

/* Merge cnt states (v_i rows of dim, s_i lse) by kg.h's rule in double. */
static inline void ar_merge(int64_t cnt, const double *const *v, const double *s, int64_t dim, double *out, double *s_out) {
  double m = -INFINITY;
  for (int64_t i = 0; i < cnt; i++) if (s[i] > m) m = s[i];
  for (int64_t f = 0; f < dim; f++) out[f] = 0.0;
  if (m == -INFINITY) { *s_out = -INFINITY; return; }
  double w = 0.0;
  for (int64_t i = 0; i < cnt; i++) w += exp2(s[i] - m);
  for (int64_t i = 0; i < cnt; i++) {
    const double wi = exp2(s[i] - m) / w;
    for (int64_t f = 0; f < dim; f++) out[f] += wi * v[i][f];
  }
  *s_out = m + log2(w);
}

/* ---- test data ------------------------------------------------------------------------------------ */

/* splitmix64, fixed seeds */
static inline uint64_t ar_rng(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static inline double ar_uniform(uint64_t *s) { return (double)(ar_rng(s) >> 11) * (1.0 / 9007199254740992.0); }
static inline double ar_sym(uint64_t *s) { return 2.0 * ar_uniform(s) - 1.0; }   /* (-1, 1) */
static inline int64_t ar_int(uint64_t *s, int64_t lo, int64_t hi) { return lo + (int64_t)(ar_rng(s) % (uint64_t)(hi - lo + 1)); }

/* A paged cache in host memory for `batch` requests of lengths len[b]: each
** request gets ceil(len / P) pages drawn from a shuffled pool of num_pages
** (extra pages stay unowned), K and V hold random values in (-1, 1) in every
** owned slot and NaN in every slot no request owns (slots past a request's
** end included), so a kernel reading outside the requests produces NaN. */
typedef struct ar_cache {
  kg_kv_layout layout;
  kg_dtype dtype;
  int64_t H, P, D, num_pages, stride_page, batch;
  int32_t *indices, *indptr, *last;
  int64_t *len;
  void *k, *v;
  size_t bytes;            /* of k (and of v) */
} ar_cache;

static void *ar_xalloc(size_t n) {
  void *p = calloc(n ? n : 1, 1);
  if (!p) abort();
  return p;
}

static inline void ar_cache_free(ar_cache *c) {
  free(c->indices); free(c->indptr); free(c->last); free(c->len); free(c->k); free(c->v);
  memset(c, 0, sizeof *c);
}

/* extra_pages: unowned pages; pad: elements added to stride_page (0: default stride). */
static inline void ar_cache_build(ar_cache *c, kg_kv_layout layout, kg_dtype t, int64_t H, int64_t P, int64_t D,
                           int64_t batch, const int64_t *len, int64_t extra_pages, int64_t pad, uint64_t seed) {
  memset(c, 0, sizeof *c);
  c->layout = layout; c->dtype = t; c->H = H; c->P = P; c->D = D; c->batch = batch;
  c->indptr = (int32_t *)ar_xalloc((size_t)(batch + 1) * 4);
  c->last = (int32_t *)ar_xalloc((size_t)batch * 4);
  c->len = (int64_t *)ar_xalloc((size_t)batch * 8);
  int64_t pages = 0;
  for (int64_t b = 0; b < batch; b++) {
    c->len[b] = len[b];
    c->indptr[b] = (int32_t)pages;
    pages += (len[b] + P - 1) / P;
    c->last[b] = len[b] > 0 ? (int32_t)(len[b] - (len[b] - 1) / P * P) : 0;
  }
  c->indptr[batch] = (int32_t)pages;
  c->num_pages = pages + extra_pages;
  if (c->num_pages < 1) c->num_pages = 1;
  c->stride_page = pad ? H * P * D + pad : 0;
  const int64_t sp = H * P * D + pad;
  c->indices = (int32_t *)ar_xalloc((size_t)(pages ? pages : 1) * 4);
  int32_t *perm = (int32_t *)ar_xalloc((size_t)c->num_pages * 4);
  for (int64_t i = 0; i < c->num_pages; i++) perm[i] = (int32_t)i;
  for (int64_t i = c->num_pages - 1; i > 0; i--) {
    const int64_t j = ar_int(&seed, 0, i);
    const int32_t x = perm[i]; perm[i] = perm[j]; perm[j] = x;
  }
  for (int64_t i = 0; i < pages; i++) c->indices[i] = perm[i];
  free(perm);
  const int64_t elems = c->num_pages * sp;
  c->bytes = (size_t)elems * kg_dtype_size(t);
  c->k = ar_xalloc(c->bytes);
  c->v = ar_xalloc(c->bytes);
  for (int64_t i = 0; i < elems; i++) { ar_put(c->k, t, i, NAN); ar_put(c->v, t, i, NAN); }
  for (int64_t b = 0; b < batch; b++)
    for (int64_t tok = 0; tok < len[b]; tok++) {
      const int64_t page = c->indices[c->indptr[b] + tok / P];
      for (int64_t h = 0; h < H; h++) {
        const int64_t off = ar_kv_offset(layout, H, P, D, c->stride_page, page, h, tok % P);
        for (int64_t f = 0; f < D; f++) {
          ar_put(c->k, t, off + f, ar_sym(&seed));
          ar_put(c->v, t, off + f, ar_sym(&seed));
        }
      }
    }
}

/* Element offset of token tok of request b, head h (tok < len[b]). */
static inline int64_t ar_cache_offset(const ar_cache *c, int64_t b, int64_t tok, int64_t h) {
  const int64_t page = c->indices[c->indptr[b] + tok / c->P];
  return ar_kv_offset(c->layout, c->H, c->P, c->D, c->stride_page, page, h, tok % c->P);
}

/* Rows of tokens t0 .. t1-1 of request b, head h, as doubles: K, V [t1 - t0][D]. */
static inline void ar_cache_gather(const ar_cache *c, int64_t b, int64_t h, int64_t t0, int64_t t1, double *K, double *V) {
  for (int64_t t = t0; t < t1; t++) {
    const int64_t off = ar_cache_offset(c, b, t, h);
    for (int64_t f = 0; f < c->D; f++) {
      K[(t - t0) * c->D + f] = ar_get(c->k, c->dtype, off + f);
      V[(t - t0) * c->D + f] = ar_get(c->v, c->dtype, off + f);
    }
  }
}

/* The kg.h description of the cache (pointers as given: host or device copies). */
static inline kg_paged_kv ar_cache_desc(const ar_cache *c, void *k, void *v, const int32_t *indices, const int32_t *indptr,
                                 const int32_t *last) {
  kg_paged_kv kv;
  memset(&kv, 0, sizeof kv);
  kv.layout = c->layout; kv.dtype = c->dtype;
  kv.num_pages = c->num_pages; kv.page_size = c->P; kv.num_kv_heads = c->H; kv.head_dim = c->D;
  kv.k_data = k; kv.v_data = v; kv.stride_page = c->stride_page; kv.batch = c->batch;
  kv.indices = indices; kv.indptr = indptr; kv.last_page_len = last;
  return kv;
}

#endif /* KG_ATTN_REF_H */
