# nccltop: `make` builds, `make test` tests (ASan+UBSan), `make demo` runs the
# simulated 8-rank job with the monitor attached. See README.md.
PREFIX ?= /usr/local
BUILD ?= build
CC ?= cc
SAN ?=
# Packages the build needs (pkg-config names), and those only the tests need
# (with the tools in TEST_TOOLS); scripts/install-deps.sh installs them all.
PKGS := libzmq ncursesw libcjson expat libmicrohttpd libzstd liblzma
TEST_PKGS := vterm
TEST_TOOLS := clang-format clang promtool groff

CFLAGS_COMMON := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -O2 -fPIC \
  -fvisibility=hidden -fno-omit-frame-pointer -MMD -MP
# The sanitized build is compiled at -O1, as ASan advises: it builds in half
# the time of -O2 (the suite's build is most of make test), and its tests
# wait on processes far more than they compute.
ifeq ($(SAN),1)
  CFLAGS_COMMON += -fsanitize=address,undefined -fno-sanitize-recover=all -O1
  LDSAN := -fsanitize=address,undefined
endif
ifeq ($(SAN),thread)
  CFLAGS_COMMON += -fsanitize=thread -O1
  LDSAN := -fsanitize=thread
endif
# What the code needs comes first; a user's CFLAGS, CPPFLAGS and LDFLAGS
# (make CFLAGS=-O0) add to it, never replace it.
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
NT_CFLAGS = $(CFLAGS_COMMON) $(CFLAGS)
NT_CPPFLAGS = $(PKG_CFLAGS) $(CPPFLAGS)
LIBS_PLUGIN := -lzmq -lpthread
LIBS_VIEWER := -lzmq -lncursesw -lcjson -lexpat -lmicrohttpd -lzstd -llzma -ldl -lpthread -lm

