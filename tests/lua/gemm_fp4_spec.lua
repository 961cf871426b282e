-- The gemm_fp4 family (families/gemm_fp4.lua): axes and defaults, legality,
-- canonical names, descriptors, and the shipped specs/gemm_fp4.lua.
local H = require("tests.lua.helper")
local expand = require("lib.expand")
local gemm_fp4 = require("families.gemm_fp4")

local FAMILIES = { gemm_fp4 = gemm_fp4 }

local function expand_fields(...)
  local entries = {}
  for i, fields in ipairs({ ... }) do
    entries[i] = { family = "gemm_fp4", fields = fields, file = "specs/t.lua", line = 10 * i, key_lines = {} }
  end
  local errors = {}
  local variants = expand.expand(FAMILIES, entries, errors)
  return variants, errors
end

describe("gemm_fp4 family", function()
  teardown(H.cleanup)

  it("fills defaults: kernel by backend, 128x4 scales", function()
    local variants, errors = expand_fields(
      { backend = "c", dtype = "bf16", format = "nvfp4" },
      { backend = "cuda", dtype = "f16", format = "mxfp4" },
      { backend = "hip", dtype = "bf16", format = "mxfp4", sf_layout = "linear" })
    assert.are.same({}, errors)
    local got = {}
    for i, v in ipairs(variants) do got[i] = v.name end
    table.sort(got)
    assert.are.same({ "kg_fp4gemm_c_blocked_nvfp4_bf16_sf128x4", "kg_fp4gemm_cuda_warp_mxfp4_f16_sf128x4",
                      "kg_fp4gemm_hip_warp_mxfp4_bf16_sflinear" }, got)
  end)

  it("names every axis that distinguishes variants; names are unique and not kg_gemm_", function()
    local variants, errors = expand_fields(
      { backend = { "c", "cuda", "hip" }, dtype = { "f16", "bf16" }, format = { "nvfp4", "mxfp4" },
        sf_layout = { "linear", "128x4", "8x4" } })
    assert.are.same({}, errors)
    assert.are.equal(3 * 2 * 2 * 3, #variants)
    local seen = {}
    for _, v in ipairs(variants) do
      assert.is_nil(seen[v.name], v.name)
      seen[v.name] = true
      assert.is_truthy(v.name:match("^kg_fp4gemm_"), v.name)
      assert.is_truthy(v.name:find("_" .. v.backend .. "_" .. v.kernel .. "_" .. v.format .. "_" .. v.dtype
        .. "_sf" .. v.sf_layout, 1, true), v.name)
    end
  end)

  it("rejects a kernel on the wrong backend, and unknown values, with the allowed list", function()
    local variants, errors = expand_fields({ backend = "c", kernel = "warp", dtype = "bf16", format = "nvfp4" })
    assert.are.equal(0, #variants)
    assert.are.equal(1, #errors)
    assert.is_truthy(errors[1]:find("kernel 'warp' does not exist on backend 'c'; allowed: blocked", 1, true), errors[1])
    variants, errors = expand_fields({ backend = "cuda", dtype = "f32", format = "nvfp4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find('dtype = "f32" is not allowed; allowed: f16, bf16', 1, true), errors[1])
    variants, errors = expand_fields({ backend = "cuda", dtype = "bf16" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("gemm_fp4 needs axis 'format'", 1, true), errors[1])
  end)

  it("describes GPU variants as small-M and 16-byte aligned, C ones as unlimited", function()
    local variants = expand_fields({ backend = { "c", "cuda" }, dtype = "bf16", format = "mxfp4", sf_layout = "8x4" })
    local d = { c = require("dialects.c"), cuda = require("dialects.cuda") }
    for _, v in ipairs(variants) do
      local text = table.concat(gemm_fp4.descriptor(v, d[v.backend]), "\n")
      assert.is_truthy(text:find(".op = KG_OP_GEMM_FP4", 1, true))
      assert.is_truthy(text:find(".fp4_format = KG_FP4_MXFP4", 1, true))
      assert.is_truthy(text:find(".sf_layout = KG_SF_SWIZZLED_8X4", 1, true))
      assert.is_truthy(text:find(".gemm_fp4_launch = " .. v.name, 1, true))
      if v.backend == "c" then
        assert.is_truthy(text:find(".max_m = 0", 1, true) and text:find(".align = 1", 1, true), text)
      else
        assert.is_truthy(text:find(".max_m = 16", 1, true) and text:find(".align = 8", 1, true), text)
      end
    end
  end)

  it("W4A4: a_dtype = fp4 adds A's scale layout to the name (default: the weights' layout)", function()
    local variants, errors = expand_fields(
      { backend = "c", dtype = "bf16", a_dtype = "fp4", format = "nvfp4", sf_layout = "linear" },
      { backend = "cuda", dtype = "bf16", a_dtype = "fp4", format = "mxfp4", sf_layout_a = "8x4" },
      { backend = "hip", kernel = "mma", dtype = "bf16", a_dtype = "bf16", format = "nvfp4" })
    assert.are.same({}, errors)
    local got = {}
    for i, v in ipairs(variants) do got[i] = v.name end
    table.sort(got)
    assert.are.same({ "kg_fp4gemm_c_blocked_nvfp4_bf16_sflinear_afp4_sfalinear",
                      "kg_fp4gemm_cuda_warp_mxfp4_bf16_sf128x4_afp4_sfa8x4",
                      "kg_fp4gemm_hip_mma_nvfp4_bf16_sf128x4" }, got)
    local d = require("dialects.cuda")
    for _, v in ipairs(variants) do
      local text = table.concat(gemm_fp4.descriptor(v, d), "\n")
      if v.a_dtype == "fp4" then
        assert.is_truthy(text:find(".a_fp4 = 1", 1, true), text)
      else
        assert.is_truthy(text:find(".a_fp4 = 0", 1, true) and text:find(".sf_layout_a = -1", 1, true), text)
      end
      if v.kernel == "mma" then assert.is_truthy(text:find(".max_m = 0", 1, true) and text:find(".path_m = 0", 1, true), text) end
    end
  end)

  it("rejects a_dtype other than dtype or fp4, sf_layout_a without FP4 A, f16 MXFP4 on mma", function()
    local variants, errors = expand_fields({ backend = "c", dtype = "bf16", a_dtype = "f16", format = "nvfp4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: a_dtype = bf16, fp4", 1, true), errors[1])
    assert.is_truthy(errors[1]:find("^specs/t.lua:10: error: ", 1), errors[1])
    variants, errors = expand_fields({ backend = "c", dtype = "bf16", format = "nvfp4", sf_layout_a = "8x4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: sf_layout_a = none", 1, true), errors[1])
    variants, errors = expand_fields({ backend = "c", dtype = "bf16", a_dtype = "fp4", format = "nvfp4",
                                       sf_layout_a = "none" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: sf_layout_a = linear, 128x4, 8x4", 1, true), errors[1])
    variants, errors = expand_fields({ backend = "cuda", kernel = "mma", dtype = "f16", format = "mxfp4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: dtype = bf16", 1, true), errors[1])
    variants, errors = expand_fields({ backend = "c", kernel = "mma", dtype = "bf16", format = "nvfp4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("kernel 'mma' does not exist on backend 'c'; allowed: blocked", 1, true), errors[1])
    variants, errors = expand_fields({ backend = "hip", kernel = "blocked", dtype = "bf16", format = "nvfp4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: warp, mma", 1, true), errors[1])
  end)

  it("skinny: CUDA only, W4A16 (bf16, or f16 with NVFP4), small M; errors name the allowed values", function()
    local variants, errors = expand_fields(
      { backend = "cuda", kernel = "skinny", dtype = "bf16", format = { "nvfp4", "mxfp4" }, sf_layout = "linear" })
    assert.are.same({}, errors)
    local got = { variants[1].name, variants[2].name }
    table.sort(got)
    assert.are.same({ "kg_fp4gemm_cuda_skinny_mxfp4_bf16_sflinear", "kg_fp4gemm_cuda_skinny_nvfp4_bf16_sflinear" }, got)
    local text = table.concat(gemm_fp4.descriptor(variants[1], require("dialects.cuda")), "\n")
    assert.is_truthy(text:find('.kernel = "skinny"', 1, true) and text:find(".max_m = 512", 1, true)
                     and text:find(".path_m = 320", 1, true), text)
    assert.is_true(gemm_fp4.rank(variants[1]) > gemm_fp4.rank({ kernel = "warp" }))
    variants, errors = expand_fields({ backend = "hip", kernel = "skinny", dtype = "bf16", format = "nvfp4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("kernel 'skinny' does not exist on backend 'hip'; allowed: warp, mma", 1, true),
      errors[1])
    variants, errors = expand_fields({ backend = "cuda", kernel = "skinny", dtype = "f16", format = "nvfp4" })
    assert.are.same({}, errors)
    assert.are.equal("kg_fp4gemm_cuda_skinny_nvfp4_f16_sf128x4", variants[1].name)
    variants, errors = expand_fields({ backend = "cuda", kernel = "skinny", dtype = "f16", format = "mxfp4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("f16 activations with NVFP4 weights only", 1, true), errors[1])
    assert.is_truthy(errors[1]:find("allowed: dtype = bf16 (or format = nvfp4)", 1, true), errors[1])
    variants, errors = expand_fields({ backend = "cuda", kernel = "skinny", dtype = "bf16", a_dtype = "fp4",
                                       format = "nvfp4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: a_dtype = dtype", 1, true), errors[1])
    variants, errors = expand_fields({ backend = "cuda", kernel = "blocked", dtype = "bf16", format = "nvfp4" })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: warp, skinny, mma", 1, true), errors[1])
  end)

  it("takes the tensorop kernel for CUDA bf16 W4A16 with 128x4 scales only, first of its key", function()
    local variants, errors = expand_fields({ backend = "cuda", kernel = "tensorop", dtype = "bf16",
                                             format = { "nvfp4", "mxfp4" }, sf_layout = "128x4" })
    assert.are.same({}, errors)
    assert.are.equal(2, #variants)
    assert.is_true(gemm_fp4.rank(variants[1]) > gemm_fp4.rank({ kernel = "skinny" }))
    assert.are.equal("fp4/gemm_tensorop.kgt", gemm_fp4.template(variants[1]))
    -- the descriptor carries the tile and the size rule dispatch applies (kg_fp4.c)
    local desc = table.concat(gemm_fp4.descriptor(variants[1], { backend_enum = "KG_BACKEND_CUDA", arch = "sm_90a" }), " ")
    assert.is_truthy(desc:find(".tile_m = 256 .tile_n = 128", 1, true), desc)
    assert.is_truthy(desc:find(".fill_m = 512", 1, true), desc)
    for _, bad in ipairs({ { dtype = "f16", want = "allowed: dtype = bf16" },
                           { sf_layout = "linear", want = "allowed: sf_layout = 128x4" },
                           { a_dtype = "fp4", sf_layout_a = "128x4", want = "allowed: dtype = bf16, a_dtype = bf16" },
                           { backend = "hip", want = "does not exist on backend 'hip'" } }) do
      local f = { backend = "cuda", kernel = "tensorop", dtype = "bf16", format = "nvfp4", sf_layout = "128x4" }
      for k, x in pairs(bad) do if k ~= "want" then f[k] = x end end
      variants, errors = expand_fields(f)
      assert.are.equal(0, #variants)
      assert.is_truthy(errors[1]:find(bad.want, 1, true), errors[1])
    end
  end)

  it("tensorop tile_m: 256 by default (the first names), 128 named _tm128 and ranked after it", function()
    local variants, errors = expand_fields({ backend = "cuda", kernel = "tensorop", dtype = "bf16", format = "nvfp4",
                                             tile_m = { 128, 256 } })
    assert.are.same({}, errors)
    local by = {}
    for _, v in ipairs(variants) do by[v.tile_m] = v end
    assert.are.equal("kg_fp4gemm_cuda_tensorop_nvfp4_bf16_sf128x4", by[256].name)
    assert.are.equal("kg_fp4gemm_cuda_tensorop_nvfp4_bf16_sf128x4_tm128", by[128].name)
    assert.is_true(gemm_fp4.rank(by[256]) > gemm_fp4.rank(by[128]))
    assert.is_true(gemm_fp4.rank(by[128]) > gemm_fp4.rank({ kernel = "skinny" }))
    local desc = table.concat(gemm_fp4.descriptor(by[128], { backend_enum = "KG_BACKEND_CUDA", arch = "sm_90a" }), " ")
    assert.is_truthy(desc:find(".tile_m = 128 .tile_n = 128", 1, true), desc)
    variants, errors = expand_fields({ backend = "cuda", kernel = "skinny", dtype = "bf16", format = "nvfp4", tile_m = 128 })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("tile_m is the tensorop kernel's (here kernel = skinny); allowed: tile_m = 0", 1, true),
      errors[1])
    variants, errors = expand_fields({ backend = "cuda", kernel = "tensorop", dtype = "bf16", format = "nvfp4", tile_m = 0 })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: tile_m = 128, 256", 1, true), errors[1])
    variants, errors = expand_fields({ backend = "cuda", kernel = "tensorop", dtype = "bf16", format = "nvfp4", tile_m = 64 })
    assert.are.equal(0, #variants)
    assert.is_truthy(errors[1]:find("allowed: 0, 128, 256", 1, true), errors[1])
  end)

  it("ships C variants for every dtype x format x layout (W4A16, W4A4) and GPU warp / skinny / mma kernels", function()
    local out, rc = H.kgen("list")
    assert.are.equal(0, rc, out)
    local n = { c = 0, cuda = 0, hip = 0 }
    for _, l in ipairs(H.lines(out)) do
      local b = l:match("^kg_fp4gemm_(%l+)_")
      if b then n[b] = n[b] + 1 end
    end
    assert.are.same({ c = 26, cuda = 22, hip = 12 }, n)
    assert.is_truthy(out:find("kg_fp4gemm_cuda_tensorop_nvfp4_bf16_sf128x4\n", 1, true))
    assert.is_truthy(out:find("kg_fp4gemm_cuda_tensorop_nvfp4_bf16_sf128x4_tm128\n", 1, true))
    assert.is_truthy(out:find("kg_fp4gemm_cuda_tensorop_mxfp4_bf16_sf128x4_tm128\n", 1, true))
    assert.is_truthy(out:find("kg_fp4gemm_cuda_tensorop_mxfp4_bf16_sf128x4\n", 1, true))
    assert.is_truthy(out:find("kg_fp4gemm_cuda_skinny_nvfp4_bf16_sf128x4\n", 1, true))
    assert.is_truthy(out:find("kg_fp4gemm_cuda_skinny_mxfp4_bf16_sflinear\n", 1, true))
    assert.is_truthy(out:find("kg_fp4gemm_cuda_mma_mxfp4_bf16_sflinear", 1, true))
    assert.is_truthy(out:find("kg_fp4gemm_hip_warp_nvfp4_bf16_sf128x4_afp4_sfa8x4", 1, true))
    assert.is_truthy(out:find("kg_fp4gemm_cuda_warp_nvfp4_bf16_sf128x4", 1, true))
    assert.is_truthy(out:find("kg_fp4gemm_c_blocked_mxfp4_f16_sf8x4", 1, true))
  end)
end)
