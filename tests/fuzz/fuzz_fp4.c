/* Argument fuzz of the FP4 entry points (kg_gemm_fp4, kg_dualgemm_fp4 with their size and
** select queries, kg_fp4_quantize / kg_fp4_dequantize, kg_sf_swizzle / unswizzle / reswizzle,
** kg_sf_size / kg_sf_offset / the 6-D view)
** on the C backend, built with AddressSanitizer and UndefinedBehaviorSanitizer (make fuzz).
** Each call gets arguments drawn around a valid problem: small sizes, lds at, above and below
** their minimum, unknown enum values, NULL pointers, scale buffers of the wrong size, batch
** strides that overlap, and sizes whose extents overflow int64. Every buffer is allocated to
** exactly the extent the documented contract gives for the arguments passed (kg.h), so a read
** or write outside the contract stops the run (ASan), as does undefined behaviour (UBSan).
** A call must return a known status; one that succeeds with an overflowing size is a finding.
** Usage: fuzz_fp4 [iterations [seed]]; exit 0 when nothing was found. */
#include "fuzz_util.h"

/* elements spanned by rows x cols with row stride ld (ld 0: one row); -1 on overflow */
static int64_t span(int64_t rows, int64_t cols, int64_t ld) {
  if (rows <= 0 || cols <= 0) return 0;
  int64_t a, e;
  if (__builtin_mul_overflow(rows - 1, ld, &a) || __builtin_add_overflow(a, cols, &e)) return -1;
  return e;
}
static int64_t times(int64_t e, int64_t s) { int64_t r; return e < 0 || __builtin_mul_overflow(e, s, &r) ? -1 : r; }

static const kg_fp4_format FMTS[] = { KG_FP4_NVFP4, KG_FP4_MXFP4 };
static const kg_sf_layout LAYS[] = { KG_SF_LINEAR, KG_SF_SWIZZLED_128X4, KG_SF_SWIZZLED_8X4 };

/* ceil(k / 2) for any k (negative: k) */
static int64_t hup(int64_t k) { return k < 0 ? k : k / 2 + (k & 1); }

