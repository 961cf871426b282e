-- CUDA dialect (target sm_90a). Kernel templates use these words instead of
-- writing CUDA spellings themselves.
local fmt = require("lib.fmt")  -- integers in emitted code: same text under LuaJIT and Lua 5.4

-- A 16-byte global load that skips L1 (ld.global.nc.L1::no_allocate), as the
-- device function `name`; l2 is an extra qualifier (an L2 fill size) or "".
local function ld_nc16(name, l2)
  return table.concat({
    "[[maybe_unused]] static __device__ __forceinline__ uint4 " .. name .. "(const uint4 *p) {",
    "  uint4 r;",
    '  asm volatile("ld.global.nc.L1::no_allocate' .. l2 .. '.v4.u32 {%0, %1, %2, %3}, [%4];\\n"',
    '               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));',
    "  return r;",
    "}",
  }, "\n")
end

-- FP4 skinny helpers per activation type ty (bf16, f16): name(a, b), the x2
-- product of two registers, and name(c, a0..a3, b0, b1), one m16n8k16 MMA.
local function fp4s_mul(name, ty)
  return table.concat({
    "[[maybe_unused]] static __device__ __forceinline__ uint32_t " .. name .. "(uint32_t a, uint32_t b) {",
    "  uint32_t r;",
    '  asm("mul.rn.' .. ty .. 'x2 %0, %1, %2;\\n" : "=r"(r) : "r"(a), "r"(b));',
    "  return r;",
    "}",
  }, "\n")
