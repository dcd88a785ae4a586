# SPDX-License-Identifier: GPL-2.0
#
#   make          build ./spanperf
#   make demo     install what is missing, record the host for a few seconds, report
#   make test     install what is missing, then every test (unit, integration, vm)
#   make lib      libspanperf (.so.0, .a) in build/lib
#   make man      the man pages in build/man, from docs/
#   make install  spanperf, its man pages and libspanperf under PREFIX (/usr/local), DESTDIR honoured
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
	-DSPANPERF_VERSION='"$(VERSION)"'
# Lazy (=): on a fresh machine pkg-config runs only after `deps` installed the libraries.
# libstdc++ for __cxa_demangle (C++ names in reports).
# libdw: the DWARF unwinder for --call-graph dwarf recordings, source lines and inlined frames.
# libyaml and libxcrypt: --web-config's file and its bcrypt hashes; ncurses: top's screen.
# Opened with dlopen when first used, not linked (their headers only are needed here): libcurl,
# which the agent ships to ClickHouse with and report --clickhouse reads with (ch_http.c),
# libdebuginfod, which report fetches stripped files' debug files with (debuginfo.c), and
# libmicrohttpd, stat --serve's HTTP side (its TLS is GnuTLS's; web_serve.c).  Linked, they and
# theirs were 32 of the 47 libraries every command loaded: spanperf --version took 7 ms of CPU, 2.3 now.
LDLIBS = $(shell pkg-config --libs libbpf libdw libelf zlib ncurses yaml-0.1 libxcrypt libxxhash 2>/dev/null || echo -lbpf -ldw -lelf -lz -lncurses -lyaml -lcrypt -lxxhash) -lm -lstdc++ -lpthread -ldl
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux -Ibpf -Wall -MMD -MP

BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))

