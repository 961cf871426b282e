-- C dialect: the CPU backend and portable reference path.
-- f16/bf16 values are stored as uint16_t bit patterns and converted with the
-- runtime's kg_half.h helpers; arithmetic is f32.
return {
  name = "c",
  dir = "c",
  ext = ".c",
  arch = "host",
  backend_enum = "KG_BACKEND_C",
  guard = nil,                     -- always compiled
  warp_size = 1,
  includes = { '"kg_internal.h"', '"kg_half.h"', "<string.h>", "<stdlib.h>" },
  extern_c = "",
  static_fn = "static",
  inline_fn = "static inline",
  storage = { f32 = "float", f16 = "uint16_t", bf16 = "uint16_t" },
  to_f32 = { f32 = "%s", f16 = "kg_f16_to_f32(%s)", bf16 = "kg_bf16_to_f32(%s)" },
  from_f32 = { f32 = "%s", f16 = "kg_f32_to_f16(%s)", bf16 = "kg_f32_to_bf16(%s)" },
  restrict = "restrict",
  -- FP4 family vocabulary (templates/fp4): helper qualifier, f32 <-> u32 bit
  -- casts (kg_half.h), loop unrolling hint (none on the C backend)
  fp4 = { fn = "static inline", f32_bits = "kg__f32_bits(%s)", bits_f32 = "kg__bits_f32(%s)", unroll = "" },
}
