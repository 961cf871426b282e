-- FP4 family: block-scaled FP4 (NVFP4, MXFP4) quantize / dequantize and the
-- scale-factor layout conversions (swizzle, unswizzle, reswizzle).
-- The numerics are those of kg.h's FP4 section (and ../shared/reference/fp4.md):
-- software E2M1 / E4M3 / UE8M0 encoders on every backend, written once in
-- templates/fp4/common.kgt. Kernels: loop (C backend: plain loops) and thread
-- (CUDA, HIP: one thread per scale block, or per scale byte for conversions;
-- quantize of f16 / bf16 streams 8-element chunks per lane with 16-byte loads,
-- templates/fp4/quantize_gpu.kgt, bit-identical to the element-wise rule;
-- dequantize works on 8-element vectors, templates/fp4/dequantize_gpu.kgt).
local fmt = require("lib.fmt")

local F = { name = "fp4" }

local QUANT_OPS = { quantize = true, dequantize = true }
local KERNEL_OF = { c = "loop", cuda = "thread", hip = "thread" }

F.axes = {
  { name = "backend", values = { "c", "cuda", "hip" } },
  { name = "op", values = { "quantize", "dequantize", "swizzle", "unswizzle", "reswizzle" } },
  { name = "kernel", values = { "loop", "thread" }, default = function(v) return KERNEL_OF[v.backend] end },
  -- format and dtype are required for quantize / dequantize ("none" for the conversions)
  { name = "format", values = { "nvfp4", "mxfp4", "none" },
    default = function(v) if not QUANT_OPS[v.op] then return "none" end end },
  { name = "dtype", values = { "f32", "f16", "bf16", "none" },
    default = function(v) if not QUANT_OPS[v.op] then return "none" end end },
  { name = "sf_layout", values = { "linear", "128x4", "8x4" }, default = "128x4" },
  -- MXFP4 quantize: how the UE8M0 scale is chosen; "none" everywhere else
  { name = "scale_round", values = { "up", "down", "ocp", "none" },
    default = function(v) return (v.op == "quantize" and v.format == "mxfp4") and "up" or "none" end },
}

-- Template files the family renders (tests stub them).
F.templates = { "fp4/quantize.kgt", "fp4/dequantize.kgt", "fp4/dequantize_gpu.kgt", "fp4/sf_convert.kgt" }

function F.legal(v)
  if v.kernel ~= KERNEL_OF[v.backend] then
    return string.format("kernel '%s' does not exist on backend '%s'; allowed: %s", v.kernel, v.backend,
      KERNEL_OF[v.backend]), "kernel"
  end
  if QUANT_OPS[v.op] then
    if v.format == nil or v.format == "none" then
      return string.format("%s needs axis 'format'; allowed: nvfp4, mxfp4", v.op), "format"
    end
    if v.dtype == nil or v.dtype == "none" then
      return string.format("%s needs axis 'dtype'; allowed: f32, f16, bf16", v.op), "dtype"
    end
    if v.op == "quantize" and v.format == "mxfp4" then
      if v.scale_round == "none" then
        return "MXFP4 quantize chooses its scale by a rule; allowed: scale_round = up, down, ocp", "scale_round"
      end
    elseif v.scale_round ~= "none" then
      return string.format("scale_round applies to MXFP4 quantize only (here %s %s); allowed: scale_round = none",
        v.format, v.op), "scale_round"
    end
  else
    if v.format ~= "none" then
      return string.format("%s works on scale bytes of any format; allowed: format = none", v.op), "format"
    end
    if v.dtype ~= "none" then
      return string.format("%s moves scale bytes only; allowed: dtype = none", v.op), "dtype"
    end
    if v.scale_round ~= "none" then
      return string.format("%s chooses no scales; allowed: scale_round = none", v.op), "scale_round"
    end
    if v.sf_layout == "linear" then
      return string.format("%s needs the swizzled layout (the other side is linear); allowed: sf_layout = 128x4, 8x4",
        v.op), "sf_layout"
    end
  end
  return nil
end

