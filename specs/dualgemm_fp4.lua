-- Block-scaled FP4 DualGemm variants shipped by default (MoE / FFN gate-up
-- projection): D2 = op(alpha0*A.W0^T + beta0*C0, alpha1*A.W1^T + beta1*C1)
-- with FP4 weights W0, W1 [N, K] (kg.h). The FFN case first: SwiGLU, D0 and
-- D1 not stored.

-- C backend: both activation types, both formats, every scale layout, SwiGLU
-- and GeGLU; the plain product with every combination of stored D0 / D1.
dualgemm_fp4 {
  backend = "c",
  dtype = { "bf16", "f16" },
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4", "8x4" },
  op = { "swiglu", "geglu" },
}
dualgemm_fp4 {
  backend = "c",
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  op = "mul",
  store_d0 = { false, true },
  store_d1 = { false, true },
}
-- C backend W4A4: 128x4 weight scales, 8x4 activation scales.
dualgemm_fp4 {
  backend = "c",
  dtype = "bf16",
  a_dtype = "fp4",
  format = { "nvfp4", "mxfp4" },
  sf_layout = "128x4", sf_layout_a = "8x4",
  op = { "swiglu", "mul" },
  store_d0 = true, store_d1 = true,
}
dualgemm_fp4 {
  backend = "c",
  dtype = "bf16",
  a_dtype = "fp4",
  format = { "nvfp4", "mxfp4" },
  sf_layout = "128x4", sf_layout_a = "8x4",
  op = "swiglu",
}

-- GPUs, small M (m <= 16, warp kernel: one A load feeds both weights).
dualgemm_fp4 {
  backend = { "cuda", "hip" },
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4" },
  op = "swiglu",
}
dualgemm_fp4 {
  backend = { "cuda", "hip" },
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  op = "geglu",
}
dualgemm_fp4 {
  backend = { "cuda", "hip" },
  dtype = "bf16",
  format = "nvfp4",
  op = "mul",
  store_d0 = true, store_d1 = true,
}
dualgemm_fp4 {
  backend = { "cuda", "hip" },
  dtype = "bf16",
  a_dtype = "fp4",
  format = { "nvfp4", "mxfp4" },
  sf_layout = "128x4", sf_layout_a = "8x4",
  op = "swiglu",
}

-- CUDA, small M (m <= 16), preferred over the warp kernel: the skinny kernel
-- (one A fragment feeds the MMAs of both weights), the warp kernel's W4A16 set.
dualgemm_fp4 {
  backend = "cuda",
  kernel = "skinny",
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4" },
  op = "swiglu",
}
dualgemm_fp4 {
  backend = "cuda",
  kernel = "skinny",
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  op = "geglu",
}
dualgemm_fp4 {
  backend = "cuda",
  kernel = "skinny",
  dtype = "bf16",
  format = "nvfp4",
  op = "mul",
  store_d0 = true, store_d1 = true,
}
-- f16 W4A16 (NVFP4): the skinny kernel and, above its m, the mma kernel.
dualgemm_fp4 {
  backend = "cuda",
  kernel = { "skinny", "mma" },
  dtype = "f16",
  format = "nvfp4",
  op = "swiglu",
}

-- GPUs, any M (mma kernel: one A fragment feeds the MMAs of both weights).
dualgemm_fp4 {
  backend = { "cuda", "hip" },
  kernel = "mma",
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  op = "swiglu",
}
dualgemm_fp4 {
  backend = { "cuda", "hip" },
  kernel = "mma",
  dtype = "bf16",
  format = "nvfp4",
  op = { "geglu", "mul" },
  store_d0 = true, store_d1 = true,
}
dualgemm_fp4 {
  backend = { "cuda", "hip" },
  kernel = "mma",
  dtype = "bf16",
  a_dtype = "fp4",
  format = { "nvfp4", "mxfp4" },
  op = "swiglu",
}

-- CUDA, any M, bf16 W4A16 with 128x4 scales, one problem or batched: the tensorop kernel (wgmma
-- with W0 and W1 decoded into its register operand, one warpgroup each; no workspace), in tiles of
-- 256 and 128 rows of A. Dispatch tries it first, passes it over for small M and picks the tile
-- size, as for the GEMM.
dualgemm_fp4 {
  backend = "cuda",
  kernel = "tensorop",
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  op = "swiglu",
  tile_m = { 256, 128 },
}
dualgemm_fp4 {
  backend = "cuda",
  kernel = "tensorop",
  dtype = "bf16",
  format = "nvfp4",
  op = "geglu",
  tile_m = { 256, 128 },
}
dualgemm_fp4 {
  backend = "cuda",
  kernel = "tensorop",
  dtype = "bf16",
  format = "nvfp4",
  op = "mul",
  store_d0 = true, store_d1 = true,
  tile_m = { 256, 128 },
}