PROTO_SRC := $(wildcard proto/*.c)
PLUGIN_SRC := $(wildcard plugin/*.c)
SIM_SRC := $(wildcard sim/*.c)
TOPO_SRC := $(wildcard topo/*.c)
MONITOR_SRC := $(filter-out monitor/commands/main.c,$(wildcard monitor/*/*.c))
TEST_SRC := $(wildcard tests/test_*.c)
# Set-up the tests share (tests/lib/*.c), compiled once and linked into each.
TESTLIB_SRC := $(wildcard tests/lib/*.c)
BENCH_SRC := $(wildcard bench/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
PROTO_OBJ := $(call obj,$(PROTO_SRC))
PLUGIN_OBJ := $(call obj,$(PLUGIN_SRC))
# The plugin never parses JSON, so it does not link cJSON (a shared cJSON in a
# training process could clash with ours).
PROTO_PLUGIN_OBJ := $(filter-out %_decode.o,$(PROTO_OBJ))
SIM_OBJ := $(call obj,$(SIM_SRC))
TOPO_OBJ := $(call obj,$(TOPO_SRC))
MONITOR_OBJ := $(call obj,$(MONITOR_SRC))
VIEWER_OBJ := $(MONITOR_OBJ) $(SIM_OBJ) $(TOPO_OBJ) $(PROTO_OBJ)
TESTLIB_OBJ := $(call obj,$(TESTLIB_SRC))

PLUGIN_SO := $(BUILD)/libnccl-profiler-nccltop.so
NCCLTOP := $(BUILD)/nccltop
TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
FIXTURES := $(patsubst tests/fixtures/%.c,$(BUILD)/tests/lib%.so,$(wildcard tests/fixtures/*.c))
BENCHES := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: scale-test all build-deps deps test check demo bench install clean format format-check tsan gpu-test gpu-build screenshots \
  fuzz fuzz-smoke
all: build-deps $(PLUGIN_SO) $(NCCLTOP)

# `make` only checks that the build's packages are there; it never installs
# anything. `make deps` (and `make test`, which needs the test tools too)
# installs what is missing when root, otherwise prints the command to run.
build-deps:
	@pkg-config --exists $(PKGS) 2>/dev/null || { \
	  echo "nccltop: missing build packages (pkg-config: $(PKGS)); run: sudo make deps" >&2; \
	  exit 1; }

deps:
	@missing=; pkg-config --exists $(PKGS) $(TEST_PKGS) 2>/dev/null || missing=1; \
	for t in $(TEST_TOOLS); do command -v $$t >/dev/null || missing=1; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then sh scripts/install-deps.sh; \
	  else echo "nccltop: missing packages; run: sudo sh scripts/install-deps.sh" >&2; exit 1; fi; \
	fi

$(BUILD)/obj/%.o: %.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) $(NT_CPPFLAGS) $(NT_CFLAGS) -c $< -o $@

# -z nodelete: NCCL dlcloses the plugin after the last finalize, and a
# publisher thread that finalize had to leave behind must not run unmapped code.
PLUGIN_LDFLAGS := -shared -Wl,-z,defs -Wl,-z,nodelete -Wl,--exclude-libs,ALL \
  -Wl,-soname,libnccl-profiler-nccltop.so
$(PLUGIN_SO): $(PLUGIN_OBJ) $(PROTO_PLUGIN_OBJ)
	$(CC) $(PLUGIN_LDFLAGS) $(LDSAN) $(LDFLAGS) -o $@ $^ $(LIBS_PLUGIN)

# A test-only build of the plugin whose topology open blocks (as on a stalled
# network mount), for tests/test_hostile_plugin.c; never installed.
STUCK_SO := $(BUILD)/tests/libnccl-profiler-nccltop-stuck.so
$(BUILD)/obj-stuck/%.o: %.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) $(NT_CPPFLAGS) $(NT_CFLAGS) -DNT_TEST_HOOKS -DNT_TEST_TOPO_OPEN_BLOCKS -c $< -o $@
$(STUCK_SO): $(patsubst %.c,$(BUILD)/obj-stuck/%.o,$(PLUGIN_SRC)) $(PROTO_PLUGIN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_LDFLAGS) $(LDSAN) $(LDFLAGS) -o $@ $^ $(LIBS_PLUGIN)

# The test-only build with the test hooks (nccltop_sim_set_clock: the
# simulator's virtual clock), for the tests and deterministic simulated
# runs; the production plugin exports no test hook. Never installed.
TEST_SO := $(BUILD)/tests/libnccl-profiler-nccltop-test.so
$(BUILD)/obj-test/%.o: %.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) $(NT_CPPFLAGS) $(NT_CFLAGS) -DNT_TEST_HOOKS -c $< -o $@
$(TEST_SO): $(patsubst %.c,$(BUILD)/obj-test/%.o,$(PLUGIN_SRC)) $(PROTO_PLUGIN_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(PLUGIN_LDFLAGS) $(LDSAN) $(LDFLAGS) -o $@ $^ $(LIBS_PLUGIN)

# The simulator answers NCCL's ncclGetVersion (sim/version.c) from the
# executable its ranks run in, where the plugin looks it up with dlsym.
SIM_EXPORTS := -Wl,--export-dynamic-symbol=ncclGetVersion

$(NCCLTOP): $(BUILD)/obj/monitor/commands/main.o $(VIEWER_OBJ)
	$(CC) $(LDSAN) $(LDFLAGS) $(SIM_EXPORTS) -o $@ $^ $(LIBS_VIEWER)

# Kept after the build (make deletes a pattern rule's intermediate files):
# else every later make rebuilds them and relinks every test.
.SECONDARY: $(TESTLIB_OBJ)
$(BUILD)/tests/%: tests/%.c $(TESTLIB_OBJ) $(VIEWER_OBJ) | build-deps
	@mkdir -p $(dir $@)
	$(CC) $(NT_CPPFLAGS) $(NT_CFLAGS) -o $@ $< $(TESTLIB_OBJ) $(VIEWER_OBJ) $(LDSAN) $(LDFLAGS) $(SIM_EXPORTS) $(LIBS_VIEWER) -lvterm -lutil

$(BUILD)/bench/%: bench/%.c $(VIEWER_OBJ) | build-deps
	@mkdir -p $(dir $@)
	$(CC) $(NT_CPPFLAGS) $(NT_CFLAGS) -o $@ $< $(VIEWER_OBJ) $(LDSAN) $(LDFLAGS) $(LIBS_VIEWER) -lvterm -lutil

# Plugins tests load instead of ours (tests/fixtures/NAME.c -> libNAME.so).
$(BUILD)/tests/lib%.so: tests/fixtures/%.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) $(NT_CPPFLAGS) $(NT_CFLAGS) -shared $(LDSAN) -o $@ $< -lpthread

# The clock-only baseline plugin bench/ compares against.
$(BUILD)/bench/libnccl-profiler-clockonly.so: bench/clockonly/clockonly_plugin.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) $(NT_CPPFLAGS) $(NT_CFLAGS) -shared -o $@ $<

# The test suite runs the sanitized build (build/san) so every test is also an
# ASan + UBSan run; then the one test too heavy for 128 sanitized processes
# (the diagnosis of a 128-rank job) again in the release build, where it runs.
# Builds with every core (a clean clone's build is most of make test's time).
NPROC := $(shell nproc 2>/dev/null || echo 2)
test: deps format-check
	$(MAKE) -j$(NPROC) fuzz-smoke
	$(MAKE) -j$(NPROC) BUILD=build/san SAN=1 check
	$(MAKE) -j$(NPROC) scale-test

scale-test: $(PLUGIN_SO) $(TEST_SO) $(NCCLTOP) $(BUILD)/tests/test_diagnosis_e2e
	BUILD=$(BUILD) sh tests/run.sh $(BUILD)/tests/test_diagnosis_e2e

# TEST_JOBS test binaries at a time (most of them wait on processes they
# started: three at a time kept 2 cores 47% busy, ASan), each killed after
# TEST_TIMEOUT seconds; the slowest first (60 s down to 10 s), so that none
# of them is left to run alone at the end.
TEST_JOBS ?= 3
TEST_TIMEOUT ?= 600
SLOW_TESTS := test_hostile_viewer test_job_limits test_relay_attacks test_sync_phases_e2e \
  test_endpoint_race test_demo_nodes test_exporter_flood test_watcher_e2e test_record \
  test_diagnosis_e2e test_sim_versions test_faults_restart test_hostile_peer test_relay \
  test_topo_graphs test_topo_graphs_machines test_batch_waiting
TESTS_SLOW_FIRST := $(foreach t,$(SLOW_TESTS),$(filter $(BUILD)/tests/$(t),$(TESTS))) \
  $(filter-out $(patsubst %,$(BUILD)/tests/%,$(SLOW_TESTS)),$(TESTS))
check: deps $(PLUGIN_SO) $(TEST_SO) $(STUCK_SO) $(NCCLTOP) $(TESTS) $(FIXTURES) gpu-build
	BUILD=$(BUILD) TEST_JOBS=$(TEST_JOBS) TEST_TIMEOUT=$(TEST_TIMEOUT) sh tests/run.sh \
	  $(TESTS_SLOW_FIRST)

# The plugin's concurrency tests under ThreadSanitizer.
tsan: deps
	$(MAKE) BUILD=build/tsan SAN=thread build/tsan/libnccl-profiler-nccltop.so \
	  build/tsan/tests/libnccl-profiler-nccltop-test.so build/tsan/tests/test_plugin \
	  build/tsan/tests/test_plugin_v3 build/tsan/tests/test_plugin_neverstop \
	  build/tsan/tests/test_plugin_runstate build/tsan/tests/test_plugin_abort build/tsan/tests/test_chain \
	  build/tsan/tests/test_chain_sim build/tsan/tests/test_clock build/tsan/tests/test_prefault \
	  build/tsan/nccltop \
	  build/tsan/tests/test_exporter build/tsan/tests/test_exporter_flood \
	  $(patsubst %,build/tsan/tests/lib%.so,recorder recorder7 recorder_v3 recorder_v4 chain_refuser chain_noop)
	TSAN_OPTIONS="halt_on_error=1 suppressions=tests/tsan.supp" build/tsan/tests/test_plugin
	TSAN_OPTIONS="halt_on_error=1 suppressions=tests/tsan.supp" build/tsan/tests/test_plugin_v3
	TSAN_OPTIONS="halt_on_error=1 suppressions=tests/tsan.supp" build/tsan/tests/test_plugin_neverstop
	TSAN_OPTIONS="halt_on_error=1 suppressions=tests/tsan.supp" build/tsan/tests/test_plugin_runstate
	TSAN_OPTIONS="halt_on_error=1 suppressions=tests/tsan.supp" build/tsan/tests/test_plugin_abort
	TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" build/tsan/tests/test_exporter
	TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" build/tsan/tests/test_exporter_flood
	TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" build/tsan/tests/test_chain
	TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" build/tsan/tests/test_chain_sim
	TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" build/tsan/tests/test_clock
	TSAN_OPTIONS="halt_on_error=1 suppressions=$(CURDIR)/tests/tsan.supp" build/tsan/tests/test_prefault

# Fuzzing (libFuzzer, clang): `make fuzz FUZZ_SECONDS=N` runs each target N
# seconds on the seed corpus in tests/fuzz/corpus/; new inputs go to build/fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := fuzz_snapshot fuzz_meta fuzz_topo fuzz_plugin fuzz_hostlist fuzz_recording
FUZZ_BASE := -std=c11 -D_GNU_SOURCE -g -O1 -fno-sanitize-recover=all $(PKG_CFLAGS)
FUZZ_CFLAGS := -fsanitize=fuzzer,address,undefined $(FUZZ_BASE)
FUZZ_SRC_fuzz_snapshot := $(PROTO_SRC)
FUZZ_SRC_fuzz_meta := $(PROTO_SRC)
FUZZ_SRC_fuzz_topo := $(TOPO_SRC) $(PROTO_SRC)
FUZZ_SRC_fuzz_plugin := $(PLUGIN_SRC) $(filter-out %_decode.c,$(PROTO_SRC))
FUZZ_SRC_fuzz_hostlist := monitor/feeds/hostlist.c
FUZZ_SRC_fuzz_recording := monitor/feeds/record_file.c monitor/feeds/outfile.c
FUZZ_BINS := $(addprefix build/fuzz/,$(FUZZ_TARGETS))

# Each source is compiled once for every target that links it (instrumented,
# without libFuzzer's main), so the targets build in parallel.
FUZZ_OBJ_CFLAGS := -fsanitize=fuzzer-no-link,address,undefined $(FUZZ_BASE) -MMD -MP
fuzzobj = $(patsubst %.c,build/fuzz/obj/%.o,$(1))
build/fuzz/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	clang $(FUZZ_OBJ_CFLAGS) -c $< -o $@

.PRECIOUS: build/fuzz/obj/%.o
.SECONDEXPANSION:
build/fuzz/%: tests/fuzz/%.c $$(call fuzzobj,$$(FUZZ_SRC_$$*)) | deps
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -o $@ $< $(call fuzzobj,$(FUZZ_SRC_$*)) -lcjson -lexpat -lzmq -lzstd \
	  -lpthread -lm

fuzz: $(FUZZ_BINS)
	FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/fuzz/run.sh $(FUZZ_TARGETS)

# The short run `make test` includes.
fuzz-smoke: $(FUZZ_BINS)
	FUZZ_SECONDS=3 sh tests/fuzz/run.sh $(FUZZ_TARGETS)

demo: deps all
	$(NCCLTOP) demo

bench: deps all $(BENCHES) $(BUILD)/bench/libnccl-profiler-clockonly.so
	sh bench/run.sh $(BUILD)

# The real-NCCL program builds wherever CUDA and NCCL headers exist.
CUDA ?= /usr/local/cuda
HAVE_NCCL := $(wildcard $(CUDA)/include/nccl.h)
gpu-build: $(if $(HAVE_NCCL),$(BUILD)/gpu/nccl_app) $(BUILD)/gpu/check_json

$(BUILD)/gpu/nccl_app: tests/gpu/nccl_app.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -I$(CUDA)/include -o $@ $< \
	  -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lnccl -lcudart -ldl

$(BUILD)/gpu/check_json: tests/gpu/check_json.c | build-deps
	@mkdir -p $(dir $@)
	$(CC) $(NT_CPPFLAGS) $(NT_CFLAGS) -o $@ $< $(LDSAN) -lcjson

gpu-test: all gpu-build
	sh tests/gpu/run.sh $(BUILD)

# The binary, the plugin, the man page, bash completion, the example
# topologies and the Grafana dashboard, under $(DESTDIR)$(PREFIX) (tests/test_install.c runs it).
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
DATADIR ?= $(PREFIX)/share/nccltop
EXAMPLE_TOPOLOGIES := $(wildcard examples/topologies/*.xml)
# README screenshots, regenerated from the real program (scripts/readme-screens.sh).
screenshots: all $(BUILD)/tests/screenshot
	sh scripts/readme-screens.sh $(BUILD)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(MANDIR)/man1 \
	  $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DATADIR)/examples/topologies \
	  $(DESTDIR)$(DATADIR)/examples/grafana
	install -m 755 $(NCCLTOP) $(DESTDIR)$(PREFIX)/bin/nccltop
	install -m 755 $(PLUGIN_SO) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 docs/nccltop.1 $(DESTDIR)$(MANDIR)/man1/nccltop.1
	install -m 644 scripts/nccltop-completion.bash $(DESTDIR)$(BASHCOMPDIR)/nccltop
	install -m 644 $(EXAMPLE_TOPOLOGIES) $(DESTDIR)$(DATADIR)/examples/topologies/
	install -m 644 examples/grafana/nccltop.json $(DESTDIR)$(DATADIR)/examples/grafana/
	@# NCCL_PROFILER_PLUGIN=nccltop makes NCCL dlopen libnccl-profiler-nccltop.so by
	@# name: the loader finds it in $(PREFIX)/lib only through its cache. A staged
	@# install (DESTDIR) is the package's business.
	@if [ -z "$(DESTDIR)" ]; then \
	  if [ "$$(id -u)" = 0 ]; then PATH="$$PATH:/sbin:/usr/sbin" ldconfig || exit 1; fi; \
	  PATH="$$PATH:/sbin:/usr/sbin" ldconfig -p 2>/dev/null | \
	    grep -q "=> $(PREFIX)/lib/libnccl-profiler-nccltop.so$$" || \
	  echo "nccltop: $(PREFIX)/lib is not on the loader's path, so NCCL_PROFILER_PLUGIN=nccltop will not find the plugin: add $(PREFIX)/lib to /etc/ld.so.conf.d/ and run ldconfig, or use NCCL_PROFILER_PLUGIN=$(PREFIX)/lib/libnccl-profiler-nccltop.so" >&2; \
	fi

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	@clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h') && echo "format: ok"

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