static void fuzz_gemm(void) {
  kg_gemm_fp4_args a; memset(&a, 0, sizeof a);
  int huge = 0;
  a.format = coin(3) ? (kg_fp4_format)pick(-2, 5) : FMTS[rnd() % 2];
  a.sf_layout = coin(3) ? (kg_sf_layout)pick(-2, 5) : LAYS[rnd() % 3];
  a.dtype = coin(3) ? (kg_dtype)pick(-2, 6) : (coin(50) ? KG_BF16 : KG_F16);
  a.m = maybe_evil(pick(1, 40), 4); a.n = maybe_evil(pick(1, 70), 4); a.k = maybe_evil(2 * pick(1, 80) - (coin(5) ? 1 : 0), 4);
  a.lda = maybe_evil(sadd(a.k, coin(30) ? pick(-2, 9) : 0), 4);
  a.ldb = maybe_evil(sadd(a.k / 2, coin(30) ? pick(-2, 9) : 0), 4);
  a.ldc = maybe_evil(coin(10) ? 0 : sadd(a.n, coin(30) ? pick(-2, 5) : 0), 4);
  a.ldd = maybe_evil(sadd(a.n, coin(30) ? pick(-2, 5) : 0), 4);
  a.alpha = 1.0f; a.beta = coin(50) ? 0.0f : 0.5f;
  a.a_fp4 = coin(30) ? 1 : coin(2) ? (int)pick(2, 9) : 0;
  a.sf_layout_a = coin(3) ? (kg_sf_layout)pick(-2, 5) : LAYS[rnd() % 3];
  /* buffers at the documented extents of what is passed */
  int64_t kv = kg_fp4_kv(a.format, a.k);
  size_t sfb = 0, sfa = 0;
  if (kg_sf_size(a.sf_layout, a.n, kv, 1, &sfb) != KG_SUCCESS) sfb = 64;
  if (coin(10)) sfb = (size_t)pick(0, 4096);
  a.sf_b_bytes = sfb;
  a.sf_b = buf((int64_t)sfb, &huge);
  if (a.a_fp4) {
    if (kg_sf_size(a.sf_layout_a, a.m, kv, 1, &sfa) != KG_SUCCESS) sfa = 64;
    if (coin(10)) sfa = (size_t)pick(0, 4096);
    a.sf_a_bytes = sfa; a.sf_a = coin(3) ? NULL : buf((int64_t)sfa, &huge);
  } else if (coin(3)) { a.sf_a = buf(16, &huge); a.sf_a_bytes = 16; }
  int64_t ea = a.a_fp4 ? span(a.m, hup(a.k), a.lda) : times(span(a.m, a.k, a.lda), 2);
  a.a = coin(2) ? NULL : buf(ea, &huge);
  a.b = coin(2) ? NULL : buf(span(a.n, hup(a.k), a.ldb), &huge);
  a.c = (a.beta != 0 && !coin(3)) || coin(5) ? buf(times(a.ldc == 0 ? a.n : span(a.m, a.n, a.ldc), 2), &huge) : NULL;
  a.d = coin(2) ? NULL : buf(times(span(a.m, a.n, a.ldd), 2), &huge);
  float gsv[2] = { 2.0f, 0.5f };
  static const float neg[1] = { -1.0f };
  if (coin(30)) a.global_scale_b = coin(5) ? neg : gsv;
  if (coin(20)) a.global_scale_a = gsv;
  kg_exec e = tu_exec_c();
  if (coin(3)) e.backend = (kg_backend)pick(-1, 7);
  char desc[512];
  snprintf(desc, sizeof desc, "m %lld n %lld k %lld lda %lld ldb %lld ldc %lld ldd %lld fmt %d lay %d dt %d a_fp4 %d lay_a %d sfb %zu sfa %zu",
           (long long)a.m, (long long)a.n, (long long)a.k, (long long)a.lda, (long long)a.ldb, (long long)a.ldc,
           (long long)a.ldd, (int)a.format, (int)a.sf_layout, (int)a.dtype, a.a_fp4, (int)a.sf_layout_a, sfb, sfa);
  size_t ws = 0;
  const char *nm = NULL;
  report("gemm_fp4_workspace_size", kg_gemm_fp4_workspace_size(&a, &e, &ws), 0, desc);
  report("gemm_fp4_select", kg_gemm_fp4_select(&a, &e, &nm), 0, desc);
  report("gemm_fp4", kg_gemm_fp4(&a, &e), huge, desc);
  fz_free(a.a); fz_free(a.b); fz_free(a.c); fz_free(a.d); fz_free(a.sf_b); fz_free(a.sf_a);
}

