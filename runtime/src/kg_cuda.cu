/* kg_cuda.cu -- CUDA backend glue: device presence. */
#include <cuda_runtime.h>
#include "kg_internal.h"

extern "C" int kg__cuda_available(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) { (void)cudaGetLastError(); return 0; }
  return n > 0;
}
