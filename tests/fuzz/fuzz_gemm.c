/* Argument fuzz of kg_gemm and kg_dualgemm (with their workspace and select queries) on the C
** backend, built with AddressSanitizer and UndefinedBehaviorSanitizer (make fuzz), as
** fuzz_fp4.c does for the FP4 entry points: arguments drawn around a valid problem (small sizes,
** both layouts of every operand, lds at, above and below their minimum, ld 0 broadcasts, the
** three modes with their batch counts and K slices, unknown enum values, NULL pointers,
** overlapping batch strides, int64-overflowing sizes), every buffer and the workspace
** allocated to exactly the documented extent (kg.h). A call must return a known status; one
** that succeeds with an overflowing size is a finding.
** Usage: fuzz_gemm [iterations [seed]]; exit 0 when nothing was found. */
#include "fuzz_util.h"

/* elements spanned by a rows x cols matrix in `layout` with leading dimension ld (0: one
** row, or one column), then by `batches` of them bs apart (bs 0: shared); -1 on overflow */
static int64_t extent(kg_layout layout, int64_t rows, int64_t cols, int64_t ld, int64_t batches, int64_t bs) {
  if (rows <= 0 || cols <= 0) return 0;
  const int64_t outer = layout == KG_COL ? cols : rows, inner = layout == KG_COL ? rows : cols;
  int64_t a, e;
  if (__builtin_mul_overflow(outer - 1, ld, &a) || __builtin_add_overflow(a, inner, &e)) return -1;
  if (batches > 1 && (__builtin_mul_overflow(batches - 1, bs, &a) || __builtin_add_overflow(a, e, &e))) return -1;
  return e;
}
static int64_t bytes_of(int64_t e, kg_dtype t) {
  int64_t r;
  const int64_t s = t == KG_F32 ? 4 : 2;
  return e < 0 || __builtin_mul_overflow(e, s, &r) ? -1 : r;
}

static kg_dtype dtype(void) { return coin(3) ? (kg_dtype)pick(-2, 5) : (kg_dtype)pick(0, 2); }
static kg_layout layout(void) { return coin(3) ? (kg_layout)pick(-2, 4) : (kg_layout)pick(0, 1); }
/* the minimum ld of a rows x cols operand in layout l, perturbed */
static int64_t ld_for(kg_layout l, int64_t rows, int64_t cols, int broadcast_ok) {
  if (broadcast_ok && coin(10)) return 0;
  const int64_t min = l == KG_COL ? rows : cols;
  return maybe_evil(sadd(min < 0 ? 0 : min, coin(30) ? pick(-2, 6) : 0), 3);
}

/* mode, batch count and K slices around a valid combination */
static void modes(kg_mode *mode, int64_t *batch, int64_t *slices, int64_t k) {
  *mode = coin(3) ? (kg_mode)pick(-1, 5) : (kg_mode)pick(0, 2);
  *batch = *mode == KG_MODE_BATCHED ? maybe_evil(pick(1, 3), 3) : (coin(5) ? pick(0, 3) : 1);
  *slices = *mode == KG_MODE_SPLITK_SERIAL ? maybe_evil(pick(1, k > 1 && k < 8 ? k : 8), 3) : (coin(5) ? pick(0, 3) : 1);
}

/* a batch stride for an operand of extent e: usually e, or 0 (shared), sometimes anything */
static int64_t stride(int64_t e, int shareable) {
  if (coin(10)) return maybe_evil(pick(0, 300), 20);
  return shareable && coin(25) ? 0 : e;
}

/* exec with a workspace of exactly the size query's bytes (or a wrong one, sometimes) */
static kg_exec exec_with(size_t need, void **ws) {
  kg_exec e;
  memset(&e, 0, sizeof e);
  e.backend = coin(3) ? (kg_backend)pick(-1, 7) : KG_BACKEND_C;
  size_t n = need;
  if (coin(10)) n = (size_t)pick(0, (int64_t)need + 64);
  *ws = n && !coin(3) && n <= (64u << 20) ? malloc(n) : NULL;
  e.workspace = *ws;
  e.workspace_size = *ws ? n : (coin(50) ? 0 : n);
  return e;
}

