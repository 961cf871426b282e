-- Spec validation through the CLI: every error kind, with its file:line and the
-- allowed values, all errors of a run together, non-zero exit, nothing written.
local H = require("tests.lua.helper")

-- Run `gen` on a temporary spec directory holding files; returns a result table.
local function run(files, command)
  local dir = H.spec_dir(files)
  local out_dir = H.tmpdir() .. "/out"
  local out, rc = H.kgen(string.format("--specs %s --templates %s --out %s %s",
    H.q(dir), H.q(H.stub_templates()), H.q(out_dir), command or "gen"))
  return { dir = dir, out = out, rc = rc, errors = H.errors(out), out_dir = out_dir }
end

-- The run failed with exactly the given errors: { file, line, plain substrings... } each.
local function expect_errors(r, expected)
  assert.are_not.equal(0, r.rc, "exit status must be non-zero; output:\n" .. r.out)
  assert.are.equal(#expected, #r.errors, "error count; output:\n" .. r.out)
  for i, want in ipairs(expected) do
    local e = r.errors[i]
    assert.are.equal(r.dir .. "/" .. want[1], e.path, "path of error " .. i .. ": " .. e.text)
    assert.are.equal(want[2], e.line, "line of error " .. i .. ": " .. e.text)
    for j = 3, #want do
      assert.is_truthy(e.msg:find(want[j], 1, true), "error " .. i .. " should contain '" .. want[j] .. "': " .. e.text)
    end
  end
  local n = #expected
  assert.is_truthy(r.out:find(string.format("kgen: %d error%s; nothing written", n, n == 1 and "" or "s"), 1, true),
    "summary line; output:\n" .. r.out)
  assert.is_nil(H.read(r.out_dir .. "/kg_table.c"), "nothing may be written on error")
end

-- Validation errors follow PATH:LINE: error: <what>; allowed: <values>
local function expect_allowed_format(r)
  for _, e in ipairs(r.errors) do
    assert.is_truthy(e.text:match("^.-%.lua:%d+: error: .-; allowed: .+$"), "format: " .. e.text)
  end
end

describe("spec validation", function()
  teardown(H.cleanup)

  it("reports an unknown axis key on the key's line, listing the axes", function()
    local r = run({ ["a.lua"] = table.concat({
      "-- one C variant",
      "gemm {",
      "  backend = \"c\",",
      "  dtype = \"f32\",",
      "  tiles = \"64x256x256\",",
      "}",
    }, "\n") })
    expect_errors(r, { { "a.lua", 5, "unknown axis 'tiles' for gemm",
      "; allowed: backend, kernel, dtype, out_dtype, layout_a, layout_b, layout_cd, tile, warps, stages, schedule, align" } })
    expect_allowed_format(r)
  end)

  it("reports a disallowed value on the key's line, listing the allowed values", function()
    local r = run({ ["a.lua"] = table.concat({
      "gemm {",
      "  backend = \"c\",",
      "  dtype = \"f32\",",
      "  layout_a = \"diag\",",
      "}",
      "gemm {",
      "  backend = \"c\",",
      "  dtype = { \"f16\", \"f64\" },",
      "  stages = 7,",
      "}",
      "gemm { backend = \"metal\", dtype = \"f32\" }",
    }, "\n") })
    expect_errors(r, {
      { "a.lua", 4, "layout_a = \"diag\" is not allowed; allowed: row, col, any" },
      { "a.lua", 8, "dtype = \"f64\" is not allowed; allowed: f32, f16, bf16" },
      { "a.lua", 9, "stages = 7 is not allowed; allowed: 1, 2, 3, 4, 5" },
      { "a.lua", 11, "backend = \"metal\" is not allowed; allowed: c, cuda, hip" },
    })
    expect_allowed_format(r)
  end)

  it("reports an empty list as a disallowed value", function()
    local r = run({ ["a.lua"] = "gemm {\n  backend = \"c\",\n  dtype = {},\n}\n" })
    expect_errors(r, { { "a.lua", 3, "axis 'dtype' is an empty list; allowed: f32, f16, bf16" } })
  end)

  it("reports a missing required axis on the line of the call", function()
    local r = run({ ["a.lua"] = table.concat({
      "-- GPU variants",
      "",
      "",
      "gemm {",
      "  kernel = \"simt\",",
      "  backend = \"cuda\",",
      "}",
      "gemm {",
      "  dtype = \"f32\",",
      "}",
    }, "\n") })
    expect_errors(r, {
      { "a.lua", 4, "gemm needs axis 'dtype'; allowed: f32, f16, bf16" },
      { "a.lua", 8, "gemm needs axis 'backend'; allowed: c, cuda, hip" },
    })
    expect_allowed_format(r)
  end)

  it("reports an illegal combination on the line of the axis at fault", function()
    local r = run({ ["a.lua"] = table.concat({
      "gemm {",
      "  backend = \"cuda\",",
      "  kernel = \"tensorop\",",
      "  dtype = \"f32\",",
      "  layout_a = \"row\",",
      "  layout_b = \"col\",",
      "}",
      "gemm {",
      "  backend = \"cuda\",",
      "  dtype = \"f32\",",
      "  kernel = \"blocked\",",
      "}",
      "gemm {",
      "  backend = \"c\",",
      "  kernel = \"simt\",",
      "  dtype = \"f32\",",
      "}",
    }, "\n") })
    expect_errors(r, {
      { "a.lua", 4, "illegal combination", "kernel=tensorop", "dtype=f32",
        "tensorop needs f16 or bf16 inputs; allowed: dtype = f16, bf16" },
      { "a.lua", 11, "illegal combination", "kernel 'blocked' does not exist on backend 'cuda'; allowed: ", "simt",
        "tensorop" },
      { "a.lua", 15, "kernel 'simt' does not exist on backend 'c'; allowed: blocked" },
    })
    expect_allowed_format(r)
  end)

  it("reports an illegal combination caused by a defaulted axis on the call line", function()
    -- layout_a defaults to "any", which tensorop cannot take
    local r = run({ ["a.lua"] = "\ngemm {\n  backend = \"hip\",\n  kernel = \"tensorop\",\n  dtype = \"f16\",\n}\n" })
    expect_errors(r, { { "a.lua", 2, "tensorop fixes the layouts of A and B; allowed: layout_a/layout_b = row, col" } })
  end)

  it("reports one error per illegal expanded combination", function()
    local r = run({ ["a.lua"] = table.concat({
      "gemm {",
      "  backend = { \"cuda\", \"hip\" },",
      "  kernel = \"tensorop\",",
      "  dtype = { \"f32\", \"f16\" },",
      "  layout_a = \"row\", layout_b = \"row\",",
      "}",
    }, "\n") })
    expect_errors(r, {
      { "a.lua", 4, "backend=cuda", "dtype=f32" },
      { "a.lua", 4, "backend=hip", "dtype=f32" },
    })
  end)

  it("reports a duplicate variant name at both declarations", function()
    local r = run({ ["a.lua"] = table.concat({
      "gemm { backend = \"c\", dtype = \"f32\" }",
      "gemm {",
      "  backend = \"c\",",
      "  dtype = { \"f16\", \"f32\" },",
      "}",
    }, "\n") })
    local name = "kg_gemm_c_blocked_f32_xxx_64x256x256_a1"
    expect_errors(r, { { "a.lua", 2, "duplicate variant name '" .. name .. "'",
      "first declared at " .. r.dir .. "/a.lua:1" } })
    expect_allowed_format(r)
  end)

  it("reports a duplicate variant name across two spec files", function()
    local r = run({
      ["a.lua"] = "\n\ngemm { backend = \"hip\", dtype = \"bf16\" }\n",
      ["b.lua"] = "-- same as a.lua:3, spelled out\ngemm { backend = \"hip\", kernel = \"simt\", dtype = \"bf16\", align = 1 }\n",
    })
    expect_errors(r, { { "b.lua", 2, "duplicate variant name 'kg_gemm_hip_simt_bf16_xxx_64x64x8_w2x2_a1'",
      "first declared at " .. r.dir .. "/a.lua:3" } })
  end)

  it("reports a syntax error with its file and line", function()
    local r = run({ ["a.lua"] = table.concat({
      "gemm {",
      "  backend = \"c\",",
      "  dtype = \"f32\"",
      "  layout_a = \"row\",",
      "}",
    }, "\n") })
    expect_errors(r, { { "a.lua", 4, "syntax:" } })
  end)

  it("reports a syntax error at end of file", function()
    local r = run({ ["a.lua"] = "gemm { backend = \"c\", dtype = \"f32\" }\nlocal x = 1 +\n" })
    assert.are.equal(1, #r.errors, r.out)
    assert.is_truthy(r.errors[1].msg:find("syntax:", 1, true), r.out)
    assert.is_true(r.errors[1].line >= 2, r.out)
  end)

  describe("sandbox", function()
    local cases = {
      { "os", "gemm { backend = \"c\", dtype = \"f32\" }\n\nos.exit(1)\n", 3 },
      { "io", "local function f()\n  return io.open(\"/etc/passwd\")\nend\n\nf()\n", 2 },
      { "require", "gemm {\n  backend = \"c\",\n  dtype = \"f32\",\n}\n\nlocal lfs = require(\"lfs\")\n", 6 },
      { "dofile", "dofile(\"x.lua\")\n", 1 },
      { "load", "\nload(\"return 1\")\n", 2 },
    }
    for _, c in ipairs(cases) do
      it("rejects " .. c[1] .. " on the line that uses it", function()
        local r = run({ ["a.lua"] = c[2] })
        expect_errors(r, { { "a.lua", c[3], "unknown name '" .. c[1] .. "'", "sandbox", "; allowed families: gemm" } })
      end)
    end

    it("rejects an unknown family, naming the families", function()
      local r = run({ ["a.lua"] = "\nconv2d { backend = \"c\" }\n" })
      expect_errors(r, { { "a.lua", 2, "unknown name 'conv2d'", "allowed families: gemm" } })
    end)

    it("reports a runtime error in a spec with its line", function()
      local r = run({ ["a.lua"] = "gemm { backend = \"c\", dtype = \"f32\" }\nlocal t = nil\nlocal x = t.field\n" })
      expect_errors(r, { { "a.lua", 3, "attempt to index" } })
    end)

    it("gives specs a copy of string/table/math: patching them does not reach the generator", function()
      local spec = "string.format = function() return \"patched\" end\n"
        .. "table.concat = function() return \"patched\" end\n"
        .. "gemm { backend = \"c\", dtype = \"f32\" }\n"
      local r = run({ ["a.lua"] = spec })
      assert.are.equal(0, r.rc, r.out)
      local tbl = H.read(r.out_dir .. "/kg_table.c")
      assert.is_truthy(tbl:find("kg_gemm_c_blocked_f32_xxx_64x256x256_a1", 1, true))
      assert.is_falsy(tbl:find("patched", 1, true))
    end)
  end)

  it("rejects a non-table argument on the line of the call", function()
    local r = run({ ["a.lua"] = "-- x\ngemm \"c\"\n", ["b.lua"] = "gemm(nil)\n", ["c.lua"] = "\n\ngemm(42)\n" })
    expect_errors(r, {
      { "a.lua", 2, "gemm expects a table of axes; allowed: gemm { axis = value, ... }" },
      { "b.lua", 1, "gemm expects a table of axes" },
      { "c.lua", 3, "gemm expects a table of axes" },
    })
    expect_allowed_format(r)
  end)

  it("reports every error of a run together, across files, in a fixed order", function()
    local r = run({
      ["a.lua"] = table.concat({
        "gemm {",
        "  backend = \"cuda\",",
        "  dtype = \"f64\",",        -- 3: disallowed value
        "  tile = \"1x1x1\",",       -- 4: disallowed value
        "  colour = \"blue\",",      -- 5: unknown axis
        "}",
        "gemm { kernel = \"simt\" }", -- 7: missing backend, missing dtype
      }, "\n"),
      ["b.lua"] = "gemm {\n  backend = \"c\"\n  dtype = \"f32\",\n}\n", -- 3: syntax
      ["c.lua"] = "gemm { backend = \"c\", dtype = \"f32\" }\nio.write(\"x\")\n", -- 2: sandbox
      ["d.lua"] = "gemm { backend = \"c\", dtype = \"f16\" }\n", -- valid: no error of its own
    })
    -- files that fail to load come first (file order), then axis errors (file, call, axis order)
    expect_errors(r, {
      { "b.lua", 3, "syntax:" },
      { "c.lua", 2, "unknown name 'io'" },
      { "a.lua", 5, "unknown axis 'colour'" },
      { "a.lua", 3, "dtype = \"f64\"" },
      { "a.lua", 4, "tile = \"1x1x1\"" },
      { "a.lua", 7, "needs axis 'backend'" },
      { "a.lua", 7, "needs axis 'dtype'" },
    })
    -- the whole output is the error lines plus the summary
    assert.are.equal(8, #H.lines(r.out), r.out)
  end)

  it("fails 'list' and 'explain' too when a spec has an error", function()
    local files = { ["a.lua"] = "gemm { backend = \"c\", dtype = \"f32\", kernal = \"simt\" }\n" }
    local r = run(files, "list")
    expect_errors(r, { { "a.lua", 1, "unknown axis 'kernal'" } })
    r = run(files, "explain kg_gemm_c_blocked_f32_xxx_64x256x256_a1")
    expect_errors(r, { { "a.lua", 1, "unknown axis 'kernal'" } })
  end)

  it("reports an empty spec directory", function()
    local dir = H.tmpdir()
    local out, rc = H.kgen("--specs " .. H.q(dir) .. " --out " .. H.q(H.tmpdir() .. "/o") .. " list")
    assert.are_not.equal(0, rc)
    assert.is_truthy(out:find(dir .. ":1: error: no spec files", 1, true), out)
  end)
end)

describe("spec.load", function()
  local spec = require("lib.spec")
  teardown(H.cleanup)

  local function load(text)
    local dir = H.spec_dir({ ["s.lua"] = text })
    local errors = {}
    local entries = spec.load(dir .. "/s.lua", { "gemm" }, errors)
    return entries, errors, dir .. "/s.lua"
  end

  it("records the call line however the call is spelled", function()
    local entries, errors = load(table.concat({
      "gemm { backend = \"c\", dtype = \"f32\" }", -- 1
      "",
      "gemm",                                         -- 3
      "{",
      "  backend = \"c\",",
      "}",
      "gemm({",                                       -- 7
      "  backend = \"c\",",
      "  dtype = \"f16\",",
      "})",
      "for _, dt in ipairs({ \"f32\", \"bf16\" }) do",
      "  gemm { backend = \"hip\", dtype = dt }",      -- 12 (twice)
      "end",
    }, "\n") .. "\n")
    assert.are.same({}, errors)
    local lines = {}
    for i, e in ipairs(entries) do lines[i] = e.line end
    assert.are.same({ 1, 3, 7, 12, 12 }, lines)
  end)

  it("records the line of each key", function()
    local entries = load(table.concat({
      "gemm {",
      "  backend = \"cuda\", kernel = \"simt\",",
      "  dtype = { \"f32\",",
      "            \"f16\" },",
      "  align = 4,",
      "}",
      "gemm { backend = \"c\", dtype = \"f32\" }",
    }, "\n"))
    assert.are.equal(2, #entries)
    local kl = entries[1].key_lines
    assert.are.same({ 2, 2, 3, 5 }, { kl.backend, kl.kernel, kl.dtype, kl.align })
    assert.are.same({ 7, 7 }, { entries[2].key_lines.backend, entries[2].key_lines.dtype })
  end)

  it("reports a missing spec file", function()
    local errors = {}
    assert.are.same({}, spec.load("/nonexistent/x.lua", { "gemm" }, errors))
    assert.are.same({ "/nonexistent/x.lua:1: error: cannot read spec file" }, errors)
  end)
end)
