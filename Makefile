# SPDX-License-Identifier: GPL-2.0
#
#   make          build ./spanperf
#   make demo     install what is missing, record the host for a few seconds, report
#   make test     install what is missing, then every test (unit, integration, vm)
#   make V=1      show the full commands
#
VERSION := 0.1.0
OUTPUT := build
CLANG ?= clang
BPFTOOL ?= bpftool
CC ?= gcc
ARCH ?= x86

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

CFLAGS ?= -g -O2
# Frame pointers: spanperf profiles itself in the benchmarks.
override CFLAGS += -Wall -Wextra -MMD -MP -fno-omit-frame-pointer -D_GNU_SOURCE \
	-DSPANPERF_VERSION='"$(VERSION)"' -I$(OUTPUT) -iquote user -iquote bpf
# Lazy (=): on a fresh machine pkg-config runs only after `deps` installed the libraries.
LDLIBS = $(shell pkg-config --libs libbpf libelf zlib 2>/dev/null || echo -lbpf -lelf -lz) -lm
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf -Wall -MMD -MP

BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(wildcard user/*.c)
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/%.o,$(USER_SRCS))
LIB_OBJS := $(filter-out $(OUTPUT)/main.o,$(USER_OBJS))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
WORKLOADS := $(OUTPUT)/tests/workload

.DELETE_ON_ERROR:
# Keep the BPF objects that make would delete as intermediates of the skeletons.
.SECONDARY: $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS)) $(OUTPUT)/bench/floor.bpf.o
.PHONY: all clean deps demo test unit integration vmtest bench check

all: spanperf

$(OUTPUT) $(OUTPUT)/tests:
	$(Q)mkdir -p $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# First build: skeletons before any object; later, -MMD tracks who includes what.
$(USER_OBJS): | $(SKELS)

$(OUTPUT)/%.o: user/%.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

spanperf: $(USER_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# ---- tests ----

$(OUTPUT)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS) | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< $(LIB_OBJS) $(LDLIBS) -lcmocka -o $@

# The ground-truth workload: named noinline functions, frame pointers, no inlining.
$(OUTPUT)/tests/workload: tests/integration/workload.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O1 -fno-omit-frame-pointer -fno-inline -Wall -Wextra $< -o $@ -lpthread

# The benchmarks' floor: the same events with an empty program.
$(OUTPUT)/bench/%.bpf.o: bench/%.bpf.c | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(OUTPUT)/bench
	$(Q)$(CLANG) $(BPF_CFLAGS) -MF $(@:.o=.d) -c $< -o $@

$(OUTPUT)/bench/%.skel.h: $(OUTPUT)/bench/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/bench/floor: bench/floor.c $(OUTPUT)/bench/floor.skel.h $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -I$(OUTPUT)/bench $< $(LIB_OBJS) $(LDLIBS) -o $@

$(OUTPUT)/bench/gen_spans: bench/gen_spans.c $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(OUTPUT)/bench
	$(Q)$(CC) $(CFLAGS) $< $(LIB_OBJS) $(LDLIBS) -o $@

deps:
	$(Q)tools/deps.sh

unit: $(UNIT_BINS)
	$(Q)tests/run-unit.sh $(UNIT_BINS)

integration: spanperf $(WORKLOADS)
	$(Q)python3 tests/integration/run.py

vmtest: spanperf $(WORKLOADS)
	$(Q)tests/vm/run.sh

# `make test` installs what is missing first, then builds in a second make so
# that pkg-config sees the freshly installed libraries.  The kernel matrix
# runs where QEMU can, and says so where it cannot.
test: deps
	$(Q)$(MAKE) --no-print-directory unit integration
	$(Q)$(MAKE) --no-print-directory spanperf $(WORKLOADS)
	$(Q)tests/vm/run.sh --if-able

# Never part of `make test`: figures are ratios on a shared, noisy machine.
bench: spanperf $(WORKLOADS) $(OUTPUT)/bench/floor $(OUTPUT)/bench/gen_spans
	$(Q)tools/deps.sh build test bench
	$(Q)python3 bench/bench.py $(BENCH_ARGS)

demo: deps
	$(Q)$(MAKE) --no-print-directory spanperf $(WORKLOADS)
	$(Q)tools/demo.sh

clean:
	$(call msg,CLEAN,)
	$(Q)rm -rf $(OUTPUT) spanperf

-include $(wildcard $(OUTPUT)/*.d $(OUTPUT)/tests/*.d $(OUTPUT)/bench/*.d)