static void fuzz_quant(int dequant) {
  kg_fp4_args a; memset(&a, 0, sizeof a);
  int huge = 0;
  a.format = coin(3) ? (kg_fp4_format)pick(-2, 5) : FMTS[rnd() % 2];
  a.sf_layout = coin(3) ? (kg_sf_layout)pick(-2, 5) : LAYS[rnd() % 3];
  a.mx_round = coin(3) ? (kg_mx_scale_round)pick(-2, 6) : (kg_mx_scale_round)pick(0, 2);
  a.dtype = coin(3) ? (kg_dtype)pick(-2, 6) : (kg_dtype[]){ KG_F32, KG_F16, KG_BF16 }[rnd() % 3];
  a.batch = maybe_evil(pick(1, 3), 4);
  a.rows = maybe_evil(pick(1, 50), 4); a.k = maybe_evil(2 * pick(1, 70) - (coin(5) ? 1 : 0), 4);
  a.ldx = maybe_evil(sadd(a.k, coin(30) ? pick(-2, 9) : 0), 4);
  a.ldq = maybe_evil(sadd(a.k / 2, coin(30) ? pick(-2, 9) : 0), 4);
  int64_t ex = span(a.rows, a.k, a.ldx), eq = span(a.rows, hup(a.k), a.ldq);
  a.batch_stride_x = maybe_evil(coin(20) && ex >= 0 && ex < 1000000 ? pick(0, ex + 5) : ex, 4);
  a.batch_stride_q = maybe_evil(coin(20) && eq >= 0 && eq < 1000000 ? pick(0, eq + 5) : eq, 4);
  int64_t kv = kg_fp4_kv(a.format, a.k);
  size_t sfb = 0;
  if (kg_sf_size(a.sf_layout, a.rows, kv, a.batch, &sfb) != KG_SUCCESS) sfb = 64;
  if (coin(10)) sfb = (size_t)pick(0, 4096);
  a.sf_bytes = sfb; a.sf = coin(2) ? NULL : buf((int64_t)sfb, &huge);
  int esz = a.dtype == KG_F32 ? 4 : 2;
  /* batch b spans [b * stride, b * stride + extent) */
  int64_t tx = a.batch >= 1 ? span(a.batch, ex, a.batch_stride_x) : 0;
  int64_t tq = a.batch >= 1 ? span(a.batch, eq, a.batch_stride_q) : 0;
  if (ex < 0) tx = -1;
  if (eq < 0) tq = -1;
  a.x = coin(2) ? NULL : buf(times(tx, esz), &huge);
  a.q = coin(2) ? NULL : buf(tq, &huge);
  float gsv[3] = { 2.0f, 0.5f, 3.0f };
  if (coin(30)) a.global_scale = gsv;
  if (a.global_scale && a.batch > 3) a.global_scale = NULL;
  kg_exec e = tu_exec_c();
  char desc[512];
  snprintf(desc, sizeof desc, "%s batch %lld rows %lld k %lld ldx %lld ldq %lld bsx %lld bsq %lld fmt %d lay %d dt %d sfb %zu",
           dequant ? "dequant" : "quant", (long long)a.batch, (long long)a.rows, (long long)a.k, (long long)a.ldx,
           (long long)a.ldq, (long long)a.batch_stride_x, (long long)a.batch_stride_q, (int)a.format, (int)a.sf_layout,
           (int)a.dtype, sfb);
  report(dequant ? "fp4_dequantize" : "fp4_quantize", dequant ? kg_fp4_dequantize(&a, &e) : kg_fp4_quantize(&a, &e),
         huge, desc);
  fz_free(a.x); fz_free(a.q); fz_free(a.sf);
}

static void fuzz_swizzle(int un) {
  kg_sf_swizzle_args a; memset(&a, 0, sizeof a);
  int huge = 0;
  a.layout = coin(5) ? (kg_sf_layout)pick(-2, 5) : LAYS[1 + rnd() % 2];
  a.rows = maybe_evil(pick(1, 300), 4); a.kv = maybe_evil(pick(1, 20), 4); a.groups = maybe_evil(pick(1, 3), 4);
  size_t lin = 64, swz = 64;
  if (kg_sf_size(KG_SF_LINEAR, a.rows, a.kv, a.groups, &lin) != KG_SUCCESS) lin = 64;
  if (kg_sf_size(a.layout, a.rows, a.kv, a.groups, &swz) != KG_SUCCESS) swz = 64;
  if (coin(10)) lin = (size_t)pick(0, 9000);
  if (coin(10)) swz = (size_t)pick(0, 9000);
  a.src_bytes = un ? swz : lin; a.dst_bytes = un ? lin : swz;
  a.src = coin(2) ? NULL : buf((int64_t)a.src_bytes, &huge);
  a.dst = coin(2) ? NULL : buf((int64_t)a.dst_bytes, &huge);
  kg_exec e = tu_exec_c();
  char desc[256];
  snprintf(desc, sizeof desc, "%s lay %d rows %lld kv %lld groups %lld src %zu dst %zu", un ? "unswizzle" : "swizzle",
           (int)a.layout, (long long)a.rows, (long long)a.kv, (long long)a.groups, a.src_bytes, a.dst_bytes);
  report(un ? "sf_unswizzle" : "sf_swizzle", un ? kg_sf_unswizzle(&a, &e) : kg_sf_swizzle(&a, &e), huge, desc);
  fz_free(a.src); fz_free(a.dst);
}

/* elements spanned by `batches` copies of an operand of extent e, stride bs (0: shared) */
static int64_t bspan(int64_t batches, int64_t e, int64_t bs) {
  if (e < 0) return -1;
  return batches <= 1 ? e : span(batches, e, bs);
}

