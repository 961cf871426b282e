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
}
