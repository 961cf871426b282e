-- GEMM family: D = alpha * A.B + beta * C (f32 accumulation).
-- Kernels: blocked (C backend: packed, cache-blocked loops), simt (GPU, any
-- dtype, any layout, no alignment needs: the generic fallback) and tensorop
-- (GPU tensor cores for f16/bf16: CUDA mma.sync + cp.async pipeline, HIP MFMA).
local fmt = require("lib.fmt")

local F = { name = "gemm" }

local KERNELS = { c = { blocked = true }, cuda = { simt = true, tensorop = true, skinny = true },
                  hip = { simt = true, tensorop = true, skinny = true } }

local DEFAULT_TILE = { blocked = "64x256x256", simt = "64x64x8", tensorop = "128x128x32", skinny = "16x32x8" }
local DEFAULT_WARPS = { blocked = "1x1", simt = "2x2", tensorop = "2x2", skinny = "2x4" }
-- CUDA tensorop: 128x128x64 block tiles on 8 MMA warps (two warpgroups of
-- m64n128 wgmma) behind a producer warpgroup that issues the TMA copies (the
-- ws schedule), 4 stages (129 KB of shared memory, one block per SM).
-- Measured on H200 (bench_gemm, bench/results/2026-12-02_h200_*_tensorop-ws.txt):
-- 4096^3 0.82x cuBLAS and 8192^3 0.87x, against 0.76x / 0.81x for the sync
-- schedule with 3 stages and two blocks per SM, and 0.68x / 0.82x for
-- 128x256x64 ws x 4 stages. The sync schedule stays the default where ws
-- does not apply (HIP: kernel defaults above, 64 KB of LDS on gfx90a).
local DEFAULT_TENSOROP = { cuda = { tile = "128x128x64", warps = "2x4", stages = 4, schedule = "ws" } }
-- Skinny: 32-column blocks on warps "4x2" = 4 K ranges x 2 column groups that
-- share A through L1 (H200, bf16 m=16 n=14336 k=4096: 3.21 TB/s, against
-- 2.82-2.99 for 16x16 4x2, 16x16 8x1, 16x32 2x4 and 16x8 8x1).
local DEFAULT_SKINNY = { cuda = { tile = "16x32x8", warps = "4x2", stages = 4 }, hip = { tile = "16x32x8", warps = "4x2", stages = 4 } }
local SKINNY_COLS = { cuda = 8, hip = 16 }
local function default_of(v, axis, generic)
  local per = (v.kernel == "tensorop" and DEFAULT_TENSOROP[v.backend]) or (v.kernel == "skinny" and DEFAULT_SKINNY[v.backend])
  if per and per[axis] then return per[axis] end
  return generic
end
-- Threads per warp (wave) by backend, for legality checks.
local WARP = { c = 1, cuda = 32, hip = 64 }
-- Shared memory a CUDA block may use (sm_90a opt-in limit).
local SMEM_LIMIT = { cuda = 232448, hip = 65536 }  -- bytes per block: sm_90a opt-in maximum, gfx90a LDS