static void fuzz_gemm(void) {
  kg_gemm_args a;
  memset(&a, 0, sizeof a);
  int huge = 0;
  a.m = maybe_evil(pick(1, 40), 3); a.n = maybe_evil(pick(1, 40), 3); a.k = maybe_evil(pick(1, 60), 3);
  modes(&a.mode, &a.batch_count, &a.split_k_slices, a.k);
  a.type_ab = dtype(); a.type_cd = dtype();
  a.layout_a = layout(); a.layout_b = layout(); a.layout_cd = layout();
  a.lda = ld_for(a.layout_a, a.m, a.k, 0);
  a.ldb = ld_for(a.layout_b, a.k, a.n, 0);
  a.ldc = ld_for(a.layout_cd, a.m, a.n, 1);
  a.ldd = ld_for(a.layout_cd, a.m, a.n, 0);
  const int64_t nb = a.mode == KG_MODE_BATCHED && a.batch_count >= 1 && a.batch_count <= 8 ? a.batch_count : 1;
  a.batch_stride_a = stride(extent(a.layout_a, a.m, a.k, a.lda, 1, 0), 1);
  a.batch_stride_b = stride(extent(a.layout_b, a.k, a.n, a.ldb, 1, 0), 1);
  a.batch_stride_c = stride(extent(a.layout_cd, a.m, a.n, a.ldc, 1, 0), 1);
  a.batch_stride_d = stride(extent(a.layout_cd, a.m, a.n, a.ldd, 1, 0), 0);
  a.alpha = 1.0f; a.beta = coin(50) ? 0.0f : 0.5f;
  a.a = coin(2) ? NULL : buf(bytes_of(extent(a.layout_a, a.m, a.k, a.lda, nb, a.batch_stride_a), a.type_ab), &huge);
  a.b = coin(2) ? NULL : buf(bytes_of(extent(a.layout_b, a.k, a.n, a.ldb, nb, a.batch_stride_b), a.type_ab), &huge);
  if ((a.beta != 0 && !coin(3)) || coin(5))
    a.c = buf(bytes_of(extent(a.layout_cd, a.m, a.n, a.ldc, nb, a.batch_stride_c), a.type_cd), &huge);
  a.d = coin(2) ? NULL : buf(bytes_of(extent(a.layout_cd, a.m, a.n, a.ldd, nb, a.batch_stride_d), a.type_cd), &huge);
  kg_exec q;
  memset(&q, 0, sizeof q);
  size_t need = 0;
  const char *nm = NULL;
  char desc[512];
  snprintf(desc, sizeof desc, "gemm mode %d bc %lld sk %lld m %lld n %lld k %lld ab %d cd %d lay %d%d%d ld %lld %lld %lld %lld "
           "bs %lld %lld %lld %lld", (int)a.mode, (long long)a.batch_count, (long long)a.split_k_slices, (long long)a.m,
           (long long)a.n, (long long)a.k, (int)a.type_ab, (int)a.type_cd, (int)a.layout_a, (int)a.layout_b,
           (int)a.layout_cd, (long long)a.lda, (long long)a.ldb, (long long)a.ldc, (long long)a.ldd,
           (long long)a.batch_stride_a, (long long)a.batch_stride_b, (long long)a.batch_stride_c,
           (long long)a.batch_stride_d);
  report("gemm_workspace_size", kg_gemm_workspace_size(&a, &q, &need), 0, desc);
  report("gemm_select", kg_gemm_select(&a, &q, &nm), 0, desc);
  void *ws;
  kg_exec e = exec_with(need, &ws);
  /* batch counts above 8 get buffers for one batch: accepting them is a finding unless rejected */
  report("gemm", kg_gemm(&a, &e), huge || (a.mode == KG_MODE_BATCHED && a.batch_count > 8), desc);
  fz_free(a.a); fz_free(a.b); fz_free(a.c); fz_free(a.d); fz_free(ws);
}

