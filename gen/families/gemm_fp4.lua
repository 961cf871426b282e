-- Block-scaled FP4 GEMM family: D = alpha * A.W^T (+ beta * C) with W an FP4
-- weight [N, K] (K-major, packed low nibble first) with NVFP4 (E4M3 per 16 +
-- f32 global scale) or MXFP4 (UE8M0 per 32) scales in any of the three scale
-- layouts, and A either f16 / bf16 activations [M, K] row-major (W4A16) or
-- FP4 in the same format with its own scales (W4A4, a_dtype = "fp4") (kg.h,
-- block-scaled FP4 GEMM). Kernels: blocked (C backend: packed loops, A and W
-- panels dequantized into f32 while packing), warp (CUDA, HIP: small M, one
-- warp per output column, 16-byte loads of 32 packed weights, dequantized in
-- registers, f32 FMA), skinny (CUDA, W4A16: bf16, or f16 with NVFP4; m <= 512: packed weights
-- dequantized in registers straight into mma.sync m16n8k16 fragments; preferred
-- over warp where both apply) and mma (CUDA, HIP: any M, tiles of A and W
-- dequantized to bf16/f16 in shared memory, the dialect's warp-level MMA:
-- mma.sync m16n8k16 / MFMA 16x16x16). families/dualgemm_fp4.lua renders the
-- same templates with two weights (PRODUCTS).
local DG = require("families.dualgemm")
local fmt = require("lib.fmt")

local F = { name = "gemm_fp4" }

-- HIP has no skinny kernel (its MFMA fragments do not match the per-lane K
-- permutation): the warp kernel serves small M there.
local KERNELS = { c = { blocked = true }, cuda = { warp = true, skinny = true, mma = true, tensorop = true },
                  hip = { warp = true, mma = true } }
local KERNEL_ORDER = { "blocked", "warp", "skinny", "mma", "tensorop" }
local DEFAULT_KERNEL = { c = "blocked", cuda = "warp", hip = "warp" }
-- Largest m the small-M kernels take. warp: its accumulators per lane. skinny: m > 16 runs
-- in slices of A (16 rows, or 32 / 64 / 128 in the warpgroup form), each its own blocks that
-- decode the weights again (their reads shared through L2), so its time grows with m faster
-- than the dequantize path's; up to 512 it measured ahead of the path or close to it on the
-- H200 (docs/architecture.md, FP4 item 4). Callers that give the path no workspace get these
-- kernels up to here.
F.MAX_M = { warp = 16, skinny = 512 }
-- Largest m at which the skinny kernel is preferred to the dequantize path (kg.h) on GPUs:
-- above it, up to MAX_M, the path runs where the caller gives its workspace (the kernel where
-- not). From m = 320 to 512 the two measured within about 15% of each other on the H200, the
-- path ahead more often (bench/results 2026-12-02 f73f6c1).
F.PATH_M = { skinny = 320 }
-- skinny kernel (CUDA, fp4/gemm_skinny.kgt), per family: each 16-row slice of A
-- as one or two 8-row tiles; up to KSPLIT_MAX warps split K (the launch picks how many); a
-- warp takes TILES tiles of 16 weight rows (one A fragment feeds them all; the
-- launch takes one where blocks of TILES would leave SMs idle) and
-- keeps RING 128-wide K chunks of weight loads in flight (registers: RING * TILES
-- * NB * 8 per lane). narrow_m (TILES > 1): up to which m, per format, blocks of one tile
-- also run where they put fewer weight rows on the fullest SM (their extra loads of A grow
-- with m: H200, N = 14336, K = 4096, NVFP4 slower from m = 4, MXFP4 from m = 8). xs_m
-- (DualGemm): up to which m, per format, the two products run in separate warps (XS) for
-- one batch (m = 1: any batches; NVFP4 under PDL not); each warp then loads A's m rows
-- itself (H200, N = 14336, K = 4096: MXFP4 1.4 to 1.9 us faster at m 2..4, under PDL 0.3
-- to 1.0; NVFP4 at most 0.35 at m 2..3 and slower from m = 4; 8 experts batched: slower at
-- m 2..8). wg: its warpgroup form for m > 16 (wgmma; one warp per 16 weight
-- rows): GROUP k16 steps of decoded weights per register fence, at most MT 8-row tiles of
-- A per slice (GEMM 16: one m64n128 slice for m > 64 where its blocks fill the SMs, 245
-- registers; DualGemm 8: the two products' m64n64 accumulators fit in 255 registers with a
-- few words spilled, faster than two 32-row slices).
F.SKINNY = { gemm = { ksplit_max = 16, tiles = 2, ring = 2, narrow_m = { nvfp4 = 3, mxfp4 = 6 }, wg = { group = 8, mt = 16 } },
             dual = { ksplit_max = 16, tiles = 1, ring = 2, xs_m = { nvfp4 = 1, mxfp4 = 6 }, wg = { group = 4, mt = 8 } } }
