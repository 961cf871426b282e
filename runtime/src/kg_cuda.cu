/* kg_cuda.cu -- CUDA backend glue: device presence, SM count. */
#include <cuda_runtime.h>
#include "kg_internal.h"

/* Clears this thread's pending CUDA error (kg__set_backend_error, after a failure). */
extern "C" void kg__cuda_clear_error(void) { (void)cudaGetLastError(); }

extern "C" int kg__cuda_available(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) { (void)cudaGetLastError(); return 0; }
  return n > 0;
}

/* SMs of the current device, queried once per device and cached (the split-KV
** planner asks on every decode call); 0 when it cannot be queried. */
extern "C" int kg__cuda_sm_count(void) {
  static int cache[64];
  int dev = 0, n = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) { (void)cudaGetLastError(); return 0; }
  if (dev >= 0 && dev < 64 && cache[dev] > 0) return cache[dev];
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64) cache[dev] = n;
  return n;
}
