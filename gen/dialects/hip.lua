-- HIP dialect (target gfx90a, CDNA: 64-lane wavefronts).
local fmt = require("lib.fmt")  -- integers in emitted code: same text under LuaJIT and Lua 5.4

-- Text of an expression given as a string or an integer.
local function expr(x) return type(x) == "number" and fmt.int(x) or x end

return {
  name = "hip",
  dir = "hip",
  ext = ".hip",
  arch = "gfx90a",
  backend_enum = "KG_BACKEND_HIP",
  guard = "KG_WITH_HIP",
  api = "hip",
  stream_t = "hipStream_t",
  error_t = "hipError_t",
  success = "hipSuccess",
  warp_size = 64,
  smem_per_sm = 65536,             -- LDS of one CU (bytes)
  smem_reserved = 0,
  includes = { "<hip/hip_runtime.h>", "<hip/hip_fp16.h>", "<hip/hip_bfloat16.h>", "<stdint.h>", '"kg_internal.h"' },
  extern_c = 'extern "C"',
  static_fn = "static",
  kernel = "__global__",
  device_fn = "static __device__ __forceinline__",
  shared = "__shared__",
  -- SMs (compute units) of the current device, 0 when unknown (runtime, cached)
  sm_count = "kg__hip_sm_count()",
  -- resident blocks of kernel per SM at threads threads and smem bytes of dynamic
  -- shared memory, into int n (expression of type error_t)
  occupancy = function(n, kernel, threads, smem)
    return string.format("hipOccupancyMaxActiveBlocksPerMultiprocessor(&%s, %s, %s, %s)", n, kernel, threads, smem)
  end,
  restrict = "__restrict__",
  barrier = "__syncthreads()",
  storage = { f32 = "float", f16 = "__half", bf16 = "hip_bfloat16" },
  to_f32 = { f32 = "%s", f16 = "__half2float(%s)", bf16 = "static_cast<float>(%s)" },
  from_f32 = { f32 = "%s", f16 = "__float2half_rn(%s)", bf16 = "hip_bfloat16(%s)" },
  -- HIP shuffles take no member mask; width is the full wavefront
  shfl_xor = function(v, mask) return string.format("__shfl_xor(%s, %s, 64)", v, mask) end,
  shfl_idx = function(v, src) return string.format("__shfl(%s, %s, 64)", v, src) end,
  -- Fast math of the attention kernels (templates/attn), as the CUDA table
  -- (same contracts) on CDNA: exp2f (v_exp_f32 with range scaling), __log2f
  -- (v_log_f32), the rcp / rsq builtins; tanh from those. Wave64: xor_sum /
  -- xor_max shuffle with width 64, so groups of up to 64 lanes.
  math = {
    lanes = 64,
    helpers = table.concat({
      "/* Attention math primitives (HIP, CDNA): hardware approximations. */",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_exp2(float x) { return exp2f(x); }",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_log2(float x) { return __log2f(x); }",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_rcp(float x) { return __builtin_amdgcn_rcpf(x); }",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_rsqrt(float x) { return __builtin_amdgcn_rsqf(x); }",
      "/* tanh: x (1 - x^2/3 + 2x^4/15 - 17x^6/315) below |x| = 0.125, else",
      "** sign(x) (1 - 2 / (2^(2 |x| log2 e) + 1)); NaN stays NaN. */",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_tanh(float x) {",
      "  const float a = fabsf(x);",
      "  float r;",
      "  if (a < 0.125f) {",
      "    const float x2 = a * a;",
      "    r = a * (1.0f + x2 * (-0.333333333f + x2 * (0.133333333f + x2 * -0.0539682540f)));",
      "  } else {",
      "    r = 1.0f - 2.0f * kg_math_rcp(kg_math_exp2(2.88539008f * a) + 1.0f);",
      "  }",
      "  return copysignf(r, x);",
      "}",
      "/* width is a constant where the kernels call these (the loops unroll after inlining) */",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_xor_sum(float v, int width) {",
      "  for (int m = width >> 1; m > 0; m >>= 1) v += __shfl_xor(v, m, 64);",
      "  return v;",
      "}",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_xor_max(float v, int width) {",
      "  for (int m = width >> 1; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor(v, m, 64));",
      "  return v;",
      "}",
    }, "\n"),
    exp2 = function(x) return "kg_math_exp2(" .. x .. ")" end,
    log2 = function(x) return "kg_math_log2(" .. x .. ")" end,
    rcp = function(x) return "kg_math_rcp(" .. x .. ")" end,
    rsqrt = function(x) return "kg_math_rsqrt(" .. x .. ")" end,
    tanh = function(x) return "kg_math_tanh(" .. x .. ")" end,
    xor_sum = function(v, width) return string.format("kg_math_xor_sum(%s, %s)", v, width) end,
    xor_max = function(v, width) return string.format("kg_math_xor_max(%s, %s)", v, width) end,
  },
  launch = function(kernel, grid, block, smem, stream, args)
    return string.format("hipLaunchKernelGGL(%s, %s, %s, %s, %s, %s);", kernel, grid, block, smem, stream, args)
  end,
  set_smem_limit = function(kernel, bytes)
    return string.format("hipFuncSetAttribute((const void *)%s, hipFuncAttributeMaxDynamicSharedMemorySize, %s)", kernel, bytes)
  end,
  -- launch bounds: HIP's second argument means something else; threads only
  launch_bounds = function(threads, _) return string.format("__launch_bounds__(%d)", threads) end,
  -- dynamic shared memory (LDS): one 128-byte aligned byte array (declaration, no ';')
  dyn_smem = function(name) return "extern __shared__ __attribute__((aligned(128))) unsigned char " .. name .. "[]" end,
  -- CDNA has no cp.async: a 16-byte copy through registers that reads only
  -- `bytes` (0..16) bytes and zero-fills the rest; commit/wait are no-ops
  -- (the barrier after the wait orders the LDS stores)
  async_copy16 = function(dst, src, bytes) return string.format("kg_copy16(%s, %s, %s)", dst, src, bytes) end,
  async_commit = "(void)0",
  async_wait = function(_) return "(void)0" end,
  -- Wave-level matrix core: one atom is MFMA 16x16x16 (f32 accumulate), wave64.
  -- Register layouts (lane t): A[t%16][4(t/16)..+3], B[4(t/16)..+3][t%16],
  -- D element i at [4(t/16)+i][t%16]. Loaders take logical coordinates and the
  -- template's addr(r, c) pointer function, like the CUDA table.
  tc = {
    m = 16, n = 16, k = 16,
    b_group = 1,
    acc_pairs = false,
    preamble = function(dtype)
      local elem = ({ f16 = "_Float16", bf16 = "short" })[dtype]
      local builtin = ({ f16 = "__builtin_amdgcn_mfma_f32_16x16x16f16",
                         bf16 = "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k" })[dtype]
      assert(elem, "matrix cores take f16 or bf16")
      return table.concat({
        "/* Matrix-core vocabulary: MFMA 16x16x16 on wave64, LDS fragments. */",
        "typedef " .. elem .. " kg_elem;   /* 16-bit element as the MFMA builtin takes it */",
        "typedef kg_elem kg_frag_a __attribute__((ext_vector_type(4)));",
        "typedef kg_elem kg_frag_b __attribute__((ext_vector_type(4)));",
        "typedef float kg_acc __attribute__((ext_vector_type(4)));",
        "static __device__ __forceinline__ void kg_mma(kg_acc &c, const kg_frag_a &a, const kg_frag_b &b) {",
        "  c = " .. builtin .. "(a, b, c, 0, 0, 0);",
        "}",
        "static __device__ __forceinline__ void kg_copy16(void *s, const void *g, int bytes) {",
        "  if (bytes == 16) { *(uint4 *)s = *(const uint4 *)g; return; }",
        "  const unsigned short *gs = (const unsigned short *)g;",
        "  unsigned short *ss = (unsigned short *)s;",
        "#pragma unroll",
        "  for (int i = 0; i < 8; i++) ss[i] = 2 * i < bytes ? gs[i] : (unsigned short)0;",
        "}",
      }, "\n")
    end,
    -- A atom (m16 x k16) at logical (m0, k0): 4 consecutive k of row m
    load_a = function(dst, kmajor, addr, m0, k0)
      local m, k = string.format("(%s) + (lane & 15)", m0), string.format("(%s) + ((lane >> 4) << 2)", k0)
      if kmajor then return string.format("%s = *(const kg_frag_a *)(%s);", dst, addr(m, k)) end
      local parts = {}
      for j = 0, 3 do
        parts[#parts + 1] = string.format("%s[%d] = *(const kg_elem *)(%s);", dst, j, addr(m, k .. " + " .. j))
      end
      return table.concat(parts, " ")
    end,
    -- B atom j (k16 x n16) at logical (k0, n0): 4 consecutive k of column n
    load_b = function(arr, j, kmajor, addr, k0, n0)
      local dst = string.format("%s[%s]", arr, j)
      local k, n = string.format("(%s) + ((lane >> 4) << 2)", k0), string.format("(%s) + (lane & 15)", n0)
      if kmajor then return string.format("%s = *(const kg_frag_b *)(%s);", dst, addr(k, n)) end
      local parts = {}
      for i = 0, 3 do
        parts[#parts + 1] = string.format("%s[%d] = *(const kg_elem *)(%s);", dst, i, addr(k .. " + " .. i, n))
      end
      return table.concat(parts, " ")
    end,
    acc_coord = function(e) return string.format("((lane >> 4) << 2) + %d", e), "(lane & 15)" end,
    acc_count = 4,
  },
  -- Skinny (small-M) matrix-core vocabulary: one 16-row block of A times MFMA
  -- tiles of 16 columns from 16-byte global loads. In a 32-wide K chunk lane
  -- (i = lane%16, q = lane/16) loads k = 8q..8q+7 of A row i and B column i;
  -- MFMA s takes physical k 8q+4s..8q+4s+3 as its logical 4q..4q+3.
  skinny = {
    cols = 16,
    acc_count = 4,
    a_rows = function(lane) return { "(" .. lane .. " & 15)" } end,
    b_col = function(lane) return "(" .. lane .. " & 15)" end,
    k_off = function(lane) return "((" .. lane .. " >> 4) << 3)" end,
    acc_row = function(lane, e) return string.format("(((%s >> 4) << 2) + %s)", lane, e) end,
    acc_col = function(lane, _) return string.format("(%s & 15)", lane) end,
    preamble = function(dtype)
      local elem = ({ f16 = "_Float16", bf16 = "short" })[dtype]
      local builtin = ({ f16 = "__builtin_amdgcn_mfma_f32_16x16x16f16",
                         bf16 = "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k" })[dtype]
      assert(elem, "matrix cores take f16 or bf16")
      return table.concat({
        "typedef " .. elem .. " kg_sk_elem __attribute__((ext_vector_type(4)));",
        "typedef float kg_sk_acc __attribute__((ext_vector_type(4)));",
        "/* c += A(16 rows x 32 k) . B(32 k x 16 columns) in the skinny k permutation. */",
        "static __device__ __forceinline__ void kg_skinny_mma(float (&c)[4], const uint4 (&a)[1], const uint4 &b) {",
        "  kg_sk_acc acc = {c[0], c[1], c[2], c[3]};",
        "  const kg_sk_elem *av = reinterpret_cast<const kg_sk_elem *>(&a[0]);",
        "  const kg_sk_elem *bv = reinterpret_cast<const kg_sk_elem *>(&b);",
        "  acc = " .. builtin .. "(av[0], bv[0], acc, 0, 0, 0);",
        "  acc = " .. builtin .. "(av[1], bv[1], acc, 0, 0, 0);",
        "  c[0] = acc[0]; c[1] = acc[1]; c[2] = acc[2]; c[3] = acc[3];",
        "}",
      }, "\n")
    end,
    mma = function(acc, a, b) return string.format("kg_skinny_mma(%s, %s, %s)", acc, a, b) end,
    load_stream = function(ptr) return string.format("*(const uint4 *)(%s)", ptr) end,
    load_once = function(ptr) return string.format("*(const uint4 *)(%s)", ptr) end,
    load_helpers = "",
  },
  -- FP4 family vocabulary (templates/fp4): helper qualifier, f32 <-> u32 bit
  -- casts, loop unrolling hint. GPU dequantize (templates/fp4/dequantize_gpu.kgt):
  -- dq_helpers defines kg_fp4_dec8(w, f), the 8 E2M1 codes of w (code j in
  -- bits 4j..4j+3) as f32 with the bits of kg_e2m1_dec(code j) (fp4/common.kgt,
  -- emitted before it), and the functions pack2 names; pack2[dtype](lo, hi): a
  -- u32 of two 16-bit values, lo in bits 0..15, each rounded as from_f32 rounds;
  -- store16(ptr, w0, w1, w2, w3): one 16-byte store of four u32 words (w0 at
  -- the lowest address) to a 16-byte aligned global address.
  fp4 = { fn = "[[maybe_unused]] static __device__ __forceinline__", f32_bits = "__float_as_uint(%s)",
          bits_f32 = "__uint_as_float(%s)", unroll = "#pragma unroll",
          dq_helpers = table.concat({
            "/* The 8 E2M1 codes of w (code j in bits 4j..4j+3) as f32: f[j] = kg_e2m1_dec(code j). */",
            "[[maybe_unused]] static __device__ __forceinline__ void kg_fp4_dec8(uint32_t w, float (&f)[8]) {",
            "#pragma unroll",
            "  for (int j = 0; j < 8; j++) f[j] = kg_e2m1_dec((w >> (4 * j)) & 15u);",
            "}",
            "/* lo, hi converted as from_f32 converts (__float2half_rn, hip_bfloat16(float)) and packed:",
            "** lo in bits 0..15, hi in bits 16..31. */",
            "[[maybe_unused]] static __device__ __forceinline__ uint32_t kg_fp4_pack_f16(float lo, float hi) {",
            "  return (uint32_t)__half_as_ushort(__float2half_rn(lo)) | ((uint32_t)__half_as_ushort(__float2half_rn(hi)) << 16);",
            "}",
            "[[maybe_unused]] static __device__ __forceinline__ uint32_t kg_fp4_pack_bf16(float lo, float hi) {",
            "  return (uint32_t)hip_bfloat16(lo).data | ((uint32_t)hip_bfloat16(hi).data << 16);",
            "}",
          }, "\n"),
          pack2 = { f16 = "kg_fp4_pack_f16(%s, %s)", bf16 = "kg_fp4_pack_bf16(%s, %s)" },
          store16 = "*(uint4 *)(%s) = make_uint4(%s, %s, %s, %s)" },
  -- FP4 quantizer for 16-bit inputs (templates/fp4/quantize_gpu.kgt), the
  -- CUDA table's contracts: kg_fp4q_absmax2 as a packed unsigned max of the
  -- magnitude bits (v_pk_max_u16; a NaN's magnitude is above Inf's, so it
  -- wins), any(p) over the wavefront, byte_perm, f16_f32, cold_fn.
  fp4q = {
    helpers = function(dtype)
      assert(dtype == "f16" or dtype == "bf16", "the FP4 quantizer's packed helpers take f16 or bf16")
      return table.concat({
        "typedef unsigned short kg_fp4q_u16x2 __attribute__((ext_vector_type(2)));",
        "static __device__ __forceinline__ uint32_t kg_fp4q_absmax2(uint32_t a, uint32_t b) {",
        "  const kg_fp4q_u16x2 m = __builtin_elementwise_max(__builtin_bit_cast(kg_fp4q_u16x2, a & 0x7fff7fffu),",
        "                                                    __builtin_bit_cast(kg_fp4q_u16x2, b & 0x7fff7fffu));",
        "  return __builtin_bit_cast(uint32_t, m);",
        "}",
      }, "\n")
    end,
    any = function(p) return string.format("__any(%s)", p) end,
    byte_perm = function(x, y, s) return string.format("__byte_perm(%s, %s, %s)", x, y, s) end,
    f16_f32 = function(h) return string.format("__half2float(__ushort_as_half((unsigned short)(%s)))", h) end,
    -- qualifier of helpers kept out of line (rarely taken paths)
    cold_fn = "static __device__ __attribute__((noinline))",
  },
  -- Wave64 vocabulary (templates/wave): code of one 64-lane wavefront written
  -- once for this dialect and the C dialect's emulated wave. Per-lane code sits
  -- in lane regions (lanes_begin .. lanes_end; `lane` is the lane id 0..63
  -- there, r(x) is this lane's value of wave register x); wave-wide operations
  -- (shfl_xor, mfma) are statements between regions, which every lane of the
  -- wave reaches together. Regions hold no collective operation and no return.
  -- Register kinds: f32, u32, i64 (one value per lane), u32x2 (two 32-bit
  -- registers), b16x4 (four 16-bit patterns: an MFMA A or B operand), f32x4
  -- (an MFMA C/D operand). Elements of the x2/x4 kinds are r(x)[i].
  wave = {
    size = 64,
    -- helper qualifier; loop unrolling hint
    fn = "[[maybe_unused]] static __device__ __forceinline__",
    unroll = "#pragma unroll",
    lanes_begin = "{ [[maybe_unused]] const int lane = (int)__lane_id();",
    lanes_end = "}",
    r = function(x) return x end,
    -- declaration of wave register x (no ';'); parameter declaration (by reference)
    reg = function(kind, x)
      local t = ({ f32 = "float %s", u32 = "uint32_t %s", u32x2 = "uint32_t %s[2]", i64 = "int64_t %s",
                   b16x4 = "kg_wave_b16x4 %s", f32x4 = "kg_wave_f32x4 %s" })[kind]
      assert(t, "unknown wave register kind " .. tostring(kind))
      return string.format(t, x)
    end,
    param = function(kind, x)
      local t = ({ f32 = "float &%s", u32 = "uint32_t &%s", u32x2 = "uint32_t (&%s)[2]", i64 = "int64_t &%s",
                   b16x4 = "kg_wave_b16x4 &%s", f32x4 = "kg_wave_f32x4 &%s" })[kind]
      assert(t, "unknown wave register kind " .. tostring(kind))
      return string.format(t, x)
    end,
    -- dst = src of lane (lane ^ mask), for every lane (kind f32 or u32); dst may be src
    shfl_xor = function(kind, dst, src, mask)
      assert(kind == "f32" or kind == "u32", "shfl_xor takes f32 or u32 registers")
      return string.format("%s = __shfl_xor(%s, %s, 64);", dst, src, expr(mask))
    end,
    -- MFMA 16x16x16 (dtype f16 or bf16 -> f32): d = a.b + c; d may be c
    mfma = function(dtype, dst, a, b, c)
      assert(dtype == "f16" or dtype == "bf16", "MFMA 16x16x16 takes f16 or bf16")
      return string.format("%s = kg_wave_mfma_%s(%s, %s, %s);", dst, dtype, a, b, c)
    end,
    -- the 16-bit pattern of f32 x rounded to dtype (f16 or bf16), nearest even
    to16 = function(dtype, x)
      return string.format(({ f16 = "__half_as_ushort(__float2half_rn(%s))", bf16 = "hip_bfloat16(%s).data" })[dtype], x)
    end,
    -- Register layouts of MFMA 16x16x16 (row, column expressions of lane t's
    -- element i): A[t%16][4(t/16)+i], B[4(t/16)+i][t%16], C/D[4(t/16)+i][t%16].
    a_rc = function(t, i)
      return string.format("((%s) & 15)", expr(t)), string.format("((((%s) >> 4) << 2) + (%s))", expr(t), expr(i))
    end,
    b_rc = function(t, i)
      return string.format("((((%s) >> 4) << 2) + (%s))", expr(t), expr(i)), string.format("((%s) & 15)", expr(t))
    end,
    d_rc = function(t, i)
      return string.format("((((%s) >> 4) << 2) + (%s))", expr(t), expr(i)), string.format("((%s) & 15)", expr(t))
    end,
    -- types and the MFMA wrappers (operands travel as 16-bit patterns)
    preamble = function()
      return table.concat({
        "/* Wave64 vocabulary: registers of one lane, MFMA 16x16x16 on the matrix cores. */",
        "typedef unsigned short kg_wave_b16x4 __attribute__((ext_vector_type(4)));  /* 4 x 16-bit patterns */",
        "typedef float kg_wave_f32x4 __attribute__((ext_vector_type(4)));",
        "typedef _Float16 kg_wave_f16x4_ __attribute__((ext_vector_type(4)));",
        "typedef short kg_wave_i16x4_ __attribute__((ext_vector_type(4)));",
        "[[maybe_unused]] static __device__ __forceinline__ kg_wave_f32x4 kg_wave_mfma_f16(kg_wave_b16x4 a, kg_wave_b16x4 b, kg_wave_f32x4 c) {",
        "  return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(kg_wave_f16x4_, a), __builtin_bit_cast(kg_wave_f16x4_, b), c, 0, 0, 0);",
        "}",
        "[[maybe_unused]] static __device__ __forceinline__ kg_wave_f32x4 kg_wave_mfma_bf16(kg_wave_b16x4 a, kg_wave_b16x4 b, kg_wave_f32x4 c) {",
        "  return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(__builtin_bit_cast(kg_wave_i16x4_, a), __builtin_bit_cast(kg_wave_i16x4_, b), c, 0, 0, 0);",
        "}",
      }, "\n")
    end,
  },
  -- Attention family vocabulary (templates/attn), as the CUDA table. CDNA
  -- has no cp.async: copy16 is a 16-byte load and LDS store through
  -- registers, commit and wait are no-ops (the barrier after wait orders
  -- the LDS stores).
  attn = {
    fn = "[[maybe_unused]] static __device__ __forceinline__",
    unroll = "#pragma unroll",
    param = "const",
    sincos = function(x, s, c) return string.format("sincosf(%s, &%s, &%s);", x, s, c) end,
    preamble = table.concat({
      "static __device__ __forceinline__ void kg_attn_cp16(void *s, const void *g) {",
      "  *(uint4 *)s = *(const uint4 *)g;",
      "}",
    }, "\n"),
    copy16 = function(dst, src) return string.format("kg_attn_cp16(%s, %s)", dst, src) end,
    unpack8 = function(dtype)
      local lo = ({ bf16 = "__uint_as_float(w << 16)", f16 = "__half2float(__ushort_as_half((unsigned short)(w & 0xffffu)))" })[dtype]
      local hi = ({ bf16 = "__uint_as_float(w & 0xffff0000u)", f16 = "__half2float(__ushort_as_half((unsigned short)(w >> 16)))" })[dtype]
      assert(lo, "unpack8 takes f16 or bf16")
      return table.concat({
        "static __device__ __forceinline__ void kg_attn_unpack8(const uint4 &raw, float (&f)[8]) {",
        "  const uint32_t ws[4] = { raw.x, raw.y, raw.z, raw.w };",
        "#pragma unroll",
        "  for (int i = 0; i < 4; i++) {",
        "    const uint32_t w = ws[i];",
        "    f[2 * i] = " .. lo .. ";",
        "    f[2 * i + 1] = " .. hi .. ";",
        "  }",
        "}",
      }, "\n")
    end,
    commit = "(void)0",
    wait = function(_) return "(void)0" end,
  },
}
