/*
** test_gpu_dualgemm_fp4.c -- every compiled CUDA block-scaled FP4 DualGemm variant
** (kg_fp4dualgemm_cuda_*: warp and skinny kernels for small m, mma and tensorop kernels for any m; W4A16
** and W4A4) and
** every CUDA amax variant (kg_amax_cuda_*) against references computed here on the CPU (never
** against other generated code, the C backend or the runtime's FP4 helpers).
**
** Built by `make test-gpu` (plain C, libkg + cudart; no Lua, no libcheck). Each variant is forced
** by name (kg_exec.variant); its axes come from the name
** kg_fp4dualgemm_cuda_<kernel>_<nvfp4|mxfp4>_<f16|bf16>_<op>_<d2|d0d2|d1d2|d0d1d2>_sf<layout>
** [_afp4_sfa<layout>] and kg_amax_cuda_<f32|f16|bf16>.
**
** DualGemm reference (kg.h FP4 DualGemm, shared/reference/dualgemm.md, fp4.md): every FP4 operand
** is decoded here from its bytes (E2M1 table, E4M3 / UE8M0 scale values, the scale layouts by
** fp4.md's formulas; the scale group of batch z is z when the operand's batch stride is non-zero,
** else 0; NVFP4 values divided by the group's global scale), f16 / bf16 decoded here, sums in
** double: x_i = alpha_i * A.W_i^T + beta_i * C_i; D0, D1 = x0, x1 rounded to the output type;
** D2 = op(D0, D1) (swiglu x sigmoid(x) y; geglu tanh form; mul x y). MXFP4 scales 118 .. 126, and
** in every other case (by its shape) one weight scale byte above 128 (the two-multiply path).
** Tolerances: D0 / D1 within 2u|x| + (k + 4) 2^-23 |alpha| sum |a w| + 2^-22 |beta c| (u the
** output type's unit roundoff) + the type's subnormal spacing; D2 within the propagated error of D0 / D1 (|op'| <= 1.2) plus
** 4u|D2|; with D0 and D1 stored, D2 also within 4u|D2| of op(stored D0, stored D1). An output
** that is Inf passes only where the reference, within its tolerance, reaches the type's overflow
** threshold (the scales keep D2 inside f16's range, but a product of two sums can leave it: rare,
** and then Inf is the right f16 answer). NaN never passes. Reported as the worst error in
** tolerance units per variant.
** Cases: m 1, 2, 3, 4, 5, 6, 9, 12, 16 (every kernel; m 3 and 6 in one batch: MXFP4's split-product
** warps), 17, 24 and 40 (mma and skinny kernels: 16-row slices of A, the last partly filled; the
** skinny warpgroup form, 32-row slices, for m 24 at n 8500 and m 40 at n 4300 x 2 batches: at least one 64-row weight block per SM), 100, 130 (mma kernels: m not a
** multiple of the 64-row tile; skinny 16-row slices) and 200, 300, 512 (mma and skinny kernels: 64-row
** slices in blocks of two warpgroups at m 200 (n 4300 x 2 batches) and 512, 16-row slices at m 300),
** n 1, 7, 129, 300, 1000, 2200, 4300, 7000, 8500 (not multiples of the 64-column tile), k 2, 30, 64, 200, 544, 600, 1280,
** 2560, 4096 and 8576 (ragged last chunk, kv not a multiple of 4; 2200 rows: more skinny
** blocks than SMs, 8500 x 3 or 8 batches at m 4 and 1: skinny grids of several waves, 8576: long K
** ranges per warp, 7000 x 600: K chunks that do not divide evenly
** over the warps), batched with per-batch and shared (batch stride
** 0, one scale group) A / W0 / W1, C as a full matrix and as a bias row (ld 0), c NULL, NVFP4
** with and without global scales (one per scale group). Swizzled scale padding holds NaN scale
** bytes (0xFF) so a kernel reading it fails. Outputs are poisoned (0xFF bytes: NaN in f16 and bf16)
** with padded lds, batch gaps and guards before and after, and every byte is checked.
** KG_EXEC_PDL (kg.h): each W4A16 skinny variant runs run_pdl_chain, two launches with the flag where the
** second reads the first's D2 as A and writes its D2 over the first's A (both checked; see there), at
** m = 5 and m = 24 (the second in the warpgroup form).
** The tensorop variants run CASES, SPLIT_CASES (by dispatch with the size query's workspace, through
** which the K splits then sum; one variant also LAST_SPLIT_CASE, a split second launch) and TC_CASES (m 257 .. 700 over several 256-row tiles, the last
** partly filled; n cut inside a 64-column tile; ragged k; batched with per-batch and shared A, W0,
** W1), and check_tensorop_dispatch (see there; with the tensor maps' limits).
** Statuses: warp and skinny variants refuse m above their limit, 16 and 512 (KG_ERROR_NOT_SUPPORTED,
** kg_explain names the limit; dispatch picks a skinny variant for m = 320 with or without a workspace
** and for m = 512 without one; with one the dequantize path where it applies, above path_m = 320),
** every variant refuses a misaligned ldb0 (KG_ERROR_MISALIGNED_OPERAND), serial split-K when forced
** by name (KG_ERROR_NOT_SUPPORTED: the dequantize path alone takes it) and odd k
** (KG_ERROR_INVALID_PROBLEM), and nothing is written.
** Dequantize path (kg.h): every any-M (mma) variant also runs PATH_CASES by dispatch (exec.variant
** NULL), without a workspace (select names the variant, or the tensorop variant of the key where there
** is one: any_m_target) and with one of
** kg_dualgemm_fp4_workspace_size's bytes (NaN-poisoned, guarded: the path may write only inside it).
** On the GPU the size must be > 0 exactly for cases with C / D lds and batch strides multiples of 8
** that dispatch does not give to the FP4 tensorop kernel and whose op and stores kg_dualgemm has a
** tensor-core variant for (has_tensorop: swiglu / geglu with D2
** only in the shipped specs), select then names "dequantize + kg_dualgemm_cuda_tensorop_*", and
** the results meet the tolerances above plus u * |alpha_i| * sum |a w_i| per operand of product i
** with an NVFP4 global scale (the path rounds e2m1 * sf / gs to bf16 once). Cases: m 513 .. 545, n 7
** .. 300 (not multiples of the tensor-core tiles), ragged k, batched with per-batch W0 / W1 / A (own
** scale groups and global scales) and shared ones, C with beta and bias rows, W4A4, one unaligned
** case (the in-kernel variant runs). run_dual_path_statuses: the size of a batched problem (every
** scale group of W0, shared W1 once, per-batch A for W4A4), explain's lines, a short workspace, v
** forced by name (never the path), the path forced with a short workspace
** (KG_ERROR_WORKSPACE_TOO_SMALL). On the host build the size is 0 and the forced path
** KG_ERROR_NOT_SUPPORTED. The same variants run PATH_ONLY_CASES, serial split-K and the broadcast W1
** vector, which the path alone takes on every backend (the C one too): refused without a workspace,
** then with the size query's, "dequantize + kg_dualgemm_<backend>_*", the tolerances above (has_path_only:
** NOT_SUPPORTED throughout where the path cannot run the key).
**
** amax reference: max |x| over each group in double of the decoded values, NaN skipped; must be
** bit-equal (it is exact). Cases: rows 1, 37, 1100 x cols 1, 45, 3000, batch 1 and 3 with gapped
** ld and batch stride whose gaps hold NaN and huge values (a kernel reading them fails), a NaN
** element and a negative maximum inside; out has guards.
**
** Last line "N passed, M failed"; exit 1 on any failure, 2 when a CUDA call fails.
** Usage: test_gpu_dualgemm_fp4 [SUBSTRING] -- only the variants whose name contains it.
** Checking the test itself without a GPU: -DKG_GPU_TEST_HOST runs the C-backend variants
** (kg_fp4dualgemm_c_*, kg_amax_c_*) in host memory (the small-M limits then do not apply):
**   make KG_CUDA=0 KG_HIP=0 lib && cc -std=c11 -O2 -DKG_GPU_TEST_HOST -Iruntime/include \
**     tests/gpu/test_gpu_dualgemm_fp4.c build/c/libkg.a -lm -lpthread -o build/test_dualgemm_fp4_host
*/
#include "gpu_test.h"
#include "../c/fp4_ref.h"
#include "kg_internal.h"

#define DPREFIX "kg_fp4dualgemm_" BACKEND_NAME "_"
#define APREFIX "kg_amax_" BACKEND_NAME "_"

#define POISON 0xFFu
#define GUARD ((size_t)256)

/* ---- reference numerics ---------------------------------------------------------------------- */
static uint64_t g_rng = 88172645463325252ull;
static uint64_t rnd(void) { g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17; return g_rng; }
static double uni(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }
static int rint_in(int lo, int hi) { return lo + (int)(rnd() % (uint64_t)(hi - lo + 1)); }

/* ---- variants ---------------------------------------------------------------------------------- */
typedef struct dvar {
  const char *name;
  int max_m, path_m, format, bf, op, sd0, sd1, layout, a_fp4, layout_a;
  int tensorop;   /* the tensorop kernel */
} dvar;

static int parse_layout(const char *s, int *l) {
  if (!strcmp(s, "linear")) *l = KG_SF_LINEAR;
  else if (!strcmp(s, "128x4")) *l = KG_SF_SWIZZLED_128X4;
  else if (!strcmp(s, "8x4")) *l = KG_SF_SWIZZLED_8X4;
  else return 0;
  return 1;
}

static int parse_dvar(const char *name, dvar *v) {
  char buf[160], *tok[12];
  int nt = 0;
  memset(v, 0, sizeof *v);
  v->name = name;
  snprintf(buf, sizeof buf, "%s", name + strlen(DPREFIX));
  for (char *p = strtok(buf, "_"); p && nt < 12; p = strtok(NULL, "_")) tok[nt++] = p;
  if (nt > 6 && !strncmp(tok[nt - 1], "tm", 2) && !strcmp(tok[0], "tensorop")) nt--;   /* the tile (_tm128) */
  if (nt != 6 && nt != 8) return 0;
  v->max_m = !strcmp(tok[0], "warp") ? 16 : !strcmp(tok[0], "skinny") ? 512 : 0;   /* small-M kernels: their limit */
  v->path_m = !strcmp(tok[0], "skinny") ? 320 : 0;   /* the dequantize path above it, given the workspace */
  v->tensorop = !strcmp(tok[0], "tensorop");
  v->format = !strcmp(tok[1], "nvfp4") ? KG_FP4_NVFP4 : !strcmp(tok[1], "mxfp4") ? KG_FP4_MXFP4 : -1;
  v->bf = !strcmp(tok[2], "bf16") ? 1 : !strcmp(tok[2], "f16") ? 0 : -1;
  v->op = !strcmp(tok[3], "swiglu") ? KG_DUAL_SWIGLU : !strcmp(tok[3], "geglu") ? KG_DUAL_GEGLU
        : !strcmp(tok[3], "mul") ? KG_DUAL_MUL : -1;
  v->sd0 = !strncmp(tok[4], "d0", 2);
  v->sd1 = strstr(tok[4], "d1") != NULL;
  if (strncmp(tok[5], "sf", 2) || !parse_layout(tok[5] + 2, &v->layout)) return 0;
  v->layout_a = -1;
  if (nt == 8) {
    if (strcmp(tok[6], "afp4") || strncmp(tok[7], "sfa", 3) || !parse_layout(tok[7] + 3, &v->layout_a)) return 0;
    v->a_fp4 = 1;
  }
  return v->format >= 0 && v->bf >= 0 && v->op >= 0;
}

