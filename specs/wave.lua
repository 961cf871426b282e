-- Wave64 primitives (templates/wave): one test kernel per primitive, for the
-- HIP matrix cores (gfx90a, compile-checked) and for the C backend's emulated
-- 64-lane wavefront, which runs the same template code in the Check suites.
-- API: kg_wave_mfma16x16x16, kg_wave_transpose4x4, kg_wave_rowsum16 (kg.h).

-- MFMA 16x16x16 tile multiply-accumulate and rowsum16: f16 and bf16 inputs,
-- f32 accumulate.
wave {
  backend = { "c", "hip" },
  op = { "mfma16x16x16", "rowsum16" },
  dtype = { "f16", "bf16" },
}

-- transpose_4x4_half_registers: moves 16-bit patterns, no element type.
wave {
  backend = { "c", "hip" },
  op = "transpose4x4",
}