F.axes = {
  { name = "backend", values = { "c", "cuda", "hip" } },
  { name = "kernel", values = { "blocked", "simt", "tensorop", "skinny" },
    default = function(v) return v.backend == "c" and "blocked" or "simt" end },
  { name = "dtype", values = { "f32", "f16", "bf16" } },
  { name = "out_dtype", values = { "f32", "f16", "bf16" }, default = function(v) return v.dtype end },
  { name = "layout_a", values = { "row", "col", "any" }, default = "any" },
  { name = "layout_b", values = { "row", "col", "any" }, default = "any" },
  { name = "layout_cd", values = { "row", "col", "any" }, default = "any" },
  { name = "tile", values = { "32x32x8", "64x64x8", "128x64x8", "64x128x8", "128x128x8",
                              "64x64x32", "128x64x32", "64x128x32", "128x128x32", "128x256x32", "256x128x32",
                              "64x64x64", "128x64x64", "64x128x64", "128x128x64", "128x256x64", "256x128x64",
                              "16x8x8", "16x16x8", "16x32x8", "16x64x8",
                              "64x256x256", "96x256x256", "128x512x256" },
    default = function(v) return default_of(v, "tile", DEFAULT_TILE[v.kernel]) end },
  { name = "warps", values = { "1x1", "1x2", "2x1", "2x2", "1x4", "4x1", "2x4", "4x2", "8x1" },
    default = function(v) return default_of(v, "warps", DEFAULT_WARPS[v.kernel]) end },
  { name = "stages", values = { 1, 2, 3, 4, 5, 6, 8 },
    default = function(v) return default_of(v, "stages", v.kernel == "tensorop" and 3 or 1) end },  -- skinny: K chunks in flight
  -- tensorop on CUDA: "ws" adds a producer warpgroup that only issues the bulk tensor copies
  -- (full/empty mbarriers per stage), so the MMA warpgroups never wait on a block barrier
  { name = "schedule", values = { "sync", "ws" },
    default = function(v) return F.ws_fits(v) and default_of(v, "schedule", "sync") or "sync" end },
  { name = "align", values = { 1, 2, 4, 8 },
    default = function(v) return (v.kernel == "tensorop" or v.kernel == "skinny") and 8 or 1 end },
  -- GPU: the variant takes a problem only while its tiles (of the variant's size, times the
  -- batches or K slices) number at most this many per SM of the device; 0: any problem.
  -- Dispatch tries such variants first: a small tile for the problems that would leave the
  -- SMs of a large one idle (bf16 m = 128, n = 4096: 32 tiles of 128x128 on 132 SMs).
  { name = "max_tiles_per_sm", values = { 0, 1, 2, 4 }, default = 0 },
}

local function dims(s)
  local a, b, c = s:match("^(%d+)x(%d+)x?(%d*)$")
  return tonumber(a), tonumber(b), tonumber(c)
end
F.dims = dims

-- Whether the ws schedule can run variant v's tile: CUDA tensorop, warpgroups of whole
-- m64 blocks (the warps a multiple of 4, splitting M into 64-row blocks).
function F.ws_fits(v)
  local tm = dims(v.tile)
  local wm, wn = dims(v.warps)
  return v.backend == "cuda" and v.kernel == "tensorop" and (wm * wn) % 4 == 0 and tm % (16 * wm * wn) == 0
end

local SIZE = { f32 = 4, f16 = 2, bf16 = 2 }
local SKINNY_TILES = { ["16x8x8"] = true, ["16x16x8"] = true, ["16x32x8"] = true, ["16x64x8"] = true }
local WARPS_VALUES = {}
for _, axis in ipairs(F.axes) do if axis.name == "warps" then WARPS_VALUES = axis.values end end