static void fuzz_dual(void) {
  kg_dualgemm_fp4_args a; memset(&a, 0, sizeof a);
  int huge = 0;
  const int batched = coin(30), split = !batched && coin(25);
  a.mode = coin(3) ? (kg_mode)pick(-1, 4) : batched ? KG_MODE_BATCHED : split ? KG_MODE_SPLITK_SERIAL : KG_MODE_GEMM;
  a.split_k_slices = split ? maybe_evil(pick(0, 7), 5) : coin(5) ? pick(-1, 3) : 0;
  a.batch_count = batched ? maybe_evil(pick(1, 3), 4) : (coin(3) ? pick(0, 3) : 1);
  a.format = coin(3) ? (kg_fp4_format)pick(-2, 5) : FMTS[rnd() % 2];
  a.sf_layout = coin(3) ? (kg_sf_layout)pick(-2, 5) : LAYS[rnd() % 3];
  a.dtype = coin(3) ? (kg_dtype)pick(-2, 6) : (coin(50) ? KG_BF16 : KG_F16);
  a.op = coin(3) ? (kg_dual_op)pick(-2, 6) : (kg_dual_op)pick(0, 2);
  a.store_d0 = coin(30); a.store_d1 = coin(30);
  a.m = maybe_evil(pick(1, 24), 3); a.n = maybe_evil(pick(1, 40), 3); a.k = maybe_evil(2 * pick(1, 50) - (coin(5) ? 1 : 0), 3);
  a.a_fp4 = coin(25);
  a.sf_layout_a = coin(3) ? (kg_sf_layout)pick(-2, 5) : LAYS[rnd() % 3];
  const int64_t kb = hup(a.k);
  /* column-major A (W4A16) and C / D now and then, and unknown layouts */
  a.layout_a = coin(3) ? (kg_layout)pick(-1, 3) : coin(15) ? KG_COL : KG_ROW;
  a.layout_cd = coin(3) ? (kg_layout)pick(-1, 3) : coin(15) ? KG_COL : KG_ROW;
  const int ca = a.layout_a == KG_COL && !a.a_fp4, cc = a.layout_cd == KG_COL;
  const int64_t mo = cc ? a.n : a.m, mi = cc ? a.m : a.n;   /* C / D: outer, inner extents */
  a.lda = maybe_evil(sadd(a.a_fp4 ? kb : ca ? a.m : a.k, coin(30) ? pick(-2, 9) : 0), 3);
  a.ldb0 = maybe_evil(sadd(kb, coin(30) ? pick(-2, 9) : 0), 3);
  a.ldb1 = coin(20) ? 0 : maybe_evil(sadd(kb, coin(30) ? pick(-2, 9) : 0), 3);   /* 0: a broadcast W1 row */
  a.ldc0 = maybe_evil(coin(15) ? 0 : sadd(mi, coin(30) ? pick(-2, 5) : 0), 3);
  a.ldc1 = maybe_evil(coin(15) ? 0 : sadd(mi, coin(30) ? pick(-2, 5) : 0), 3);
  a.ldd0 = maybe_evil(sadd(mi, coin(30) ? pick(-2, 5) : 0), 3);
  a.ldd1 = maybe_evil(sadd(mi, coin(30) ? pick(-2, 5) : 0), 3);
  a.ldd2 = maybe_evil(sadd(mi, coin(30) ? pick(-2, 5) : 0), 3);
  const int64_t ea = a.a_fp4 ? span(a.m, kb, a.lda) : ca ? span(a.k, a.m, a.lda) : span(a.m, a.k, a.lda);
  const int64_t eb0 = span(a.n, kb, a.ldb0), eb1 = a.ldb1 == 0 ? kb : span(a.n, kb, a.ldb1);
  const int64_t ec0 = a.ldc0 == 0 ? mi : span(mo, mi, a.ldc0), ec1 = a.ldc1 == 0 ? mi : span(mo, mi, a.ldc1);
  const int64_t ed0 = span(mo, mi, a.ldd0), ed1 = span(mo, mi, a.ldd1), ed2 = span(mo, mi, a.ldd2);
  /* batch strides: usually the extent (or 0 for shared inputs), sometimes anything */
#define BS(e, shareable) (coin(10) ? maybe_evil(pick(0, 200), 20) : (shareable) && coin(30) ? 0 : (e))
  a.batch_stride_a = BS(ea, 1); a.batch_stride_b0 = BS(eb0, 1); a.batch_stride_b1 = BS(eb1, 1);
  a.batch_stride_c0 = BS(ec0, 1); a.batch_stride_c1 = BS(ec1, 1);
  a.batch_stride_d0 = BS(ed0, 0); a.batch_stride_d1 = BS(ed1, 0); a.batch_stride_d2 = BS(ed2, 0);
#undef BS
  const int64_t nb = a.mode == KG_MODE_BATCHED && a.batch_count >= 1 && a.batch_count <= 8 ? a.batch_count : 1;
  const int esz = 2;
  const int64_t kv = kg_fp4_kv(a.format, a.k);
  size_t s0 = 64, s1 = 64, sa = 64;
  const int64_t g0 = nb > 1 && a.batch_stride_b0 != 0 ? nb : 1, g1 = nb > 1 && a.batch_stride_b1 != 0 ? nb : 1;
  const int64_t ga = nb > 1 && a.batch_stride_a != 0 ? nb : 1;
  if (kg_sf_size(a.sf_layout, a.n, kv, g0, &s0) != KG_SUCCESS) s0 = 64;
  if (kg_sf_size(a.sf_layout, a.ldb1 == 0 ? 1 : a.n, kv, g1, &s1) != KG_SUCCESS) s1 = 64;
  if (kg_sf_size(a.sf_layout_a, a.m, kv, ga, &sa) != KG_SUCCESS) sa = 64;
  if (coin(8)) s0 = (size_t)pick(0, 4096);
  if (coin(8)) s1 = (size_t)pick(0, 4096);
  a.sf_b0_bytes = s0; a.sf_b0 = coin(2) ? NULL : buf((int64_t)s0, &huge);
  a.sf_b1_bytes = s1; a.sf_b1 = coin(2) ? NULL : buf((int64_t)s1, &huge);
  if (a.a_fp4) { a.sf_a_bytes = sa; a.sf_a = coin(2) ? NULL : buf((int64_t)sa, &huge); }
  a.a = coin(2) ? NULL : buf(a.a_fp4 ? bspan(nb, ea, a.batch_stride_a) : times(bspan(nb, ea, a.batch_stride_a), esz), &huge);
  a.b0 = coin(2) ? NULL : buf(bspan(nb, eb0, a.batch_stride_b0), &huge);
  a.b1 = coin(2) ? NULL : buf(bspan(nb, eb1, a.batch_stride_b1), &huge);
  a.alpha0 = 1.0f; a.alpha1 = 0.5f; a.beta0 = coin(40) ? 0.5f : 0.0f; a.beta1 = coin(40) ? 0.25f : 0.0f;
  if ((a.beta0 != 0 && !coin(3)) || coin(5)) a.c0 = buf(times(bspan(nb, ec0, a.batch_stride_c0), esz), &huge);
  if ((a.beta1 != 0 && !coin(3)) || coin(5)) a.c1 = buf(times(bspan(nb, ec1, a.batch_stride_c1), esz), &huge);
  if (a.store_d0 != coin(3)) a.d0 = buf(times(bspan(nb, ed0, a.batch_stride_d0), esz), &huge);
  if (a.store_d1 != coin(3)) a.d1 = buf(times(bspan(nb, ed1, a.batch_stride_d1), esz), &huge);
  a.d2 = coin(2) ? NULL : buf(times(bspan(nb, ed2, a.batch_stride_d2), esz), &huge);
  static const float gsv[8] = { 2.0f, 0.5f, 3.0f, 1.0f, 2.0f, 0.5f, 3.0f, 1.0f };
  if (coin(30)) a.global_scale_b0 = gsv;
  if (coin(30)) a.global_scale_b1 = gsv;
  if (coin(15)) a.global_scale_a = gsv;
  kg_exec e = tu_exec_c();
  char desc[640];
  snprintf(desc, sizeof desc, "dual mode %d bc %lld m %lld n %lld k %lld lda %lld ldb %lld/%lld ldc %lld/%lld ldd %lld/%lld/%lld "
           "bs a %lld b %lld/%lld c %lld/%lld d %lld/%lld/%lld fmt %d lay %d dt %d op %d st %d%d a_fp4 %d sf %zu/%zu/%zu "
           "split %lld layout a %d cd %d",
           (int)a.mode, (long long)a.batch_count, (long long)a.m, (long long)a.n, (long long)a.k, (long long)a.lda,
           (long long)a.ldb0, (long long)a.ldb1, (long long)a.ldc0, (long long)a.ldc1, (long long)a.ldd0,
           (long long)a.ldd1, (long long)a.ldd2, (long long)a.batch_stride_a, (long long)a.batch_stride_b0,
           (long long)a.batch_stride_b1, (long long)a.batch_stride_c0, (long long)a.batch_stride_c1,
           (long long)a.batch_stride_d0, (long long)a.batch_stride_d1, (long long)a.batch_stride_d2, (int)a.format,
           (int)a.sf_layout, (int)a.dtype, (int)a.op, a.store_d0, a.store_d1, a.a_fp4, s0, s1, sa,
           (long long)a.split_k_slices, (int)a.layout_a, (int)a.layout_cd);
  /* batch counts above 8 get buffers for one batch: accepting them is a finding unless rejected */
  const int many = a.mode == KG_MODE_BATCHED && a.batch_count > 8;
  size_t ws = 0;
  const char *nm = NULL;
  report("dualgemm_fp4_workspace_size", kg_dualgemm_fp4_workspace_size(&a, &e, &ws), 0, desc);
  report("dualgemm_fp4_select", kg_dualgemm_fp4_select(&a, &e, &nm), 0, desc);
  /* the size query's workspace (or a byte less) most of the time: the dequantize path (split-K, a
  ** broadcast W1) writes only inside it */
  void *w = NULL;
  if (ws > 0 && ws < (64u << 20) && coin(80)) {
    e.workspace_size = coin(20) ? ws - 1 : ws;
    e.workspace = w = buf((int64_t)e.workspace_size, &huge);
  }
  report("dualgemm_fp4", kg_dualgemm_fp4(&a, &e), huge || many, desc);
  fz_free(w);
  fz_free(a.a); fz_free(a.b0); fz_free(a.b1); fz_free(a.sf_b0); fz_free(a.sf_b1);
  fz_free(a.sf_a); fz_free(a.c0); fz_free(a.c1); fz_free(a.d0); fz_free(a.d1); fz_free(a.d2);
}

