-- DualGemm family: D0 = alpha0*A.B0 (+ beta0*C0), D1 = alpha1*A.B1 (+ beta1*C1),
-- D2 = op(D0, D1). Built on the GEMM family: same kernels, tiles and rules,
-- with B split into B0/B1 (independent layouts), the fused op and the D0/D1
-- store flags as extra axes. Templates are the GEMM ones rendered with NB = 2.
local fmt = require("lib.fmt")
local G = require("families.gemm")

local F = { name = "dualgemm" }

-- Tensorop defaults of their own: two accumulators per output element
-- double the registers and a second B tile per stage grows the shared
-- memory. CUDA: 128x64x64 on 8 MMA warps (two warpgroups, each m64 x n64 per
-- product: 64 accumulators per thread) behind a producer warpgroup (the ws
-- schedule), 3 stages of 32 KB, two blocks per SM (80 registers per thread at
-- launch; the MMA warps take 104). Measured on H200, bf16 SwiGLU K=4096
-- N=14336: 0.86x / 0.87x / 0.89x the best cuBLAS peer at M = 1024 / 4096 /
-- 8192, against 0.85x / 0.85x / 0.88x with 5 stages (one block per SM),
-- 0.74x / 0.78x / 0.79x for the sync schedule and 0.65-0.66x for 128x128x64
-- ws x 4 stages (bench/results/2026-12-02_h200_*_tensorop-ws.txt). HIP: 128x64x32 on 4
-- waves, 3 stages (48 KB of the 64 KB LDS).
local DEFAULT_TENSOROP = {
  cuda = { tile = "128x64x64", warps = "4x2", stages = 3, schedule = "ws" },
  hip = { tile = "128x64x32", warps = "2x2", stages = 3 },
}

-- An axis of G with the DualGemm tensorop default in front of G's.
local function with_dual_default(axis)
  local a = {}
  for k, x in pairs(axis) do a[k] = x end
  a.default = function(v)
    local per = v.kernel == "tensorop" and DEFAULT_TENSOROP[v.backend]
    if per and per[axis.name] ~= nil then return per[axis.name] end
    return type(axis.default) == "function" and axis.default(v) or axis.default
  end
  return a
end