/* ---- device buffers with guards ------------------------------------------------------------------ */
typedef struct dbuf { uint8_t *base, *p; size_t n; } dbuf;
static dbuf up(const void *host, size_t n) {
  dbuf b;
  b.n = n;
  b.base = dev_alloc(n + 2 * GUARD);
  b.p = b.base + GUARD;
  uint8_t *g = xmalloc(n + 2 * GUARD);
  memset(g, POISON, n + 2 * GUARD);
  if (host) memcpy(g + GUARD, host, n);
  h2d(b.base, g, n + 2 * GUARD);
  free(g);
  return b;
}
/* Copies the buffer back; 0 when a guard byte changed. */
static int down(const dbuf *b, void *host) {
  uint8_t *g = xmalloc(b->n + 2 * GUARD);
  d2h(g, b->base, b->n + 2 * GUARD);
  int ok = 1;
  for (size_t i = 0; i < GUARD; i++) ok &= g[i] == POISON && g[GUARD + b->n + i] == POISON;
  memcpy(host, g + GUARD, b->n);
  free(g);
  return ok;
}

/* ---- DualGemm cases ------------------------------------------------------------------------------ */
enum { CN_NONE, CN_FULL, CN_BIAS };
#define SH_A 1u
#define SH_B0 2u
#define SH_B1 4u

typedef struct dcase {
  int64_t m, n, k, batch;   /* batch 0: KG_MODE_GEMM */
  unsigned shared;
  int c0, c1, with_gs;
  int al;                   /* C / D lds and batch strides multiples of 8 elements (the dequantize path's GEMMs) */
} dcase;

