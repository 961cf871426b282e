/*
** kg.h -- public interface of the kgen runtime.
**
** One C function per operation. Every entry point validates its arguments,
** returns a kg_status and never aborts, exits or prints. Pointers in argument
** structs live in the memory of the backend named by kg_exec (host memory for
** KG_BACKEND_C, device memory for CUDA and HIP). A pointer to typed elements
** is aligned to their size on every backend (f16 / bf16: 2 bytes; f32, the
** FP4 global scales and amax, lse and other f32 state, int32 tables: 4), as
** the elements are loaded and stored as their type; KG_ERROR_MISALIGNED_OPERAND
** otherwise. Byte arrays (FP4 codes, scale bytes, masks) take any address
** unless an operation says more.
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
  KG_ERROR_MISALIGNED_OPERAND,  /* pointer not aligned to its elements, or pointer or ld
                                   not aligned as the variant needs */
  KG_ERROR_NOT_SUPPORTED,       /* no generated variant accepts the problem */
  KG_ERROR_WORKSPACE_TOO_SMALL, /* exec->workspace_size below the size query */
  KG_ERROR_BACKEND_UNAVAILABLE, /* backend not compiled in, or no device */
  KG_ERROR_BACKEND,             /* CUDA/HIP call failed; see kg_last_backend_error */
  KG_ERROR_INTERNAL
} kg_status;

/* Static English text for a status; never NULL. */
const char *kg_status_string(kg_status s);
/* Message of the last backend failure in this thread ("" when none). A call that
** fails with KG_ERROR_BACKEND leaves no pending error in the CUDA / HIP runtime
** (cudaGetLastError / hipGetLastError are cleared for this thread). */
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

/* kg_exec.flags bits (0: none; other bits: KG_ERROR_INVALID_ARGUMENT).
** KG_EXEC_PDL  CUDA: programmatic dependent launch. The kernel may start, and
**   read the FP4 weights and their scale factors (kg_gemm_fp4 b and sf_b,
**   kg_dualgemm_fp4 b0, b1, sf_b0, sf_b1) before the kernel ahead of it in
**   the stream has finished; everything else it reads or writes (A, C, D,
**   global scales) waits for that kernel's completion. The caller promises
**   that the kernel ahead does not write those weights. It overlaps the
**   launch and the first weight loads with the previous kernel's tail.
**   Honoured by the FP4 skinny kernels (kg_fp4gemm_cuda_skinny_*,
**   kg_fp4dualgemm_cuda_skinny_*); every other variant, and the C and HIP
**   backends, launch as without it. Those kernels let the kernel after
**   them launch early (from their start, flag or not): a kernel of yours
**   launched after one with programmatic stream serialization must call
**   cudaGridDependencySynchronize() before it reads kg's outputs, as CUDA
**   requires of any such launch. The flag may change which kernel shape (weight
**   rows per block, K split) the launcher takes, and with it the order of the
**   f32 sums: outputs then differ from a launch without it in rounding only. */
enum { KG_EXEC_PDL = 1u };

