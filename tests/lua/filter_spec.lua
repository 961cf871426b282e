-- KG_KERNELS=glob[,glob] filtering (lib.expand.name_filter and the CLI).
local H = require("tests.lua.helper")
local expand = require("lib.expand")

describe("name_filter", function()
  local f = expand.name_filter

  it("accepts everything when unset or empty", function()
    assert.is_true(f(nil)("anything"))
    assert.is_true(f("")("anything"))
  end)

  it("matches whole names with * and ?", function()
    local keep = f("kg_gemm_c_*,*simt_f32*")
    assert.is_true(keep("kg_gemm_c_blocked_f32_xxx_64x256x256_a1"))
    assert.is_true(keep("kg_gemm_cuda_simt_f32_xxx_64x64x8_w2x2_a1"))
    assert.is_true(keep("kg_gemm_hip_simt_f32_xxx_64x64x8_w2x2_a1"))
    assert.is_false(keep("kg_gemm_cuda_simt_f16_xxx_64x64x8_w2x2_a1"))
    assert.is_false(keep("kg_gemm_cuda_tensorop_f16_rrx_128x128x32_w2x2_s3_a8"))
    assert.is_false(keep("xkg_gemm_c_blocked")) -- anchored at the start
    assert.is_false(f("kg_gemm_c")("kg_gemm_c_blocked")) -- and at the end
    assert.is_true(f("kg_gemm_?ip_*")("kg_gemm_hip_simt"))
    assert.is_false(f("kg_gemm_?ip_*")("kg_gemm_cuda_simt"))
  end)

  it("treats pattern characters other than * and ? literally", function()
    assert.is_true(f("a.b-c+d%e(f)[g]^$")("a.b-c+d%e(f)[g]^$"))
    assert.is_false(f("a.b")("axb"))
    assert.is_false(f("a-b")("ab"))
  end)

  it("trims blanks around globs and ignores empty ones", function()
    local keep = f(" *_a8 , ,kg_gemm_c_* ")
    assert.is_true(keep("kg_gemm_cuda_tensorop_f16_rrx_128x128x32_w2x2_s3_a8"))
    assert.is_true(keep("kg_gemm_c_blocked_f16_xxx_64x256x256_a1"))
    assert.is_false(keep("kg_gemm_hip_simt_f16_xxx_64x64x8_w2x2_a1"))
  end)
end)

describe("KG_KERNELS on the CLI", function()
  teardown(H.cleanup)

  local GLOBS = "kg_gemm_c_*,*simt_f32*"

  -- The unfiltered names, filtered here with plain Lua patterns.
  local function expected()
    local out, rc = H.kgen("list")
    assert.are.equal(0, rc, out)
    local want = {}
    for _, n in ipairs(H.lines(out)) do
      if n:find("^kg_gemm_c_") or n:find("simt_f32", 1, true) then want[#want + 1] = n end
    end
    return want, #H.lines(out)
  end

  it("filters 'list' with KG_KERNELS='" .. GLOBS .. "'", function()
    local want, total = expected()
    local out, rc = H.kgen("list", { KG_KERNELS = GLOBS })
    assert.are.equal(0, rc, out)
    local got = H.lines(out)
    assert.are.same(want, got)
    assert.is_true(#got < total)
    assert.is_truthy(out:find("kg_gemm_c_blocked_f32_xxx_64x256x256_a1\n", 1, true), out)
    assert.is_truthy(out:find("kg_gemm_cuda_simt_f32_xxx_64x64x8_w2x2_a1\n", 1, true), out)
    assert.is_truthy(out:find("kg_gemm_hip_simt_f32_xxx_64x64x8_w2x2_a1\n", 1, true), out)
    assert.is_falsy(out:find("tensorop", 1, true), out)
    assert.is_falsy(out:find("simt_f16", 1, true), out)
  end)

  it("takes --kernels as the same filter, over KG_KERNELS", function()
    local a = H.kgen("list", { KG_KERNELS = GLOBS })
    local b = H.kgen("list --kernels " .. H.q(GLOBS))
    local c = H.kgen("list --kernels " .. H.q(GLOBS), { KG_KERNELS = "nothing_matches*" })
    assert.are.equal(a, b)
    assert.are.equal(a, c)
  end)

  it("generates only the selected variants, in files and table", function()
    local want = expected()
    local out_dir = H.tmpdir() .. "/generated"
    local log, rc = H.kgen("--templates " .. H.q(H.stub_templates()) .. " --out " .. H.q(out_dir), { KG_KERNELS = GLOBS })
    assert.are.equal(0, rc, log)
    assert.is_truthy(log:find("kgen: " .. #want .. " variants;", 1, true), log)
    local sources = {}
    for _, rel in ipairs(H.files(out_dir)) do
      local name = rel:match("^%w+/(kg_[%w_]+)%.%w+$")
      if name then sources[#sources + 1] = name end
    end
    table.sort(sources)
    assert.are.same(want, sources)
    local tbl = H.read(out_dir .. "/kg_table.c")
    local names = {}
    for n in tbl:gmatch("%.name = \"([%w_]+)\"") do names[#names + 1] = n end
    table.sort(names)
    assert.are.same(want, names)
  end)
end)