static const dcase CASES[] = {
  { 1, 1, 2, 0, 0, CN_NONE, CN_NONE, 1, 0 },     { 5, 7, 30, 0, 0, CN_FULL, CN_FULL, 1, 0 },
  { 16, 129, 64, 0, 0, CN_BIAS, CN_NONE, 0, 0 }, { 16, 300, 200, 0, 0, CN_NONE, CN_FULL, 1, 0 },
  { 1, 129, 4096, 0, 0, CN_FULL, CN_NONE, 1, 0 }, { 5, 9, 544, 3, 0, CN_FULL, CN_BIAS, 1, 0 },
  { 3, 20, 96, 4, SH_A | SH_B1, CN_NONE, CN_FULL, 1, 0 }, { 2, 33, 64, 2, SH_B0, CN_BIAS, CN_NONE, 0, 0 },
  { 9, 65, 544, 0, 0, CN_FULL, CN_NONE, 1, 0 },   { 12, 33, 4096, 2, SH_A, CN_NONE, CN_BIAS, 1, 0 },
  /* long K (whole chunks and ring turns per warp), more skinny blocks than SMs */
  { 9, 2200, 2560, 0, 0, CN_FULL, CN_NONE, 1, 0 }, { 12, 300, 1280, 3, SH_B1, CN_BIAS, CN_FULL, 1, 0 },
  { 1, 40, 8576, 2, 0, CN_NONE, CN_NONE, 1, 0 },
  /* 5 K chunks, the last ragged, over the skinny kernel's 4 warps of 2 chunks: one warp owns none */
  { 1, 7000, 600, 0, 0, CN_NONE, CN_FULL, 1, 0 },
  /* m 2 .. 6, one batch (m 3 as KG_MODE_GEMM, m 6 batched with a count of 1): MXFP4's split-product
  ** owners (XS; NVFP4 keeps both products per warp), long K and a ragged last chunk */
  { 3, 2200, 2560, 0, 0, CN_BIAS, CN_FULL, 1, 0 }, { 6, 7000, 600, 1, 0, CN_FULL, CN_NONE, 0, 0 },
  /* skinny grids of several waves (no K split lets the SMs hold them: 3 x 532 one-warp owners at m = 4,
  ** 8 x 532 split-product owners at m = 1), which take the launcher's floor of 2 K ranges per block */
  { 4, 8500, 544, 3, 0, CN_FULL, CN_NONE, 1, 0 }, { 1, 8500, 256, 8, SH_A, CN_NONE, CN_BIAS, 1, 0 },
  /* m > 16: the mma kernels and the skinny kernels (16-row slices of A) */
  { 40, 129, 544, 2, SH_A, CN_FULL, CN_BIAS, 1, 0 }, { 17, 7, 30, 0, 0, CN_FULL, CN_FULL, 1, 0 },   { 100, 129, 200, 0, 0, CN_BIAS, CN_FULL, 1, 0 },
  { 130, 300, 544, 0, 0, CN_NONE, CN_NONE, 0, 0 }, { 70, 65, 96, 3, SH_B1, CN_FULL, CN_NONE, 1, 0 },
  { 64, 64, 4096, 0, 0, CN_NONE, CN_BIAS, 1, 0 },
  /* m > 16 with at least one 64-row weight block per SM (132 on the H200: n blocks x batches): the skinny
  ** kernels' warpgroup form (m <= 32: one 32-row slice of A, else 64-row slices; ragged K and n; batched
  ** with a shared A; m 65 .. 128: two slices, the second partly or wholly filled) */
  { 24, 8500, 600, 0, 0, CN_FULL, CN_BIAS, 1, 0 }, { 40, 4300, 544, 2, SH_A, CN_BIAS, CN_FULL, 1, 0 },
  { 100, 8448, 160, 0, 0, CN_FULL, CN_BIAS, 1, 0 }, { 128, 4300, 256, 2, SH_A, CN_BIAS, CN_FULL, 1, 0 },
  /* m 129 .. 512 (skinny up to its limit): 64-row slices in blocks of two warpgroups (m 200: four, the
  ** last with 8 live rows, batched with a shared A; m 512: eight), 16-row slices at m 300, n 1000
  ** (nineteen, the last with 12 live rows) */
  { 200, 4300, 160, 2, SH_A, CN_FULL, CN_BIAS, 1, 0 }, { 512, 2200, 64, 0, 0, CN_BIAS, CN_NONE, 1, 0 },
  { 300, 1000, 96, 0, 0, CN_NONE, CN_FULL, 1, 0 },
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

/* Any-M variants by dispatch, without and with the workspace (the dequantize path where kg_dualgemm has
** a tensor-core variant for the op and stores): aligned C / D, m and n not multiples of its 128 x 64
** tile, ragged k, C as a matrix and as bias rows with beta, batched with per-batch W0 / W1 / A (each with
** its own scale group and NVFP4 global scale) and shared ones; the last has unaligned lds (the
** in-kernel variant runs with the workspace too). */
static const dcase PATH_CASES[] = {
  { 517, 7, 30, 0, 0, CN_FULL, CN_FULL, 1, 1 },      { 534, 129, 200, 0, 0, CN_BIAS, CN_FULL, 1, 1 },
  { 514, 300, 544, 0, 0, CN_NONE, CN_NONE, 0, 1 },   { 522, 65, 96, 3, SH_B1, CN_FULL, CN_NONE, 1, 1 },
  { 545, 40, 64, 4, SH_A, CN_BIAS, CN_BIAS, 1, 1 },  { 520, 24, 128, 2, 0, CN_FULL, CN_BIAS, 1, 1 },
  { 528, 64, 4096, 0, 0, CN_NONE, CN_BIAS, 1, 1 },   { 513, 72, 160, 3, SH_B0 | SH_A, CN_NONE, CN_FULL, 0, 1 },
  { 534, 129, 200, 0, 0, CN_BIAS, CN_FULL, 1, 0 },
};
#define NPATH ((int)(sizeof PATH_CASES / sizeof PATH_CASES[0]))

/* The tensorop kernel beyond CASES: several 256-row tiles of A, the last partly filled; 64-column
** tiles whose W0 / W1 rows sit in either half of their 128-row scale group, the last cut by n; ragged
** k (kv not a multiple of 4, a last K tile of zeros); exact tiles; batched over several row and
** column tiles per batch with per-batch operands (own scale groups and global scales), a shared A
** and W1, a shared W0 (one scale group), K split over a cluster (few tiles, long k); grids of several
** rounds whose last round is a second, K-split launch (kg__fp4t_plan_for, 132 SMs: m 200, n 8600,
** 135 tiles of 64 columns, 3 split on 256-row tiles, 6 on 128-row ones; m 300, n 2900 x 2 batches
** with a shared A, 184 (276) tiles, 52 (12) split). */
static const dcase TC_CASES[] = {
  { 200, 8600, 1024, 0, 0, CN_NONE, CN_FULL, 1, 1 }, { 300, 2900, 1280, 2, SH_A, CN_FULL, CN_BIAS, 1, 0 },
  { 600, 200, 4096, 0, 0, CN_FULL, CN_BIAS, 1, 0 }, { 257, 129, 600, 0, 0, CN_NONE, CN_FULL, 0, 1 },
  { 700, 1100, 512, 0, 0, CN_BIAS, CN_NONE, 1, 1 }, { 256, 64, 64, 0, 0, CN_NONE, CN_NONE, 1, 1 },
  { 300, 130, 600, 3, 0, CN_FULL, CN_BIAS, 1, 0 },  { 520, 65, 544, 2, SH_A | SH_B1, CN_BIAS, CN_FULL, 1, 1 },
  { 260, 300, 200, 4, SH_B0, CN_NONE, CN_FULL, 0, 1 }, { 270, 72, 4096, 2, 0, CN_FULL, CN_NONE, 1, 1 },
};
#define NTC_CASES ((int)(sizeof TC_CASES / sizeof TC_CASES[0]))

/* The tensorop variants by dispatch, without and with the size query's workspace, which (132 SMs)
** sums the K splits through it: 32 tiles of 128 x 64 in 4 splits instead of 3 clusters (m 100,
** n 2000: the last tile cut, ragged k; m 120, n 1000 x 2 batches with a shared A; 96 to 112 groups
** of 128, a block 8 to 10 fewer). */
static const dcase SPLIT_CASES[] = {
  { 100, 2000, 14300, 0, 0, CN_FULL, CN_NONE, 1, 1 }, { 120, 1000, 12288, 2, SH_A, CN_BIAS, CN_FULL, 0, 1 },
};
#define NSPLIT_CASES ((int)(sizeof SPLIT_CASES / sizeof SPLIT_CASES[0]))
/* Serial split-K and the broadcast W1 vector (ldb1 0: one row per scale group), which only the
** dequantize path takes (kg_dualgemm's split-K mode and ldb1 = 0 column on the dequantized weights),
** on every backend: by dispatch with the size query's workspace (RUN_PATH_ONLY). Slices up to k (one
** k a slice), ragged k, bias rows, a broadcast W1 per batch and a shared one, both at once, a
** larger split (m 300, n 1000, k 4096 in 5 slices), and column-major A (W4A16) and C / D (bias
** columns), with split-K too. */
typedef struct pcase { dcase d; int64_t slices; int bcast, col_a, col_cd; } pcase;
static const pcase PATH_ONLY_CASES[] = {
  { { 7, 40, 200, 0, 0, CN_FULL, CN_NONE, 1, 1 }, 3, 0, 0, 0 },   { { 5, 33, 96, 0, 0, CN_NONE, CN_BIAS, 1, 1 }, 96, 0, 0, 0 },
  { { 3, 21, 64, 0, 0, CN_NONE, CN_FULL, 1, 1 }, 0, 1, 0, 0 },    { { 4, 24, 128, 3, 0, CN_BIAS, CN_NONE, 1, 1 }, 0, 1, 0, 0 },
  { { 2, 16, 64, 2, SH_B1, CN_NONE, CN_NONE, 1, 1 }, 0, 1, 0, 0 }, { { 6, 50, 130, 0, 0, CN_FULL, CN_FULL, 1, 1 }, 4, 1, 0, 0 },
  { { 300, 1000, 4096, 0, 0, CN_NONE, CN_FULL, 1, 1 }, 5, 0, 0, 0 },
  { { 9, 30, 96, 0, 0, CN_FULL, CN_NONE, 1, 1 }, 0, 0, 1, 0 }, { { 7, 20, 64, 2, 0, CN_BIAS, CN_FULL, 1, 0 }, 0, 0, 0, 1 },
  { { 130, 300, 544, 0, 0, CN_FULL, CN_BIAS, 1, 1 }, 2, 0, 1, 1 },
};
#define NPATH_ONLY ((int)(sizeof PATH_ONLY_CASES / sizeof PATH_ONLY_CASES[0]))
/* Two launches (132 SMs): a whole round of 132 tiles of 128 x 64, then the last 32 tiles in 4 splits
** through the workspace; run on one variant (LAST_SPLIT_VARIANT), its reference being 17 G products. */
static const dcase LAST_SPLIT_CASE = { 65, 10440, 12288, 0, 0, CN_NONE, CN_FULL, 1, 1 };
#define LAST_SPLIT_VARIANT "tensorop_nvfp4_bf16_swiglu_d2_sf128x4_tm128"

/* How a case runs: the variant forced by name; dispatch without a workspace; dispatch with a workspace
** of kg_dualgemm_fp4_workspace_size's bytes (the dequantize path where it applies). */
/* RUN_SPLIT: as RUN_WORKSPACE, and on 132 SMs (the H200) the tensorop kernel must sum its K splits
** through that workspace (SPLIT_CASES) */
/* RUN_PATH_ONLY: a PATH_ONLY_CASES case by dispatch, first without a workspace (refused), then with the
** size query's (the dequantize path; NOT_SUPPORTED where it cannot run: has_path_only) */
enum { RUN_FORCED, RUN_DISPATCH, RUN_WORKSPACE, RUN_SPLIT, RUN_PATH_ONLY };
static const char *const RUN_NAMES[] = { "forced", "dispatch, no workspace", "dispatch, workspace",
                                         "dispatch, workspace for the K splits", "dispatch, dequantize path only" };
#define DEQ_PREFIX "dequantize + "
static int64_t round8(int64_t x) { return (x + 7) / 8 * 8; }

/* Whether kg_dualgemm has a tensor-core variant of this backend for v's dtype, op and stores (the
** dequantize path runs it): a name kg_dualgemm_<backend>_tensorop_<dtype>_<op>_rcc?_<stores>_*. */
static int has_tensorop(const dvar *v) {
  static const char *const OPS[] = { "swiglu", "geglu", "mul" };
  char stores[16], pre[96];
  snprintf(stores, sizeof stores, "%s%sd2", v->sd0 ? "d0" : "", v->sd1 ? "d1" : "");
  snprintf(pre, sizeof pre, "kg_dualgemm_%s_tensorop_%s_%s_rcc", BACKEND_NAME, v->bf ? "bf16" : "f16", OPS[v->op]);
  for (int i = 0; i < kg_variant_count(); i++) {
    const char *name = kg_variant_name(i);
    if (!strncmp(name, pre, strlen(pre)) && strlen(name) > strlen(pre) + 2 &&
        !strncmp(name + strlen(pre) + 2, stores, strlen(stores)) && name[strlen(pre) + 2 + strlen(stores)] == '_')
      return 1;
  }
  return 0;
}

/* Whether the dequantize path can run v's key for split-K and a broadcast W1 (kg.h): the dequantized
** operands exact, or bf16 with one rounding (not f16 with MXFP4 or with NVFP4 global scales: with_gs),
** and some kg_dualgemm variant of this backend for v's dtype, op and stores with A (col_a: column-)
** row-major, B0 and B1 column-major, C / D (col_cd: column-) row-major (layout letters r / c or x:
** any), name kg_dualgemm_<backend>_<kernel>_<dtype>_<op>_<layouts>_<stores>_*. */
static int has_path_only(const dvar *v, int with_gs, int col_a, int col_cd) {
  static const char *const OPS[] = { "swiglu", "geglu", "mul" };
  if (!v->bf && (v->format == KG_FP4_MXFP4 || with_gs)) return 0;
  char pre[64], mid[48];
  snprintf(pre, sizeof pre, "kg_dualgemm_%s_", BACKEND_NAME);
  snprintf(mid, sizeof mid, "_%s_%s_", v->bf ? "bf16" : "f16", OPS[v->op]);
  for (int i = 0; i < kg_variant_count(); i++) {
    const char *name = kg_variant_name(i), *p = strstr(name, mid);
    if (strncmp(name, pre, strlen(pre)) != 0 || !p) continue;
    const char *lay = p + strlen(mid), *st = lay + 5;
    if (strlen(lay) < 5 || lay[4] != '_' || !strchr(col_a ? "cx" : "rx", lay[0]) || !strchr("cx", lay[1]) ||
        !strchr("cx", lay[2]) || !strchr(col_cd ? "cx" : "rx", lay[3]))
      continue;
    char stores[16];
    snprintf(stores, sizeof stores, "%s%sd2_", v->sd0 ? "d0" : "", v->sd1 ? "d1" : "");
    if (!strncmp(st, stores, strlen(stores))) return 1;
  }
  return 0;
}

/* The variant dispatch runs for v's key on a GPU at m > 512: the FP4 tensorop kernel (the weights
** decoded by its MMA warpgroups; never the dequantize path) where one is compiled in for the key
** (W4A16 bf16, 128x4 scales, v's op and stores), else v. */
static const char *any_m_target(const dvar *v) {
  static const char *const OPS[] = { "swiglu", "geglu", "mul" };
  static char name[160];
  if (BACKEND == KG_BACKEND_C || v->a_fp4 || !v->bf || v->layout != KG_SF_SWIZZLED_128X4) return v->name;
  snprintf(name, sizeof name, "%stensorop_%s_bf16_%s_%s%sd2_sf128x4", DPREFIX, v->format == KG_FP4_NVFP4 ? "nvfp4" : "mxfp4",
           OPS[v->op], v->sd0 ? "d0" : "", v->sd1 ? "d1" : "");
  for (int i = 0; i < kg_variant_count(); i++)
    if (!strcmp(kg_variant_name(i), name)) return kg_variant_name(i);
  return v->name;
}

/* Whether select's choice sel is target or, for a tensorop target, its twin of another tile size
** (name + "_tm128": dispatch picks the tile, kg_fp4.c). */
static int is_target(const char *sel, const char *target) {
  const size_t n = strlen(target);
  return !strncmp(sel, target, n) && (sel[n] == 0 || (strstr(target, "_tensorop_") && !strncmp(sel + n, "_tm", 3)));
}

/* Scale bytes that keep D2 (a product of two sums) inside f16's range (see check_dualgemm_fp4.c). */
static int sf_lo(int format, int with_gs) { return format == KG_FP4_MXFP4 ? 118 : with_gs ? 0x58 : 0x18; }
static int sf_hi(int format, int with_gs) { return format == KG_FP4_MXFP4 ? 126 : with_gs ? 0x7e : 0x40; }

typedef struct fop {   /* one FP4 operand (A in W4A4, W0, W1): host bytes, scales, global scales */
  uint8_t *q, *sf;
  size_t qn, sfn;
  int64_t rows, ld, bs, groups;
  float gs[8];
  int with_gs;
  int bcast;   /* W1 as a broadcast vector: every output column reads row 0 */
} fop;

static void make_fop(fop *o, const dvar *v, int64_t rows, int64_t ld, int64_t batch, int shared, int with_gs,
                     float base) {
  o->rows = rows; o->ld = ld; o->bcast = 0;
  o->groups = shared ? 1 : batch;
  o->bs = shared ? 0 : (rows * ld + 15) / 16 * 16 + 16;   /* a 16-byte gap between batches */
  o->qn = (size_t)(shared || batch == 1 ? rows * ld : o->groups * o->bs);
  o->q = xmalloc(o->qn);
  for (size_t i = 0; i < o->qn; i++) o->q[i] = (uint8_t)rnd();
  o->with_gs = with_gs && v->format == KG_FP4_NVFP4;
  for (int g = 0; g < 8; g++) o->gs[g] = o->with_gs ? 2688.0f / (base + 0.75f * (float)g) : 1.0f;
}

/* big (MXFP4): one scale byte, at a random row and block, above 128 (2^2 .. 2^4): the skinny
** kernels' two-multiply path for the blocks that meet it, the one-multiply path elsewhere. */
static void fill_sf(fop *o, const dvar *v, int layout, int64_t k, int big) {
  const int64_t bsz = v->format == KG_FP4_NVFP4 ? 16 : 32, kv = (k + bsz - 1) / bsz;
  o->sfn = ref_sf_bytes(layout, o->rows, kv, o->groups);
  o->sf = xmalloc(o->sfn);
  memset(o->sf, 0xff, o->sfn);
  for (int64_t g = 0; g < o->groups; g++)
    for (int64_t r = 0; r < o->rows; r++)
      for (int64_t kb = 0; kb < kv; kb++)
        o->sf[ref_sf_off(layout, o->rows, kv, g, r, kb)] = (uint8_t)rint_in(sf_lo(v->format, o->with_gs), sf_hi(v->format, o->with_gs));
  if (big && v->format == KG_FP4_MXFP4)
    o->sf[ref_sf_off(layout, o->rows, kv, (int64_t)(rnd() % (uint64_t)o->groups), (int64_t)(rnd() % (uint64_t)o->rows),
                     (int64_t)(rnd() % (uint64_t)kv))] = (uint8_t)rint_in(129, 131);
}

static double fop_val(const fop *o, const dvar *v, int layout, int64_t k, int64_t z, int64_t r, int64_t kk) {
  const int64_t bsz = v->format == KG_FP4_NVFP4 ? 16 : 32, kv = (k + bsz - 1) / bsz;
  const int64_t g = o->bs != 0 ? z : 0;
  if (o->bcast) r = 0;
  unsigned byte = o->q[g * o->bs + r * o->ld + kk / 2], code = kk % 2 ? byte >> 4 : byte & 15u;
  unsigned s = o->sf[ref_sf_off(layout, o->rows, kv, g, r, kk / bsz)];
  return v->format == KG_FP4_NVFP4 ? ref_e2m1(code) * ref_e4m3(s) / (double)o->gs[g] : ref_e2m1(code) * ref_ue8m0(s);
}

/* out[j * k + kk] = fop_val(o, v, layout, k, z, j, kk) for rows j < rows: an operand decoded for the
** reference, its rows over threads (par_for). */
typedef struct fop_rows { const fop *o; const dvar *v; int layout; int64_t k, z; double *out; } fop_rows;

static void fop_rows_part(void *ctx, int64_t lo, int64_t hi) {
  const fop_rows *f = (const fop_rows *)ctx;
  for (int64_t j = lo; j < hi; j++)
    for (int64_t kk = 0; kk < f->k; kk++) f->out[j * f->k + kk] = fop_val(f->o, f->v, f->layout, f->k, f->z, j, kk);
}

static void fop_decode(const fop *o, const dvar *v, int layout, int64_t rows, int64_t k, int64_t z, double *out) {
  fop_rows f = { o, v, layout, k, z, out };
  par_for(rows, rows * k * 8, fop_rows_part, &f);
}

/* One DualGemm case of v, run as `how`. Returns 1 on pass; *worst: error in tolerance units;
** *path_runs counts the calls that took the dequantize path. */
static size_t tc_split_bytes(const char *sel, int64_t m, int64_t n, int64_t k, int64_t batch);

static int run_dual(const dvar *v, const dcase *c, int how, double *worst, int *path_runs) {
  /* RUN_PATH_ONLY: c is the dcase of a pcase (its first member) */
  const pcase *pc = how == RUN_PATH_ONLY ? (const pcase *)c : NULL;
  const int64_t slices = pc ? pc->slices : 0, bcast = pc ? pc->bcast : 0;
  /* column-major A (W4A16) / C and D: outer index over columns, inner over rows */
  const int col_a = pc && pc->col_a && !v->a_fp4, col = pc && pc->col_cd;
  const int64_t m = c->m, n = c->n, k = c->k, batch = c->batch ? c->batch : 1;
  const int bf = v->bf;
  char what[200];
  snprintf(what, sizeof what, "%s m%lld n%lld k%lld b%lld (%s)", v->name, (long long)m, (long long)n, (long long)k,
           (long long)c->batch, RUN_NAMES[how]);
  kg_dualgemm_fp4_args a;
  memset(&a, 0, sizeof a);
  a.mode = slices ? KG_MODE_SPLITK_SERIAL : c->batch ? KG_MODE_BATCHED : KG_MODE_GEMM;
  a.batch_count = batch;
  a.split_k_slices = slices;
  a.m = m; a.n = n; a.k = k; a.dtype = bf ? KG_BF16 : KG_F16; a.format = v->format; a.sf_layout = v->layout;
  a.op = v->op; a.store_d0 = v->sd0; a.store_d1 = v->sd1;
  /* A */
  fop fa;
  memset(&fa, 0, sizeof fa);
  uint16_t *A16 = NULL;
  int64_t na = 0;
  const int64_t ga = (c->shared & SH_A) ? 1 : batch;
  if (v->a_fp4) {
    make_fop(&fa, v, m, (k / 2 + 16 + 15) / 16 * 16, batch, !!(c->shared & SH_A), c->with_gs, 3.5f);
    fill_sf(&fa, v, v->layout_a, k, 0);
  } else {
    a.layout_a = col_a ? KG_COL : KG_ROW;
    a.lda = ((col_a ? m : k) + 8 + 7) / 8 * 8;
    a.batch_stride_a = (c->shared & SH_A) ? 0 : (col_a ? k : m) * a.lda + 8;
    na = ga * ((col_a ? k : m) * a.lda + 8);
    A16 = xmalloc((size_t)na * 2);
    for (int64_t i = 0; i < na; i++) A16[i] = to16(uni() * 4.0 - 2.0, bf);
  }
  /* W0, W1 */
  fop w[2];
  make_fop(&w[0], v, n, (k / 2 + 16 + 15) / 16 * 16, batch, !!(c->shared & SH_B0), c->with_gs, 5.5f);
  make_fop(&w[1], v, bcast ? 1 : n, (k / 2 + 15) / 16 * 16, batch, !!(c->shared & SH_B1), c->with_gs, 2.25f);
  w[1].bcast = (int)bcast;
  /* every other case (by its shape) puts one MXFP4 scale above 128 into one of the weights */
  const int big = (int)((m + n + k) % 2), big_w = (int)(rnd() % 2);
  fill_sf(&w[0], v, v->layout, k, big && big_w == 0);
  fill_sf(&w[1], v, v->layout, k, big && big_w == 1);
  /* C0, C1 */
  const int cm[2] = { c->c0, c->c1 };
  uint16_t *C[2] = { NULL, NULL };
  int64_t ldc[2], bsc[2], cn[2];
  const int64_t outer = col ? n : m, inner = col ? m : n;
  a.layout_cd = col ? KG_COL : KG_ROW;
  for (int i = 0; i < 2; i++) {
    ldc[i] = cm[i] == CN_BIAS ? 0 : c->al ? round8(inner) + 8 : inner + 1;
    bsc[i] = cm[i] == CN_BIAS ? (c->al ? round8(inner) + 8 : inner) : outer * (c->al ? round8(inner) + 8 : inner + 1);
    cn[i] = cm[i] == CN_NONE ? 0 : batch * bsc[i];
    if (cn[i]) {
      C[i] = xmalloc((size_t)cn[i] * 2);
      for (int64_t j = 0; j < cn[i]; j++) C[i][j] = to16(uni() * 2.0 - 1.0, bf);
    }
  }
  const float alpha[2] = { 1.25f, 0.75f }, beta[2] = { cn[0] ? -0.5f : 0.0f, cn[1] ? 1.0f : 0.0f };
  const int64_t ldd = c->al ? round8(inner) + 8 : inner + 3, bsd = outer * ldd + (c->al ? 8 : 5);
  const size_t dn = (size_t)(batch * bsd) * 2;

  /* device */
  dbuf dA = v->a_fp4 ? up(fa.q, fa.qn) : up(A16, (size_t)na * 2);
  dbuf dSA = up(fa.sf, fa.sfn), dGA = up(fa.gs, sizeof fa.gs);
  dbuf dW[2], dS[2], dG[2], dC[2], dD[3];
  for (int i = 0; i < 2; i++) {
    dW[i] = up(w[i].q, w[i].qn); dS[i] = up(w[i].sf, w[i].sfn); dG[i] = up(w[i].gs, sizeof w[i].gs);
    dC[i] = up(C[i], (size_t)cn[i] * 2);
  }
  for (int i = 0; i < 3; i++) dD[i] = up(NULL, dn);
  if (v->a_fp4) {
    a.a_fp4 = 1; a.sf_layout_a = v->layout_a; a.lda = fa.ld; a.batch_stride_a = fa.bs;
    a.sf_a = dSA.p; a.sf_a_bytes = fa.sfn; a.global_scale_a = fa.with_gs ? (const float *)dGA.p : NULL;
  }
  a.a = dA.p;
  a.b0 = dW[0].p; a.ldb0 = w[0].ld; a.batch_stride_b0 = w[0].bs;
  a.sf_b0 = dS[0].p; a.sf_b0_bytes = w[0].sfn; a.global_scale_b0 = w[0].with_gs ? (const float *)dG[0].p : NULL;
  a.b1 = dW[1].p; a.ldb1 = bcast ? 0 : w[1].ld; a.batch_stride_b1 = w[1].bs;
  a.sf_b1 = dS[1].p; a.sf_b1_bytes = w[1].sfn; a.global_scale_b1 = w[1].with_gs ? (const float *)dG[1].p : NULL;
  a.c0 = cn[0] ? dC[0].p : NULL; a.ldc0 = ldc[0]; a.batch_stride_c0 = bsc[0];
  a.c1 = cn[1] ? dC[1].p : NULL; a.ldc1 = ldc[1]; a.batch_stride_c1 = bsc[1];
  a.d0 = v->sd0 ? dD[0].p : NULL; a.d1 = v->sd1 ? dD[1].p : NULL; a.d2 = dD[2].p;
  a.ldd0 = a.ldd1 = a.ldd2 = ldd;
  a.batch_stride_d0 = a.batch_stride_d1 = a.batch_stride_d2 = bsd;
  a.alpha0 = alpha[0]; a.beta0 = beta[0]; a.alpha1 = alpha[1]; a.beta1 = beta[1];
  kg_exec e = exec_for(how == RUN_FORCED ? v->name : NULL);
  int ok = 1, shown = 0, path = 0;
  dbuf dW_ = { NULL, NULL, 0 };
  if (pc) {
    /* the dequantize path alone: refused without the workspace; with it, "dequantize + kg_dualgemm_*" */
    size_t ws = 0;
    const char *sel = NULL;
    const int can = has_path_only(v, c->with_gs && v->format == KG_FP4_NVFP4, col_a, col);
    const kg_status qs = kg_dualgemm_fp4_workspace_size(&a, &e, &ws), ss = kg_dualgemm_fp4_select(&a, &e, &sel);
    const kg_status st0 = kg_dualgemm_fp4(&a, &e);
    if (qs != (can ? KG_SUCCESS : KG_ERROR_NOT_SUPPORTED) || ss != qs || (can && ws == 0) ||
        st0 != (can ? KG_ERROR_WORKSPACE_TOO_SMALL : KG_ERROR_NOT_SUPPORTED) ||
        (can && strncmp(sel, DEQ_PREFIX "kg_dualgemm_" BACKEND_NAME "_", strlen(DEQ_PREFIX "kg_dualgemm_" BACKEND_NAME "_")))) {
      printf("FAIL %s: size %s (%zu bytes), select %s (%s), without the workspace %s\n", what, kg_status_string(qs), ws,
             kg_status_string(ss), sel ? sel : "-", kg_status_string(st0));
      ok = 0;
    }
    if (!can || !ok) how = -1;   /* nothing to run or check */
    else {
      dW_ = up(NULL, ws);
      e.workspace = dW_.p; e.workspace_size = ws;
      path = 1;
      *path_runs += 1;
    }
  } else if (how != RUN_FORCED) {
    /* without a workspace the in-kernel variant; with one the dequantize path where the size is > 0:
    ** on a GPU exactly for aligned bf16 cases whose op and stores kg_dualgemm's tensor-core variants
    ** have (f16 only for NVFP4 without global scales); never on the C backend */
    size_t ws = 1;
    const char *sel = NULL;
    const int gs_any = a.global_scale_b0 || a.global_scale_b1 || a.global_scale_a;
    const char *target = any_m_target(v);
    const int fused = strstr(target, "_tensorop_") != NULL;
    const int expect = BACKEND != KG_BACKEND_C && c->al && has_tensorop(v) && !fused &&
                       (bf || (v->format == KG_FP4_NVFP4 && !gs_any));
    kg_status qs = kg_dualgemm_fp4_workspace_size(&a, &e, &ws);
    /* a tensorop target: the size of its K splits' sums (checked below against the variant chosen with it) */
    if (qs != KG_SUCCESS || (!fused && (ws > 0) != expect)) {
      printf("FAIL %s: workspace size %s, %zu bytes\n", what, kg_status_string(qs), ws);
      ok = 0;
    }
    if (how >= RUN_WORKSPACE && ws > 0) {   /* NaN bytes (up() poisons): a GEMM reading the row padding fails */
      dW_ = up(NULL, ws);
      e.workspace = dW_.p; e.workspace_size = ws;
    }
    kg_status ss = kg_dualgemm_fp4_select(&a, &e, &sel);
    path = ss == KG_SUCCESS && !strncmp(sel, DEQ_PREFIX, strlen(DEQ_PREFIX));
    const char *tc = "kg_dualgemm_" BACKEND_NAME "_tensorop_";
    if (fused && ss == KG_SUCCESS && how >= RUN_WORKSPACE && ws != tc_split_bytes(sel, a.m, a.n, a.k, c->batch ? c->batch : 1)) {
      printf("FAIL %s: workspace size %zu, %s sums its K splits through %zu\n", what, ws, sel,
             tc_split_bytes(sel, a.m, a.n, a.k, c->batch ? c->batch : 1));
      ok = 0;
    }
    if (how == RUN_SPLIT && BACKEND != KG_BACKEND_C && kg__sm_count(BACKEND) == 132 && ws == 0) {
      printf("FAIL %s: no K splits through the workspace\n", what);
      ok = 0;
    }
    if (ss != KG_SUCCESS || path != (how >= RUN_WORKSPACE && ws > 0 && !fused) || (!path && !is_target(sel, target)) ||
        (path && strncmp(sel + strlen(DEQ_PREFIX), tc, strlen(tc)) != 0)) {
      printf("FAIL %s: select %s gave %s (workspace %zu bytes)\n", what, kg_status_string(ss), sel ? sel : "-", ws);
      ok = 0;
    }
    *path_runs += path;
  }
  kg_status st = how < 0 ? KG_SUCCESS : kg_dualgemm_fp4(&a, &e);
  dev_sync();
  if (st != KG_SUCCESS) { printf("FAIL %s: %s\n", what, kg_status_string(st)); ok = 0; }
  if (dW_.base) {   /* the path writes inside the workspace only */
    uint8_t *wsh = xmalloc(dW_.n);
    if (!down(&dW_, wsh)) { printf("FAIL %s: a workspace guard was written\n", what); ok = 0; }
    free(wsh);
    dev_free(dW_.base);
  }
  /* the path rounds e2m1 * f32(sf) / gs to the activation type once per element of an operand with an
  ** NVFP4 global scale (kg.h): u per such operand of each product */
  const int ngs[2] = { path ? w[0].with_gs + (v->a_fp4 && fa.with_gs) : 0, path ? w[1].with_gs + (v->a_fp4 && fa.with_gs) : 0 };
  uint16_t *D[3];
  for (int i = 0; i < 3; i++) {
    D[i] = xmalloc(dn);
    if (!down(&dD[i], D[i])) { printf("FAIL %s: guard of D%d written\n", what, i); ok = 0; }
  }
  const double u = bf ? ldexp(1.0, -8) : ldexp(1.0, -11);
  double *AV = xmalloc(sizeof(double) * (size_t)(m * k)), *WV[2];
  WV[0] = xmalloc(sizeof(double) * (size_t)(n * k));
  WV[1] = xmalloc(sizeof(double) * (size_t)(n * k));
  double *SS[2], *SABS[2];   /* the reference sums of the batch entry z (ref_dots) */
  for (int b = 0; b < 2; b++) {
    SS[b] = xmalloc(sizeof(double) * (size_t)(m * n));
    SABS[b] = xmalloc(sizeof(double) * (size_t)(m * n));
  }
  for (int64_t z = 0; ok && how >= 0 && z < batch; z++) {
    if (v->a_fp4) fop_decode(&fa, v, v->layout_a, m, k, z, AV);
    else
      for (int64_t i = 0; i < m; i++)
        for (int64_t kk = 0; kk < k; kk++)
          AV[i * k + kk] = val16(A16[(a.batch_stride_a ? z * a.batch_stride_a : 0) + (col_a ? kk * a.lda + i : i * a.lda + kk)], bf);
    for (int b = 0; b < 2; b++) {
      fop_decode(&w[b], v, v->layout, n, k, z, WV[b]);
      ref_dots(AV, k, WV[b], k, m, n, k, SS[b], SABS[b]);
    }
    for (int64_t o = 0; ok && o < outer; o++)
      for (int64_t e = 0; e < ldd; e++) {
        const int64_t i = col ? e : o, j = col ? o : e, di = z * bsd + o * ldd + e;
        if (e >= inner) {
          for (int q = 0; q < 3; q++)
            if (D[q][di] != 0xFFFFu) { printf("FAIL %s: D%d gap (%lld, %lld) written\n", what, q, (long long)i, (long long)j); ok = 0; }
          continue;
        }
        double x[2], xr[2], tol[2];
        for (int b = 0; b < 2; b++) {
          const double s = SS[b][i * n + j], abs = SABS[b][i * n + j];
          double cterm = cn[b] ? beta[b] * val16(C[b][z * bsc[b] + (col ? j * ldc[b] + i : i * ldc[b] + j)], bf) : 0.0;
          x[b] = alpha[b] * s + cterm;
          xr[b] = round16(x[b], bf);
          tol[b] = 2.0 * u * fabs(x[b]) + ((double)(k + 4) * ldexp(1.0, -23) + 1.01 * ngs[b] * u) * fabs(alpha[b]) * abs +
                   ldexp(1.0, -22) * fabs(cterm) + (bf ? ldexp(1.0, -133) : ldexp(1.0, -24));   /* + subnormal spacing */
          if (b ? v->sd1 : v->sd0) {
            double got = val16(D[b][di], bf), err = fabs(got - x[b]);
            if (!out16_matches(got, x[b], tol[b], bf)) {
              if (shown++ < 4)
                printf("FAIL %s: D%d(%lld, %lld, %lld) = %.9g, reference %.9g (tol %.3g)\n", what, b, (long long)z,
                       (long long)i, (long long)j, got, x[b], tol[b]);
              ok = 0;
            } else if (isfinite(err) && err / tol[b] > *worst) *worst = err / tol[b];
          }
        }
        const double ref2 = ref_dual_op(v->op, xr[0], xr[1]);
        const double e0 = tol[0] + 2.0 * u * fabs(x[0]), e1 = tol[1] + 2.0 * u * fabs(x[1]);
        const double g0 = v->op == KG_DUAL_MUL ? fabs(xr[0]) + e0 : fabs(ref_dual_op(v->op, xr[0], 1.0)) + 1.2 * e0;
        const double tol2 = (v->op == KG_DUAL_MUL ? 1.0 : 1.2) * e0 * (fabs(xr[1]) + e1) + g0 * e1 +
                            4.0 * u * fabs(ref2) + (bf ? ldexp(1.0, -133) : ldexp(1.0, -24));
        const double got2 = val16(D[2][di], bf), err2 = fabs(got2 - ref2);
        if (!out16_matches(got2, ref2, tol2, bf)) {
          if (shown++ < 4)
            printf("FAIL %s: D2(%lld, %lld, %lld) = %.9g, reference %.9g (tol %.3g)\n", what, (long long)z,
                   (long long)i, (long long)j, got2, ref2, tol2);
          ok = 0;
        } else if (isfinite(err2) && err2 / tol2 > *worst) *worst = err2 / tol2;
        if (v->sd0 && v->sd1) {
          double own = ref_dual_op(v->op, val16(D[0][di], bf), val16(D[1][di], bf));
          if (!out16_matches(got2, own, 4.0 * u * fabs(own) + 1e-30, bf)) {
            if (shown++ < 4) printf("FAIL %s: D2 = %.9g but op(D0, D1) = %.9g\n", what, got2, own);
            ok = 0;
          }
        }
      }
    for (int64_t gi = z * bsd + outer * ldd; ok && z + 1 < batch && gi < (z + 1) * bsd; gi++)
      for (int q = 0; q < 3; q++)
        if (D[q][gi] != 0xFFFFu) { printf("FAIL %s: D%d batch gap written\n", what, q); ok = 0; break; }
  }
  for (int q = 0; q < 2 && ok && how >= 0; q++)
    if (!(q ? v->sd1 : v->sd0))
      for (size_t i = 0; i < dn / 2; i++)
        if (D[q][i] != 0xFFFFu) { printf("FAIL %s: D%d is not stored but was written\n", what, q); ok = 0; break; }

  dev_free(dA.base); dev_free(dSA.base); dev_free(dGA.base);
  for (int i = 0; i < 2; i++) { dev_free(dW[i].base); dev_free(dS[i].base); dev_free(dG[i].base); dev_free(dC[i].base); }
  for (int i = 0; i < 3; i++) { dev_free(dD[i].base); free(D[i]); }
  free(AV); free(WV[0]); free(WV[1]); free(SS[0]); free(SS[1]); free(SABS[0]); free(SABS[1]); free(A16); free(C[0]); free(C[1]);
  free(fa.q); free(fa.sf); free(w[0].q); free(w[0].sf); free(w[1].q); free(w[1].sf);
  return ok;
}

/* Statuses: m above the limit of warp and skinny kernels, misaligned ldb0, split-K, odd k; D2
** untouched; dispatch picks a skinny variant for m = its limit. */
static int run_dual_statuses(const dvar *v) {
  const int64_t n = 8, k = 64, bsz = v->format == KG_FP4_NVFP4 ? 16 : 32, kv = k / bsz, m = v->max_m ? v->max_m + 1 : 17;
  const size_t sfn = ref_sf_bytes(v->layout, n, kv, 1), sfan = v->a_fp4 ? ref_sf_bytes(v->layout_a, m, kv, 1) : 0;
  dbuf dA = up(NULL, (size_t)(m * (k + 16) * 2)), dB = up(NULL, (size_t)(n * (k / 2 + 16))), dS = up(NULL, sfn);
  dbuf dSA = up(NULL, sfan ? sfan : 1), dD = up(NULL, (size_t)(m * n * 2));
  kg_dualgemm_fp4_args a;
  memset(&a, 0, sizeof a);
  a.mode = KG_MODE_GEMM; a.batch_count = 1; a.m = m; a.n = n; a.k = k;
  a.dtype = v->bf ? KG_BF16 : KG_F16; a.format = v->format; a.sf_layout = v->layout; a.op = v->op;
  a.a = dA.p; a.lda = v->a_fp4 ? k / 2 : k;
  a.b0 = a.b1 = dB.p; a.ldb0 = a.ldb1 = k / 2; a.sf_b0 = a.sf_b1 = dS.p; a.sf_b0_bytes = a.sf_b1_bytes = sfn;
  if (v->a_fp4) { a.a_fp4 = 1; a.sf_layout_a = v->layout_a; a.sf_a = dSA.p; a.sf_a_bytes = sfan; }
  /* the stores of this variant go to D2's buffer too: nothing may be written */
  a.store_d0 = v->sd0; a.store_d1 = v->sd1;
  a.d0 = v->sd0 ? dD.p : NULL; a.d1 = v->sd1 ? dD.p : NULL; a.d2 = dD.p;
  a.ldd0 = a.ldd1 = a.ldd2 = n; a.alpha0 = a.alpha1 = 1.0f;
  kg_exec e = exec_for(v->name);
  int ok = 1;
  char buf[8192];
  kg_status st;
  if (v->max_m && BACKEND != KG_BACKEND_C) {
    char want[64];
    snprintf(want, sizeof want, "above the variant's limit %d", v->max_m);
    st = kg_dualgemm_fp4(&a, &e);
    if (st != KG_ERROR_NOT_SUPPORTED) { printf("FAIL %s: m = %lld gave %s\n", v->name, (long long)m, kg_status_string(st)); ok = 0; }
    kg_explain(KG_OP_DUALGEMM_FP4, &a, &e, buf, sizeof buf);
    if (!strstr(buf, want)) { printf("FAIL %s: explain for m = %lld: %.300s\n", v->name, (long long)m, buf); ok = 0; }
  }
  if (v->max_m > 16 && BACKEND != KG_BACKEND_C) {
    /* skinny: dispatch picks it for m <= its path_m (320) with or without a workspace (the size
    ** query is 0), and for m up to its limit without one; above path_m the size query is > 0 where
    ** the dequantize path applies (bf16 SwiGLU / GeGLU storing D2 only), and given that workspace the
    ** path runs */
    for (int t = 0; t < 2; t++) {
      const char *sel = NULL, *sel_ws = NULL;
      size_t ws = 1;
      kg_exec d = exec_for(NULL);
      a.m = t ? v->max_m : v->path_m;
      int bad = kg_dualgemm_fp4_select(&a, &d, &sel) != KG_SUCCESS || strcmp(sel, v->name) != 0 ||
                kg_dualgemm_fp4_workspace_size(&a, &d, &ws) != KG_SUCCESS || (t == 0 && ws != 0) ||
                (t == 1 && v->bf && v->op != KG_DUAL_MUL && !v->sd0 && !v->sd1 && ws == 0);
      if (!bad && ws > 0) {
        uint8_t *dW = dev_alloc(ws);
        d.workspace = dW; d.workspace_size = ws;
        bad = kg_dualgemm_fp4_select(&a, &d, &sel_ws) != KG_SUCCESS || strncmp(sel_ws, "dequantize + kg_dualgemm_", 25) != 0;
        dev_free(dW);
      }
      if (bad) {
        printf("FAIL %s: dispatch for m = %lld chose %s (workspace %zu bytes; with it: %s)\n", v->name, (long long)a.m,
               sel ? sel : "-", ws, sel_ws ? sel_ws : "-");
        ok = 0;
      }
    }
  }
  a.m = 4;
  if (v->a_fp4) a.sf_a_bytes = ref_sf_bytes(v->layout_a, 4, kv, 1);
  if (BACKEND != KG_BACKEND_C) {
    a.ldb0 = k / 2 + 8;
    st = kg_dualgemm_fp4(&a, &e);
    if (st != KG_ERROR_MISALIGNED_OPERAND) { printf("FAIL %s: ldb0 %% 16 != 0 gave %s\n", v->name, kg_status_string(st)); ok = 0; }
    a.ldb0 = k / 2;
  }
  a.mode = KG_MODE_SPLITK_SERIAL; a.split_k_slices = 2;   /* the variant forced by name: the path only takes it */
  st = kg_dualgemm_fp4(&a, &e);
  if (st != KG_ERROR_NOT_SUPPORTED) { printf("FAIL %s: split-K gave %s\n", v->name, kg_status_string(st)); ok = 0; }
  a.mode = KG_MODE_GEMM; a.split_k_slices = 0; a.k = k - 1;
  st = kg_dualgemm_fp4(&a, &e);
  if (st != KG_ERROR_INVALID_PROBLEM) { printf("FAIL %s: odd k gave %s\n", v->name, kg_status_string(st)); ok = 0; }
  dev_sync();
  uint8_t *D = xmalloc(dD.n);
  if (!down(&dD, D)) ok = 0;
  for (size_t i = 0; ok && i < dD.n; i++)
    if (D[i] != POISON) { printf("FAIL %s: a refused call wrote D\n", v->name); ok = 0; }
  free(D);
  dev_free(dA.base); dev_free(dB.base); dev_free(dS.base); dev_free(dSA.base); dev_free(dD.base);
  return ok;
}

/* The dequantize path's contract for an any-M variant v, batched (3 batches: W0 and A per batch, W1
** shared; NVFP4 global scales per group; m = 520, above the small-M kernels; aligned C / D): the
** workspace size (on a GPU where kg_dualgemm has the tensor-core variant and dispatch does not give
** the problem to the FP4 tensorop kernel: (3 + 1) * n * round8(k) * 2 bytes, + 3 * m * round8(k) * 2
** for W4A4; else 0), explain's lines without and with the workspace (or
** why the path is not taken), a short workspace (in-kernel variant), v forced by name (never the
** path), the path forced by its name with a short workspace (KG_ERROR_WORKSPACE_TOO_SMALL; on the C
** backend KG_ERROR_NOT_SUPPORTED); nothing is written. */
static int run_dual_path_statuses(const dvar *v) {
  const int64_t m = 520, n = 24, k = 64, batch = 3, bsz = v->format == KG_FP4_NVFP4 ? 16 : 32, kv = k / bsz;
  const int64_t ldd = 32, bsd = m * ldd, ldb = k / 2, lda = v->a_fp4 ? k / 2 : k;
  const size_t sf0 = ref_sf_bytes(v->layout, n, kv, batch), sf1 = ref_sf_bytes(v->layout, n, kv, 1);
  const size_t sfa = v->a_fp4 ? ref_sf_bytes(v->layout_a, m, kv, batch) : 1;
  const float gs[3] = { 3.0f, 5.0f, 7.0f };
  dbuf dA = up(NULL, (size_t)(batch * m * k * 2)), dB0 = up(NULL, (size_t)(batch * n * ldb)), dB1 = up(NULL, (size_t)(n * ldb));
  dbuf dS0 = up(NULL, sf0), dS1 = up(NULL, sf1), dSA = up(NULL, sfa), dG = up(gs, sizeof gs);
  dbuf dD[3] = { up(NULL, (size_t)(batch * bsd * 2)), up(NULL, (size_t)(batch * bsd * 2)), up(NULL, (size_t)(batch * bsd * 2)) };
  kg_dualgemm_fp4_args a;
  memset(&a, 0, sizeof a);
  a.mode = KG_MODE_BATCHED; a.batch_count = batch; a.m = m; a.n = n; a.k = k;
  a.dtype = v->bf ? KG_BF16 : KG_F16; a.format = v->format; a.sf_layout = v->layout; a.op = v->op;
  a.a = dA.p; a.lda = lda; a.batch_stride_a = m * lda;
  a.b0 = dB0.p; a.ldb0 = ldb; a.batch_stride_b0 = n * ldb; a.sf_b0 = dS0.p; a.sf_b0_bytes = sf0;
  a.b1 = dB1.p; a.ldb1 = ldb; a.batch_stride_b1 = 0; a.sf_b1 = dS1.p; a.sf_b1_bytes = sf1;
  if (v->format == KG_FP4_NVFP4) { a.global_scale_b0 = (const float *)dG.p; a.global_scale_b1 = (const float *)dG.p; }
  if (v->a_fp4) {
    a.a_fp4 = 1; a.sf_layout_a = v->layout_a; a.sf_a = dSA.p; a.sf_a_bytes = sfa;
    if (v->format == KG_FP4_NVFP4) a.global_scale_a = (const float *)dG.p;
  }
  a.store_d0 = v->sd0; a.store_d1 = v->sd1;
  a.d0 = v->sd0 ? dD[0].p : NULL; a.d1 = v->sd1 ? dD[1].p : NULL; a.d2 = dD[2].p;
  a.ldd0 = a.ldd1 = a.ldd2 = ldd;
  a.batch_stride_d0 = a.batch_stride_d1 = a.batch_stride_d2 = bsd;
  a.alpha0 = a.alpha1 = 1.0f;
  const int gpu = BACKEND != KG_BACKEND_C;
  const int applies = gpu && has_tensorop(v) && (v->bf || (v->format == KG_FP4_NVFP4 && !a.global_scale_b0)) &&
                      !strstr(any_m_target(v), "_tensorop_");
  const size_t want = applies ? (size_t)(((batch + 1) * n + (v->a_fp4 ? batch * m : 0)) * round8(k) * 2) : 0;
  int ok = 1;
  static char buf[16384];
  char line[320], forced[256];
  const char *sel = NULL;
  size_t ws = 7, ws2 = 7;
  kg_exec e = exec_for(NULL);
  kg_status st = kg_dualgemm_fp4_workspace_size(&a, &e, &ws);
  if (st != KG_SUCCESS || ws != want) {
    printf("FAIL %s: path workspace size %s, %zu bytes, wanted %zu\n", v->name, kg_status_string(st), ws, want);
    ok = 0;
  }
  dbuf dW = up(NULL, ws + 16);
  st = kg_explain(KG_OP_DUALGEMM_FP4, &a, &e, buf, sizeof buf);
  if (ws > 0) snprintf(line, sizeof line, "dequantize path: not taken: workspace 0 bytes given, %zu needed", ws);
  else snprintf(line, sizeof line, "%s", gpu ? "dequantize path: not taken: " : v->name);
  if (st != KG_SUCCESS || !strstr(buf, line) || (!gpu && strstr(buf, "dequantize"))) {
    printf("FAIL %s: explain without a workspace (%s): %.600s\n", v->name, kg_status_string(st), buf);
    ok = 0;
  }
  if (ws > 0) {
    e.workspace = dW.p; e.workspace_size = ws - 1;
    st = kg_dualgemm_fp4_select(&a, &e, &sel);
    if (st != KG_SUCCESS || strcmp(sel, v->name) != 0) {
      printf("FAIL %s: select with a short workspace gave %s %s\n", v->name, kg_status_string(st), sel ? sel : "-");
      ok = 0;
    }
    e.workspace_size = ws;
    st = kg_dualgemm_fp4_select(&a, &e, &sel);
    if (st != KG_SUCCESS || strncmp(sel, DEQ_PREFIX "kg_dualgemm_", strlen(DEQ_PREFIX "kg_dualgemm_")) != 0) {
      printf("FAIL %s: select with the workspace gave %s %s\n", v->name, kg_status_string(st), sel ? sel : "-");
      ok = 0;
      sel = DEQ_PREFIX "?";
    }
    snprintf(forced, sizeof forced, "%s", sel);
    snprintf(line, sizeof line, "%s: chosen instead of %s (", forced, v->name);
    st = kg_explain(KG_OP_DUALGEMM_FP4, &a, &e, buf, sizeof buf);
    if (st != KG_SUCCESS || !strstr(buf, line)) {
      printf("FAIL %s: explain with the workspace (%s): %.600s\n", v->name, kg_status_string(st), buf);
      ok = 0;
    }
    e.variant = v->name;
    if (kg_dualgemm_fp4_select(&a, &e, &sel) != KG_SUCCESS || strcmp(sel, v->name) != 0 ||
        kg_dualgemm_fp4_workspace_size(&a, &e, &ws2) != KG_SUCCESS || ws2 != 0) {
      printf("FAIL %s: forced by name with a workspace: %s, workspace size %zu\n", v->name, sel ? sel : "-", ws2);
      ok = 0;
    }
    e.variant = forced;
    e.workspace_size = ws - 16;
    if (kg_dualgemm_fp4_workspace_size(&a, &e, &ws2) != KG_SUCCESS || ws2 != ws ||
        (st = kg_dualgemm_fp4(&a, &e)) != KG_ERROR_WORKSPACE_TOO_SMALL) {
      printf("FAIL %s: forced path, short workspace: %s (size %zu)\n", v->name, kg_status_string(st), ws2);
      ok = 0;
    }
  } else if (!gpu) {
    e.variant = DEQ_PREFIX "kg_dualgemm_c_blocked_bf16_swiglu_xxxx_d2_64x256x256_a1";
    e.workspace = dW.p; e.workspace_size = 16;
    if ((st = kg_dualgemm_fp4(&a, &e)) != KG_ERROR_NOT_SUPPORTED) {
      printf("FAIL %s: forced path on the C backend: %s\n", v->name, kg_status_string(st));
      ok = 0;
    }
  }
  dev_sync();
  for (int q = 0; q < 3; q++) {
    uint8_t *h = xmalloc(dD[q].n);
    if (!down(&dD[q], h)) ok = 0;
    for (size_t i = 0; ok && i < dD[q].n; i++)
      if (h[i] != POISON) { printf("FAIL %s: a refused call wrote D%d\n", v->name, q); ok = 0; }
    free(h);
    dev_free(dD[q].base);
  }
  dev_free(dA.base); dev_free(dB0.base); dev_free(dB1.base); dev_free(dS0.base); dev_free(dS1.base);
  dev_free(dSA.base); dev_free(dG.base); dev_free(dW.base);
  return ok;
}

/* Rows of A per tile of a tensorop variant, from its name (256 unless _tm<rows>). */
static int tile_of(const char *name) {
  const char *t = strstr(name, "_tm");
  return t ? atoi(t + 3) : 256;
}

/* The workspace the tensorop variant sel sums its K splits through for m x n x k and batch problems
** (its plan given a workspace, kg_internal.h; 0 where it splits in clusters or not at all). */
static size_t tc_split_bytes(const char *sel, int64_t m, int64_t n, int64_t k, int64_t batch) {
  const int tm = tile_of(sel);
  const int64_t tiles = kg__fp4t_tiles(m, n, batch, tm, 64);
  return kg__fp4t_ws_bytes(kg__fp4t_plan_for(tiles, k, kg__sm_count(BACKEND), 1), tiles, tm);
}

/* Whether v's tensorop twin with tm rows of A per tile (name + "_tm<rows>" unless 256) is compiled in. */
static int has_tile(const dvar *v, int tm) {
  char name[200];
  const char *t = strstr(v->name, "_tm");
  const int n = t ? (int)(t - v->name) : (int)strlen(v->name);
  if (tm == 256) snprintf(name, sizeof name, "%.*s", n, v->name);
  else snprintf(name, sizeof name, "%.*s_tm%d", n, v->name, tm);
  for (int i = 0; i < kg_variant_count(); i++)
    if (!strcmp(kg_variant_name(i), name)) return 1;
  return 0;
}

/* The tensorop kernels' dispatch rules (descriptor tile_m, fill_m and modes, kg_fp4.c): a variant is
** passed over for m <= half its tile, where a twin of the same key with another tile size is compiled
** in and estimated faster (kg__fp4t_cost), for m <= 512 where its 256 (128) x 64 tiles, times the K
** splits it would launch, fill less than 3/4 of the SMs (2/3 split; the tiles of every batch
** counted), and for an sf_b1 not 16-byte aligned (the mma kernel of the key runs); taken otherwise
** with a workspace size of 0. Forced by name it takes any m and refuses the last
** (KG_ERROR_MISALIGNED_OPERAND). Each case names the tile that takes it on 132 SMs (the H200) where
** the key has tiles of 256 and 128 rows (tile) and where it has 256 only (tile1); 0: none. */
static int check_tensorop_dispatch(const dvar *v) {
  /* Forced: st is select's status. Passed over: explain says why (select's status then depends on
  ** the other variants of the key: none may take the problem) */
  static const struct { int64_t m, n, k, batch; int sf_off, forced, tile, tile1; kg_status st; const char *why; } CASES[] = {
    { 128, 16384, 64, 0, 0, 0, 128, 0, KG_SUCCESS, NULL },     /* 256: half a tile */
    { 192, 32768, 64, 0, 0, 0, 256, 256, KG_SUCCESS, NULL },   /* 4 rounds of 256 rows against 8 of 128 */
    { 512, 128, 64, 0, 0, 0, 0, 0, KG_SUCCESS, NULL },         /* 4 (8) tiles: too few for the SMs */
    { 600, 128, 64, 0, 0, 0, 128, 256, KG_SUCCESS, NULL },     /* m > 512: one round either way */
    { 1, 128, 64, 0, 0, 1, -1, -1, KG_SUCCESS, NULL },
    /* batched: 2 x 3 (5) tiles per batch; m 300: 8 (12) tiles for 2 batches, 160 (240) for 40 */
    { 600, 128, 64, 2, 0, 0, 128, 256, KG_SUCCESS, NULL },
    { 600, 128, 64, 2, 0, 1, -1, -1, KG_SUCCESS, NULL },
    { 300, 128, 64, 2, 0, 0, 0, 0, KG_SUCCESS, NULL },
    { 300, 128, 64, 40, 0, 0, 128, 256, KG_SUCCESS, NULL },
    { 600, 128, 64, 0, 4, 0, 0, 0, KG_SUCCESS, "sf_b1: pointer must be 16-byte aligned" },
    { 600, 128, 64, 0, 4, 1, 0, 0, KG_ERROR_MISALIGNED_OPERAND, NULL },
    /* 96 tiles of 128 rows (64 of 256), unsplit at k 64: under 3/4 of the SMs; at k 4096 64 tiles of
    ** 256 in two K splits (kg__fp4t_plan_for) beat 96 unsplit tiles of 128 */
    { 384, 2048, 64, 0, 0, 0, 0, 0, KG_SUCCESS, NULL },
    { 384, 2048, 4096, 0, 0, 0, 256, 256, KG_SUCCESS, NULL },
    /* 64 tiles of 128 in two splits against 32 of 256 in three (96 blocks: split grids count from 2/3) */
    { 256, 2048, 4096, 0, 0, 0, 128, 256, KG_SUCCESS, NULL },
  };
  const int own = tile_of(v->name), both = has_tile(v, 256) && has_tile(v, 128);
  const int64_t bsz = v->format == KG_FP4_NVFP4 ? 16 : 32, nmax = 32768, mmax = 600, kmax = 4096;
  /* select reads no operand: buffers of the largest extents, never written */
  uint8_t *dA = dev_alloc((size_t)(mmax * kmax * 2)), *dB = dev_alloc((size_t)(nmax * kmax / 2));
  uint8_t *dS = dev_alloc(ref_sf_bytes(v->layout, nmax, kmax / bsz, 1) + 16);
  uint8_t *dD = dev_alloc((size_t)(192 * nmax * 2));
  static char buf[16384];
  int ok = 1;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    kg_dualgemm_fp4_args a;
    memset(&a, 0, sizeof a);
    a.mode = CASES[i].batch ? KG_MODE_BATCHED : KG_MODE_GEMM; a.batch_count = CASES[i].batch ? CASES[i].batch : 1;
    const int64_t k = CASES[i].k, kv = k / bsz;
    a.m = CASES[i].m; a.n = CASES[i].n; a.k = k; a.dtype = KG_BF16; a.format = v->format; a.sf_layout = v->layout;
    a.op = v->op; a.store_d0 = v->sd0; a.store_d1 = v->sd1;
    a.a = dA; a.lda = k;   /* batches share A, W0, W1 (batch stride 0) */
    a.b0 = a.b1 = dB; a.ldb0 = a.ldb1 = k / 2;
    a.sf_b0 = dS; a.sf_b1 = dS + CASES[i].sf_off; a.sf_b0_bytes = a.sf_b1_bytes = ref_sf_bytes(v->layout, a.n, kv, 1);
    a.d0 = v->sd0 ? dD : NULL; a.d1 = v->sd1 ? dD : NULL; a.d2 = dD;
    a.ldd0 = a.ldd1 = a.ldd2 = a.n; a.batch_stride_d0 = a.batch_stride_d1 = a.batch_stride_d2 = a.m * a.n;
    a.alpha0 = a.alpha1 = 1.0f;
    kg_exec e = exec_for(CASES[i].forced ? v->name : NULL);
    const char *sel = NULL;
    size_t ws = 7;
    const kg_status st = kg_dualgemm_fp4_select(&a, &e, &sel), qs = kg_dualgemm_fp4_workspace_size(&a, &e, &ws);
    const int picked = st == KG_SUCCESS && !strcmp(sel, v->name);
    const int tile = both ? CASES[i].tile : CASES[i].tile1;
    const int want = CASES[i].forced ? CASES[i].st == KG_SUCCESS : tile == own;
    int good = (!CASES[i].forced || st == CASES[i].st) && picked == want && (!picked || (qs == KG_SUCCESS && ws == 0));
    if (good && !picked && !CASES[i].forced && tile > 0)   /* the twin of the case's tile is chosen */
      good = st == KG_SUCCESS && strstr(sel, "_tensorop_") && tile_of(sel) == tile;
    else if (good && !picked && !CASES[i].forced) {   /* explain names the rule */
      kg_explain(KG_OP_DUALGEMM_FP4, &a, &e, buf, sizeof buf);
      good = CASES[i].why ? strstr(buf, CASES[i].why) != NULL
                          : strstr(buf, "fills at most half of its") || strstr(buf, "are estimated faster here") ||
                              strstr(buf, "fill less than 3/4 of") || strstr(buf, "fill less than 2/3 of");
    }
    if (!good) {
      printf("FAIL %s: dispatch at m = %lld, n = %lld, batch %lld%s%s chose %s (%s), workspace %zu bytes\n", v->name,
             (long long)a.m, (long long)a.n, (long long)CASES[i].batch, CASES[i].sf_off ? ", sf_b1 misaligned" : "",
             CASES[i].forced ? " (forced)" : "", sel ? sel : "-", kg_status_string(st), ws);
      ok = 0;
    }
  }
  /* the tensor maps (kg__tma_rejects): by dispatch at m = 600, W1's ld of 2^40 bytes at n = 1 (never
  ** stepped): v's line names the strides and no tensorop variant is chosen; forced, n = 2^31 is
  ** KG_ERROR_NOT_SUPPORTED (int32 coordinates). select reads no operand. */
  for (int forced = 0; forced < 2; forced++) {
    kg_dualgemm_fp4_args a;
    memset(&a, 0, sizeof a);
    const int64_t k = 64, kv = k / bsz;
    a.mode = KG_MODE_GEMM; a.batch_count = 1;
    a.m = 600; a.n = forced ? (int64_t)1 << 31 : 1; a.k = k; a.dtype = KG_BF16; a.format = v->format;
    a.sf_layout = v->layout; a.op = v->op; a.store_d0 = v->sd0; a.store_d1 = v->sd1;
    a.a = dA; a.lda = k; a.b0 = a.b1 = dB; a.ldb0 = k / 2; a.ldb1 = forced ? k / 2 : (int64_t)1 << 40;
    a.sf_b0 = a.sf_b1 = dS; a.sf_b0_bytes = a.sf_b1_bytes = ref_sf_bytes(v->layout, a.n, kv, 1);
    a.d0 = v->sd0 ? dD : NULL; a.d1 = v->sd1 ? dD : NULL; a.d2 = dD; a.ldd0 = a.ldd1 = a.ldd2 = a.n;
    a.alpha0 = a.alpha1 = 1.0f;
    kg_exec e = exec_for(forced ? v->name : NULL);
    const char *sel = NULL;
    const kg_status st = kg_dualgemm_fp4_select(&a, &e, &sel);
    char want[200];
    kg_explain(KG_OP_DUALGEMM_FP4, &a, &e, buf, sizeof buf);
    snprintf(want, sizeof want, "%s: rejected: %s", v->name, forced ? "operand b0: extents" : "operand b1: strides of");
    const int good = forced ? st == KG_ERROR_NOT_SUPPORTED && strstr(buf, want) && strstr(buf, "int32 coordinates")
                            : !(st == KG_SUCCESS && strstr(sel, "_tensorop_")) && strstr(buf, want);
    if (!good) {
      printf("FAIL %s: %s gave %s (%s); kg_explain:\n%s", v->name, forced ? "n = 2^31 forced" : "ldb1 2^40 at n 1",
             kg_status_string(st), st == KG_SUCCESS ? sel : "-", buf);
      ok = 0;
    }
  }
  dev_free(dA); dev_free(dB); dev_free(dS); dev_free(dD);
  return ok;
}