# user/ in the order data flows, each folder allowed only the headers below it;
# a wrong-way include does not compile (docs/HACKING.md):
#   base      helpers with no project includes
#   perfdata  the perf.data format: records, features, names and ids spanperf writes
#   sys       this machine: events, perf_event_open, kernel features, kallsyms, build ids, ELF symbols
#   record    the recorder: BPF sources and the loop that drains them into the writer
#   report    reading a file back: the session, symbols, unwinding, profiles, outputs
#   live      the engines that run while a recording runs: stat, its Prometheus endpoint,
#             top, the records streamed from the recorder to report's consumers in memory
#   cmd       the subcommands and their options; the only folder that sees every other
USER_DIRS := base perfdata sys record report live cmd
INC_base := base
INC_perfdata := base perfdata
INC_sys := base perfdata sys
INC_record := base perfdata sys record
INC_report := base perfdata sys report
INC_live := base perfdata sys record report live
INC_cmd := $(USER_DIRS)
# Only the folders that load BPF see the skeletons and the generated tables in $(OUTPUT).
GEN_sys := -I$(OUTPUT)
GEN_record := -I$(OUTPUT)
GEN_live := -I$(OUTPUT)
GEN_cmd := -I$(OUTPUT)
# -iquote: "x.h" is looked up in the file's own folder, then in these, never elsewhere.
user_inc = $(addprefix -iquote user/,$(INC_$(1))) -iquote bpf $(GEN_$(1))
# Tests and fuzzers see everything, as cmd does.
ALL_INC := $(call user_inc,cmd)
USER_SRCS := $(wildcard $(addprefix user/,$(addsuffix /*.c,$(USER_DIRS))))
# The page of report --html: its script, styles and markup, compiled in as strings.
HTML_ASSETS := user/report/html/page.css user/report/html/page.js user/report/html/page.html
USER_OBJS := $(patsubst user/%.c,$(OUTPUT)/%.o,$(USER_SRCS)) $(OUTPUT)/report/html_assets.o
LIB_OBJS := $(filter-out $(OUTPUT)/cmd/%.o,$(USER_OBJS))
# The commands' objects, less main(), for the unit tests of option parsing.
CMD_OBJS := $(filter-out $(OUTPUT)/cmd/main.o,$(filter $(OUTPUT)/cmd/%.o,$(USER_OBJS)))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUTPUT)/tests/%,$(UNIT_SRCS))
WORKLOADS := $(OUTPUT)/tests/workload $(OUTPUT)/tests/workload_cxx $(OUTPUT)/tests/workload_dwarf \
	$(OUTPUT)/tests/workload_kept $(OUTPUT)/tests/workload_remap \
	$(OUTPUT)/tests/workload_inline $(OUTPUT)/examples/otel_ctx_example $(OUTPUT)/examples/seeds

.DELETE_ON_ERROR:
# Keep the BPF objects that make would delete as intermediates of the skeletons.
.SECONDARY: $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS)) $(OUTPUT)/bench/floor.bpf.o
.PHONY: all clean deps demo test unit integration vmtest bench check fuzz fuzz-replay soak lib install \
	install-lib gotest man

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
$(USER_OBJS): | $(SKELS) $(OUTPUT)/syscall_table.h

# Syscall names to numbers for this architecture, from the C library's headers:
# syscall spans need them where tracefs cannot tell (the raw_syscalls fallback).
$(OUTPUT)/syscall_table.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)printf '#include <sys/syscall.h>\n' | $(CC) -dM -E - | \
		sed -n 's/^#define __NR_\([a-z0-9_]*\) \([0-9][0-9]*\)$$/{ "\1", \2 },/p' | sort > $@.tmp && \
		test -s $@.tmp && mv $@.tmp $@

# The folder is the first path component under user/: it picks the include set.
user_dir = $(firstword $(subst /, ,$(patsubst user/%,%,$(1))))
$(OUTPUT)/%.o: user/%.c | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(call user_inc,$(call user_dir,$<)) -c $< -o $@

$(OUTPUT)/report/html_assets.c: $(HTML_ASSETS) tools/embed.sh | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)tools/embed.sh $@ html_page_css user/report/html/page.css html_page_js user/report/html/page.js \
		html_page_body user/report/html/page.html

$(OUTPUT)/report/html_assets.o: $(OUTPUT)/report/html_assets.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# ---- man pages: docs/ as man(7), by tools/md2man.py (a page with a warning stops the build) ----
# A page per command, spanperf-CMD(1), and a page per idea, docs/NAME.md as spanperf-NAME(7).
MAN1_SRCS := $(wildcard docs/spanperf*.md)
MAN7_SRCS := $(filter-out $(MAN1_SRCS) docs/HACKING.md,$(wildcard docs/*.md))
MAN1 := $(patsubst docs/%.md,$(OUTPUT)/man/%.1,$(MAN1_SRCS))
MAN7 := $(patsubst docs/%.md,$(OUTPUT)/man/spanperf-%.7,$(MAN7_SRCS))

man: $(MAN1) $(MAN7)

$(OUTPUT)/man/%.1: docs/%.md tools/md2man.py
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)python3 tools/md2man.py --version $(VERSION) -o $@ $<

$(OUTPUT)/man/spanperf-%.7: docs/%.md tools/md2man.py
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)python3 tools/md2man.py --version $(VERSION) -o $@ $<

# spanperf help CMD: the binary carries each command's page, and its Markdown for
# hosts with neither man nor groff.  man_pages.h declares them for main.c.
man_name = $(subst -,_,$(basename $(notdir $(1))))
$(OUTPUT)/man_pages.c: $(MAN1) $(MAN1_SRCS) tools/embed.sh | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)tools/embed.sh -H $(OUTPUT)/man_pages.h $@ \
		$(foreach p,$(MAN1_SRCS),man_$(call man_name,$(p)) $(OUTPUT)/man/$(notdir $(p:.md=.1)) \
			md_$(call man_name,$(p)) $(p))
$(OUTPUT)/man_pages.h: $(OUTPUT)/man_pages.c ;

$(OUTPUT)/man_pages.o: $(OUTPUT)/man_pages.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUTPUT)/cmd/main.o: | $(OUTPUT)/man_pages.h

# BIN: `make check` links a sanitized binary under its own OUTPUT.
BIN ?= spanperf
$(BIN): $(USER_OBJS) $(OUTPUT)/man_pages.o
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

# ---- libspanperf: counters and spans inside an application (lib/) ----
# Built from lib/ and the parts of user/ that need no libbpf: the event parser
# `stat -e` uses (sys/events.c), perf_event_open (sys/perf_open.c) and the base
# helpers they call.  Position-independent copies, under $(OUTPUT)/lib/.
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
LIB_SONAME := libspanperf.so.0
LIB_REAL := libspanperf.so.$(VERSION)
LIB_USER_SRCS := user/sys/events.c user/sys/perf_open.c user/base/fileio.c user/base/log.c user/base/parse.c \
	user/base/sbuf.c user/base/util.c
LIB_PIC_OBJS := $(patsubst lib/%.c,$(OUTPUT)/lib/%.o,$(wildcard lib/*.c)) \
	$(patsubst user/%.c,$(OUTPUT)/lib/user/%.o,$(LIB_USER_SRCS))
# lib/ may see base and sys (the files above), perfdata's names.h (with the bpf/ ABI header it
# includes), and include/ (the public header, OTEP 4947/4719).
# TLSDESC: the TLS model OTEP 4947 asks of shared objects, and the cheap one for the library's own.
LIB_CFLAGS = $(CFLAGS) -fPIC -mtls-dialect=gnu2 -Iinclude -iquote lib -iquote include \
	-iquote user/base -iquote user/sys -iquote user/perfdata -iquote bpf
LIB_OUT := $(OUTPUT)/lib/$(LIB_REAL) $(OUTPUT)/lib/libspanperf.a $(OUTPUT)/lib/spanperf-uninstalled.pc

lib: $(LIB_OUT)

$(OUTPUT)/lib/%.o: lib/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LIB_CFLAGS) -c $< -o $@

$(OUTPUT)/lib/user/%.o: user/%.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(LIB_CFLAGS) -c $< -o $@

# Only the API and otel_thread_ctx_v1 are exported (lib/libspanperf.map); calls
# inside bind locally (-Bsymbolic-functions); -z defs: nothing left unresolved;
# -z nodelete: a dlclose must not unmap the code that thread-exit destructors and
# the fork handler still call.
$(OUTPUT)/lib/$(LIB_REAL): $(LIB_PIC_OBJS) lib/libspanperf.map
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=lib/libspanperf.map \
		-Wl,-z,defs -Wl,-z,nodelete -Wl,-Bsymbolic-functions $(LIB_PIC_OBJS) -pthread -lm -o $@
	$(Q)ln -sf $(LIB_REAL) $(OUTPUT)/lib/$(LIB_SONAME)
	$(Q)ln -sf $(LIB_SONAME) $(OUTPUT)/lib/libspanperf.so

# One relocatable object with only the API global: the parser's and the helpers'
# names cannot collide with an application's.
$(OUTPUT)/lib/libspanperf.a: $(LIB_PIC_OBJS)
	$(call msg,AR,$@)
	$(Q)$(LD) -r -o $(OUTPUT)/lib/libspanperf.o $(LIB_PIC_OBJS)
	$(Q)objcopy -w --keep-global-symbol='spanperf_*' --keep-global-symbol=otel_thread_ctx_v1 \
		$(OUTPUT)/lib/libspanperf.o
	$(Q)rm -f $@ && $(AR) rcs $@ $(OUTPUT)/lib/libspanperf.o

# In the build tree, the -uninstalled variant pkg-config prefers (the Go binding's
# tests use it); `install-lib` writes spanperf.pc for PREFIX and LIBDIR.
$(OUTPUT)/lib/spanperf-uninstalled.pc: lib/spanperf.pc.in Makefile
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(CURDIR)|' -e 's|@LIBDIR@|$(CURDIR)/$(OUTPUT)/lib|' \
		-e 's|@INCLUDEDIR@|$(CURDIR)/include|' -e 's|@VERSION@|$(VERSION)|' \
		-e 's|^Libs: .*|& -Wl,-rpath,$${libdir}|' $< > $@

install-lib: $(LIB_OUT)
	$(Q)install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/spanperf
	$(Q)install -m 0755 $(OUTPUT)/lib/$(LIB_REAL) $(DESTDIR)$(LIBDIR)/
	$(Q)ln -sf $(LIB_REAL) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	$(Q)ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libspanperf.so
	$(Q)install -m 0644 $(OUTPUT)/lib/libspanperf.a $(DESTDIR)$(LIBDIR)/
	$(Q)install -m 0644 include/spanperf/spanperf.h $(DESTDIR)$(INCLUDEDIR)/spanperf/
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' lib/spanperf.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/spanperf.pc

install: spanperf man install-lib
	$(Q)install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man7
	$(Q)install -m 0755 spanperf $(DESTDIR)$(BINDIR)/
	$(Q)install -m 0644 $(MAN1) $(DESTDIR)$(MANDIR)/man1/
	$(Q)install -m 0644 $(MAN7) $(DESTDIR)$(MANDIR)/man7/

# ---- tests ----

$(OUTPUT)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS) $(CMD_OBJS) | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(ALL_INC) $< $(LIB_OBJS) $(CMD_OBJS) $(LDLIBS) -lcmocka -o $@

# The library's tests link it as an application does, and see its page reader (lib/page.h).
$(OUTPUT)/tests/test_libspanperf: tests/unit/test_libspanperf.c $(OUTPUT)/lib/libspanperf.a | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Iinclude -iquote include -iquote lib $< $(OUTPUT)/lib/libspanperf.a -pthread -lcmocka -o $@

# libspanperf's no-syscall task-clock against read(2), in the QEMU guest (static: the initramfs has no libc of its own).
$(OUTPUT)/tests/libspanperf_mmap: tests/vm/libspanperf_mmap.c $(OUTPUT)/lib/libspanperf.a | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -static -Iinclude $< $(OUTPUT)/lib/libspanperf.a -pthread -o $@

$(OUTPUT)/tests/sampler_offline: tests/vm/sampler_offline.c $(OUTPUT)/lib/libspanperf.a | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -static -Iinclude $< $(OUTPUT)/lib/libspanperf.a -pthread -o $@

# The ground-truth workload: named noinline functions, frame pointers, no inlining.
$(OUTPUT)/tests/workload: tests/integration/workload.c include/otel_thread_ctx.h include/otel_process_ctx.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O1 -fno-omit-frame-pointer -fno-inline -Wall -Wextra -iquote include $< -o $@ -lpthread \
		-Wl,--export-dynamic-symbol=otel_thread_ctx_v1

# The seeds' README examples in C, built against the library as an application links it.
$(OUTPUT)/examples/seeds: examples/seeds.c $(LIB_OUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -Wall -Wextra -Iinclude $< -L$(OUTPUT)/lib -lspanperf -Wl,-rpath,$(CURDIR)/$(OUTPUT)/lib -pthread -o $@

# The OTEP 4947 writer's example, built as its comment tells users to.
$(OUTPUT)/examples/otel_ctx_example: examples/otel_ctx_example.c include/otel_thread_ctx.h include/otel_process_ctx.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -Wall -Wextra -iquote include $< -Wl,--export-dynamic-symbol=otel_thread_ctx_v1 -o $@

# --call-graph dwarf's ground truth: no frame pointers anywhere, hot code
# reached through libc (qsort, bsearch) and through a library of its own.
$(OUTPUT)/tests/libdwarfcb.so: tests/integration/libdwarfcb.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -fPIC -shared -Wall -Wextra $< -o $@

$(OUTPUT)/tests/workload_dwarf: tests/integration/workload_dwarf.c $(OUTPUT)/tests/libdwarfcb.so
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -Wall -Wextra $< -o $@ -L$(OUTPUT)/tests -ldwarfcb \
		-Wl,-rpath,'$$ORIGIN'

# The walk's ground truth where a chain cache would go wrong: two chains through
# the same frames at the same addresses, by turns, by longjmp, under a signal
# handler, across an exec.
$(OUTPUT)/tests/workload_kept: tests/integration/workload_kept.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -Wall -Wextra $< -o $@

# The rule cache's ground truth across a library unmapped and another mapped in
# its place: one source, two frame sizes, the loop at the same offsets.
$(OUTPUT)/tests/libremap_a.so: tests/integration/libremap.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -fPIC -shared -Wall -Wextra -DREMAP_FRAME=200 $< -o $@

$(OUTPUT)/tests/libremap_b.so: tests/integration/libremap.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -fPIC -shared -Wall -Wextra -DREMAP_FRAME=1000 $< -o $@

$(OUTPUT)/tests/workload_remap: tests/integration/workload_remap.c $(OUTPUT)/tests/libremap_a.so \
		$(OUTPUT)/tests/libremap_b.so
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -fomit-frame-pointer -Wall -Wextra $< -o $@ -ldl

# Inlined frames' ground truth: static inline hot code at -O2 -g, unwound with DWARF.
$(OUTPUT)/tests/workload_inline: tests/integration/workload_inline.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -g -O2 -Wall -Wextra $< -o $@

# -O0: nothing is inlined but spin(), so each C++ name keeps its samples.
$(OUTPUT)/tests/workload_cxx: tests/integration/workload_cxx.cpp | $(OUTPUT)/tests
	$(call msg,CXX,$@)
	$(Q)clang++ -g -O0 -fno-omit-frame-pointer -Wall -Wextra $< -o $@

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
	$(Q)$(CC) $(CFLAGS) $(ALL_INC) -I$(OUTPUT)/bench $< $(LIB_OBJS) $(LDLIBS) -o $@

$(OUTPUT)/bench/gen_spans: bench/gen_spans.c $(LIB_OBJS)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(OUTPUT)/bench
	$(Q)$(CC) $(CFLAGS) $(ALL_INC) $< $(LIB_OBJS) $(LDLIBS) -o $@

# The whole-path section's fixed work: a deep chain, with frame pointers and without (CFI only).
$(OUTPUT)/bench/unitwork_fp: bench/unitwork.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra $< -pthread -o $@

$(OUTPUT)/bench/unitwork_nofp: bench/unitwork.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -fomit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra $< -pthread -o $@

# libspanperf against read(2) and PAPI; PAPI where libpapi-dev is installed, else its column says why.
PAPI_FLAGS = $(shell test -f /usr/include/papi.h && echo -DHAVE_PAPI -lpapi)
$(OUTPUT)/bench/bench_lib: bench/bench_lib.c $(OUTPUT)/lib/libspanperf.a
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Iinclude $< $(OUTPUT)/lib/libspanperf.a -pthread $(PAPI_FLAGS) -o $@

# ---- fuzzing: libFuzzer targets over the parsers, with ASan and UBSan ----
FUZZ_CC ?= clang
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined \
	-D_GNU_SOURCE -DSPANPERF_VERSION='"$(VERSION)"' -iquote tests/fuzz \
	-DFUZZ_ROOT='"$(CURDIR)/tests/fuzz/root"'
FUZZ_OBJS := $(patsubst user/%.c,$(OUTPUT)/fuzz/%.o,$(filter-out user/cmd/main.c,$(USER_SRCS))) \
	$(OUTPUT)/fuzz/report/html_assets.o
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,$(OUTPUT)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_SECONDS ?= 60

$(FUZZ_OBJS): | $(SKELS) $(OUTPUT)/syscall_table.h

$(OUTPUT)/fuzz/%.o: user/%.c
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(call user_inc,$(call user_dir,$<)) -MMD -MP -c $< -o $@

$(OUTPUT)/fuzz/report/html_assets.o: $(OUTPUT)/report/html_assets.c
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

# The endpoint's target counts with counters of its own, not BPF's: stat_serve.o's calls go to its wrappers.
FUZZ_LDFLAGS_serve := -Wl,--wrap=counters__read,--wrap=counters__events

$(OUTPUT)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS)
	$(call msg,FUZZ-LD,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(ALL_INC) -MMD -MP -fsanitize=fuzzer $< $(FUZZ_OBJS) $(LDLIBS) \
		$(FUZZ_LDFLAGS_$*) -o $@

fuzz: deps
	$(Q)$(MAKE) --no-print-directory $(FUZZ_TARGETS)
	$(Q)tests/fuzz/run.sh fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# Every seed and every input that once crashed a target, once each.
fuzz-replay: $(FUZZ_TARGETS)
	$(Q)tests/fuzz/run.sh replay 0 $(FUZZ_TARGETS)

# ---- sanitizers: the unit and integration tests on an ASan+UBSan build ----
# Reports go to files, not stderr: a test that expects exit 1 and reads stderr
# must not mistake a sanitizer's death for a clean error, and children count too.
# Each stage says how long it took (CI runs make check after make test, within its time).
SAN_ENV = ASAN_OPTIONS=log_path=$(CURDIR)/build-check/san/asan:exitcode=86 \
	UBSAN_OPTIONS=log_path=$(CURDIR)/build-check/san/ubsan:exitcode=86:print_stacktrace=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
# The runtimes linked in statically: as two shared libraries, gcc's UBSan beside its ASan writes
# its reports to stderr whatever log_path says (clang 14, the other compiler, cannot build the
# library's TLSDESC).
CHECK_CFLAGS := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-static-libasan -static-libubsan
# The stages after the build, all by default; CI names those a clean clone has passed whole (.ci/run).
CHECK_STAGES ?= unit integration valgrind
# stage NAME COMMAND...: runs it, then "check: NAME ... s" with its status.
check_stage = t0=$$(date +%s); $(2); rc=$$?; \
	echo "check: $(1) $$(($$(date +%s) - t0)) s$$([ $$rc -eq 0 ] || echo ", FAILED")"; exit $$rc
check: deps
	$(Q)tools/deps.sh browser
	@# Objects of another compiler or flags (an older make check's) cannot link with these.
	$(Q)[ "$$(cat build-check/.cc 2>/dev/null)" = "$(CC) $(CHECK_CFLAGS)" ] || \
		{ rm -rf build-check && mkdir -p build-check && echo "$(CC) $(CHECK_CFLAGS)" > build-check/.cc; }
	$(Q)$(call check_stage,build,$(MAKE) --no-print-directory OUTPUT=build-check BIN=build-check/spanperf \
		CFLAGS="$(CHECK_CFLAGS)" build-check/spanperf $(patsubst $(OUTPUT)/%,build-check/%,$(UNIT_BINS)) \
		build-check/tests/workload && \
		$(MAKE) --no-print-directory spanperf $(WORKLOADS) lib $(OUTPUT)/bench/gen_spans)
	$(Q)rm -rf build-check/san && mkdir -p build-check/san
	$(Q)$(if $(filter unit,$(CHECK_STAGES)),$(call check_stage,unit,$(SAN_ENV) tests/run-unit.sh \
		$(patsubst $(OUTPUT)/%,build-check/%,$(UNIT_BINS)); r=$$?; tests/san-logs.sh build-check/san && [ $$r -eq 0 ]), \
		echo "check: unit skipped (CHECK_STAGES)")
	$(Q)$(if $(filter integration,$(CHECK_STAGES)),$(call check_stage,integration,$(SAN_ENV) \
		SPANPERF_BIN=build-check/spanperf python3 -u tests/integration/run.py; \
		r=$$?; tests/san-logs.sh build-check/san && [ $$r -eq 0 ]), echo "check: integration skipped (CHECK_STAGES)")
	@# valgrind on the plain build: it cannot run an ASan binary.
	$(Q)$(if $(filter valgrind,$(CHECK_STAGES)),$(call check_stage,valgrind,tests/valgrind.sh), \
		echo "check: valgrind skipped (CHECK_STAGES)")

# Ten minutes of recording and counting under thread churn; figures in build/soak.txt.
soak: spanperf $(WORKLOADS)
	$(Q)python3 tests/soak.py $(SOAK_ARGS)

deps:
	$(Q)tools/deps.sh

unit: $(UNIT_BINS) spanperf man
	$(Q)tests/layout.sh
	$(Q)python3 tests/docs.py
	$(Q)tests/run-unit.sh $(UNIT_BINS)

integration: spanperf $(WORKLOADS) $(OUTPUT)/bench/gen_spans lib
	$(Q)python3 tests/integration/run.py

# The Go binding against the real OpenTelemetry SDK (skipped, saying why, without Go or the SDK).
gotest: lib
	$(Q)tests/gotest.sh

vmtest: spanperf $(WORKLOADS) $(OUTPUT)/tests/libspanperf_mmap $(OUTPUT)/tests/sampler_offline
	$(Q)tests/vm/run.sh

# `make test` installs what is missing first, then builds in a second make so
# that pkg-config sees the freshly installed libraries.  The kernel matrix
# runs where QEMU can, and says so where it cannot.
test: deps
	$(Q)tools/deps.sh browser
	$(Q)$(MAKE) --no-print-directory unit integration gotest fuzz-replay
	$(Q)$(MAKE) --no-print-directory spanperf $(WORKLOADS) $(OUTPUT)/tests/libspanperf_mmap $(OUTPUT)/tests/sampler_offline
	$(Q)tests/vm/run.sh --if-able

# Never part of `make test`: figures are ratios on a shared, noisy machine.
bench: spanperf $(WORKLOADS) $(OUTPUT)/bench/floor $(OUTPUT)/bench/gen_spans $(OUTPUT)/bench/unitwork_fp \
	$(OUTPUT)/bench/unitwork_nofp
	$(Q)tools/deps.sh build test bench browser
	$(Q)$(MAKE) --no-print-directory $(OUTPUT)/bench/bench_lib lib
	$(Q)tests/gotest.sh -c $(OUTPUT)/bench/spanperf_go.test
	$(Q)python3 bench/bench.py $(BENCH_ARGS)

demo: deps
	$(Q)$(MAKE) --no-print-directory spanperf $(WORKLOADS)
	$(Q)tools/demo.sh

clean:
	$(call msg,CLEAN,)
	$(Q)rm -rf $(OUTPUT) build-check spanperf

-include $(wildcard $(OUTPUT)/*.d $(OUTPUT)/*/*.d $(OUTPUT)/lib/user/*/*.d $(OUTPUT)/tests/*.d $(OUTPUT)/bench/*.d $(OUTPUT)/fuzz/*.d $(OUTPUT)/fuzz/*/*.d)