-- kg_fp4_<backend>_<op>[_<format>_<dtype>]_sf<layout>[_r<round>]; the kernel
-- follows from the backend.
function F.name_of(v)
  local parts = { "kg_fp4", v.backend, v.op }
  if QUANT_OPS[v.op] then
    parts[#parts + 1] = v.format
    parts[#parts + 1] = v.dtype
  end
  parts[#parts + 1] = "sf" .. v.sf_layout
  if v.scale_round ~= "none" then parts[#parts + 1] = "r" .. v.scale_round end
  return table.concat(parts, "_")
end

-- GPU dequantize: its own kernel (vector loads and stores, 2-D/3-D grid);
-- everything else shares one template per op across backends.
function F.template(v)
  if v.op == "dequantize" and v.backend ~= "c" then return "fp4/dequantize_gpu.kgt" end
  if QUANT_OPS[v.op] then return "fp4/" .. v.op .. ".kgt" end
  return "fp4/sf_convert.kgt"
end

-- One variant per (op, backend, format, dtype, layout, round): no ranking needed.
function F.rank() return 0 end

local OP_ENUM = { quantize = "KG_OP_FP4_QUANTIZE", dequantize = "KG_OP_FP4_DEQUANTIZE", swizzle = "KG_OP_SF_SWIZZLE",
                  unswizzle = "KG_OP_SF_UNSWIZZLE", reswizzle = "KG_OP_SF_RESWIZZLE" }
local FORMAT_ENUM = { nvfp4 = "KG_FP4_NVFP4", mxfp4 = "KG_FP4_MXFP4", none = "-1" }
local DTYPE_ENUM = { f32 = "KG_F32", f16 = "KG_F16", bf16 = "KG_BF16", none = "KG_F32" }
local LAYOUT_ENUM = { linear = "KG_SF_LINEAR", ["128x4"] = "KG_SF_SWIZZLED_128X4", ["8x4"] = "KG_SF_SWIZZLED_8X4" }
local ROUND_ENUM = { up = "KG_MX_ROUND_UP", down = "KG_MX_ROUND_DOWN", ocp = "KG_MX_ROUND_OCP", none = "-1" }
F.OP_ENUM, F.FORMAT_ENUM, F.LAYOUT_ENUM, F.ROUND_ENUM = OP_ENUM, FORMAT_ENUM, LAYOUT_ENUM, ROUND_ENUM

-- Entries of one (op, backend, dtype) key are contiguous.
function F.sort_key(v)
  return string.format("%s|%s|%s|%s|%04d|%s", v.family, v.op, v.backend, v.dtype, 9999 - F.rank(v), v.name)
end

function F.descriptor(v, d)
  local fields = {
    ".op = " .. OP_ENUM[v.op], ".backend = " .. d.backend_enum, '.arch = "' .. d.arch .. '"',
    '.kernel = "' .. v.kernel .. '"',
    ".type_ab = " .. DTYPE_ENUM[v.dtype], ".type_cd = " .. DTYPE_ENUM[v.dtype],
    ".fp4_format = " .. FORMAT_ENUM[v.format], ".sf_layout = " .. LAYOUT_ENUM[v.sf_layout],
    ".mx_round = " .. ROUND_ENUM[v.scale_round],
  }
  fields[#fields + 1] = (QUANT_OPS[v.op] and ".fp4_launch = " or ".sf_launch = ") .. v.name
  return fields
end

function F.prototypes(v)
  if QUANT_OPS[v.op] then return { "kg_status " .. v.name .. "(const kg_fp4_args *args, const kg_exec *exec);" } end
  return { "kg_status " .. v.name .. "(const kg_sf_job *job, const kg_exec *exec);" }
end

-- Scale-buffer geometry per layout: row / column padding and the name of the
-- offset function templates/fp4/common.kgt defines.
local SF = {
  linear = { mpad = 1, kpad = 1, off = "kg_sf_off_linear" },
  ["128x4"] = { mpad = 128, kpad = 4, off = "kg_sf_off_128x4" },
  ["8x4"] = { mpad = 8, kpad = 4, off = "kg_sf_off_8x4" },
}
F.SF = SF

-- Values the templates read besides v and d.
function F.prepare(v, d, env)
  env.BS = v.format == "mxfp4" and 32 or 16   -- elements per scale block
  env.SF = SF
  env.LAYOUT_ENUM = LAYOUT_ENUM
  env.ARGS_T = QUANT_OPS[v.op] and "kg_fp4_args" or "kg_sf_job"
  if QUANT_OPS[v.op] then
    env.TX = d.storage[v.dtype]
    env.load_x = function(x) return string.format(d.to_f32[v.dtype], x) end
    env.store_x = function(x) return string.format(d.from_f32[v.dtype], x) end
  end
  -- conversions: source and destination layouts are compile-time
  if v.op == "swizzle" then env.SRC, env.DST = "linear", v.sf_layout
  elseif v.op == "unswizzle" then env.SRC, env.DST = v.sf_layout, "linear"
  else env.SRC, env.DST = v.sf_layout, v.sf_layout end
  env.int = fmt.int
end

return F
