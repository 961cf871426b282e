-- amax family: out[g] = max |x| over each batch group of a rows x cols matrix
-- (f32 result, NaN ignored), the input of kg_nvfp4_global_scale (kg.h, amax).
-- Kernels: loop (C backend) and block (CUDA, HIP: blocks stride over rows,
-- threads over columns, a block reduction and one atomic max per block on the
-- f32 bit pattern, which orders like the value for non-negative floats).
local F = { name = "amax" }

local KERNEL_OF = { c = "loop", cuda = "block", hip = "block" }

F.axes = {
  { name = "backend", values = { "c", "cuda", "hip" } },
  { name = "kernel", values = { "loop", "block" }, default = function(v) return KERNEL_OF[v.backend] end },
  { name = "dtype", values = { "f32", "f16", "bf16" } },
}

F.templates = { "fp4/amax.kgt" }

function F.legal(v)
  if v.kernel ~= KERNEL_OF[v.backend] then
    return string.format("kernel '%s' does not exist on backend '%s'; allowed: %s", v.kernel, v.backend,
      KERNEL_OF[v.backend]), "kernel"
  end
  return nil
end

-- kg_amax_<backend>_<dtype>; the kernel follows from the backend.
function F.name_of(v) return table.concat({ "kg_amax", v.backend, v.dtype }, "_") end

function F.template() return "fp4/amax.kgt" end

function F.rank() return 0 end

function F.sort_key(v) return string.format("%s|%s|%s|%s", v.family, v.backend, v.dtype, v.name) end

local DTYPE_ENUM = { f32 = "KG_F32", f16 = "KG_F16", bf16 = "KG_BF16" }

function F.descriptor(v, d)
  return {
    ".op = KG_OP_AMAX", ".backend = " .. d.backend_enum, '.arch = "' .. d.arch .. '"', '.kernel = "' .. v.kernel .. '"',
    ".type_ab = " .. DTYPE_ENUM[v.dtype], ".type_cd = KG_F32", ".fp4_format = -1", ".sf_layout = -1", ".mx_round = -1",
    ".amax_launch = " .. v.name,
  }
end

function F.prototypes(v)
  return { "kg_status " .. v.name .. "(const kg_amax_args *args, const kg_exec *exec);" }
end

function F.prepare(v, d, env)
  env.TX = d.storage[v.dtype]
  env.load_x = function(x) return string.format(d.to_f32[v.dtype], x) end
end

return F
