-- Block-scaled FP4 GEMM variants shipped by default:
-- D = alpha * A.W^T + beta * C, W FP4 [N, K], A f16/bf16 [M, K] (W4A16) or
-- FP4 with its own scales (W4A4, a_dtype = "fp4") (kg.h).

-- C backend: both activation types, both formats, all three scale layouts.
gemm_fp4 {
  backend = "c",
  dtype = { "bf16", "f16" },
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4", "8x4" },
}
-- C backend W4A4: A's scales in the weights' layout, and the small-M
-- activation layout (8x4) next to 128x4 weights.
gemm_fp4 {
  backend = "c",
  dtype = { "bf16", "f16" },
  a_dtype = "fp4",
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4", "8x4" },
}
gemm_fp4 {
  backend = "c",
  dtype = "bf16",
  a_dtype = "fp4",
  format = { "nvfp4", "mxfp4" },
  sf_layout = "128x4", sf_layout_a = "8x4",
}

-- GPUs, small M (m <= 16, warp kernel): bf16 activations, both formats,
-- linear and 128x4 (the tensor-core layout) weight scales; W4A4 with 8x4
-- activation scales.
gemm_fp4 {
  backend = { "cuda", "hip" },
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4" },
}
gemm_fp4 {
  backend = { "cuda", "hip" },
  dtype = "bf16",
  a_dtype = "fp4",
  format = { "nvfp4", "mxfp4" },
  sf_layout = "128x4", sf_layout_a = "8x4",
}

-- CUDA, small and mid M (m <= 512), preferred over the warp kernel: the skinny kernel
-- (weights dequantized in registers into mma.sync fragments), bf16 W4A16, and
-- f16 W4A16 for NVFP4 (whose e2m1 * e4m3 values f16 holds exactly).
gemm_fp4 {
  backend = "cuda",
  kernel = "skinny",
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4" },
}
gemm_fp4 {
  backend = "cuda",
  kernel = "skinny",
  dtype = "f16",
  format = "nvfp4",
  sf_layout = "128x4",
}

-- GPUs, any M (mma kernel: weights dequantized to bf16 tiles, mma.sync /
-- MFMA): the same W4A16 set; W4A4 with 128x4 scales on both operands.
gemm_fp4 {
  backend = { "cuda", "hip" },
  kernel = "mma",
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4" },
}
-- CUDA f16 W4A16 above the skinny kernel's m (NVFP4, dequantized to f16 tiles).
gemm_fp4 {
  backend = "cuda",
  kernel = "mma",
  dtype = "f16",
  format = "nvfp4",
  sf_layout = "128x4",
}
gemm_fp4 {
  backend = { "cuda", "hip" },
  kernel = "mma",
  dtype = "bf16",
  a_dtype = "fp4",
  format = { "nvfp4", "mxfp4" },
  sf_layout = "128x4",
}

-- CUDA, any M, bf16 W4A16 with 128x4 scales: the tensorop kernel (wgmma with the weights decoded
-- into its register operand), tried first by dispatch where its tiles fill the SMs
-- (families/gemm_fp4.lua, F.TENSOROP).
gemm_fp4 {
  backend = "cuda",
  kernel = "tensorop",
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  sf_layout = "128x4",
  tile_m = { 256, 128 },
}
