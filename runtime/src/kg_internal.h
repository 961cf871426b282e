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
#if defined(_OPENMP)
#include <omp.h>
#endif

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

/* ---- attention ops (kg_attn.c) ---------------------------------------------
** Variants take jobs that kg_attn.c builds after its checks: every size >= 1
** unless stated, strides resolved, options resolved to their effective
** values (sm_scale, RoPE frequencies), so kernels never re-validate.
** RoPE frequencies: freq[j] is f_j of kg.h (double formula rounded to f32);
** the angle at position p is (float)p * freq[j]; rotary_dim 0: no RoPE. */
#define KG_ROPE_MAX_PAIRS 128
typedef struct kg_rope_freqs {
  int rotary_dim;
  int interleave;
  float freq[KG_ROPE_MAX_PAIRS];
} kg_rope_freqs;

/* Apply RoPE: operand i = 0 (q) and 1 (k); heads[i] == 0 when absent. */
typedef struct kg_rope_job {
  int64_t nnz, head_dim;
  int64_t heads[2];
  const void *in[2];
  void *out[2];
  int64_t in_sn[2], in_sh[2], out_sn[2], out_sh[2];
  const int32_t *pos_ids;                 /* NULL: indptr / offsets of batch requests */
  int64_t batch;
  const int32_t *indptr, *offsets;
  kg_rope_freqs rope;
} kg_rope_job;

/* The paged cache as kernels see it. indices NULL: one contiguous sequence
** (single decode): page 0, page_size = its length, no indptr/last_page_len. */
typedef struct kg_kv_job {
  int64_t num_pages, page_size, num_kv_heads, head_dim;
  int64_t stride_page, stride_n, stride_h;   /* elements */
  const void *k, *v;                         /* append writes through them */
  int64_t batch;
  const int32_t *indices, *indptr, *last_page_len;
} kg_kv_job;

/* Append nnz tokens; batch_indices NULL: decode append (token b -> request b
** at its length - 1). GPU kernels skip tokens whose request or position is
** out of range. */
typedef struct kg_append_job {
  kg_kv_job kv;
  int64_t nnz;
  const void *k, *v;
  int64_t k_sn, k_sh, v_sn, v_sh;
  const int32_t *batch_indices, *positions;
} kg_append_job;

/* Decode: logits x = q.k * logit_scale (soft_cap == 0) or
** soft_cap_log2 * tanh(q.k * logit_scale) (soft cap), already in base 2
** (logit_scale = sm_scale log2 e, resp. sm_scale / cap and cap log2 e).
** Chunk c of request b covers [w0 + c*chunk_size, ...) of its window, the
** last chunk up to the request's end. num_chunks > 1: states go to part_o
** [batch][num_chunks][num_qo_heads][head_dim] (normalized) and part_lse
** [batch][num_chunks][num_qo_heads], then are merged into o / lse. */
typedef struct kg_decode_job {
  kg_kv_job kv;
  int64_t num_qo_heads, group;
  const void *q; int64_t q_sn, q_sh;
  void *o; int64_t o_sn, o_sh;
  float *lse;                                /* [batch][num_qo_heads] or NULL */
  float logit_scale, soft_cap_log2;
  int soft_cap;
  int64_t window_left;                       /* < 0: none */
  const int32_t *q_pos;                      /* NULL: q_pos_fixed, or length - 1 when that is < 0 */
  int64_t q_pos_fixed;
  kg_rope_freqs rope;
  int64_t chunk_size, num_chunks;
  float *part_o, *part_lse;
} kg_decode_job;

/* Merge output row r of n over (heads, head_dim):
**   pair (v_b != NULL): states v_a[r], v_b[r]
**   set: states lo .. hi-1 of v_a, lo = indptr ? indptr[r] : r*k, hi likewise
** Rows are [num_heads][head_dim] (lse [num_heads]); mask (pair only): rows
** with mask[r] == 0 are skipped. v_out may equal v_a in pair mode (in place). */
typedef struct kg_merge_job {
  int64_t n, num_heads, head_dim, k;
  const void *v_a; const float *s_a;
  const void *v_b; const float *s_b;
  const int32_t *indptr;
  const uint8_t *mask;
  void *v_out; float *s_out;
} kg_merge_job;

