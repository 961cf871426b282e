-- The attention family (families/attention.lua): axes and defaults, legality
-- and its messages (file:line and allowed values), canonical names,
-- descriptors, decode geometry, dispatch order, the dialects' math tables and
-- the shipped specs/attention.lua.
local H = require("tests.lua.helper")
local expand = require("lib.expand")
local attn = require("families.attention")

local FAMILIES = { attention = attn }

-- Expand spec entries given as field tables (one call per table, lines 10, 20, ...).
local function expand_fields(...)
  local entries = {}
  for i, fields in ipairs({ ... }) do
    entries[i] = { family = "attention", fields = fields, file = "specs/t.lua", line = 10 * i, key_lines = {} }
  end
  local errors = {}
  local variants = expand.expand(FAMILIES, entries, errors)
  return variants, errors
end

local function one_error(fields)
  local variants, errors = expand_fields(fields)
  assert.are.equal(0, #variants)
  assert.are.equal(1, #errors, table.concat(errors, "\n"))
  return errors[1]
end

local function descriptor_fields(v)
  local d = require("dialects." .. v.backend)
  local t = {}
  for _, f in ipairs(attn.descriptor(v, d)) do
    local k, x = f:match("^%.([%w_]+) = (.*)$")
    assert.is_truthy(k, f)
    t[k] = x
  end
  return t
end

describe("attention family", function()
  teardown(H.cleanup)

  it("fills defaults: kernel by backend, f32 math, any head dim and no layout off decode", function()
    local variants, errors = expand_fields(
      { backend = "c", op = "math" },
      { backend = "cuda", op = "rope", dtype = "bf16" },
      { backend = "hip", op = "append", dtype = "f16", kv_layout = "hnd" },
      { backend = "cuda", op = "decode", dtype = "bf16", head_dim = 128, kv_layout = "nhd" },
      { backend = "c", op = "merge", dtype = "f32" })
    assert.are.same({}, errors)
    local by = {}
    for _, v in ipairs(variants) do by[v.name] = v end
    local m = by["kg_attn_c_math"]
    assert.is_truthy(m)
    assert.are.same({ "loop", "f32", "any", "none" }, { m.kernel, m.dtype, m.head_dim, m.kv_layout })
    assert.are.equal("simt", by["kg_attn_cuda_rope_bf16"].kernel)
    assert.is_truthy(by["kg_attn_hip_append_f16_hnd"])
    assert.is_truthy(by["kg_attn_cuda_decode_bf16_nhd_d128"])
    assert.is_truthy(by["kg_attn_c_merge_f32"])
  end)

  it("names every distinguishing axis, uniquely", function()
    local variants, errors = expand_fields(
      { backend = { "c", "cuda", "hip" }, op = "decode", dtype = { "f16", "bf16" }, head_dim = { 64, 128, 256 },
        kv_layout = { "nhd", "hnd" } },
      { backend = { "c", "cuda", "hip" }, op = { "rope", "merge" }, dtype = { "f32", "f16", "bf16" } },
      { backend = { "c", "cuda", "hip" }, op = "append", dtype = { "f32", "f16", "bf16" }, kv_layout = { "nhd", "hnd" } },
      { backend = { "c", "cuda", "hip" }, op = "math" })
    assert.are.same({}, errors)
    assert.are.equal(36 + 18 + 18 + 3, #variants)
    local seen = {}
    for _, v in ipairs(variants) do
      assert.is_nil(seen[v.name], v.name)
      seen[v.name] = true
      assert.is_truthy(v.name:find("^kg_attn_" .. v.backend .. "_" .. v.op), v.name)
      if v.op == "decode" then assert.is_truthy(v.name:match("_" .. v.kv_layout .. "_d%d+$"), v.name) end
    end
  end)

  it("rejects illegal combinations naming the file, line and allowed values", function()
    local cases = {
      { { backend = "cuda", kernel = "loop", op = "rope", dtype = "f16" },
        "kernel 'loop' does not exist on backend 'cuda'; allowed: simt" },
      { { backend = "c", kernel = "simt", op = "math" }, "allowed: loop" },
      { { backend = "c", op = "math", dtype = "bf16" }, "allowed: dtype = f32" },
      { { backend = "c", op = "decode", dtype = "f16", kv_layout = "nhd" }, "allowed: head_dim = 64, 128, 256" },
      { { backend = "cuda", op = "decode", dtype = "f32", head_dim = 64, kv_layout = "nhd" },
        "allowed: dtype = f16, bf16" },
      { { backend = "hip", op = "rope", dtype = "f16", head_dim = 128 }, "allowed: head_dim = any" },
      { { backend = "c", op = "append", dtype = "f16" }, "needs axis 'kv_layout'; allowed: nhd, hnd" },
      { { backend = "c", op = "decode", dtype = "f16", head_dim = 64 }, "needs axis 'kv_layout'; allowed: nhd, hnd" },
      { { backend = "c", op = "merge", dtype = "f16", kv_layout = "hnd" }, "allowed: kv_layout = none" },
    }
    for _, c in ipairs(cases) do
      local e = one_error(c[1])
      assert.is_truthy(e:match("^specs/t%.lua:10: error: illegal combination"), e)
      assert.is_truthy(e:find(c[2], 1, true), e .. "\n  wanted: " .. c[2])
    end
    local e = one_error({ backend = "c", op = "prefill", dtype = "f16" })
    assert.is_truthy(e:find("allowed: math, rope, append, decode, merge", 1, true), e)
    e = one_error({ backend = "c", op = "decode", dtype = "f16", head_dim = 96, kv_layout = "nhd" })
    assert.is_truthy(e:find("head_dim = 96 is not allowed; allowed: 64, 128, 256, any", 1, true), e)
    e = one_error({ backend = "c", op = "rope" })
    assert.is_truthy(e:find("rope needs axis 'dtype'; allowed: f32, f16, bf16", 1, true), e)
  end)

  it("reports a spec error at its line through the CLI and writes nothing", function()
    local dir = H.spec_dir({ ["a.lua"] = "attention {\n  backend = \"cuda\",\n  op = \"decode\",\n  dtype = \"f32\",\n"
      .. "  head_dim = 64,\n  kv_layout = \"hnd\",\n}\n" })
    local out = H.tmpdir() .. "/generated"
    local log, rc = H.kgen("--specs " .. H.q(dir) .. " --templates " .. H.q(H.stub_templates()) .. " --out " .. H.q(out))
    assert.are.equal(1, rc, log)
    local errs = H.errors(log)
    assert.are.equal(1, #errs, log)
    assert.are.equal(dir .. "/a.lua", errs[1].path)
    assert.are.equal(4, errs[1].line)   -- the dtype key's line
    assert.is_truthy(errs[1].msg:find("allowed: dtype = f16, bf16", 1, true))
    assert.is_nil(H.read(out .. "/kg_table.c"))
  end)

  it("describes variants for dispatch: op, layout, head dim, decode tiles and planner occupancy", function()
    local variants = expand_fields(
      { backend = "cuda", op = "decode", dtype = "bf16", head_dim = { 128, 256 }, kv_layout = "hnd" },
      { backend = "hip", op = "decode", dtype = "f16", head_dim = 64, kv_layout = "nhd" },
      { backend = "c", op = "decode", dtype = "f32", head_dim = 64, kv_layout = "nhd" },
      { backend = "c", op = "decode", kernel = "wave", dtype = "bf16", head_dim = 64, kv_layout = "nhd" },
      { backend = "c", op = "append", dtype = "f16", kv_layout = "hnd" },
      { backend = "hip", op = "merge", dtype = "bf16" })
    local by = {}
    for _, v in ipairs(variants) do by[v.name] = descriptor_fields(v) end
    local d = by["kg_attn_cuda_decode_bf16_hnd_d128"]
    -- d <= 128 on CUDA: the planner assumes the tensor-core kernel (64-token tiles, 2 stages, 3 blocks per SM)
    assert.are.same({ "KG_OP_DECODE_BATCH", "KG_BACKEND_CUDA", "KG_BF16", "KG_KV_HND", "128", "8", "32", "64", "2", "3", "1" },
      { d.op, d.backend, d.type_ab, d.kv_layout, d.head_dim, d.align, d.tile_m, d.tile_n, d.stages, d.blocks_per_sm,
        d.rope })
    assert.are.equal("kg_attn_cuda_decode_bf16_hnd_d128", d.decode_launch)
    d = by["kg_attn_cuda_decode_bf16_hnd_d256"]
    assert.are.same({ "32", "16", "2" }, { d.tile_m, d.tile_n, d.blocks_per_sm })
    d = by["kg_attn_hip_decode_f16_nhd_d64"]
    assert.are.same({ "64", "32", "2", '"gfx90a"' }, { d.tile_m, d.tile_n, d.stages, d.arch })
    d = by["kg_attn_c_decode_f32_nhd_d64"]
    assert.are.same({ "1", "16", "1", "1" }, { d.align, d.tile_m, d.blocks_per_sm, d.rope })
    -- the emulated-wave decode: no RoPE on the fly, so dispatch refuses it for RoPE calls
    d = by["kg_attn_c_decode_wave_bf16_nhd_d64"]
    assert.are.same({ '"wave"', "0", "kg_attn_c_decode_wave_bf16_nhd_d64" }, { d.kernel, d.rope, d.decode_launch })
    d = by["kg_attn_c_append_f16_hnd"]
    assert.are.same({ "KG_OP_PAGED_KV_APPEND", "KG_KV_HND", "0", "kg_attn_c_append_f16_hnd" },
      { d.op, d.kv_layout, d.head_dim, d.append_launch })
    d = by["kg_attn_hip_merge_bf16"]
    assert.are.same({ "KG_OP_MERGE_STATES", "-1", "kg_attn_hip_merge_bf16" }, { d.op, d.kv_layout, d.merge_launch })
    for _, v in ipairs(variants) do
      local job = ({ decode = "kg_decode_job", append = "kg_append_job", merge = "kg_merge_job" })[v.op]
      assert.are.same({ "kg_status " .. v.name .. "(const " .. job .. " *job, const kg_exec *exec);" }, attn.prototypes(v))
    end
  end)

  it("lays out the GPU decode block: 16-byte vectors, two per thread per stage, whole GQA tiles", function()
    for _, backend in ipairs({ "cuda", "hip" }) do
      for _, D in ipairs({ 64, 128, 256 }) do
        local g = attn.decode_geometry({ backend = backend, head_dim = D })
        assert.are.equal(D / 8, g.CH)
        assert.are.equal(g.NT, g.ROWS * g.CH)
        assert.are.equal(2 * g.NT, g.T * g.CH)            -- two vectors of K (and of V) per thread per stage
        assert.are.equal(g.ROWS * g.HPT, g.GMAX)
        assert.is_true(g.GMAX >= 32)                       -- Llama-style groups (4, 8) and MQA 32 fit one block
        local pipe = math.max(g.STAGES * 2 * g.T * D * 2, g.NT * g.HPT * 10 * 4)
        local lds = pipe + g.T * D * 4 + 512
        assert.is_true(lds <= require("dialects." .. backend).smem_per_sm, backend .. " d" .. D .. ": " .. lds)
      end
    end
  end)

  it("gives every dialect the math table with its lane count", function()
    for name, lanes in pairs({ c = 1, cuda = 32, hip = 64 }) do
      local m = require("dialects." .. name).math
      assert.are.equal(lanes, m.lanes)
      for _, f in ipairs({ "exp2", "log2", "rcp", "rsqrt", "tanh" }) do
        assert.are.equal("kg_math_" .. f .. "(x)", m[f]("x"))
        assert.is_truthy(m.helpers:find("kg_math_" .. f, 1, true), name .. " " .. f)
      end
    end
    local hip = require("dialects.hip").math
    assert.is_truthy(hip.helpers:find("__shfl_xor(v, m, 64)", 1, true))
    assert.is_falsy(hip.helpers:find("0xffffffff", 1, true))
    assert.is_truthy(require("dialects.cuda").math.helpers:find("ex2.approx.ftz.f32", 1, true))
  end)

  it("sorts one (op, backend, dtype) key contiguously", function()
    local variants = expand_fields(
      { backend = { "c", "cuda" }, op = "decode", dtype = { "f16", "bf16" }, head_dim = { 64, 128 },
        kv_layout = { "nhd", "hnd" } },
      { backend = { "c", "hip" }, op = { "rope", "merge" }, dtype = { "f16", "bf16" } })
    table.sort(variants, function(a, b) return attn.sort_key(a) < attn.sort_key(b) end)
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

  it("ships specs/attention.lua: every op on C (f32 too), f16/bf16 on the GPUs, d64/128/256 x NHD/HND", function()
    local out, rc = H.kgen("list")
    assert.are.equal(0, rc, out)
    local set, count = {}, 0
    for _, n in ipairs(H.lines(out)) do
      if n:match("^kg_attn_") then set[n] = true; count = count + 1 end
    end
    -- math, rope + merge, append, decode on C; the C wave decode (f16/bf16); then CUDA and HIP
    assert.are.equal(3 + 3 * 2 + 3 * 2 + 3 * 3 * 2 + 2 * 3 * 2 + 2 * (2 * 2 + 2 * 2 + 2 * 3 * 2), count)
    for _, n in ipairs({
      "kg_attn_c_math", "kg_attn_cuda_math", "kg_attn_hip_math", "kg_attn_c_decode_f32_hnd_d256",
      "kg_attn_cuda_decode_bf16_nhd_d128", "kg_attn_cuda_decode_f16_hnd_d64", "kg_attn_hip_decode_bf16_hnd_d256",
      "kg_attn_c_append_f32_nhd", "kg_attn_cuda_append_bf16_hnd", "kg_attn_c_rope_f32", "kg_attn_hip_merge_f16",
    }) do
      assert.is_true(set[n] == true, n)
    end
    assert.is_nil(set["kg_attn_cuda_decode_f32_nhd_d128"])
    assert.is_true(set["kg_attn_c_decode_wave_bf16_hnd_d128"] == true)
    assert.is_nil(set["kg_attn_c_decode_wave_f32_nhd_d128"])
  end)
end)
