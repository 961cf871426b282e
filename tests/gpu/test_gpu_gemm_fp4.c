/*
** test_gpu_gemm_fp4.c -- every compiled CUDA FP4 GEMM variant (kg_fp4gemm_cuda_*: the small-M warp
** and skinny kernels and the any-M mma kernels, W4A16 and W4A4) against a reference computed here on the CPU,
** on the dequantized operands (never against other generated code or the runtime's FP4 helpers).
**
** Built by `make test-gpu` (plain C, libkg + cudart; no Lua, no libcheck). Each variant is forced
** by name (kg_exec.variant); kernel, format, dtype and scale layouts come from the name
** kg_fp4gemm_cuda_<warp|skinny|mma>_<nvfp4|mxfp4>_<f16|bf16>_sf<linear|128x4|8x4>[_afp4_sfa<layout>].
** W4A4 (afp4): A is random FP4 bytes with its own scales (layout sfa) and NVFP4 global scale,
** decoded here like the weights.
**
** Reference (kg.h W4A16 section, shared/reference/fp4.md): the weight byte of (n, k) is
** B[n*ldb + k/2], low nibble for even k; E2M1 from the 8-magnitude table; the scale byte at the
** layout's offset (linear, 128x4, 8x4 formulas, tests/c/fp4_ref.h); NVFP4 w = e2m1 * e4m3(sf) / gs,
** MXFP4 w = e2m1 * 2^(sf-127) (these decoders in tests/c/fp4_ref.h); bf16 / f16 decoded in
** gpu_test.h; D = alpha * sum a*w + beta * C in double.
** Tolerance: 2u|ref| (u the output type's unit roundoff) + (k + 4) * 2^-23 * |alpha| * sum |a w|
** + 2^-22 |beta C| + the output type's subnormal spacing. Reported as the worst error in tolerance units per variant.
**
** Cases: m in {1, 2, 3, 5, 7, 8, 9, 12, 16} (every kernel), {17, 24, 40, 64, 65, 100, 128} (mma and skinny
** kernels: 16-row slices of A, the last partly filled; the skinny warpgroup form for m 24, 40, 65, 100 and
** 128 at n 8448, 8500 and 8600, at least one 64-row weight block per SM: one 32-row slice, one 64-row
** slice, and one 128-row slice with 65, 71, 100 and 128 live rows, in blocks of one warpgroup (n 8448) or
** of two sharing the staged A (n 8500, 8600; also m 40 and 64, one 64-row slice); m = 64 at n 4000 and 128 at n 2000:
** 32-row slices; m = 100 at n 4000: two 64-row slices of 63 blocks, 7/8
** of a block per SM), {130, 257} (mma kernels and skinny 16-row slices) and {140, 160, 250, 300, 385,
** 512} (skinny kernels, MID_CASES: 128-, 64-, 32- and 16-row slices, see there), {200, 600} (the
** tensorop kernels, TC_CASES: grids whose last round is K-split, see there; SPLIT_CASES: m 100 and 120,
** by dispatch with the size query's workspace, through which the K splits then sum),
** n in {1, 7, 33, 65, 129, 300, 600, 1000, 1100, 2200, 4000, 4300, 8448, 8500, 8600, 14336, 17500, 34000}, k in {2, 30, 64, 200, 544, 600, 1024, 1280, 2048, 2560, 4096, 8576}
** (ragged chunks of 32 and 128, kv not a multiple of 4; n not a multiple of the 32-column skinny block;
** 2200 rows: more skinny blocks than SMs, 34000 rows at m 16: a skinny grid of several waves, 8576: long
** K ranges per warp, 14336 x 600: K chunks that do
** not divide evenly over the warps; the skinny kernels take one 16-row weight tile per warp where
** blocks of two would leave SMs idle, or at m <= 3 (NVFP4) or 6 (MXFP4) where they load the fullest SM
** with fewer rows (m 1 and 2, n 14336), two at m 3 and 12 n 8440 (264 blocks, whole waves of 132 SMs; the
** last cut by n) and m 40 n 2200, and blocks of two then of one filling whole waves of the SMs at m 7, 8,
** 9 and 16, n 4300 and 13999 .. 14336), lda/ldb/ldd
** with gaps (lda a multiple of 8, ldb of 16 as the kernel requires), C with beta and as a broadcast bias row, NVFP4 with and without a global
** scale; MXFP4 scales (by the case's shape) above 128 in nearly every chunk, in none, or in one
** block; swizzled padding filled with NaN scale bytes (0xFF) so a kernel reading it fails. D is
** poisoned (0xAB bytes, guards before and after) and every byte is checked: the gaps and guards
** must be untouched. Statuses: m above the limit of a warp (16) or skinny (512) kernel ->
** KG_ERROR_NOT_SUPPORTED (with a kg_explain line saying the limit), a misaligned lda ->
** KG_ERROR_MISALIGNED_OPERAND, odd k -> KG_ERROR_INVALID_PROBLEM, and nothing written; dispatch picks a
** skinny variant for m = 320 with or without a workspace, and for m = 512 without one (with one the
** dequantize path, above its path_m of 320).
** Dequantize path (kg.h): every any-M (mma) variant also runs PATH_CASES by dispatch (exec.variant
** NULL), once without a workspace (select must name the variant) and once with a workspace of
** kg_gemm_fp4_workspace_size's bytes filled with NaN bytes: on the GPU the size must be > 0 exactly for
** the bf16 cases whose ldc / ldd are multiples of 8, select then names "dequantize + kg_gemm_cuda_tensorop_*",
** and the result meets the same tolerance plus u * |alpha| * sum |a w| per operand with an NVFP4 global
** scale (the path rounds e2m1 * sf / gs to bf16 once); the cases: m 513 .. 641 (above the small-M kernels; not multiples of the
** 128-row tile), n 7 .. 300, k 30 .. 4096, C with beta, bias rows, W4A4, MXFP4 and NVFP4 with and without
** global scales, and one case with unaligned lds (the in-kernel variant runs). run_path_statuses checks
** the size (n * round8(k) * 2, + m * round8(k) * 2 for W4A4), explain's lines, a short or misaligned
** workspace (in-kernel variant), the variant forced by name (never the path) and the path forced by its
** name (KG_ERROR_WORKSPACE_TOO_SMALL, KG_ERROR_MISALIGNED_OPERAND, KG_ERROR_NOT_SUPPORTED). On the host
** build the size is 0, select names the C variant, and the forced path is KG_ERROR_NOT_SUPPORTED.
** The tensorop variants' tensor maps (check_tensorop_tma): ldb 2^40 at n 1 by dispatch runs on another
** variant, n 2^31 forced is refused.
** KG_EXEC_PDL (kg.h): each W4A16 skinny variant runs run_pdl_chain, two launches with the flag where the
** second reads the first's D as A and writes its D over the first's A (both checked; see there), at m = 5
** and m = 24 (the second in the warpgroup form).
** Last line "N passed, M failed"; exit 1 on any failure, 2 when a CUDA call fails.
** Usage: test_gpu_gemm_fp4 [SUBSTRING] -- only the variants whose name contains it.
**
** Checking the test itself without a GPU: -DKG_GPU_TEST_HOST runs the C-backend variants
** (kg_fp4gemm_c_*) in host memory:
**   make KG_CUDA=0 KG_HIP=0 lib && cc -std=c11 -O2 -DKG_GPU_TEST_HOST -Iruntime/include \
**     tests/gpu/test_gpu_gemm_fp4.c build/c/libkg.a -lm -lpthread -o build/test_gemm_fp4_host
*/
#include "gpu_test.h"
#include "../c/fp4_ref.h"
#include "kg_internal.h"

#define VPREFIX "kg_fp4gemm_" BACKEND_NAME "_"

#define POISON 0xABu
#define GUARD ((size_t)256)

/* ---- reference numerics ---------------------------------------------------------------------- */
static uint64_t g_rng = 88172645463325252ull;
static uint64_t rnd(void) { g_rng ^= g_rng << 13; g_rng ^= g_rng >> 7; g_rng ^= g_rng << 17; return g_rng; }
static double uni(void) { return (double)(rnd() >> 11) / 9007199254740992.0; }

typedef struct gvar { const char *name; int max_m, path_m, format, bf, layout, a_fp4, layout_a; } gvar;

static int layout_of(const char *lay) {
  return !strcmp(lay, "linear") ? KG_SF_LINEAR : !strcmp(lay, "128x4") ? KG_SF_SWIZZLED_128X4
       : !strcmp(lay, "8x4") ? KG_SF_SWIZZLED_8X4 : -1;
}