/* ---- amax ------------------------------------------------------------------------------------ */
static int run_amax(const char *name, kg_dtype t, int64_t batch, int64_t rows, int64_t cols) {
  const int64_t ldx = cols + 5, bs = rows * ldx + 11;
  const size_t es = t == KG_F32 ? 4 : 2, xn = (size_t)(batch * bs);
  uint8_t *X = xmalloc(xn * es);
  double want[3] = { 0, 0, 0 };
  for (size_t i = 0; i < xn; i++) {   /* gaps: NaN and huge values alternately */
    const double gap = (i % 2) ? NAN : 60000.0;
    if (t == KG_F32) { float f = (float)gap; memcpy(X + 4 * i, &f, 4); }
    else { uint16_t h = (i % 2) ? 0x7fffu : to16(gap, t == KG_BF16); memcpy(X + 2 * i, &h, 2); }
  }
  for (int64_t g = 0; g < batch; g++)
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 0; c < cols; c++) {
        const size_t i = (size_t)(g * bs + r * ldx + c);
        double x = (uni() * 2.0 - 1.0) * (double)(g + 1) * 3.0, stored;
        if (r == rows / 2 && c == cols / 2) x = -(double)(g + 1) * 7.0;   /* the negative maximum */
        if (t == KG_F32) { float f = (float)x; memcpy(X + 4 * i, &f, 4); stored = f; }
        else { uint16_t h = to16(x, t == KG_BF16); memcpy(X + 2 * i, &h, 2); stored = val16(h, t == KG_BF16); }
        if (r == 0 && c == cols - 1 && cols > 1) {   /* one NaN element, ignored */
          if (t == KG_F32) { float f = NAN; memcpy(X + 4 * i, &f, 4); }
          else { uint16_t h = 0x7fffu; memcpy(X + 2 * i, &h, 2); }
          continue;
        }
        if (fabs(stored) > want[g]) want[g] = fabs(stored);
      }
  dbuf dX = up(X, xn * es), dO = up(NULL, (size_t)batch * 4);
  kg_amax_args a = { t, batch, rows, cols, dX.p, ldx, bs, (float *)dO.p };
  kg_exec e = exec_for(name);
  kg_status st = kg_amax(&a, &e);
  dev_sync();
  int ok = st == KG_SUCCESS;
  if (!ok) printf("FAIL %s %lldx%lldx%lld: %s\n", name, (long long)batch, (long long)rows, (long long)cols, kg_status_string(st));
  float out[3];
  if (!down(&dO, out)) { printf("FAIL %s: out guard written\n", name); ok = 0; }
  for (int64_t g = 0; ok && g < batch; g++)
    if (!((double)out[g] == want[g])) {
      printf("FAIL %s %lldx%lldx%lld: group %lld amax %.9g, reference %.9g\n", name, (long long)batch, (long long)rows,
             (long long)cols, (long long)g, out[g], want[g]);
      ok = 0;
    }
  dev_free(dX.base); dev_free(dO.base); free(X);
  return ok;
}

