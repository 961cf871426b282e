-- Block-scaled FP4 DualGemm family (MoE / FFN gate-up projection):
-- D0 = alpha0*A.W0^T (+ beta0*C0), D1 = alpha1*A.W1^T (+ beta1*C1),
-- D2 = op(D0, D1), with FP4 weights W0, W1 (each with its own scales and
-- NVFP4 global scale) and A f16/bf16 (W4A16) or FP4 (W4A4). Built on the
-- gemm_fp4 family: same kernels, axes and rules, plus the DualGemm's op and
-- D0/D1 store flags; the templates are the gemm_fp4 ones rendered with two
-- products (NB = 2), one A load feeding both.
local fmt = require("lib.fmt")
local G = require("families.gemm_fp4")

local F = { name = "dualgemm_fp4" }

F.axes = {}
for _, axis in ipairs(G.axes) do F.axes[#F.axes + 1] = axis end
F.axes[#F.axes + 1] = { name = "op", values = { "swiglu", "geglu", "mul" }, default = "swiglu" }
F.axes[#F.axes + 1] = { name = "store_d0", values = { false, true }, default = false }
F.axes[#F.axes + 1] = { name = "store_d1", values = { false, true }, default = false }

F.templates = G.templates
F.legal = G.legal
F.template = G.template
F.rank = G.rank

-- kg_fp4dualgemm_<backend>_<kernel>_<format>_<dtype>_<op>_<stores>_sf<layout>[_afp4_sfa<layout>],
-- stores one of d2, d0d2, d1d2, d0d1d2 (as in kg_dualgemm_ names).
function F.name_of(v)
  local stores = (v.store_d0 and "d0" or "") .. (v.store_d1 and "d1" or "") .. "d2"
  return table.concat({ "kg_fp4dualgemm", v.backend, v.kernel, v.format, v.dtype, v.op, stores, "sf" .. v.sf_layout },
    "_") .. G.a_suffix(v)
end

function F.sort_key(v)
  return string.format("%s|%s|%s|%s|%s|%s|%s|%s|%d%d|%04d|%s", v.family, v.backend, v.dtype, v.a_dtype, v.format,
    v.sf_layout, v.sf_layout_a, v.op, v.store_d0 and 1 or 0, v.store_d1 and 1 or 0, 9999 - F.rank(v), v.name)
end

local OP_ENUM = { swiglu = "KG_DUAL_SWIGLU", geglu = "KG_DUAL_GEGLU", mul = "KG_DUAL_MUL" }

function F.descriptor(v, d)
  local fields = { ".op = KG_OP_DUALGEMM_FP4" }
  for _, f in ipairs(G.common_descriptor(v, d, 2)) do fields[#fields + 1] = f end
  fields[#fields + 1] = ".modes = KG_MODE_BIT(KG_MODE_GEMM) | KG_MODE_BIT(KG_MODE_BATCHED)"
  fields[#fields + 1] = ".dual_op = " .. OP_ENUM[v.op]
  fields[#fields + 1] = ".store_d0 = " .. fmt.int(v.store_d0 and 1 or 0) .. ", .store_d1 = " .. fmt.int(v.store_d1 and 1 or 0)
  fields[#fields + 1] = ".dualgemm_fp4_launch = " .. v.name
  return fields
end

function F.prototypes(v)
  return { "kg_status " .. v.name .. "(const kg_dualgemm_fp4_args *args, const kg_exec *exec);" }
end

function F.prepare(v, d, env)
  G.common_prepare(v, d, env)
  env.NB, env.DUAL, env.BATCHED = 2, true, true
  env.SKINNY = G.SKINNY.dual
  env.ARGS_T = "kg_dualgemm_fp4_args"
  env.PRODUCTS = {
    { b = "b0", sf = "sf_b0", gs = "global_scale_b0", c = "c0", d = "d0", alpha = "alpha0", beta = "beta0",
      store = v.store_d0 },
    { b = "b1", sf = "sf_b1", gs = "global_scale_b1", c = "c1", d = "d1", alpha = "alpha1", beta = "beta1",
      store = v.store_d1 },
  }
  env.dual_op = G.dual_op_fn(v.op)
end

return F
