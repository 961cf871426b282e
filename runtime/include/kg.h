/*
** kg.h -- public interface of the kgen runtime.
**
** One C function per operation. Every entry point validates its arguments,
** returns a kg_status and never aborts, exits or prints. Pointers in argument
** structs live in the memory of the backend named by kg_exec (host memory for
** KG_BACKEND_C, device memory for CUDA and HIP).
*/
#ifndef KG_H
#define KG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kg_status {
  KG_SUCCESS = 0,
  KG_ERROR_INVALID_ARGUMENT,    /* null pointer, bad size, bad ld, unknown enum */
  KG_ERROR_INVALID_PROBLEM,     /* arguments valid alone but not together */
  KG_ERROR_MISALIGNED_OPERAND,  /* pointer or ld not aligned as the variant needs */
  KG_ERROR_NOT_SUPPORTED,       /* no generated variant accepts the problem */
  KG_ERROR_WORKSPACE_TOO_SMALL, /* exec->workspace_size below the size query */
  KG_ERROR_BACKEND_UNAVAILABLE, /* backend not compiled in, or no device */
  KG_ERROR_BACKEND,             /* CUDA/HIP call failed; see kg_last_backend_error */
  KG_ERROR_INTERNAL
} kg_status;

/* Static English text for a status; never NULL. */
const char *kg_status_string(kg_status s);
/* Message of the last backend failure in this thread ("" when none). */
const char *kg_last_backend_error(void);

typedef enum kg_backend { KG_BACKEND_C = 0, KG_BACKEND_CUDA, KG_BACKEND_HIP } kg_backend;
const char *kg_backend_string(kg_backend b);
/* 1 when the backend is compiled in and (for GPUs) a device is visible. */
int kg_backend_available(kg_backend b);

typedef enum kg_dtype { KG_F32 = 0, KG_F16, KG_BF16 } kg_dtype;
size_t kg_dtype_size(kg_dtype t);
const char *kg_dtype_string(kg_dtype t);

/* f16 / bf16 values travel as their 16-bit patterns. Conversions round to
** nearest even; NaN stays NaN. */
uint16_t kg_f32_to_f16_bits(float f);
float kg_f16_bits_to_f32(uint16_t h);
uint16_t kg_f32_to_bf16_bits(float f);
float kg_bf16_bits_to_f32(uint16_t h);

/* Matrix storage order. Row-major X[i][j] sits at i*ld + j, column-major at
** j*ld + i. */
typedef enum kg_layout { KG_ROW = 0, KG_COL } kg_layout;

/* How an operation runs: which backend, on which stream, with which scratch
** memory. variant, when not NULL, forces the canonical variant name. */
typedef struct kg_exec {
  kg_backend backend;
  void *stream;           /* cudaStream_t / hipStream_t; NULL is the default stream */
  void *workspace;        /* backend memory, at least the size query's bytes,
                             16-byte aligned (malloc/cudaMalloc/hipMalloc are) */
  size_t workspace_size;
  const char *variant;    /* NULL: dispatch chooses */
} kg_exec;

/* ---- GEMM: D = alpha * A.B + beta * C ------------------------------------
** A is m x k, B is k x n, C and D are m x n; accumulation is f32.
** Modes:
**   KG_MODE_GEMM           one problem (batch_count 1, split_k_slices 1)
**   KG_MODE_BATCHED        batch_count problems; operand X of problem b starts
**                          at X + b*batch_stride_x elements (stride 0 broadcasts)
**   KG_MODE_SPLITK_SERIAL  K cut into split_k_slices slices that are summed in
**                          slice order (deterministic); batch_count must be 1.
** c may be NULL only when beta == 0. ldc == 0 with row-major C broadcasts one
** bias row to every row of the output (column-major: one column). */
typedef enum kg_mode {
  KG_MODE_GEMM = 0,
  KG_MODE_BATCHED,
  KG_MODE_SPLITK_SERIAL
} kg_mode;

typedef struct kg_gemm_args {
  kg_mode mode;
  int64_t m, n, k;
  int64_t batch_count;      /* KG_MODE_BATCHED: 1..65535; others: 1 */
  int64_t split_k_slices;   /* KG_MODE_SPLITK_SERIAL: 1..k; others: 1 */
  kg_dtype type_ab;         /* element type of A and B */
  kg_dtype type_cd;         /* element type of C and D */
  kg_layout layout_a, layout_b, layout_cd;
  const void *a; int64_t lda; int64_t batch_stride_a;
  const void *b; int64_t ldb; int64_t batch_stride_b;
  const void *c; int64_t ldc; int64_t batch_stride_c;
  void *d;       int64_t ldd; int64_t batch_stride_d;
  float alpha, beta;
} kg_gemm_args;

