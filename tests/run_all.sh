#!/bin/sh
# make test: every CPU-side check, then one summary. Exit status 0 only when
# every step passed (skipped steps say why, loudly).
cd "$(dirname "$0")/.." || exit 1
JOBS=$(nproc 2>/dev/null || echo 2)
LOG=build/test-logs
mkdir -p "$LOG"
pass=0; fail=0; skip=0; summary=""

step() {  # step NAME COMMAND...: runs COMMAND, logs to build/test-logs/NAME.log
  name=$1; shift
  printf '== %s\n' "$name"
  start=$(date +%s)
  if "$@" >"$LOG/$name.log" 2>&1; then
    result=PASS; pass=$((pass + 1))
  else
    result=FAIL; fail=$((fail + 1))
    tail -n 40 "$LOG/$name.log"
  fi
  summary="$summary$(printf '%-6s %-22s %4ss  %s' "$result" "$name" "$(($(date +%s) - start))" "$LOG/$name.log")
"
}
skipped() {
  printf '== %s\n** SKIPPED: %s **\n' "$1" "$2"
  skip=$((skip + 1))
  summary="$summary$(printf 'SKIP   %-22s        %s' "$1" "$2")
"
}

./tools/install-deps.sh || { echo "make test: cannot install dependencies"; exit 1; }

step luacheck luacheck -q gen specs tests/lua
step busted-luajit luajit /usr/bin/busted -o utfTerminal tests/lua
step busted-lua5.4 lua5.4 /usr/bin/busted -o utfTerminal tests/lua

drift() {
  KG_KERNELS= KG_LUA=luajit gen/kgen gen || return 1
  git diff --exit-code --stat -- generated/ || { echo "generated/ is stale: run 'make gen' and commit"; return 1; }
  untracked=$(git ls-files --others --exclude-standard -- generated/)
  [ -z "$untracked" ] || { echo "untracked generated files (commit them):"; echo "$untracked"; return 1; }
}
if git rev-parse --git-dir >/dev/null 2>&1; then step drift drift; else skipped drift "not a git checkout"; fi

same_bytes() {
  tmp=$(mktemp -d) && KG_KERNELS= KG_LUA=lua5.4 gen/kgen --out "$tmp" gen && diff -r generated "$tmp" && rm -rf "$tmp"
}
step lua5.4-same-bytes same_bytes

nvcc_path=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
[ -n "$nvcc_path" ] || skipped nvcc-sm_90a "nvcc not found: generated .cu files NOT compile-checked"
command -v hipcc >/dev/null || skipped hipcc-gfx90a "hipcc not found: generated .hip files NOT compile-checked"
# Builds libkg with every available backend: compiles each generated .c, .cu (sm_90a) and .hip (gfx90a).
step build-all make -j"$JOBS" lib
step check-suites sh -c "make -j$JOBS KG_CUDA=0 KG_HIP=0 build/check_kg && build/check_kg"
step demo make demo
# The CPU bench's program, one call per row at m = 1 (its checks of the outputs must pass).
step bench-cpu sh -c "make KG_CUDA=0 KG_HIP=0 build/bench_cpu && KG_BENCH_MS=1 KG_BENCH_REPS=1 build/bench_cpu"
step fuzz make -j"$JOBS" fuzz

printf '\n==== make test summary ====\n%s' "$summary"
printf 'make test: %d passed, %d failed, %d skipped\n' "$pass" "$fail" "$skip"
[ "$fail" -eq 0 ]
