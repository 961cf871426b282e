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
  void *workspace;        /* backend memory, at least the size query's bytes */
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

/* ---- Introspection ------------------------------------------------------ */
typedef enum kg_op { KG_OP_GEMM = 0 } kg_op;

/* Writes into buf (always NUL-terminated, truncated to cap) one line per
** variant of the operation: "NAME: chosen" or "NAME: rejected: REASON", and
** first the argument check's verdict when it fails. args points to the op's
** argument struct (kg_gemm_args for KG_OP_GEMM). Returns the status the call
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
