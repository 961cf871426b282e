/* kg_hip.hip -- HIP backend glue: device presence, compute-unit count. */
#include <hip/hip_runtime.h>
#include "kg_internal.h"

/* Clears this thread's pending HIP error (kg__set_backend_error, after a failure). */
extern "C" void kg__hip_clear_error(void) { (void)hipGetLastError(); }

extern "C" int kg__hip_available(void) {
  int n = 0;
  if (hipGetDeviceCount(&n) != hipSuccess) { (void)hipGetLastError(); return 0; }
  return n > 0;
}

/* Compute units of the current device, queried once per device and cached;
** 0 when it cannot be queried. */
extern "C" int kg__hip_sm_count(void) {
  static int cache[64];
  int dev = 0, n = 0;
  if (hipGetDevice(&dev) != hipSuccess) { (void)hipGetLastError(); return 0; }
  if (dev >= 0 && dev < 64 && cache[dev] > 0) return cache[dev];
  if (hipDeviceGetAttribute(&n, hipDeviceAttributeMultiprocessorCount, dev) != hipSuccess) {
    (void)hipGetLastError();
    return 0;
  }
  if (dev >= 0 && dev < 64) cache[dev] = n;
  return n;
}