/* <prefix><kernel>_<format>_<dtype>_sf<layout>[_afp4_sfa<layout>][_tm<rows>] */
static int parse(const char *name, gvar *v) {
  char buf[160], *tok[8];
  int nt = 0;
  snprintf(buf, sizeof buf, "%s", name + strlen(VPREFIX));
  for (char *p = strtok(buf, "_"); p && nt < 8; p = strtok(NULL, "_")) tok[nt++] = p;
  if (nt > 4 && !strncmp(tok[nt - 1], "tm", 2) && !strcmp(tok[0], "tensorop")) nt--;   /* the tile: tile_of */
  if ((nt != 4 && nt != 6) || strncmp(tok[3], "sf", 2) != 0) return 0;
  v->name = name;
  v->max_m = !strcmp(tok[0], "warp") ? 16 : !strcmp(tok[0], "skinny") ? 512 : 0;   /* small-M kernels: their limit */
  v->path_m = !strcmp(tok[0], "skinny") ? 320 : 0;   /* the dequantize path above it, given the workspace */
  v->format = !strcmp(tok[1], "nvfp4") ? KG_FP4_NVFP4 : !strcmp(tok[1], "mxfp4") ? KG_FP4_MXFP4 : -1;
  v->bf = !strcmp(tok[2], "bf16") ? 1 : !strcmp(tok[2], "f16") ? 0 : -1;
  v->layout = layout_of(tok[3] + 2);
  v->a_fp4 = nt == 6;
  v->layout_a = -1;
  if (nt == 6) {
    if (strcmp(tok[4], "afp4") != 0 || strncmp(tok[5], "sfa", 3) != 0) return 0;
    v->layout_a = layout_of(tok[5] + 3);
    if (v->layout_a < 0) return 0;
  }
  return v->format >= 0 && v->bf >= 0 && v->layout >= 0;
}

/* Device buffer with guards: returns the base; *inner is base + GUARD. */
static uint8_t *guarded(size_t n, uint8_t **inner) {
  uint8_t *b = dev_alloc(n + 2 * GUARD);
  *inner = b + GUARD;
  return b;
}

/* al: ldc / ldd multiples of 8 elements (what kg_gemm's tensor-core variants need, so the dequantize path
** can take the case); else n + 1 / n + 3 */
typedef struct gcase { int64_t m, n, k; int with_c, bias, with_gs, al; } gcase;

/* How a case runs: v forced by name; dispatch (exec.variant NULL) without a workspace; dispatch with
** a workspace of kg_gemm_fp4_workspace_size's bytes (the dequantize path where it applies). */
/* RUN_SPLIT: as RUN_WORKSPACE, and on 132 SMs (the H200) the tensorop kernel must sum its K splits
** through that workspace (SPLIT_CASES) */
enum { RUN_FORCED, RUN_DISPATCH, RUN_WORKSPACE, RUN_SPLIT };
static const char *const RUN_NAMES[] = { "forced", "dispatch, no workspace", "dispatch, workspace",
                                         "dispatch, workspace for the K splits" };
#define DEQ_PREFIX "dequantize + "
#define TC_PREFIX "kg_gemm_" BACKEND_NAME "_tensorop_"

static int64_t round8(int64_t x) { return (x + 7) / 8 * 8; }