/* How an operation runs: which backend, on which stream, with which scratch
** memory. variant, when not NULL, forces the canonical variant name. */
typedef struct kg_exec {
  kg_backend backend;
  void *stream;           /* cudaStream_t / hipStream_t; NULL is the default stream */
  void *workspace;        /* backend memory, at least the size query's bytes,
                             16-byte aligned (malloc/cudaMalloc/hipMalloc are) */
  size_t workspace_size;
  const char *variant;    /* NULL: dispatch chooses */
  unsigned flags;         /* KG_EXEC_* bits; 0: none */
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
** bias row to every row of the output (column-major: one column).
** Tensor maps (kg_gemm, kg_dualgemm and the FP4 GEMMs' CUDA `tensorop`
** variants, which read A and the B / W operands by bulk tensor copies): each
** such operand's extents are at most 2^31 - 1024 elements (m, n, k; the
** copies' coordinates are int32), and its stride between stored rows
** (columns when column-major) and either its batch stride (batched with
** batch_count > 1 and the stride not 0) or else its whole span (that stride
** times the stored rows), in bytes, are below 2^40.
** The GPU `tensorop` variants of kg_gemm and kg_dualgemm (CUDA and HIP) also
** take at most 2^27 - 1 columns of output tiles and 2^31 - 1 tiles in all.
** Dispatch passes those variants over otherwise; forced by name they are
** KG_ERROR_NOT_SUPPORTED, and kg_explain says why. */
typedef enum kg_mode {
  KG_MODE_GEMM = 0,
  KG_MODE_BATCHED,
  KG_MODE_SPLITK_SERIAL
} kg_mode;

typedef struct kg_gemm_args {
  kg_mode mode;
  int64_t m, n, k;
  int64_t batch_count;      /* KG_MODE_BATCHED: 1..65535; others: 1 */
  int64_t split_k_slices;   /* KG_MODE_SPLITK_SERIAL: 1..k, at most KG_MAX_BATCH; others: 1 */
  kg_dtype type_ab;         /* element type of A and B */
  kg_dtype type_cd;         /* element type of C and D */
  kg_layout layout_a, layout_b, layout_cd;
  const void *a; int64_t lda; int64_t batch_stride_a;
  const void *b; int64_t ldb; int64_t batch_stride_b;
  const void *c; int64_t ldc; int64_t batch_stride_c;
  void *d;       int64_t ldd; int64_t batch_stride_d;
  float alpha, beta;
} kg_gemm_args;

/* Largest batch_count and split_k_slices (grid z limit shared by every backend;
** KG_ERROR_INVALID_PROBLEM above). */
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
typedef enum kg_op {
  KG_OP_GEMM = 0, KG_OP_DUALGEMM,
  /* block-scaled FP4 (see the FP4 section below) */
  KG_OP_FP4_QUANTIZE, KG_OP_FP4_DEQUANTIZE,   /* args: kg_fp4_args */
  KG_OP_SF_SWIZZLE, KG_OP_SF_UNSWIZZLE,       /* args: kg_sf_swizzle_args */
  KG_OP_SF_RESWIZZLE,                         /* args: kg_sf_reswizzle_args */
  KG_OP_GEMM_FP4,                             /* args: kg_gemm_fp4_args */
  KG_OP_DUALGEMM_FP4,                         /* args: kg_dualgemm_fp4_args */
  KG_OP_AMAX,                                 /* args: kg_amax_args */
  /* wave64 primitives (see the Wave64 section): plain arguments, no args
  ** struct; kg_explain answers KG_ERROR_INVALID_ARGUMENT for them */
  KG_OP_WAVE_MFMA16X16X16, KG_OP_WAVE_TRANSPOSE4X4, KG_OP_WAVE_ROWSUM16,
  /* decode attention (see the "Decode attention" section below) */
  KG_OP_MATH,                                 /* args: kg_math_args */
  KG_OP_ROPE,                                 /* args: kg_rope_args */
  KG_OP_PAGED_KV_APPEND,                      /* args: kg_paged_kv_append_args (ragged) */
  KG_OP_PAGED_KV_APPEND_DECODE,               /* args: kg_paged_kv_append_args (one per request) */
  KG_OP_DECODE_SINGLE,                        /* args: kg_decode_single_args */
  KG_OP_DECODE_BATCH,                         /* args: kg_decode_args */
  KG_OP_MERGE_STATE,                          /* args: kg_merge_state_args */
  KG_OP_MERGE_STATE_IN_PLACE,                 /* args: kg_merge_state_in_place_args */
  KG_OP_MERGE_STATES,                         /* args: kg_merge_states_args */
  KG_OP_MERGE_STATES_VARLEN                   /* args: kg_merge_states_varlen_args */
} kg_op;

/* Writes into buf (always NUL-terminated, truncated to cap) one line per
** variant of the operation: "NAME: chosen" or "NAME: rejected: REASON", and
** first the argument check's verdict when it fails. args points to the op's
** argument struct (kg_gemm_args for KG_OP_GEMM, kg_dualgemm_args for
** KG_OP_DUALGEMM, the FP4 and attention ops' structs as listed at kg_op).
** Returns the status the call would have had. */
kg_status kg_explain(kg_op op, const void *args, const kg_exec *exec,
                     char *buf, size_t cap);

/* Number of generated variants compiled in, and their names. */
int kg_variant_count(void);
const char *kg_variant_name(int i);

/* ---- Block-scaled FP4: NVFP4 and MXFP4 -----------------------------------
** Elements are E2M1 (4 bits: sign, 2 exponent bits, 1 mantissa bit; values
** 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives), packed two per byte along
** K: element 2i in the low nibble, 2i+1 in the high nibble; a row of K
** elements is K/2 bytes. Each block of consecutive elements of a row shares
** one scale byte:
**   NVFP4: 16-element blocks, E4M3 scale, plus one f32 global scale per
**          tensor (per batch entry): x ~ e2m1(q) * f32(sf) / gs.
**   MXFP4: 32-element blocks, UE8M0 scale e: x ~ e2m1(q) * 2^(e-127).
** The exact rules (rounding, scale choice, layouts) are spelled out below
** and in the entry points' comments; every backend follows them bit for bit.
**
** E2M1 encoding (kg_e2m1_encode and every quantize kernel): round to
** nearest, ties to the even code, saturate to +-6 (so +-Inf -> +-6). The sign
** is kept: a negative value that rounds to zero gives code 8 (-0).
** NaN policy: NaN encodes as +0 (code 0), whatever its sign bit; NaN
** elements are also ignored by the block's amax, so one NaN never changes the
** other elements of its block. */
typedef enum kg_fp4_format { KG_FP4_NVFP4 = 0, KG_FP4_MXFP4 } kg_fp4_format;

/* Scale-factor layouts, for rows M (per group), Kv = ceil(K / block) scale
** columns and G groups (batch entries / experts):
**   KG_SF_LINEAR          off = g*(M*Kv) + m*Kv + kb; no padding.
**   KG_SF_SWIZZLED_128X4  M padded to mT*128, Kv to kT*4 with zero bytes;
**     off = g*(mT*kT*512) + (m/128)*(kT*512) + (kb/4)*512 + (m%32)*16
**           + ((m%128)/32)*4 + kb%4
**     (what block-scaled tensor-core GEMMs read; a 16-byte line holds rows
**     r, r+32, r+64, r+96 x 4 consecutive scale columns).
**   KG_SF_SWIZZLED_8X4    M padded to mT*8, Kv to kT*4 (small-M activations);
**     off = g*(mT*kT*32) + (m/8)*(kT*32) + (kb/4)*32 + (m%8)*4 + kb%4. */
typedef enum kg_sf_layout { KG_SF_LINEAR = 0, KG_SF_SWIZZLED_128X4, KG_SF_SWIZZLED_8X4 } kg_sf_layout;

/* MXFP4 scale choice for a block with amax = max |x| (exact, no f32 rounding):
**   KG_MX_ROUND_UP    2^ceil(log2(amax/6)): no element saturates (default)
**   KG_MX_ROUND_DOWN  2^floor(log2(amax/6)): elements above 6 saturate
**   KG_MX_ROUND_OCP   2^(floor(log2 amax) - 2), the OCP MX rule
** The exponent is clamped to the UE8M0 range [-127, 127] (bytes 0..254; 0xFF,
** NaN, is never written). amax = 0 gives byte 0; amax = Inf gives 254. */
typedef enum kg_mx_scale_round { KG_MX_ROUND_UP = 0, KG_MX_ROUND_DOWN, KG_MX_ROUND_OCP } kg_mx_scale_round;

/* Elements per scale block: 16 (NVFP4), 32 (MXFP4); 0 for an unknown format. */
int kg_fp4_block_size(kg_fp4_format f);
/* Scale columns of a K-element row: ceil(k / block); 0 when k < 1 or the format is unknown. */
int64_t kg_fp4_kv(kg_fp4_format f, int64_t k);

/* E2M1 code (0..15) of x by the rule above; value of a code (low 4 bits used). */
uint8_t kg_e2m1_encode(float x);
float kg_e2m1_decode(uint8_t code);

/* NVFP4 global scale gs = 448*6 / amax (f32 division), for amax = max |x| over
** the tensor. Defined as 1.0f when amax is 0, negative, NaN or Inf, and when
** the quotient is not finite (amax below about 7.9e-36): such a tensor
** quantizes as if no global scale were used. */
float kg_nvfp4_global_scale(float amax);

/* Bytes of a scale buffer, padding included: for LINEAR G*M*Kv, for the
** swizzled layouts G*mT*kT*512 (128x4) and G*mT*kT*32 (8x4).
** KG_ERROR_INVALID_ARGUMENT for an unknown layout, rows/kv/groups < 1, a NULL
** bytes pointer or a size that overflows. */
kg_status kg_sf_size(kg_sf_layout layout, int64_t rows, int64_t kv, int64_t groups, size_t *bytes);
/* Byte offset of the scale of (group g, row m, scale column kb) in a buffer of
** that layout (formulas above); -1 when an argument is out of range
** (m >= rows, kb >= kv, g < 0, unknown layout, ...). groups is not needed. */
int64_t kg_sf_offset(kg_sf_layout layout, int64_t rows, int64_t kv, int64_t g, int64_t m, int64_t kb);

/* The 6-D view of a 128x4 buffer with G groups that MMA-style kernels index:
** logical shape (32, 4, mT, 4, kT, G), element strides
** (16, 4, kT*512, 1, 512, mT*kT*512); element (m, kb, g) sits at coordinate
** (m%32, (m%128)/32, m/128, kb%4, kb/4, g). No bytes move: the view reads
** exactly the bytes kg_sf_offset(KG_SF_SWIZZLED_128X4, ...) names. */
typedef struct kg_sf_view {
  int64_t shape[6];
  int64_t stride[6];      /* in bytes (= elements: scales are bytes) */
} kg_sf_view;
kg_status kg_sf_view_128x4(int64_t rows, int64_t kv, int64_t groups, kg_sf_view *out);
/* Offset of (m, kb, g) through the view; -1 outside its (padded) shape, and for
** a view (filled in by the caller) with a negative stride or an offset past int64. */
int64_t kg_sf_view_index(const kg_sf_view *view, int64_t m, int64_t kb, int64_t g);

/* Quantize / dequantize, batch groups of [rows, k]:
**   quantize:   x (dtype) -> q (packed E2M1) + sf (scales in sf_layout)
**   dequantize: q + sf -> x (dtype)
** Per block of one row (elements kb*B .. kb*B+B-1, B the block size):
**   amax = max |x| over the block's elements (NaN ignored), in f32.
**   NVFP4 (gs = global_scale[g], or 1.0f when global_scale is NULL):
**     sf  = e4m3(gs * (amax / 6.0f))     RN-even, saturating at 448, f32 ops
**     es  = 1.0f / (f32(sf) / gs)        0 when f32(sf) / gs is 0
**     q_i = e2m1(x_i * es)
**     dequantize: x_i = e2m1(q_i) * (f32(sf) / gs), rounded to dtype
**   MXFP4: e = the scale byte (kg_mx_scale_round rule);
**     q_i = e2m1(x_i * 2^(127-e));  dequantize: x_i = e2m1(q_i) * 2^(e-127)
** K: any even k >= 2. When k is not a multiple of the block size the last
** block has fewer elements (as if zero-padded: zeros change no amax); q still
** has exactly k/2 bytes per row and Kv = ceil(k / B).
** Memory (backend memory, like every pointer of the op):
**   x: element (g, m, j) at x + g*batch_stride_x + m*ldx + j   (elements)
**   q: byte of (g, m, j) at q + g*batch_stride_q + m*ldq + j/2 (bytes)
**   sf: one buffer for all groups in sf_layout, groups = batch; sf_bytes must
**     equal kg_sf_size(sf_layout, rows, kg_fp4_kv(format, k), batch) exactly
**     (KG_ERROR_INVALID_PROBLEM otherwise, so a buffer sized for another
**     layout is caught). Quantize writes every byte of it, padding as zeros.
**   global_scale: NVFP4 only: NULL (1.0 for every group) or batch f32 values
**     in backend memory, finite and > 0 (compute them with
**     kg_nvfp4_global_scale from each group's amax). Must be NULL for MXFP4.
** Quantize writes only the k/2 bytes of each q row and the sf buffer;
** dequantize writes only the k elements of each x row. batch_stride_* are
** ignored when batch == 1; output batches must not overlap.
** mx_round is read for MXFP4 quantize only (0 = KG_MX_ROUND_UP). */
typedef struct kg_fp4_args {
  kg_fp4_format format;
  kg_sf_layout sf_layout;
  kg_mx_scale_round mx_round;
  kg_dtype dtype;               /* high-precision side: KG_F32, KG_F16, KG_BF16 */
  int64_t batch;                /* groups, >= 1 */
  int64_t rows, k;              /* per group */
  void *x;  int64_t ldx;  int64_t batch_stride_x;   /* elements; quantize reads, dequantize writes */
  void *q;  int64_t ldq;  int64_t batch_stride_q;   /* bytes */
  void *sf; size_t sf_bytes;
  const float *global_scale;
} kg_fp4_args;
typedef kg_fp4_args kg_fp4_quantize_args;
typedef kg_fp4_args kg_fp4_dequantize_args;

kg_status kg_fp4_quantize(const kg_fp4_args *args, const kg_exec *exec);
kg_status kg_fp4_dequantize(const kg_fp4_args *args, const kg_exec *exec);

/* Scale-buffer conversions; every byte of dst is written (padding as zeros),
** nothing outside it; src is only read inside its size.
**   kg_sf_swizzle:   src LINEAR -> dst `layout`  (src_bytes, dst_bytes must
**                    equal kg_sf_size of LINEAR and of `layout`)
**   kg_sf_unswizzle: src `layout` -> dst LINEAR  (padding dropped)
** layout is KG_SF_SWIZZLED_128X4 or KG_SF_SWIZZLED_8X4. swizzle(unswizzle(s))
** is byte-identical to s when s's padding is zero. */
typedef struct kg_sf_swizzle_args {
  kg_sf_layout layout;
  int64_t rows, kv, groups;
  const void *src; size_t src_bytes;
  void *dst; size_t dst_bytes;
} kg_sf_swizzle_args;
kg_status kg_sf_swizzle(const kg_sf_swizzle_args *args, const kg_exec *exec);
kg_status kg_sf_unswizzle(const kg_sf_swizzle_args *args, const kg_exec *exec);

/* Reswizzle shards: each shard is a swizzled buffer (same layout, kv and
** groups) of shard.rows rows; the result is the swizzled buffer of their rows
** concatenated per group (shard 0's rows first), i.e.
** swizzle(concat_rows(unswizzle(shard_0), ..., unswizzle(shard_n-1))),
** done in one pass without a workspace. shards is a host array of nshards
** (1..KG_SF_MAX_SHARDS) entries; each shard's sf_bytes must equal
** kg_sf_size(layout, rows, kv, groups), dst_bytes that of the total rows. */
#define KG_SF_MAX_SHARDS 64
typedef struct kg_sf_shard { const void *sf; int64_t rows; size_t sf_bytes; } kg_sf_shard;
typedef struct kg_sf_reswizzle_args {
  kg_sf_layout layout;
  int64_t kv, groups;
  int nshards;
  const kg_sf_shard *shards;
  void *dst; size_t dst_bytes;
} kg_sf_reswizzle_args;
kg_status kg_sf_reswizzle(const kg_sf_reswizzle_args *args, const kg_exec *exec);

/* ---- Block-scaled FP4 GEMM: W4A16 and W4A4 ---------------------------------
**   D = alpha * A.W^T + beta * C      (f32 accumulation)
** A: activations, m x k, row-major, lda per row:
**    W4A16 (a_fp4 = 0): dtype elements (KG_F16 or KG_BF16), lda in elements;
**    W4A4  (a_fp4 = 1): FP4 in the weights' format, [m, k/2] bytes packed like
**      W, lda in bytes; scales sf_a for m rows x kv columns in sf_layout_a,
**      sf_a_bytes = kg_sf_size(sf_layout_a, m, kv, 1); NVFP4 global scale
**      *global_scale_a (NULL: 1.0; MXFP4: must be NULL). Dequantized A is
**      e2m1(q) * f32(sf) / gsA (NVFP4), e2m1(q) * 2^(sf-127) (MXFP4).
**    With a_fp4 = 0, sf_a and global_scale_a must be NULL.
** B: FP4 weights W, n x k stored K-major ([n, k/2] bytes, element 2i of a row
**    in the low nibble), ldb bytes per row; i.e. the GEMM's k x n B operand
**    in column-major order. Scales sf_b for n rows x kv = kg_fp4_kv(format, k)
**    scale columns, one group, in sf_layout; sf_b_bytes must equal
**    kg_sf_size(sf_layout, n, kv, 1) (KG_ERROR_INVALID_PROBLEM otherwise, so
**    a buffer sized for another layout or format is caught; likewise sf_a).
**    Dequantized weight: NVFP4 e2m1(q) * f32(sf) / gs with gs =
**    *global_scale_b (NULL: 1.0; one f32 in backend memory, finite, > 0);
**    MXFP4 e2m1(q) * 2^(sf-127) (global_scale_b must be NULL).
**    Kernels multiply e2m1(q) * f32(sf) values (exact) and apply
**    alpha * (1/gsA) * (1/gsB) to the f32 sum (fp4.md: two NVFP4 operands
**    take alpha = 1/(gsA*gsB); here the global scales are passed and alpha
**    stays the caller's factor; NULL global scales with alpha = 1/(gsA*gsB)
**    give the same result up to f32 rounding).
** C, D: m x n, row-major, dtype, ldc / ldd elements; c may be NULL only when
**    beta == 0 (ldc is then not looked at); ldc == 0 adds one bias row to every row.
** k must be even (two elements per byte) and >= 2; k need not be a multiple
** of the block size (the last block is short). One problem per call (no
** batch, no split-K).
** GPU backends (CUDA, HIP): the `warp` kernels take m <= 16, the CUDA `skinny`
** kernels (W4A16: bf16, or f16 with NVFP4; weights dequantized in registers into mma.sync) m <= 512
** (above 16 in slices of A, each dequantizing the weights again), the CUDA
** `tensorop` kernels (W4A16 bf16 with 128x4 scales; Hopper wgmma, the weights
** decoded to bf16 in registers, exact) any m, the `mma` kernels (CUDA mma.sync /
** HIP MFMA on the operands dequantized to the activation type in shared memory:
** bf16, or f16 for NVFP4 only, both exact) any m; a variant that does not take m is
** KG_ERROR_NOT_SUPPORTED (kg_explain says why). GPU operands: a and b
** 16-byte aligned, lda a multiple of 8 elements (W4A4: of 16 bytes), ldb a
** multiple of 16 bytes, and for `tensorop` sf_b 16-byte aligned
** (KG_ERROR_MISALIGNED_OPERAND otherwise); `tensorop` also keeps the tensor-map
** limits of the GEMM section. The C backend takes any m, and operands
** aligned to their elements only (kg.h's first rule).
** Dispatch tries `tensorop` first, in tiles of 256 or 128 rows of A (variants
** named _tm128 have the smaller; dispatch takes the one whose rounds of blocks it
** estimates faster), and passes a variant over for m <= half its tile and for
** m <= 512 where its tiles (x 128 weight rows; kg_dualgemm_fp4: x 64 output
** columns), times the K splits it launches for few
** tiles (a thread-block cluster per tile, up to 4 blocks, each at least 512 of K;
** or through the workspace, below), fill less than 3/4 of the SMs (2/3 for a split
** grid, whose blocks are shorter; there the small-M kernels or the dequantize path
** below are faster); forced by name it takes any m.
** Split sums through the workspace (`tensorop`): clusters of 3 or 4 blocks must
** sit in one GPC, so fewer of them fit at once than SMs allow. Given a workspace
** of the size query's bytes (16-byte aligned), a `tensorop` kernel instead splits
** K over blocks that need not share a cluster, where that cuts each block's K by
** at least 8 groups of 128 (long K: on the H200, 32 tiles of 4096 x 14336 at
** m = 128 run in 4 splits instead of 3): each block stores its f32 partial tile
** in the workspace (tm x 128 x 4 bytes, then a 4-byte counter per split tile,
** zeroed by the call in stream order), and the tile's last block sums them in
** split order (the same bits whichever block is last) and writes D. The size
** query returns those bytes where the chosen `tensorop` variant would use them
** (else 0); without them the call runs the clusters and still succeeds;
** kg_explain says which ("NAME: T tiles in S K splits each, summed through the
** workspace (B bytes)", or what workspace would give more splits).
**
** Dequantize path and workspace (kg_gemm_fp4 and kg_dualgemm_fp4). The
** workspace is optional. On CUDA and HIP, when dispatch picks an `mma` kernel
** (m above the small-M limits, or no small-M kernel takes the problem; never
** after a `tensorop` kernel, which needs no workspace, uses one only for its
** split sums above, and is faster than the path where it is chosen) or a `skinny` kernel for m > 320 (up to its 512 the two are within about
** 15% of each other on the H200; the path ahead more often) and exec->workspace holds
** kg_gemm_fp4_workspace_size's bytes
** (kg_dualgemm_fp4_workspace_size's; 16-byte aligned), the call instead
** dequantizes the FP4 operands into the workspace with the kg_fp4_dequantize
** variants (W, or W0 and W1 with all their scale groups, and A for W4A4, as
** [rows, ldw] of dtype with ldw = k rounded up to 8) and runs kg_gemm /
** kg_dualgemm's tensor-core (`tensorop`) variant on them (A row-major, the
** weights as column-major B, C / D as given): the same products up to f32
** summation order (and the global-scale rounding below), faster for large
** m. With less workspace than the size query (NULL, 0, too small,
** misaligned) the call runs the in-kernel variant as before and still
** succeeds. The size query is 0 where the path
** does not apply (for a `tensorop` choice: its split sums' bytes or 0): the C backend (its blocked kernels), the small-M kernels
** (skinny: m <= 320),
** exec->variant naming an FP4 variant, f16 with MXFP4 (e2m1 * 2^(e-127) can
** leave f16's range) or with NVFP4 global scales, and problems for which
** kg_gemm / kg_dualgemm would not run a tensor-core variant (their 8-element
** alignment of a, c, d and their lds and batch strides; DualGemm ops and
** stores they lack, e.g. KG_DUAL_MUL or stored D0 / D1 in the shipped
** specs); kg_explain's last line says which ("dequantize path: not taken:
** REASON", or "dequantize + NAME: chosen instead of FP4_VARIANT ...").
** Numerics: without global scales (MXFP4, NVFP4 with NULL) the dequantized
** values e2m1 * scale are exact in bf16 and f16. The NVFP4 global scales live
** in backend memory, so they cannot be folded into kg_gemm's host-side
** alpha: the dequantize applies them (x = e2m1(q) * (f32(sf) / gs) rounded to
** bf16, kg_fp4_dequantize's rule): one rounding per element, relative
** error <= 2^-8 (half a bf16 ulp) plus that of the f32 quotient, as for a
** GEMM on bf16 weights; alpha passes through unchanged.
** Names: kg_gemm_fp4_select (kg_fp4_select) names the path
** "dequantize + <kg_gemm variant>" ("dequantize + <kg_dualgemm variant>"),
** in thread-local storage valid until the thread's next select of the same
** op (in-kernel names are static). That name in exec->variant forces the
** path with that kg_gemm / kg_dualgemm variant (any kernel, any m; GPU
** backends only): KG_ERROR_WORKSPACE_TOO_SMALL / KG_ERROR_MISALIGNED_OPERAND
** for a short / misaligned workspace, KG_ERROR_NOT_SUPPORTED (or the inner
** variant's status) where it cannot run. exec->variant naming an FP4
** variant runs that variant, never the path. */
typedef struct kg_gemm_fp4_args {
  int64_t m, n, k;
  kg_dtype dtype;               /* A (W4A16), C and D: KG_F16 or KG_BF16 */
  kg_fp4_format format;         /* of B (and of A when a_fp4) */
  kg_sf_layout sf_layout;       /* of sf_b */
  const void *a; int64_t lda;   /* elements (W4A4: bytes) */
  const void *b; int64_t ldb;   /* bytes */
  const void *sf_b; size_t sf_b_bytes;
  const float *global_scale_b;
  const void *c; int64_t ldc;
  void *d; int64_t ldd;
  float alpha, beta;
  /* W4A4 only (zero for W4A16) */
  int a_fp4;                    /* 1: A is FP4 (W4A4) */
  kg_sf_layout sf_layout_a;
  const void *sf_a; size_t sf_a_bytes;
  const float *global_scale_a;
} kg_gemm_fp4_args;

kg_status kg_gemm_fp4(const kg_gemm_fp4_args *args, const kg_exec *exec);
/* Bytes of workspace that enable the dequantize path (above) for these args
** and exec (its workspace is not looked at); 0 where the path does not apply.
** Status: that of the checks and dispatch (kg_gemm_fp4 without workspace). */
kg_status kg_gemm_fp4_workspace_size(const kg_gemm_fp4_args *args, const kg_exec *exec, size_t *bytes);
/* Name of the variant kg_gemm_fp4 would run; *name points into static storage. */
kg_status kg_gemm_fp4_select(const kg_gemm_fp4_args *args, const kg_exec *exec, const char **name);

/* ---- Block-scaled FP4 DualGemm (MoE / FFN gate-up projection) -----------------
**   D0 = alpha0 * A.W0^T + beta0 * C0     D1 = alpha1 * A.W1^T + beta1 * C1
**   D2 = op(D0, D1)                       (op on the output-typed D0, D1)
** The DualGemm semantics (kg_dualgemm, op = KG_DUAL_SWIGLU / GEGLU / MUL)
** with the operands of kg_gemm_fp4: A as there (W4A16 or, a_fp4 = 1, W4A4
** with sf_a / sf_layout_a / global_scale_a); W0 (b0) and W1 (b1) FP4 weights
** [n, k/2] bytes in `format`, each with its own scales (sf_b0, sf_b1, both in
** sf_layout) and NVFP4 global scales (global_scale_b0, global_scale_b1).
** A is read once per K step and feeds both products; each product applies
** alpha_i * (1/gsA) * (1/gsB_i) to its f32 sum.
** - store_d0 / store_d1: D0 / D1 written; d0 (d1) must be non-NULL exactly
**   when the flag is set (KG_ERROR_INVALID_ARGUMENT otherwise). D2 always.
** - C0 / C1 with ldc 0 add one bias row to every row; c0 (c1) may be NULL only
**   when beta0 (beta1) == 0. A (W4A16) and C0, C1, D0, D1, D2 are row-major, or
**   column-major with layout_a / layout_cd = KG_COL (then ldc 0 adds one bias
**   column); FP4 A (W4A4) is row-major only (KG_ERROR_INVALID_ARGUMENT).
** - mode KG_MODE_GEMM (batch_count 1) or KG_MODE_BATCHED (batch_count
**   1..65535): operand X of batch z starts at X + z*batch_stride_x (elements
**   for 16-bit operands, bytes for FP4 ones; 0 shares X across batches, and
**   an output's stride must keep batches apart). An FP4 operand X (b0, b1,
**   and a when a_fp4) with batch stride s has G = (batched and s != 0 ?
**   batch_count : 1) scale groups: sf_x_bytes must equal
**   kg_sf_size(layout, rows, kv, G), batch z reads group (s != 0 ? z : 0),
**   and global_scale_x (NVFP4) is NULL or G f32 values, one per group.
** - KG_MODE_SPLITK_SERIAL (batch_count 1): K cut into split_k_slices slices
**   (1..k) whose f32 partial sums are added in slice order, as kg_dualgemm
**   does; in the other modes split_k_slices is 0 or 1. Batched + split-K is
**   KG_ERROR_INVALID_PROBLEM.
** - ldb1 == 0: W1 is a broadcast vector, one row of k/2 bytes (and, with a
**   non-zero batch stride, one per batch) with its scales for that one row
**   (sf_b1_bytes = kg_sf_size(layout, 1, kv, G)): D1[i][j] = alpha1 *
**   (A.w1)[i] + beta1 * C1[i][j] for every j, kg_dualgemm's broadcast column.
** - Split-K with more than one slice, the broadcast W1 and column-major A, C, D
**   run on every backend through the dequantize path below (its workspace
**   then also holds kg_dualgemm's split-K sums): without the size query's
**   workspace they are KG_ERROR_WORKSPACE_TOO_SMALL, and KG_ERROR_NOT_SUPPORTED
**   where the path cannot run them (f16 activations with MXFP4 or with NVFP4
**   global scales; no kg_dualgemm variant for the op, stores and layouts). An
**   FP4 variant forced by name refuses them. ldb0 >= k/2 always.
** k even >= 2, alignment and m limits per kernel as for kg_gemm_fp4 (b0, b1
** and their batch strides 16-byte multiples on GPUs, a's batch stride a
** multiple of 8 elements / 16 bytes; for `tensorop` sf_b0 and sf_b1 16-byte
** aligned). The `tensorop` kernels take both modes (the batch is the third
** coordinate of their bulk tensor copies; dispatch counts the tiles of every
** batch); where they run, the call needs no workspace. Workspace: optional
** (needed for the path-only forms above), the dequantize path
** of kg_gemm_fp4 (above): W0 and W1 dequantized with every scale group (a
** shared operand once) and kg_dualgemm's batched mode with the matching
** batch strides (split-K: its split-K mode, its partial sums after the
** weights in the workspace; broadcast: W1 as its ldb1 = 0 column); each
** group's global scale is applied by its dequantize, so alpha0 / alpha1 pass
** through (one kg_dualgemm call for every batch). For the path-only forms
** it runs on the C backend too, with any kg_dualgemm variant. */
typedef struct kg_dualgemm_fp4_args {
  kg_mode mode;                 /* KG_MODE_GEMM, KG_MODE_BATCHED or KG_MODE_SPLITK_SERIAL */
  int64_t m, n, k;
  int64_t batch_count;
  int64_t split_k_slices;       /* KG_MODE_SPLITK_SERIAL: 1..k, at most KG_MAX_BATCH; others: 0 or 1 */
  kg_dtype dtype;               /* A (W4A16), C0, C1, D0, D1, D2: KG_F16 or KG_BF16 */
  kg_fp4_format format;         /* of B0, B1 (and A when a_fp4) */
  kg_sf_layout sf_layout;       /* of sf_b0 and sf_b1 */
  kg_dual_op op;
  kg_layout layout_a, layout_cd;   /* KG_ROW (0) or KG_COL: A (W4A16); C0, C1, D0, D1, D2 */
  int store_d0, store_d1;
  const void *a;  int64_t lda;  int64_t batch_stride_a;    /* elements (W4A4: bytes) */
  const void *b0; int64_t ldb0; int64_t batch_stride_b0;   /* bytes */
  const void *sf_b0; size_t sf_b0_bytes; const float *global_scale_b0;
  const void *b1; int64_t ldb1; int64_t batch_stride_b1;   /* bytes */
  const void *sf_b1; size_t sf_b1_bytes; const float *global_scale_b1;
  const void *c0; int64_t ldc0; int64_t batch_stride_c0;
  const void *c1; int64_t ldc1; int64_t batch_stride_c1;
  void *d0; int64_t ldd0; int64_t batch_stride_d0;
  void *d1; int64_t ldd1; int64_t batch_stride_d1;
  void *d2; int64_t ldd2; int64_t batch_stride_d2;
  float alpha0, beta0, alpha1, beta1;
  /* W4A4 only (zero for W4A16) */
  int a_fp4;
  kg_sf_layout sf_layout_a;
  const void *sf_a; size_t sf_a_bytes;
  const float *global_scale_a;
} kg_dualgemm_fp4_args;

kg_status kg_dualgemm_fp4(const kg_dualgemm_fp4_args *args, const kg_exec *exec);
/* Bytes of workspace that enable the dequantize path; 0 where it does not apply. */
kg_status kg_dualgemm_fp4_workspace_size(const kg_dualgemm_fp4_args *args, const kg_exec *exec, size_t *bytes);
/* Name of the variant kg_dualgemm_fp4 would run; *name points into static storage. */
kg_status kg_dualgemm_fp4_select(const kg_dualgemm_fp4_args *args, const kg_exec *exec, const char **name);

/* ---- amax: the input of kg_nvfp4_global_scale --------------------------------
** out[g] = max |x| over the rows x cols elements of batch group g, in f32
** (exact: max of the absolute values), for g = 0 .. batch-1. NaN elements are
** ignored (as in quantize's block amax); a group of only NaN gives 0; Inf
** gives Inf. x: dtype (KG_F32, KG_F16, KG_BF16), element (g, r, c) at
** x + g*batch_stride_x + r*ldx + c; out: batch f32 values; both in backend
** memory. ldx >= cols; batch_stride_x >= 0 (ignored when batch == 1); batch
** 1 .. KG_MAX_BATCH on every backend (KG_ERROR_INVALID_PROBLEM above). */
typedef struct kg_amax_args {
  kg_dtype dtype;
  int64_t batch, rows, cols;
  const void *x; int64_t ldx; int64_t batch_stride_x;
  float *out;
} kg_amax_args;
kg_status kg_amax(const kg_amax_args *args, const kg_exec *exec);

/* Name of the variant an FP4 op (KG_OP_FP4_*, KG_OP_SF_*, KG_OP_GEMM_FP4,
** KG_OP_DUALGEMM_FP4, KG_OP_AMAX) would run with
** these args; *name points into static storage. */
kg_status kg_fp4_select(kg_op op, const void *args, const kg_exec *exec, const char **name);

/* ---- Wave64 primitives (AMD CDNA matrix-core building blocks) ---------------
** Test-facing entry points of the wave64 template pieces (templates/wave/),
** one 64-lane wavefront per call, on the backend of exec:
**   KG_BACKEND_HIP  the gfx90a matrix cores (KG_ERROR_BACKEND_UNAVAILABLE when
**                   HIP is not compiled in or no device is visible);
**   KG_BACKEND_C    the same template code on an emulated wavefront: lane
**                   arrays, shuffles that read lane ^ mask, the MFMA as loops
**                   that read the registers in the hardware layouts.
**   KG_BACKEND_CUDA has no wave64 variants (KG_ERROR_NOT_SUPPORTED when it is
**                   available).
** Matrices are row-major in backend memory, ld in elements (>= the row
** length); 16-bit elements are bit patterns, 2-byte aligned; f32 matrices are
** 4-byte aligned (KG_ERROR_MISALIGNED_OPERAND otherwise). The kernels load
** every operand into the MFMA register layouts before they store anything, so
** d may alias an input (d == c accumulates in place). exec->variant forces a
** variant by name as elsewhere. Invalid arguments (NULL pointer, unknown dtype,
** small ld) are KG_ERROR_INVALID_ARGUMENT and nothing is written.
**
** MFMA 16x16x16 register layouts of one wave64 (lane t, element i = 0..3):
**   A: A[t%16][4(t/16)+i]   B: B[4(t/16)+i][t%16]   C, D: D[4(t/16)+i][t%16]
**
** kg_wave_mfma16x16x16: D = A.B + C; A, B 16 x 16 of dtype (KG_F16 or
**   KG_BF16); C, D 16 x 16 f32; c NULL means C = 0 (ldc ignored). f32
**   accumulation: each D element is C plus 16 exact products, summed in f32. */
kg_status kg_wave_mfma16x16x16(kg_dtype dtype, const void *a, int64_t lda, const void *b, int64_t ldb,
                               const float *c, int64_t ldc, float *d, int64_t ldd, const kg_exec *exec);

/* kg_wave_transpose4x4: transpose_4x4_half_registers. x and y are 64 x 4
** matrices of 16-bit patterns (any 16-bit type): row l is the four values
** lane l holds in its two 32-bit registers (elements 0, 1 in the low and high
** half of the first). Within each quad of lanes (rows 4q .. 4q+3) the 4 x 4
** block is transposed by three xor-shuffle rounds:
** y[4q+j][k] = x[4q+k][j]. Bits move unchanged (NaN patterns included). */
kg_status kg_wave_transpose4x4(const void *x, int64_t ldx, void *y, int64_t ldy, const kg_exec *exec);

/* kg_wave_rowsum16: row sums of a 16 x 16 fragment through the matrix core.
** S (16 x 16, dtype KG_F16 or KG_BF16) is multiplied by a B of all ones, and
** the whole product is stored: d[m*ldd + n] = sum_k S[m][k] for every column
** n (f32 accumulation, exact products). */
kg_status kg_wave_rowsum16(kg_dtype dtype, const void *s, int64_t lds, float *d, int64_t ldd, const kg_exec *exec);
/* ---- Decode attention (FlashInfer style) ------------------------------------
** RoPE, a paged KV cache (append), single and batch decode (one query token per
** request) with split-KV, and cascade merges of softmax states. Conventions of
** every backend:
** - Softmax state in base 2. For query q and key k_t the logit is
**     x_t = q.k_t * sm_scale                  (no soft cap)
**     x_t = cap * tanh(q.k_t * sm_scale / cap) (logits_soft_cap = cap > 0)
**   and s_t = x_t * log2(e). Over a token set, m = max s_t, d = sum 2^(s_t - m),
**   o = sum 2^(s_t - m) v_t / d and lse = m + log2(d): "lse" is the base-2 log-
**   sum-exp everywhere in this API (the natural one is lse * ln 2).
** - Minus infinity is IEEE -inf. An empty token set gives o = 0, lse = -inf;
**   kernels never evaluate (-inf) - (-inf). NaN inputs give NaN outputs.
** - GQA: qo head h reads kv head h / g with g = num_qo_heads / num_kv_heads;
**   num_qo_heads must be a multiple of num_kv_heads, any g >= 1.
** - Layouts: NHD [tokens, heads, head_dim], HND [heads, tokens, head_dim]. The
**   last dimension is contiguous; strides are in elements.
** - Index arrays (page tables, positions, indptr, batch indices) are int32 in
**   backend memory, like every pointer of a call. Token counts and positions
**   are below 2^31.
** - Arithmetic is f32 (inputs converted from f16 / bf16), outputs rounded to
**   the element type once. Exceptions, the matrix-core decodes: CUDA with
**   head_dim <= 128, groups of at most 16 q heads and no RoPE; HIP without
**   RoPE (wave64 MFMA 16x16x16, also on the C backend as the
**   kg_attn_c_decode_wave_* variants, run only when kg_exec.variant names
**   them): q.k and p.v run on the matrix cores (exact products, f32 sums)
**   and the softmax weights 2^(s - m) are rounded to the element type before
**   the p.v product (their f32 sum normalizes), as FlashAttention does. */

/* ---- math primitives ---------------------------------------------------------
** The attention kernels' fast math, evaluated elementwise (for tests): y[i] =
** f(x[i]) for EXP2 (2^x), LOG2, RCP (1/x), RSQRT (1/sqrt x), TANH. C uses libm;
** CUDA the PTX approximations (ex2/lg2/rcp/rsqrt .approx.ftz: subnormal inputs
** and results flush to 0; tanh from ex2 and rcp); HIP the CDNA ones. The
** shuffles work on lanes of kg_math_lanes(backend) (CUDA 32, HIP 64, C 32
** emulated lanes) in aligned groups (n must be a multiple of the lanes):
**   SHFL_XOR  y[i] = x[i ^ lane_mask], 0 <= lane_mask < lanes
**   XOR_SUM   y[i] = sum of x over the aligned group of `width` lanes holding i
**   XOR_MAX   likewise the max (NaN ignored unless every lane is NaN)
** by a butterfly of xor shuffles (width a power of two, 1 <= width <= lanes). */
typedef enum kg_math_fn {
  KG_MATH_EXP2 = 0, KG_MATH_LOG2, KG_MATH_RCP, KG_MATH_RSQRT, KG_MATH_TANH,
  KG_MATH_SHFL_XOR, KG_MATH_XOR_SUM, KG_MATH_XOR_MAX
} kg_math_fn;
typedef struct kg_math_args {
  kg_math_fn fn;
  int64_t n;
  const float *x;
  float *y;            /* must not overlap x */
  int lane_mask;       /* SHFL_XOR */
  int width;           /* XOR_SUM, XOR_MAX */
} kg_math_args;
/* Lanes of a warp / wavefront for the shuffles: 32 (C, CUDA), 64 (HIP); 0 for
** an unknown backend. */
int kg_math_lanes(kg_backend b);
kg_status kg_math_eval(const kg_math_args *args, const kg_exec *exec);

/* ---- RoPE ------------------------------------------------------------------------
** With d = rotary_dim and pair index j in [0, d/2):
**   base_j = theta^(-2j/d)
**   KG_ROPE_DEFAULT: f_j = base_j / scale
**   KG_ROPE_LLAMA31: a = old_context_len / (2 pi high_freq_factor - 2 pi low_freq_factor),
**                    b = -1 / (high_freq_factor / low_freq_factor - 1),
**                    smooth = clamp(base_j a + b, 0, 1),
**                    f_j = (1 - smooth) base_j / scale + smooth base_j
** f_j is computed in double and rounded to f32 once; the angle of a token at
** position p is the f32 product (float)p * f_j, and cos / sin are f32 functions
** of that angle. Pairs: interleave = 0 (GPT-NeoX / Llama) rotates (j, j + d/2);
** interleave = 1 (GPT-J) rotates (2j, 2j + 1). A pair (lo, hi) becomes
**   lo' = lo cos - hi sin,  hi' = hi cos + lo sin.
** Features d .. head_dim-1 are not rotated (copied when out != in). */
typedef enum kg_rope_mode { KG_ROPE_NONE = 0, KG_ROPE_DEFAULT, KG_ROPE_LLAMA31 } kg_rope_mode;
typedef struct kg_rope {
  kg_rope_mode mode;
  int interleave;            /* 0 or 1 */
  int64_t rotary_dim;        /* 0: head_dim; else even, 2 .. min(head_dim, 256) */
  float scale;               /* rope_scale > 0 (0: 1) */
  float theta;               /* rope_theta > 0 (0: 1e4) */
  float low_freq_factor;     /* LLAMA31 (0: 1) */
  float high_freq_factor;    /* LLAMA31, > low_freq_factor (0: 4) */
  float old_context_len;     /* LLAMA31, > 0 (0: 8192) */
} kg_rope;

/* Apply RoPE to q [nnz, num_qo_heads, head_dim] and / or k [nnz, num_kv_heads,
** head_dim] (either may be NULL, not both), writing q_out / k_out (which may
** equal q / k with the same strides: in place; otherwise they must not
** overlap the inputs). Positions: pos_ids[i] for token i (nnz values >= 0),
** or, when pos_ids is NULL, request offsets: token i with indptr[b] <= i <
** indptr[b+1] is at offsets[b] + i - indptr[b] (batch requests, indptr
** non-decreasing from 0 to nnz). rope.mode must not be KG_ROPE_NONE. */
typedef struct kg_rope_args {
  kg_dtype dtype;
  int64_t nnz, head_dim;
  int64_t num_qo_heads, num_kv_heads;
  const void *q; int64_t q_stride_n, q_stride_h;
  void *q_out; int64_t q_out_stride_n, q_out_stride_h;
  const void *k; int64_t k_stride_n, k_stride_h;
  void *k_out; int64_t k_out_stride_n, k_out_stride_h;
  const int32_t *pos_ids;
  int64_t batch;
  const int32_t *indptr, *offsets;
  kg_rope rope;
} kg_rope_args;
kg_status kg_rope_apply(const kg_rope_args *args, const kg_exec *exec);

/* ---- paged KV cache ------------------------------------------------------------
** K and V live in pages of page_size token slots. Element (page p, head h,
** slot e, feature f) of K sits at
**   k_data + p*stride_page + h*stride_h + e*stride_n + f
** with NHD: stride_n = num_kv_heads*head_dim, stride_h = head_dim; HND:
** stride_n = head_dim, stride_h = page_size*head_dim; stride_page defaults
** (0) to num_kv_heads*page_size*head_dim and may be larger (e.g. K and V
** interleaved per page: v_data = k_data + that size, stride_page twice it).
** V likewise from v_data. Request b owns pages indices[indptr[b] ..
** indptr[b+1]), in order; its length is
**   (indptr[b+1] - indptr[b] - 1) * page_size + last_page_len[b]
** (0 when it has no page), token t sits in page indices[indptr[b] + t /
** page_size], slot t % page_size. Rules: indptr[0] >= 0, non-decreasing; page
** ids in [0, num_pages); last_page_len[b] in [1, page_size] when request b has
** pages. The C backend checks them (KG_ERROR_INVALID_PROBLEM); GPU kernels
** cannot read them on the host: lengths are clamped to the pages, decode
** reads page 0 for an out-of-range page id and append skips such a token, so
** a bad table gives wrong values but never an access outside the cache. */
typedef enum kg_kv_layout { KG_KV_NHD = 0, KG_KV_HND } kg_kv_layout;
typedef struct kg_paged_kv {
  kg_kv_layout layout;
  kg_dtype dtype;
  int64_t num_pages, page_size, num_kv_heads, head_dim;
  void *k_data, *v_data;
  int64_t stride_page;           /* elements; 0: num_kv_heads*page_size*head_dim */
  int64_t batch;                 /* requests */
  const int32_t *indices;        /* [indptr[batch]] page ids */
  const int32_t *indptr;         /* [batch + 1] */
  const int32_t *last_page_len;  /* [batch] */
} kg_paged_kv;
/* Element offset of (page, head, slot) by the formula above; -1 when kv is
** NULL or an argument is out of range. */
int64_t kg_paged_kv_offset(const kg_paged_kv *kv, int64_t page, int64_t head, int64_t slot);

/* Append tokens to the cache. The page table must already count them (the
** caller allocates pages and advances last_page_len first), the appended
** rows are k, v [nnz, num_kv_heads, head_dim] with the given strides.
**   kg_paged_kv_append:        token i goes to request batch_indices[i] at
**                              position positions[i] (< that request's length)
**   kg_paged_kv_append_decode: one token per request (nnz == kv.batch): token
**                              b goes to position length(b) - 1 of request b;
**                              batch_indices and positions must be NULL.
** Nothing else of the cache is written. Two tokens naming the same slot is
** invalid (the C backend refuses it; on a GPU either may win). */
typedef struct kg_paged_kv_append_args {
  kg_paged_kv kv;
  int64_t nnz;
  const void *k; int64_t k_stride_n, k_stride_h;
  const void *v; int64_t v_stride_n, v_stride_h;
  const int32_t *batch_indices;  /* [nnz] */
  const int32_t *positions;      /* [nnz] */
} kg_paged_kv_append_args;
kg_status kg_paged_kv_append(const kg_paged_kv_append_args *args, const kg_exec *exec);
kg_status kg_paged_kv_append_decode(const kg_paged_kv_append_args *args, const kg_exec *exec);

/* ---- decode ----------------------------------------------------------------------
** o[b, h] = softmax over the request's tokens (section conventions) of q[b, h],
** with k_t, v_t of kv head h / g, and lse[b, h] (base 2) when lse is not NULL.
** Options (kg_decode_params):
** - sm_scale: 0 means 1/sqrt(head_dim); logits_soft_cap > 0 caps the logits.
** - sliding_window W >= 1: only the last W tokens of each request (positions
**   >= length - W; FlashInfer's window_left is W - 1); 0: all of them.
** - rope.mode != KG_ROPE_NONE: RoPE (section above) on q at its position (the
**   request's length - 1 unless given) and on each k_t at its position t, on
**   the fly in f32 (the cache keeps unrotated keys).
** - kv_chunk_size: 0 lets the planner split long requests across blocks; > 0
**   forces chunks of that many tokens.
** Split-KV: the tokens of a request (its window) are cut into num_chunks
** chunks of chunk_size tokens (the last takes the rest), each gives a state
** (o, lse) in the workspace, and a merge (as kg_merge_states) combines them.
** The planner (kg_decode_plan) chooses chunk_size from batch, kv heads, the
** longest request and the device's SM count so the blocks fill the device;
** the C backend never splits unless kv_chunk_size forces it. Ask the
** workspace size for the same args and exec (0 when nothing is split).
** GPU variants stream K and V in 16-byte vectors: k_data and v_data must be
** 16-byte aligned and stride_page a multiple of 8 elements
** (KG_ERROR_MISALIGNED_OPERAND otherwise); head_dim 64, 128 or 256 and f16 /
** bf16 as shipped (kg_explain lists the variants). */
typedef struct kg_decode_params {
  float sm_scale;
  float logits_soft_cap;
  int64_t sliding_window;
  kg_rope rope;
  int64_t kv_chunk_size;
} kg_decode_params;

/* Batch decode over a paged cache: q, o [batch, num_qo_heads, head_dim] of
** kv.dtype with the given strides, lse [batch, num_qo_heads] f32 or NULL.
** q_rope_pos: NULL (q of request b at length(b) - 1) or [batch] positions.
** max_kv_len: a host bound on every request's length, read only by the
** planner (0: unknown, no split; a request longer than the bound is still
** computed exactly, its last chunk is longer). kv.head_dim is the head dim. */
typedef struct kg_decode_args {
  int64_t num_qo_heads;
  const void *q; int64_t q_stride_n, q_stride_h;
  void *o; int64_t o_stride_n, o_stride_h;
  float *lse;
  kg_paged_kv kv;
  const int32_t *q_rope_pos;
  int64_t max_kv_len;
  kg_decode_params params;
} kg_decode_args;

/* Single decode: one request whose K and V are contiguous tensors, NHD
** [kv_len, num_kv_heads, head_dim] or HND [num_kv_heads, kv_len, head_dim];
** q, o [num_qo_heads, head_dim] contiguous, lse [num_qo_heads] or NULL.
** q_rope_pos: -1 (kv_len - 1) or the position of q. kv_len >= 1. */
typedef struct kg_decode_single_args {
  kg_dtype dtype;
  kg_kv_layout layout;
  int64_t num_qo_heads, num_kv_heads, head_dim, kv_len;
  const void *q;
  const void *k, *v;
  void *o;
  float *lse;
  int64_t q_rope_pos;
  kg_decode_params params;
} kg_decode_single_args;

/* What a decode call will do: chunks per request and their size (tokens),
** the blocks of the main kernel, the SM count the planner used (1 on C) and
** the workspace bytes. */
typedef struct kg_decode_plan_info {
  int64_t chunk_size, num_chunks, blocks, sm_count;
  size_t workspace_bytes;
} kg_decode_plan_info;

kg_status kg_decode_batch(const kg_decode_args *args, const kg_exec *exec);
kg_status kg_decode_workspace_size(const kg_decode_args *args, const kg_exec *exec, size_t *bytes);
kg_status kg_decode_plan(const kg_decode_args *args, const kg_exec *exec, kg_decode_plan_info *plan);
kg_status kg_decode_select(const kg_decode_args *args, const kg_exec *exec, const char **name);
kg_status kg_decode_single(const kg_decode_single_args *args, const kg_exec *exec);
kg_status kg_decode_single_workspace_size(const kg_decode_single_args *args, const kg_exec *exec,
                                          size_t *bytes);
kg_status kg_decode_single_plan(const kg_decode_single_args *args, const kg_exec *exec, kg_decode_plan_info *plan);

/* ---- cascade: merging softmax states ----------------------------------------------
** A state is (v, s): v [num_heads, head_dim] of dtype, s its base-2 lse (f32).
** Merging states i: M = max s_i; w_i = 2^(s_i - M); v = sum w_i v_i / sum w_i;
** s = M + log2(sum w_i), in f32; when every s_i is -inf (or there is none):
** v = 0, s = -inf. One state merges to itself (v copied, s kept). Tensors are
** contiguous: v [rows, num_heads, head_dim], s [rows, num_heads]. s_out may be
** NULL (not written). Outputs must not overlap inputs. */
typedef struct kg_merge_state_args {
  kg_dtype dtype;
  int64_t n, num_heads, head_dim;
  const void *v_a; const float *s_a;
  const void *v_b; const float *s_b;
  void *v_out; float *s_out;
} kg_merge_state_args;
/* (v, s)[r] = merge((v, s)[r], (v_other, s_other)[r]) for every row r whose
** mask[r] != 0 (mask NULL: every row); other rows are left as they are. */
typedef struct kg_merge_state_in_place_args {
  kg_dtype dtype;
  int64_t n, num_heads, head_dim;
  void *v; float *s;
  const void *v_other; const float *s_other;
  const uint8_t *mask;
} kg_merge_state_in_place_args;
/* v [n, num_states, num_heads, head_dim], s [n, num_states, num_heads]: row r
** of the output merges its num_states states (num_states >= 0). */
typedef struct kg_merge_states_args {
  kg_dtype dtype;
  int64_t n, num_states, num_heads, head_dim;
  const void *v; const float *s;
  void *v_out; float *s_out;
} kg_merge_states_args;
/* v [indptr[n], num_heads, head_dim], s [indptr[n], num_heads]: row r of the
** output merges states indptr[r] .. indptr[r+1]-1 (indptr non-decreasing from
** 0; the C backend checks it). */
typedef struct kg_merge_states_varlen_args {
  kg_dtype dtype;
  int64_t n, num_heads, head_dim;
  const int32_t *indptr;
  const void *v; const float *s;
  void *v_out; float *s_out;
} kg_merge_states_varlen_args;
kg_status kg_merge_state(const kg_merge_state_args *args, const kg_exec *exec);
kg_status kg_merge_state_in_place(const kg_merge_state_in_place_args *args, const kg_exec *exec);
kg_status kg_merge_states(const kg_merge_states_args *args, const kg_exec *exec);
kg_status kg_merge_states_varlen(const kg_merge_states_varlen_args *args, const kg_exec *exec);

/* Name of the variant an attention op (KG_OP_MATH .. KG_OP_MERGE_STATES_VARLEN)
** would run with these args; *name points into static storage. */
kg_status kg_attn_select(kg_op op, const void *args, const kg_exec *exec, const char **name);

#ifdef __cplusplus
}
#endif
#endif /* KG_H */
