/*
** kg_internal.h -- contract between the runtime and generated variants.
**
** Generated sources (C, CUDA, HIP) include this header; it is C and C++.
** A variant exports one launch function and one workspace function with
** C linkage. The runtime calls them only after kg_gemm_check() succeeded and
** the variant's descriptor predicates accepted the arguments, so launch
** functions may assume: sizes >= 1, extents fit int64, lds cover the layout,
** pointers and lds meet the descriptor's alignment, mode constraints hold.
*/
#ifndef KG_INTERNAL_H
#define KG_INTERNAL_H

#include "kg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Descriptor layout wildcard: the variant takes either layout at run time. */
#define KG_LAYOUT_ANY (-1)

/* Bit of kg_mode m in kg_variant.modes. */
#define KG_MODE_BIT(m) (1u << (unsigned)(m))
#define KG_MODES_ALL (KG_MODE_BIT(KG_MODE_GEMM) | KG_MODE_BIT(KG_MODE_BATCHED) | \
                      KG_MODE_BIT(KG_MODE_SPLITK_SERIAL))

typedef kg_status (*kg_gemm_launch_fn)(const kg_gemm_args *args, const kg_exec *exec);
typedef size_t (*kg_gemm_workspace_fn)(const kg_gemm_args *args);
typedef kg_status (*kg_dualgemm_launch_fn)(const kg_dualgemm_args *args, const kg_exec *exec);
typedef size_t (*kg_dualgemm_workspace_fn)(const kg_dualgemm_args *args);

/* ---- FP4 ops (kg_fp4.c) ---------------------------------------------------
** Quantize / dequantize variants take the public kg_fp4_args after
** kg_fp4.c checked them. Scale-buffer conversions (swizzle, unswizzle,
** reswizzle) take a kg_sf_job: one destination buffer whose rows are the
** concatenation of nshards source buffers (1 for swizzle and unswizzle). */
typedef struct kg_sf_job {
  int src_layout, dst_layout;     /* kg_sf_layout */
  int64_t rows, kv, groups;       /* rows: total (destination) rows per group */
  int nshards;
  const uint8_t *src[KG_SF_MAX_SHARDS];
  int64_t row0[KG_SF_MAX_SHARDS + 1];  /* shard s holds rows row0[s] .. row0[s+1]-1 */
  uint8_t *dst;
} kg_sf_job;
typedef kg_status (*kg_fp4_launch_fn)(const kg_fp4_args *args, const kg_exec *exec);
typedef kg_status (*kg_sf_launch_fn)(const kg_sf_job *job, const kg_exec *exec);
/* FP4 GEMM (W4A16, W4A4), FP4 DualGemm, amax: the public args after kg_fp4.c
** checked them. */
typedef kg_status (*kg_gemm_fp4_launch_fn)(const kg_gemm_fp4_args *args, const kg_exec *exec);
typedef kg_status (*kg_dualgemm_fp4_launch_fn)(const kg_dualgemm_fp4_args *args, const kg_exec *exec);
typedef kg_status (*kg_amax_launch_fn)(const kg_amax_args *args, const kg_exec *exec);

/* ---- Wave64 primitives (kg_wave.c) -------------------------------------------
** One wavefront's operands after kg_wave.c checked them (pointers non-NULL
** where the op reads or writes them, lds cover the rows):
**   mfma16x16x16: a = A, b = B (16 x 16, 16-bit), c = C (16 x 16 f32, or
**                 NULL for C = 0), d = D (16 x 16 f32)
**   transpose4x4: a = X, d = Y (64 x 4, 16-bit); b, c unused
**   rowsum16:     a = S (16 x 16, 16-bit), d = D (16 x 16 f32); b, c unused
** Row-major; lds in elements. */
typedef struct kg_wave_job {
  const void *a, *b;
  const float *c;
  void *d;
  int64_t lda, ldb, ldc, ldd;
} kg_wave_job;
typedef kg_status (*kg_wave_launch_fn)(const kg_wave_job *job, const kg_exec *exec);

