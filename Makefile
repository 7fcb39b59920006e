# tessera: a simulator (C11) and a CUDA engine for serving diffusion LLMs.
#
#   make run         build the simulator, install missing Debian packages (as root), run the default simulation
#   make check       the fast door: build the simulator and run every CPU test but the planted bugs
#                    (unit suites, golden scenarios, CLI checks, hostile inputs, shellcheck, the unit
#                    suites under AddressSanitizer + UBSan; hermetic; its time: README.md)
#   make check-full  the slow door: what make check leaves out (the planted bugs, the checks over
#                    ../shared's real traces; its time: README.md)
#   make check-records  re-derive the records from this build (after a cost-model change)
#   make engine      build the CUDA engine (wherever nvcc is found; `make` builds it too)
#   make check-gpu   (GPU machine) the engine's kernels and steps against the CPU reference
#   make check-gpu-tp TP=N  (machine of N GPUs) the engine split over N GPUs against one GPU, and live
#   make calibrate   (GPU machine) calibrate on this GPU in one command: profile, fit, held-out check, clock,
#                    install, and the host probe where torch imports (its time: README.md; TORCH=1 adds
#                    PyTorch eager's whole profile)
#   make bench-sim, make bench-engine, make bench-gemm, make bench-gemm-rows (GPU machine)
#   make check-soak  16 writers and 50 killed runs into one database, each run checked
#   make check-valgrind, make check-layers, make mutate, make fuzz FUZZ_SECONDS=N, make clean  (V=1: commands)
#   make check-slurm  (root, slurm-wlm) a sweep as a Slurm job array on a single-node Slurm
#
# Objects live in build/ (build/cpu for make check where nvcc is found but no GPU, and asan/ beneath
# either for the sanitizer build). Settings: CC, CFLAGS, NVCC,
# CUDA_ARCH (all: sm_80, sm_86, sm_89 and sm_90 in one binary; sm_NN: one), NO_CUDA=1 (simulator only), DEPS=dir (headers and libraries unpacked from
# Debian packages under dir/usr, for machines without them installed).
#
# Layers (each directory compiles against the include paths of its floor, so a header from a floor
# above does not compile): sim/core is the ground floor; sim/ (the simulator), traces/, engine/ (the
# engine proper) and kernels/ stand on it; the command line (sim/cli/) and the engine's
# harness (engine/harness/) tie them together.

CC ?= cc
CLANG ?= clang
NVCC ?= nvcc
CUDA_ARCH ?= all
BUILD ?= build
FUZZ_SECONDS ?= 20

VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
DATADIR := $(CURDIR)/sim/data

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
BASE_CFLAGS := -std=c11 $(WARN) -MMD -MP -DTS_DATADIR='"$(DATADIR)"' \
    -DTS_SRCDIR='"$(CURDIR)"'
OPT ?= -O2 -g
CFLAGS ?=
ALL_CFLAGS = $(BASE_CFLAGS) $(OPT) $(CFLAGS)
LIBS := -lgsl -lgslcblas -lsqlite3 -ljansson -lglpk -lm
ifneq ($(DEPS),)
DEPS_ABS := $(abspath $(DEPS))
BASE_CFLAGS += -I$(DEPS_ABS)/usr/include
LIBS := -L$(DEPS_ABS)/usr/lib/x86_64-linux-gnu -Wl,--disable-new-dtags,-rpath,$(DEPS_ABS)/usr/lib/x86_64-linux-gnu $(LIBS)
endif