/* The variant dispatch runs for v's key on a GPU at m > 512: the tensorop kernel (the weights
** decoded by its MMA warpgroups; never the dequantize path) where one is compiled in for the key
** (W4A16 bf16 with 128x4 scales), else v. */
static const char *any_m_target(const gvar *v) {
  static char name[128];
  if (BACKEND == KG_BACKEND_C || v->a_fp4 || !v->bf || v->layout != KG_SF_SWIZZLED_128X4) return v->name;
  snprintf(name, sizeof name, "%stensorop_%s_bf16_sf128x4", VPREFIX,
           v->format == KG_FP4_NVFP4 ? "nvfp4" : "mxfp4");
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

/* Rows of A per tile of a tensorop variant, from its name (256 unless _tm<rows>). */
static int tile_of(const char *name) {
  const char *t = strstr(name, "_tm");
  return t ? atoi(t + 3) : 256;
}

/* The workspace the tensorop variant sel sums its K splits through for m x n x k (its plan given a
** workspace, kg_internal.h; 0 where it splits in clusters or not at all). */
static size_t tc_split_bytes(const char *sel, int64_t m, int64_t n, int64_t k) {
  const int tm = tile_of(sel);
  const int64_t tiles = kg__fp4t_tiles(m, n, 1, tm, 128);
  return kg__fp4t_ws_bytes(kg__fp4t_plan_for(tiles, k, kg__sm_count(BACKEND), 1), tiles, tm);
}

/* One case of variant v. Returns 1 on pass. *worst: error in tolerance units; *path_runs counts the
** calls that took the dequantize path. */
/* The reference's weights: out[j * k + kk] = the value of FP4 element (j, kk) of B (ldb bytes a row)
** with scales S (layout, kv blocks a row; NVFP4 divided by gs), rows j < n over threads (par_for). */
typedef struct wdec { const gvar *v; const uint8_t *B, *S; int64_t ldb, k, kv; double gs; double *out; } wdec;

static void wdec_part(void *ctx, int64_t lo, int64_t hi) {
  const wdec *d = (const wdec *)ctx;
  const int nv = d->v->format == KG_FP4_NVFP4;
  const int64_t bs = nv ? 16 : 32;
  for (int64_t j = lo; j < hi; j++)
    for (int64_t kk = 0; kk < d->k; kk++) {
      unsigned byte = d->B[j * d->ldb + kk / 2], code = kk % 2 ? byte >> 4 : byte & 15u;
      unsigned s = d->S[ref_sf_off(d->v->layout, 0, d->kv, 0, j, kk / bs)];
      d->out[j * d->k + kk] = nv ? ref_e2m1(code) * ref_e4m3(s) / d->gs : ref_e2m1(code) * ref_ue8m0(s);
    }
}

static void wdecode(const gvar *v, const uint8_t *B, int64_t ldb, const uint8_t *S, int64_t n, int64_t k, int64_t kv,
                    double gs, double *out) {
  wdec d = { v, B, S, ldb, k, kv, gs, out };
  par_for(n, n * k * 8, wdec_part, &d);
}

static int run_case(const gvar *v, const gcase *c, int how, double *worst, int *path_runs) {
  const int64_t m = c->m, n = c->n, k = c->k, bs = v->format == KG_FP4_NVFP4 ? 16 : 32, kv = (k + bs - 1) / bs;
  /* W4A4: A is FP4 bytes (lda bytes, a multiple of 16) with its own scales and global scale */
  const int64_t lda = v->a_fp4 ? (k / 2 + 16 + 15) / 16 * 16 : (k + 8 + 7) / 8 * 8;
  const int64_t ldb = (k / 2 + 16 + 15) / 16 * 16, ldd = c->al ? round8(n) + 8 : n + 3;
  const int64_t ldc = c->bias ? 0 : c->al ? round8(n) + 8 : n + 1;
  const size_t an = v->a_fp4 ? (size_t)(m * lda) : (size_t)(m * lda) * 2;
  const double gsa = v->format == KG_FP4_NVFP4 && c->with_gs ? (double)(2688.0f / 3.75f) : 1.0;
  const float gsaf = 2688.0f / 3.75f;
  const double gs = v->format == KG_FP4_NVFP4 && c->with_gs ? (double)(2688.0f / 5.5f) : 1.0;
  const float gsf = 2688.0f / 5.5f;
  uint16_t *A = xmalloc(an);
  if (v->a_fp4) for (size_t i = 0; i < an; i++) ((uint8_t *)A)[i] = (uint8_t)rnd();
  else for (int64_t i = 0; i < m * lda; i++) A[i] = to16(uni() * 4.0 - 2.0, v->bf);
  size_t sfan = v->a_fp4 ? ref_sf_bytes(v->layout_a, m, kv, 1) : 1;
  uint8_t *SA = xmalloc(sfan);
  memset(SA, 0xff, sfan);
  for (int64_t r = 0; v->a_fp4 && r < m; r++)   /* |A| <= 6 * 2^-3 (MXFP4), 6 * 32 / gs or 6 * 2^-1 (NVFP4) */
    for (int64_t kb = 0; kb < kv; kb++)
      SA[ref_sf_off(v->layout_a, 0, kv, 0, r, kb)] = v->format == KG_FP4_MXFP4 ? (uint8_t)(118 + rnd() % 7)
                                         : c->with_gs ? (uint8_t)(0x38 + rnd() % 0x29) : (uint8_t)(0x08 + rnd() % 0x29);
  uint8_t *B = xmalloc((size_t)(n * ldb));
  for (int64_t i = 0; i < n * ldb; i++) B[i] = (uint8_t)rnd();
  size_t sfn = ref_sf_bytes(v->layout, n, kv, 1);
  uint8_t *S = xmalloc(sfn);
  memset(S, 0xff, sfn);
  /* MXFP4, by the case's shape: scales 118 .. 134 (above 128 in nearly every chunk), 118 .. 128
  ** (none above 128), or 118 .. 128 and one byte above 128 (the skinny kernels' two-multiply path
  ** where it is met, the one-multiply path elsewhere) */
  const int mx_mode = (int)((m + n + k) % 3), mx_span = mx_mode == 0 ? 17 : 11;
  for (int64_t r = 0; r < n; r++)
    for (int64_t kb = 0; kb < kv; kb++)
      S[ref_sf_off(v->layout, 0, kv, 0, r, kb)] = v->format == KG_FP4_NVFP4 ? (uint8_t)(0x08 + rnd() % 0x68) : (uint8_t)(118 + rnd() % mx_span);
  if (v->format == KG_FP4_MXFP4 && mx_mode == 2)
    S[ref_sf_off(v->layout, 0, kv, 0, (int64_t)(rnd() % (uint64_t)n), (int64_t)(rnd() % (uint64_t)kv))] = (uint8_t)(129 + rnd() % 6);
  int64_t cn = c->with_c ? (c->bias ? n : m * ldc) : 0;
  uint16_t *C = xmalloc((size_t)(cn ? cn : 1) * 2);
  for (int64_t i = 0; i < cn; i++) C[i] = to16(uni() * 2.0 - 1.0, v->bf);
  size_t dn = (size_t)(m * ldd) * 2;
  uint8_t *D = xmalloc(dn + 2 * GUARD);
  memset(D, POISON, dn + 2 * GUARD);

  uint8_t *dA, *dB, *dS, *dC, *dD, *dG, *dSA, *dGA;
  uint8_t *bA = guarded(an, &dA), *bB = guarded((size_t)(n * ldb), &dB);
  uint8_t *bSA = guarded(sfan, &dSA), *bGA = guarded(4, &dGA);
  uint8_t *bS = guarded(sfn, &dS), *bC = guarded((size_t)(cn ? cn : 1) * 2, &dC), *bG = guarded(4, &dG);
  uint8_t *bD = dev_alloc(dn + 2 * GUARD);
  dD = bD + GUARD;
  h2d(dA, A, an); h2d(dB, B, (size_t)(n * ldb)); h2d(dS, S, sfn); h2d(dSA, SA, sfan); h2d(dGA, &gsaf, 4);
  if (cn) h2d(dC, C, (size_t)cn * 2);
  h2d(dG, &gsf, 4);
  h2d(bD, D, dn + 2 * GUARD);

  kg_gemm_fp4_args a;
  memset(&a, 0, sizeof a);
  a.m = m; a.n = n; a.k = k; a.dtype = v->bf ? KG_BF16 : KG_F16; a.format = v->format; a.sf_layout = v->layout;
  a.a = dA; a.lda = lda; a.b = dB; a.ldb = ldb; a.sf_b = dS; a.sf_b_bytes = sfn;
  a.global_scale_b = v->format == KG_FP4_NVFP4 && c->with_gs ? (const float *)dG : NULL;
  a.c = cn ? dC : NULL; a.ldc = ldc; a.beta = cn ? -0.5f : 0.0f;
  a.d = dD; a.ldd = ldd; a.alpha = 1.25f;
  if (v->a_fp4) {
    a.a_fp4 = 1; a.sf_layout_a = v->layout_a; a.sf_a = dSA; a.sf_a_bytes = sfan;
    a.global_scale_a = v->format == KG_FP4_NVFP4 && c->with_gs ? (const float *)dGA : NULL;
  }
  kg_exec e = exec_for(how == RUN_FORCED ? v->name : NULL);
  int ok = 1, path = 0;
  uint8_t *bW = NULL;
  if (how != RUN_FORCED) {
    /* the in-kernel variant without a workspace; with one, the dequantize path where its size is > 0
    ** (never on the C backend) */
    size_t ws = 1;
    const char *sel = NULL;
    kg_status qs = kg_gemm_fp4_workspace_size(&a, &e, &ws);
    /* on a GPU the path applies to the bf16 cases with aligned lds (f16 only for NVFP4 without global
    ** scales: exact there); never on the C backend */
    const int gs_any = a.global_scale_b || a.global_scale_a;
    const char *target = any_m_target(v);
    const int fused = strstr(target, "_tensorop_") != NULL;
    const int expect = !fused && BACKEND != KG_BACKEND_C && c->al && (v->bf || (v->format == KG_FP4_NVFP4 && !gs_any));
    /* a tensorop target: the size of its K splits' sums (checked below against the variant chosen with it) */
    if (qs != KG_SUCCESS || (!fused && (ws > 0) != expect)) {
      printf("FAIL %s m%lld n%lld k%lld: workspace size %s, %zu bytes\n", v->name, (long long)m, (long long)n,
             (long long)k, kg_status_string(qs), ws);
      ok = 0;
    }
    if (how >= RUN_WORKSPACE && ws > 0) {   /* NaN bytes: a GEMM reading the row padding fails */
      uint8_t *poison = xmalloc(ws);
      memset(poison, 0xFF, ws);
      bW = dev_alloc(ws);
      h2d(bW, poison, ws);
      free(poison);
      e.workspace = bW; e.workspace_size = ws;
    }
    kg_status ss = kg_gemm_fp4_select(&a, &e, &sel);
    path = ss == KG_SUCCESS && !strncmp(sel, DEQ_PREFIX, strlen(DEQ_PREFIX));
    const int want_path = how >= RUN_WORKSPACE && ws > 0 && !fused;
    if (fused && ss == KG_SUCCESS && how >= RUN_WORKSPACE && ws != tc_split_bytes(sel, m, n, k)) {
      printf("FAIL %s m%lld n%lld k%lld: workspace size %zu, %s sums its K splits through %zu\n", v->name,
             (long long)m, (long long)n, (long long)k, ws, sel, tc_split_bytes(sel, m, n, k));
      ok = 0;
    }
    if (how == RUN_SPLIT && BACKEND != KG_BACKEND_C && kg__sm_count(BACKEND) == 132 && ws == 0) {
      printf("FAIL %s m%lld n%lld k%lld: no K splits through the workspace\n", v->name, (long long)m, (long long)n,
             (long long)k);
      ok = 0;
    }
    if (ss != KG_SUCCESS || path != want_path || (!path && !is_target(sel, target)) ||
        (path && strncmp(sel + strlen(DEQ_PREFIX), TC_PREFIX, strlen(TC_PREFIX)))) {
      printf("FAIL %s m%lld n%lld k%lld (%s): select %s gave %s (workspace %zu bytes)\n", v->name, (long long)m,
             (long long)n, (long long)k, RUN_NAMES[how], kg_status_string(ss), sel ? sel : "-", ws);
      ok = 0;
    }
    *path_runs += path;
  }
  kg_status st = kg_gemm_fp4(&a, &e);
  dev_sync();
  if (st != KG_SUCCESS) {
    printf("FAIL %s m%lld n%lld k%lld (%s): %s\n", v->name, (long long)m, (long long)n, (long long)k, RUN_NAMES[how],
           kg_status_string(st));
    ok = 0;
  }
  /* the path rounds e2m1 * f32(sf) / gs to the activation type once per element where a global scale is set
  ** (kg.h): half an ulp, u, per such operand */
  const int ngs = path ? (a.global_scale_b != NULL) + (a.global_scale_a != NULL) : 0;
  d2h(D, bD, dn + 2 * GUARD);
  const double u = v->bf ? ldexp(1.0, -8) : ldexp(1.0, -11);
  int shown = 0;
  for (size_t i = 0; ok && i < GUARD; i++)
    if (D[i] != POISON || D[GUARD + dn + i] != POISON) { printf("FAIL %s: guard byte written\n", v->name); ok = 0; }
  double *w = xmalloc(sizeof(double) * (size_t)(n * k));
  wdecode(v, B, ldb, S, n, k, kv, gs, w);
  double *av = xmalloc(sizeof(double) * (size_t)(m * k));   /* A decoded once */
  for (int64_t i = 0; i < m; i++)
    for (int64_t kk = 0; kk < k; kk++) {
      if (v->a_fp4) {
        unsigned byte = ((const uint8_t *)A)[i * lda + kk / 2], code = kk % 2 ? byte >> 4 : byte & 15u;
        unsigned sa = SA[ref_sf_off(v->layout_a, 0, kv, 0, i, kk / bs)];
        av[i * k + kk] = v->format == KG_FP4_NVFP4 ? ref_e2m1(code) * ref_e4m3(sa) / gsa : ref_e2m1(code) * ref_ue8m0(sa);
      } else av[i * k + kk] = v->bf ? bf16_to_f64(A[i * lda + kk]) : f16_to_f64(A[i * lda + kk]);
    }
  double *ss = xmalloc(sizeof(double) * (size_t)(m * n)), *sabs = xmalloc(sizeof(double) * (size_t)(m * n));
  ref_dots(av, k, w, k, m, n, k, ss, sabs);
  for (int64_t i = 0; ok && i < m; i++)
    for (int64_t j = 0; j < ldd; j++) {
      const uint8_t *px = D + GUARD + (size_t)(i * ldd + j) * 2;
      uint16_t got16 = (uint16_t)(px[0] | (px[1] << 8));
      if (j >= n) {
        if (px[0] != POISON || px[1] != POISON) { printf("FAIL %s: D gap (%lld, %lld) written\n", v->name, (long long)i, (long long)j); ok = 0; }
        continue;
      }
      const double s = ss[i * n + j], abs = sabs[i * n + j];
      double cterm = cn ? -0.5 * (v->bf ? bf16_to_f64(C[i * ldc + j]) : f16_to_f64(C[i * ldc + j])) : 0.0;
      double ref = 1.25 * s + cterm;
      /* + the output type's subnormal spacing (f16 2^-24): tiny results round absolutely */
      double tol = 2.0 * u * fabs(ref) + ((double)(k + 4) * ldexp(1.0, -23) + 1.01 * ngs * u) * 1.25 * abs +
                   ldexp(1.0, -22) * fabs(cterm) + (v->bf ? ldexp(1.0, -133) : ldexp(1.0, -24));
      double got = v->bf ? bf16_to_f64(got16) : f16_to_f64(got16);
      double err = fabs(got - ref);
      if (!(err <= tol)) {
        if (shown++ < 4)
          printf("FAIL %s m%lld n%lld k%lld (%s%s): D(%lld, %lld) = %.9g, reference %.9g (tol %.3g)\n", v->name,
                 (long long)m, (long long)n, (long long)k, RUN_NAMES[how], path ? ", dequantize path" : "",
                 (long long)i, (long long)j, got, ref, tol);
        ok = 0;
      } else if (err / tol > *worst) *worst = err / tol;
    }
  free(w);
  free(av);
  free(ss);
  free(sabs);
  dev_free(bA); dev_free(bB); dev_free(bS); dev_free(bC); dev_free(bG); dev_free(bD); dev_free(bSA); dev_free(bGA);
  if (bW) dev_free(bW);
  free(A); free(B); free(S); free(C); free(D); free(SA);
  return ok;
}

/* Statuses: m above the limit (GPU), misaligned lda (GPU), odd k; D untouched. */
static int run_statuses(const gvar *v) {
  const int64_t n = 8, k = 64, bs = v->format == KG_FP4_NVFP4 ? 16 : 32, kv = k / bs, m = v->max_m ? v->max_m + 1 : 17;
  size_t sfn = ref_sf_bytes(v->layout, n, kv, 1), dn = (size_t)(m * n * 2);
  size_t sfan = v->a_fp4 ? ref_sf_bytes(v->layout_a, m, kv, 1) : 1;
  uint8_t *dSA = dev_alloc(sfan);
  uint8_t *dA = dev_alloc((size_t)(m * (k + 8) * 2)), *dB = dev_alloc((size_t)(n * k / 2)), *dS = dev_alloc(sfn);
  uint8_t *dD = dev_alloc(dn), *D = xmalloc(dn);
  memset(D, POISON, dn);
  h2d(dD, D, dn);
  kg_gemm_fp4_args a;
  memset(&a, 0, sizeof a);
  a.m = m; a.n = n; a.k = k; a.dtype = v->bf ? KG_BF16 : KG_F16; a.format = v->format; a.sf_layout = v->layout;
  a.a = dA; a.lda = v->a_fp4 ? k / 2 : k; a.b = dB; a.ldb = k / 2; a.sf_b = dS; a.sf_b_bytes = sfn; a.d = dD; a.ldd = n;
  a.alpha = 1.0f;
  if (v->a_fp4) { a.a_fp4 = 1; a.sf_layout_a = v->layout_a; a.sf_a = dSA; a.sf_a_bytes = sfan; }
  kg_exec e = exec_for(v->name);
  int ok = 1;
  char buf[4096];
  kg_status st;
  if (v->max_m && BACKEND != KG_BACKEND_C) {   /* the mma kernels take any m (and would write D) */
    char want[64];
    snprintf(want, sizeof want, "above the variant's limit %d", v->max_m);
    st = kg_gemm_fp4(&a, &e);
    if (st != KG_ERROR_NOT_SUPPORTED) { printf("FAIL %s: m = %lld gave %s\n", v->name, (long long)m, kg_status_string(st)); ok = 0; }
    kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
    if (!strstr(buf, want)) { printf("FAIL %s: explain for m = %lld: %s\n", v->name, (long long)m, buf); ok = 0; }
  }
  if (v->max_m > 16 && BACKEND != KG_BACKEND_C) {
    /* skinny: dispatch picks it for m <= its path_m (320) with or without a workspace (the size
    ** query is 0), and for m up to its limit without one; above path_m the size query is > 0 where
    ** the dequantize path applies (always for bf16 here), and given that workspace the path runs */
    for (int t = 0; t < 2; t++) {
      const char *sel = NULL, *sel_ws = NULL;
      size_t ws = 1;
      kg_exec d = exec_for(NULL);
      a.m = t ? v->max_m : v->path_m;
      int bad = kg_gemm_fp4_select(&a, &d, &sel) != KG_SUCCESS || strcmp(sel, v->name) != 0 ||
                kg_gemm_fp4_workspace_size(&a, &d, &ws) != KG_SUCCESS || (t == 0 && ws != 0) || (t == 1 && v->bf && ws == 0);
      if (!bad && ws > 0) {
        uint8_t *dW = dev_alloc(ws);
        d.workspace = dW; d.workspace_size = ws;
        bad = kg_gemm_fp4_select(&a, &d, &sel_ws) != KG_SUCCESS || strncmp(sel_ws, "dequantize + kg_gemm_", 21) != 0;
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
    const int64_t good = a.lda;
    a.lda = v->a_fp4 ? k / 2 + 8 : k + 4;
    st = kg_gemm_fp4(&a, &e);
    if (st != KG_ERROR_MISALIGNED_OPERAND) { printf("FAIL %s: misaligned lda gave %s\n", v->name, kg_status_string(st)); ok = 0; }
    a.lda = good;
  }
  dev_sync();
  h2d(dD, D, dn);
  a.k = k - 1;
  st = kg_gemm_fp4(&a, &e);
  if (st != KG_ERROR_INVALID_PROBLEM) { printf("FAIL %s: odd k gave %s\n", v->name, kg_status_string(st)); ok = 0; }
  dev_sync();
  d2h(D, dD, dn);
  for (size_t i = 0; ok && i < dn; i++)
    if (D[i] != POISON) { printf("FAIL %s: a refused call wrote D\n", v->name); ok = 0; }
  dev_free(dA); dev_free(dB); dev_free(dS); dev_free(dD); dev_free(dSA); free(D);
  return ok;
}

/* The dequantize path's contract for an any-M variant v (m = 520, above the small-M kernels; lds
** multiples of 8, NVFP4 global scales): the workspace size (0 on the C backend; on a GPU n * round8(k)
** * 2 bytes, plus m * round8(k) * 2 for W4A4), explain's last line without and with the workspace, a
** workspace one byte short or misaligned (the in-kernel variant runs), v forced by name (never the
** path), the path forced by its select name (short workspace -> KG_ERROR_WORKSPACE_TOO_SMALL,
** misaligned -> KG_ERROR_MISALIGNED_OPERAND, no such kg_gemm variant -> KG_ERROR_NOT_SUPPORTED; on the
** C backend KG_ERROR_NOT_SUPPORTED); refused calls write nothing. */
/* The tensorop kernels' dispatch rules (descriptor tile_m, tile_n and fill_m, kg_fp4.c): a variant
** is passed over for m <= half its tile, where its twin with the other tile size (256 or 128 rows of
** A) is estimated faster (kg__fp4t_cost: rounds of blocks x a block's K steps and fixed cost), and
** for m <= 512 where its tiles, times the K splits it would launch, fill less than 3/4 of the SMs
** (2/3 split): the skinny kernel runs there. Taken otherwise, with or without a workspace (never the
** dequantize path); forced by name it takes any size. Each case names the tile that takes it on 132
** SMs (the H200; 0: none): that variant must be chosen; where none is, explain names the rule. */
static int check_tensorop_dispatch(const gvar *v) {
  static const struct { int64_t m, n, k; int tile, forced; } CASES[] = {
    { 128, 16384, 64, 128, 0 },    /* 256: half a tile */
    { 192, 65536, 64, 256, 0 },    /* 4 rounds of 256-row tiles against 8 of 128 */
    { 512, 128, 64, 0, 0 },        /* 4 tiles of 128 rows: too few for the SMs */
    { 1, 128, 64, -1, 1 },         /* forced: either tile takes m = 1 */
    { 384, 4096, 64, 0, 0 },       /* 96 tiles of 128 rows, unsplit (k 64): under 3/4 of the SMs */
    { 384, 4096, 4096, 256, 0 },   /* 64 tiles of 256 in two K splits against 96 unsplit of 128 */
    { 256, 4096, 4096, 128, 0 },   /* 64 tiles of 128 in two splits against 32 of 256 in three */
    { 2048, 4096, 4096, 256, 0 },  /* m > 512: no fill rule; 2 rounds of 256 against 4 of 128 */
  };
  const int own = tile_of(v->name);
  const int64_t nmax = 65536, mmax = 2048, kmax = 4096, bs = v->format == KG_FP4_NVFP4 ? 16 : 32;
  /* select reads no operand: buffers of the largest extents, never written */
  uint8_t *dA = dev_alloc((size_t)(mmax * kmax * 2)), *dB = dev_alloc((size_t)(nmax * kmax / 2));
  uint8_t *dS = dev_alloc(ref_sf_bytes(v->layout, nmax, kmax / bs, 1));
  uint8_t *dD = dev_alloc((size_t)(192 * nmax * 2));   /* the largest m x n */
  static char buf[16384];
  int ok = 1;
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
    kg_gemm_fp4_args a;
    memset(&a, 0, sizeof a);
    const int64_t k = CASES[i].k, kv = k / bs;
    a.m = CASES[i].m; a.n = CASES[i].n; a.k = k; a.dtype = KG_BF16; a.format = v->format; a.sf_layout = v->layout;
    a.a = dA; a.lda = k; a.b = dB; a.ldb = k / 2; a.sf_b = dS; a.sf_b_bytes = ref_sf_bytes(v->layout, a.n, kv, 1);
    a.d = dD; a.ldd = a.n; a.alpha = 1.0f;
    kg_exec e = exec_for(CASES[i].forced ? v->name : NULL);
    const char *sel = NULL;
    size_t ws = 7;
    const kg_status st = kg_gemm_fp4_select(&a, &e, &sel), qs = kg_gemm_fp4_workspace_size(&a, &e, &ws);
    const int picked = st == KG_SUCCESS && !strcmp(sel, v->name);
    const int want = CASES[i].forced || CASES[i].tile == own;
    int good = picked == want && qs == KG_SUCCESS && (!picked || ws == tc_split_bytes(sel, a.m, a.n, k));
    if (good && !picked && CASES[i].tile > 0)   /* the twin of the case's tile is chosen */
      good = st == KG_SUCCESS && strstr(sel, "_tensorop_") && tile_of(sel) == CASES[i].tile;
    else if (good && !picked) {   /* explain names the rule */
      kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
      good = strstr(buf, "fills at most half of its") || strstr(buf, "are estimated faster here") ||
             strstr(buf, "fill less than 3/4 of") || strstr(buf, "fill less than 2/3 of");
    }
    if (!good) {
      printf("FAIL %s: dispatch at m = %lld, n = %lld, k = %lld%s chose %s (%s), workspace %zu bytes\n", v->name,
             (long long)a.m, (long long)a.n, (long long)k, CASES[i].forced ? " (forced)" : "", sel ? sel : "-",
             kg_status_string(st), ws);
      ok = 0;
    }
  }
  /* 32 tiles of 128 rows (m 128, n 4096, k 14336; 132 SMs): 3 K splits in clusters, 4 through a
  ** workspace of the size query's bytes (32 x 4 partial tiles of 128 x 128 f32 and 32 counters);
  ** explain says which, and what workspace would give more */
  if (own == 128 && kg__sm_count(BACKEND) == 132) {
    kg_gemm_fp4_args a;
    memset(&a, 0, sizeof a);
    a.m = 128; a.n = 4096; a.k = 14336; a.dtype = KG_BF16; a.format = v->format; a.sf_layout = v->layout;
    a.a = dA; a.lda = a.k; a.b = dB; a.ldb = a.k / 2; a.sf_b = dS; a.sf_b_bytes = ref_sf_bytes(v->layout, a.n, a.k / bs, 1);
    a.d = dD; a.ldd = a.n; a.alpha = 1.0f;
    kg_exec e = exec_for(NULL);
    size_t ws = 0;
    const size_t want = (size_t)32 * 4 * 128 * 128 * 4 + 128;
    char line[160];
    const int sized = kg_gemm_fp4_workspace_size(&a, &e, &ws) == KG_SUCCESS && ws == want;
    kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
    snprintf(line, sizeof line, "%s: 32 tiles in 3 K splits each (clusters); a workspace of %zu bytes", v->name, want);
    const int without = strstr(buf, line) != NULL;
    e.workspace = dD; e.workspace_size = want;   /* explain reads no memory; dD is larger */
    kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
    snprintf(line, sizeof line, "%s: 32 tiles in 4 K splits each, summed through the workspace (%zu bytes)", v->name, want);
    const int with = strstr(buf, line) != NULL;
    if (!sized || !without || !with) {
      printf("FAIL %s: m 128, n 4096, k 14336: workspace size %zu (want %zu), explain without / with it %d / %d:\n%s",
             v->name, ws, want, without, with, buf);
      ok = 0;
    }
  }
  dev_free(dA); dev_free(dB); dev_free(dS); dev_free(dD);
  return ok;
}

/* The tensorop kernels' tensor maps (kg__tma_rejects: int32 coordinates, strides below 2^40 bytes).
** By dispatch at m = 600 (where tensorop variants are taken), ldb = 2^40 at n = 1 (the ld is never
** stepped): another variant runs it and matches the reference, and kg_explain names the strides on
** v's line. Forced by name, n = 2^31 is KG_ERROR_NOT_SUPPORTED (int32 coordinates); nothing is read. */
static int check_tensorop_tma(const gvar *v) {
  const int64_t m = 600, k = 64, bs = v->format == KG_FP4_NVFP4 ? 16 : 32, kv = k / bs, ldb = (int64_t)1 << 40;
  static char buf[16384];
  char want[200];
  int ok = 1;
  uint16_t *A = xmalloc((size_t)(m * k) * 2);
  for (int64_t i = 0; i < m * k; i++) A[i] = to16(uni() * 4.0 - 2.0, 1);
  uint8_t B[32];
  for (int i = 0; i < 32; i++) B[i] = (uint8_t)rnd();
  const size_t sfn = ref_sf_bytes(v->layout, 1, kv, 1);
  uint8_t *S = xmalloc(sfn);
  memset(S, 0, sfn);
  for (int64_t kb = 0; kb < kv; kb++)
    S[ref_sf_off(v->layout, 0, kv, 0, 0, kb)] = v->format == KG_FP4_NVFP4 ? (uint8_t)(0x30 + rnd() % 0x10) : (uint8_t)(124 + rnd() % 6);
  uint16_t *D = xmalloc((size_t)m * 2);
  memset(D, 0xff, (size_t)m * 2);
  uint8_t *dA = dev_alloc((size_t)(m * k) * 2), *dB = dev_alloc(32), *dS = dev_alloc(sfn), *dD = dev_alloc((size_t)m * 2);
  h2d(dA, A, (size_t)(m * k) * 2); h2d(dB, B, 32); h2d(dS, S, sfn); h2d(dD, D, (size_t)m * 2);
  kg_gemm_fp4_args a;
  memset(&a, 0, sizeof a);
  a.m = m; a.n = 1; a.k = k; a.dtype = KG_BF16; a.format = v->format; a.sf_layout = v->layout;
  a.a = dA; a.lda = k; a.b = dB; a.ldb = ldb; a.sf_b = dS; a.sf_b_bytes = sfn; a.d = dD; a.ldd = 1; a.alpha = 1.0f;
  kg_exec e = exec_for(NULL);
  const kg_status st = kg_gemm_fp4(&a, &e);
  dev_sync();
  d2h(D, dD, (size_t)m * 2);
  double w[64];
  wdecode(v, B, ldb, S, 1, k, kv, 1.0, w);
  for (int64_t i = 0; ok && i < m; i++) {
    double ref = 0, abs = 0;
    for (int64_t kk = 0; kk < k; kk++) { ref += bf16_to_f64(A[i * k + kk]) * w[kk]; abs += fabs(bf16_to_f64(A[i * k + kk]) * w[kk]); }
    const double tol = 2.0 * ldexp(1.0, -8) * fabs(ref) + (double)(k + 4) * ldexp(1.0, -23) * abs + ldexp(1.0, -133);
    if (!(fabs(bf16_to_f64(D[i]) - ref) <= tol)) {
      printf("FAIL %s: ldb 2^40, n 1, by dispatch: D(%lld) = %.9g, reference %.9g (%s)\n", v->name, (long long)i,
             bf16_to_f64(D[i]), ref, kg_status_string(st));
      ok = 0;
    }
  }
  kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
  snprintf(want, sizeof want, "%s: rejected: operand b: strides of", v->name);
  if (st != KG_SUCCESS || !strstr(buf, want)) {
    printf("FAIL %s: ldb 2^40, n 1, by dispatch: %s; kg_explain:\n%s", v->name, kg_status_string(st), buf);
    ok = 0;
  }
  /* n = 2^31, forced: the sizes are claimed; select reads and runs nothing */
  a.n = (int64_t)1 << 31; a.ldb = k / 2; a.ldd = a.n; a.sf_b_bytes = ref_sf_bytes(v->layout, a.n, kv, 1);
  e = exec_for(v->name);
  const char *sel = NULL;
  const kg_status fs = kg_gemm_fp4_select(&a, &e, &sel);
  kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
  if (fs != KG_ERROR_NOT_SUPPORTED || !strstr(buf, "int32 coordinates")) {
    printf("FAIL %s: n = 2^31 forced: %s, want 'not supported' (int32 coordinates); kg_explain:\n%s", v->name,
           kg_status_string(fs), buf);
    ok = 0;
  }
  dev_free(dA); dev_free(dB); dev_free(dS); dev_free(dD);
  free(A); free(S); free(D);
  return ok;
}

static int run_path_statuses(const gvar *v) {
  const int64_t m = 520, n = 24, k = 64, bs = v->format == KG_FP4_NVFP4 ? 16 : 32, kv = k / bs, ldd = 32;
  const size_t sfn = ref_sf_bytes(v->layout, n, kv, 1), dn = (size_t)(m * ldd * 2);
  const size_t sfan = v->a_fp4 ? ref_sf_bytes(v->layout_a, m, kv, 1) : 1;
  const float gs = 3.0f;
  uint8_t *dSA = dev_alloc(sfan), *dG = dev_alloc(4);
  uint8_t *dA = dev_alloc((size_t)(m * k * 2)), *dB = dev_alloc((size_t)(n * k / 2)), *dS = dev_alloc(sfn);
  uint8_t *dD = dev_alloc(dn), *D = xmalloc(dn);
  memset(D, POISON, dn);
  h2d(dD, D, dn);
  h2d(dG, &gs, 4);
  kg_gemm_fp4_args a;
  memset(&a, 0, sizeof a);
  a.m = m; a.n = n; a.k = k; a.dtype = v->bf ? KG_BF16 : KG_F16; a.format = v->format; a.sf_layout = v->layout;
  a.a = dA; a.lda = v->a_fp4 ? k / 2 : k; a.b = dB; a.ldb = k / 2; a.sf_b = dS; a.sf_b_bytes = sfn; a.d = dD; a.ldd = ldd;
  a.alpha = 1.0f;
  if (v->format == KG_FP4_NVFP4) a.global_scale_b = (const float *)dG;
  if (v->a_fp4) {
    a.a_fp4 = 1; a.sf_layout_a = v->layout_a; a.sf_a = dSA; a.sf_a_bytes = sfan;
    if (v->format == KG_FP4_NVFP4) a.global_scale_a = (const float *)dG;
  }
  const int gpu = BACKEND != KG_BACKEND_C, f16_refused = !v->bf && (v->format == KG_FP4_MXFP4 || a.global_scale_b);
  const size_t want = gpu && !f16_refused ? (size_t)((n + (v->a_fp4 ? m : 0)) * round8(k) * 2) : 0;
  int ok = 1;
  static char buf[16384];
  char forced[256];
  const char *sel = NULL;
  size_t ws = 7;
  kg_exec e = exec_for(NULL);
  kg_status st = kg_gemm_fp4_workspace_size(&a, &e, &ws);
  if (st != KG_SUCCESS || ws != want) {
    printf("FAIL %s: path workspace size %s, %zu bytes, wanted %zu\n", v->name, kg_status_string(st), ws, want);
    ok = 0;
  }
  uint8_t *bW = dev_alloc(ws + 16);
  if (ws > 0) {
    /* no workspace: explain says the path was not taken and why; the FP4 variant is chosen */
    char line[320];
    snprintf(line, sizeof line, "dequantize path: not taken: workspace 0 bytes given, %zu needed", ws);
    st = kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
    if (st != KG_SUCCESS || !strstr(buf, line) || !strstr(buf, v->name)) {
      printf("FAIL %s: explain without a workspace (%s): %.600s\n", v->name, kg_status_string(st), buf);
      ok = 0;
    }
    /* one byte short, then misaligned: the FP4 variant */
    const size_t sizes[2] = { ws - 1, ws };
    for (int t = 0; t < 2; t++) {
      e.workspace = bW + (t ? 8 : 0); e.workspace_size = sizes[t];
      st = kg_gemm_fp4_select(&a, &e, &sel);
      if (st != KG_SUCCESS || strcmp(sel, v->name) != 0) {
        printf("FAIL %s: select with a %s workspace gave %s %s\n", v->name, t ? "misaligned" : "short",
               kg_status_string(st), sel ? sel : "-");
        ok = 0;
      }
    }
    /* the workspace: explain names the path instead of v */
    e.workspace = bW; e.workspace_size = ws;
    st = kg_gemm_fp4_select(&a, &e, &sel);
    if (st != KG_SUCCESS || strncmp(sel, DEQ_PREFIX TC_PREFIX, strlen(DEQ_PREFIX TC_PREFIX)) != 0) {
      printf("FAIL %s: select with the workspace gave %s %s\n", v->name, kg_status_string(st), sel ? sel : "-");
      ok = 0;
      sel = DEQ_PREFIX "?";
    }
    snprintf(forced, sizeof forced, "%s", sel);
    snprintf(line, sizeof line, "%s: chosen instead of %s (", forced, v->name);
    st = kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
    if (st != KG_SUCCESS || !strstr(buf, line)) {
      printf("FAIL %s: explain with the workspace (%s): %.600s\n", v->name, kg_status_string(st), buf);
      ok = 0;
    }
    /* v forced by name: never the path, workspace size 0 */
    e.variant = v->name;
    size_t ws2 = 7;
    if (kg_gemm_fp4_select(&a, &e, &sel) != KG_SUCCESS || strcmp(sel, v->name) != 0 ||
        kg_gemm_fp4_workspace_size(&a, &e, &ws2) != KG_SUCCESS || ws2 != 0) {
      printf("FAIL %s: forced by name with a workspace: %s, workspace size %zu\n", v->name, sel ? sel : "-", ws2);
      ok = 0;
    }
    /* the path forced by its name: short / misaligned workspace, no such kg_gemm variant */
    e.variant = forced;
    if (kg_gemm_fp4_workspace_size(&a, &e, &ws2) != KG_SUCCESS || ws2 != ws) {
      printf("FAIL %s: forced path workspace size %zu\n", v->name, ws2);
      ok = 0;
    }
    e.workspace_size = ws - 1;
    if ((st = kg_gemm_fp4(&a, &e)) != KG_ERROR_WORKSPACE_TOO_SMALL) {
      printf("FAIL %s: forced path, short workspace: %s\n", v->name, kg_status_string(st));
      ok = 0;
    }
    e.workspace = NULL; e.workspace_size = 0;
    if ((st = kg_gemm_fp4(&a, &e)) != KG_ERROR_WORKSPACE_TOO_SMALL) {
      printf("FAIL %s: forced path, no workspace: %s\n", v->name, kg_status_string(st));
      ok = 0;
    }
    e.workspace = bW + 8; e.workspace_size = ws;
    if ((st = kg_gemm_fp4(&a, &e)) != KG_ERROR_MISALIGNED_OPERAND) {
      printf("FAIL %s: forced path, misaligned workspace: %s\n", v->name, kg_status_string(st));
      ok = 0;
    }
    e.workspace = bW;
    e.variant = DEQ_PREFIX "kg_gemm_no_such_variant";
    if ((st = kg_gemm_fp4(&a, &e)) != KG_ERROR_NOT_SUPPORTED) {
      printf("FAIL %s: forced path, no such kg_gemm variant: %s\n", v->name, kg_status_string(st));
      ok = 0;
    }
    kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
    if (!strstr(buf, DEQ_PREFIX "kg_gemm_no_such_variant: rejected: kg_gemm takes no variant named")) {
      printf("FAIL %s: explain of a forced unknown path: %.600s\n", v->name, buf);
      ok = 0;
    }
  } else if (!gpu) {
    /* the C backend: the path forced by name is not supported, dispatch ignores a workspace */
    e.variant = DEQ_PREFIX "kg_gemm_c_blocked_bf16_xxx";
    e.workspace = bW; e.workspace_size = 16;
    if ((st = kg_gemm_fp4(&a, &e)) != KG_ERROR_NOT_SUPPORTED) {
      printf("FAIL %s: forced path on the C backend: %s\n", v->name, kg_status_string(st));
      ok = 0;
    }
    kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
    if (!strstr(buf, "rejected: the dequantize path is for the GPU backends")) {
      printf("FAIL %s: explain of the forced path on the C backend: %.600s\n", v->name, buf);
      ok = 0;
    }
    e.variant = NULL;
    st = kg_explain(KG_OP_GEMM_FP4, &a, &e, buf, sizeof buf);
    if (st != KG_SUCCESS || kg_gemm_fp4_select(&a, &e, &sel) != KG_SUCCESS || strcmp(sel, v->name) != 0 ||
        strstr(buf, "dequantize")) {
      printf("FAIL %s: dispatch on the C backend with a workspace: %s; %.600s\n", v->name, sel ? sel : "-", buf);
      ok = 0;
    }
  }
  dev_sync();
  d2h(D, dD, dn);
  for (size_t i = 0; ok && i < dn; i++)
    if (D[i] != POISON) { printf("FAIL %s: a refused call wrote D\n", v->name); ok = 0; }
  dev_free(dA); dev_free(dB); dev_free(dS); dev_free(dD); dev_free(dSA); dev_free(dG); dev_free(bW); free(D);
  return ok;
}

/* ---- KG_EXEC_PDL ------------------------------------------------------------------------------- */
/* Weights of an [n, k] W4A16 product of v: packed bytes B (ldb = k / 2 + 16), scales S in v's layout
** (padding 0xFF: NaN) and their dequantized values W (double [n][k], global scale gs). */
typedef struct pweights { int64_t n, k, ldb; uint8_t *B, *S; size_t sfn; double *W; } pweights;

static void pweights_make(const gvar *v, int64_t n, int64_t k, double gs, pweights *w) {
  const int64_t bs = v->format == KG_FP4_NVFP4 ? 16 : 32, kv = (k + bs - 1) / bs;
  w->n = n; w->k = k; w->ldb = k / 2 + 16;
  w->B = xmalloc((size_t)(n * w->ldb));
  for (int64_t i = 0; i < n * w->ldb; i++) w->B[i] = (uint8_t)rnd();
  w->sfn = ref_sf_bytes(v->layout, n, kv, 1);
  w->S = xmalloc(w->sfn);
  memset(w->S, 0xff, w->sfn);
  for (int64_t r = 0; r < n; r++)
    for (int64_t kb = 0; kb < kv; kb++)
      w->S[ref_sf_off(v->layout, 0, kv, 0, r, kb)] = v->format == KG_FP4_NVFP4 ? (uint8_t)(0x20 + rnd() % 0x18) : (uint8_t)(120 + rnd() % 5);
  w->W = xmalloc(sizeof(double) * (size_t)(n * k));
  wdecode(v, w->B, w->ldb, w->S, n, k, kv, gs, w->W);
}

/* D [m, w->n] (ldd) against A [m, w->k] (lda) . W^T in double, the tolerance of run_case (alpha 1, no C). */
static int pdl_check(const gvar *v, const char *what, const uint16_t *A, int64_t lda, const pweights *w,
                     const uint16_t *D, int64_t ldd, int64_t m, double *worst) {
  const double u = v->bf ? ldexp(1.0, -8) : ldexp(1.0, -11);
  int shown = 0;
  double *av = xmalloc(sizeof(double) * (size_t)(m * w->k)), *ss = xmalloc(sizeof(double) * (size_t)(m * w->n));
  double *sabs = xmalloc(sizeof(double) * (size_t)(m * w->n));
  for (int64_t i = 0; i < m; i++)
    for (int64_t kk = 0; kk < w->k; kk++) av[i * w->k + kk] = val16(A[i * lda + kk], v->bf);
  ref_dots(av, w->k, w->W, w->k, m, w->n, w->k, ss, sabs);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < w->n; j++) {
      const double s = ss[i * w->n + j], abs = sabs[i * w->n + j];
      double tol = 2.0 * u * fabs(s) + (double)(w->k + 4) * ldexp(1.0, -23) * abs + (v->bf ? ldexp(1.0, -133) : ldexp(1.0, -24));
      double got = val16(D[i * ldd + j], v->bf), err = fabs(got - s);
      if (!(err <= tol)) {
        if (shown++ < 4)
          printf("FAIL %s (KG_EXEC_PDL chain, %s): D(%lld, %lld) = %.9g, reference %.9g (tol %.3g)\n", v->name, what,
                 (long long)i, (long long)j, got, s, tol);
      } else if (err / tol > *worst) *worst = err / tol;
    }
  free(av); free(ss); free(sabs);
  return shown == 0;
}

/* Two launches of v in a row on one stream, both with KG_EXEC_PDL: the first D1 = A1 . W1^T, the
** second reads D1 as its A and writes its D over A1 (D2 = D1 . W2^T, n2 = k1). With the flag the second
** kernel may start while the first still runs, so this passes only when each touches A and D after
** its wait: reading A too early sees D1's NaN poison; writing D too early changes A1 while the first
** still reads it (the first has few blocks and a long K: the second's blocks start on the free SMs
** while it runs). Both products against the reference (the second on the D1 the GPU wrote), 2 rounds. */
static int run_pdl_chain(const gvar *v, int64_t m, double *worst) {
  const int64_t k1 = 16384, n1 = 1024;   /* the first: few skinny blocks, most SMs free for the second */
  const double gs = v->format == KG_FP4_NVFP4 ? (double)(2688.0f / 5.5f) : 1.0;
  const float gsf = 2688.0f / 5.5f;
  pweights w1, w2;
  pweights_make(v, n1, k1, gs, &w1);
  pweights_make(v, k1, n1, gs, &w2);
  const size_t a1n = (size_t)(m * k1) * 2, d1n = (size_t)(m * n1) * 2;
  uint16_t *A1 = xmalloc(a1n), *D1 = xmalloc(d1n), *D2 = xmalloc(a1n);
  uint8_t *dA1 = dev_alloc(a1n), *dD1 = dev_alloc(d1n), *dB1 = dev_alloc((size_t)(n1 * w1.ldb)), *dB2 = dev_alloc((size_t)(k1 * w2.ldb));
  uint8_t *dS1 = dev_alloc(w1.sfn), *dS2 = dev_alloc(w2.sfn), *dG = dev_alloc(4);
  h2d(dB1, w1.B, (size_t)(n1 * w1.ldb)); h2d(dB2, w2.B, (size_t)(k1 * w2.ldb));
  h2d(dS1, w1.S, w1.sfn); h2d(dS2, w2.S, w2.sfn); h2d(dG, &gsf, 4);
  kg_gemm_fp4_args g[2];
  memset(g, 0, sizeof g);
  for (int q = 0; q < 2; q++) {
    const pweights *w = q ? &w2 : &w1;
    g[q].m = m; g[q].n = w->n; g[q].k = w->k; g[q].dtype = v->bf ? KG_BF16 : KG_F16; g[q].format = v->format;
    g[q].sf_layout = v->layout; g[q].b = q ? dB2 : dB1; g[q].ldb = w->ldb; g[q].sf_b = q ? dS2 : dS1; g[q].sf_b_bytes = w->sfn;
    g[q].global_scale_b = v->format == KG_FP4_NVFP4 ? (const float *)dG : NULL;
    g[q].a = q ? dD1 : dA1; g[q].lda = w->k; g[q].d = q ? dA1 : dD1; g[q].ldd = w->n; g[q].alpha = 1.0f;
  }
  kg_exec e = exec_for(v->name);
  e.flags = KG_EXEC_PDL;
  int ok = 1;
  for (int round = 0; ok && round < 2; round++) {
    for (int64_t i = 0; i < m * k1; i++) A1[i] = to16(uni() * 4.0 - 2.0, v->bf);
    memset(D1, 0xff, d1n);   /* NaN */
    h2d(dA1, A1, a1n); h2d(dD1, D1, d1n);
    kg_status s1 = kg_gemm_fp4(&g[0], &e), s2 = kg_gemm_fp4(&g[1], &e);
    dev_sync();
    if (s1 != KG_SUCCESS || s2 != KG_SUCCESS) {
      printf("FAIL %s (KG_EXEC_PDL chain): %s, %s\n", v->name, kg_status_string(s1), kg_status_string(s2));
      ok = 0;
      break;
    }
    d2h(D1, dD1, d1n); d2h(D2, dA1, a1n);
    ok = pdl_check(v, "first", A1, k1, &w1, D1, n1, m, worst) && pdl_check(v, "second", D1, n1, &w2, D2, k1, m, worst);
  }
  dev_free(dA1); dev_free(dD1); dev_free(dB1); dev_free(dB2); dev_free(dS1); dev_free(dS2); dev_free(dG);
  free(A1); free(D1); free(D2);
  free(w1.B); free(w1.S); free(w1.W); free(w2.B); free(w2.S); free(w2.W);
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
  printf("test_gpu_gemm_fp4: HOST BUILD (KG_GPU_TEST_HOST): C-backend variants, host memory\n");
#endif
  static const gcase CASES[] = {
    { 1, 1, 2, 0, 0, 1, 0 }, { 2, 7, 30, 1, 0, 1, 0 }, { 5, 129, 64, 1, 1, 0, 0 }, { 16, 300, 200, 1, 0, 1, 0 },
    { 16, 7, 544, 0, 0, 1, 0 }, { 1, 129, 4096, 1, 0, 1, 0 }, { 16, 300, 4096, 0, 0, 0, 0 }, { 3, 1, 96, 1, 1, 1, 0 },
    { 5, 33, 544, 1, 1, 1, 0 }, { 8, 65, 200, 1, 0, 1, 0 }, { 9, 33, 4096, 1, 1, 0, 0 }, { 12, 129, 544, 0, 0, 1, 0 },
    /* long K (whole chunks and ring turns per warp), more skinny blocks than SMs */
    { 5, 2200, 2560, 1, 0, 1, 0 }, { 16, 33, 8576, 0, 1, 1, 0 }, { 1, 300, 1280, 1, 0, 0, 0 },
    /* 5 K chunks, the last ragged, over the skinny kernel's 4 warps of 2 chunks (its grid fills the
    ** GPU): one warp owns none, one only the ragged chunk; m = 1 and 2 in blocks of one 16-row tile (7
    ** per SM against 4 of two), m = 7 and 9 in the mixed grid (blocks of two tiles, then of one); n 13999
    ** and 14300: the mixed grid's last block of one tile cut by n */
    { 1, 14336, 600, 0, 0, 1, 0 }, { 2, 14336, 600, 1, 1, 1, 0 }, { 7, 14336, 600, 1, 1, 1, 0 }, { 9, 14336, 600, 1, 0, 1, 0 },
    { 16, 13999, 544, 0, 0, 1, 0 }, { 7, 14300, 600, 1, 0, 0, 0 },
    /* blocks of two tiles only (264: whole waves of the H200's SMs), the last cut by n */
    { 3, 8440, 544, 0, 1, 1, 0 }, { 12, 8440, 544, 1, 0, 1, 0 },
    /* a skinny grid of several waves (m 9 .. 16: 1063 blocks of two tiles, mixed into 1188; no K split
    ** lets the SMs hold them), which takes the launcher's floor of 2 K ranges per block */
    { 16, 34000, 544, 1, 0, 1, 0 },
    /* the skinny kernels' blocks of two 16-row weight tiles per warp (at least one per SM for m <= 8, one
    ** per two SMs for m 9 .. 16 and the 16-row slices above), as at n 14336 (m 8 n 4300: 135 blocks, a
    ** mixed grid of 5 two-tile blocks); the smaller n above and below run one tile per warp */
    { 8, 4300, 544, 1, 0, 1, 0 }, { 40, 2200, 544, 0, 1, 1, 0 },
    /* m > 16: the mma kernels (not multiples of their 64 x 64 tile) and the skinny kernels (16-row
    ** slices of A, the last one partly filled) */
    { 40, 300, 544, 1, 1, 1, 0 }, { 17, 7, 30, 1, 0, 1, 0 }, { 100, 129, 200, 1, 1, 1, 0 }, { 130, 300, 544, 0, 0, 0, 0 }, { 64, 64, 4096, 1, 0, 1, 0 },
    { 257, 65, 64, 0, 0, 1, 0 },
    /* m > 16 with at least one 64-row weight block per SM (132 on the H200): the skinny kernels' warpgroup
    ** form (m <= 32: one 32-row slice, ragged K and n; m <= 64: 64 rows, ring turns; m 65 .. 128: one
    ** 128-row slice (GEMM; the DualGemm's test has two 64-row ones), 65, 100 or all 128 rows live, one
    ** warpgroup per block at n 8448 (132 blocks), two sharing A at n 8500 and 8600 (more than 132
    ** blocks of 64 rows: 67 and 68 of 128, the last partly filled; k 600: a ragged last chunk); n 4000,
    ** 63 blocks: two 64-row slices) */
    { 24, 8500, 600, 1, 0, 1, 0 }, { 40, 8448, 1280, 0, 1, 1, 0 }, { 100, 8448, 256, 1, 1, 1, 0 },
    { 128, 8500, 384, 0, 0, 0, 0 }, { 100, 4000, 256, 1, 0, 1, 0 }, { 65, 8448, 160, 0, 1, 1, 0 },
    { 100, 8600, 600, 1, 1, 1, 0 }, { 71, 8600, 4096, 1, 0, 1, 0 },
    /* m 33 .. 64, more than 132 blocks of 64 weight rows: the 64-row slice in blocks of two warpgroups
    ** (68 blocks of 128 rows, the last partly filled; ragged k) */
    { 64, 8600, 600, 1, 0, 1, 0 }, { 40, 8500, 1280, 0, 1, 1, 0 },
    /* m > 32 with 7/8 of a block per SM in 32-row slices: two at m = 64, n 4000 (63 blocks of 64
    ** rows), four at m = 128, n 2000 (the last partly filled; 32 blocks); m = 72 at n 4000 stays in
    ** 16-row slices */
    { 64, 4000, 600, 0, 1, 1, 0 }, { 128, 2000, 600, 1, 1, 1, 0 }, { 72, 4000, 4096, 1, 0, 1, 0 },
  };
  /* m 129 .. 512, the skinny kernels only (the mma ones run m 130 and 257 above): 128-row slices in
  ** blocks of two warpgroups (m 140: two at n 8448, the second with 12 live rows; m 300: three at
  ** n 4000, 63 blocks of 64 weight rows a slice, where 64-row slices would take two waves), 64-row slices (m 385: seven, the last with
  ** one live row, one warpgroup per block, 7/8 of a block per SM; m 512: eight in blocks of two at
  ** n 1100), 32-row slices at m 250, n 1000 (eight, 7/8 of a block per SM), 16-row slices at m 160,
  ** n 600 */
  static const gcase MID_CASES[] = {
    { 140, 8448, 130, 1, 1, 1, 0 }, { 300, 4000, 96, 0, 0, 1, 0 }, { 385, 1100, 200, 1, 0, 0, 0 },
    { 512, 1100, 96, 1, 1, 1, 0 }, { 250, 1000, 600, 0, 1, 1, 0 }, { 160, 600, 1280, 1, 0, 1, 0 },
  };
  /* the tensorop kernels' grids of several rounds whose last round is a second, K-split launch
  ** (kg__fp4t_plan_for, 132 SMs): m 200, n 17500 (137 weight tiles, the last cut by n: 5 tiles split
  ** on 256-row tiles, 10 on 128-row ones; the second row tile of 128 partly filled); m 600, k 2048:
  ** weights over 16 MiB (launch order in groups of row tiles), 3 (5) row tiles, the last partly
  ** filled, 15 (25) tiles split */
  static const gcase TC_CASES[] = {
    { 200, 17500, 1024, 1, 0, 1, 0 }, { 600, 17500, 2048, 0, 1, 1, 0 },
  };
  /* tensorop variants by dispatch, without and with the size query's workspace, which (132 SMs) sums
  ** the K splits through it: 32 tiles of 128 rows in 4 splits instead of 3 clusters (m 100, n 4000:
  ** the last column tile cut; ragged k, 112 groups of 128, the last partly filled) */
  static const gcase SPLIT_CASES[] = {
    { 100, 4000, 14300, 1, 0, 1, 1 }, { 120, 4050, 14336, 0, 1, 0, 0 },
  };
  /* any-M variants by dispatch, without and with the workspace (the dequantize path on a GPU where
  ** kg_gemm has a tensor-core variant: lds multiples of 8; M, N not multiples of its 128 x 128 tile,
  ** ragged K, C with beta, a bias row, with and without NVFP4 global scales); the last has
  ** unaligned lds: the in-kernel variant runs with the workspace too */
  static const gcase PATH_CASES[] = {
    { 517, 7, 30, 1, 0, 1, 1 }, { 550, 129, 200, 1, 1, 1, 1 }, { 530, 100, 544, 1, 0, 0, 1 },
    { 641, 65, 64, 0, 0, 1, 1 }, { 520, 64, 1280, 1, 0, 1, 1 }, { 513, 40, 96, 1, 1, 0, 1 },
    { 550, 129, 200, 1, 0, 1, 0 },
  };
  int nv = 0;
  for (int i = 0; i < kg_variant_count(); i++) {
    const char *name = kg_variant_name(i);
    if (strncmp(name, VPREFIX, strlen(VPREFIX)) != 0 || (only && !strstr(name, only))) continue;
    gvar v;
    if (!parse(name, &v)) { printf("FAIL %s: cannot parse the variant name\n", name); g_fail++; continue; }
    nv++;
    double worst = 0.0;
    int fails = 0, path_runs = 0;
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
      if (v.max_m && CASES[c].m > v.max_m) continue;
      if (run_case(&v, &CASES[c], RUN_FORCED, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
    }
    for (size_t c = 0; v.max_m > 16 && c < sizeof MID_CASES / sizeof MID_CASES[0]; c++)
      if (run_case(&v, &MID_CASES[c], RUN_FORCED, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
    for (size_t c = 0; strstr(name, "_tensorop_") && c < sizeof TC_CASES / sizeof TC_CASES[0]; c++)
      if (run_case(&v, &TC_CASES[c], RUN_FORCED, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
    for (size_t c = 0; strstr(name, "_tensorop_") && c < sizeof SPLIT_CASES / sizeof SPLIT_CASES[0]; c++)
      for (int how = RUN_DISPATCH; how <= RUN_SPLIT; how += RUN_SPLIT - RUN_DISPATCH)
        if (run_case(&v, &SPLIT_CASES[c], how, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
    if (run_statuses(&v)) g_pass++; else { g_fail++; fails++; }
    /* the variants that honour KG_EXEC_PDL; on the host build every W4A16 variant (checks the test) */
    if (!v.a_fp4 && (v.max_m > 16 || BACKEND == KG_BACKEND_C)) {
      /* m = 24, 40: the second launch (n = 16384) takes the skinny kernels' warpgroup form (m = 40: in
      ** blocks of two warpgroups) */
      static const int64_t PDL_MS[] = { 5, 24, 40 };
      for (size_t q = 0; q < sizeof PDL_MS / sizeof PDL_MS[0]; q++)
        if (run_pdl_chain(&v, PDL_MS[q], &worst)) g_pass++; else { g_fail++; fails++; }
    }
    if (!v.max_m) {
      for (size_t c = 0; c < sizeof PATH_CASES / sizeof PATH_CASES[0]; c++)
        for (int how = RUN_DISPATCH; how <= RUN_WORKSPACE; how++)
          if (run_case(&v, &PATH_CASES[c], how, &worst, &path_runs)) g_pass++; else { g_fail++; fails++; }
      /* the path's statuses by dispatch: for keys whose dispatch takes the path */
      if (!strstr(any_m_target(&v), "_tensorop_")) { if (run_path_statuses(&v)) g_pass++; else { g_fail++; fails++; } }
      if (strstr(name, "_tensorop_") && BACKEND != KG_BACKEND_C) {
        if (check_tensorop_dispatch(&v)) g_pass++; else { g_fail++; fails++; }
        if (check_tensorop_tma(&v)) g_pass++; else { g_fail++; fails++; }
      }
    }
    printf("%s %s: worst error %.3f of the tolerance%s\n", fails ? "FAIL" : "ok  ", name, worst,
           v.max_m ? "" : path_runs ? ", dequantize path taken" : ", dequantize path not taken");
  }
  if (nv == 0) { printf("FAIL no %s* variants compiled in\n", VPREFIX); g_fail++; }
  summary();
  return g_fail ? 1 : 0;
}