-- The warps values that split a tm x tn tile into warp tiles of at least min x min.
local function warps_for(tm, tn, min)
  local ok = {}
  for _, axis in ipairs(F.axes) do
    if axis.name == "warps" then
      for _, w in ipairs(axis.values) do
        local wm, wn = dims(w)
        if tm % (wm * min) == 0 and tn % (wn * min) == 0 then ok[#ok + 1] = w end
      end
    end
  end
  return #ok > 0 and table.concat(ok, ", ") or "none (pick a larger tile)"
end

function F.legal(v)
  if v.max_tiles_per_sm > 0 and v.backend == "c" then
    return "max_tiles_per_sm limits GPU variants by the device's SMs, the C backend has none; allowed: max_tiles_per_sm = 0",
      "max_tiles_per_sm"
  end
  if v.schedule == "ws" and v.kernel ~= "tensorop" then
    return "the ws schedule is a tensorop schedule; allowed: schedule = sync", "schedule"
  end
  if not KERNELS[v.backend][v.kernel] then
    local allowed = {}
    for _, k in ipairs(fmt.sorted_keys(KERNELS[v.backend])) do allowed[#allowed + 1] = k end
    return string.format("kernel '%s' does not exist on backend '%s'; allowed: %s",
      v.kernel, v.backend, table.concat(allowed, ", ")), "kernel"
  end
  local tm, tn, tk = dims(v.tile)
  local wm, wn = dims(v.warps)
  if v.kernel == "skinny" then
    if v.dtype == "f32" then return "skinny needs f16 or bf16 inputs; allowed: dtype = f16, bf16", "dtype" end
    if v.layout_a ~= "row" or v.layout_b ~= "col" then
      return "skinny reads row-major A and column-major B ([N, K] weights); allowed: layout_a = row, layout_b = col", "layout_b"
    end
    if v.align * SIZE[v.dtype] ~= 16 then return "skinny loads 16-byte vectors; allowed: align = 8", "align" end
    if not SKINNY_TILES[v.tile] or tn % (SKINNY_COLS[v.backend] * wn) ~= 0 then
      return string.format("skinny tiles are 16 rows x a multiple of %d columns (MMA width x WN) on %s; allowed: %s",
        SKINNY_COLS[v.backend] * wn, v.backend, v.backend == "hip" and "16x16x8, 16x32x8, 16x64x8" or "16x8x8, 16x16x8, 16x32x8, 16x64x8"), "tile"
    end
    -- stages = K chunks in flight per warp; each holds (nb x J B + 2 A) 16-byte fragments
    -- per lane in registers, at most 16 in all
    local per = (v.nb or 1) * math.floor(tn / (wn * SKINNY_COLS[v.backend])) + 2
    if v.stages > 4 or v.stages * per > 16 then
      return string.format("skinny tile %s on %s warps loads %d 16-byte fragments per lane and K chunk in flight "
        .. "(at most 16 in all, 4 chunks); allowed: stages = 1 .. %d", v.tile, v.warps, per, math.min(4, math.floor(16 / per))), "stages"
    end
  elseif v.kernel == "blocked" then
    if v.warps ~= "1x1" then return "blocked kernels are single-threaded; allowed: warps = 1x1", "warps" end
    if v.stages ~= 1 then return "blocked kernels are single-stage; allowed: stages = 1", "stages" end
    if tk < 64 then return "blocked tiles need a K block of at least 64; allowed: 64x256x256, 96x256x256, 128x512x256", "tile" end
  elseif v.kernel == "simt" then
    if v.stages ~= 1 then return "simt kernels are single-stage; allowed: stages = 1", "stages" end
    if tk ~= 8 then return "simt tiles have K = 8; allowed: 32x32x8, 64x64x8, 128x64x8, 64x128x8, 128x128x8", "tile" end
    if tm % (wm * 16) ~= 0 or tn % (wn * 16) ~= 0 then
      return string.format("tile %s does not split into %s warps of 16x16 or more; allowed: warps = %s",
        v.tile, v.warps, warps_for(tm, tn, 16)), "warps"
    end
  else -- tensorop
    local nb = v.nb or 1   -- B operands, accumulators per output element (DualGemm: 2)
    if v.dtype == "f32" then return "tensorop needs f16 or bf16 inputs; allowed: dtype = f16, bf16 (f32 uses simt)", "dtype" end
    if v.layout_a == "any" or v.layout_b == "any" then
      return "tensorop fixes the layouts of A and B; allowed: layout_a/layout_b = row, col",
        v.layout_a == "any" and "layout_a" or "layout_b"
    end
    if v.align * SIZE[v.dtype] ~= 16 then
      return string.format("tensorop loads 16-byte vectors; allowed: align = %d for %s", math.floor(16 / SIZE[v.dtype]), v.dtype), "align"
    end
    if (tk ~= 32 and tk ~= 64) or tm > 256 or tn > 256 then
      return "tensorop tiles need K >= 32 (K = 32 or 64, M and N at most 256); allowed: "
        .. "64x64x32, 128x128x32, 128x256x32, 256x128x32, 128x128x64, 128x256x64, 256x128x64, ...", "tile"
    end
    if tm % (wm * 32) ~= 0 or tn % (wn * 32) ~= 0 then
      return string.format("tile %s does not split into %s warps of 32x32 or more; allowed: warps = %s",
        v.tile, v.warps, warps_for(tm, tn, 32)), "warps"
    end
    -- f32 accumulators per thread: the warp tile over the warp size, per product
    local function accs(w)
      local a, b = dims(w)
      return nb * math.floor(math.floor(tm / a) * math.floor(tn / b) / WARP[v.backend])
    end
    if accs(v.warps) > 128 then
      local ok = {}
      for _, w in ipairs(WARPS_VALUES) do
        local a, b = dims(w)
        if tm % (a * 32) == 0 and tn % (b * 32) == 0 and accs(w) <= 128 then ok[#ok + 1] = w end
      end
      return string.format("tile %s on %s warps needs %d accumulators per thread (at most 128); allowed: warps = %s",
        v.tile, v.warps, accs(v.warps), #ok > 0 and table.concat(ok, ", ") or "none (pick a smaller tile)"), "warps"
    end
    if v.stages < 2 then return "tensorop pipelines need stages >= 2; allowed: 2, 3, 4, 5, 6, 8", "stages" end
    if v.schedule == "ws" and not F.ws_fits(v) then
      return "the ws schedule needs CUDA and warpgroups of m64 blocks (warps a multiple of 4 splitting M "
        .. "into 64-row blocks, e.g. tile 128x128x64 on 2x4 warps); allowed: schedule = sync", "schedule"
    end
    -- + alignment of the swizzled tiles and the mbarriers (ws: two per stage)
    local smem = v.stages * (tm + nb * tn) * tk * SIZE[v.dtype] + 1024 + 16 * v.stages
    local limit = SMEM_LIMIT[v.backend]
    if smem > limit then
      return string.format("tile %s with %d stages needs %d bytes of shared memory (at most %d on %s); "
        .. "allowed: stages = 2 .. %d", v.tile, v.stages, smem, limit, v.backend,
        math.floor((limit - 1024) / ((tm + nb * tn) * tk * SIZE[v.dtype] + 16))), "stages"
    end
  end
  return nil
end

-- Kernels whose A/B layouts are compile-time (no "any").
function F.fixes_layouts(kernel) return kernel == "tensorop" or kernel == "skinny" end

local LETTER = { row = "r", col = "c", any = "x" }

-- Short axis summary for error messages about one expanded combination.
function F.describe(v)
  local parts = {}
  for _, axis in ipairs(F.axes) do
    local x = v[axis.name]
    parts[#parts + 1] = axis.name .. "=" .. (type(x) == "string" and x or fmt.int(x))
  end
  return table.concat(parts, " ")
end

function F.name_of(v)
  local parts = { "kg_gemm", v.backend, v.kernel, v.dtype == v.out_dtype and v.dtype or (v.dtype .. "to" .. v.out_dtype),
    LETTER[v.layout_a] .. LETTER[v.layout_b] .. LETTER[v.layout_cd], v.tile }
  if v.kernel ~= "blocked" then parts[#parts + 1] = "w" .. v.warps end
  if v.kernel == "tensorop" or v.kernel == "skinny" then parts[#parts + 1] = "s" .. fmt.int(v.stages) end
  if v.schedule == "ws" then parts[#parts + 1] = "ws" end
  if v.max_tiles_per_sm > 0 then parts[#parts + 1] = "tps" .. fmt.int(v.max_tiles_per_sm) end
  parts[#parts + 1] = "a" .. fmt.int(v.align)
  return table.concat(parts, "_")
end

function F.template(v)
  return "gemm/" .. v.kernel .. ".kgt"
end

-- Dispatch order inside one key: higher rank first; of one kernel, the variants for small
-- problems (max_tiles_per_sm) before the others.
function F.rank(v)
  local r = ({ blocked = 0, simt = 100, tensorop = 200, skinny = 300 })[v.kernel]
  for _, l in ipairs({ v.layout_a, v.layout_b, v.layout_cd }) do if l ~= "any" then r = r + 10 end end
  if v.max_tiles_per_sm > 0 then r = r + 50 end
  return r + v.align
end

local DTYPE_ENUM = { f32 = "KG_F32", f16 = "KG_F16", bf16 = "KG_BF16" }
local LAYOUT_ENUM = { row = "KG_ROW", col = "KG_COL", any = "KG_LAYOUT_ANY" }
F.LAYOUT_ENUM = LAYOUT_ENUM

-- Sort key groups variants sharing (backend, types) and orders them by rank.
function F.sort_key(v)
  return string.format("%s|%s|%s|%s|%04d|%s", v.family, v.backend, v.dtype, v.out_dtype, 9999 - F.rank(v), v.name)
end

-- The schedule of a tensorop tile (templates/gemm/tensorop.kgt): warpgroup MMAs where the dialect
-- has them and the tile splits into warpgroups of m64 blocks (sync: prefetch distance STAGES-2
-- needs STAGES >= 3; ws: STAGES-1), fed by bulk tensor copies where the dialect has those too.
-- Returns use_wg, tma (booleans).
function F.schedule(v, d)
  if v.kernel ~= "tensorop" or not d.wgmma then return false, false end
  local tm, tn = dims(v.tile)
  local wm, wn = dims(v.warps)
  local ct = wm * wn * d.warp_size   -- MMA threads (the ws producer warpgroup not counted)
  local g = math.floor(ct / (4 * d.warp_size))
  local use_wg = ct % (4 * d.warp_size) == 0 and tm % (g * d.wgmma.m) == 0 and tn % 8 == 0 and tn <= 256
    and v.stages >= (v.schedule == "ws" and 2 or 3)
  return use_wg, use_wg and d.tma ~= nil
end

-- Descriptor fields (C initializer lines) for generated/kg_table.c.
function F.descriptor(v, d)
  local tm, tn, tk = dims(v.tile)
  local _, tma = F.schedule(v, d)
  return {
    ".op = KG_OP_GEMM", ".backend = " .. d.backend_enum, '.arch = "' .. d.arch .. '"',
    '.kernel = "' .. v.kernel .. '"',
    ".type_ab = " .. DTYPE_ENUM[v.dtype], ".type_cd = " .. DTYPE_ENUM[v.out_dtype],
    ".layout_a = " .. LAYOUT_ENUM[v.layout_a], ".layout_b = " .. LAYOUT_ENUM[v.layout_b],
    ".layout_cd = " .. LAYOUT_ENUM[v.layout_cd],
    v.kernel == "skinny" and ".modes = KG_MODE_BIT(KG_MODE_GEMM) | KG_MODE_BIT(KG_MODE_BATCHED)" or ".modes = KG_MODES_ALL",
    ".max_m = " .. fmt.int(v.kernel == "skinny" and tm or 0), ".max_tiles_per_sm = " .. fmt.int(v.max_tiles_per_sm),
    ".align = " .. fmt.int(v.align),
    ".tile_m = " .. fmt.int(tm), ".tile_n = " .. fmt.int(tn), ".tile_k = " .. fmt.int(tk),
    ".stages = " .. fmt.int(v.stages), ".tma = " .. (tma and "1" or "0"),
    ".gemm_launch = " .. v.name, ".gemm_workspace = " .. v.name .. "_workspace",
  }
end

-- Prototypes the variant exports (for kg_table.h).
function F.prototypes(v)
  return {
    "kg_status " .. v.name .. "(const kg_gemm_args *args, const kg_exec *exec);",
    "size_t " .. v.name .. "_workspace(const kg_gemm_args *args);",
  }
end

-- Values the templates read besides v and d.
function F.prepare(v, d, env)
  local tm, tn, tk = dims(v.tile)
  local wm, wn = dims(v.warps)
  env.TM, env.TN, env.TK, env.WM, env.WN = tm, tn, tk, wm, wn
  env.STAGES = v.stages
  env.WSCHED = v.schedule == "ws"
  env.USE_WG, env.TMA = F.schedule(v, d)
  -- ws: one producer warpgroup ahead of the wm x wn MMA warps
  env.THREADS = wm * wn * d.warp_size + (env.WSCHED and 4 * d.warp_size or 0)
  env.TA, env.TC = d.storage[v.dtype], d.storage[v.out_dtype]
  env.load_a = function(x) return string.format(d.to_f32[v.dtype], x) end
  env.load_c = function(x) return string.format(d.to_f32[v.out_dtype], x) end
  env.store_d = function(x) return string.format(d.from_f32[v.out_dtype], x) end
  env.LAYOUT_ENUM = LAYOUT_ENUM
  env.NB, env.DUAL = 1, false   -- number of B operands (DualGemm: 2)
  env.ARGS_T = "kg_gemm_args"
  -- One entry per product: its B operand, C input, D output and scalars, by
  -- their names in the args struct. layout_cd is shared by every C and D.
  env.PRODUCTS = { { b = "b", layout_b = v.layout_b, c = "c", d = "d", alpha = "alpha", beta = "beta", store = true } }
end

return F