static void fuzz_reswizzle(void) {
  kg_sf_reswizzle_args a; memset(&a, 0, sizeof a);
  int huge = 0;
  a.layout = coin(5) ? (kg_sf_layout)pick(-2, 5) : LAYS[1 + rnd() % 2];
  a.kv = maybe_evil(pick(1, 12), 3); a.groups = maybe_evil(pick(1, 3), 3);
  a.nshards = coin(5) ? (int)pick(-1, 70) : (int)pick(1, 5);
  kg_sf_shard sh[80];
  int64_t total = 0;
  for (int i = 0; i < 80; i++) {
    sh[i].rows = maybe_evil(pick(1, 150), 2);
    size_t b = 64;
    if (kg_sf_size(a.layout, sh[i].rows, a.kv, a.groups, &b) != KG_SUCCESS) b = 64;
    if (coin(5)) b = (size_t)pick(0, 5000);
    sh[i].sf_bytes = b;
    sh[i].sf = i < a.nshards && !coin(2) ? buf((int64_t)b, &huge) : NULL;
    if (i < a.nshards) total = sadd(total, sh[i].rows);
  }
  size_t db = 64;
  if (kg_sf_size(a.layout, total, a.kv, a.groups, &db) != KG_SUCCESS) db = 64;
  if (coin(8)) db = (size_t)pick(0, 9000);
  a.dst_bytes = db; a.dst = coin(2) ? NULL : buf((int64_t)db, &huge);
  a.shards = coin(2) ? NULL : sh;
  kg_exec e = tu_exec_c();
  char desc[256];
  snprintf(desc, sizeof desc, "reswizzle lay %d kv %lld groups %lld nshards %d total %lld dst %zu", (int)a.layout,
           (long long)a.kv, (long long)a.groups, a.nshards, (long long)total, db);
  report("sf_reswizzle", kg_sf_reswizzle(&a, &e), huge, desc);
  for (int i = 0; i < 80; i++) fz_free(sh[i].sf);
  fz_free(a.dst);
}

