-- DualGemm family (gen/families/dualgemm.lua): tensorop tile defaults of its
-- own, and legality that counts two B tiles and two accumulator sets.
local H = require("tests.lua.helper")
local dual = require("families.dualgemm")
local gemm = require("families.gemm")

local function dual_tensorop(backend, extra)
  local p = { backend = backend, kernel = "tensorop", dtype = "bf16", layout_a = "row", layout_b0 = "col",
              layout_b1 = "col" }
  for k, x in pairs(extra or {}) do p[k] = x end
  return H.full(dual, p)
end

describe("dualgemm tensorop", function()
  it("has legal tile defaults of its own and leaves GEMM's alone", function()
    local c = dual_tensorop("cuda")
    assert.are.same({ "128x64x64", "4x2", 3, "ws" }, { c.tile, c.warps, c.stages, c.schedule })
    assert.is_nil(dual.legal(c))
    local h = dual_tensorop("hip")
    assert.are.same({ "128x64x32", "2x2", 3, "sync" }, { h.tile, h.warps, h.stages, h.schedule })
    assert.is_nil(dual.legal(h))
    local g = H.full(gemm, { backend = "cuda", kernel = "tensorop", dtype = "bf16", layout_a = "row", layout_b = "col" })
    assert.are.same({ "128x128x64", "2x4", 4, "ws" }, { g.tile, g.warps, g.stages, g.schedule })
    local s = H.full(dual, { backend = "cuda", dtype = "f32" })
    assert.are.same({ "simt", "64x64x8", "2x2", 1 }, { s.kernel, s.tile, s.warps, s.stages })
  end)

  it("counts the accumulators of both products", function()
    -- 128x128x64 on 2x2 warps: 128 accumulators per thread for GEMM, 256 for DualGemm
    assert.is_nil(gemm.legal(H.full(gemm, { backend = "cuda", kernel = "tensorop", dtype = "bf16", layout_a = "row",
      layout_b = "col", tile = "128x128x64", warps = "2x2" })))
    local why, at = dual.legal(dual_tensorop("cuda", { tile = "128x128x64", warps = "2x2" }))
    assert.is_string(why)
    assert.are.equal("warps", at)
    assert.is_truthy(why:find("256 accumulators", 1, true), why)
    assert.is_truthy(why:find("allowed: warps = 2x4, 4x2", 1, true), why)
  end)

  it("counts the B tiles of both products in shared memory", function()
    -- HIP 128x128x32 x 3 stages: 49 KB for GEMM, 73 KB for DualGemm (64 KB of LDS)
    assert.is_nil(gemm.legal(H.full(gemm, { backend = "hip", kernel = "tensorop", dtype = "bf16", layout_a = "row",
      layout_b = "col", tile = "128x128x32", warps = "2x2", stages = 3 })))
    local why, at = dual.legal(dual_tensorop("hip", { tile = "128x128x32", warps = "2x2", stages = 3 }))
    assert.is_string(why)
    assert.are.equal("stages", at)
    assert.is_truthy(why:find("allowed: stages = 2 .. 2", 1, true), why)
  end)
end)

describe("dualgemm skinny", function()
  local function dual_skinny(extra)
    local p = { backend = "cuda", kernel = "skinny", dtype = "bf16", layout_a = "row", layout_b0 = "col",
                layout_b1 = "col" }
    for k, x in pairs(extra or {}) do p[k] = x end
    return H.full(dual, p)
  end

  it("takes stages as the K chunks in flight, named in the variant", function()
    local v = dual_skinny({ tile = "16x16x8", warps = "2x2", stages = 2 })
    assert.is_nil(dual.legal(v))
    assert.are.equal("kg_dualgemm_cuda_skinny_bf16_swiglu_rccx_d2_16x16x8_w2x2_s2_a8", dual.name_of(v))
    assert.are.equal(4, dual_skinny().stages)
  end)

  it("bounds the fragments in flight by both products' B tiles", function()
    -- 16x32 on 2x2 warps: J = 2 tiles per product; 2 x 2 B + 2 A = 6 fragments per chunk
    assert.is_nil(gemm.legal(H.full(gemm, { backend = "cuda", kernel = "skinny", dtype = "bf16", layout_a = "row",
      layout_b = "col", tile = "16x32x8", warps = "2x2", stages = 4 })))
    local why, at = dual.legal(dual_skinny({ tile = "16x32x8", warps = "2x2", stages = 3 }))
    assert.is_string(why)
    assert.are.equal("stages", at)
    assert.is_truthy(why:find("allowed: stages = 1 .. 2", 1, true), why)
  end)
end)
