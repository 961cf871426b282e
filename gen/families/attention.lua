-- Attention family (FlashInfer-style decode): RoPE, paged KV-cache append,
-- single / batch decode over a paged cache with split-KV, cascade merges of
-- softmax states, and the math primitives the kernels use (kg.h, "Decode
-- attention"; ../shared/reference/attention.md).
-- Ops:
--   math    elementwise fast exp2/log2/rcp/rsqrt/tanh and xor-shuffle checks
--   rope    apply RoPE to q / k rows (positions by id or by request offset)
--   append  write K/V tokens into a paged cache (ragged or one per request)
--   decode  one query token per request against the paged cache (split-KV)
--   merge   merge (o, lse) states: pairs, in place, K-way, ragged
-- Kernels: loop (C backend: plain loops, also the reference path) and simt
-- (CUDA, HIP: CUDA-core / VALU kernels; decode streams K/V through shared
-- memory with 16-byte copies, one block per (request, kv head, chunk) covering
-- the GQA group; without RoPE its launcher runs the matrix-core decode: CUDA
-- attn/decode_mma.kgt, HIP attn/decode_wave_core.kgt). wave (C backend,
-- decode only): the HIP wave decode on the C dialect's emulated wavefront,
-- which tests it; ranked last, so only a forced kg_exec.variant runs it.
local fmt = require("lib.fmt")

local F = { name = "attention" }

local KERNEL_OF = { c = "loop", cuda = "simt", hip = "simt" }
local WAVE_OK = { c = true }   -- backends with a "wave" decode variant
local LAYOUT_OPS = { append = true, decode = true }

F.axes = {
  { name = "backend", values = { "c", "cuda", "hip" } },
  { name = "op", values = { "math", "rope", "append", "decode", "merge" } },
  { name = "kernel", values = { "loop", "simt", "wave" }, default = function(v) return KERNEL_OF[v.backend] end },
  -- element type of q, k, v, o (math: f32 only)
  { name = "dtype", values = { "f32", "f16", "bf16" }, default = function(v) if v.op == "math" then return "f32" end end },
  -- decode: the head dim it is compiled for; the other ops take any at run time
  { name = "head_dim", values = { 64, 128, 256, "any" },
    default = function(v) if v.op ~= "decode" then return "any" end end },
  -- KV-cache layout of append and decode: NHD [tokens, heads, dim], HND [heads, tokens, dim]
  { name = "kv_layout", values = { "nhd", "hnd", "none" },
    default = function(v) if not LAYOUT_OPS[v.op] then return "none" end end },
}

-- Template files the family renders (tests stub them).
F.templates = { "attn/math.kgt", "attn/rope.kgt", "attn/append.kgt", "attn/decode_loop.kgt", "attn/decode_simt.kgt",
                "attn/decode_wave.kgt", "attn/merge.kgt" }

function F.legal(v)
  if v.kernel == "wave" and WAVE_OK[v.backend] then
    if v.op ~= "decode" then
      return string.format("the wave kernel is a decode kernel; allowed for op '%s': kernel = %s", v.op,
        KERNEL_OF[v.backend]), "kernel"
    end
    if v.dtype ~= "f16" and v.dtype ~= "bf16" then
      return "the wave decode multiplies 16-bit K/V on the matrix cores; allowed: dtype = f16, bf16", "dtype"
    end
  elseif v.kernel ~= KERNEL_OF[v.backend] then
    return string.format("kernel '%s' does not exist on backend '%s'; allowed: %s", v.kernel, v.backend,
      KERNEL_OF[v.backend] .. (WAVE_OK[v.backend] and ", wave" or "")), "kernel"
  end
  if v.dtype == nil then
    return string.format("%s needs axis 'dtype'; allowed: f32, f16, bf16", v.op), "dtype"
  end
  if v.op == "math" and v.dtype ~= "f32" then
    return "the math primitives are f32; allowed: dtype = f32", "dtype"
  end
  if v.op == "decode" then
    if v.head_dim == nil or v.head_dim == "any" then
      return "decode is compiled for one head dim; allowed: head_dim = 64, 128, 256", "head_dim"
    end
    if v.backend ~= "c" and v.dtype == "f32" then
      return string.format("the %s decode kernel streams 16-bit K/V in 16-byte vectors; allowed: dtype = f16, bf16",
        v.backend), "dtype"
    end
  elseif v.head_dim ~= "any" then
    return string.format("%s takes the head dim at run time; allowed: head_dim = any", v.op), "head_dim"
  end
  if LAYOUT_OPS[v.op] then
    if v.kv_layout == nil or v.kv_layout == "none" then
      return string.format("%s needs axis 'kv_layout'; allowed: nhd, hnd", v.op), "kv_layout"
    end
  elseif v.kv_layout ~= "none" then
    return string.format("%s has no KV cache; allowed: kv_layout = none", v.op), "kv_layout"
  end
  return nil
end

-- kg_attn_<backend>_<op>[_<dtype>][_<layout>][_d<head_dim>]; the kernel
-- follows from the backend, math has one dtype.
function F.name_of(v)
  local parts = { "kg_attn", v.backend, v.op }
  if v.kernel == "wave" then parts[#parts + 1] = "wave" end
  if v.op ~= "math" then parts[#parts + 1] = v.dtype end
  if v.kv_layout ~= "none" then parts[#parts + 1] = v.kv_layout end
  if v.head_dim ~= "any" then parts[#parts + 1] = "d" .. fmt.int(v.head_dim) end
  return table.concat(parts, "_")
end

function F.template(v)
  if v.op == "decode" then return "attn/decode_" .. v.kernel .. ".kgt" end
  return "attn/" .. v.op .. ".kgt"
end

-- One default variant per (op, backend, dtype, layout, head dim); the wave
-- decode of the C backend comes after it (forced only).
function F.rank(v) return v.kernel == "wave" and 1 or 0 end

local OP_ENUM = { math = "KG_OP_MATH", rope = "KG_OP_ROPE", append = "KG_OP_PAGED_KV_APPEND",
                  decode = "KG_OP_DECODE_BATCH", merge = "KG_OP_MERGE_STATES" }
local DTYPE_ENUM = { f32 = "KG_F32", f16 = "KG_F16", bf16 = "KG_BF16" }
local LAYOUT_ENUM = { nhd = "KG_KV_NHD", hnd = "KG_KV_HND", none = "-1" }
local LAUNCH_FIELD = { math = "math_launch", rope = "rope_launch", append = "append_launch",
                       decode = "decode_launch", merge = "merge_launch" }
local JOB_T = { math = "kg_math_args", rope = "kg_rope_job", append = "kg_append_job", decode = "kg_decode_job",
                merge = "kg_merge_job" }
F.OP_ENUM, F.LAYOUT_ENUM = OP_ENUM, LAYOUT_ENUM

-- Entries of one (op, backend, dtype) key are contiguous.
function F.sort_key(v)
  local hd = v.head_dim == "any" and 0 or v.head_dim
  return string.format("%s|%s|%s|%s|%s|%04d|%d|%s", v.family, v.op, v.backend, v.dtype, v.kv_layout, hd, F.rank(v),
    v.name)
end

-- Decode geometry (GPU): 16-byte vectors of 8 elements, CH vectors per row;
-- NT threads = ROWS rows of CH lanes; a row serves a set of up to HPT q heads
-- (their q and states in registers, so one K/V vector feeds HPT heads), a
-- block up to GMAX = ROWS * HPT heads of one kv head; a row takes UB tokens
-- per step; T tokens per pipeline stage (each thread copies 2 vectors of K
-- and 2 of V per stage); STAGES stages in flight (HIP: its 64 KB LDS, and
-- copies that are not asynchronous anyway). BLOCKS_PER_SM is what the split
-- planner assumes resident (kg_attn.c), matched by the launch bounds.
local HPT = 4
function F.decode_geometry(v)
  local D = v.head_dim
  if v.backend == "c" then
    return { D = D, GMAX = 16, T = 16, STAGES = 1, NT = 1, BLOCKS_PER_SM = 1, WAVE = v.kernel == "wave" }
  end
  local CH = math.floor(D / 8)
  local NT = D == 256 and 256 or 128
  local T = math.floor(NT * 2 / CH)
  local stages = v.backend == "hip" and 2 or 4
  local rows = math.floor(NT / CH)
  local g = { D = D, CH = CH, NT = NT, ROWS = rows, HPT = HPT, UB = 2, GMAX = rows * HPT, T = T, STAGES = stages,
              BLOCKS_PER_SM = D == 256 and 2 or 4, TC = false }
  -- CUDA, head_dim <= 128: the tensor-core kernel (attn/decode_mma.kgt) serves
  -- groups of <= 16 heads without RoPE on the fly, TC_NW warps of 16 tokens per
  -- tile, TC_ST stages, TC_BPS blocks per SM; the planner assumes its geometry.
  if v.backend == "cuda" and D <= 128 then
    g.TC, g.TC_NW, g.TC_ST, g.TC_BPS = true, 4, 2, 3
  end
  -- HIP: without RoPE on the fly the launcher runs the wave64 matrix-core decode
  -- (attn/decode_wave_core.kgt), one wavefront per 16-head group tile
  g.WAVE_DECODE = v.backend == "hip"
  return g
end

function F.descriptor(v, d)
  local fields = {
    ".op = " .. OP_ENUM[v.op], ".backend = " .. d.backend_enum, '.arch = "' .. d.arch .. '"',
    '.kernel = "' .. v.kernel .. '"',
    ".type_ab = " .. DTYPE_ENUM[v.dtype], ".type_cd = " .. DTYPE_ENUM[v.dtype],
    ".kv_layout = " .. LAYOUT_ENUM[v.kv_layout],
    ".head_dim = " .. (v.head_dim == "any" and "0" or fmt.int(v.head_dim)),
  }
  if v.op == "decode" then
    local g = F.decode_geometry(v)
    fields[#fields + 1] = ".align = " .. (v.backend == "c" and "1" or "8")
    fields[#fields + 1] = ".tile_m = " .. fmt.int(g.GMAX)
    fields[#fields + 1] = ".tile_n = " .. fmt.int(g.TC and g.TC_NW * 16 or g.T)
    fields[#fields + 1] = ".stages = " .. fmt.int(g.TC and g.TC_ST or g.STAGES)
    fields[#fields + 1] = ".blocks_per_sm = " .. fmt.int(g.TC and g.TC_BPS or g.BLOCKS_PER_SM)
    fields[#fields + 1] = ".rope = " .. (g.WAVE and "0" or "1")
  end
  fields[#fields + 1] = "." .. LAUNCH_FIELD[v.op] .. " = " .. v.name
  return fields
end

function F.prototypes(v)
  return { "kg_status " .. v.name .. "(const " .. JOB_T[v.op] .. " *job, const kg_exec *exec);" }
end

-- Values the templates read besides v and d.
function F.prepare(v, d, env)
  env.int = fmt.int
  env.JOB_T = JOB_T[v.op]
  env.TX = d.storage[v.dtype]
  env.load_x = function(x) return string.format(d.to_f32[v.dtype], x) end
  env.store_x = function(x) return string.format(d.from_f32[v.dtype], x) end
  if v.op == "decode" then
    for k, x in pairs(F.decode_geometry(v)) do env[k] = x end
  end
end

return F