F.axes = {}
for _, axis in ipairs(G.axes) do
  if axis.name == "tile" or axis.name == "warps" or axis.name == "stages" or axis.name == "schedule" then
    axis = with_dual_default(axis)
  end
  if axis.name == "layout_b" then
    F.axes[#F.axes + 1] = { name = "layout_b0", values = axis.values, default = axis.default }
    F.axes[#F.axes + 1] = { name = "layout_b1", values = axis.values, default = axis.default }
  else
    F.axes[#F.axes + 1] = axis
  end
  if axis.name == "layout_cd" then
    F.axes[#F.axes + 1] = { name = "op", values = { "swiglu", "geglu", "mul" }, default = "swiglu" }
    F.axes[#F.axes + 1] = { name = "store_d0", values = { false, true }, default = false }
    F.axes[#F.axes + 1] = { name = "store_d1", values = { false, true }, default = false }
  end
end

-- The GEMM view of a dual variant: B0 stands for B.
local function as_gemm(v)
  local g = {}
  for k, x in pairs(v) do g[k] = x end
  g.layout_b = v.layout_b0
  g.nb = 2   -- legality: two B tiles, two accumulators
  return g
end

function F.legal(v)
  local why, at = G.legal(as_gemm(v))
  if why then return why, at == "layout_b" and "layout_b0" or at end
  if G.fixes_layouts(v.kernel) and v.layout_b1 == "any" then
    return "this kernel fixes the layout of B1; allowed: layout_b1 = row, col", "layout_b1"
  end
  if v.kernel == "skinny" and v.layout_b1 ~= "col" then
    return "skinny reads column-major B1 ([N, K] weights or a broadcast vector); allowed: layout_b1 = col", "layout_b1"
  end
  return nil
end

local LETTER = { row = "r", col = "c", any = "x" }

function F.name_of(v)
  local stores = (v.store_d0 and "d0" or "") .. (v.store_d1 and "d1" or "") .. "d2"
  local parts = { "kg_dualgemm", v.backend, v.kernel, v.dtype == v.out_dtype and v.dtype or (v.dtype .. "to" .. v.out_dtype),
    v.op, LETTER[v.layout_a] .. LETTER[v.layout_b0] .. LETTER[v.layout_b1] .. LETTER[v.layout_cd], stores }
  local rest = G.name_of(as_gemm(v)):match("^kg_gemm_[^_]+_[^_]+_[^_]+_[^_]+_(.*)$")
  return table.concat(parts, "_") .. "_" .. rest
end

F.template = G.template

function F.rank(v)
  local r = G.rank(as_gemm(v))
  if v.layout_b1 ~= "any" then r = r + 10 end
  return r
end

function F.sort_key(v)
  return string.format("%s|%s|%s|%s|%04d|%s", v.family, v.backend, v.dtype, v.out_dtype, 9999 - F.rank(v), v.name)
end

local OP_ENUM = { swiglu = "KG_DUAL_SWIGLU", geglu = "KG_DUAL_GEGLU", mul = "KG_DUAL_MUL" }

function F.descriptor(v, d)
  local fields = {}
  for _, f in ipairs(G.descriptor(as_gemm(v), d)) do
    if f:match("^%.op =") then f = ".op = KG_OP_DUALGEMM" end
    f = f:gsub("^%.gemm_launch = ", ".dualgemm_launch = "):gsub("^%.gemm_workspace = ", ".dualgemm_workspace = ")
    fields[#fields + 1] = f
    if f:match("^%.layout_b =") then fields[#fields + 1] = ".layout_b1 = " .. G.LAYOUT_ENUM[v.layout_b1] end
  end
  table.insert(fields, #fields - 1, ".dual_op = " .. OP_ENUM[v.op])
  table.insert(fields, #fields - 1, ".store_d0 = " .. fmt.int(v.store_d0 and 1 or 0) .. ", .store_d1 = " .. fmt.int(v.store_d1 and 1 or 0))
  return fields
end

function F.prototypes(v)
  return {
    "kg_status " .. v.name .. "(const kg_dualgemm_args *args, const kg_exec *exec);",
    "size_t " .. v.name .. "_workspace(const kg_dualgemm_args *args);",
  }
end

-- f32 expression of op(x0, x1) on the output-typed values x0 = D0, x1 = D1.
local OP_EXPR = {
  swiglu = "(%s) / (1.0f + expf(-(%s))) * (%s)",
  -- gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3):
  -- the second form has no cancellation where tanh(u) rounds to -1 (x below about -4)
  geglu = "(%s) / (1.0f + expf(-1.5957691216f * ((%s) + 0.044715f * (%s) * (%s) * (%s)))) * (%s)",
  mul = "(%s) * (%s)",
}

-- op(x0, x1) as a function of the two f32 expressions (also used by the FP4 DualGemm).
function F.op_fn(op)
  return function(x0, x1)
    if op == "swiglu" then return string.format(OP_EXPR.swiglu, x0, x0, x1) end
    if op == "geglu" then return string.format(OP_EXPR.geglu, x0, x0, x0, x0, x0, x1) end
    return string.format(OP_EXPR.mul, x0, x1)
  end
end

function F.prepare(v, d, env)
  G.prepare(as_gemm(v), d, env)
  env.NB, env.DUAL = 2, true
  env.ARGS_T = "kg_dualgemm_args"
  env.PRODUCTS = {
    { b = "b0", layout_b = v.layout_b0, c = "c0", d = "d0", alpha = "alpha0", beta = "beta0", store = v.store_d0 },
    -- bcast: B1 column-major with ldb1 = 0 is a broadcast K-vector (kg.h)
    { b = "b1", layout_b = v.layout_b1, c = "c1", d = "d1", alpha = "alpha1", beta = "beta1", store = v.store_d1,
      bcast = true },
  }
  env.dual_op = F.op_fn(v.op)
end

return F