typedef kg_status (*kg_math_launch_fn)(const kg_math_args *args, const kg_exec *exec);
typedef kg_status (*kg_rope_launch_fn)(const kg_rope_job *job, const kg_exec *exec);
typedef kg_status (*kg_append_launch_fn)(const kg_append_job *job, const kg_exec *exec);
typedef kg_status (*kg_decode_launch_fn)(const kg_decode_job *job, const kg_exec *exec);
typedef kg_status (*kg_merge_launch_fn)(const kg_merge_job *job, const kg_exec *exec);

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
  int max_tiles_per_sm;   /* GEMM / DualGemm on GPUs: most tiles (tile_m x tile_n, times batches
                          ** or K slices) per SM of the device the variant takes; 0: no limit */
  int path_m;             /* FP4 small-M kernels: above this m the GPU dequantize path runs
                          ** instead where the workspace allows; 0: never */
  int tile_m, tile_n, tile_k, stages;
  int tma;                /* 1: A and the B / W operands are read by bulk tensor copies, whose tensor
                          ** maps limit them (kg__tma_rejects) */
  int fill_m;             /* FP4 tensorop kernels (tile_m rows of A x tile_n output columns): dispatch
                          ** passes them over for m <= tile_m / 2, and for m <= fill_m where their
                          ** tiles fill less than 3/4 of the SMs (the small-M kernels or the
                          ** dequantize path run there); 0: no such rule */
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
  /* attention ops: type_ab = type_cd = the element type; kv_layout
  ** (kg_kv_layout, -1: none); head_dim (0: any); decode: tile_m = q heads per
  ** block, tile_n = tokens per stage, stages, blocks_per_sm (what the split
  ** planner assumes resident), align (> 1: 16-byte K/V vectors), rope */
  int kv_layout;
  int head_dim;
  int blocks_per_sm;
  int rope;               /* decode: 1 when it applies RoPE on the fly */
  kg_math_launch_fn math_launch;
  kg_rope_launch_fn rope_launch;
  kg_append_launch_fn append_launch;
  kg_decode_launch_fn decode_launch;
  kg_merge_launch_fn merge_launch;
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
/* A typed pointer argument of a call and the alignment its elements need (their size: 2 for
** f16 / bf16, 4 for f32, float scales and int32 tables); NULL pointers are not looked at. */
typedef struct kg__ptr_rule { const char *name; const void *ptr; size_t align; } kg__ptr_rule;
/* KG_ERROR_MISALIGNED_OPERAND, naming the first of rules[0 .. n) whose pointer is not a multiple
** of its alignment (every backend loads and stores the elements as their type), else KG_SUCCESS.
** Callers check before they read any of the pointers' memory. */
kg_status kg__check_aligned(const kg__ptr_rule *rules, int n, kg__sink *sink);
#define KG__COUNT(array) ((int)(sizeof(array) / sizeof((array)[0])))
/* Argument check failure: says why into the sink (kg_explain), returns st. */
#define KG__FAIL(st, ...) do { kg__say(sink, "arguments: " __VA_ARGS__); kg__say(sink, "\n"); return (st); } while (0)
/* Why variant v cannot run the checked problem ctx (NULL when it can); sets
** *misaligned when the objection is alignment alone. */
typedef const char *(*kg__rejects_fn)(const kg_variant *v, const void *ctx, const kg_exec *exec, int *misaligned);
/* First-fit scan of the variants of op (only exec->variant when set), one
** explain line per candidate. KG_ERROR_MISALIGNED_OPERAND when nothing fits
** and some candidate objected only to alignment, else KG_ERROR_NOT_SUPPORTED. */
kg_status kg__first_fit(kg_op op, kg__rejects_fn rejects, const void *ctx, const kg_exec *exec,
                        const kg_variant **out, kg__sink *sink);
