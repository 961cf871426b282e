#!/bin/sh
# make test-gpu: every GPU test program, then one total line.
# KG_GPU_CHECK=TOOL runs each program under `compute-sanitizer --tool TOOL` (memcheck, racecheck,
# synccheck, initcheck); a program with a sanitizer error fails (exit status 99).
cd "$(dirname "$0")/../.." || exit 1
wrap=""
if [ -n "${KG_GPU_CHECK:-}" ]; then
  command -v compute-sanitizer > /dev/null 2>&1 || { echo "KG_GPU_CHECK=$KG_GPU_CHECK: compute-sanitizer is not on PATH"; exit 1; }
  wrap="compute-sanitizer --tool $KG_GPU_CHECK --error-exitcode 99 --print-limit 20"
fi
total_p=0; total_f=0; rc=0
for t in build/test_gpu build/test_gpu_dual build/test_gpu_fp4 build/test_gpu_gemm_fp4 build/test_gpu_dualgemm_fp4 build/test_gpu_attn; do
  echo "== $t${wrap:+ (under $wrap)}"
  t0=$(date +%s)
  $wrap "$t" > build/.gpu_test.log 2>&1
  st=$?
  cat build/.gpu_test.log
  echo "($t: $(($(date +%s) - t0)) s)"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' build/.gpu_test.log | tail -n 1)
  p=$(echo "$line" | sed -E 's/^([0-9]+) passed.*/\1/'); f=$(echo "$line" | sed -E 's/.*passed, ([0-9]+) failed.*/\1/')
  [ -n "$line" ] || { p=0; f=1; echo "$t: no summary line"; }
  [ "$st" -eq 0 ] || { rc=1; echo "$t: exit status $st"; }
  total_p=$((total_p + p)); total_f=$((total_f + f))
done
echo "make test-gpu${KG_GPU_CHECK:+ (compute-sanitizer $KG_GPU_CHECK)}: $total_p passed, $total_f failed"
[ "$rc" -eq 0 ] && [ "$total_f" -eq 0 ]
