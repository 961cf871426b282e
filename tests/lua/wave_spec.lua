-- The wave family (families/wave.lua) and the wave64 vocabulary of the C and
-- HIP dialects: axes and defaults, legality and its messages, spec errors with
-- file:line, canonical names, descriptors, the shipped specs/wave.lua, and the
-- rendered primitives (same rounds and layouts on both dialects).
local H = require("tests.lua.helper")
local expand = require("lib.expand")
local wave = require("families.wave")

local FAMILIES = { wave = wave }

-- Expand spec entries given as field tables (one call per table, lines 10, 20, ...).
local function expand_fields(...)
  local entries = {}
  for i, fields in ipairs({ ... }) do
    entries[i] = { family = "wave", fields = fields, file = "specs/t.lua", line = 10 * i, key_lines = {} }
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

-- Render the wave variants of a spec with the real templates; returns the output directory.
local function render(spec_text)
  local dir = H.spec_dir({ ["w.lua"] = spec_text })
  local out = H.tmpdir() .. "/generated"
  local log, rc = H.kgen("--specs " .. H.q(dir) .. " --out " .. H.q(out))
  assert.are.equal(0, rc, log)
  return out
end

-- The GPU-only words of a text that occur in it.
local function gpu_words(text)
  local found = {}
  for _, w in ipairs({ "__shfl", "__builtin_amdgcn", "__lane_id", "__global__", "__device__", "hipLaunch" }) do
    if text:find(w, 1, true) then found[#found + 1] = w end
  end
  return found
end

-- Masks of the calls matching pattern (one capture: the mask), in order.
local function masks(text, pattern)
  local out = {}
  for m in text:gmatch(pattern) do out[#out + 1] = tonumber(m) end
  return out
end

describe("wave family", function()
  teardown(H.cleanup)

  it("fills defaults: dtype none for the transpose; names kg_wave_<backend>_<op>[_<dtype>]", function()
    local variants, errors = expand_fields(
      { backend = { "c", "hip" }, op = { "mfma16x16x16", "rowsum16" }, dtype = { "f16", "bf16" } },
      { backend = { "c", "hip" }, op = "transpose4x4" })
    assert.are.same({}, errors)
    assert.are.same({
      "kg_wave_c_mfma16x16x16_bf16", "kg_wave_c_mfma16x16x16_f16", "kg_wave_c_rowsum16_bf16",
      "kg_wave_c_rowsum16_f16", "kg_wave_c_transpose4x4", "kg_wave_hip_mfma16x16x16_bf16",
      "kg_wave_hip_mfma16x16x16_f16", "kg_wave_hip_rowsum16_bf16", "kg_wave_hip_rowsum16_f16",
      "kg_wave_hip_transpose4x4",
    }, names(variants))
    for _, v in ipairs(variants) do
      if v.op == "transpose4x4" then assert.are.equal("none", v.dtype) end
      assert.are.equal("wave/test_" .. v.op .. ".kgt", wave.template(v))
    end
  end)

  it("rejects illegal combinations and values with the allowed ones", function()
    local cases = {
      { { backend = "c", op = "mfma16x16x16" }, "mfma16x16x16 needs axis 'dtype'; allowed: f16, bf16" },
      { { backend = "hip", op = "rowsum16", dtype = "none" }, "rowsum16 needs axis 'dtype'; allowed: f16, bf16" },
      { { backend = "c", op = "transpose4x4", dtype = "f16" }, "allowed: dtype = none" },
    }
    for _, c in ipairs(cases) do
      local e = one_error(c[1])
      assert.is_truthy(e:match("^specs/t%.lua:%d+: error: illegal combination"), e)
      assert.is_truthy(e:find(c[2], 1, true), e .. "\n  wanted: " .. c[2])
    end
    local e = one_error({ backend = "cuda", op = "transpose4x4" })
    assert.is_truthy(e:find('backend = "cuda" is not allowed; allowed: c, hip', 1, true), e)
    e = one_error({ backend = "c", op = "transpose8x8" })
    assert.is_truthy(e:find("allowed: mfma16x16x16, transpose4x4, rowsum16", 1, true), e)
    e = one_error({ backend = "c", op = "rowsum16", dtype = "f32" })
    assert.is_truthy(e:find('dtype = "f32" is not allowed; allowed: f16, bf16, none', 1, true), e)
    e = one_error({ op = "rowsum16", dtype = "f16" })
    assert.is_truthy(e:find("wave needs axis 'backend'; allowed: c, hip", 1, true), e)
    e = one_error({ backend = "c", op = "rowsum16", dtype = "f16", lanes = 32 })
    assert.is_truthy(e:find("unknown axis 'lanes' for wave; allowed: backend, op, dtype", 1, true), e)
  end)

  it("reports spec errors as file:line of the key, all of them, and writes nothing", function()
    local dir = H.spec_dir({ ["w.lua"] = table.concat({
      "-- wave primitives",
      "wave {",
      "  backend = \"cuda\",",
      "  op = \"transpose4x4\",",
      "}",
      "wave {",
      "  backend = \"c\",",
      "  op = \"mfma16x16x16\",",
      "}",
    }, "\n") .. "\n" })
    local out_dir = H.tmpdir() .. "/out"
    local out, rc = H.kgen(string.format("--specs %s --templates %s --out %s", H.q(dir), H.q(H.stub_templates()),
      H.q(out_dir)))
    assert.are_not.equal(0, rc, out)
    local errs = H.errors(out)
    assert.are.equal(2, #errs, out)
    assert.are.same({ dir .. "/w.lua", 3 }, { errs[1].path, errs[1].line })
    assert.is_truthy(errs[1].msg:find("; allowed: c, hip", 1, true), errs[1].text)
    assert.are.same({ dir .. "/w.lua", 6 }, { errs[2].path, errs[2].line })
    assert.is_truthy(errs[2].msg:find("mfma16x16x16 needs axis 'dtype'; allowed: f16, bf16", 1, true), errs[2].text)
    assert.is_truthy(out:find("kgen: 2 errors; nothing written", 1, true), out)
    assert.is_nil(H.read(out_dir .. "/kg_table.c"))
  end)

  it("describes each variant for dispatch", function()
    local variants = expand_fields({ backend = { "c", "hip" }, op = "mfma16x16x16", dtype = "bf16" },
      { backend = "hip", op = "transpose4x4" })
    local d = { c = require("dialects.c"), hip = require("dialects.hip") }
    local function fields(v)
      local t = {}
      for _, f in ipairs(wave.descriptor(v, d[v.backend])) do
        local k, x = f:match("^%.([%w_]+) = (.*)$")
        assert.is_truthy(k, f)
        t[k] = x
      end
      return t
    end
    local by = {}
    for _, v in ipairs(variants) do by[v.name] = v end
    assert.are.same({
      op = "KG_OP_WAVE_MFMA16X16X16", backend = "KG_BACKEND_C", arch = '"host"', kernel = '"wave64"',
      type_ab = "KG_BF16", type_cd = "KG_F32", wave_launch = "kg_wave_c_mfma16x16x16_bf16",
    }, fields(by.kg_wave_c_mfma16x16x16_bf16))
    assert.are.same({
      op = "KG_OP_WAVE_TRANSPOSE4X4", backend = "KG_BACKEND_HIP", arch = '"gfx90a"', kernel = '"wave64"',
      type_ab = "KG_F32", type_cd = "KG_F32", wave_launch = "kg_wave_hip_transpose4x4",
    }, fields(by.kg_wave_hip_transpose4x4))
    assert.are.same({ "kg_status kg_wave_hip_transpose4x4(const kg_wave_job *job, const kg_exec *exec);" },
      wave.prototypes(by.kg_wave_hip_transpose4x4))
    -- one (op, backend, dtype) key is contiguous in the table
    table.sort(variants, function(a, b) return wave.sort_key(a) < wave.sort_key(b) end)
    assert.are.same({ "kg_wave_c_mfma16x16x16_bf16", "kg_wave_hip_mfma16x16x16_bf16", "kg_wave_hip_transpose4x4" },
      names(variants))
  end)

  it("ships specs/wave.lua: every primitive on C and HIP, both 16-bit types", function()
    local out, rc = H.kgen("list")
    assert.are.equal(0, rc, out)
    local got = {}
    for _, n in ipairs(H.lines(out)) do if n:match("^kg_wave_") then got[#got + 1] = n end end
    table.sort(got)
    local want = {}
    for _, b in ipairs({ "c", "hip" }) do
      for _, op in ipairs({ "mfma16x16x16", "rowsum16" }) do
        for _, t in ipairs({ "bf16", "f16" }) do want[#want + 1] = "kg_wave_" .. b .. "_" .. op .. "_" .. t end
      end
      want[#want + 1] = "kg_wave_" .. b .. "_transpose4x4"
    end
    table.sort(want)
    assert.are.same(want, got)
  end)
end)

describe("wave64 vocabulary", function()
  teardown(H.cleanup)
  local C, HIP = require("dialects.c").wave, require("dialects.hip").wave

  it("states the CDNA MFMA 16x16x16 register layouts, the same on both dialects", function()
    -- lane t, element i: A[t%16][4(t/16)+i], B[4(t/16)+i][t%16], D[4(t/16)+i][t%16]
    local row16, k4 = "((t) & 15)", "((((t) >> 4) << 2) + (i))"
    for _, W in ipairs({ C, HIP }) do
      assert.are.same({ row16, k4 }, { W.a_rc("t", "i") })
      assert.are.same({ k4, row16 }, { W.b_rc("t", "i") })
      assert.are.same({ k4, row16 }, { W.d_rc("t", "i") })
      assert.are.equal(64, W.size)
    end
    assert.are.same({ C.a_rc("lane", 3) }, { HIP.a_rc("lane", 3) })
    -- the C emulation reads its operands through the same layouts, stated in C
    local pre = C.preamble()
    assert.is_truthy(pre:find("A[t % 16][4 * (t / 16) + i] = ", 1, true), pre)
    assert.is_truthy(pre:find("B[4 * (t / 16) + i][t % 16] = ", 1, true), pre)
    assert.is_truthy(pre:find("D[4 * (t / 16) + i][t % 16] = c[t][i];", 1, true), pre)
    assert.is_truthy(pre:find("d[t][i] = D[4 * (t / 16) + i][t % 16];", 1, true), pre)
  end)

  it("spells registers, regions, shuffles and the MFMA per dialect", function()
    assert.are.equal("uint32_t r[2]", HIP.reg("u32x2", "r"))
    assert.are.equal("uint32_t r[64][2]", C.reg("u32x2", "r"))
    assert.are.equal("kg_wave_b16x4 &a", HIP.param("b16x4", "a"))
    assert.are.equal("uint16_t a[64][4]", C.param("b16x4", "a"))
    assert.are.equal("x", HIP.r("x"))
    assert.are.equal("x[lane]", C.r("x"))
    assert.are.equal("for (int lane = 0; lane < 64; lane++) {", C.lanes_begin)
    assert.is_truthy(HIP.lanes_begin:find("const int lane = (int)__lane_id();", 1, true))
    assert.are.equal("y = __shfl_xor(x, 2, 64);", HIP.shfl_xor("u32", "y", "x", 2))
    assert.are.equal("kg_wave_shfl_xor_f32(y, x, 8);", C.shfl_xor("f32", "y", "x", 8))
    assert.are.equal("d = kg_wave_mfma_bf16(a, b, c);", HIP.mfma("bf16", "d", "a", "b", "c"))
    assert.are.equal("kg_wave_mfma_f16(d, a, b, c);", C.mfma("f16", "d", "a", "b", "c"))
    assert.has_error(function() C.reg("f64", "x") end)
    assert.has_error(function() HIP.mfma("f32", "d", "a", "b", "c") end)
    assert.has_error(function() C.shfl_xor("b16x4", "y", "x", 1) end)
    local hp = HIP.preamble()
    assert.is_truthy(hp:find("__builtin_amdgcn_mfma_f32_16x16x16f16(", 1, true))
    assert.is_truthy(hp:find("__builtin_amdgcn_mfma_f32_16x16x16bf16_1k(", 1, true))
  end)

  it("renders the transpose as three xor rounds (1, 2, 1) on both dialects", function()
    local out = render("wave { backend = { \"c\", \"hip\" }, op = \"transpose4x4\" }\n")
    local hip = H.read(out .. "/hip/kg_wave_hip_transpose4x4.hip")
    local c = H.read(out .. "/c/kg_wave_c_transpose4x4.c")
    assert.are.same({ 1, 2, 1 }, masks(hip, "recv = __shfl_xor%(send, (%d+), 64%);"))
    assert.are.same({ 1, 2, 1 }, masks(c, "kg_wave_shfl_xor_u32%(recv, send, (%d+)%);"))
    -- the 16-bit selects of rounds 1 and 3, on both
    for _, text in ipairs({ hip, c }) do
      local _, n = text:gsub("%(x & 0xffff0000u%) | %(y >> 16%)%) : %(%(x & 0x0000ffffu%) | %(y << 16%)%)", "")
      assert.are.equal(2, n)
    end
    -- the C emulation has no GPU words; HIP has no lane arrays
    assert.are.same({}, gpu_words(c))
    assert.is_nil(hip:find("[lane]", 1, true))
    assert.is_truthy(hip:find("hipLaunchKernelGGL(kg_wave_hip_transpose4x4_kernel, dim3(1), dim3(64), 0, stream, *job);",
      1, true))
  end)

  it("renders the MFMA tile and rowsum with the dialect's matrix-core words", function()
    local out = render("wave { backend = { \"c\", \"hip\" }, op = { \"mfma16x16x16\", \"rowsum16\" },"
      .. " dtype = { \"f16\", \"bf16\" } }\n")
    for _, t in ipairs({ "f16", "bf16" }) do
      local hm = H.read(out .. "/hip/kg_wave_hip_mfma16x16x16_" .. t .. ".hip")
      local cm = H.read(out .. "/c/kg_wave_c_mfma16x16x16_" .. t .. ".c")
      assert.is_truthy(hm:find("acc = kg_wave_mfma_" .. t .. "(a, b, acc);", 1, true))
      assert.is_truthy(cm:find("kg_wave_mfma_" .. t .. "(acc, a, b, acc);", 1, true))
      assert.are.same({}, gpu_words(cm))
      assert.are.same({}, gpu_words(H.read(out .. "/c/kg_wave_c_rowsum16_" .. t .. ".c")))
      local hr = H.read(out .. "/hip/kg_wave_hip_rowsum16_" .. t .. ".hip")
      local cr = H.read(out .. "/c/kg_wave_c_rowsum16_" .. t .. ".c")
      local one = t == "f16" and "0x3c00u" or "0x3f80u"
      assert.is_truthy(hr:find("ones[i] = " .. one, 1, true))
      assert.is_truthy(cr:find("ones[lane][i] = " .. one, 1, true))
      assert.is_truthy(hr:find("d = kg_wave_mfma_" .. t .. "(s, ones, zero);", 1, true))
      assert.is_truthy(cr:find("kg_wave_mfma_" .. t .. "(d, s, ones, zero);", 1, true))
    end
  end)
end)

-- The HIP dialect's tensor-core words (`tc`, used by the MFMA GEMM/DualGemm and
-- FP4 kernels) must place A, B and the accumulator where the wave64 layouts
-- say: those are the layouts the C emulation of the MFMA is tested with. The
-- C expressions are evaluated for every lane (Lua 5.4 shares their integer
-- operators; LuaJIT has no & or >> syntax, so it leaves this to the lua5.4 run).
describe("hip tc vocabulary", function()
  local hip = require("dialects.hip")
  local eval = _VERSION ~= "Lua 5.1" and function(e, env)
    return assert(load("return " .. e, "expr", "t", env))()
  end

  local function coords(code)   -- "(r)|(c)" pairs recorded by addr in element order
    local out = {}
    for r, c in code:gmatch("@%((.-)%)|%((.-)%)@") do out[#out + 1] = { r, c } end
    return out
  end
  local function addr(r, c) return "@(" .. r .. ")|(" .. c .. ")@" end

  it("loads A and B and places accumulators in the wave64 MFMA layouts", function()
    if not eval then pending("LuaJIT: no integer operators to evaluate the C expressions"); return end
    local W, T = hip.wave, hip.tc
    local a = coords(T.load_a("x", false, addr, "0", "0"))
    local b = coords(T.load_b("x", 0, false, addr, "0", "0"))
    assert.are.equal(4, #a)
    assert.are.equal(4, #b)
    for lane = 0, 63 do
      local env = { lane = lane }
      for i = 0, 3 do
        local ar, ac = W.a_rc(lane, i)
        assert.are.same({ eval(ar, {}), eval(ac, {}) }, { eval(a[i + 1][1], env), eval(a[i + 1][2], env) })
        local br, bc = W.b_rc(lane, i)
        assert.are.same({ eval(br, {}), eval(bc, {}) }, { eval(b[i + 1][1], env), eval(b[i + 1][2], env) })
        local dr, dc = W.d_rc(lane, i)
        local er, ec = T.acc_coord(i)
        assert.are.same({ eval(dr, {}), eval(dc, {}) }, { eval(er, env), eval(ec, env) })
      end
    end
  end)
end)
