/*
** peer_kernels.cu -- the peers' own elementwise kernels for the benchmarks.
**
** kgb_silu_mul_bf16: out = silu(x0) * x1 elementwise over an m x n row-major
** matrix (each operand with its own leading dimension), bf16 in and out, f32
** math in between: the second half of the "cuBLAS GEMM(s) + fused silu*mul"
** SwiGLU peers of bench_dualgemm.c. One pass, grid-stride, 16-byte vectors
** (8 bf16) when n, the leading dimensions and the pointers allow it (always
** for the LLM shapes), else one element per thread.
** silu(x) = x / (1 + exp(-x)), evaluated on the bf16 values as loaded, the
** same semantics as kg's DualGemm (the op acts on output-typed D0, D1).
**
** kgb_read_bytes: reads up to three device buffers once each and nothing else
** (16-byte loads, four in flight per thread, all SMs; the fold of the bytes is
** stored only if it equals a constant, which keeps the loads live): the time a
** kernel needs to stream those bytes, launches and ramp included. bench_fp4's
** read floor for the FP4 weights. With pdl set it is launched as a programmatic
** dependent launch (griddepcontrol, sm_90) that lets the next launch start at
** once and waits for the one ahead only before its store: the floor of kg's
** KG_EXEC_PDL launches, which load their first weights the same way.
*/
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdint.h>

static __device__ __forceinline__ float kgb_silu(float x) { return x / (1.0f + expf(-x)); }

static __device__ __forceinline__ __nv_bfloat162 kgb_silu_mul2(__nv_bfloat162 a, __nv_bfloat162 b) {
  float2 fa = __bfloat1622float2(a), fb = __bfloat1622float2(b);
  return __floats2bfloat162_rn(kgb_silu(fa.x) * fb.x, kgb_silu(fa.y) * fb.y);
}

/* Vectors of 8: nv = n / 8 per row; lds in vectors. */
__global__ void kgb_silu_mul_bf16_v8(const uint4 *__restrict__ x0, int64_t ld0, const uint4 *__restrict__ x1,
                                     int64_t ld1, uint4 *__restrict__ out, int64_t ldo, int64_t m, int64_t nv) {
  const int64_t total = m * nv, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; v < total; v += step) {
    const int64_t r = v / nv, c = v - r * nv;
    uint4 a = __ldg(x0 + r * ld0 + c), b = __ldg(x1 + r * ld1 + c), o;
    const __nv_bfloat162 *pa = reinterpret_cast<const __nv_bfloat162 *>(&a);
    const __nv_bfloat162 *pb = reinterpret_cast<const __nv_bfloat162 *>(&b);
    __nv_bfloat162 *po = reinterpret_cast<__nv_bfloat162 *>(&o);
#pragma unroll
    for (int q = 0; q < 4; q++) po[q] = kgb_silu_mul2(pa[q], pb[q]);
    out[r * ldo + c] = o;
  }
}

__global__ void kgb_silu_mul_bf16_v1(const __nv_bfloat16 *__restrict__ x0, int64_t ld0,
                                     const __nv_bfloat16 *__restrict__ x1, int64_t ld1, __nv_bfloat16 *__restrict__ out,
                                     int64_t ldo, int64_t m, int64_t n) {
  const int64_t total = m * n, step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t v = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; v < total; v += step) {
    const int64_t r = v / n, c = v - r * n;
    const float a = __bfloat162float(x0[r * ld0 + c]), b = __bfloat162float(x1[r * ld1 + c]);
    out[r * ldo + c] = __float2bfloat16_rn(kgb_silu(a) * b);
  }
}

/* *sms: the current device's multiprocessor count (looked up once). */
static cudaError_t kgb_sm_count(int *sms) {
  static int n = 0;
  if (n == 0) {
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
    if (e != cudaSuccess) return e;
  }
  *sms = n;
  return cudaSuccess;
}

