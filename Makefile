# kgen -- build, generate, test.
#   make gen        regenerate generated/ from specs/ and templates/ (needs Lua)
#   make lib        build build/<backends>/libkg.a (C always; CUDA with nvcc; HIP with hipcc)
#   make test       install what is missing, then every CPU-side check
#   make check      the Check suites of the C runtime only (CK_RUN_SUITE=Name picks one)
#   make test-gpu   CUDA variants against the CPU reference (needs a GPU; no Lua;
#                   KG_GPU_CHECK=memcheck: under compute-sanitizer)
#   make test-gpu-host  the GPU test programs on the C backend (checks the tests without a GPU)
#   make fuzz       argument fuzz of the public entry points under ASan and UBSan (C backend)
#   make bench      kg vs cuBLAS on the GPU
#   make bench-cpu  the C backend (FP4 vs kg's bf16 on the same shapes; OMP_NUM_THREADS threads)
# Variables: KG_LUA (luajit), KG_KERNELS (name globs for gen), NVCC, HIPCC,
# KG_CUDA=0 / KG_HIP=0 to leave a backend out, KG_OPENMP=0 to build the C backend
# without threads (kg_internal.h: C backend threads).

KG_LUA   ?= luajit
CC       ?= cc
CFLAGS   ?= -O2 -g
NVCC     ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
HIPCC    ?= $(shell command -v hipcc 2>/dev/null)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
KG_CUDA  ?= $(if $(NVCC),1,0)
KG_HIP   ?= $(if $(HIPCC),1,0)
KG_OPENMP ?= 1
OMPFLAGS := $(if $(filter 1,$(KG_OPENMP)),-fopenmp)

# Objects and libkg.a live in a directory per backend set, so builds with
# different KG_CUDA/KG_HIP never mix; programs land in build/.
CFG := $(if $(filter 1,$(KG_CUDA)),cuda-)$(if $(filter 1,$(KG_HIP)),hip-)c$(if $(filter 1,$(KG_OPENMP)),,-serial)
B := build/$(CFG)
KG_CFLAGS := -std=c11 -Wall -Wextra -Werror=implicit-function-declaration -fPIC -Iruntime/include -Iruntime/src -Igenerated $(OMPFLAGS) $(CFLAGS)
NVFLAGS   := -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -lineinfo -Xcompiler -fPIC -Iruntime/include -Iruntime/src -Igenerated
HIPFLAGS  := -O3 -std=c++17 --offload-arch=gfx90a -fPIC -Iruntime/include -Iruntime/src -Igenerated

