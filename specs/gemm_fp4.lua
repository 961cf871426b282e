-- W4A16 block-scaled FP4 GEMM variants shipped by default:
-- D = alpha * A.W^T + beta * C, A f16/bf16 [M, K], W FP4 [N, K] (kg.h).

-- C backend: both activation types, both formats, all three scale layouts.
gemm_fp4 {
  backend = "c",
  dtype = { "bf16", "f16" },
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4", "8x4" },
}

-- GPUs: the small-M (m <= 16) kernel for bf16 activations, both formats,
-- linear and 128x4 (the tensor-core layout) weight scales.
gemm_fp4 {
  backend = { "cuda", "hip" },
  dtype = "bf16",
  format = { "nvfp4", "mxfp4" },
  sf_layout = { "linear", "128x4" },
}