-- mma kernel: block tile and warps (WM x WN) per backend. CUDA: 64x64 on 2x2
-- warps of 32x32 (2 x 4 m16n8 atoms each); HIP: 64x64 on 2x2 waves of 32x32
-- (2 x 2 MFMA 16x16 atoms). K step 32 (two k16 atoms).
F.MMA_TILE = { cuda = { tm = 64, tn = 64, tk = 32, wm = 2, wn = 2 }, hip = { tm = 64, tn = 64, tk = 32, wm = 2, wn = 2 } }
-- tensorop kernel (CUDA, W4A16 bf16, 128x4 scales; fp4/gemm_tensorop.kgt): the weights,
-- decoded by the MMA warpgroups, are wgmma's register operand, A comes by bulk tensor copies;
-- block tile tn weight rows (64 per warpgroup; the DualGemm: tn / 2 rows of each weight, one
-- warpgroup per weight) x tm rows of A (the axis tile_m), K tiles of tk, `stages` deep, ku K
-- tiles per wait on the MMAs. Dispatch (descriptor tile_m and fill_m, runtime/src/kg_fp4.c)
-- tries it before the other kernels of its key, except for m <= tm / 2 and, up to
-- MAX_M.skinny, where its tiles fill less than 3/4 of the SMs (2/3 with K splits); of the two
-- tile sizes it takes the one kg__fp4t_cost (kg_internal.h) estimates faster. Tiles of 64 rows
-- lost to the skinny kernel at m = 32 and 64 and are not built. Stages: 8 for 128 rows (4, 6
-- and 10 were slower), 4 for 256 (6 made the DualGemm slower). H200 figures:
-- docs/architecture.md, FP4 item 5, and bench/results 2026-12-04 fp4-tensorop-stages.
F.TENSOROP = { [256] = { tm = 256, tn = 128, tk = 64, stages = 4, ku = 2 },
               [128] = { tm = 128, tn = 128, tk = 64, stages = 8, ku = 2 } }

local LAYOUTS = { "linear", "128x4", "8x4" }

-- Axes shared with the FP4 DualGemm family (which inserts its own after these).
F.axes = {
  { name = "backend", values = { "c", "cuda", "hip" } },
  { name = "kernel", values = KERNEL_ORDER, default = function(v) return DEFAULT_KERNEL[v.backend] end },
  { name = "dtype", values = { "f16", "bf16" } },
  -- A's type: the activation dtype (W4A16) or fp4 (W4A4: A quantized in `format` too)
  { name = "a_dtype", values = { "f16", "bf16", "fp4" }, default = function(v) return v.dtype end },
  { name = "format", values = { "nvfp4", "mxfp4" } },
  { name = "sf_layout", values = LAYOUTS, default = "128x4" },
  -- W4A4: layout of A's scales (default: the weights' layout); none for W4A16
  { name = "sf_layout_a", values = { "linear", "128x4", "8x4", "none" },
    default = function(v) if v.a_dtype == "fp4" then return v.sf_layout end return "none" end },
  -- the tensorop kernel's rows of A per block (F.TENSOROP); 0 for the other kernels
  { name = "tile_m", values = { 0, 128, 256 },
    default = function(v) return v.kernel == "tensorop" and 256 or 0 end },
}

-- Template files the family renders (tests stub them).
F.templates = { "fp4/gemm_blocked.kgt", "fp4/gemm_warp.kgt", "fp4/gemm_skinny.kgt",
                "fp4/gemm_mma.kgt", "fp4/gemm_tensorop.kgt" }

