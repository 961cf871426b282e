-- The dualgemm_fp4 family (families/dualgemm_fp4.lua) and the amax family
-- (families/amax.lua): axes, names, legality, descriptors, shipped specs.
local H = require("tests.lua.helper")
local expand = require("lib.expand")
local dualgemm_fp4 = require("families.dualgemm_fp4")
local amax = require("families.amax")

local FAMILIES = { dualgemm_fp4 = dualgemm_fp4, amax = amax }

local function expand_in(family, ...)
  local entries = {}
  for i, fields in ipairs({ ... }) do
    entries[i] = { family = family, fields = fields, file = "specs/t.lua", line = 10 * i, key_lines = {} }
  end
  local errors = {}
  local variants = expand.expand(FAMILIES, entries, errors)
  return variants, errors
end

local function names(variants)
  local got = {}
  for i, v in ipairs(variants) do got[i] = v.name end
  table.sort(got)
  return got
end

describe("dualgemm_fp4 family", function()
  teardown(H.cleanup)

  it("defaults to SwiGLU with D0, D1 not stored; names encode op, stores and W4A4", function()
    local variants, errors = expand_in("dualgemm_fp4",
      { backend = "c", dtype = "bf16", format = "nvfp4" },
      { backend = "cuda", dtype = "bf16", format = "mxfp4", op = "mul", store_d0 = { false, true }, store_d1 = true },
      { backend = "hip", kernel = "mma", dtype = "bf16", a_dtype = "fp4", format = "nvfp4", op = "geglu" })
    assert.are.same({}, errors)
    assert.are.same({
      "kg_fp4dualgemm_c_blocked_nvfp4_bf16_swiglu_d2_sf128x4",
      "kg_fp4dualgemm_cuda_warp_mxfp4_bf16_mul_d0d1d2_sf128x4",
      "kg_fp4dualgemm_cuda_warp_mxfp4_bf16_mul_d1d2_sf128x4",
      "kg_fp4dualgemm_hip_mma_nvfp4_bf16_geglu_d2_sf128x4_afp4_sfa128x4",
    }, names(variants))
  end)

  it("inherits the gemm_fp4 rules and reports them at the spec line", function()
    local variants, errors = expand_in("dualgemm_fp4",
      { backend = "c", kernel = "warp", dtype = "bf16", format = "nvfp4" },
      { backend = "cuda", dtype = "bf16", format = "nvfp4", op = "relu" })
    assert.are.equal(0, #variants)
    assert.are.equal(2, #errors)
    assert.is_truthy(errors[1]:find("^specs/t.lua:10: error: .*allowed: blocked"), errors[1])
    assert.is_truthy(errors[2]:find('op = "relu" is not allowed; allowed: swiglu, geglu, mul', 1, true), errors[2])
  end)

  it("takes the tensorop kernel for CUDA bf16 W4A16 with 128x4 scales: 64-column tiles, one problem, first of its key", function()
    local variants, errors = expand_in("dualgemm_fp4",
      { backend = "cuda", kernel = "tensorop", dtype = "bf16", format = "nvfp4", op = { "swiglu", "mul" } })
    assert.are.same({}, errors)
    assert.are.same({ "kg_fp4dualgemm_cuda_tensorop_nvfp4_bf16_mul_d2_sf128x4",
                      "kg_fp4dualgemm_cuda_tensorop_nvfp4_bf16_swiglu_d2_sf128x4" }, names(variants))
    assert.is_true(dualgemm_fp4.rank(variants[1]) > dualgemm_fp4.rank({ kernel = "skinny" }))
    -- one warpgroup per weight: 128 weight rows per block are 64 output columns; both modes
    local desc = table.concat(dualgemm_fp4.descriptor(variants[1], { backend_enum = "KG_BACKEND_CUDA", arch = "sm_90a" }), " ")
    assert.is_truthy(desc:find(".tile_m = 256 .tile_n = 64", 1, true), desc)
    assert.is_truthy(desc:find(".fill_m = 512", 1, true), desc)
    assert.is_truthy(desc:find(".modes = KG_MODE_BIT(KG_MODE_GEMM) | KG_MODE_BIT(KG_MODE_BATCHED) .dual_op", 1, true), desc)
    variants, errors = expand_in("dualgemm_fp4",
      { backend = "cuda", kernel = "tensorop", dtype = "bf16", format = "nvfp4", sf_layout = "linear" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: sf_layout = 128x4", 1, true), errors[1])
  end)

  it("describes both-weight variants: op, stores, batched mode, small-M limit of the warp kernel", function()
    local variants = expand_in("dualgemm_fp4",
      { backend = { "c", "cuda" }, kernel = nil, dtype = "bf16", format = "nvfp4", op = "geglu", store_d0 = true },
      { backend = "cuda", kernel = { "mma", "skinny" }, dtype = "bf16", format = "nvfp4" })
    local d = { c = require("dialects.c"), cuda = require("dialects.cuda") }
    assert.are.equal(4, #variants)
    for _, v in ipairs(variants) do
      local text = table.concat(dualgemm_fp4.descriptor(v, d[v.backend]), "\n")
      assert.is_truthy(text:find(".op = KG_OP_DUALGEMM_FP4", 1, true), text)
      assert.is_truthy(text:find("KG_MODE_BIT(KG_MODE_BATCHED)", 1, true), text)
      assert.is_truthy(text:find(".dualgemm_fp4_launch = " .. v.name, 1, true), text)
      if v.op == "geglu" then
        assert.is_truthy(text:find(".dual_op = KG_DUAL_GEGLU", 1, true) and text:find(".store_d0 = 1, .store_d1 = 0", 1, true))
      end
      local max_m = ({ warp = "16", skinny = "512" })[v.kernel] or "0"
      assert.is_truthy(text:find(".max_m = " .. max_m, 1, true), text)
      local path_m = v.kernel == "skinny" and "320" or "0"   -- the dequantize path above it (kg.h)
      assert.is_truthy(text:find(".path_m = " .. path_m, 1, true), text)
    end
  end)

  it("ships C, warp, skinny, mma and tensorop variants; the FFN case (bf16 NVFP4 SwiGLU) on every backend", function()
    local out, rc = H.kgen("list")
    assert.are.equal(0, rc, out)
    for _, name in ipairs({ "kg_fp4dualgemm_c_blocked_nvfp4_bf16_swiglu_d2_sf128x4",
                            "kg_fp4dualgemm_cuda_warp_nvfp4_bf16_swiglu_d2_sf128x4",
                            "kg_fp4dualgemm_cuda_mma_nvfp4_bf16_swiglu_d2_sf128x4",
                            "kg_fp4dualgemm_cuda_tensorop_nvfp4_bf16_swiglu_d2_sf128x4",
                            "kg_fp4dualgemm_cuda_tensorop_mxfp4_bf16_swiglu_d2_sf128x4",
                            "kg_fp4dualgemm_cuda_skinny_nvfp4_bf16_swiglu_d2_sf128x4",
                            "kg_fp4dualgemm_cuda_skinny_mxfp4_bf16_swiglu_d2_sflinear",
                            "kg_fp4dualgemm_cuda_skinny_nvfp4_bf16_mul_d0d1d2_sf128x4",
                            "kg_fp4dualgemm_hip_warp_nvfp4_bf16_swiglu_d2_sf128x4",
                            "kg_fp4dualgemm_hip_mma_nvfp4_bf16_swiglu_d2_sf128x4",
                            "kg_fp4dualgemm_cuda_warp_nvfp4_bf16_swiglu_d2_sf128x4_afp4_sfa8x4",
                            "kg_fp4dualgemm_c_blocked_mxfp4_bf16_mul_d0d1d2_sf128x4" }) do
      assert.is_truthy(out:find(name .. "\n", 1, true), name)
    end
  end)
end)

describe("FP4 dispatch order", function()
  it("puts tensorop first, then the small-M kernels (skinny, then warp), then the any-M mma kernel of a key in kg_table.c", function()
    local text = H.read(H.root .. "/generated/kg_table.c")
    assert.is_truthy(text)
    for _, pair in ipairs({
      { "kg_fp4gemm_cuda_warp_nvfp4_bf16_sf128x4\"", "kg_fp4gemm_cuda_mma_nvfp4_bf16_sf128x4\"" },
      { "kg_fp4gemm_cuda_tensorop_nvfp4_bf16_sf128x4\"", "kg_fp4gemm_cuda_skinny_nvfp4_bf16_sf128x4\"" },
      { "kg_fp4dualgemm_cuda_tensorop_mxfp4_bf16_swiglu_d2_sf128x4\"", "kg_fp4dualgemm_cuda_skinny_mxfp4_bf16_swiglu_d2_sf128x4\"" },
      { "kg_fp4gemm_cuda_skinny_nvfp4_bf16_sf128x4\"", "kg_fp4gemm_cuda_warp_nvfp4_bf16_sf128x4\"" },
      { "kg_fp4gemm_cuda_skinny_mxfp4_bf16_sflinear\"", "kg_fp4gemm_cuda_warp_mxfp4_bf16_sflinear\"" },
      { "kg_fp4dualgemm_cuda_skinny_nvfp4_bf16_swiglu_d2_sf128x4\"", "kg_fp4dualgemm_cuda_warp_nvfp4_bf16_swiglu_d2_sf128x4\"" },
      { "kg_fp4dualgemm_cuda_skinny_nvfp4_bf16_mul_d0d1d2_sf128x4\"", "kg_fp4dualgemm_cuda_warp_nvfp4_bf16_mul_d0d1d2_sf128x4\"" },
      { "kg_fp4gemm_hip_warp_mxfp4_bf16_sflinear\"", "kg_fp4gemm_hip_mma_mxfp4_bf16_sflinear\"" },
      { "kg_fp4dualgemm_cuda_warp_nvfp4_bf16_swiglu_d2_sf128x4\"", "kg_fp4dualgemm_cuda_mma_nvfp4_bf16_swiglu_d2_sf128x4\"" },
      { "kg_fp4dualgemm_hip_warp_mxfp4_bf16_swiglu_d2_sf128x4\"", "kg_fp4dualgemm_hip_mma_mxfp4_bf16_swiglu_d2_sf128x4\"" },
    }) do
      local a, b = text:find(pair[1], 1, true), text:find(pair[2], 1, true)
      assert.is_truthy(a and b, pair[1])
      assert.is_true(a < b, pair[1] .. " after " .. pair[2])
    end
  end)
end)

describe("amax family", function()
  it("names kg_amax_<backend>_<dtype>; the kernel follows from the backend", function()
    local variants, errors = expand_in("amax", { backend = { "c", "cuda", "hip" }, dtype = { "f32", "bf16" } })
    assert.are.same({}, errors)
    assert.are.same({ "kg_amax_c_bf16", "kg_amax_c_f32", "kg_amax_cuda_bf16", "kg_amax_cuda_f32", "kg_amax_hip_bf16",
                      "kg_amax_hip_f32" }, names(variants))
    local text = table.concat(amax.descriptor(variants[1], require("dialects.c")), "\n")
    assert.is_truthy(text:find(".op = KG_OP_AMAX", 1, true) and text:find(".amax_launch = ", 1, true), text)
  end)

  it("rejects a kernel of another backend and a missing dtype", function()
    local variants, errors = expand_in("amax", { backend = "c", kernel = "block", dtype = "f16" }, { backend = "cuda" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("kernel 'block' does not exist on backend 'c'; allowed: loop", 1, true), errors[1])
    assert.is_truthy(errors[2]:find("amax needs axis 'dtype'; allowed: f32, f16, bf16", 1, true), errors[2])
  end)
end)
