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
  -- Fast math of the attention kernels (templates/attn): libm in f32. The C
  -- backend has no warps (lanes = 1: xor_sum / xor_max of one lane are the
  -- value itself); xor_sum_lanes / xor_max_lanes run the same butterfly over
  -- an array of emulated lanes (the math op's shuffle checks use 32).
  math = {
    lanes = 1,
    emulated_lanes = 32,
    helpers = table.concat({
      "/* Attention math primitives (C): libm in f32. */",
      "#include <math.h>",
      "static inline float kg_math_exp2(float x) { return exp2f(x); }",
      "static inline float kg_math_log2(float x) { return log2f(x); }",
      "static inline float kg_math_rcp(float x) { return 1.0f / x; }",
      "static inline float kg_math_rsqrt(float x) { return 1.0f / sqrtf(x); }",
      "static inline float kg_math_tanh(float x) { return tanhf(x); }",
      "/* butterfly over lanes v[0 .. n) in aligned groups of width (a power of two): after",
      "** round m lane l holds op(v[l], v[l ^ m]), as xor shuffles compute it on a GPU */",
      "static inline void kg_math_xor_sum_lanes(float *v, int n, int width) {",
      "  for (int m = width >> 1; m > 0; m >>= 1)",
      "    for (int l = 0; l < n; l++)",
      "      if ((l & m) == 0) { const float a = v[l], b = v[l ^ m]; v[l] = a + b; v[l ^ m] = b + a; }",
      "}",
      "static inline void kg_math_xor_max_lanes(float *v, int n, int width) {",
      "  for (int m = width >> 1; m > 0; m >>= 1)",
      "    for (int l = 0; l < n; l++)",
      "      if ((l & m) == 0) { const float a = v[l], b = v[l ^ m]; v[l] = fmaxf(a, b); v[l ^ m] = fmaxf(b, a); }",
      "}",
    }, "\n"),
    exp2 = function(x) return "kg_math_exp2(" .. x .. ")" end,
    log2 = function(x) return "kg_math_log2(" .. x .. ")" end,
    rcp = function(x) return "kg_math_rcp(" .. x .. ")" end,
    rsqrt = function(x) return "kg_math_rsqrt(" .. x .. ")" end,
    tanh = function(x) return "kg_math_tanh(" .. x .. ")" end,
    xor_sum = function(v, _) return v end,
    xor_max = function(v, _) return v end,
    xor_sum_lanes = function(arr, n, width) return string.format("kg_math_xor_sum_lanes(%s, %s, %s)", arr, n, width) end,
    xor_max_lanes = function(arr, n, width) return string.format("kg_math_xor_max_lanes(%s, %s, %s)", arr, n, width) end,
  },
  -- FP4 family vocabulary (templates/fp4): helper qualifier, f32 <-> u32 bit
  -- casts (kg_half.h), loop unrolling hint (none on the C backend)
  fp4 = { fn = "static inline", f32_bits = "kg__f32_bits(%s)", bits_f32 = "kg__bits_f32(%s)", unroll = "" },
  -- Attention family vocabulary (templates/attn): helper qualifier, loop
  -- unrolling hint, f32 sine and cosine of one angle (statement)
  attn = {
    fn = "static inline",
    unroll = "",
    sincos = function(x, s, c) return string.format("%s = sinf(%s); %s = cosf(%s);", s, x, c, x) end,
  },
}