/* One operand of a variant's bulk tensor copies (kg_variant.tma), as its launcher encodes the tensor
** map: inner (contiguous) and outer extents in elements, the byte strides of dimensions 1 (rows) and
** 2 (batches, or the whole operand where it has one). */
typedef struct kg__tma_map {
  const char *name;
  int64_t inner, outer;
  int64_t stride1, stride2;
} kg__tma_map;
/* The limits of such maps: extents of at most KG__TMA_EXTENT_MAX elements (the kernels address
** boxes, at most 1024 elements past a tile's start, with int32 coordinates), strides below
** 2^40 bytes (cuTensorMapEncodeTiled). NULL when maps[0 .. n) keep them, else why not (in why). */
#define KG__TMA_EXTENT_MAX (((int64_t)1 << 31) - 1024)
#define KG__TMA_STRIDE_LIMIT ((int64_t)1 << 40)
const char *kg__tma_rejects(const kg__tma_map *maps, int n, char *why, size_t why_size);
/* a * b * c for non-negative factors, or INT64_MAX where it passes int64 */
int64_t kg__mul3_sat(int64_t a, int64_t b, int64_t c);

/* kg_fp4.c: 1 when op is an FP4 op; its kg_explain (checks, selection,
** one line per candidate into sink). */
int kg__fp4_op(kg_op op);
kg_status kg__fp4_explain(kg_op op, const void *args, const kg_exec *exec, kg__sink *sink);

/* kg_attn.c: 1 when op is an attention op; its kg_explain. */
int kg__attn_op(kg_op op);
kg_status kg__attn_explain(kg_op op, const void *args, const kg_exec *exec, kg__sink *sink);
/* The split-KV rule of the decode planner (kg.h "decode"), for explicit device
** figures: blocks = (request, kv head, group tile) blocks, slots = sm_count *
** blocks_per_sm. blocks >= slots: one chunk. Else each request is cut into
** at most slots / blocks chunks (one wave) of at least 256 tokens, a multiple
** of tile tokens; a single resulting chunk covers max_len. */
void kg__decode_split(int64_t blocks, int64_t max_len, int64_t sm_count, int64_t blocks_per_sm, int64_t tile,
                      int64_t *chunk, int64_t *chunks);
/* Streaming multiprocessors (compute units) of the current device, queried
** once per process by the backend glue; 0 when unknown. */
int kg__cuda_sm_count(void);
int kg__hip_sm_count(void);
/* SMs (CUs) of backend b's current device; 1 for the C backend or when unknown. */
int kg__sm_count(kg_backend b);

