-- CUDA dialect (target sm_90a). Kernel templates use these words instead of
-- writing CUDA spellings themselves.
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
  includes = { "<cuda_runtime.h>", "<cuda_fp16.h>", "<cuda_bf16.h>", "<stdint.h>", '"kg_internal.h"' },
  extern_c = 'extern "C"',
  static_fn = "static",
  kernel = "__global__",
  device_fn = "static __device__ __forceinline__",
  shared = "__shared__",
  restrict = "__restrict__",
  barrier = "__syncthreads()",
  storage = { f32 = "float", f16 = "__half", bf16 = "__nv_bfloat16" },
  to_f32 = { f32 = "%s", f16 = "__half2float(%s)", bf16 = "__bfloat162float(%s)" },
  from_f32 = { f32 = "%s", f16 = "__float2half_rn(%s)", bf16 = "__float2bfloat16_rn(%s)" },
  -- xor shuffle across the full warp
  shfl_xor = function(v, mask) return string.format("__shfl_xor_sync(0xffffffffu, %s, %s)", v, mask) end,
  -- kernel launch statement
  launch = function(kernel, grid, block, smem, stream, args)
    return string.format("%s<<<%s, %s, %s, %s>>>(%s);", kernel, grid, block, smem, stream, args)
  end,
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
        "static __device__ __forceinline__ void kg_mma(kg_acc &c, const kg_frag_a &a, const kg_frag_b &b) {",
        '  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.' .. ty .. "." .. ty .. '.f32 "',
        '               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\\n"',
        '               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])',
        '               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));',
        "}",
        "static __device__ __forceinline__ void kg_cp_async16(void *s, const void *g, int bytes) {",
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
  },
}
