-- DualGemm variants shipped by default: D2 = op(alpha0*A.B0 + beta0*C0, alpha1*A.B1 + beta1*C1).
-- The LLM FFN case is the first: gate (B0) and up (B1) projections fused,
-- D2 = silu(A.B0) * (A.B1), D0 and D1 not stored.

-- C backend: layouts at run time (broadcast B1 and batched included).
dualgemm {
  backend = "c",
  dtype = { "f32", "f16", "bf16" },
  op = { "swiglu", "geglu" },
}

-- C backend: the plain product with every combination of stored D0 / D1.
dualgemm {
  backend = "c",
  dtype = { "f32", "f16", "bf16" },
  op = "mul",
  store_d0 = { false, true },
  store_d1 = { false, true },
}

-- GPU tensor cores (f16/bf16, 16-byte aligned operands), the FFN gate/up
-- projection: one A tile per K step feeds both products. B0 column-major
-- ([N, K] weights) or row-major ([K, N]); B1 column-major, which also takes a
-- broadcast vector (ldb1 = 0). Per-family tile defaults (families/dualgemm.lua):
-- CUDA 128x64x64 on 8 warps, 3 stages; HIP 128x64x32 on 4 waves, 3 stages.
dualgemm {
  backend = { "cuda", "hip" },
  kernel = "tensorop",
  dtype = { "bf16", "f16" },
  op = { "swiglu", "geglu" },
  layout_a = "row", layout_b0 = { "col", "row" }, layout_b1 = "col",
}

-- GPU small-M path (m <= 16): gate/up weights stored [N, K] (column-major B0, B1).
-- CUDA: 2 K ranges x 2 column groups of 8 columns, 2 K chunks in flight per
-- warp (H200, bf16 swiglu n=14336 k=4096: 3.96 TB/s at m=1, 3.88 at m=16,
-- 91-93% of the copy ceiling; 16x8 on 2x1 or 4x1 warps reached 3.80-3.94,
-- 4 chunks in flight 3.65-3.78; sweep in bench/results/).
dualgemm {
  backend = "cuda",
  kernel = "skinny",
  dtype = { "f16", "bf16" },
  op = { "swiglu", "geglu" },
  layout_a = "row", layout_b0 = "col", layout_b1 = "col",
  tile = "16x16x8", warps = "2x2", stages = 2,
}
dualgemm {
  backend = "hip",
  kernel = "skinny",
  dtype = { "f16", "bf16" },
  op = { "swiglu", "geglu" },
  layout_a = "row", layout_b0 = "col", layout_b1 = "col",
}

-- GPU generic fallback: any dtype and layout; the plain product also with D0/D1 stored.
dualgemm {
  backend = { "cuda", "hip" },
  kernel = "simt",
  dtype = { "f32", "f16", "bf16" },
  op = { "swiglu", "geglu" },
}
dualgemm {
  backend = { "cuda", "hip" },
  kernel = "simt",
  dtype = { "f32", "bf16" },
  op = "mul",
  store_d0 = { false, true },
  store_d1 = { false, true },
}