/* FP4 tensorop kernels: how `tiles` output tiles run on `sms` SMs (one block per SM; the kernels
** step K in groups of 128, two 64-wide tiles per wait on the MMAs). A launch of the first `whole`
** tiles (launch order), each one block over all of K; then a launch of the others, each tile
** `splits` blocks that sum their partial tiles: one thread-block cluster per tile, through
** distributed shared memory, or (`global`, only where the caller's workspace holds
** kg__fp4t_ws_bytes) through the workspace, the tile's last block to finish summing them.
** Every split keeps 4 groups (512 of K), and a launch of split tiles has the most splits (at most
** 4) whose blocks all run at once: clusters of 2 x tiles blocks within the SMs, of 3 or 4 x tiles
** within 9/10 of them (clusters stay inside one GPC; H200, 132 SMs, one block per SM: at most 66
** clusters of 2, 39 of 3, 30 of 4, 15 of 8; a grid of 32 clusters of 4 took two rounds:
** 4096 x 4096 at m = 128, 45 us against 50 unsplit); splits through the workspace need no cluster,
** so any splits x tiles <= SMs, and they are taken where they cut a block's K groups by at least
** KG__FP4T_GLOBAL_MIN against the clusters' splits: their sums cost about that much (H200, 128-row
** tiles, 32 tiles: k 14336, 4 splits through the workspace against 3 clusters, 28 groups against
** 38, 44.2 against 47.0 us; k 4096, 8 against 11, 24.7 against 20.8).
** - Tiles that fill at most half the SMs: all split (whole 0).
** - Tiles of several rounds whose last round would fill at most half the SMs: the whole rounds,
**   then the last round's tiles split, so that it takes a half to a quarter of a round.
** - Else every tile whole (splits 1).
** ws: 1 where the workspace may be used. */
typedef struct kg__fp4t_plan { int64_t whole; int splits; int global; } kg__fp4t_plan;
#define KG__FP4T_GLOBAL_MIN 8
static inline int kg__fp4t_split_count(int64_t tiles, int64_t k, int sms, int global) {
  const int64_t groups = (k + 127) / 128;
  if (tiles < 1 || 2 * tiles > sms) return 1;
  for (int64_t s = groups / 4 < 4 ? groups / 4 : 4; s >= 2; s--)
    if (tiles * s <= (s == 2 || global ? (int64_t)sms : (int64_t)sms * 9 / 10)) return (int)s;
  return 1;
}
static inline kg__fp4t_plan kg__fp4t_plan_for(int64_t tiles, int64_t k, int sms, int ws) {
  kg__fp4t_plan p = { tiles, 1, 0 };
  if (tiles < 1 || sms < 1) return p;
  const int64_t whole = 2 * tiles <= sms ? 0 : tiles / sms * sms;
  const int s = kg__fp4t_split_count(tiles - whole, k, sms, 0);
  const int g = ws ? kg__fp4t_split_count(tiles - whole, k, sms, 1) : 1;
  const int64_t groups = (k + 127) / 128;
  if (g > s && (groups + s - 1) / s - (groups + g - 1) / g >= KG__FP4T_GLOBAL_MIN) {
    p.whole = whole; p.splits = g; p.global = 1;
  }
  else if (s > 1) { p.whole = whole; p.splits = s; }
  return p;
}

/* FP4 tensorop kernels: workspace bytes of plan p of `tiles` tiles of tm rows of A (x 128 weight
** rows, both forms): each split block's f32 partial tile, then a 4-byte counter per split tile
** (zeroed by the launch), 16-byte aligned; 0 where p does not split through the workspace. */
static inline size_t kg__fp4t_ws_bytes(kg__fp4t_plan p, int64_t tiles, int tm) {
  if (!p.global) return 0;
  const int64_t n = tiles - p.whole;
  return (size_t)(n * p.splits * tm * 128 * 4 + (n * 4 + 15) / 16 * 16);
}

/* FP4 tensorop kernels: 1 where a workspace ws of ws_size bytes (NULL: none) lets the plan of
** `tiles` tiles of tm rows split through it: 16-byte aligned, holding kg__fp4t_ws_bytes of the
** plan with ws 1 (the launch and dispatch both decide by this). */
static inline int kg__fp4t_ws_fits(int64_t tiles, int64_t k, int sms, int tm, const void *ws, size_t ws_size) {
  const size_t need = kg__fp4t_ws_bytes(kg__fp4t_plan_for(tiles, k, sms, 1), tiles, tm);
  return need > 0 && ws && (uintptr_t)ws % 16 == 0 && ws_size >= need;
}

/* FP4 tensorop kernels: the rows of A per block (tile_m) they are built with, largest first:
** kg__fp4t_tile_m(i) for i < KG__FP4T_TILES. */
#define KG__FP4T_TILES 2
static inline int kg__fp4t_tile_m(int i) { return 256 >> i; }

/* FP4 tensorop kernels: the tiles of tm rows of A x tn output columns of `batch` m x n problems
** (the blocks of their grid before K splits). */
static inline int64_t kg__fp4t_tiles(int64_t m, int64_t n, int64_t batch, int tm, int tn) {
  return (m + tm - 1) / tm * ((n + tn - 1) / tn) * batch;
}