# Include paths by floor: a file sees its own floor and those below it, nothing above.
INC_CORE := -Isim/core
INC_TRACES := $(INC_CORE) -Itraces
# the simulator's rooms, by job: caching policies, schedulers, cost models and their calibration,
# the database, the fleet; the event loop, configuration and requests stay in sim/ itself
SIM_ROOMS := policies sched cost db fleet plan
INC_SIM := $(INC_CORE) -Itraces -Isim $(SIM_ROOMS:%=-Isim/%)
# the engine's rooms: the device side (engine/gpu/: creation, steps, the forward, the head, graphs,
# moves, the arena, GEMMs, tensor parallelism) and the extensions (engine/ext/: a file a mechanism that
# hooks into the step, and their table); its host side stays in engine/ itself
ENGINE_ROOMS := gpu ext
INC_ENGINE := $(INC_CORE) -Iengine $(ENGINE_ROOMS:%=-Iengine/%) -Ikernels
INC_KERNELS := $(INC_CORE) -Ikernels
INC_TOP := $(INC_SIM) -Isim/cli -Iengine -Iengine/gpu -Iengine/ext -Iengine/harness -Ikernels
# the command line and the harness stand on every floor
CLI_SRC := $(wildcard sim/cli/*.c)
TOP_SRC := $(CLI_SRC) $(wildcard engine/harness/*.c)
inc_for = $(if $(filter $(TOP_SRC),$1),$(INC_TOP),$(if $(filter sim/core/%,$1),$(INC_CORE),$(if \
    $(filter traces/%,$1),$(INC_TRACES),$(if $(filter sim/%,$1),$(INC_SIM),$(if $(filter engine/%,$1),$(INC_ENGINE),$(INC_TOP))))))

# The engine is built wherever nvcc is found (said out loud); the simulator never needs it.
ifeq ($(NO_CUDA),)
NVCC_PATH := $(shell command -v $(NVCC) 2>/dev/null)
endif
ifneq ($(NVCC_PATH),)
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(NVCC_PATH)))
HAVE_CUDA := 1
ifeq ($(filter all sm_%,$(CUDA_ARCH)),)
$(error CUDA_ARCH=$(CUDA_ARCH): expected all or sm_NN, e.g. sm_89)
endif
comma := ,
# all: one fat binary for Ampere (sm_80, sm_86), Ada (sm_89) and Hopper (sm_90, with its sm_90a
# image), plus PTX of the newest for later GPUs; the engine picks each kernel the device runs
CUDA_CCS := $(if $(filter all,$(CUDA_ARCH)),80 86 89 90,$(patsubst sm_%,%,$(CUDA_ARCH)))
NVCCFLAGS ?= -O3 -std=c++17 -lineinfo
# Hopper also gets an sm_90a image: the wgmma attention kernel exists only there
ALL_NVCCFLAGS := $(NVCCFLAGS) $(INC_KERNELS) $(foreach c,$(CUDA_CCS),-gencode arch=compute_$(c)$(comma)code=sm_$(c)) \
    $(if $(filter 90,$(CUDA_CCS)),-gencode arch=compute_90a$(comma)code=sm_90a) \
    -gencode arch=compute_$(lastword $(CUDA_CCS))$(comma)code=compute_$(lastword $(CUDA_CCS)) -MMD -MP
# NCCL (tensor parallelism, engine/gpu/eng_tp.h) where its header is found: CUDA's own folder, NCCL_HOME,
# or the Debian package libnccl-dev; without it --tp is refused with the reason
NCCL_H := $(firstword $(wildcard $(if $(NCCL_HOME),$(NCCL_HOME)/include/nccl.h) $(CUDA_HOME)/include/nccl.h /usr/include/nccl.h))
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 $(if $(NCCL_HOME),-L$(NCCL_HOME)/lib -Wl$(comma)-rpath$(comma)$(NCCL_HOME)/lib) \
    -lcublasLt -lcublas -lcudart $(if $(NCCL_H),-lnccl) -lstdc++
ENGINE_CFLAGS := -I$(CUDA_HOME)/include $(if $(NCCL_HOME),-I$(NCCL_HOME)/include) $(if $(NCCL_H),-DTS_HAVE_NCCL) \
    '-DTS_CUDA_ARCHS="$(CUDA_CCS)"'
BASE_CFLAGS += -DTS_HAVE_CUDA
SAY_BUILD := tessera: nvcc found at $(NVCC_PATH): building the engine for $(CUDA_ARCH)$(if $(NCCL_H),, (no nccl.h: no tensor parallelism))
else
SAY_BUILD := tessera: $(if $(NO_CUDA),NO_CUDA=1,nvcc not found): building the simulator only
endif
# (said once: by make check's own build, not by the print-* queries tests/mutate.sh makes)
ifneq ($(if $(filter check-here,$(MAKECMDGOALS)),1,$(if $(filter 0,$(MAKELEVEL)),$(if $(filter check check-full print-%,$(MAKECMDGOALS)),,1))),)
$(info $(SAY_BUILD))
endif
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lpthread -lm)

# the library: the simulator, traces and the engine's host code that needs no GPU (the command line,
# sim/cli/, is the executable's own)
ENGINE_CPU_SRC := engine/eng_algos.c engine/eng_act.c engine/eng_host.c engine/eng_plan.c engine/eng_weights.c engine/eng_ref.c \
    engine/eng_ref_ops.c engine/eng_safetensors.c engine/eng_unmask.c engine/eng_gen.c engine/eng_anchor.c engine/eng_grid.c \
    $(wildcard engine/gen_*.c)
LIB_SRC := $(wildcard sim/core/*.c sim/*.c $(SIM_ROOMS:%=sim/%/*.c)) $(wildcard traces/*.c) $(ENGINE_CPU_SRC)
ENGINE_GPU_SRC := $(wildcard $(ENGINE_ROOMS:%=engine/%/*.c) engine/harness/*.c)
# the programs beside the engine library, linked against it: its GPU test suite and its benchmark
CHECK_ENGINE_SRC := $(wildcard tests/gpu/*.c)
ENGINE_BENCH_SRC := $(wildcard engine/bench/*.c)
KERNEL_SRC := $(wildcard kernels/*.cu)
TEST_SRC := $(wildcard tests/check_*.c)
TEST_COMMON := tests/test_util.c

# Objects are rebuilt when the build configuration changes (CUDA on/off, flags, DEPS).
STAMP := $(BUILD)/config.stamp
STAMP_TEXT := engine=so cuda=$(HAVE_CUDA) arch=$(CUDA_ARCH) opt=$(OPT) cflags=$(CFLAGS) deps=$(DEPS) cc=$(CC)
$(shell mkdir -p $(BUILD); [ "$$(cat $(STAMP) 2>/dev/null)" = "$(STAMP_TEXT)" ] || echo "$(STAMP_TEXT)" > $(STAMP))

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)

.DEFAULT_GOAL := all

# The version is compiled into sim/version.o only, rebuilt when it changes.
VERSION_FILE := $(BUILD)/version.txt
$(shell mkdir -p $(BUILD); [ "$$(cat $(VERSION_FILE) 2>/dev/null)" = "$(VERSION)" ] || echo "$(VERSION)" > $(VERSION_FILE))
$(BUILD)/sim/core/version.o: sim/core/version.c $(VERSION_FILE) $(STAMP) | deps
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(INC_CORE) -DTS_VERSION='"$(VERSION)"' -c $< -o $@
ENGINE_OBJ := $(if $(HAVE_CUDA),$(ENGINE_GPU_SRC:%.c=$(BUILD)/%.o) $(KERNEL_SRC:%.cu=$(BUILD)/%.o))
TESTS := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all engine run check check-full check-here check-records check-soak check-layers mutate print-cc print-test-link print-libs check-valgrind calibrate check-slurm bench-sim bench-engine bench-gemm bench-gemm-rows check-gpu check-gpu-tp fuzz deps clean help

ENGINE_LIB := $(if $(HAVE_CUDA),$(BUILD)/libtessera_engine.so)
ENGINE_TOOLS := $(if $(HAVE_CUDA),$(BUILD)/tests/gpu/check_engine $(BUILD)/engine_bench)
all: $(BUILD)/tessera $(ENGINE_LIB) $(ENGINE_TOOLS)

# the engine alone (tessera engine loads it from beside the executable)
engine: $(BUILD)/tessera
	@$(if $(HAVE_CUDA),$(MAKE) --no-print-directory $(ENGINE_LIB) $(ENGINE_TOOLS),echo "make engine: nvcc not found (NVCC=$(NVCC)); the engine is not built" >&2; exit 2)

help:
	@sed -n '3,19p' Makefile

deps:
	@$(if $(DEPS),true,bash .ci/install-deps)

# V=1 shows the full commands
Q := $(if $(V),,@)

$(BUILD)/%.o: %.c $(STAMP) | deps
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(call inc_for,$<) -c $< -o $@

$(BUILD)/engine/%.o: engine/%.c $(STAMP) | deps
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(call inc_for,$<) $(if $(filter $<,$(ENGINE_GPU_SRC)),$(ENGINE_CFLAGS) -fPIC) -c $< -o $@

$(BUILD)/kernels/%.o: kernels/%.cu $(STAMP)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  NVCC    $@")
	$(Q)$(NVCC) $(ALL_NVCCFLAGS) -Xcompiler -fPIC -c $< -o $@

# The engine is a shared library that `tessera engine` loads on demand (dlopen), so the simulator
# never loads the CUDA libraries; it takes the rest of tessera from the executable (-rdynamic).
$(BUILD)/libtessera_engine.so: $(ENGINE_OBJ)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) -shared -o $@ $^ $(CUDA_LIBS)

# The test suite and the benchmark: the command line's helpers (not its main), the library and the
# engine, found beside them (rpath); they take their options as the engine's commands do.
TOOL_CC = @mkdir -p $(dir $@); $(if $(V),,echo "  CC      $@";) $(CC) $(ALL_CFLAGS) $(INC_TOP) $(ENGINE_CFLAGS) -c $< -o $@
$(BUILD)/tests/gpu/%.o: tests/gpu/%.c $(STAMP) | deps
	$(TOOL_CC)
$(BUILD)/engine/bench/%.o: engine/bench/%.c $(STAMP) | deps
	$(TOOL_CC)
TOOL_LINK = $(filter-out $(BUILD)/sim/cli/main.o,$(CLI_OBJ)) -Wl,--whole-archive $(BUILD)/libtessera.a \
    -Wl,--no-whole-archive -L$(BUILD) -ltessera_engine $(LIBS) $(CUDA_LIBS) -ldl
$(BUILD)/tests/gpu/check_engine: $(CHECK_ENGINE_SRC:%.c=$(BUILD)/%.o) $(CLI_OBJ) $(BUILD)/libtessera.a $(ENGINE_LIB)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $(CHECK_ENGINE_SRC:%.c=$(BUILD)/%.o) $(TOOL_LINK) -Wl,-rpath,'$$ORIGIN/../..'
$(BUILD)/engine_bench: $(ENGINE_BENCH_SRC:%.c=$(BUILD)/%.o) $(CLI_OBJ) $(BUILD)/libtessera.a $(ENGINE_LIB)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $(ENGINE_BENCH_SRC:%.c=$(BUILD)/%.o) $(TOOL_LINK) -Wl,-rpath,'$$ORIGIN'

$(BUILD)/libtessera.a: $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/tessera: $(CLI_OBJ) $(BUILD)/libtessera.a
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $(CLI_OBJ) -Wl,--whole-archive $(BUILD)/libtessera.a \
	    -Wl,--no-whole-archive $(LIBS) -ldl

$(BUILD)/tests/%: tests/%.c $(TEST_COMMON) tests/test_util.h tests/golden.h $(BUILD)/libtessera.a | deps
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(INC_TOP) -o $@ $< $(TEST_COMMON) $(BUILD)/libtessera.a $(LIBS) $(CHECK_LIBS)

# check_interval tests the command line's --interval (sim/cli/cli_interval.c): the command line's objects
# (not its main) beside the library
$(BUILD)/tests/check_interval: tests/check_interval.c $(TEST_COMMON) tests/test_util.h $(filter-out \
        $(BUILD)/sim/cli/main.o,$(CLI_OBJ)) $(BUILD)/libtessera.a | deps
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(INC_TOP) -o $@ $< $(TEST_COMMON) $(filter-out $(BUILD)/sim/cli/main.o,$(CLI_OBJ)) \
	    $(BUILD)/libtessera.a $(LIBS) $(CHECK_LIBS) -ldl

run: $(BUILD)/tessera
	./$(BUILD)/tessera sim --no-progress

# make check, the fast door: every CPU test but the planted bugs, hermetic (tests/check.sh fast: the
# unit suites with their golden scenarios, the CLI, hostile inputs, shellcheck, README's commands, the
# suites under ASan + UBSan, two lanes at once). make check-full, the slow door: what check leaves
# out (tests/check.sh full: the planted bugs, the checks over ../shared's real traces). The engine is
# left out where no GPU answers: the simulator is then built without it, in $(BUILD)/cpu.
HAVE_GPU = $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo 1)
check check-full: deps
	@$(if $(and $(HAVE_CUDA),$(if $(HAVE_GPU),,1)),$(MAKE) --no-print-directory -j$(NPROC) NO_CUDA=1 BUILD=$(BUILD)/cpu DOOR=$(if $(filter check-full,$@),full,fast) check-here,\
	    $(MAKE) --no-print-directory -j$(NPROC) DOOR=$(if $(filter check-full,$@),full,fast) check-here)
NPROC := $(shell nproc 2>/dev/null || echo 2)
DOOR ?= fast
check-here: $(BUILD)/tessera $(ENGINE_LIB) $(TESTS)
	@bash tests/check.sh $(CURDIR)/$(BUILD)/tessera $(BUILD) $(DOOR)

# the records re-derived (tests/records_test.sh: the fidelity matrices, replays, live runs, clock fit and
# the shipped calibrations byte for byte): run it when the cost model, the fit or a
# shipped calibration changes
check-records: $(BUILD)/tessera
	@TESSERA_CALIB_DIR=/nonexistent/tessera-calib bash tests/records_test.sh $(CURDIR)/$(BUILD)/tessera

# many writers and kills against one database, each run kept checked row for row against the same
# run written alone (tests/soak_test.sh: 16 writers, 50 killed runs)
check-soak: $(BUILD)/tessera
	@bash tests/soak_test.sh $(CURDIR)/$(BUILD)/tessera

# planted bugs the suites must catch (tests/SUITE.mutants, a line a planted bug, none may survive; JOBS=N,
# RECORD=1 writes down the test that killed each, CHANGED=REV RECORDED=1 what make check runs)
mutate: $(BUILD)/libtessera.a
	@BUILD=$(BUILD) bash tests/mutate.sh

# what tests/mutate.sh compiles a planted bug with: FILE's compile line, the suites' link line and libraries
print-cc:
	@echo $(CC) $(ALL_CFLAGS) $(call inc_for,$(FILE))
print-test-link:
	@echo $(CC) $(ALL_CFLAGS) $(INC_TOP)
print-libs:
	@echo $(LIBS) $(CHECK_LIBS)

# the include graph keeps the floors (sim/core at the bottom), no files call each other round a
# circle (tests/check_layers.sh)
check-layers: $(LIB_OBJ) $(CLI_OBJ) $(ENGINE_OBJ)
	@BUILD=$(BUILD) bash tests/check_layers.sh

check-valgrind: $(BUILD)/tessera $(TESTS)
	@set -e; for t in $(TESTS); do CK_FORK=no valgrind -q --error-exitcode=3 --leak-check=full \
	    --errors-for-leak-kinds=definite ./$$t; done

bench-sim: $(BUILD)/tessera
	@bash tests/bench_sim.sh ./$(BUILD)/tessera

# GPU machine only: kernels and steps against the CPU reference; the engine benchmark beside
# PyTorch (SDPA on the same shapes, and the anchor script when ANCHOR=path/to/torch_llada_step.py,
# then the engine on every shape the anchor ran, beside its times: engine_anchor.jsonl; and
# torch.compile's steps when COMPILE=path/to/torch_compile_step.py: torch_compile.jsonl)
check-gpu: all
	./$(BUILD)/tests/gpu/check_engine
	./$(BUILD)/tests/gpu/check_engine --kernels portable
	./$(BUILD)/tests/gpu/check_engine --select-at layer --only select
	bash tests/live_gpu_test.sh ./$(BUILD)/tessera
	bash tests/lmax_gpu_test.sh ./$(BUILD)/tessera
	bash tests/profile_gpu_test.sh ./$(BUILD)/tessera
	bash tests/anchor_gpu_test.sh ./$(BUILD)/tessera

# tensor parallelism on a machine of TP (default 2) GPUs: the split engine against one GPU, and a
# live run of a schedule over them (NVLink multicast stays off: NCCL_NVLS_ENABLE=0)
TP ?= 2
check-gpu-tp: all
	./$(BUILD)/tests/gpu/check_engine --tp $(TP)
	bash tests/live_tp_gpu_test.sh ./$(BUILD)/tessera $(TP)

# a sweep as a Slurm job array on a single-node Slurm started and stopped by the test (root, the
# Debian package slurm-wlm; about 12 s): not part of make check, whose machines may lack both
check-slurm: $(BUILD)/tessera
	bash tests/slurm_test.sh ./$(BUILD)/tessera

# tessera calibrated on this machine's GPU in one command (engine/calibrate.sh: profile, fit, a held-out
# replay, the clock, installed where --cost calibrated looks; TORCH=1: the PyTorch harness's profile too)
CALIB_OUT ?= $(BUILD)/calibrate
MODEL ?= llada-8b
calibrate: all
	TESSERA=./$(BUILD)/tessera bash engine/calibrate.sh $(CALIB_OUT) $(MODEL)

BENCH_OUT ?= $(BUILD)
bench-engine: all
	@mkdir -p $(BENCH_OUT)
	./$(BUILD)/engine_bench --json $(BENCH_OUT)/engine_bench.jsonl --warm-trace $(BENCH_OUT)/warm_trace.csv
	python3 engine/bench/sdpa_bench.py | tee -a $(BENCH_OUT)/engine_bench.jsonl
	$(if $(ANCHOR),PYTHONUNBUFFERED=1 python3 $(ANCHOR) | tee $(BENCH_OUT)/anchor.jsonl)
	$(if $(ANCHOR),./$(BUILD)/engine_bench --only anchor --anchor $(BENCH_OUT)/anchor.jsonl \
	    --json $(BENCH_OUT)/engine_anchor.jsonl)
	$(if $(COMPILE),PYTHONUNBUFFERED=1 python3 $(COMPILE) | tee $(BENCH_OUT)/torch_compile.jsonl)
	@if command -v gnuplot >/dev/null; then bash analysis/bench-plot.sh $(BENCH_OUT)/engine_bench.jsonl \
	    $(BENCH_OUT)/engine_bench.png $(if $(ANCHOR),$(BENCH_OUT)/anchor.jsonl) && \
	    bash analysis/warm-plot.sh $(BENCH_OUT)/warm_trace.csv $(BENCH_OUT)/warm_trace.png \
	    $(if $(ANCHOR),&& bash analysis/anchor-plot.sh $(BENCH_OUT)/engine_anchor.jsonl $(BENCH_OUT)/engine_anchor.png); \
	else echo "bench-engine: no gnuplot here; draw the figures elsewhere: analysis/bench-plot.sh BENCH.jsonl OUT.png [ANCHOR.jsonl]; analysis/warm-plot.sh WARM.csv OUT.png; analysis/anchor-plot.sh ANCHOR_BENCH.jsonl OUT.png"; fi

# GPU machine only (Hopper): the fused gate/up GEMM + SwiGLU (kernels/gemm_wgmma.cu) beside
# cuBLAS's GEMM and k_swiglu, same data (engine/bench/gemm_bench.cu; GEMM_ROWS: row counts)
GEMM_BENCH_SRC := engine/bench/gemm_bench.cu kernels/elementwise.cu kernels/attention.cu \
    kernels/attention_wgmma.cu kernels/gemm_wgmma.cu
$(BUILD)/gemm_bench: $(GEMM_BENCH_SRC) engine/bench/bench_check.h $(wildcard kernels/*.h kernels/*.cuh kernels/*.inc)
	$(NVCC) -O3 -std=c++17 -arch=sm_90a $(INC_KERNELS) $(GEMM_BENCH_SRC) -lcublas -o $@
bench-gemm: $(BUILD)/gemm_bench
	./$(BUILD)/gemm_bench 4096 12288 $(or $(GEMM_ROWS),32 512 2048 8192)

# GPU machine only: cuBLASLt on LLaDA-8B's layers at Reuse steps' row counts against their floors
# (engine/bench/gemm_rows.cu; GEMM_PEAK, GEMM_BW: engine_bench's ceilings; GEMM_ROWS: 1 to 512)
GEMM_ROWS_SRC := engine/bench/gemm_rows.cu kernels/elementwise.cu
$(BUILD)/gemm_rows: $(GEMM_ROWS_SRC) engine/bench/bench_check.h kernels/kernels.h
	$(NVCC) -O3 -std=c++17 -arch=sm_90 $(INC_KERNELS) $(GEMM_ROWS_SRC) -lcublasLt -lcublas -o $@
bench-gemm-rows: $(BUILD)/gemm_rows
	./$(BUILD)/gemm_rows $(or $(GEMM_PEAK),775) $(or $(GEMM_BW),4.23) $(GEMM_ROWS)

# libFuzzer targets, one per parser (traces, HF config.json, the GPU file, safetensors headers,
# calibrations, the anchor's output, decode profiles, engine generate's prompts, the clock file, the
# --lengths/--arrivals/--decode specs and parameter values). Each runs FUZZ_SECONDS over its seeds
# (tests/fuzz/seeds/) and the corpus kept in the repository (tests/fuzz/corpus/), into which the
# inputs that reach new code are merged at the end; a crash stops the target with its input in
# build/fuzz/.
FUZZERS := fuzz_trace fuzz_model_config fuzz_gpu_file fuzz_safetensors fuzz_calib fuzz_anchor fuzz_decode fuzz_prompts fuzz_clock fuzz_specs fuzz_config_json
fuzz:
	@mkdir -p $(BUILD)/fuzz
	@set -e; for f in $(FUZZERS); do \
	    $(CLANG) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(INC_TOP) \
	        -o $(BUILD)/fuzz/$$f tests/fuzz/$$f.c $(LIB_SRC) $(LIBS); \
	    mkdir -p $(BUILD)/fuzz/work-$$f tests/fuzz/corpus/$$f; \
	    echo "fuzzing $$f for $(FUZZ_SECONDS) s"; \
	    $(BUILD)/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
	        -artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/work-$$f tests/fuzz/seeds/$$f tests/fuzz/corpus/$$f; \
	    $(BUILD)/fuzz/$$f -merge=1 tests/fuzz/corpus/$$f $(BUILD)/fuzz/work-$$f 2>&1 | tail -1; \
	done

clean:
	rm -rf build

# (the GPU suite's and the benchmark's objects too: a header they include changed rebuilds them)
-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(ENGINE_OBJ:.o=.d) $(CHECK_ENGINE_SRC:%.c=$(BUILD)/%.d) \
    $(ENGINE_BENCH_SRC:%.c=$(BUILD)/%.d)