end
-- wgmma accumulator operands: the asm placeholders %0 .. %(h - 1) and their "+f"
-- bindings to d[i / 4][i % 4] (h = n / 2 floats per thread for m64nN)
local function wg_acc_operands(h)
  local regs, outs = {}, {}
  for i = 0, h - 1 do
    regs[#regs + 1] = "%" .. i
    outs[#outs + 1] = string.format('"+f"(d[%d][%d])', math.floor(i / 4), i % 4)
  end
  return regs, outs
end
-- Statements launching kernel through cudaLaunchKernelEx with one launch attribute: attr_lines
-- set attr_[0], nattrs is the C expression of how many apply (0 or 1); err gets the error_t.
local function launch_ex(kernel, grid, block, smem, stream, args, err, attr_lines, nattrs)
  local lines = {
    "cudaLaunchConfig_t cfg_ = {};",
    "  cudaLaunchAttribute attr_[1];",
    string.format("  cfg_.gridDim = %s; cfg_.blockDim = %s; cfg_.dynamicSmemBytes = %s; cfg_.stream = %s;",
                  grid, block, smem, stream),
  }
  for _, l in ipairs(attr_lines) do lines[#lines + 1] = l end
  lines[#lines + 1] = string.format("  cfg_.attrs = attr_; cfg_.numAttrs = %s;", nattrs)
  lines[#lines + 1] = string.format("  %s = cudaLaunchKernelEx(&cfg_, %s, %s);", err, kernel, args)
  return table.concat(lines, "\n")
end

local function fp4s_mma(name, ty)
  return table.concat({
    "[[maybe_unused]] static __device__ __forceinline__ void " .. name .. "(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,",
    string.rep(" ", 51 + #name - #"kg_fp4s_mma") .. "uint32_t b0, uint32_t b1) {",
    '  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.' .. ty .. "." .. ty .. '.f32 "',
    '               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"',
    '               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])',
    '               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));',
    "}",
  }, "\n")
end

return {
  name = "cuda",
  dir = "cuda",
  ext = ".cu",
  arch = "sm_90a",
  backend_enum = "KG_BACKEND_CUDA",
  guard = "KG_WITH_CUDA",
  api = "cuda",                    -- prefix of runtime calls: cudaMemsetAsync, ...
  stream_t = "cudaStream_t",
  error_t = "cudaError_t",
  success = "cudaSuccess",
  warp_size = 32,
  smem_per_sm = 233472,            -- shared memory of one SM (bytes), 1 KB of it reserved per block
  smem_reserved = 1024,
  includes = { "<cuda_runtime.h>", "<cuda_fp16.h>", "<cuda_bf16.h>", "<stdint.h>", '"kg_internal.h"' },
  extern_c = 'extern "C"',
  static_fn = "static",
  kernel = "__global__",
  device_fn = "static __device__ __forceinline__",
  shared = "__shared__",
  -- SMs (compute units) of the current device, 0 when unknown (runtime, cached)
  sm_count = "kg__cuda_sm_count()",
  -- resident blocks of kernel per SM at threads threads and smem bytes of dynamic
  -- shared memory, into int n (expression of type error_t)
  occupancy = function(n, kernel, threads, smem)
    return string.format("cudaOccupancyMaxActiveBlocksPerMultiprocessor(&%s, %s, %s, %s)", n, kernel, threads, smem)
  end,
  restrict = "__restrict__",
  barrier = "__syncthreads()",
  -- the 32 lanes of the warp meet; memory accesses before it are ordered before those after it
  warp_barrier = "__syncwarp()",
  storage = { f32 = "float", f16 = "__half", bf16 = "__nv_bfloat16" },
  to_f32 = { f32 = "%s", f16 = "__half2float(%s)", bf16 = "__bfloat162float(%s)" },
  from_f32 = { f32 = "%s", f16 = "__float2half_rn(%s)", bf16 = "__float2bfloat16_rn(%s)" },
  -- xor shuffle across the full warp
  shfl_xor = function(v, mask) return string.format("__shfl_xor_sync(0xffffffffu, %s, %s)", v, mask) end,
  -- value v of lane src, across the full warp
  shfl_idx = function(v, src) return string.format("__shfl_sync(0xffffffffu, %s, %s)", v, src) end,
  -- Fast math of the attention kernels (templates/attn): PTX approximations
  -- with flush-to-zero (ex2/lg2/rcp/rsqrt .approx.ftz); tanh from ex2 and rcp
  -- (an odd polynomial below 0.125). Each entry but lanes and helpers gives
  -- a C expression on f32 operands; helpers defines the kg_math_* functions
  -- they call (emit it once per file). xor_sum / xor_max reduce over aligned
  -- groups of `width` lanes (a power of two <= lanes) by a butterfly of xor
  -- shuffles; every lane of a group ends with the group's result.
  math = {
    lanes = 32,
    helpers = table.concat({
      "/* Attention math primitives (CUDA): PTX approximations, flush-to-zero. */",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_exp2(float x) {",
      '  float y; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;',
      "}",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_log2(float x) {",
      '  float y; asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;',
      "}",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_rcp(float x) {",
      '  float y; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;',
      "}",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_rsqrt(float x) {",
      '  float y; asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;',
      "}",
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
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_xor_sum(float v, int width) {",
      "#pragma unroll",
      "  for (int m = width >> 1; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);",
      "  return v;",
      "}",
      "[[maybe_unused]] static __device__ __forceinline__ float kg_math_xor_max(float v, int width) {",
      "#pragma unroll",
      "  for (int m = width >> 1; m > 0; m >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, m));",
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
  -- kernel launch statement
  launch = function(kernel, grid, block, smem, stream, args)
    return string.format("%s<<<%s, %s, %s, %s>>>(%s);", kernel, grid, block, smem, stream, args)
  end,
  -- Programmatic dependent launch (kg.h KG_EXEC_PDL). launch_pdl: statements that
  -- launch like `launch` and assign the launch's error_t to err; when the C
  -- expression pdl is nonzero the kernel may start before the previous kernel
  -- of the stream has finished. A kernel launched so calls pdl_wait before
  -- touching memory the previous kernel may write; pdl_wait returns once that
  -- kernel has completed and its writes are visible (at once without PDL).
  -- pdl_trigger lets this kernel's own dependents launch (they pdl_wait for its
  -- completion).
  launch_pdl = function(kernel, grid, block, smem, stream, args, pdl, err)
    return launch_ex(kernel, grid, block, smem, stream, args, err, {
      "  attr_[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;",
      "  attr_[0].val.programmaticStreamSerializationAllowed = 1;",
    }, string.format("(%s) ? 1 : 0", pdl))
  end,
  pdl_wait = 'asm volatile("griddepcontrol.wait;" ::: "memory")',
  pdl_trigger = 'asm volatile("griddepcontrol.launch_dependents;" ::: "memory")',
  -- barrier of `count` threads (a multiple of the warp size) on named barrier
  -- id (1..15; 0 is `barrier`'s), statement without ';'
  named_barrier = function(id, count)
    return string.format('asm volatile("bar.sync %%0, %%1;" :: "r"(%s), "r"(%s) : "memory")', id, count)
  end,
  -- Thread block clusters (sm_90) of cx blocks along grid x (a block's rank in its cluster is
  -- then blockIdx.x % cx). launch_cluster: statements that launch like `launch` and assign the
  -- launch's error_t to err, with the cluster when the C expression cx is above 1. cluster_sync:
  -- every thread of every block of the cluster arrives (release) and waits (acquire), so shared
  -- memory written before it is readable by the cluster's blocks after it. cluster_preamble
  -- (after tma's preamble) defines kg_cluster_ld4(p, rank): four f32 at this block's shared
  -- address p, read from the shared memory of cluster block rank.
  launch_cluster = function(kernel, grid, block, smem, stream, args, cx, err)
    return launch_ex(kernel, grid, block, smem, stream, args, err, {
      "  attr_[0].id = cudaLaunchAttributeClusterDimension;",
      string.format("  attr_[0].val.clusterDim.x = (unsigned)(%s); attr_[0].val.clusterDim.y = 1; attr_[0].val.clusterDim.z = 1;",
                    cx),
    }, string.format("(%s) > 1 ? 1 : 0", cx))
  end,
  cluster_sync = 'asm volatile("barrier.cluster.arrive.release;\\n\\tbarrier.cluster.wait.acquire;" ::: "memory")',
  cluster_preamble = table.concat({
    "static __device__ __forceinline__ float4 kg_cluster_ld4(const void *p, unsigned rank) {",
    "  unsigned a;",
    "  float4 v;",
    '  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(a) : "r"(kg_smem_u32(p)), "r"(rank));',
    '  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)',
    '               : "r"(a) : "memory");',
    "  return v;",
    "}",
  }, "\n"),
  -- raise the dynamic shared memory limit of a kernel (statement returning error_t)
  set_smem_limit = function(kernel, bytes)
    return string.format("cudaFuncSetAttribute(%s, cudaFuncAttributeMaxDynamicSharedMemorySize, %s)", kernel, bytes)
  end,
  -- launch bounds: max threads per block, min resident blocks per SM
  launch_bounds = function(threads, min_blocks)
    return string.format("__launch_bounds__(%d, %d)", threads, min_blocks)
  end,
  -- dynamic shared memory: one 128-byte aligned byte array (declaration, no ';')
  dyn_smem = function(name) return "extern __shared__ __align__(128) unsigned char " .. name .. "[]" end,
  -- asynchronous 16-byte global -> shared copy that reads only `bytes` (0..16)
  -- bytes and zero-fills the rest (cp.async.cg, L2 only); helpers in tc.preamble
  async_copy16 = function(dst, src, bytes) return string.format("kg_cp_async16(%s, %s, %s)", dst, src, bytes) end,
  async_commit = 'asm volatile("cp.async.commit_group;\\n" ::: "memory")',
  -- wait until at most n committed copy groups are still in flight
  async_wait = function(n) return string.format('asm volatile("cp.async.wait_group %d;\\n" ::: "memory")', n) end,
  -- Warp-level tensor-core MMA: one atom is mma.sync m16n8k16 (row.col, f32
  -- accumulate). Fragment loads go through ldmatrix (.trans when the tile is
  -- stored MN-contiguous). Loader functions take logical coordinates: addr(r, c)
  -- is the template's shared-memory pointer of A[r][c] (load_a) or B[r][c]
  -- (load_b), kmajor tells whether K is the contiguous dimension in shared memory.
  tc = {
    m = 16, n = 8, k = 16,
    b_group = 2,        -- n atoms one load_b fills (ldmatrix.x4 covers k16 x n16)
    acc_pairs = true,   -- accumulator elements 2i, 2i+1 are adjacent columns of one row
    preamble = function(dtype)
      local ty = ({ f16 = "f16", bf16 = "bf16" })[dtype]
      assert(ty, "tensor cores take f16 or bf16")
      return table.concat({
        "/* Tensor-core vocabulary: mma.sync m16n8k16 + ldmatrix + cp.async. */",
        "typedef uint32_t kg_frag_a[4];   /* A m16 x k16: 8 halves per lane */",
        "typedef uint32_t kg_frag_b[2];   /* B k16 x n8: 4 halves per lane */",
        "typedef float kg_acc[4];         /* C m16 x n8: 4 floats per lane */",
        "static __device__ __forceinline__ uint32_t kg_smem_u32(const void *p) {",
        "  return (uint32_t)__cvta_generic_to_shared(p);",
        "}",
        "[[maybe_unused]] static __device__ __forceinline__ void kg_ldsm_x4(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p) {",
        '  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\\n"',
        '               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(kg_smem_u32(p)));',
        "}",
        "[[maybe_unused]] static __device__ __forceinline__ void kg_ldsm_x4_t(uint32_t &r0, uint32_t &r1, uint32_t &r2, uint32_t &r3, const void *p) {",
        '  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\\n"',
        '               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(kg_smem_u32(p)));',
        "}",
        "[[maybe_unused]] static __device__ __forceinline__ void kg_mma(kg_acc &c, const kg_frag_a &a, const kg_frag_b &b) {",
        '  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.' .. ty .. "." .. ty .. '.f32 "',
        '               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"',
        '               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])',
        '               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));',
        "}",
        "[[maybe_unused]] static __device__ __forceinline__ void kg_cp_async16(void *s, const void *g, int bytes) {",
        '  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\\n" :: "r"(kg_smem_u32(s)), "l"(g), "r"(bytes));',
        "}",
      }, "\n")
    end,
    -- A atom (m16 x k16) at logical (m0, k0) into fragment dst
    load_a = function(dst, kmajor, addr, m0, k0)
      if kmajor then
        return string.format("kg_ldsm_x4(%s[0], %s[1], %s[2], %s[3], %s);", dst, dst, dst, dst,
          addr(string.format("(%s) + (lane & 15)", m0), string.format("(%s) + ((lane >> 4) << 3)", k0)))
      end
      return string.format("kg_ldsm_x4_t(%s[0], %s[1], %s[2], %s[3], %s);", dst, dst, dst, dst,
        addr(string.format("(%s) + (((lane >> 3) & 1) << 3)", m0),
             string.format("(%s) + ((lane >> 4) << 3) + (lane & 7)", k0)))
    end,
    -- B atoms j .. j+b_group-1 (k16 x n16) at logical (k0, n0) into arr[j], arr[j+1]
    load_b = function(arr, j, kmajor, addr, k0, n0)
      local d0, d1 = string.format("%s[%s]", arr, j), string.format("%s[(%s) + 1]", arr, j)
      local regs = string.format("%s[0], %s[1], %s[0], %s[1]", d0, d0, d1, d1)
      if kmajor then
        return string.format("kg_ldsm_x4(%s, %s);", regs,
          addr(string.format("(%s) + (((lane >> 3) & 1) << 3)", k0), string.format("(%s) + ((lane >> 4) << 3) + (lane & 7)", n0)))
      end
      return string.format("kg_ldsm_x4_t(%s, %s);", regs,
        addr(string.format("(%s) + (((lane >> 3) & 1) << 3) + (lane & 7)", k0), string.format("(%s) + ((lane >> 4) << 3)", n0)))
    end,
    -- (row, col) inside the m x n atom of accumulator element e (0..3) of this lane
    acc_coord = function(e)
      return string.format("(lane >> 2) + %d", math.floor(e / 2) * 8), string.format("((lane & 3) << 1) + %d", e % 2)
    end,
    acc_count = 4,
  },
  -- Warpgroup MMA (sm_90a wgmma.mma_async): 4 consecutive warps compute an
  -- m64 x N block (N = 8..256) from two shared-memory matrix descriptors, K =
  -- 16 per instruction. Templates use it instead of `tc` when the tile splits
  -- into warpgroups; the accumulator of one m64 block is N/8 groups of 4 floats
  -- per thread laid out like tc's m16n8 atoms, warp w of the group owning rows
  -- 16w .. 16w+15. Shared tiles must use the canonical swizzled layouts:
  -- K-major rows of 128 B (64 elements, 128B swizzle) or 64 B (32 elements, 64B
  -- swizzle); MN-major blocks of 64 MN elements x K rows, 128B swizzle.
  wgmma = {
    m = 64, k = 16,
    -- helpers shared by every MMA function (descriptors, fences, waits)
    preamble = function(dtype)
      assert(({ f16 = true, bf16 = true })[dtype], "wgmma takes f16 or bf16 here")
      return table.concat({
        "/* Warpgroup MMA vocabulary: wgmma.mma_async, operands in shared memory. */",
        "static __device__ __forceinline__ uint64_t kg_wg_desc(const void *p, uint32_t lbo, uint32_t sbo, uint32_t swz) {",
        "  uint64_t a = (uint64_t)((kg_smem_u32(p) & 0x3ffffu) >> 4);",
        "  return a | ((uint64_t)((lbo & 0x3ffffu) >> 4) << 16) | ((uint64_t)((sbo & 0x3ffffu) >> 4) << 32) | ((uint64_t)swz << 62);",
        "}",
        "static __device__ __forceinline__ void kg_wg_fence() { asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\"); }",
        "static __device__ __forceinline__ void kg_wg_commit() { asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\"); }",
        "template <int N> static __device__ __forceinline__ void kg_wg_wait() {",
        "  asm volatile(\"wgmma.wait_group.sync.aligned %0;\\n\" :: \"n\"(N) : \"memory\");",
        "}",
        "/* generic-proxy shared-memory writes (cp.async) made visible to wgmma */",
        "[[maybe_unused]] static __device__ __forceinline__ void kg_wg_smem_fence() { asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\"); }",
      }, "\n")
    end,
    -- one MMA function `name`: d (m64 x n, f32) += A . B, m64nNk16, with the
    -- transpose bits of the operands' layouts (0: K-major, 1: MN-major)
    mma_fn = function(name, dtype, n, tnsp_a, tnsp_b)
      local ty = ({ f16 = "f16", bf16 = "bf16" })[dtype]
      assert(ty, "wgmma takes f16 or bf16 here")
      local h, n8 = math.floor(n / 2), math.floor(n / 8)
      local regs, outs = wg_acc_operands(h)
      return table.concat({
        "/* m64n" .. fmt.int(n) .. "k16, A " .. (tnsp_a == 0 and "K" or "M") .. "-major, B " .. (tnsp_b == 0 and "K" or "N") .. "-major */",
        "static __device__ __forceinline__ void " .. name .. "(float (&d)[" .. fmt.int(n8) .. "][4], uint64_t da, uint64_t db) {",
        "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" .. fmt.int(h + 2) .. ", 0;\\n\"",
        "               \"wgmma.mma_async.sync.aligned.m64n" .. fmt.int(n) .. "k16.f32." .. ty .. "." .. ty .. " \"",
        "               \"{" .. table.concat(regs, ", ") .. "}, \"",
        "               \"%" .. fmt.int(h) .. ", %" .. fmt.int(h + 1) .. ", p, 1, 1, " .. fmt.int(tnsp_a) .. ", " .. fmt.int(tnsp_b) .. ";\\n}\\n\"",
        "               : " .. table.concat(outs, ", "),
        "               : \"l\"(da), \"l\"(db), \"r\"(1));",
        "}",
      }, "\n")
    end,
    -- one MMA function `name` with A from registers: d (m64 x n, f32) += A . B,
    -- m64nNk16, n = 8 .. 256 (powers of two), B K-major in shared memory. Per warp of the group,
    -- a0..a3 are the m16n8k16 A fragment of its 16 rows (16w ..): (row g, k 2t),
    -- (row g + 8, k 2t), (row g, k 2t + 8), (row g + 8, k 2t + 8), each two
    -- elements (g = lane / 4, t = lane % 4); d[j] is its m16n8 accumulator of
    -- columns 8j .. 8j + 7 (n = 8: d[0] of two).
    mma_rs_fn = function(name, dtype, n)
      local ty = ({ f16 = "f16", bf16 = "bf16" })[dtype]
      assert(ty and (n == 8 or n == 16 or n == 32 or n == 64 or n == 128 or n == 256),
        "register-A wgmma takes f16 or bf16, n = 8, 16, 32, 64, 128 or 256")
      local h = math.floor(n / 2)
      local regs, outs = wg_acc_operands(h)
      return table.concat({
        "/* m64n" .. fmt.int(n) .. "k16, A from registers (K-major), B K-major in shared memory */",
        "[[maybe_unused]] static __device__ __forceinline__ void " .. name .. "(float (&d)[" .. fmt.int(math.max(2, math.floor(n / 8)))
          .. "][4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint64_t db) {",
        "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" .. fmt.int(h + 5) .. ", 0;\\n\"",
        "               \"wgmma.mma_async.sync.aligned.m64n" .. fmt.int(n) .. "k16.f32." .. ty .. "." .. ty .. " \"",
        "               \"{" .. table.concat(regs, ", ") .. "}, {%" .. fmt.int(h) .. ", %" .. fmt.int(h + 1) .. ", %" .. fmt.int(h + 2)
          .. ", %" .. fmt.int(h + 3) .. "}, %" .. fmt.int(h + 4) .. ", p, 1, 1, 0;\\n}\\n\"",
        "               : " .. table.concat(outs, ", "),
        "               : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"l\"(db), \"r\"(1));",
        "}",
      }, "\n")
    end,
    desc = function(ptr, lbo, sbo, swz) return string.format("kg_wg_desc(%s, %s, %s, %s)", ptr, lbo, sbo, swz) end,
    -- call of the MMA function `fn` (from mma_fn)
    mma = function(fn, acc, da, db) return string.format("%s(%s, %s, %s)", fn, acc, da, db) end,
    fence = "kg_wg_fence()",
    commit = "kg_wg_commit()",
    wait = function(n) return string.format("kg_wg_wait<%d>()", n) end,
    smem_fence = "kg_wg_smem_fence()",
    -- statement, executed by every thread of a warpgroup: its registers per thread become n
    -- (a multiple of 8, 24..256; "inc" or "dec" from the launch's allocation)
    setmaxnreg = function(dir, n)
      assert((dir == "inc" or dir == "dec") and n % 8 == 0 and n >= 24 and n <= 256, "setmaxnreg: inc/dec, 24..256, multiple of 8")
      return string.format('asm volatile("setmaxnreg.%s.sync.aligned.u32 %d;\\n" ::: "memory")', dir, n)
    end,
    -- (row, col) inside the warp's 16 x 8 slice of an m64 block, element e (0..3)
    acc_coord = function(e)
      return string.format("(lane >> 2) + %d", math.floor(e / 2) * 8), string.format("((lane & 3) << 1) + %d", e % 2)
    end,
    acc_count = 4,
    -- the lane and element holding column 0 of the row of this lane's element e
    -- (in the j = 0 atom): for broadcasting one accumulator column
    col0 = function(e) return "(lane & ~3)", e - e % 2 end,
  },
  -- Bulk tensor copies (sm_90 TMA): a tensor map per operand, encoded on the
  -- host (cuTensorMapEncodeTiled through the runtime's driver entry point) and
  -- passed as a __grid_constant__ kernel argument; one thread copies whole
  -- boxes into shared memory (swizzled like wgmma's canonical layouts, zero
  -- outside the tensor) and they complete on an mbarrier per stage.
  tma = {
    includes = { "<cudaTypedefs.h>" },
    elem = { f16 = "CU_TENSOR_MAP_DATA_TYPE_FLOAT16", bf16 = "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16",
             u8 = "CU_TENSOR_MAP_DATA_TYPE_UINT8" },
    -- by bytes per row of the box (0: dense, not swizzled)
    swizzle = { [0] = "CU_TENSOR_MAP_SWIZZLE_NONE", [32] = "CU_TENSOR_MAP_SWIZZLE_32B", [64] = "CU_TENSOR_MAP_SWIZZLE_64B",
                [128] = "CU_TENSOR_MAP_SWIZZLE_128B" },
    map_t = "CUtensorMap",
    grid_constant = "const __grid_constant__",
    preamble = function()
      return table.concat({
        "/* Bulk tensor copy vocabulary: TMA loads completing on shared-memory mbarriers. */",
        "static __device__ __forceinline__ void kg_mbar_init(uint64_t *bar, unsigned count) {",
        '  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\\n" :: "r"(kg_smem_u32(bar)), "r"(count) : "memory");',
        "}",
        'static __device__ __forceinline__ void kg_mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory"); }',
        "static __device__ __forceinline__ void kg_mbar_expect(uint64_t *bar, unsigned bytes) {",
        '  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n" :: "r"(kg_smem_u32(bar)), "r"(bytes) : "memory");',
        "}",
        "[[maybe_unused]] static __device__ __forceinline__ void kg_mbar_arrive(uint64_t *bar) {",
        '  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n" :: "r"(kg_smem_u32(bar)) : "memory");',
        "}",
        "static __device__ __forceinline__ void kg_mbar_wait(uint64_t *bar, unsigned parity) {",
        '  asm volatile("{\\n.reg .pred p;\\nKG_MBAR_WAIT:\\n"',
        '               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\\n"',
        '               "@!p bra KG_MBAR_WAIT;\\n}\\n" :: "r"(kg_smem_u32(bar)), "r"(parity) : "memory");',
        "}",
        "static __device__ __forceinline__ void kg_tma_load(void *dst, const CUtensorMap *map, uint64_t *bar, int c0, int c1, int c2) {",
        '  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\\n"',
        '               :: "r"(kg_smem_u32(dst)), "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(kg_smem_u32(bar)) : "memory");',
        "}",
        "/* Host: a 3-D tiled tensor map (dims[0] contiguous; strides in bytes for dims 1, 2); 0 on failure. */",
        "static int kg_tma_encode(CUtensorMap *map, CUtensorMapDataType ty, const void *base, const cuuint64_t dims[3],",
        "                         const cuuint64_t strides[2], const cuuint32_t box[3], CUtensorMapSwizzle swz) {",
        "  static PFN_cuTensorMapEncodeTiled_v12000 encode = 0;",
        "  if (!encode) {",
        "    void *f = 0;",
        "    cudaDriverEntryPointQueryResult q;",
        "    if (cudaGetDriverEntryPointByVersion(\"cuTensorMapEncodeTiled\", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||",
        "        q != cudaDriverEntryPointSuccess || !f) return 0;",
        "    encode = (PFN_cuTensorMapEncodeTiled_v12000)f;",
        "  }",
        "  const cuuint32_t one[3] = { 1, 1, 1 };",
        "  return encode(map, ty, 3, (void *)base, dims, strides, box, one, CU_TENSOR_MAP_INTERLEAVE_NONE, swz,",
        "                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;",
        "}",
      }, "\n")
    end,
    -- Plain bulk copies (no tensor map): bulk_preamble defines them (after preamble), bulk_load is
    -- the statement copying `bytes` (a multiple of 16; both addresses 16-byte aligned) from global
    -- src to shared dst, completing on bar like a box.
    bulk_preamble = table.concat({
      "static __device__ __forceinline__ void kg_bulk_load(void *dst, const void *src, unsigned bytes, uint64_t *bar) {",
      '  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\\n"',
      '               :: "r"(kg_smem_u32(dst)), "l"(src), "r"(bytes), "r"(kg_smem_u32(bar)) : "memory");',
      "}",
    }, "\n"),
    bulk_load = function(dst, src, bytes, bar)
      return string.format("kg_bulk_load(%s, %s, %s, %s)", dst, src, bytes, bar)
    end,
    -- statements (device): copy box (c0, c1, c2) of map into dst, completing on bar
    load = function(dst, map, bar, c0, c1, c2)
      return string.format("kg_tma_load(%s, %s, %s, %s, %s, %s)", dst, map, bar, c0, c1, c2)
    end,
    init = function(bar, count) return string.format("kg_mbar_init(%s, %s)", bar, count) end,
    init_fence = "kg_mbar_init_fence()",
    expect = function(bar, bytes) return string.format("kg_mbar_expect(%s, %s)", bar, bytes) end,
    wait = function(bar, parity) return string.format("kg_mbar_wait(%s, %s)", bar, parity) end,
    -- statement: one arrival (no transaction bytes) on bar
    arrive = function(bar) return string.format("kg_mbar_arrive(%s)", bar) end,
    -- host expression: 1 when the map was encoded
    encode = function(map, ty, base, dims, strides, box, swz)
      return string.format("kg_tma_encode(%s, %s, %s, %s, %s, %s, %s)", map, ty, base, dims, strides, box, swz)
    end,
  },
  -- Skinny (small-M) tensor-core vocabulary: one 16-row block of A times MMA
  -- tiles of 8 columns, fragments taken straight from 16-byte global loads.
  -- Within a 32-wide K chunk lane (g = lane/4, t = lane%4) loads k = 8t..8t+7
  -- of A rows g and g+8 and of B column g; the k permutation that makes those
  -- registers the m16n8k16 fragments of two MMAs is: mma s, fragment pair
  -- (2t, 2t+8) <- physical (8t + 4s, 8t + 4s + 2).
  skinny = {
    cols = 8,
    acc_count = 4,
    a_rows = function(lane) return { "(" .. lane .. " >> 2)", "(" .. lane .. " >> 2) + 8" } end,
    b_col = function(lane) return "(" .. lane .. " >> 2)" end,
    k_off = function(lane) return "((" .. lane .. " & 3) << 3)" end,
    acc_row = function(lane, e) return string.format("((%s >> 2) + ((%s >> 1) << 3))", lane, e) end,
    acc_col = function(lane, e) return string.format("(((%s & 3) << 1) + (%s & 1))", lane, e) end,
    preamble = function(dtype)
      local ty = ({ f16 = "f16", bf16 = "bf16" })[dtype]
      assert(ty, "tensor cores take f16 or bf16")
      local function mma(x, y)
        return table.concat({
          '  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.' .. ty .. "." .. ty .. '.f32 "',
          '               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"',
          '               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])',
          string.format('               : "r"(a[0].%s), "r"(a[1].%s), "r"(a[0].%s), "r"(a[1].%s), "r"(b.%s), "r"(b.%s));', x, x, y, y, x, y),
        }, "\n")
      end
      return table.concat({
        "/* c += A(16 rows x 32 k) . B(32 k x 8 columns) in the skinny k permutation. */",
        "static __device__ __forceinline__ void kg_skinny_mma(float (&c)[4], const uint4 (&a)[2], const uint4 &b) {",
        mma("x", "y"),
        mma("z", "w"),
        "}",
      }, "\n")
    end,
    mma = function(acc, a, b) return string.format("kg_skinny_mma(%s, %s, %s)", acc, a, b) end,
    -- 16-byte load of data read once (weights): not kept in L1, and a miss
    -- fills 256 bytes of L2 (the next chunks of the same weight row);
    -- load_helpers defines the function it calls
    load_stream = function(ptr) return string.format("kg_ld_stream((const uint4 *)(%s))", ptr) end,
    -- load_once: the same without the L2 fill size (the FP4 skinny kernel, whose
    -- warps read 64 bytes of a row per chunk: measured faster without it)
    load_once = function(ptr) return string.format("kg_ld_once((const uint4 *)(%s))", ptr) end,
    load_helpers = table.concat({ ld_nc16("kg_ld_stream", ".L2::256B"), ld_nc16("kg_ld_once", "") }, "\n"),
    -- FP4 skinny kernel: first k of the lane's 32 inside a 128-wide K chunk
    fp4_k_off = function(lane) return "((" .. lane .. " & 3) << 5)" end,
    -- FP4 weights on the skinny kernel (templates/fp4/gemm_skinny.kgt): device
    -- helpers that turn packed E2M1 codes into bf16x2 (or, _f16, f16x2) B
    -- fragments and pair A elements the same way, and one m16n8k16 bf16 / f16
    -- MMA on explicit registers
    fp4 = table.concat({
      "/* E2M1 pair i (0..3) of a word of 8 packed codes: nibbles i and i + 4, as bf16x2 bits of",
      "** e2m1 * 2^-126 (the code of 0.5 becomes the bf16 subnormal 2^-127, exactly; sign kept):",
      "** each half's sign to bit 15, its three magnitude bits to 6..8. One multiply by",
      "** 2^(12 - s) + 2^(6 - s) writes the masked nibble (at bit s of each half) to both places;",
      "** the four copies are disjoint bits, so the product carries nothing. */",
      "[[maybe_unused]] static __device__ __forceinline__ uint32_t kg_fp4s_bits(uint32_t w, int i) {",
      "  const uint32_t x = i < 2 ? w : w >> 8;   /* nibbles 2, 3 (6, 7) down to where 0, 1 (4, 5) were */",
      "  const int s = 4 * (i & 1);",
      "  return ((x & (0x000f000fu << s)) * ((1u << (12 - s)) + (1u << (6 - s)))) & 0x81c081c0u;",
      "}",
      "/* bf16x2 product, round to nearest even; subnormal inputs and results are kept (no flush). */",
      fp4s_mul("kg_fp4s_mul", "bf16"),
      "/* f16 form (NVFP4 only: e2m1 * e4m3 fits f16): f16x2 bits of e2m1 * 2^-14 (0.5 becomes the",
      "** f16 subnormal 2^-15, exactly): magnitude to bits 9..11 by one shift, then the sign, which",
      "** lands on bit 12, moves to 15 (adding 7 * 2^12 clears 12 and sets 15: bits 13..15 are clear). */",
      "[[maybe_unused]] static __device__ __forceinline__ uint32_t kg_fp4s_bits_f16(uint32_t w, int i) {",
      "  const uint32_t x = i < 2 ? w : w >> 8;",
      "  const int s = 4 * (i & 1);",
      "  const uint32_t t = x & (0x000f000fu << s), sg = x & (0x00080008u << s);",
      "  return (t + 7u * sg) << (9 - s);",
      "}",
      fp4s_mul("kg_fp4s_mul_f16", "f16"),
      "/* Halves (lo.h, hi.h) of two words of 16-bit elements: h = 0 the low halves, 1 the high. */",
      "[[maybe_unused]] static __device__ __forceinline__ uint32_t kg_fp4s_pair(uint32_t lo, uint32_t hi, int h) {",
      "  return __byte_perm(lo, hi, h ? 0x7632u : 0x5410u);",
      "}",
      "/* c += A(16 x 16) . B(16 x 8): mma.sync m16n8k16 bf16, fragments a0..a3, b0, b1 as the PTX ISA orders them. */",
      fp4s_mma("kg_fp4s_mma", "bf16"),
      fp4s_mma("kg_fp4s_mma_f16", "f16"),
    }, "\n"),
  },
  -- FP4 family vocabulary (templates/fp4): helper qualifier, f32 <-> u32 bit
  -- casts, loop unrolling hint. GPU dequantize (templates/fp4/dequantize_gpu.kgt):
  -- dq_helpers defines kg_fp4_dec8_bf16(w, b) (CUDA: the codes as bf16 pairs in code order),
  -- kg_fp4_mul_bf16x2(a, b), kg_fp4_e4m3x4_bf16x2(s, m) (CUDA) and kg_fp4_dec8(w, f), the 8 E2M1 codes of w (code j in
  -- bits 4j..4j+3) as f32 with the bits of kg_e2m1_dec(code j) (fp4/common.kgt,
  -- emitted before it), and the functions pack2 names; pack2[dtype](lo, hi): a
  -- u32 of two 16-bit values, lo in bits 0..15, each rounded as from_f32 rounds;
  -- store16(ptr, w0, w1, w2, w3): one 16-byte store of four u32 words (w0 at
  -- the lowest address) to a 16-byte aligned global address.
  fp4 = { fn = "[[maybe_unused]] static __device__ __forceinline__", f32_bits = "__float_as_uint(%s)",
          bits_f32 = "__uint_as_float(%s)", unroll = "#pragma unroll",
          dq_helpers = table.concat({
            "/* Byte permute (PTX prmt.b32, default mode): byte n of the result is byte (s >> 4n) & 7 of",
            "** {a, b} (bytes 0..3 of a, then of b), or that byte's sign bit repeated where bit 4n+3 of s",
            "** is set. */",
            "[[maybe_unused]] static __device__ __forceinline__ uint32_t kg_fp4_prmt(uint32_t a, uint32_t b, uint32_t s) {",
            "  uint32_t r;",
            '  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(s));',
            "  return r;",
            "}",
            "/* The 8 E2M1 codes of w (code j in bits 4j..4j+3) as bf16 (exact), two per word in code",
            "** order: b[i] holds code 2i in bits 0..15, code 2i+1 in bits 16..31. A magnitude's upper",
            "** byte and second byte are two lookups in 8-entry byte tables, four codes per permute;",
            "** the sign is the code's bit 3. */",
            "[[maybe_unused]] static __device__ __forceinline__ void kg_fp4_dec8_bf16(uint32_t w, uint32_t (&b)[4]) {",
            "  const uint32_t mag = w & 0x77777777u, sh = w << 4;   /* sh: sign of code 2i at bit 7 of byte i */",
            "#pragma unroll",
            "  for (int h = 0; h < 2; h++) {                       /* codes 4h .. 4h+3 */",
            "    const uint32_t sel = h ? mag >> 16 : mag;",
            "    const uint32_t b2 = kg_fp4_prmt(0xc0800000u, 0xc0804000u, sel);   /* bits 0..7 of the bf16 */",
            "    const uint32_t b3 = kg_fp4_prmt(0x3f3f3f00u, 0x40404040u, sel) |  /* bits 8..15 */",
            "                        (kg_fp4_prmt(sh, w, h ? 0xfbeau : 0xd9c8u) & 0x80808080u);",
            "    b[2 * h] = kg_fp4_prmt(b2, b3, 0x5140u);",
            "    b[2 * h + 1] = kg_fp4_prmt(b2, b3, 0x7362u);",
            "  }",
            "}",
            "/* The 8 E2M1 codes of w as f32: f[j] has the bits of kg_e2m1_dec(code j) (the bf16 of",
            "** kg_fp4_dec8_bf16 in the upper 16 bits). */",
            "[[maybe_unused]] static __device__ __forceinline__ void kg_fp4_dec8(uint32_t w, float (&f)[8]) {",
            "  uint32_t b[4];",
            "  kg_fp4_dec8_bf16(w, b);",
            "#pragma unroll",
            "  for (int i = 0; i < 4; i++) {",
            "    f[2 * i] = __uint_as_float(b[i] << 16);",
            "    f[2 * i + 1] = __uint_as_float(b[i] & 0xffff0000u);",
            "  }",
            "}",
            "/* The bf16x2 product of a and b (mul.rn.bf16x2; exact where the products fit bf16). */",
            "[[maybe_unused]] static __device__ __forceinline__ uint32_t kg_fp4_mul_bf16x2(uint32_t a, uint32_t b) {",
            "  uint32_t r;",
            '  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));',
            "  return r;",
            "}",
            "/* bf16x2 multipliers of the 4 E4M3 scale bytes of s: m[i] holds byte i's value in both halves",
            "** (cvt.rn.f16x2.e4m3x2, sm_89+; exact: 4 significant bits; the NaN codes give NaN). */",
            "[[maybe_unused]] static __device__ __forceinline__ void kg_fp4_e4m3x4_bf16x2(uint32_t s, uint32_t (&m)[4]) {",
            "  uint32_t h[2];",
            '  asm("{\\n.reg .b16 lo, hi;\\nmov.b32 {lo, hi}, %2;\\ncvt.rn.f16x2.e4m3x2 %0, lo;\\ncvt.rn.f16x2.e4m3x2 %1, hi;\\n}\\n"',
            '      : "=r"(h[0]), "=r"(h[1]) : "r"(s));',
            "#pragma unroll",
            "  for (int i = 0; i < 4; i++) {",
            "    const uint32_t f = __float_as_uint(__half2float(__ushort_as_half((unsigned short)(h[i >> 1] >> (16 * (i & 1))))));",
            "    m[i] = kg_fp4_prmt(f, f, 0x7632u);   /* the f32's upper half, twice: its exact bf16 */",
            "  }",
            "}",
            "/* lo, hi rounded to nearest even (cvt.rn, as __float2half_rn / __float2bfloat16_rn) and",
            "** packed: lo in bits 0..15, hi in bits 16..31. */",
            "[[maybe_unused]] static __device__ __forceinline__ uint32_t kg_fp4_pack_f16(float lo, float hi) {",
            "  uint32_t r;",
            '  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));',
            "  return r;",
            "}",
            "[[maybe_unused]] static __device__ __forceinline__ uint32_t kg_fp4_pack_bf16(float lo, float hi) {",
            "  uint32_t r;",
            '  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));',
            "  return r;",
            "}",
          }, "\n"),
          pack2 = { f16 = "kg_fp4_pack_f16(%s, %s)", bf16 = "kg_fp4_pack_bf16(%s, %s)" },
          store16 = "__stwb((uint4 *)(%s), make_uint4(%s, %s, %s, %s))" },
  -- FP4 quantizer for 16-bit inputs (templates/fp4/quantize_gpu.kgt):
  -- helpers(dtype) defines kg_fp4q_absmax2(a, b) on two words of two f16 /
  -- bf16 elements each: per 16-bit half, the larger magnitude of a's and b's
  -- element, or a NaN magnitude (above the dtype's Inf) when either is NaN;
  -- only the magnitude bits (0x7fff of each half) are defined. any(p): p of
  -- some lane of the warp (every lane of the warp executes it). byte_perm:
  -- bytes of {y, x} picked by the selector nibbles. f16_f32: the f16 of a
  -- 16-bit pattern as f32. cold_fn: see below.
  fp4q = {
    helpers = function(dtype)
      local ty = ({ f16 = "f16x2", bf16 = "bf16x2" })[dtype]
      assert(ty, "the FP4 quantizer's packed helpers take f16 or bf16")
      return table.concat({
        "static __device__ __forceinline__ uint32_t kg_fp4q_absmax2(uint32_t a, uint32_t b) {",
        "  uint32_t d;",
        '  asm("max.NaN.xorsign.abs.' .. ty .. ' %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));',
        "  return d;",
        "}",
      }, "\n")
    end,
    any = function(p) return string.format("__any_sync(0xffffffffu, %s)", p) end,
    byte_perm = function(x, y, s) return string.format("__byte_perm(%s, %s, %s)", x, y, s) end,
    f16_f32 = function(h) return string.format("__half2float(__ushort_as_half((unsigned short)(%s)))", h) end,
    -- qualifier of helpers kept out of line (rarely taken paths)
    cold_fn = "static __device__ __noinline__",
  },
  -- Attention family vocabulary (templates/attn): helper qualifier, unrolling
  -- hint, f32 sine and cosine (statement), and the K/V pipeline: copy16
  -- starts an asynchronous 16-byte global -> shared copy (cp.async.cg, L2
  -- only; both addresses 16-byte aligned), commit closes the copies issued
  -- since the last commit into a group, wait(n) blocks until at most n groups
  -- are pending (a barrier must follow before other threads read the data).
  attn = {
    fn = "[[maybe_unused]] static __device__ __forceinline__",
    unroll = "#pragma unroll",
    -- kernel parameter passed by value whose address device code takes
    param = "const __grid_constant__",
    sincos = function(x, s, c) return string.format("sincosf(%s, &%s, &%s);", x, s, c) end,
    preamble = table.concat({
      "static __device__ __forceinline__ void kg_attn_cp16(void *s, const void *g) {",
      '  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\\n"',
      '               :: "r"((uint32_t)__cvta_generic_to_shared(s)), "l"(g) : "memory");',
      "}",
    }, "\n"),
    copy16 = function(dst, src) return string.format("kg_attn_cp16(%s, %s)", dst, src) end,
    -- kg_attn_unpack8(uint4 raw, float (&f)[8]): the 8 16-bit elements of a
    -- vector (element 0 in the low half of raw.x) as f32, in registers
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
    commit = 'asm volatile("cp.async.commit_group;\\n" ::: "memory")',
    wait = function(n) return string.format('asm volatile("cp.async.wait_group %d;\\n" ::: "memory")', n) end,
  },
}
