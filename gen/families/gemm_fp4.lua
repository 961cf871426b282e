-- W4A16 block-scaled FP4 GEMM family: D = alpha * A.W^T (+ beta * C), A f16 or
-- bf16 activations [M, K] row-major, W an FP4 weight [N, K] (K-major, packed
-- low nibble first) with NVFP4 (E4M3 per 16 + f32 global scale) or MXFP4
-- (UE8M0 per 32) scales in any of the three scale layouts (kg.h, W4A16 FP4
-- GEMM). Kernels: blocked (C backend: packed loops, B panels dequantized into
-- f32 while packing) and warp (CUDA, HIP: small M, one warp per output column,
-- 16-byte loads of 32 packed weights, dequantized in registers, f32 FMA).
local F = { name = "gemm_fp4" }

local KERNEL_OF = { c = "blocked", cuda = "warp", hip = "warp" }
-- Largest m the GPU kernel takes (its accumulators per lane).
F.MAX_M = 16

F.axes = {
  { name = "backend", values = { "c", "cuda", "hip" } },
  { name = "kernel", values = { "blocked", "warp" }, default = function(v) return KERNEL_OF[v.backend] end },
  { name = "dtype", values = { "f16", "bf16" } },
  { name = "format", values = { "nvfp4", "mxfp4" } },
  { name = "sf_layout", values = { "linear", "128x4", "8x4" }, default = "128x4" },
}

-- Template files the family renders (tests stub them).
F.templates = { "fp4/gemm_blocked.kgt", "fp4/gemm_warp.kgt" }

function F.legal(v)
  if v.kernel ~= KERNEL_OF[v.backend] then
    return string.format("kernel '%s' does not exist on backend '%s'; allowed: %s", v.kernel, v.backend,
      KERNEL_OF[v.backend]), "kernel"
  end
  return nil
end

-- kg_fp4gemm_<backend>_<kernel>_<format>_<dtype>_sf<layout> (not kg_gemm_: that prefix is the
-- GEMM family's)
function F.name_of(v)
  return table.concat({ "kg_fp4gemm", v.backend, v.kernel, v.format, v.dtype, "sf" .. v.sf_layout }, "_")
end

function F.template(v) return "fp4/gemm_" .. v.kernel .. ".kgt" end

-- One variant per (backend, dtype, format, layout): no ranking needed.
function F.rank() return 0 end

function F.sort_key(v)
  return string.format("%s|%s|%s|%s|%s|%s", v.family, v.backend, v.dtype, v.format, v.sf_layout, v.name)
end

local DTYPE_ENUM = { f16 = "KG_F16", bf16 = "KG_BF16" }
local FORMAT_ENUM = { nvfp4 = "KG_FP4_NVFP4", mxfp4 = "KG_FP4_MXFP4" }
local LAYOUT_ENUM = { linear = "KG_SF_LINEAR", ["128x4"] = "KG_SF_SWIZZLED_128X4", ["8x4"] = "KG_SF_SWIZZLED_8X4" }

-- Layouts are fixed by the op (A, C, D row-major, W K-major) and not in the
-- descriptor: dispatch never matches on them.
function F.descriptor(v, d)
  local gpu = v.backend ~= "c"
  return {
    ".op = KG_OP_GEMM_FP4", ".backend = " .. d.backend_enum, '.arch = "' .. d.arch .. '"',
    '.kernel = "' .. v.kernel .. '"',
    ".type_ab = " .. DTYPE_ENUM[v.dtype], ".type_cd = " .. DTYPE_ENUM[v.dtype],
    ".modes = KG_MODE_BIT(KG_MODE_GEMM)",
    ".align = " .. (gpu and "8" or "1"), ".max_m = " .. (gpu and tostring(F.MAX_M) or "0"),
    ".fp4_format = " .. FORMAT_ENUM[v.format], ".sf_layout = " .. LAYOUT_ENUM[v.sf_layout], ".mx_round = -1",
    ".gemm_fp4_launch = " .. v.name,
  }
end

function F.prototypes(v)
  return { "kg_status " .. v.name .. "(const kg_gemm_fp4_args *args, const kg_exec *exec);" }
end

-- Scale-offset functions of templates/fp4/common.kgt, per layout.
local SF_OFF = { linear = "kg_sf_off_linear", ["128x4"] = "kg_sf_off_128x4", ["8x4"] = "kg_sf_off_8x4" }

-- Values the templates read besides v and d.
function F.prepare(v, d, env)
  env.BS = v.format == "mxfp4" and 32 or 16   -- elements per scale block
  env.NV = v.format == "nvfp4"
  env.SF_OFF = SF_OFF[v.sf_layout]
  env.MAX_M = F.MAX_M
  env.TA = d.storage[v.dtype]
  env.load_a = function(x) return string.format(d.to_f32[v.dtype], x) end
  env.store_d = function(x) return string.format(d.from_f32[v.dtype], x) end
end

return F