/* out[r][c] = silu(x0[r][c]) * x1[r][c] for r < m, c < n (row-major, lds in elements), on the
** given stream (cudaStream_t; NULL: the default stream). Returns the launch's cudaError_t. */
extern "C" int kgb_silu_mul_bf16(const void *x0, int64_t ldx0, const void *x1, int64_t ldx1, void *out, int64_t ldo,
                                 int64_t m, int64_t n, void *stream) {
  int sms = 0;
  const cudaError_t se = kgb_sm_count(&sms);
  if (se != cudaSuccess) return (int)se;
  if (m <= 0 || n <= 0) return (int)cudaSuccess;
  const int threads = 256;
  const int vec = n % 8 == 0 && ldx0 % 8 == 0 && ldx1 % 8 == 0 && ldo % 8 == 0 && (uintptr_t)x0 % 16 == 0 &&
                  (uintptr_t)x1 % 16 == 0 && (uintptr_t)out % 16 == 0;
  const int64_t work = vec ? m * (n / 8) : m * n;
  int64_t blocks = (work + threads - 1) / threads;
  const int64_t cap = (int64_t)sms * 16;  /* grid-stride beyond a few waves */
  if (blocks > cap) blocks = cap;
  cudaStream_t st = (cudaStream_t)stream;
  if (vec)
    kgb_silu_mul_bf16_v8<<<(unsigned)blocks, threads, 0, st>>>((const uint4 *)x0, ldx0 / 8, (const uint4 *)x1,
                                                                 ldx1 / 8, (uint4 *)out, ldo / 8, m, n / 8);
  else
    kgb_silu_mul_bf16_v1<<<(unsigned)blocks, threads, 0, st>>>((const __nv_bfloat16 *)x0, ldx0,
                                                                 (const __nv_bfloat16 *)x1, ldx1, (__nv_bfloat16 *)out,
                                                                 ldo, m, n);
  return (int)cudaGetLastError();
}

/* The buffers read by kgb_read_bytes: n[i] bytes at p[i] (n[i] == 0: none); pdl: launched as a
** programmatic dependent launch. */
typedef struct kgb_bufs { const unsigned char *p[3]; int64_t n[3]; int pdl; } kgb_bufs;

__global__ void kgb_read_bytes_kernel(kgb_bufs b, unsigned *sink) {
  if (b.pdl) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  const int64_t step = (int64_t)gridDim.x * blockDim.x, tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned x = 0;
  for (int i = 0; i < 3; i++) {
    const uint4 *v = reinterpret_cast<const uint4 *>(b.p[i]);
    const int64_t nv = b.n[i] / 16;
    int64_t j = tid;
    for (; j + 3 * step < nv; j += 4 * step) {
      const uint4 a = __ldg(v + j), c = __ldg(v + j + step), d = __ldg(v + j + 2 * step), e = __ldg(v + j + 3 * step);
      x ^= a.x ^ a.y ^ a.z ^ a.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w ^ e.x ^ e.y ^ e.z ^ e.w;
    }
    for (; j < nv; j += step) { const uint4 a = __ldg(v + j); x ^= a.x ^ a.y ^ a.z ^ a.w; }
    for (int64_t t = nv * 16 + tid; t < b.n[i]; t += step) x ^= b.p[i][t];   /* bytes past the last 16 */
  }
  if (b.pdl) asm volatile("griddepcontrol.wait;" ::: "memory");   /* the launch ahead may write sink */
  if (x == 0x9e3779b9u) *sink = x;
}

/* Read n0 bytes at p0, n1 at p1, n2 at p2 (16-byte aligned; n == 0: skipped) on the given stream;
** sink: 4 writable device bytes; pdl != 0: as a programmatic dependent launch. Returns the
** launch's cudaError_t. */
extern "C" int kgb_read_bytes(const void *p0, int64_t n0, const void *p1, int64_t n1, const void *p2, int64_t n2,
                              void *sink, int pdl, void *stream) {
  int sms = 0;
  const cudaError_t se = kgb_sm_count(&sms);
  if (se != cudaSuccess) return (int)se;
  kgb_bufs b = { { (const unsigned char *)p0, (const unsigned char *)p1, (const unsigned char *)p2 }, { n0, n1, n2 },
                 pdl != 0 };
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.gridDim = dim3((unsigned)sms * 8);
  cfg.blockDim = dim3(256);
  cfg.stream = (cudaStream_t)stream;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return (int)cudaLaunchKernelEx(&cfg, kgb_read_bytes_kernel, b, (unsigned *)sink);
}