/* Largest batch_count (grid z limit shared by every backend). */
#define KG_MAX_BATCH 65535

kg_status kg_gemm(const kg_gemm_args *args, const kg_exec *exec);
/* Bytes of exec->workspace that kg_gemm needs for these args (0 is common). */
kg_status kg_gemm_workspace_size(const kg_gemm_args *args, const kg_exec *exec,
                                 size_t *bytes);
/* Name of the variant kg_gemm would run; *name points into static storage. */
kg_status kg_gemm_select(const kg_gemm_args *args, const kg_exec *exec,
                         const char **name);

/* ---- DualGemm: two GEMMs sharing A, fused by an elementwise op ----------
**   D0 = alpha0 * A.B0 + beta0 * C0      D1 = alpha1 * A.B1 + beta1 * C1
**   D2 = op(D0, D1)                      (op on the output-typed D0, D1)
** op: KG_DUAL_SWIGLU silu(D0)*D1 with silu(x) = x/(1+exp(-x));
**     KG_DUAL_GEGLU  gelu_tanh(D0)*D1;  KG_DUAL_MUL D0*D1.
** A is m x k; B0, B1 are k x n; C0, C1, D0, D1, D2 are m x n and share
** layout_cd. A is read once per K tile and feeds both products.
** - store_d0 / store_d1 say whether D0 / D1 are written; d0 (d1) must be
**   non-NULL exactly when store_d0 (store_d1) is set, else
**   KG_ERROR_INVALID_ARGUMENT. D2 is always written.
** - B1 column-major with ldb1 == 0 is a broadcast column vector v (k
**   elements): D1[i][j] = (A.v)[i] for every j; its batch stride is then
**   usually k. C0 / C1 row-major with ld 0 add one bias row to every row.
** - c0 (c1) may be NULL only when beta0 (beta1) == 0.
** - Modes as for kg_gemm. KG_MODE_SPLITK_SERIAL keeps two m x n f32 partial
**   sums in the workspace (kg_dualgemm_workspace_size), so D0/D1 need not be
**   stored; batched + split-K is KG_ERROR_INVALID_PROBLEM. */
typedef enum kg_dual_op { KG_DUAL_SWIGLU = 0, KG_DUAL_GEGLU, KG_DUAL_MUL } kg_dual_op;

typedef struct kg_dualgemm_args {
  kg_mode mode;
  int64_t m, n, k;
  int64_t batch_count;
  int64_t split_k_slices;
  kg_dtype type_ab, type_cd;
  kg_layout layout_a, layout_b0, layout_b1, layout_cd;
  kg_dual_op op;
  int store_d0, store_d1;
  const void *a;  int64_t lda;  int64_t batch_stride_a;
  const void *b0; int64_t ldb0; int64_t batch_stride_b0;
  const void *b1; int64_t ldb1; int64_t batch_stride_b1;
  const void *c0; int64_t ldc0; int64_t batch_stride_c0;
  const void *c1; int64_t ldc1; int64_t batch_stride_c1;
  void *d0;       int64_t ldd0; int64_t batch_stride_d0;
  void *d1;       int64_t ldd1; int64_t batch_stride_d1;
  void *d2;       int64_t ldd2; int64_t batch_stride_d2;
  float alpha0, beta0, alpha1, beta1;
} kg_dualgemm_args;

kg_status kg_dualgemm(const kg_dualgemm_args *args, const kg_exec *exec);
kg_status kg_dualgemm_workspace_size(const kg_dualgemm_args *args, const kg_exec *exec,
                                     size_t *bytes);
kg_status kg_dualgemm_select(const kg_dualgemm_args *args, const kg_exec *exec,
                             const char **name);

/* ---- Introspection ------------------------------------------------------ */
typedef enum kg_op { KG_OP_GEMM = 0, KG_OP_DUALGEMM } kg_op;

/* Writes into buf (always NUL-terminated, truncated to cap) one line per
** variant of the operation: "NAME: chosen" or "NAME: rejected: REASON", and
** first the argument check's verdict when it fails. args points to the op's
** argument struct (kg_gemm_args for KG_OP_GEMM, kg_dualgemm_args for
** KG_OP_DUALGEMM). Returns the status the call
** would have had. */
kg_status kg_explain(kg_op op, const void *args, const kg_exec *exec,
                     char *buf, size_t cap);

/* Number of generated variants compiled in, and their names. */
int kg_variant_count(void);
const char *kg_variant_name(int i);

#ifdef __cplusplus
}
#endif
#endif /* KG_H */
