-- generated/kg_table.c: first-fit order (most specialized first, generic last
-- per backend + dtype key), backend guards, count; kg_table.h and MANIFEST.tsv.
local H = require("tests.lua.helper")

-- Parse kg_table.c into a list of entries { name, guard, fields = { key = value } }.
local function parse_table(text)
  local entries, guard, cur = {}, nil, nil
  local sentinel = false
  for _, l in ipairs(H.lines(text)) do
    local g = l:match("^#ifdef (KG_WITH_%w+)$")
    if g then
      assert.is_nil(guard, "nested guard")
      guard = g
    elseif l == "#endif" then
      assert.is_not_nil(guard, "#endif without #ifdef")
      guard = nil
    elseif l:match("^  { %.name = 0 }") then
      sentinel = true
      assert.is_nil(guard, "sentinel inside a guard")
    else
      local name, spec = l:match("^  { %.name = \"([%w_]+)\", %.spec = \"([^\"]+)\",$")
      if name then
        assert.is_false(sentinel, "entry after the sentinel")
        cur = { name = name, spec = spec, guard = guard, fields = {} }
        entries[#entries + 1] = cur
      else
        local k, x = l:match("^    %.([%w_]+) = (.-),?$")
        if k and cur then cur.fields[k] = x:gsub(" }$", "") end
      end
    end
  end
  assert.is_true(sentinel, "no sentinel entry")
  return entries
end

local GUARD = { KG_BACKEND_C = nil, KG_BACKEND_CUDA = "KG_WITH_CUDA", KG_BACKEND_HIP = "KG_WITH_HIP" }

-- Every layout field (layout_a, layout_b, layout_cd, and any a family adds) is "any".
local function is_generic(e)
  for k, x in pairs(e.fields) do
    if k:match("^layout_") and x ~= "KG_LAYOUT_ANY" then return false end
  end
  return true
end

-- Order rules, checked on any table.
local function check_order(entries)
  local groups, order = {}, {}
  local last_key
  for i, e in ipairs(entries) do
    local f = e.fields
    assert.are.equal(GUARD[f.backend], e.guard, e.name .. " guard")
    local key = f.backend .. "|" .. f.type_ab .. "|" .. f.type_cd
    if f.op ~= "KG_OP_GEMM" then key = f.op .. "|" .. key end
    if key ~= last_key then
      assert.is_nil(groups[key], "entries of " .. key .. " are not contiguous (at " .. e.name .. ")")
      groups[key] = {}
      order[#order + 1] = key
      last_key = key
    end
    table.insert(groups[key], e)
    e.index = i
  end
  for _, key in ipairs(order) do
    local g = groups[key]
    -- tensorop before simt
    local seen_simt = false
    for _, e in ipairs(g) do
      if e.fields.kernel == "\"simt\"" then seen_simt = true end
      if e.fields.kernel == "\"tensorop\"" then
        assert.is_false(seen_simt, key .. ": tensorop " .. e.name .. " after a simt variant")
      end
    end
    -- the generic variant (every layout any) last; all specialized ones before any generic one
    assert.is_true(is_generic(g[#g]), key .. ": last entry " .. g[#g].name .. " is not the generic one")
    local seen_generic = false
    for _, e in ipairs(g) do
      if is_generic(e) then seen_generic = true
      else assert.is_false(seen_generic, key .. ": specialized " .. e.name .. " after a generic variant") end
    end
  end
  return groups, order
end

local function generate(spec_files)
  local out = H.tmpdir() .. "/generated"
  local args = "--templates " .. H.q(H.stub_templates()) .. " --out " .. H.q(out)
  if spec_files then args = "--specs " .. H.q(H.spec_dir(spec_files)) .. " " .. args end
  local log, rc = H.kgen(args)
  assert.are.equal(0, rc, log)
  return out
end

describe("kg_table.c", function()
  teardown(H.cleanup)

  it("orders the repository's variants first-fit: tensorop before simt, generic last", function()
    local out = generate()
    local entries = parse_table(H.read(out .. "/kg_table.c"))
    local names, rc = H.kgen("list")
    assert.are.equal(0, rc)
    assert.are.equal(#H.lines(names), #entries)
    local _, order = check_order(entries)
    -- the repository ships C and both GPU backends
    assert.is_truthy(table.concat(order, " "):find("KG_BACKEND_CUDA|KG_F16|KG_F16", 1, true))
  end)

  it("orders a mixed key: tensorop by rank, then specialized simt, then the generic simt", function()
    local spec = table.concat({
      "gemm { backend = \"cuda\", kernel = \"simt\", dtype = \"f16\" }",
      "gemm { backend = \"cuda\", kernel = \"simt\", dtype = \"f16\", align = { 2, 8 } }",
      "gemm { backend = \"cuda\", kernel = \"simt\", dtype = \"f16\", layout_a = \"row\", layout_b = \"row\", layout_cd = \"row\" }",
      "gemm { backend = \"cuda\", kernel = \"tensorop\", dtype = \"f16\", layout_a = \"row\", layout_b = { \"row\", \"col\" },",
      "       tile = \"128x128x32\", warps = \"2x2\", stages = 3 }",
      "gemm { backend = \"cuda\", kernel = \"tensorop\", dtype = \"f16\", layout_a = \"row\", layout_b = \"col\",",
      "       tile = \"64x64x64\", warps = \"2x2\", stages = 6, max_tiles_per_sm = 2 }",
      "gemm { backend = \"cuda\", kernel = \"tensorop\", dtype = \"f16\", layout_a = \"col\", layout_b = \"row\",",
      "       layout_cd = \"row\", tile = \"128x128x32\", warps = \"2x2\", stages = 3 }",
      "gemm { backend = \"c\", dtype = \"f32\" }",
      "gemm { backend = \"c\", dtype = \"f32\", layout_a = \"row\", layout_b = \"row\", layout_cd = \"row\", align = 4 }",
      "gemm { backend = \"hip\", dtype = \"f32\" }",
    }, "\n") .. "\n"
    local out = generate({ ["mix.lua"] = spec })
    local entries = parse_table(H.read(out .. "/kg_table.c"))
    local groups = check_order(entries)
    local function names_of(key)
      local t = {}
      for i, e in ipairs(groups[key]) do t[i] = e.name end
      return t
    end
    assert.are.same({
      "kg_gemm_cuda_tensorop_f16_rcx_64x64x64_w2x2_s6_ws_tps2_a8",   -- small problems first
      "kg_gemm_cuda_tensorop_f16_crr_128x128x32_w2x2_s3_ws_a8",
      "kg_gemm_cuda_tensorop_f16_rcx_128x128x32_w2x2_s3_ws_a8",
      "kg_gemm_cuda_tensorop_f16_rrx_128x128x32_w2x2_s3_ws_a8",
      "kg_gemm_cuda_simt_f16_rrr_64x64x8_w2x2_a1",
      "kg_gemm_cuda_simt_f16_xxx_64x64x8_w2x2_a8",
      "kg_gemm_cuda_simt_f16_xxx_64x64x8_w2x2_a2",
      "kg_gemm_cuda_simt_f16_xxx_64x64x8_w2x2_a1",
    }, names_of("KG_BACKEND_CUDA|KG_F16|KG_F16"))
    assert.are.same({ "kg_gemm_c_blocked_f32_rrr_64x256x256_a4", "kg_gemm_c_blocked_f32_xxx_64x256x256_a1" },
      names_of("KG_BACKEND_C|KG_F32|KG_F32"))
    assert.are.same({ "kg_gemm_hip_simt_f32_xxx_64x64x8_w2x2_a1" }, names_of("KG_BACKEND_HIP|KG_F32|KG_F32"))
    -- descriptor fields follow the variant
    local e = groups["KG_BACKEND_CUDA|KG_F16|KG_F16"][2].fields
    assert.are.same({ "KG_COL", "KG_ROW", "KG_ROW", "8", "128", "128", "32", "3", "\"sm_90a\"", "0" },
      { e.layout_a, e.layout_b, e.layout_cd, e.align, e.tile_m, e.tile_n, e.tile_k, e.stages, e.arch, e.max_tiles_per_sm })
    assert.are.same({ "64", "64", "2" }, { groups["KG_BACKEND_CUDA|KG_F16|KG_F16"][1].fields.tile_m,
      groups["KG_BACKEND_CUDA|KG_F16|KG_F16"][1].fields.tile_n, groups["KG_BACKEND_CUDA|KG_F16|KG_F16"][1].fields.max_tiles_per_sm })
    -- the spec location of each entry is its call line
    for _, x in ipairs(entries) do assert.is_truthy(x.spec:match("/mix%.lua:%d+$"), x.spec) end
    assert.is_truthy(groups["KG_BACKEND_CUDA|KG_F16|KG_F16"][1].spec:match(":6$"))
  end)

  it("marks .tma exactly on the variants whose launchers encode tensor maps (the repository's table)", function()
    local dir = H.root .. "/generated"
    local files = {}
    for _, r in ipairs(H.lines(H.read(dir .. "/MANIFEST.tsv"))) do
      local name, file = r:match("^([%w_]+)\t%w+\t([%w_/.]+)\t")
      if name then files[name] = file end
    end
    local marked, encoding = 0, 0
    for _, e in ipairs(parse_table(H.read(dir .. "/kg_table.c"))) do
      local src = H.read(dir .. "/" .. assert(files[e.name], e.name))
      local encodes = src:find("cuTensorMapEncodeTiled", 1, true) ~= nil
      assert.are.equal(encodes and "1" or "0", e.fields.tma or "0", e.name)
      if encodes then encoding = encoding + 1 end
      if e.fields.tma == "1" then marked = marked + 1 end
    end
    assert.is_true(encoding > 0)
    assert.are.equal(encoding, marked)
  end)

  it("has a count, prototypes per variant, and a manifest sorted by name", function()
    local out = generate({ ["a.lua"] = "gemm { backend = { \"c\", \"cuda\", \"hip\" }, dtype = { \"f32\", \"bf16\" } }\n" })
    local c = H.read(out .. "/kg_table.c")
    assert.is_truthy(c:find("\nconst int kg_variants_count = (int)(sizeof kg_variants / sizeof kg_variants[0]) - 1;\n", 1, true))
    local entries = parse_table(c)
    assert.are.equal(6, #entries)
    local h = H.read(out .. "/kg_table.h")
    for _, e in ipairs(entries) do
      assert.is_truthy(h:find("kg_status " .. e.name .. "(const kg_gemm_args *args, const kg_exec *exec);", 1, true))
      assert.is_truthy(h:find("size_t " .. e.name .. "_workspace(const kg_gemm_args *args);", 1, true))
    end
    local rows = H.lines(H.read(out .. "/MANIFEST.tsv"))
    assert.are.equal("# name\tbackend\tfile\tspec\ttemplate", table.remove(rows, 1))
    assert.are.equal(6, #rows)
    local sorted = {}
    for i, r in ipairs(rows) do sorted[i] = r end
    table.sort(sorted)
    assert.are.same(sorted, rows)
    for _, r in ipairs(rows) do
      local name, backend, file = r:match("^([%w_]+)\t(%w+)\t([%w_/.]+)\t")
      assert.is_truthy(name, r)
      assert.is_truthy(file == backend .. "/" .. name .. ({ c = ".c", cuda = ".cu", hip = ".hip" })[backend], r)
      assert.is_truthy(H.read(out .. "/" .. file), file)
    end
  end)
end)