/* ---- KG_EXEC_PDL ------------------------------------------------------------------------------- */
/* D2 [m, n] (ldd) of one W4A16 DualGemm of v (alpha 1, no C) against A [m, k] (lda) and the weights w,
** with run_dual's D2 tolerance. */
static int pdl_check(const dvar *v, const char *what, const uint16_t *A, int64_t lda, const fop w[2], int64_t m,
                     int64_t n, int64_t k, const uint16_t *D2, int64_t ldd, double *worst) {
  const int bf = v->bf;
  const double u = bf ? ldexp(1.0, -8) : ldexp(1.0, -11), sub = bf ? ldexp(1.0, -133) : ldexp(1.0, -24);
  double *WV = xmalloc(sizeof(double) * (size_t)(2 * n * k));
  for (int b = 0; b < 2; b++) fop_decode(&w[b], v, v->layout, n, k, 0, WV + b * n * k);
  double *AV = xmalloc(sizeof(double) * (size_t)(m * k)), *SS = xmalloc(sizeof(double) * (size_t)(2 * m * n));
  double *SABS = xmalloc(sizeof(double) * (size_t)(2 * m * n));
  for (int64_t i = 0; i < m; i++)
    for (int64_t kk = 0; kk < k; kk++) AV[i * k + kk] = val16(A[i * lda + kk], bf);
  for (int b = 0; b < 2; b++) ref_dots(AV, k, WV + b * n * k, k, m, n, k, SS + b * m * n, SABS + b * m * n);
  int shown = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double x[2], tol[2];
      for (int b = 0; b < 2; b++) {
        const double s = SS[(b * m + i) * n + j], abs = SABS[(b * m + i) * n + j];
        x[b] = s;
        tol[b] = 2.0 * u * fabs(s) + (double)(k + 4) * ldexp(1.0, -23) * abs + sub;
      }
      const double xr0 = round16(x[0], bf), xr1 = round16(x[1], bf), ref2 = ref_dual_op(v->op, xr0, xr1);
      const double e0 = tol[0] + 2.0 * u * fabs(x[0]), e1 = tol[1] + 2.0 * u * fabs(x[1]);
      const double g0 = v->op == KG_DUAL_MUL ? fabs(xr0) + e0 : fabs(ref_dual_op(v->op, xr0, 1.0)) + 1.2 * e0;
      const double tol2 = (v->op == KG_DUAL_MUL ? 1.0 : 1.2) * e0 * (fabs(xr1) + e1) + g0 * e1 + 4.0 * u * fabs(ref2) + sub;
      const double got = val16(D2[i * ldd + j], bf), err = fabs(got - ref2);
      if (!out16_matches(got, ref2, tol2, bf)) {
        if (shown++ < 4)
          printf("FAIL %s (KG_EXEC_PDL chain, %s): D2(%lld, %lld) = %.9g, reference %.9g (tol %.3g)\n", v->name, what,
                 (long long)i, (long long)j, got, ref2, tol2);
      } else if (isfinite(err) && err / tol2 > *worst) *worst = err / tol2;
    }
  free(WV); free(AV); free(SS); free(SABS);
  return shown == 0;
}

