-- C dialect: the CPU backend and portable reference path.
-- f16/bf16 values are stored as uint16_t bit patterns and converted with the
-- runtime's kg_half.h helpers; arithmetic is f32.
local fmt = require("lib.fmt")  -- integers in emitted code: same text under LuaJIT and Lua 5.4

-- Text of an expression given as a string or an integer.
local function expr(x) return type(x) == "number" and fmt.int(x) or x end

-- C type and array suffix of one lane's value of each wave register kind.
local WAVE_KIND = { f32 = { "float", "" }, u32 = { "uint32_t", "" }, u32x2 = { "uint32_t", "[2]" },
                    i64 = { "int64_t", "" }, b16x4 = { "uint16_t", "[4]" }, f32x4 = { "float", "[4]" } }

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
  -- Wave64 vocabulary (templates/wave) on an emulated wavefront: the words of
  -- the HIP dialect's `wave` table (see there), run by one CPU thread. A wave
  -- register is a lane array (`float x[64]`, `uint16_t a[64][4]`), a lane
  -- region is a loop over the 64 lanes, a shuffle reads lane ^ mask of the
  -- whole array at once, and the MFMA reads its operands from the lane arrays
  -- through the hardware register layouts (stated again, independently, in the
  -- emulation below), so a template that fills registers in a wrong layout
  -- computes a wrong product here too.
  wave = {
    size = 64,
    fn = "static inline",
    unroll = "",
    lanes_begin = "for (int lane = 0; lane < 64; lane++) {",
    lanes_end = "}",
    r = function(x) return x .. "[lane]" end,
    reg = function(kind, x)
      local k = WAVE_KIND[kind]
      assert(k, "unknown wave register kind " .. tostring(kind))
      return string.format("%s %s[64]%s", k[1], x, k[2])
    end,
    param = function(kind, x)
      local k = WAVE_KIND[kind]
      assert(k, "unknown wave register kind " .. tostring(kind))
      return string.format("%s %s[64]%s", k[1], x, k[2])
    end,
    shfl_xor = function(kind, dst, src, mask)
      assert(kind == "f32" or kind == "u32", "shfl_xor takes f32 or u32 registers")
      return string.format("kg_wave_shfl_xor_%s(%s, %s, %s);", kind, dst, src, expr(mask))
    end,
    mfma = function(dtype, dst, a, b, c)
      assert(dtype == "f16" or dtype == "bf16", "MFMA 16x16x16 takes f16 or bf16")
      return string.format("kg_wave_mfma_%s(%s, %s, %s, %s);", dtype, dst, a, b, c)
    end,
    -- the 16-bit pattern of f32 x rounded to dtype (f16 or bf16), nearest even
    to16 = function(dtype, x)
      return string.format(({ f16 = "kg_f32_to_f16(%s)", bf16 = "kg_f32_to_bf16(%s)" })[dtype], x)
    end,
    -- the hardware's register layouts (the same expressions as the HIP table's)
    a_rc = function(t, i)
      return string.format("((%s) & 15)", expr(t)), string.format("((((%s) >> 4) << 2) + (%s))", expr(t), expr(i))
    end,
    b_rc = function(t, i)
      return string.format("((((%s) >> 4) << 2) + (%s))", expr(t), expr(i)), string.format("((%s) & 15)", expr(t))
    end,
    d_rc = function(t, i)
      return string.format("((((%s) >> 4) << 2) + (%s))", expr(t), expr(i)), string.format("((%s) & 15)", expr(t))
    end,
    preamble = function()
      return table.concat({
        "/* Wave64 vocabulary on an emulated wavefront: a wave register is an array",
        "** over the 64 lanes. */",
        "/* dst[l] = src[l ^ mask] for every lane l (mask >= 0; a mask of 64 or more",
        "** reads the lane's own value, as HIP's xor shuffle of width 64); dst may be src. */",
        "static inline void kg_wave_shfl_xor_u32(uint32_t dst[64], const uint32_t src[64], int mask) {",
        "  uint32_t t[64];",
        "  for (int l = 0; l < 64; l++) t[l] = ((l ^ mask) & ~63) == 0 ? src[l ^ mask] : src[l];",
        "  memcpy(dst, t, sizeof t);",
        "}",
        "static inline void kg_wave_shfl_xor_f32(float dst[64], const float src[64], int mask) {",
        "  float t[64];",
        "  for (int l = 0; l < 64; l++) t[l] = ((l ^ mask) & ~63) == 0 ? src[l ^ mask] : src[l];",
        "  memcpy(dst, t, sizeof t);",
        "}",
        "/* MFMA 16x16x16 (f32 accumulate) of one wave: D = A.B + C. Lane t's",
        "** registers hold, element i = 0..3 (the CDNA register layouts):",
        "**   a[t][i] = A[t%16][4(t/16)+i]     b[t][i] = B[4(t/16)+i][t%16]",
        "**   c[t][i] = C[4(t/16)+i][t%16]     d[t][i] = D[4(t/16)+i][t%16]",
        "** Each D element is C plus the 16 products in k order, in f32 (products of",
        "** f16 or bf16 values are exact in f32). d may be c. */",
        "static inline void kg_wave__mfma(float d[64][4], uint16_t a[64][4], uint16_t b[64][4], float c[64][4], int bf16) {",
        "  float A[16][16], B[16][16], D[16][16];",
        "  for (int t = 0; t < 64; t++)",
        "    for (int i = 0; i < 4; i++) {",
        "      A[t % 16][4 * (t / 16) + i] = bf16 ? kg_bf16_to_f32(a[t][i]) : kg_f16_to_f32(a[t][i]);",
        "      B[4 * (t / 16) + i][t % 16] = bf16 ? kg_bf16_to_f32(b[t][i]) : kg_f16_to_f32(b[t][i]);",
        "      D[4 * (t / 16) + i][t % 16] = c[t][i];",
        "    }",
        "  for (int m = 0; m < 16; m++)",
        "    for (int n = 0; n < 16; n++) {",
        "      float s = D[m][n];",
        "      for (int k = 0; k < 16; k++) s += A[m][k] * B[k][n];",
        "      D[m][n] = s;",
        "    }",
        "  for (int t = 0; t < 64; t++)",
        "    for (int i = 0; i < 4; i++) d[t][i] = D[4 * (t / 16) + i][t % 16];",
        "}",
        "static inline void kg_wave_mfma_f16(float d[64][4], uint16_t a[64][4], uint16_t b[64][4], float c[64][4]) {",
        "  kg_wave__mfma(d, a, b, c, 0);",
        "}",
        "static inline void kg_wave_mfma_bf16(float d[64][4], uint16_t a[64][4], uint16_t b[64][4], float c[64][4]) {",
        "  kg_wave__mfma(d, a, b, c, 1);",
        "}",
      }, "\n")
    end,
  },
  -- Attention family vocabulary (templates/attn): helper qualifier, loop
  -- unrolling hint, f32 sine and cosine of one angle (statement)
  attn = {
    fn = "static inline",
    unroll = "",
    sincos = function(x, s, c) return string.format("%s = sinf(%s); %s = cosf(%s);", s, x, c, x) end,
  },
}