/* FP4 tensorop kernels: estimated time of `batch` m x n x k problems on tiles of tm rows of A (one
** of kg__fp4t_tile_m) x tn output columns, in units of 10 ns: rounds of blocks (one per SM, K splits
** counted, kg__fp4t_plan_for with ws) times a block's time, its 128-wide K steps at KG__FP4T_STEP plus
** KG__FP4T_FIXED. Fitted to H200 kernel times, NVFP4 GEMM: 256 rows (bench/results 2026-12-02
** fp4-tensorop-tile-m) 37.2 us for 16 steps (4096 x 4096, m = 384), 57.4 for 32 (14336 x 4096,
** m = 256); 128 rows with 8 stages (bench/results 2026-12-04 fp4-tensorop-stages, least squares)
** 20.5 for 11 (4096 x 4096, m = 128), 38.9 for 32 (14336 x 4096, m = 128; 2 rounds of 37.4 at
** m = 192 and 256), 46.8 for 38 (4096 x 14336, m = 128). Dispatch takes a tensorop variant where no twin with the other tile
** size is estimated faster. */
#define KG__FP4T_STEP(tm) ((tm) == 256 ? 127 : 91)
#define KG__FP4T_FIXED(tm) ((tm) == 256 ? 1680 : 977)
static inline int64_t kg__fp4t_cost(int64_t m, int64_t n, int64_t k, int64_t batch, int tm, int tn, int sms, int ws) {
  const int64_t tiles = kg__fp4t_tiles(m, n, batch, tm, tn), groups = (k + 127) / 128;
  const kg__fp4t_plan p = kg__fp4t_plan_for(tiles, k, sms, ws);
  const int64_t whole_rounds = (p.whole + sms - 1) / sms;
  const int64_t split_rounds = p.splits > 1 ? ((tiles - p.whole) * p.splits + sms - 1) / sms : 0;
  return whole_rounds * (groups * KG__FP4T_STEP(tm) + KG__FP4T_FIXED(tm)) +
         split_rounds * ((groups + p.splits - 1) / p.splits * KG__FP4T_STEP(tm) + KG__FP4T_FIXED(tm));
}

/* Element strides of a matrix stored with layout l and leading dimension ld:
** X[i][j] sits at i*(*rs) + j*(*cs). */
static inline void kg__strides(int l, int64_t ld, int64_t *rs, int64_t *cs) {
  if (l == KG_ROW) { *rs = ld; *cs = 1; } else { *rs = 1; *cs = ld; }
}

/* ---- C backend threads -----------------------------------------------------
** Built with OpenMP (-fopenmp; the Makefile's KG_OPENMP=1, the default), the C
** GEMM variants (GEMM, DualGemm and their FP4 forms) split their output tiles,
** and the FP4 quantizer, dequantizer and scale-layout conversions their work
** items, over up to omp_get_max_threads() threads (OMP_NUM_THREADS); built
** without it, KG_OMP is empty and everything runs on the caller's thread.
** Either way each output is computed by one thread in one fixed order, so the
** bits do not depend on the thread count. */
#if defined(_OPENMP)
#define KG_OMP(...) _Pragma(#__VA_ARGS__)
static inline int kg__c_thread(void) { return omp_get_thread_num(); }
static inline int kg__c_max_threads(void) { return omp_get_max_threads(); }
#else
#define KG_OMP(...)
static inline int kg__c_thread(void) { return 0; }
static inline int kg__c_max_threads(void) { return 1; }
#endif
/* Threads for `tiles` independent tiles of `work` operations in all: one
** below KG__C_PAR_WORK (a thread's start costs more than such work), else at
** most one per tile. */
#define KG__C_PAR_WORK 4.0e6
static inline int kg__c_threads(double work, int64_t tiles) {
  int t = kg__c_max_threads();
  if (work < KG__C_PAR_WORK || t < 1) return 1;
  return tiles < t ? (int)tiles : t;
}

#ifdef __cplusplus
}
#endif
#endif /* KG_INTERNAL_H */
