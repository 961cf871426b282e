-- Wave64 family: test kernels of the HIP wave64 primitives (templates/wave),
-- one wavefront each: MFMA 16x16x16 tile multiply-accumulate (f16/bf16 -> f32),
-- transpose_4x4_half_registers and rowsum16 through the matrix core. The same
-- templates render for HIP (gfx90a) and for the C dialect's emulated 64-lane
-- wavefront, which is how the primitives are tested without an AMD GPU.
-- CUDA has no wave64 (its warps are 32 lanes), so it is not a backend here.
local F = { name = "wave" }

-- ops whose operands have an element type (the transpose moves 16-bit patterns)
local TYPED = { mfma16x16x16 = true, rowsum16 = true }

F.axes = {
  { name = "backend", values = { "c", "hip" } },
  { name = "op", values = { "mfma16x16x16", "transpose4x4", "rowsum16" } },
  -- required for mfma16x16x16 and rowsum16; "none" for transpose4x4
  { name = "dtype", values = { "f16", "bf16", "none" },
    default = function(v) if not TYPED[v.op] then return "none" end end },
}

-- Template files the family renders (tests stub them).
F.templates = { "wave/test_mfma16x16x16.kgt", "wave/test_transpose4x4.kgt", "wave/test_rowsum16.kgt" }

function F.legal(v)
  if TYPED[v.op] then
    if v.dtype == nil or v.dtype == "none" then
      return string.format("%s needs axis 'dtype'; allowed: f16, bf16", v.op), "dtype"
    end
  elseif v.dtype ~= "none" then
    return string.format("%s moves 16-bit patterns of any type; allowed: dtype = none", v.op), "dtype"
  end
  return nil
end

-- kg_wave_<backend>_<op>[_<dtype>]
function F.name_of(v)
  local parts = { "kg_wave", v.backend, v.op }
  if v.dtype ~= "none" then parts[#parts + 1] = v.dtype end
  return table.concat(parts, "_")
end

function F.template(v) return "wave/test_" .. v.op .. ".kgt" end

-- One variant per (op, backend, dtype): no ranking needed.
function F.rank() return 0 end

-- Entries of one (op, backend, dtype) key are contiguous.
function F.sort_key(v)
  return string.format("%s|%s|%s|%s|%s", v.family, v.op, v.backend, v.dtype, v.name)
end

local OP_ENUM = { mfma16x16x16 = "KG_OP_WAVE_MFMA16X16X16", transpose4x4 = "KG_OP_WAVE_TRANSPOSE4X4",
                  rowsum16 = "KG_OP_WAVE_ROWSUM16" }
-- type_ab: the 16-bit input type (KG_F32 for the untyped transpose, never matched)
local DTYPE_ENUM = { f16 = "KG_F16", bf16 = "KG_BF16", none = "KG_F32" }
F.OP_ENUM, F.DTYPE_ENUM = OP_ENUM, DTYPE_ENUM

function F.descriptor(v, d)
  return {
    ".op = " .. OP_ENUM[v.op], ".backend = " .. d.backend_enum, '.arch = "' .. d.arch .. '"',
    '.kernel = "wave64"', ".type_ab = " .. DTYPE_ENUM[v.dtype], ".type_cd = KG_F32",
    ".wave_launch = " .. v.name,
  }
end

function F.prototypes(v)
  return { "kg_status " .. v.name .. "(const kg_wave_job *job, const kg_exec *exec);" }
end

-- Values the templates read besides v and d.
function F.prepare(v, d, env)
  assert(d.wave, "dialect " .. d.name .. " has no wave vocabulary")
  env.DRIVER = "wave/run_" .. v.backend .. ".kgt"   -- launch: emulated wave (C) or one wavefront (HIP)
end

return F
