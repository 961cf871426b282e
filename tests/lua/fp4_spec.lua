-- The fp4 family (families/fp4.lua): axes and defaults, legality and its
-- messages, canonical names, descriptors, dispatch order, and the shipped
-- specs/fp4.lua.
local H = require("tests.lua.helper")
local expand = require("lib.expand")
local fp4 = require("families.fp4")

local FAMILIES = { fp4 = fp4 }

-- Expand spec entries given as field tables (one call per table, lines 10, 20, ...).
local function expand_fields(...)
  local entries = {}
  for i, fields in ipairs({ ... }) do
    entries[i] = { family = "fp4", fields = fields, file = "specs/t.lua", line = 10 * i, key_lines = {} }
  end
  local errors = {}
  local variants = expand.expand(FAMILIES, entries, errors)
  return variants, errors
end

local function names(variants)
  local out = {}
  for i, v in ipairs(variants) do out[i] = v.name end
  return out
end

local function one_error(fields)
  local variants, errors = expand_fields(fields)
  assert.are.equal(0, #variants)
  assert.are.equal(1, #errors, table.concat(errors, "\n"))
  return errors[1]
end

describe("fp4 family", function()
  teardown(H.cleanup)

  it("fills defaults: kernel by backend, 128x4 scales, round-up for MXFP4 quantize only", function()
    local variants, errors = expand_fields(
      { backend = "c", op = "quantize", format = "mxfp4", dtype = "bf16" },
      { backend = "cuda", op = "dequantize", format = "mxfp4", dtype = "f16" },
      { backend = "hip", op = "quantize", format = "nvfp4", dtype = "f32" },
      { backend = "cuda", op = "swizzle" })
    assert.are.same({}, errors)
    local by = {}
    for _, v in ipairs(variants) do by[v.name] = v end
    local q = by["kg_fp4_c_quantize_mxfp4_bf16_sf128x4_rup"]
    assert.is_truthy(q, table.concat(names(variants), " "))
    assert.are.same({ "loop", "128x4", "up" }, { q.kernel, q.sf_layout, q.scale_round })
    local dq = by["kg_fp4_cuda_dequantize_mxfp4_f16_sf128x4"]
    assert.is_truthy(dq)
    assert.are.same({ "thread", "none" }, { dq.kernel, dq.scale_round })
    local nv = by["kg_fp4_hip_quantize_nvfp4_f32_sf128x4"]
    assert.is_truthy(nv)
    assert.are.equal("none", nv.scale_round)
    local sw = by["kg_fp4_cuda_swizzle_sf128x4"]
    assert.is_truthy(sw)
    assert.are.same({ "none", "none", "none", "thread" }, { sw.format, sw.dtype, sw.scale_round, sw.kernel })
  end)

  it("names every axis that distinguishes variants, and names are unique", function()
    local variants, errors = expand_fields(
      { backend = { "c", "cuda", "hip" }, op = { "quantize", "dequantize" }, format = { "nvfp4", "mxfp4" },
        dtype = { "f32", "f16", "bf16" }, sf_layout = { "linear", "128x4", "8x4" } },
      { backend = "c", op = "quantize", format = "mxfp4", dtype = "f16", sf_layout = "8x4", scale_round = { "down", "ocp" } },
      { backend = { "c", "cuda", "hip" }, op = { "swizzle", "unswizzle", "reswizzle" }, sf_layout = { "128x4", "8x4" } })
    assert.are.same({}, errors)
    assert.are.equal(3 * 2 * 2 * 3 * 3 + 2 + 3 * 3 * 2, #variants)
    local seen = {}
    for _, v in ipairs(variants) do
      assert.is_nil(seen[v.name], v.name)
      seen[v.name] = true
      assert.is_truthy(v.name:match("^kg_fp4_[a-z]+_[a-z]+_"), v.name)
      assert.is_truthy(v.name:find("_" .. v.backend .. "_" .. v.op .. "_", 1, true), v.name)
      assert.is_truthy(v.name:find("_sf" .. v.sf_layout, 1, true), v.name)
      if v.format ~= "none" then
        assert.is_truthy(v.name:find("_" .. v.format .. "_" .. v.dtype .. "_", 1, true), v.name)
      end
      if v.scale_round ~= "none" then assert.is_truthy(v.name:match("_r" .. v.scale_round .. "$"), v.name) end
    end
    for _, n in ipairs({ "kg_fp4_c_quantize_mxfp4_f16_sf8x4_rdown", "kg_fp4_c_quantize_mxfp4_f16_sf8x4_rocp",
      "kg_fp4_hip_dequantize_nvfp4_bf16_sflinear", "kg_fp4_cuda_reswizzle_sf8x4", "kg_fp4_c_unswizzle_sf128x4" }) do
      assert.is_true(seen[n] == true, n)
    end
  end)

  it("rejects illegal combinations with the allowed values", function()
    local cases = {
      { { backend = "c", op = "quantize", dtype = "f16" }, "needs axis 'format'; allowed: nvfp4, mxfp4" },
      { { backend = "c", op = "dequantize", format = "nvfp4" }, "needs axis 'dtype'; allowed: f32, f16, bf16" },
      { { backend = "c", op = "quantize", format = "none", dtype = "f16" }, "allowed: nvfp4, mxfp4" },
      { { backend = "cuda", kernel = "loop", op = "swizzle" }, "kernel 'loop' does not exist on backend 'cuda'; allowed: thread" },
      { { backend = "c", kernel = "thread", op = "swizzle" }, "allowed: loop" },
      { { backend = "c", op = "quantize", format = "nvfp4", dtype = "f16", scale_round = "up" },
        "scale_round applies to MXFP4 quantize only" },
      { { backend = "c", op = "dequantize", format = "mxfp4", dtype = "f16", scale_round = "down" },
        "allowed: scale_round = none" },
      { { backend = "c", op = "quantize", format = "mxfp4", dtype = "f16", scale_round = "none" },
        "allowed: scale_round = up, down, ocp" },
      { { backend = "c", op = "swizzle", sf_layout = "linear" }, "allowed: sf_layout = 128x4, 8x4" },
      { { backend = "c", op = "unswizzle", format = "nvfp4" }, "allowed: format = none" },
      { { backend = "c", op = "reswizzle", dtype = "bf16" }, "allowed: dtype = none" },
      { { backend = "c", op = "swizzle", scale_round = "up" }, "allowed: scale_round = none" },
    }
    for _, c in ipairs(cases) do
      local e = one_error(c[1])
      assert.is_truthy(e:match("^specs/t%.lua:%d+: error: illegal combination"), e)
      assert.is_truthy(e:find(c[2], 1, true), e .. "\n  wanted: " .. c[2])
    end
    -- unknown values name the allowed ones
    local e = one_error({ backend = "c", op = "transpose" })
    assert.is_truthy(e:find("allowed: quantize, dequantize, swizzle, unswizzle, reswizzle", 1, true), e)
    e = one_error({ backend = "c", op = "quantize", format = "nvfp8", dtype = "f16" })
    assert.is_truthy(e:find("allowed: nvfp4, mxfp4, none", 1, true), e)
  end)

  it("describes each variant for dispatch", function()
    local variants = expand_fields(
      { backend = "cuda", op = "quantize", format = "mxfp4", dtype = "bf16", sf_layout = "8x4", scale_round = "ocp" },
      { backend = "c", op = "dequantize", format = "nvfp4", dtype = "f16", sf_layout = "linear" },
      { backend = "hip", op = "reswizzle", sf_layout = "128x4" })
    local d = { c = require("dialects.c"), cuda = require("dialects.cuda"), hip = require("dialects.hip") }
    local function fields(v)
      local t = {}
      for _, f in ipairs(fp4.descriptor(v, d[v.backend])) do
        local k, x = f:match("^%.([%w_]+) = (.*)$")
        assert.is_truthy(k, f)
        t[k] = x
      end
      return t
    end
    local by = {}
    for _, v in ipairs(variants) do by[v.op] = v end
    assert.are.same({
      op = "KG_OP_FP4_QUANTIZE", backend = "KG_BACKEND_CUDA", arch = '"sm_90a"', kernel = '"thread"',
      type_ab = "KG_BF16", type_cd = "KG_BF16", fp4_format = "KG_FP4_MXFP4", sf_layout = "KG_SF_SWIZZLED_8X4",
      mx_round = "KG_MX_ROUND_OCP", fp4_launch = by.quantize.name,
    }, fields(by.quantize))
    assert.are.same({
      op = "KG_OP_FP4_DEQUANTIZE", backend = "KG_BACKEND_C", arch = '"host"', kernel = '"loop"',
      type_ab = "KG_F16", type_cd = "KG_F16", fp4_format = "KG_FP4_NVFP4", sf_layout = "KG_SF_LINEAR",
      mx_round = "-1", fp4_launch = by.dequantize.name,
    }, fields(by.dequantize))
    assert.are.same({
      op = "KG_OP_SF_RESWIZZLE", backend = "KG_BACKEND_HIP", arch = '"gfx90a"', kernel = '"thread"',
      type_ab = "KG_F32", type_cd = "KG_F32", fp4_format = "-1", sf_layout = "KG_SF_SWIZZLED_128X4",
      mx_round = "-1", sf_launch = by.reswizzle.name,
    }, fields(by.reswizzle))
    assert.are.same({ "kg_status " .. by.quantize.name .. "(const kg_fp4_args *args, const kg_exec *exec);" },
      fp4.prototypes(by.quantize))
    assert.are.same({ "kg_status " .. by.reswizzle.name .. "(const kg_sf_job *job, const kg_exec *exec);" },
      fp4.prototypes(by.reswizzle))
    assert.are.equal("fp4/quantize.kgt", fp4.template(by.quantize))
    assert.are.equal("fp4/dequantize.kgt", fp4.template(by.dequantize))
    assert.are.equal("fp4/sf_convert.kgt", fp4.template(by.reswizzle))
  end)

  it("sorts one (op, backend, dtype) key contiguously", function()
    local variants = expand_fields(
      { backend = { "c", "cuda" }, op = { "quantize", "dequantize" }, format = { "nvfp4", "mxfp4" },
        dtype = { "f16", "bf16" }, sf_layout = { "linear", "8x4" } },
      { backend = { "c", "hip" }, op = { "swizzle", "unswizzle" } })
    table.sort(variants, function(a, b) return fp4.sort_key(a) < fp4.sort_key(b) end)
    local seen, last = {}, nil
    for _, v in ipairs(variants) do
      local key = v.op .. "|" .. v.backend .. "|" .. v.dtype
      if key ~= last then
        assert.is_nil(seen[key], "key " .. key .. " is split")
        seen[key] = true
        last = key
      end
    end
  end)

  it("ships specs/fp4.lua: every op on C, f16/bf16 on the GPUs, conversions everywhere", function()
    local out, rc = H.kgen("list")
    assert.are.equal(0, rc, out)
    local set = {}
    for _, n in ipairs(H.lines(out)) do if n:match("^kg_fp4_") then set[n] = true end end
    for _, n in ipairs({
      "kg_fp4_c_quantize_nvfp4_f32_sflinear", "kg_fp4_c_quantize_mxfp4_bf16_sf128x4_rocp",
      "kg_fp4_c_dequantize_mxfp4_f16_sf8x4", "kg_fp4_cuda_quantize_nvfp4_bf16_sf128x4",
      "kg_fp4_cuda_quantize_mxfp4_f16_sf8x4_rup", "kg_fp4_hip_dequantize_nvfp4_bf16_sflinear",
      "kg_fp4_cuda_swizzle_sf128x4", "kg_fp4_hip_unswizzle_sf8x4", "kg_fp4_c_reswizzle_sf128x4",
    }) do
      assert.is_true(set[n] == true, n)
    end
    assert.is_nil(set["kg_fp4_cuda_quantize_nvfp4_f32_sflinear"])
  end)
end)