/* Two launches of v in a row on one stream, both with KG_EXEC_PDL: the first's D2 is the second's A,
** and the second writes its D2 over the first's A (n2 = k1; D0 / D1, where stored, to their own
** buffers). With the flag the second kernel may start while the first still runs, so this passes
** only when each touches A and its outputs after its wait: reading A too early sees the first D2's
** NaN poison; writing too early changes the first's A while it still reads it (the first has few blocks
** and a long K: the second's blocks start on the free SMs while it runs). Both D2 against the
** reference (the second on the D2 the GPU wrote), 2 rounds. */
static int run_pdl_chain(const dvar *v, int64_t m, double *worst) {
  const int64_t k1 = 16384, n1 = 512;   /* the first: few skinny blocks, most SMs free for the second */
  fop w[2][2];
  for (int q = 0; q < 2; q++) {
    const int64_t n = q ? k1 : n1, k = q ? n1 : k1;
    for (int b = 0; b < 2; b++) {
      make_fop(&w[q][b], v, n, k / 2 + 16, 1, 1, 1, b ? 1.25f : 1.0f);   /* NVFP4: |w| <= 6 * 448 / 2688 */
      fill_sf(&w[q][b], v, v->layout, k, 0);
    }
  }
  const size_t a1n = (size_t)(m * k1) * 2, d1n = (size_t)(m * n1) * 2;
  uint16_t *A1 = xmalloc(a1n), *D1 = xmalloc(d1n), *D2 = xmalloc(a1n);
  uint8_t *dA1 = dev_alloc(a1n), *dD1 = dev_alloc(d1n), *dX = dev_alloc(2 * a1n);   /* dX: D0, D1 where stored */
  uint8_t *dW[2][2], *dS[2][2], *dG[2][2];
  kg_dualgemm_fp4_args g[2];
  memset(g, 0, sizeof g);
  for (int q = 0; q < 2; q++) {
    for (int b = 0; b < 2; b++) {
      dW[q][b] = dev_alloc(w[q][b].qn); h2d(dW[q][b], w[q][b].q, w[q][b].qn);
      dS[q][b] = dev_alloc(w[q][b].sfn); h2d(dS[q][b], w[q][b].sf, w[q][b].sfn);
      dG[q][b] = dev_alloc(sizeof w[q][b].gs); h2d(dG[q][b], w[q][b].gs, sizeof w[q][b].gs);
    }
    const int64_t n = q ? k1 : n1, k = q ? n1 : k1;
    g[q].mode = KG_MODE_GEMM; g[q].batch_count = 1;
    g[q].m = m; g[q].n = n; g[q].k = k; g[q].dtype = v->bf ? KG_BF16 : KG_F16; g[q].format = v->format;
    g[q].sf_layout = v->layout; g[q].op = v->op; g[q].store_d0 = v->sd0; g[q].store_d1 = v->sd1;
    g[q].a = q ? dD1 : dA1; g[q].lda = k;
    g[q].b0 = dW[q][0]; g[q].ldb0 = w[q][0].ld; g[q].sf_b0 = dS[q][0]; g[q].sf_b0_bytes = w[q][0].sfn;
    g[q].b1 = dW[q][1]; g[q].ldb1 = w[q][1].ld; g[q].sf_b1 = dS[q][1]; g[q].sf_b1_bytes = w[q][1].sfn;
    g[q].global_scale_b0 = w[q][0].with_gs ? (const float *)dG[q][0] : NULL;
    g[q].global_scale_b1 = w[q][1].with_gs ? (const float *)dG[q][1] : NULL;
    g[q].d0 = v->sd0 ? dX : NULL; g[q].d1 = v->sd1 ? dX + a1n : NULL; g[q].ldd0 = g[q].ldd1 = n;
    g[q].d2 = q ? dA1 : dD1; g[q].ldd2 = n;
    g[q].alpha0 = g[q].alpha1 = 1.0f;
  }
  kg_exec e = exec_for(v->name);
  e.flags = KG_EXEC_PDL;
  int ok = 1;
  for (int round = 0; ok && round < 2; round++) {
    /* |A| <= 2^-5: both products' values stay well inside f16 */
    for (int64_t i = 0; i < m * k1; i++) A1[i] = to16((uni() * 4.0 - 2.0) / 64.0, v->bf);
    memset(D1, 0xff, d1n);   /* NaN */
    h2d(dA1, A1, a1n); h2d(dD1, D1, d1n);
    kg_status s1 = kg_dualgemm_fp4(&g[0], &e), s2 = kg_dualgemm_fp4(&g[1], &e);
    dev_sync();
    if (s1 != KG_SUCCESS || s2 != KG_SUCCESS) {
      printf("FAIL %s (KG_EXEC_PDL chain): %s, %s\n", v->name, kg_status_string(s1), kg_status_string(s2));
      ok = 0;
      break;
    }
    d2h(D1, dD1, d1n); d2h(D2, dA1, a1n);
    ok = pdl_check(v, "first", A1, k1, w[0], m, n1, k1, D1, n1, worst) &&
         pdl_check(v, "second", D1, n1, w[1], m, k1, n1, D2, k1, worst);
  }
  for (int q = 0; q < 2; q++)
    for (int b = 0; b < 2; b++) {
      dev_free(dW[q][b]); dev_free(dS[q][b]); dev_free(dG[q][b]);
      free(w[q][b].q); free(w[q][b].sf);
    }
  dev_free(dA1); dev_free(dD1); dev_free(dX);
  free(A1); free(D1); free(D2);
  return ok;
}

