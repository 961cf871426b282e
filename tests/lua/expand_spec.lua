-- Expansion and naming (lib.expand + families.gemm), and the list / explain commands.
local H = require("tests.lua.helper")
local expand = require("lib.expand")
local gemm = require("families.gemm")

local FAMILIES = { gemm = gemm }

-- Expand spec entries given as field tables (one per call, lines 10, 20, ...).
local function expand_fields(...)
  local entries = {}
  for i, fields in ipairs({ ... }) do
    entries[i] = { family = "gemm", fields = fields, file = "specs/t.lua", line = 10 * i, key_lines = {} }
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

describe("expansion", function()
  teardown(H.cleanup)

  it("expands list-valued axes to the cartesian product", function()
    local variants, errors = expand_fields({
      backend = { "cuda", "hip" }, kernel = "simt", dtype = { "f32", "f16", "bf16" },
      layout_a = { "row", "col", "any" }, align = { 1, 4 },
    })
    assert.are.same({}, errors)
    assert.are.equal(2 * 3 * 3 * 2, #variants)
    local seen, combos = {}, {}
    for _, v in ipairs(variants) do
      assert.is_nil(seen[v.name], "duplicate name " .. v.name)
      seen[v.name] = true
      combos[v.backend .. v.dtype .. v.layout_a .. v.align] = true
    end
    local n = 0
    for _ in pairs(combos) do n = n + 1 end
    assert.are.equal(36, n)
  end)

  it("returns variants sorted by name", function()
    local variants = expand_fields(
      { backend = "hip", kernel = "simt", dtype = { "f32", "bf16" } },
      { backend = "c", dtype = { "f16", "f32" } })
    local got = names(variants)
    local sorted = names(variants)
    table.sort(sorted)
    assert.are.same(sorted, got)
    assert.are.equal(4, #got)
  end)

  it("fills defaults per kernel", function()
    local variants = expand_fields(
      { backend = "c", dtype = "f16" },
      { backend = "cuda", dtype = "f32" },
      { backend = "hip", kernel = "tensorop", dtype = "bf16", layout_a = "row", layout_b = "col" })
    assert.are.equal(3, #variants)
    local by = {}
    for _, v in ipairs(variants) do by[v.backend] = v end
    local c, cuda, hip = by.c, by.cuda, by.hip
    -- every axis is filled, with the family's default where the spec gave none
    for _, v in ipairs(variants) do
      local want = H.full(gemm, { backend = v.backend, kernel = v.kernel ~= "blocked" and v.kernel ~= "simt"
        and v.kernel or nil, dtype = v.dtype, layout_a = v.layout_a ~= "any" and v.layout_a or nil,
        layout_b = v.layout_b ~= "any" and v.layout_b or nil })
      for _, a in ipairs(gemm.axes) do
        assert.is_not_nil(v[a.name], a.name)
        assert.are.equal(want[a.name], v[a.name], v.backend .. " " .. a.name)
      end
      assert.are.equal(gemm.name_of(want), v.name)
    end
    -- the defaults that users rely on
    assert.are.same({ "blocked", "f16", "any", "any", "any", "64x256x256", "1x1", 1, 1 },
      { c.kernel, c.out_dtype, c.layout_a, c.layout_b, c.layout_cd, c.tile, c.warps, c.stages, c.align })
    assert.are.same({ "simt", "f32", "64x64x8", "2x2", 1, 1 },
      { cuda.kernel, cuda.out_dtype, cuda.tile, cuda.warps, cuda.stages, cuda.align })
    assert.are.same({ "tensorop", "bf16", "any", 8 }, { hip.kernel, hip.out_dtype, hip.layout_cd, hip.align })
    assert.is_true(hip.stages >= 2)
    assert.are.equal("kg_gemm_c_blocked_f16_xxx_64x256x256_a1", c.name)
  end)

  it("records the spec file and call line of each variant", function()
    local variants = expand_fields({ backend = "c", dtype = "f32" }, { backend = "cuda", dtype = "f16" })
    assert.are.same({ "specs/t.lua", 10 }, { variants[1].spec_file, variants[1].spec_line })
    assert.are.same({ "specs/t.lua", 20 }, { variants[2].spec_file, variants[2].spec_line })
  end)

  it("encodes the output dtype in the name when it differs", function()
    local variants = expand_fields({ backend = "cuda", dtype = "f16", out_dtype = { "f16", "f32" } })
    assert.are.same({ "kg_gemm_cuda_simt_f16_xxx_64x64x8_w2x2_a1", "kg_gemm_cuda_simt_f16tof32_xxx_64x64x8_w2x2_a1" },
      names(variants))
  end)

  describe("canonical names", function()
    local BASES = {
      { backend = "c", dtype = "f32" },
      { backend = "cuda", kernel = "simt", dtype = "f16" },
      { backend = "hip", kernel = "simt", dtype = "bf16", layout_a = "row" },
      { backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "col" },
      { backend = "hip", kernel = "tensorop", dtype = "bf16", layout_a = "col", layout_b = "row",
        tile = "64x64x32", stages = 2 },
    }

    -- Every legal variant reachable from a base by changing one or two axes.
    local function neighbours(base)
      local out = {}
      local axes = gemm.axes
      local function try(partial)
        local v = H.full(gemm, partial)
        if not gemm.legal(v) then out[#out + 1] = v end
      end
      for i, a in ipairs(axes) do
        for _, x in ipairs(a.values) do
          local p = {}
          for k, y in pairs(base) do p[k] = y end
          p[a.name] = x
          try(p)
          for j = i + 1, #axes do
            local b = axes[j]
            for _, y in ipairs(b.values) do
              local q = {}
              for k, z in pairs(p) do q[k] = z end
              q[b.name] = y
              try(q)
            end
          end
        end
      end
      return out
    end

    local function identity(v)
      local parts = {}
      for _, a in ipairs(gemm.axes) do parts[#parts + 1] = a.name .. "=" .. tostring(v[a.name]) end
      return table.concat(parts, " ")
    end

    it("differ whenever any axis differs (one- and two-axis changes of several bases)", function()
      local by_name, count = {}, 0
      for _, base in ipairs(BASES) do
        for _, v in ipairs(neighbours(base)) do
          local id = identity(v)
          local name = gemm.name_of(v)
          assert.is_truthy(name:match("^kg_gemm_[%w_]+$"), name)
          if by_name[name] then
            assert.are.equal(by_name[name], id, "two variants share the name " .. name)
          else
            by_name[name] = id
            count = count + 1
          end
        end
      end
      assert.is_true(count > 100, "too few variants exercised: " .. count)
    end)

    it("change when exactly one distinguishing axis changes", function()
      local pairs_ = {
        { { backend = "cuda", dtype = "f32" }, { backend = "hip", dtype = "f32" } },
        { { backend = "cuda", dtype = "f32" }, { backend = "cuda", dtype = "f16" } },
        { { backend = "cuda", dtype = "f16" }, { backend = "cuda", dtype = "f16", out_dtype = "f32" } },
        { { backend = "cuda", dtype = "f32" }, { backend = "cuda", dtype = "f32", layout_a = "row" } },
        { { backend = "cuda", dtype = "f32" }, { backend = "cuda", dtype = "f32", layout_b = "col" } },
        { { backend = "cuda", dtype = "f32" }, { backend = "cuda", dtype = "f32", layout_cd = "col" } },
        { { backend = "cuda", dtype = "f32" }, { backend = "cuda", dtype = "f32", tile = "128x128x8" } },
        { { backend = "cuda", dtype = "f32" }, { backend = "cuda", dtype = "f32", warps = "1x2" } },
        { { backend = "cuda", dtype = "f32" }, { backend = "cuda", dtype = "f32", align = 4 } },
        { { backend = "c", dtype = "f32" }, { backend = "c", dtype = "f32", tile = "128x512x256" } },
        { { backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "row",
            tile = "128x128x32", warps = "2x2", stages = 2 },
          { backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "row",
            tile = "128x128x32", warps = "2x2", stages = 3 } },
        { { backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "row", tile = "128x128x32" },
          { backend = "cuda", kernel = "simt", dtype = "f16", layout_a = "row", layout_b = "row", tile = "128x128x8" } },
      }
      for _, p in ipairs(pairs_) do
        local a, b = H.full(gemm, p[1]), H.full(gemm, p[2])
        assert.is_nil(gemm.legal(a), identity(a))
        assert.is_nil(gemm.legal(b), identity(b))
        assert.are_not.equal(gemm.name_of(a), gemm.name_of(b), identity(a) .. " vs " .. identity(b))
      end
    end)
  end)

  it("describes an illegal combination of a family that has no describe()", function()
    local fam = {
      name = "toy",
      axes = {
        { name = "size", values = { 1, 2 } },
        { name = "fast", values = { false, true }, default = false },
        { name = "tag", values = { "a", "b" }, default = "a" },
      },
      legal = function(v) if v.fast and v.size == 1 then return "fast needs size 2; allowed: size = 2", "size" end end,
      name_of = function(v) return "toy_" .. v.size .. (v.fast and "_fast" or "") .. "_" .. v.tag end,
    }
    local errors = {}
    local variants = expand.expand({ toy = fam }, {
      { family = "toy", fields = { size = { 1, 2 }, fast = true }, file = "specs/toy.lua", line = 3, key_lines = { size = 4 } },
    }, errors)
    assert.are.same({ "toy_2_fast_a" }, names(variants))
    assert.are.same({ "specs/toy.lua:4: error: illegal combination (size=1 fast=true tag=a): fast needs size 2; allowed: size = 2" },
      errors)
  end)

  it("reports a duplicate name in the same call (a repeated list value)", function()
    local variants, errors = expand_fields({ backend = "c", dtype = { "f32", "f32" } })
    assert.are.equal(1, #variants)
    assert.are.equal(1, #errors)
    assert.is_truthy(errors[1]:find("^specs/t%.lua:10: error: duplicate variant name 'kg_gemm_c_blocked_f32_"), errors[1])
  end)
end)

describe("gen/kgen list and explain", function()
  teardown(H.cleanup)

  local SPEC = table.concat({
    "-- test specs",
    "gemm {",
    "  backend = \"c\",",
    "  dtype = { \"f32\", \"bf16\" },",
    "}",
    "",
    "gemm {",
    "  backend = \"hip\",",
    "  kernel = \"tensorop\",",
    "  dtype = \"f16\",",
    "  out_dtype = \"f32\",",
    "  layout_a = \"row\",",
    "  layout_b = \"col\",",
    "}",
  }, "\n") .. "\n"
  local NAMES = {
    "kg_gemm_c_blocked_bf16_xxx_64x256x256_a1",
    "kg_gemm_c_blocked_f32_xxx_64x256x256_a1",
    "kg_gemm_hip_tensorop_f16tof32_rcx_128x128x32_w2x2_s3_a8",
  }

  local dir
  before_each(function() dir = H.spec_dir({ ["t.lua"] = SPEC }) end)

  it("lists the variant names, sorted, one per line", function()
    local out, rc = H.kgen("--specs " .. H.q(dir) .. " list")
    assert.are.equal(0, rc, out)
    assert.are.same(NAMES, H.lines(out))
  end)

  it("accepts the options before or after the command", function()
    local a = { H.kgen("list --specs " .. H.q(dir)) }
    local b = { H.kgen("--specs " .. H.q(dir) .. " list") }
    assert.are.same({ table.concat(NAMES, "\n") .. "\n", 0 }, { a[1], a[2] })
    assert.are.same({ a[1], a[2] }, { b[1], b[2] })
  end)

  it("lists the repository's specs", function()
    local out, rc = H.kgen("list")
    assert.are.equal(0, rc, out)
    local got = H.lines(out)
    local sorted = H.lines(out)
    table.sort(sorted)
    assert.are.same(sorted, got)
    -- the same names the library computes from specs/*.lua with every family of gen/families
    local spec = require("lib.spec")
    local fams, fam_names = {}, {}
    for _, f in ipairs(H.lines(H.sh("ls -1 gen/families/*.lua"))) do
      local n = f:match("([%w_]+)%.lua$")
      fams[n] = require("families." .. n)
      fam_names[#fam_names + 1] = n
    end
    local entries, errors = {}, {}
    for _, f in ipairs(H.lines(H.sh("ls -1 specs/*.lua"))) do
      for _, e in ipairs(spec.load(f, fam_names, errors)) do entries[#entries + 1] = e end
    end
    assert.are.same(names(expand.expand(fams, entries, errors)), got)
    assert.are.same({}, errors)
    for _, p in ipairs({ "kg_gemm_c_blocked_f32_xxx_", "kg_gemm_cuda_simt_f32_xxx_", "kg_gemm_hip_simt_bf16_xxx_",
      "kg_gemm_cuda_tensorop_f16_rrx_", "kg_gemm_hip_tensorop_bf16_rcx_" }) do
      assert.is_truthy(out:find("\n" .. p, 1, true) or out:find("^" .. p), p)
    end
  end)

  it("explains a variant: spec file:line, template and every axis", function()
    local out, rc = H.kgen("--specs " .. H.q(dir) .. " explain kg_gemm_hip_tensorop_f16tof32_rcx_128x128x32_w2x2_s3_a8")
    assert.are.equal(0, rc, out)
    local lines = H.lines(out)
    assert.are.equal("kg_gemm_hip_tensorop_f16tof32_rcx_128x128x32_w2x2_s3_a8", lines[1])
    assert.are.equal("  spec:     " .. dir .. "/t.lua:7", lines[2])
    assert.are.equal("  template: templates/gemm/tensorop.kgt", lines[3])
    local axes = {}
    for i = 4, #lines do
      local k, x = lines[i]:match("^  ([%w_]+):%s+(%S+)$")
      assert.is_truthy(k, lines[i])
      axes[k] = x
    end
    assert.are.same({
      backend = "hip", kernel = "tensorop", dtype = "f16", out_dtype = "f32",
      layout_a = "row", layout_b = "col", layout_cd = "any",
      tile = "128x128x32", warps = "2x2", stages = "3", schedule = "sync", align = "8", max_tiles_per_sm = "0",
    }, axes)
    assert.are.equal(3 + #gemm.axes, #lines)
  end)

  it("explains with the --templates directory in the template path", function()
    local out, rc = H.kgen("--specs " .. H.q(dir) .. " --templates /x/t explain kg_gemm_c_blocked_f32_xxx_64x256x256_a1")
    assert.are.equal(0, rc, out)
    assert.is_truthy(out:find("\n  spec:     " .. dir .. "/t.lua:2\n", 1, true), out)
    assert.is_truthy(out:find("\n  template: /x/t/gemm/blocked.kgt\n", 1, true), out)
  end)

  it("exits non-zero for an unknown name", function()
    local out, rc = H.kgen("--specs " .. H.q(dir) .. " explain kg_gemm_c_blocked_f64_xxx_64x256x256_a1")
    assert.are_not.equal(0, rc)
    assert.is_truthy(out:find("no variant named 'kg_gemm_c_blocked_f64_xxx_64x256x256_a1'", 1, true), out)
  end)

  it("exits non-zero for an unknown command", function()
    local _, rc = H.kgen("--specs " .. H.q(dir) .. " frobnicate")
    assert.are_not.equal(0, rc)
  end)
end)
