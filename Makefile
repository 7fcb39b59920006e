# tessera: a simulator (C11) and a CUDA engine for serving diffusion LLMs.
#
#   make run         build, install missing Debian packages (as root), run the default simulation
#   make check       build and run every CPU test (unit suites, golden scenarios, CLI checks,
#                    then the whole suite again under AddressSanitizer + UBSan)
#   make bench-sim   the simulator speed benchmark
#   make check-valgrind, make fuzz FUZZ_SECONDS=N, make clean      (V=1: show commands)
#
# Objects live in build/ (build/asan for the sanitizer build). Settings: CC, CFLAGS, NVCC,
# CUDA_ARCH (the engine arrives with its own issue).

CC ?= cc
CLANG ?= clang
NVCC ?= nvcc
CUDA_ARCH ?= sm_90
BUILD ?= build
FUZZ_SECONDS ?= 20

VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
DATADIR := $(CURDIR)/sim/data

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
BASE_CFLAGS := -std=c11 $(WARN) -Isim -Itraces -MMD -MP -DTS_VERSION='"$(VERSION)"' -DTS_DATADIR='"$(DATADIR)"'
OPT ?= -O2 -g
CFLAGS ?=
ALL_CFLAGS := $(BASE_CFLAGS) $(OPT) $(CFLAGS)
LIBS := -lgsl -lgslcblas -lsqlite3 -ljansson -lm
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lpthread -lm)

# the library: everything but main.c
LIB_SRC := $(filter-out sim/main.c,$(wildcard sim/*.c)) $(wildcard traces/*.c)
MAIN_SRC := sim/main.c
TEST_SRC := $(wildcard tests/check_*.c)
TEST_COMMON := tests/test_util.c

LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
TESTS := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

.PHONY: all run check check-unit check-asan check-valgrind bench-sim fuzz deps clean help

all: $(BUILD)/tessera

help:
	@sed -n '3,11p' Makefile

deps:
	@bash .ci/install-deps

# V=1 shows the full commands
Q := $(if $(V),,@)

$(BUILD)/%.o: %.c | deps
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libtessera.a: $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/tessera: $(BUILD)/sim/main.o $(BUILD)/libtessera.a
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/tests/%: tests/%.c $(TEST_COMMON) tests/test_util.h tests/golden.h $(BUILD)/libtessera.a | deps
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LINK    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(TEST_COMMON) $(BUILD)/libtessera.a $(LIBS) $(CHECK_LIBS)

run: $(BUILD)/tessera
	./$(BUILD)/tessera sim --no-progress

# the unit suites (one per module), golden scenarios and the command-line checks
check-unit: $(BUILD)/tessera $(TESTS)
	@bash tests/run_all.sh $(CURDIR)/$(BUILD)/tessera $(TESTS)

check: check-unit
	@$(MAKE) --no-print-directory check-asan

# the same suites built with AddressSanitizer + UndefinedBehaviorSanitizer
check-asan:
	@$(MAKE) --no-print-directory BUILD=build/asan \
	    OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    check-unit

check-valgrind: $(BUILD)/tessera $(TESTS)
	@set -e; for t in $(TESTS); do CK_FORK=no valgrind -q --error-exitcode=3 --leak-check=full \
	    --errors-for-leak-kinds=definite ./$$t; done

bench-sim: $(BUILD)/tessera
	@bash tests/bench_sim.sh ./$(BUILD)/tessera

# libFuzzer targets, one per parser (trace CSV/JSONL, HF config.json, GPU file)
FUZZERS := fuzz_trace fuzz_model_config fuzz_gpu_file
fuzz:
	@mkdir -p $(BUILD)/fuzz
	@set -e; for f in $(FUZZERS); do \
	    $(CLANG) -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Isim -Itraces \
	        -o $(BUILD)/fuzz/$$f tests/fuzz/$$f.c $(LIB_SRC) $(LIBS); \
	    mkdir -p $(BUILD)/fuzz/corpus-$$f; cp -n tests/fuzz/seeds/$$f/* $(BUILD)/fuzz/corpus-$$f/ 2>/dev/null || true; \
	    echo "fuzzing $$f for $(FUZZ_SECONDS) s"; \
	    $(BUILD)/fuzz/$$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	        -artifact_prefix=$(BUILD)/fuzz/ $(BUILD)/fuzz/corpus-$$f; \
	done

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(BUILD)/sim/main.d
