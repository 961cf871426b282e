-- Block-scaled FP4 (NVFP4, MXFP4) variants shipped by default: quantize,
-- dequantize and the scale-factor layout conversions. Lists expand to the
-- cartesian product; see kg.h's FP4 section for the numerics and layouts.

-- C backend (CPU path and reference): every input type, both formats, all
-- three scale layouts, every MXFP4 scale rule.
fp4 {
  backend = "c",
  op = "quantize",
  format = "nvfp4",
  dtype = { "f32", "f16", "bf16" },
  sf_layout = { "linear", "128x4", "8x4" },
}
fp4 {
  backend = "c",
  op = "quantize",
  format = "mxfp4",
  dtype = { "f32", "f16", "bf16" },
  sf_layout = { "linear", "128x4", "8x4" },
  scale_round = { "up", "down", "ocp" },
}
fp4 {
  backend = "c",
  op = "dequantize",
  format = { "nvfp4", "mxfp4" },
  dtype = { "f32", "f16", "bf16" },
  sf_layout = { "linear", "128x4", "8x4" },
}

-- GPUs: bf16 and f16 activations / weights, both formats (MXFP4 with the
-- default round-up scale rule), all three scale layouts.
fp4 {
  backend = { "cuda", "hip" },
  op = { "quantize", "dequantize" },
  format = { "nvfp4", "mxfp4" },
  dtype = { "f16", "bf16" },
  sf_layout = { "linear", "128x4", "8x4" },
}

-- Scale-buffer conversions between linear and the swizzled layouts, and the
-- reswizzle of row shards, on every backend.
fp4 {
  backend = { "c", "cuda", "hip" },
  op = { "swizzle", "unswizzle", "reswizzle" },
  sf_layout = { "128x4", "8x4" },
}