/* One generated variant. The table lists them most specialized first and a
** generic fallback last for each (op, backend, types) key; dispatch takes
** the first entry whose predicates all hold. */
typedef struct kg_variant {
  const char *name;       /* canonical name: file name, symbol and identity */
  const char *spec;       /* "specs/gemm.lua:12": where the variant was declared */
  kg_op op;
  kg_backend backend;
  const char *arch;       /* "host", "sm_90a", "gfx90a" */
  const char *kernel;     /* algorithm: "blocked", "simt", "tensorop" */
  kg_dtype type_ab, type_cd;
  int layout_a, layout_b, layout_cd;  /* kg_layout or KG_LAYOUT_ANY (layout_b: B0 for DualGemm) */
  int layout_b1;          /* DualGemm: B1's layout or KG_LAYOUT_ANY */
  int dual_op;            /* DualGemm: kg_dual_op */
  int store_d0, store_d1; /* DualGemm: D0 / D1 written */
  unsigned modes;         /* KG_MODE_BIT set */
  int align;              /* elements: pointers, lds, batch strides must be multiples */
  int max_m;              /* largest m the variant takes; 0: no limit */
  int tile_m, tile_n, tile_k, stages;
  kg_gemm_launch_fn gemm_launch;
  kg_gemm_workspace_fn gemm_workspace;
  kg_dualgemm_launch_fn dualgemm_launch;
  kg_dualgemm_workspace_fn dualgemm_workspace;
  /* FP4 ops: type_ab = type_cd = the high-precision dtype (quantize,
  ** dequantize; KG_F32 and unused for the scale conversions) */
  int fp4_format;         /* kg_fp4_format, -1 for the scale conversions */
  int sf_layout;          /* kg_sf_layout (conversions: the swizzled side) */
  int mx_round;           /* kg_mx_scale_round for MXFP4 quantize, else -1 */
  kg_fp4_launch_fn fp4_launch;
  kg_sf_launch_fn sf_launch;
  /* KG_OP_GEMM_FP4, KG_OP_DUALGEMM_FP4: type_ab = type_cd = the C/D dtype,
  ** fp4_format and sf_layout of B, a_fp4 (W4A4) with sf_layout_a, max_m,
  ** modes, align (> 1: the 16-byte vector rule of kg.h); DualGemm: dual_op,
  ** store_d0, store_d1. KG_OP_AMAX: type_ab = the input dtype. */
  int a_fp4;              /* 1: A is FP4 too (W4A4) */
  int sf_layout_a;        /* W4A4: kg_sf_layout of A's scales, else -1 */
  kg_gemm_fp4_launch_fn gemm_fp4_launch;
  kg_dualgemm_fp4_launch_fn dualgemm_fp4_launch;
  kg_amax_launch_fn amax_launch;
  /* KG_OP_WAVE_*: type_ab = the 16-bit input type (mfma, rowsum) */
  kg_wave_launch_fn wave_launch;
} kg_variant;

extern const kg_variant kg_variants[];
extern const int kg_variants_count;

/* Record a backend failure message for kg_last_backend_error (copied). */
void kg__set_backend_error(const char *msg);

/* Shared with kg_fp4.c (defined in kg.c): the explain text sink, its
** printf, and the exec check every entry point runs. */
typedef struct kg__sink { char *buf; size_t cap, len; } kg__sink;
void kg__say(kg__sink *s, const char *fmt, ...);
kg_status kg__check_exec(const kg_exec *exec, kg__sink *sink);
/* Why variant v cannot run the checked problem ctx (NULL when it can); sets
** *misaligned when the objection is alignment alone. */
typedef const char *(*kg__rejects_fn)(const kg_variant *v, const void *ctx, const kg_exec *exec, int *misaligned);
/* First-fit scan of the variants of op (only exec->variant when set), one
** explain line per candidate. KG_ERROR_MISALIGNED_OPERAND when nothing fits
** and some candidate objected only to alignment, else KG_ERROR_NOT_SUPPORTED. */
kg_status kg__first_fit(kg_op op, kg__rejects_fn rejects, const void *ctx, const kg_exec *exec,
                        const kg_variant **out, kg__sink *sink);
/* kg_fp4.c: 1 when op is an FP4 op; its kg_explain (checks, selection,
** one line per candidate into sink). */
int kg__fp4_op(kg_op op);
kg_status kg__fp4_explain(kg_op op, const void *args, const kg_exec *exec, kg__sink *sink);

/* Element strides of a matrix stored with layout l and leading dimension ld:
** X[i][j] sits at i*(*rs) + j*(*cs). */
static inline void kg__strides(int l, int64_t ld, int64_t *rs, int64_t *cs) {
  if (l == KG_ROW) { *rs = ld; *cs = 1; } else { *rs = 1; *cs = ld; }
}

#ifdef __cplusplus
}
#endif
#endif /* KG_INTERNAL_H */
