-- Decode attention variants shipped by default (FlashInfer style): what a
-- Llama-style server needs. Lists expand to the cartesian product; see kg.h's
-- "Decode attention" section for the numerics and layouts.

-- The math primitives the kernels use (kg_math_eval), on every backend.
attention {
  backend = { "c", "cuda", "hip" },
  op = "math",
}

-- C backend (CPU path and reference): every element type.
attention {
  backend = "c",
  op = { "rope", "merge" },
  dtype = { "f32", "f16", "bf16" },
}
attention {
  backend = "c",
  op = "append",
  dtype = { "f32", "f16", "bf16" },
  kv_layout = { "nhd", "hnd" },
}
attention {
  backend = "c",
  op = "decode",
  dtype = { "f32", "f16", "bf16" },
  head_dim = { 64, 128, 256 },
  kv_layout = { "nhd", "hnd" },
}

-- GPUs: bf16 and f16 activations and caches.
attention {
  backend = { "cuda", "hip" },
  op = { "rope", "merge" },
  dtype = { "f16", "bf16" },
}
attention {
  backend = { "cuda", "hip" },
  op = "append",
  dtype = { "f16", "bf16" },
  kv_layout = { "nhd", "hnd" },
}
attention {
  backend = { "cuda", "hip" },
  op = "decode",
  dtype = { "f16", "bf16" },
  head_dim = { 64, 128, 256 },
  kv_layout = { "nhd", "hnd" },
}

-- The HIP matrix-core decode (its launcher's path without RoPE) on the C
-- dialect's emulated wavefront: the Check suites run it by name (never chosen
-- by dispatch), which tests that code without an AMD GPU.
attention {
  backend = "c",
  op = "decode",
  kernel = "wave",
  dtype = { "f16", "bf16" },
  head_dim = { 64, 128, 256 },
  kv_layout = { "nhd", "hnd" },
}
