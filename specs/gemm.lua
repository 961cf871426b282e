-- GEMM variants shipped by default: D = alpha * A.B + beta * C.
-- Every list expands to one variant per value (cartesian product).

-- C backend: one packed, cache-blocked kernel per dtype; layouts and modes at run time.
gemm {
  backend = "c",
  dtype = { "f32", "f16", "bf16" },
}

-- C backend fast path: all row-major f32 with 16-byte aligned rows.
gemm {
  backend = "c",
  dtype = "f32",
  layout_a = "row", layout_b = "row", layout_cd = "row",
  align = 4,
}

-- GPU tensor cores (f16/bf16, 16-byte aligned operands), every layout of A and
-- B: row-major A with B row-major (NN) or column-major (NT, i.e. [N, K]
-- weights), and column-major A (transposed activations, e.g. weight gradients).
-- Defaults: CUDA 128x128x64 tiles on 8 warps (two wgmma warpgroups fed by TMA),
-- 3 stages; HIP 128x128x32, 2x2 waves, 3 stages (gen/families/gemm.lua).
gemm {
  backend = { "cuda", "hip" },
  kernel = "tensorop",
  dtype = { "f16", "bf16" },
  layout_a = { "row", "col" },
  layout_b = { "row", "col" },
}

-- CUDA problems too small to fill the SMs with those tiles (bf16 m = 128, n = 4096: 32 of
-- 128x128 on 132 SMs): 64x64 tiles, two blocks per SM, for problems of at most two such tiles
-- per SM; dispatch tries them first (H200, m = 128: n = 4096, k = 4096 0.80x cuBLAS against
-- 0.53x; k = 14336 0.76x against 0.51x; bench/results/2026-12-02_h200_62bfb48_small-tiles.txt).
gemm {
  backend = "cuda",
  kernel = "tensorop",
  dtype = { "f16", "bf16" },
  layout_a = "row",
  layout_b = { "row", "col" },
  tile = "64x64x64", warps = "2x2", stages = 6,
  max_tiles_per_sm = 2,
}

-- GPU generic fallback: any dtype, any layout, any alignment.
gemm {
  backend = { "cuda", "hip" },
  kernel = "simt",
  dtype = { "f32", "f16", "bf16" },
}

-- GPU small-M path (m <= 16): memory-bound, reads each [N, K] weight byte once.
gemm {
  backend = { "cuda", "hip" },
  kernel = "skinny",
  dtype = { "f16", "bf16" },
  layout_a = "row",
  layout_b = "col",
}
