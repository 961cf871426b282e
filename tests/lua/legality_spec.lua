-- Legality rules of the GEMM family (gen/families/gemm.lua), called directly.
local H = require("tests.lua.helper")
local gemm = require("families.gemm")

local function legal(partial) return gemm.legal(H.full(gemm, partial)) end

-- legal(partial) fails, blaming axis `at` (nil: the call line), with a message
-- containing every given plain substring.
local function expect_illegal(partial, at, ...)
  local why, axis = legal(partial)
  assert.is_string(why, "expected illegal")
  assert.are.equal(at, axis, "axis at fault for: " .. why)
  for _, s in ipairs({ ... }) do assert.is_truthy(why:find(s, 1, true), "'" .. s .. "' missing in: " .. why) end
  assert.is_truthy(why:find("; allowed: ", 1, true), "no allowed values in: " .. why)
end

describe("gemm legality", function()
  it("accepts the shipped kinds of variant", function()
    for _, p in ipairs({
      { backend = "c", dtype = "f32" },
      { backend = "c", dtype = "bf16", out_dtype = "f32", layout_a = "col", tile = "128x512x256" },
      { backend = "cuda", dtype = "f32" },
      { backend = "hip", kernel = "simt", dtype = "f16", tile = "128x128x8", warps = "2x4", align = 8 },
      { backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "col" },
      { backend = "hip", kernel = "tensorop", dtype = "bf16", layout_a = "col", layout_b = "row",
        tile = "256x128x32", warps = "4x2", stages = 2 },
      { backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "row",
        tile = "64x64x32", warps = "2x2", stages = 2 },
    }) do
      local why = legal(p)
      assert.is_nil(why, why)
    end
  end)

  it("keeps tensorop tiles inside the shared memory of the target", function()
    local why, at = legal({ backend = "hip", kernel = "tensorop", dtype = "bf16", layout_a = "row", layout_b = "row",
      tile = "256x128x32", warps = "4x2", stages = 5 })
    assert.is_truthy(why and why:find("at most 65536 on hip", 1, true), why)
    assert.are.equal("stages", at)
    assert.is_truthy(why:find("allowed: stages = 2 .. 2", 1, true), why)
  end)

  -- The kernels a "does not exist" message allows, as a set.
  local function allowed_kernels(partial)
    local why = legal(partial)
    local set = {}
    for k in assert(why:match("; allowed: ([%w_, ]+)$"), why):gmatch("[%w_]+") do set[k] = true end
    return set
  end

  it("rejects kernels that do not exist on a backend", function()
    expect_illegal({ backend = "cuda", kernel = "blocked", dtype = "f32" }, "kernel",
      "kernel 'blocked' does not exist on backend 'cuda'")
    expect_illegal({ backend = "hip", kernel = "blocked", dtype = "f16" }, "kernel", "on backend 'hip'")
    for _, b in ipairs({ "cuda", "hip" }) do
      local set = allowed_kernels({ backend = b, kernel = "blocked", dtype = "f32" })
      assert.is_true(set.simt and set.tensorop and not set.blocked, b)
    end
    expect_illegal({ backend = "c", kernel = "simt", dtype = "f32" }, "kernel", "allowed: blocked")
    expect_illegal({ backend = "c", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "row" },
      "kernel", "allowed: blocked")
    assert.are.same({ blocked = true }, allowed_kernels({ backend = "c", kernel = "simt", dtype = "f32" }))
  end)

  it("rejects tensorop with f32 inputs", function()
    for _, b in ipairs({ "cuda", "hip" }) do
      expect_illegal({ backend = b, kernel = "tensorop", dtype = "f32", layout_a = "row", layout_b = "row" },
        "dtype", "tensorop needs f16 or bf16", "dtype = f16, bf16")
    end
  end)

  it("rejects tensorop with a free layout of A or B, blaming that axis", function()
    expect_illegal({ backend = "cuda", kernel = "tensorop", dtype = "f16", layout_b = "row" }, "layout_a")
    expect_illegal({ backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row" }, "layout_b")
    -- layout_cd stays free
    assert.is_nil(legal({ backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "row",
      layout_cd = "any" }))
  end)

  it("rejects tensorop without 16-byte vectors", function()
    expect_illegal({ backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "row", align = 4 },
      "align", "align = 8 for f16")
    expect_illegal({ backend = "hip", kernel = "tensorop", dtype = "bf16", layout_a = "row", layout_b = "row", align = 1 },
      "align", "align = 8 for bf16")
  end)

  it("rejects tensorop tiles, warps and stages that do not fit", function()
    local base = { backend = "cuda", kernel = "tensorop", dtype = "f16", layout_a = "row", layout_b = "row" }
    local function with(k, x, k2, x2)
      local p = {}
      for a, b in pairs(base) do p[a] = b end
      p[k] = x
      if k2 then p[k2] = x2 end
      return p
    end
    expect_illegal(with("tile", "64x64x8"), "tile", "K >= 32")
    expect_illegal(with("tile", "64x64x32", "warps", "4x1"), "warps", "tile 64x64x32", "warps = 1x1, 1x2, 2x1, 2x2")
    expect_illegal(with("stages", 1), "stages", "stages >= 2", "allowed: 2, 3, 4, 5")
  end)

  it("takes the ws schedule on CUDA tensorop tiles of whole warpgroups, and sync elsewhere", function()
    local t = { backend = "cuda", kernel = "tensorop", dtype = "bf16", layout_a = "row", layout_b = "col" }
    local function with(extra)
      local p = {}
      for k, x in pairs(t) do p[k] = x end
      for k, x in pairs(extra) do p[k] = x end
      return p
    end
    assert.are.equal("ws", H.full(gemm, t).schedule)
    assert.is_nil(legal(with({ schedule = "ws" })))
    assert.is_nil(legal(with({ tile = "128x256x64", warps = "2x4", stages = 4, schedule = "ws" })))
    -- two warps are no warpgroup: sync by default, ws refused naming the schedule
    assert.are.equal("sync", H.full(gemm, with({ tile = "64x64x32", warps = "2x1" })).schedule)
    expect_illegal(with({ tile = "64x64x32", warps = "2x1", schedule = "ws" }), "schedule", "warpgroups", "schedule = sync")
    -- HIP has no bulk tensor copies; other kernels have no producer
    assert.are.equal("sync", H.full(gemm, with({ backend = "hip", tile = "128x128x32", warps = "2x2" })).schedule)
    expect_illegal(with({ backend = "hip", tile = "128x128x32", warps = "2x2", schedule = "ws" }), "schedule", "CUDA")
    expect_illegal({ backend = "cuda", kernel = "simt", dtype = "f32", schedule = "ws" }, "schedule", "tensorop schedule")
    -- the mbarriers count in the shared memory: 128x256x64 takes 4 stages, not 5
    expect_illegal(with({ tile = "128x256x64", warps = "2x4", stages = 5 }), "stages", "allowed: stages = 2 .. 4")
  end)

  it("limits tiles per SM on GPU backends only", function()
    assert.is_nil(legal({ backend = "cuda", kernel = "tensorop", dtype = "bf16", layout_a = "row", layout_b = "col",
      tile = "64x64x64", warps = "2x2", stages = 6, max_tiles_per_sm = 2 }))
    assert.is_nil(legal({ backend = "hip", kernel = "simt", dtype = "f32", max_tiles_per_sm = 1 }))
    expect_illegal({ backend = "c", dtype = "f32", max_tiles_per_sm = 2 }, "max_tiles_per_sm", "GPU variants",
      "max_tiles_per_sm = 0")
  end)

  it("rejects simt tiles, warps and stages that do not fit", function()
    expect_illegal({ backend = "cuda", dtype = "f32", stages = 2 }, "stages", "single-stage")
    expect_illegal({ backend = "hip", dtype = "f32", tile = "64x64x32" }, "tile", "K = 8")
    expect_illegal({ backend = "cuda", dtype = "f32", tile = "32x32x8", warps = "4x2" }, "warps",
      "tile 32x32x8 does not split into 4x2 warps", "allowed: warps = 1x1, 1x2, 2x1, 2x2")
  end)

  it("rejects blocked tiles, warps and stages that do not fit", function()
    expect_illegal({ backend = "c", dtype = "f32", tile = "128x128x8" }, "tile", "K block of at least 64")
    expect_illegal({ backend = "c", dtype = "f32", warps = "2x2" }, "warps", "allowed: warps = 1x1")
    expect_illegal({ backend = "c", dtype = "f32", stages = 3 }, "stages", "allowed: stages = 1")
  end)

  it("explains every illegal combination with allowed values and a real axis", function()
    local axis_names = {}
    for _, a in ipairs(gemm.axes) do axis_names[a.name] = a end
    local function values(name) return axis_names[name].values end
    local n_legal, n_illegal = 0, 0
    for _, backend in ipairs(values("backend")) do
      for _, kernel in ipairs(values("kernel")) do
        for _, dtype in ipairs(values("dtype")) do
          for _, layouts in ipairs({ { "row", "col" }, { "any", "row" }, { "col", "any" } }) do
            for _, tile in ipairs(values("tile")) do
              for _, warps in ipairs(values("warps")) do
                for _, stages in ipairs(values("stages")) do
                  for _, align in ipairs(values("align")) do
                    local v = H.full(gemm, { backend = backend, kernel = kernel, dtype = dtype, layout_a = layouts[1],
                      layout_b = layouts[2], tile = tile, warps = warps, stages = stages, align = align })
                    local why, at = gemm.legal(v)
                    if why then
                      n_illegal = n_illegal + 1
                      if not why:find("; allowed: ", 1, true) or (at ~= nil and not axis_names[at]) then
                        error("bad explanation for " .. gemm.describe(v) .. ": " .. why .. " [" .. tostring(at) .. "]")
                      end
                    else
                      n_legal = n_legal + 1
                      -- invariants of legal variants
                      assert.is_true((backend == "c") == (kernel == "blocked"))
                      if kernel == "tensorop" then
                        assert.are_not.equal("f32", dtype)
                        assert.are_not.equal("any", v.layout_a)
                        assert.are_not.equal("any", v.layout_b)
                        assert.is_true(stages >= 2)
                      elseif kernel == "skinny" then
                        assert.is_true(stages >= 1 and stages <= 4)   -- K chunks in flight
                      else
                        assert.are.equal(1, stages)
                      end
                      assert.is_string(gemm.name_of(v))
                    end
                  end
                end
              end
            end
          end
        end
      end
    end
    assert.is_true(n_legal > 100 and n_illegal > 1000, n_legal .. " legal, " .. n_illegal .. " illegal")
  end)

  it("describes a combination by all its axes", function()
    local d = gemm.describe(H.full(gemm, { backend = "cuda", kernel = "tensorop", dtype = "f16",
      tile = "128x128x32", warps = "2x2", stages = 3 }))
    assert.are.equal("backend=cuda kernel=tensorop dtype=f16 out_dtype=f16 layout_a=any layout_b=any layout_cd=any "
      .. "tile=128x128x32 warps=2x2 stages=3 schedule=ws align=8 max_tiles_per_sm=0", d)
  end)
end)