local function allowed_kernels(backend)
  local out = {}
  for _, k in ipairs(KERNEL_ORDER) do if KERNELS[backend][k] then out[#out + 1] = k end end
  return table.concat(out, ", ")
end

function F.legal(v)
  if not KERNELS[v.backend][v.kernel] then
    return string.format("kernel '%s' does not exist on backend '%s'; allowed: %s", v.kernel, v.backend,
      allowed_kernels(v.backend)), "kernel"
  end
  if v.a_dtype ~= v.dtype and v.a_dtype ~= "fp4" then
    return string.format("A is the activation dtype or FP4; allowed: a_dtype = %s, fp4", v.dtype), "a_dtype"
  end
  if v.a_dtype == "fp4" and v.sf_layout_a == "none" then
    return "FP4 A (W4A4) has scales; allowed: sf_layout_a = linear, 128x4, 8x4", "sf_layout_a"
  end
  if v.a_dtype ~= "fp4" and v.sf_layout_a ~= "none" then
    return string.format("sf_layout_a is for FP4 A (a_dtype = fp4), here a_dtype = %s; allowed: sf_layout_a = none",
      v.a_dtype), "sf_layout_a"
  end
  if v.kernel == "skinny" and v.a_dtype ~= v.dtype then
    return string.format("the skinny kernel multiplies 16-bit activations (W4A16); allowed: a_dtype = dtype "
      .. "(here a_dtype = %s, dtype = %s; the warp and mma kernels take FP4 A)", v.a_dtype, v.dtype), "a_dtype"
  end
  if v.kernel == "skinny" and v.dtype == "f16" and v.format ~= "nvfp4" then
    -- MMAs on the activation type: e2m1 * scale is exact in bf16 for both formats, in f16 for
    -- NVFP4 only (UE8M0 scales leave f16's range)
    return "the skinny kernel takes f16 activations with NVFP4 weights only (UE8M0 scales exceed f16's range); "
      .. "allowed: dtype = bf16 (or format = nvfp4)", "dtype"
  end
  if (v.kernel == "tensorop") ~= (v.tile_m ~= 0) then
    if v.kernel == "tensorop" then
      return "the tensorop kernel's tiles have 128 or 256 rows of A; allowed: tile_m = 128, 256", "tile_m"
    end
    return string.format("tile_m is the tensorop kernel's (here kernel = %s); allowed: tile_m = 0", v.kernel), "tile_m"
  end
  if v.kernel == "tensorop" then
    if v.a_dtype ~= v.dtype or v.dtype ~= "bf16" then
      return "the tensorop kernel multiplies bf16 activations (W4A16); allowed: dtype = bf16, a_dtype = bf16", "dtype"
    end
    if v.sf_layout ~= "128x4" then
      return "the tensorop kernel reads the 128x4 scale layout; allowed: sf_layout = 128x4", "sf_layout"
    end
  end
  if v.kernel == "mma" and v.dtype == "f16" and v.format == "mxfp4" then
    -- e2m1 * 2^(e-127) is exact in bf16 (f32's exponent range), not in f16
    return "the mma kernel dequantizes MXFP4 into bf16 (UE8M0 scales exceed f16's range); allowed: dtype = bf16"
      .. " (or format = nvfp4)", "dtype"
  end
  return nil
end

-- "_afp4_sfa<layout>" for W4A4, "" for W4A16 (W4A16 names are those of the first release);
-- then "_tm128" for the tensorop kernel's tiles of 128 rows of A.
function F.a_suffix(v)
  local tm = (v.tile_m ~= 0 and v.tile_m ~= 256) and ("_tm" .. fmt.int(v.tile_m)) or ""
  if v.a_dtype == "fp4" then return "_afp4_sfa" .. v.sf_layout_a .. tm end
  return tm
end

-- kg_fp4gemm_<backend>_<kernel>_<format>_<dtype>_sf<layout>[_afp4_sfa<layout>] (not kg_gemm_:
-- that prefix is the GEMM family's)
function F.name_of(v)
  return table.concat({ "kg_fp4gemm", v.backend, v.kernel, v.format, v.dtype, "sf" .. v.sf_layout }, "_")
    .. F.a_suffix(v)
end

function F.template(v) return "fp4/gemm_" .. v.kernel .. ".kgt" end

-- Inside one key the tensorop kernel comes first (it declines small problems, see F.TENSOROP),
-- then the small-M kernels (skinny, then warp), the any-M mma kernel last.
-- Tensorop variants: the larger tile first.
function F.rank(v)
  return ({ blocked = 0, mma = 200, warp = 300, skinny = 400, tensorop = 450 })[v.kernel] + math.floor((v.tile_m or 0) / 128)
end

function F.sort_key(v)
  return string.format("%s|%s|%s|%s|%s|%s|%s|%04d|%s", v.family, v.backend, v.dtype, v.a_dtype, v.format,
    v.sf_layout, v.sf_layout_a, 9999 - F.rank(v), v.name)
end

local DTYPE_ENUM = { f16 = "KG_F16", bf16 = "KG_BF16" }
local FORMAT_ENUM = { nvfp4 = "KG_FP4_NVFP4", mxfp4 = "KG_FP4_MXFP4" }
local LAYOUT_ENUM = { linear = "KG_SF_LINEAR", ["128x4"] = "KG_SF_SWIZZLED_128X4", ["8x4"] = "KG_SF_SWIZZLED_8X4",
                      none = "-1" }
F.DTYPE_ENUM, F.FORMAT_ENUM, F.LAYOUT_ENUM = DTYPE_ENUM, FORMAT_ENUM, LAYOUT_ENUM

-- Descriptor fields common to both families (op, modes and launch added by each);
-- nb: weights per product (1 GEMM, 2 DualGemm). Layouts are fixed by the op (A, C, D
-- row-major, W K-major) and not in the descriptor: dispatch never matches on them.
function F.common_descriptor(v, d, nb)
  local gpu = v.backend ~= "c"
  local fields = {
    ".backend = " .. d.backend_enum, '.arch = "' .. d.arch .. '"', '.kernel = "' .. v.kernel .. '"',
    ".type_ab = " .. DTYPE_ENUM[v.dtype], ".type_cd = " .. DTYPE_ENUM[v.dtype],
    ".align = " .. (gpu and "8" or "1"), ".max_m = " .. tostring(F.MAX_M[v.kernel] or 0),
    ".path_m = " .. tostring(F.PATH_M[v.kernel] or 0),
    ".fp4_format = " .. FORMAT_ENUM[v.format], ".sf_layout = " .. LAYOUT_ENUM[v.sf_layout], ".mx_round = -1",
    ".a_fp4 = " .. (v.a_dtype == "fp4" and "1" or "0"), ".sf_layout_a = " .. LAYOUT_ENUM[v.sf_layout_a],
  }
  if v.kernel == "tensorop" then
    local T = F.TENSOROP[v.tile_m]
    for _, f in ipairs({ ".tile_m = " .. T.tm, ".tile_n = " .. fmt.int(T.tn / (nb or 1)), ".tile_k = " .. T.tk,
                         ".stages = " .. T.stages,
                         ".fill_m = " .. F.MAX_M.skinny, ".tma = 1" }) do
      fields[#fields + 1] = f
    end
  end
  return fields
end

function F.descriptor(v, d)
  local fields = { ".op = KG_OP_GEMM_FP4" }
  for _, f in ipairs(F.common_descriptor(v, d)) do fields[#fields + 1] = f end
  fields[#fields + 1] = ".modes = KG_MODE_BIT(KG_MODE_GEMM)"
  fields[#fields + 1] = ".gemm_fp4_launch = " .. v.name
  return fields
end

function F.prototypes(v)
  return { "kg_status " .. v.name .. "(const kg_gemm_fp4_args *args, const kg_exec *exec);" }
end

-- Scale-offset functions of templates/fp4/common.kgt, per layout.
local SF_OFF = { linear = "kg_sf_off_linear", ["128x4"] = "kg_sf_off_128x4", ["8x4"] = "kg_sf_off_8x4" }

-- Values the templates read besides v and d (both families).
function F.common_prepare(v, d, env)
  env.BS = v.format == "mxfp4" and 32 or 16   -- elements per scale block
  env.NV = v.format == "nvfp4"
  env.SF_OFF = SF_OFF[v.sf_layout]
  env.A4 = v.a_dtype == "fp4"                 -- W4A4: A is FP4 with scales
  env.SF_OFF_A = SF_OFF[v.sf_layout_a]
  env.MAX_M = F.MAX_M[v.kernel] or 0
  env.MMA = F.MMA_TILE[v.backend]
  env.TENSOROP = F.TENSOROP[v.tile_m]
  env.TA = d.storage[v.dtype]                 -- A (W4A16), C, D element type
  env.load_a = function(x) return string.format(d.to_f32[v.dtype], x) end
  env.store_d = function(x) return string.format(d.from_f32[v.dtype], x) end
end

function F.prepare(v, d, env)
  F.common_prepare(v, d, env)
  env.NB, env.DUAL, env.BATCHED = 1, false, false
  env.SKINNY = F.SKINNY.gemm
  env.ARGS_T = "kg_gemm_fp4_args"
  -- One entry per product: its weight, scales, global scale, C, D and scalars by
  -- their names in the args struct.
  env.PRODUCTS = { { b = "b", sf = "sf_b", gs = "global_scale_b", c = "c", d = "d", alpha = "alpha", beta = "beta",
                     store = true } }
  env.dual_op = nil
end

-- The DualGemm op expression (families/dualgemm.lua), for the FP4 DualGemm.
F.dual_op_fn = DG.op_fn

return F