static void fuzz_dual(void) {
  kg_dualgemm_args a;
  memset(&a, 0, sizeof a);
  int huge = 0;
  a.m = maybe_evil(pick(1, 30), 3); a.n = maybe_evil(pick(1, 30), 3); a.k = maybe_evil(pick(1, 50), 3);
  modes(&a.mode, &a.batch_count, &a.split_k_slices, a.k);
  a.type_ab = dtype(); a.type_cd = dtype();
  a.layout_a = layout(); a.layout_b0 = layout(); a.layout_b1 = layout(); a.layout_cd = layout();
  a.op = coin(3) ? (kg_dual_op)pick(-2, 6) : (kg_dual_op)pick(0, 2);
  a.store_d0 = coin(40); a.store_d1 = coin(40);
  a.lda = ld_for(a.layout_a, a.m, a.k, 0);
  a.ldb0 = ld_for(a.layout_b0, a.k, a.n, 0);
  a.ldb1 = ld_for(a.layout_b1, a.k, a.n, 1);   /* column-major ld 0: broadcast vector */
  a.ldc0 = ld_for(a.layout_cd, a.m, a.n, 1); a.ldc1 = ld_for(a.layout_cd, a.m, a.n, 1);
  a.ldd0 = ld_for(a.layout_cd, a.m, a.n, 0); a.ldd1 = ld_for(a.layout_cd, a.m, a.n, 0);
  a.ldd2 = ld_for(a.layout_cd, a.m, a.n, 0);
  const int64_t nb = a.mode == KG_MODE_BATCHED && a.batch_count >= 1 && a.batch_count <= 8 ? a.batch_count : 1;
  /* a broadcast B1 (column-major, ld 0) is k elements */
  const int bvec = a.layout_b1 == KG_COL && a.ldb1 == 0;
  const int64_t e_b1 = bvec ? (a.k > 0 ? a.k : 0) : extent(a.layout_b1, a.k, a.n, a.ldb1, 1, 0);
  a.batch_stride_a = stride(extent(a.layout_a, a.m, a.k, a.lda, 1, 0), 1);
  a.batch_stride_b0 = stride(extent(a.layout_b0, a.k, a.n, a.ldb0, 1, 0), 1);
  a.batch_stride_b1 = stride(e_b1, 1);
  a.batch_stride_c0 = stride(extent(a.layout_cd, a.m, a.n, a.ldc0, 1, 0), 1);
  a.batch_stride_c1 = stride(extent(a.layout_cd, a.m, a.n, a.ldc1, 1, 0), 1);
  a.batch_stride_d0 = stride(extent(a.layout_cd, a.m, a.n, a.ldd0, 1, 0), 0);
  a.batch_stride_d1 = stride(extent(a.layout_cd, a.m, a.n, a.ldd1, 1, 0), 0);
  a.batch_stride_d2 = stride(extent(a.layout_cd, a.m, a.n, a.ldd2, 1, 0), 0);
  a.alpha0 = 1.0f; a.alpha1 = 0.5f; a.beta0 = coin(40) ? 0.5f : 0.0f; a.beta1 = coin(40) ? 0.25f : 0.0f;
  a.a = coin(2) ? NULL : buf(bytes_of(extent(a.layout_a, a.m, a.k, a.lda, nb, a.batch_stride_a), a.type_ab), &huge);
  a.b0 = coin(2) ? NULL : buf(bytes_of(extent(a.layout_b0, a.k, a.n, a.ldb0, nb, a.batch_stride_b0), a.type_ab), &huge);
  const int64_t tb1 = bvec ? (nb > 1 ? extent(KG_ROW, nb, e_b1, a.batch_stride_b1, 1, 0) : e_b1)
                           : extent(a.layout_b1, a.k, a.n, a.ldb1, nb, a.batch_stride_b1);
  a.b1 = coin(2) ? NULL : buf(bytes_of(tb1, a.type_ab), &huge);
  if ((a.beta0 != 0 && !coin(3)) || coin(5))
    a.c0 = buf(bytes_of(extent(a.layout_cd, a.m, a.n, a.ldc0, nb, a.batch_stride_c0), a.type_cd), &huge);
  if ((a.beta1 != 0 && !coin(3)) || coin(5))
    a.c1 = buf(bytes_of(extent(a.layout_cd, a.m, a.n, a.ldc1, nb, a.batch_stride_c1), a.type_cd), &huge);
  if (a.store_d0 != coin(3)) a.d0 = buf(bytes_of(extent(a.layout_cd, a.m, a.n, a.ldd0, nb, a.batch_stride_d0), a.type_cd), &huge);
  if (a.store_d1 != coin(3)) a.d1 = buf(bytes_of(extent(a.layout_cd, a.m, a.n, a.ldd1, nb, a.batch_stride_d1), a.type_cd), &huge);
  a.d2 = coin(2) ? NULL : buf(bytes_of(extent(a.layout_cd, a.m, a.n, a.ldd2, nb, a.batch_stride_d2), a.type_cd), &huge);
  kg_exec q;
  memset(&q, 0, sizeof q);
  size_t need = 0;
  const char *nm = NULL;
  char desc[640];
  snprintf(desc, sizeof desc, "dual mode %d bc %lld sk %lld m %lld n %lld k %lld ab %d cd %d lay %d%d%d%d op %d st %d%d "
           "ld %lld %lld %lld %lld %lld %lld %lld %lld", (int)a.mode, (long long)a.batch_count,
           (long long)a.split_k_slices, (long long)a.m, (long long)a.n, (long long)a.k, (int)a.type_ab,
           (int)a.type_cd, (int)a.layout_a, (int)a.layout_b0, (int)a.layout_b1, (int)a.layout_cd, (int)a.op,
           a.store_d0, a.store_d1, (long long)a.lda, (long long)a.ldb0, (long long)a.ldb1, (long long)a.ldc0,
           (long long)a.ldc1, (long long)a.ldd0, (long long)a.ldd1, (long long)a.ldd2);
  report("dualgemm_workspace_size", kg_dualgemm_workspace_size(&a, &q, &need), 0, desc);
  report("dualgemm_select", kg_dualgemm_select(&a, &q, &nm), 0, desc);
  void *ws;
  kg_exec e = exec_with(need, &ws);
  report("dualgemm", kg_dualgemm(&a, &e), huge || (a.mode == KG_MODE_BATCHED && a.batch_count > 8), desc);
  fz_free(a.a); fz_free(a.b0); fz_free(a.b1); fz_free(a.c0); fz_free(a.c1);
  fz_free(a.d0); fz_free(a.d1); fz_free(a.d2); fz_free(ws);
}

int main(int argc, char **argv) {
  static void (*const steps[])(void) = { fuzz_gemm, fuzz_dual };
  return fz_main(argc, argv, steps, 2);
}
