#!/usr/bin/env python3
"""peer_sdpa.py -- the decode-attention peer of /shared/bench.md: PyTorch
scaled_dot_product_attention on the bench_decode shapes, in the same run as the
copy ceiling.

Shapes: bf16, 32 q heads / 8 kv heads (GQA), head_dim 128, (batch, kv_len) in
{(1, 32768), (16, 4096), (64, 4096), (128, 2048)}; one query token per request.
The peer gets its favourite layout: q [B, 32, 1, 128], K and V contiguous
[B, 8, L, 128] (no page table), enable_gqa=True (PyTorch >= 2.5; older versions
expand K and V to 32 heads outside the timed region, and the row says so).
Timing: CUDA events on one stream, about 200 ms of warm-up, the median of 30
samples of back-to-back launches (about 1 ms each) rotating over input sets
that together exceed 2.5x the L2, so K and V come from memory. TB/s counts the
K and V bytes only, as bench_decode does; % copy is against a 1 GiB
device-to-device copy (bytes read + written) measured first. Check: request 0's
output against a float64 softmax(q.k^T / sqrt(d)).v reference; NaN fails.
Exit status: 0 all rows passed, 1 a check failed, 2 no CUDA device or PyTorch.
Environment: KG_BENCH_REPS (samples, default 30, at least 20), KG_BENCH_SHAPES
("1x32768,64x4096"), KG_COMMIT (printed).
"""
import math
import os
import subprocess
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("peer_sdpa: PyTorch is not installed; no peer row")
    sys.exit(2)

SHAPES = [(1, 32768), (16, 4096), (64, 4096), (128, 2048)]
HQ, HK, D = 32, 8, 128
WARM_MS, SAMPLE_MS = 200.0, 1.0


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def time_op(fn, nsets, reps):
    """Per-launch ms: median, min, max of reps samples (fn(i) launches on set i)."""
    for i in range(nsets):
        fn(i)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for i in range(nsets):
        fn(i)
    e1.record()
    torch.cuda.synchronize()
    est = max(e0.elapsed_time(e1) / nsets, 1e-3)
    for i in range(min(int(math.ceil(WARM_MS / est)), 20000)):
        fn(i % nsets)
    inner = max(1, min(1000, int(math.ceil(SAMPLE_MS / est))))
    inner = (inner + nsets - 1) // nsets * nsets
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record()
        for i in range(inner):
            fn(i % nsets)
        b.record()
    torch.cuda.synchronize()
    ms = sorted(a.elapsed_time(b) / inner for a, b in ev)
    return median(ms), ms[0], ms[-1]


def copy_ceiling(reps):
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    src.fill_(1)
    med, _, _ = time_op(lambda i: dst.copy_(src), 1, reps)
    return 2.0 * n / (med * 1e-3) / 1e12, med


def main():
    if not torch.cuda.is_available():
        print("peer_sdpa: no CUDA device; no peer row")
        return 2
    reps = max(20, int(os.environ.get("KG_BENCH_REPS", "30")))
    shapes = SHAPES
    if os.environ.get("KG_BENCH_SHAPES"):
        shapes = [tuple(int(x) for x in s.split("x")) for s in os.environ["KG_BENCH_SHAPES"].split(",")]
    commit = os.environ.get("KG_COMMIT")
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            commit = "unknown"
    prop = torch.cuda.get_device_properties(0)
    l2 = getattr(prop, "L2_cache_size", 60 << 20)
    try:   # enable_gqa: PyTorch >= 2.5
        t = torch.zeros(1, 2, 1, 8, device="cuda")
        F.scaled_dot_product_attention(t, t[:, :1], t[:, :1], enable_gqa=True)
        gqa = True
    except (TypeError, RuntimeError):
        gqa = False
    copy_tbs, copy_ms = copy_ceiling(reps)
    print("==== decode attention peer: PyTorch scaled_dot_product_attention ====")
    print(f"GPU          {prop.name} ({prop.multi_processor_count} SMs, L2 {l2 >> 20} MB)")
    print(f"PyTorch      {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"commit       {commit}")
    print(f"ceiling      copy {copy_tbs:.3f} TB/s (D2D 1 GiB, read+write, {copy_ms:.3f} ms)")
    print(f"{'batch':>6} {'kv_len':>7} {'sdpa us':>10} {'TB/s K+V':>9} {'%copy':>6} check")
    fails = 0
    g = torch.Generator(device="cuda")
    g.manual_seed(1)
    for (b, length) in shapes:
        kv_bytes = b * HK * length * D * 2 * 2
        nsets = max(2, min(8, int(math.ceil(2.5 * l2 / kv_bytes))))
        sets = []
        for _ in range(nsets):
            q = (torch.rand(b, HQ, 1, D, device="cuda", generator=g) * 4 - 2).to(torch.bfloat16)
            k = (torch.rand(b, HK, length, D, device="cuda", generator=g) * 2 - 1).to(torch.bfloat16)
            v = (torch.rand(b, HK, length, D, device="cuda", generator=g) * 2 - 1).to(torch.bfloat16)
            sets.append((q, k, v))
        if gqa:
            def run(i):
                q, k, v = sets[i]
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        else:
            rep = HQ // HK
            expanded = [(q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)) for q, k, v in sets]

            def run(i):
                q, k, v = expanded[i]
                return F.scaled_dot_product_attention(q, k, v)
        med, _, _ = time_op(run, nsets, reps)
        out = run(0).float()
        q, k, v = (t[0].double() for t in sets[0])
        kk = k.repeat_interleave(HQ // HK, dim=0)
        vv = v.repeat_interleave(HQ // HK, dim=0)
        ref = torch.softmax(q @ kk.transpose(-1, -2) / math.sqrt(D), dim=-1) @ vv
        err = ((out[0].double() - ref).norm() / ref.norm()).item()
        ok = math.isfinite(err) and err <= 1e-2 and bool(torch.isfinite(out).all())
        fails += not ok
        tbs = kv_bytes / (med * 1e-3) / 1e12
        note = "" if gqa else " (K/V expanded to 32 heads: enable_gqa unavailable)"
        print(f"{b:>6} {length:>7} {med * 1e3:>10.1f} {tbs:>9.3f} {100 * tbs / copy_tbs:>6.1f} "
              f"{'ok' if ok else 'FAIL'} rel err {err:.2e}{note}")
        del sets
        torch.cuda.empty_cache()
    print(f"result: {len(shapes) - fails} of {len(shapes)} rows passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
