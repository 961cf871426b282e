-- amax (max |x| per batch group, f32) on every backend and input type: the
-- input of kg_nvfp4_global_scale before an NVFP4 quantize (kg.h).
amax {
  backend = { "c", "cuda", "hip" },
  dtype = { "f32", "f16", "bf16" },
}
