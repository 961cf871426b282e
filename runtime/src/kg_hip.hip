/* kg_hip.hip -- HIP backend glue: device presence. */
#include <hip/hip_runtime.h>
#include "kg_internal.h"

extern "C" int kg__hip_available(void) {
  int n = 0;
  if (hipGetDeviceCount(&n) != hipSuccess) { (void)hipGetLastError(); return 0; }
  return n > 0;
}