/* Scale-buffer arithmetic with sizes and coordinates around the valid ones: kg_sf_size,
** kg_sf_offset (every layout) and the 6-D view (kg_sf_view_128x4, kg_sf_view_index) must not
** overflow (UBSan), an offset they give lies inside kg_sf_size, and the view's offset is the
** 128x4 one. */
static void fuzz_sf_index(void) {
  const int64_t rows = maybe_evil(pick(1, 400), 8), kv = maybe_evil(pick(1, 40), 8), groups = maybe_evil(pick(1, 3), 8);
  const kg_sf_layout lay = coin(5) ? (kg_sf_layout)pick(-2, 5) : LAYS[rnd() % 3];
  char desc[200];
  size_t bytes = 0;
  const kg_status st = kg_sf_size(lay, rows, kv, groups, &bytes);
  snprintf(desc, sizeof desc, "sf_index lay %d rows %lld kv %lld groups %lld", (int)lay, (long long)rows, (long long)kv,
           (long long)groups);
  report("sf_size", st, 0, desc);
  kg_sf_view view;
  const kg_status vs = kg_sf_view_128x4(rows, kv, groups, &view);
  report("sf_view_128x4", vs, 0, desc);
  size_t b128 = 0;
  const int have128 = kg_sf_size(KG_SF_SWIZZLED_128X4, rows, kv, groups, &b128) == KG_SUCCESS;
  for (int t = 0; t < 8; t++) {
    const int64_t m = maybe_evil(pick(-2, rows > 0 && rows < 1000 ? rows + 2 : 500), 10);
    const int64_t kb = maybe_evil(pick(-2, kv > 0 && kv < 100 ? kv + 2 : 50), 10);
    const int64_t g = maybe_evil(pick(-1, groups > 0 && groups < 10 ? groups : 3), 10);
    /* kg_sf_offset has no group count: it bounds m, kb and g >= 0, not g < groups */
    const int64_t off = kg_sf_offset(lay, rows, kv, g, m, kb);
    const int inside = m >= 0 && m < rows && kb >= 0 && kb < kv && g >= 0 && g < groups;
    const int beyond_groups = m >= 0 && m < rows && kb >= 0 && kb < kv && g >= groups;
    if (off >= 0 && !beyond_groups && (!inside || (st == KG_SUCCESS && (uint64_t)off >= bytes))) {
      fz_bad++;
      printf("OFFSET OUTSIDE %s m %lld kb %lld g %lld: %lld of %zu bytes\n", desc, (long long)m, (long long)kb,
             (long long)g, (long long)off, bytes);
    }
    if (vs == KG_SUCCESS) {
      const int64_t vo = kg_sf_view_index(&view, m, kb, g);
      const int64_t ro = kg_sf_offset(KG_SF_SWIZZLED_128X4, rows, kv, g, m, kb);
      if (vo >= 0 && (!have128 || (uint64_t)vo >= b128 || (inside && vo != ro))) {
        fz_bad++;
        printf("VIEW MISMATCH %s m %lld kb %lld g %lld: view %lld, offset %lld, %zu bytes\n", desc, (long long)m,
               (long long)kb, (long long)g, (long long)vo, (long long)ro, b128);
      }
    }
  }
}

static void fuzz_quantize(void) { fuzz_quant(0); }
static void fuzz_dequantize(void) { fuzz_quant(1); }
static void fuzz_swz(void) { fuzz_swizzle(0); }
static void fuzz_unswz(void) { fuzz_swizzle(1); }

int main(int argc, char **argv) {
  static void (*const steps[])(void) = { fuzz_gemm, fuzz_quantize, fuzz_dequantize, fuzz_swz, fuzz_unswz, fuzz_dual,
                                         fuzz_sf_index, fuzz_reswizzle };
  return fz_main(argc, argv, steps, (int)(sizeof steps / sizeof steps[0]));
}