int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (!kg_backend_available(BACKEND)) {
    printf("FAIL the kg %s backend is not available\n", kg_backend_string(BACKEND));
    g_fail++;
    summary();
    return 1;
  }
#ifndef KG_GPU_TEST_HOST
  CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
#else
  printf("test_gpu_dualgemm_fp4: HOST BUILD (KG_GPU_TEST_HOST): C-backend variants, host memory\n");
#endif
  int nd = 0, na = 0;
  for (int i = 0; i < kg_variant_count(); i++) {
    const char *name = kg_variant_name(i);
    if (only && !strstr(name, only)) continue;
    if (!strncmp(name, DPREFIX, strlen(DPREFIX))) {
      dvar v;
      if (!parse_dvar(name, &v)) { printf("FAIL %s: cannot parse the variant name\n", name); g_fail++; continue; }
      nd++;
      double worst = 0.0;
      int fails = 0, path_runs = 0;
      for (int c = 0; c < NCASES; c++) {
        if (v.max_m && CASES[c].m > v.max_m) continue;
        if (run_dual(&v, &CASES[c], RUN_FORCED, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
      }
      for (int c = 0; v.tensorop && c < NTC_CASES; c++)
        if (run_dual(&v, &TC_CASES[c], RUN_FORCED, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
      for (int c = 0; v.tensorop && c < NSPLIT_CASES; c++)
        for (int how = RUN_DISPATCH; how <= RUN_SPLIT; how += RUN_SPLIT - RUN_DISPATCH)
          if (run_dual(&v, &SPLIT_CASES[c], how, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
      if (v.tensorop && strstr(name, LAST_SPLIT_VARIANT)) {
        if (run_dual(&v, &LAST_SPLIT_CASE, RUN_SPLIT, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
      }
      if (run_dual_statuses(&v)) g_pass++; else { g_fail++; fails++; }
      /* the variants that honour KG_EXEC_PDL; on the host build every W4A16 variant (checks the test) */
      if (!v.a_fp4 && (v.max_m > 16 || BACKEND == KG_BACKEND_C)) {
        /* m = 24: the second launch (n = 16384) takes the skinny kernels' warpgroup form */
        for (int64_t m = 5; m <= 24; m += 19)
          if (run_pdl_chain(&v, m, &worst)) g_pass++; else { g_fail++; fails++; }
      }
      if (v.tensorop && BACKEND != KG_BACKEND_C) {
        if (check_tensorop_dispatch(&v)) g_pass++; else { g_fail++; fails++; }
      } else if (!v.max_m) {
        for (int c = 0; c < NPATH; c++)
          for (int how = RUN_DISPATCH; how <= RUN_WORKSPACE; how++)
            if (run_dual(&v, &PATH_CASES[c], how, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
        for (int c = 0; c < NPATH_ONLY; c++) {
          const pcase *pc = &PATH_ONLY_CASES[c];
          if (v.a_fp4 && pc->col_a && pc->slices < 2 && !pc->bcast && !pc->col_cd) continue;   /* FP4 A: row-major only */
          if (run_dual(&v, &pc->d, RUN_PATH_ONLY, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
        }
        if (run_dual_path_statuses(&v)) g_pass++; else { g_fail++; fails++; }
      }
      printf("%s %s: worst error %.3f of the tolerance%s\n", fails ? "FAIL" : "ok  ", name, worst,
             v.max_m ? "" : path_runs ? ", dequantize path taken" : ", dequantize path not taken");
    } else if (!strncmp(name, APREFIX, strlen(APREFIX))) {
      const char *dt = name + strlen(APREFIX);
      const kg_dtype t = !strcmp(dt, "f32") ? KG_F32 : !strcmp(dt, "f16") ? KG_F16 : KG_BF16;
      static const int64_t SHAPES[][3] = { { 1, 1, 1 }, { 3, 37, 45 }, { 1, 1100, 3000 }, { 3, 1, 3000 }, { 2, 1100, 1 } };
      int fails = 0;
      na++;
      for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++)
        if (run_amax(name, t, SHAPES[s][0], SHAPES[s][1], SHAPES[s][2])) g_pass++; else { g_fail++; fails++; }
      printf("%s %s: amax bit-exact\n", fails ? "FAIL" : "ok  ", name);
    }
  }
  if (!only && nd == 0) { printf("FAIL no %s* variants compiled in\n", DPREFIX); g_fail++; }
  if (!only && na == 0) { printf("FAIL no %s* variants compiled in\n", APREFIX); g_fail++; }
  summary();
  return g_fail ? 1 : 0;
}
