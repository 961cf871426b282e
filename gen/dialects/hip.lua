-- HIP dialect (target gfx90a, CDNA: 64-lane wavefronts).
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
  includes = { "<hip/hip_runtime.h>", "<hip/hip_fp16.h>", "<hip/hip_bfloat16.h>", "<stdint.h>", '"kg_internal.h"' },
  extern_c = 'extern "C"',
  static_fn = "static",
  kernel = "__global__",
  device_fn = "static __device__ __forceinline__",
  shared = "__shared__",
  restrict = "__restrict__",
  barrier = "__syncthreads()",
  storage = { f32 = "float", f16 = "__half", bf16 = "hip_bfloat16" },
  to_f32 = { f32 = "%s", f16 = "__half2float(%s)", bf16 = "static_cast<float>(%s)" },
  from_f32 = { f32 = "%s", f16 = "__float2half_rn(%s)", bf16 = "hip_bfloat16(%s)" },
  -- HIP shuffles take no member mask; width is the full wavefront
  shfl_xor = function(v, mask) return string.format("__shfl_xor(%s, %s, 64)", v, mask) end,
  launch = function(kernel, grid, block, smem, stream, args)
    return string.format("hipLaunchKernelGGL(%s, %s, %s, %s, %s, %s);", kernel, grid, block, smem, stream, args)
  end,
  set_smem_limit = function(kernel, bytes)
    return string.format("hipFuncSetAttribute((const void *)%s, hipFuncAttributeMaxDynamicSharedMemorySize, %s)", kernel, bytes)
  end,
}