C_SRC    := $(wildcard generated/c/*.c)
CUDA_SRC := $(wildcard generated/cuda/*.cu)
HIP_SRC  := $(wildcard generated/hip/*.hip)

OBJ := $(B)/rt/kg.o $(B)/rt/kg_fp4.o $(B)/rt/kg_wave.o $(B)/rt/kg_attn.o $(B)/rt/kg_table.o $(patsubst generated/c/%.c,$(B)/c/%.o,$(C_SRC))
DEFS :=
LDLIBS := -lm -lpthread $(OMPFLAGS)
ifeq ($(KG_CUDA),1)
  OBJ += $(B)/rt/kg_cuda.o $(patsubst generated/cuda/%.cu,$(B)/cuda/%.o,$(CUDA_SRC))
  DEFS += -DKG_WITH_CUDA
  LDLIBS += -L$(CUDA_HOME)/lib64 -lcudart -lstdc++
endif
ifeq ($(KG_HIP),1)
  OBJ += $(B)/rt/kg_hip.o $(patsubst generated/hip/%.hip,$(B)/hip/%.o,$(HIP_SRC))
  DEFS += -DKG_WITH_HIP
  LDLIBS += -lamdhip64 -lstdc++
endif

.PHONY: all gen deps lib demo check test test-gpu test-gpu-host fuzz san-lib bench clean list build/fuzz_fp4 build/fuzz_gemm build/fuzz_attn build/demo build/fp4_ffn build/check_kg build/test_gpu build/test_gpu_dual build/test_gpu_fp4 build/test_gpu_gemm_fp4 build/test_gpu_dualgemm_fp4 build/test_gpu_attn build/bench_gemm build/bench_dualgemm build/bench_fp4 build/bench_decode build/bench_cpu bench-cpu
all: lib

deps:
	@./tools/install-deps.sh

gen:
	@KG_LUA=$(KG_LUA) gen/kgen gen

list:
	@KG_LUA=$(KG_LUA) gen/kgen list

lib: $(B)/libkg.a

$(B)/libkg.a: $(OBJ)
	@rm -f $@
	ar rcs $@ $^

# What every object includes: the public header (argument structs) and the internal one.
RT_HDRS := runtime/include/kg.h runtime/src/kg_internal.h

# kg.c and kg_table.c see which backends are compiled in.
$(B)/rt/kg.o: runtime/src/kg.c $(RT_HDRS) runtime/src/kg_half.h
	@mkdir -p $(@D)
	$(CC) $(KG_CFLAGS) $(DEFS) -c $< -o $@
$(B)/rt/kg_fp4.o: runtime/src/kg_fp4.c $(RT_HDRS) runtime/src/kg_half.h
	@mkdir -p $(@D)
	$(CC) $(KG_CFLAGS) $(DEFS) -c $< -o $@
$(B)/rt/kg_wave.o: runtime/src/kg_wave.c $(RT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(KG_CFLAGS) $(DEFS) -c $< -o $@
$(B)/rt/kg_attn.o: runtime/src/kg_attn.c $(RT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(KG_CFLAGS) $(DEFS) -c $< -o $@
$(B)/rt/kg_table.o: generated/kg_table.c generated/kg_table.h $(RT_HDRS)
	@mkdir -p $(@D)
	$(CC) $(KG_CFLAGS) $(DEFS) -c $< -o $@
$(B)/rt/kg_cuda.o: runtime/src/kg_cuda.cu $(RT_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@
$(B)/rt/kg_hip.o: runtime/src/kg_hip.hip $(RT_HDRS)
	@mkdir -p $(@D)
	$(HIPCC) $(HIPFLAGS) -x hip -c $< -o $@
$(B)/c/%.o: generated/c/%.c $(RT_HDRS) runtime/src/kg_half.h
	@mkdir -p $(@D)
	$(CC) $(KG_CFLAGS) -c $< -o $@
$(B)/cuda/%.o: generated/cuda/%.cu $(RT_HDRS)
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@
$(B)/hip/%.o: generated/hip/%.hip $(RT_HDRS)
	@mkdir -p $(@D)
	$(HIPCC) $(HIPFLAGS) -x hip -c $< -o $@

# ---- programs -------------------------------------------------------------
build/demo build/fp4_ffn: build/%: examples/%.c $(B)/libkg.a
	$(CC) $(KG_CFLAGS) $(DEFS) $(if $(filter 1,$(KG_CUDA)),-I$(CUDA_HOME)/include) $< $(B)/libkg.a $(LDLIBS) -o $@

# The examples: GEMM (demo.c) and the FP4 weight path of an FFN (fp4_ffn.c).
demo: build/demo build/fp4_ffn
	build/demo
	build/fp4_ffn

# Every tests/c/*.c: the suites check_main.c runs (ValidationTest, DispatchTest,
# GemmTest, DualGemm, FP4Test, GemmFp4Test, and check_wave.c's
# MfmaTile16x16x16Test, Transpose4x4HalfTest, RowsumTest on the C backend's
# emulated wavefront).
CHECK_SRC := $(wildcard tests/c/*.c)
build/check_kg: $(CHECK_SRC) $(wildcard tests/c/*.h) $(B)/libkg.a
	$(CC) $(KG_CFLAGS) $(DEFS) $(CHECK_SRC) $(B)/libkg.a $$(pkg-config --cflags --libs check) $(LDLIBS) -o $@

check:
	$(MAKE) KG_CUDA=0 KG_HIP=0 build/check_kg
	build/check_kg

build/test_gpu: tests/gpu/test_gpu.c $(wildcard tests/gpu/*.h) $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/libkg.a $(LDLIBS) -o $@

build/test_gpu_dual: tests/gpu/test_gpu_dual.c $(wildcard tests/gpu/*.h) $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/libkg.a $(LDLIBS) -o $@

build/test_gpu_fp4: tests/gpu/test_gpu_fp4.c $(wildcard tests/gpu/*.h) tests/c/fp4_ref.h $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/libkg.a $(LDLIBS) -o $@

build/test_gpu_gemm_fp4: tests/gpu/test_gpu_gemm_fp4.c $(wildcard tests/gpu/*.h) tests/c/fp4_ref.h $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/libkg.a $(LDLIBS) -o $@

build/test_gpu_dualgemm_fp4: tests/gpu/test_gpu_dualgemm_fp4.c $(wildcard tests/gpu/*.h) tests/c/fp4_ref.h $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/libkg.a $(LDLIBS) -o $@

# The GPU tests share tests/gpu/gpu_test.h; the FP4 ones tests/c/fp4_ref.h and the decode-attention
# one tests/c/attn_ref.h with the Check suites.
build/test_gpu_attn: tests/gpu/test_gpu_attn.c $(wildcard tests/gpu/*.h) tests/c/attn_ref.h $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/libkg.a $(LDLIBS) -o $@

build/bench_gemm: bench/bench_gemm.c $(wildcard bench/*.h) $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/libkg.a -L$(CUDA_HOME)/lib64 -lcublas $(LDLIBS) -o $@

# The peers' own elementwise kernels (e.g. silu*mul after two cuBLAS GEMMs).
$(B)/bench/peer_kernels.o: bench/peer_kernels.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c $< -o $@

build/bench_fp4: bench/bench_fp4.c $(wildcard bench/*.h) $(B)/bench/peer_kernels.o $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/bench/peer_kernels.o $(B)/libkg.a -L$(CUDA_HOME)/lib64 -lcublas $(LDLIBS) -o $@

build/bench_dualgemm: bench/bench_dualgemm.c $(wildcard bench/*.h) $(B)/bench/peer_kernels.o $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/bench/peer_kernels.o $(B)/libkg.a -L$(CUDA_HOME)/lib64 -lcublas $(LDLIBS) -o $@

build/bench_decode: bench/bench_decode.c $(wildcard bench/*.h) tests/c/attn_ref.h $(B)/libkg.a
	$(CC) $(KG_CFLAGS) -DKG_WITH_CUDA -I$(CUDA_HOME)/include $< $(B)/libkg.a -L$(CUDA_HOME)/lib64 -lcublas $(LDLIBS) -o $@

# ---- tests ----------------------------------------------------------------
test:
	@./tests/run_all.sh

# Argument fuzz of the GEMM, DualGemm, FP4 and decode-attention entry points (tests/fuzz/)
# with AddressSanitizer and UndefinedBehaviorSanitizer, on a C-backend libkg of its own
# (build/san): buffers have exactly the documented extents, so any access outside them fails.
SAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
san-lib:
	$(MAKE) KG_CUDA=0 KG_HIP=0 B=build/san CFLAGS="$(SAN_CFLAGS)" build/san/libkg.a
build/fuzz_fp4 build/fuzz_gemm build/fuzz_attn: build/fuzz_%: tests/fuzz/fuzz_%.c san-lib
	$(CC) $(KG_CFLAGS) $(SAN_CFLAGS) -Itests/c $< tests/c/test_util.c build/san/libkg.a $$(pkg-config --cflags --libs check) -lm -lpthread -o $@

fuzz: build/fuzz_fp4 build/fuzz_gemm build/fuzz_attn
	build/fuzz_fp4 200000
	build/fuzz_gemm 100000
	build/fuzz_attn 100000

# The GPU test programs built for the C backend (host memory, kg_*_c_* variants):
# checks the tests themselves on a machine without a GPU. Built with -DKG_GPU_TEST_HOST (gpu_test.h).
GPU_HOST_TESTS := fp4 gemm_fp4 dualgemm_fp4
test-gpu-host:
	$(MAKE) KG_CUDA=0 KG_HIP=0 lib
	@set -e; for n in $(GPU_HOST_TESTS); do \
	  $(CC) $(KG_CFLAGS) -DKG_GPU_TEST_HOST tests/gpu/test_gpu_$$n.c build/c/libkg.a $(LDLIBS) -o build/test_gpu_$${n}_host; \
	  echo "== build/test_gpu_$${n}_host"; build/test_gpu_$${n}_host > build/.gpu_host.log 2>&1 || \
	  { grep -E '^FAIL' build/.gpu_host.log | head -n 20; tail -n 1 build/.gpu_host.log; exit 1; }; \
	  tail -n 1 build/.gpu_host.log; done

test-gpu:
	$(MAKE) KG_CUDA=1 KG_HIP=0 -j$$(nproc) build/test_gpu build/test_gpu_dual build/test_gpu_fp4 build/test_gpu_gemm_fp4 \
	  build/test_gpu_dualgemm_fp4 build/test_gpu_attn
	@./tests/gpu/run.sh

bench:
	$(MAKE) KG_CUDA=1 KG_HIP=0 -j$$(nproc) build/bench_gemm build/bench_dualgemm build/bench_fp4 build/bench_decode
	build/bench_gemm && build/bench_dualgemm && build/bench_fp4 && build/bench_decode
	@if python3 -c 'import torch' 2>/dev/null; then python3 bench/peer_sdpa.py; else echo "bench/peer_sdpa.py: no PyTorch here, no SDPA peer row"; fi

# The C backend's rows (bench-cpu builds it on a C-only libkg).
build/bench_cpu: bench/bench_cpu.c $(B)/libkg.a
	$(CC) $(KG_CFLAGS) $< $(B)/libkg.a $(LDLIBS) -o $@

bench-cpu:
	$(MAKE) KG_CUDA=0 KG_HIP=0 build/bench_cpu
	build/bench_cpu

clean:
	rm -rf build
