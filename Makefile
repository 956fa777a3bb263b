# kcache: plain GNU make. `make` builds the tools and examples, `make test` sets up what is missing
# (scripts/deps.sh) then builds and runs every test, `make check` runs the core's tests with a C
# compiler alone, `make bench` measures, `make demo` shows it.
CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wpedantic -Werror
STD     := -std=c99
LDLIBS  := -lpthread
B       := build
PREFIX  ?= /usr/local
DESTDIR ?=

SAN     := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

# one test program per layer; each runs plain and under ASan+UBSan (and, through scripts/memcheck.sh,
# under valgrind memcheck and ThreadSanitizer)
CTESTS  := test_hash test_host test_key test_lru test_threads test_store test_flight test_index test_exchange test_hostile test_backend test_toolapi
# misuse of the API caught in a debug build (KCACHE_ASSERT overridden to count), plain and under ASan
CTESTS  += test_misuse
TOOLS   := $(B)/kcache-inspect $(B)/kcache-top
# the OpenCL preload library (LD_PRELOAD, tools/kcache_cl_preload.c): built by `make`, installed to
# lib/ by `make install` where the OpenCL headers are (a machine without them still installs the rest)
PRELOAD := $(B)/libkcache_cl.so
HAVE_CL := $(shell printf '\043include <CL/cl.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo yes)
INSTALL_PRELOAD := $(if $(HAVE_CL),$(PRELOAD))
# kcache-top without curses where its header is missing (`make check` on a bare machine): the
# batch mode (-b) only
HAVE_CURSES := $(shell printf '\043include <curses.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo yes)
TOP_DEFS := $(if $(HAVE_CURSES),,-DKCACHE_TOP_NO_CURSES)
CURSES  := $(if $(HAVE_CURSES),$(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw))
EXAMPLES = $(B)/demo_cc $(B)/opencl_saxpy $(B)/opencl_many $(B)/opencl_demo $(B)/kcache_load $(NVRTC_EX) $(VK_EX)
CL_LIBS := -lOpenCL $(LDLIBS)
# the remote tier's optional parts: Redis (hiredis), zstd, HMAC-SHA-256 from libcrypto, TLS from libssl
REMOTE_DEFS := -DKCACHE_REDIS -DKCACHE_ZSTD -DKCACHE_HMAC_OPENSSL -DKCACHE_TLS_OPENSSL
REMOTE_LIBS := -lhiredis -lzstd -lssl -lcrypto $(LDLIBS)

.PHONY: gpu-bin all tools examples test check-deps bench demo demo-deps demo-cc install uninstall clean fuzz fuzz-smoke \
        test-aarch64 test-s390x test-exchange torture test-windows test-valgrind test-tsan test-noofd test-core check
all: tools examples $(PRELOAD)

$(B) $(B)/asan $(B)/noofd $(B)/asan-noofd:
	mkdir -p $@

# ---- tools and examples ----
tools: $(TOOLS)
examples: $(EXAMPLES)

# kcache-inspect: one program from the files below (tools/inspect.h says what each holds);
# TOOL_INSPECT_LIB, all but main's, is what the fuzz targets and bench_inspect build with too
TOOL_INSPECT_SRC := tools/inspect_main.c tools/inspect_common.c tools/inspect_pickle.c tools/inspect_sha.c \
                    tools/inspect_numba.c tools/inspect_llvm.c tools/inspect_zip.c tools/inspect_pysrc.c \
                    tools/inspect_store.c
TOOL_INSPECT_LIB := $(filter-out tools/inspect_main.c,$(TOOL_INSPECT_SRC))
TOOL_INSPECT_DEPS := $(TOOL_INSPECT_SRC) tools/inspect.h tools/ktext.h kcache.h
$(B)/kcache-inspect: $(TOOL_INSPECT_DEPS) | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $(TOOL_INSPECT_SRC) $(LDLIBS)

$(PRELOAD): tools/kcache_cl_preload.c kcache.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -fPIC -shared -I. -o $@ $< -lOpenCL -ldl $(LDLIBS)
$(B)/kcache-top: tools/kcache-top.c kcache.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(TOP_DEFS) $(WARN) -I. -o $@ $< $(CURSES) $(LDLIBS)
$(B)/make_store: tests/make_store.c kcache.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS)
$(B)/kcache_load: examples/kcache_load.c kcache.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS)

$(B)/demo_cc: examples/demo_cc.c examples/jit_cache.h kcache.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS) -ldl
# CUDA C to PTX with NVRTC (examples/nvrtc_ptx.c): built where a CUDA toolkit is (CUDA=/path to
# choose one); NVRTC needs no GPU. Without a toolkit tests/test_demo.sh says it skipped it.
CUDA    ?= $(firstword $(wildcard /usr/local/cuda /usr/local/cuda-*))
NVRTC_EX := $(if $(wildcard $(CUDA)/include/nvrtc.h),$(B)/nvrtc_ptx)
$(B)/nvrtc_ptx: examples/nvrtc_ptx.c examples/jit_cache.h kcache.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -I$(CUDA)/include -o $@ $< -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lnvrtc $(LDLIBS) -ldl
# Vulkan pipelines (kcache_vk_pipeline, KCACHE_VULKAN): the example also compiles its GLSL with
# shaderc. Debian 12's libshaderc.so does not link (its glslang symbols are missing), so shaderc's
# static library and glslang's. Built where the headers are; make test installs them.
VK_LIBS := -lvulkan $(LDLIBS)
SHADERC_LIBS := -l:libshaderc_combined.a -lglslang -lMachineIndependent -lGenericCodeGen -lOSDependent -lOGLCompiler \
                -lSPIRV -lSPIRV-Tools-opt -lSPIRV-Tools -lstdc++ -lm
VK_EX := $(if $(and $(wildcard /usr/include/vulkan/vulkan.h),$(wildcard /usr/include/shaderc/shaderc.h)),$(B)/vk_pipeline)
$(B)/vk_pipeline: examples/vk_pipeline.c examples/vk_compute.h kcache.h kcache_vk.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(VK_LIBS) $(SHADERC_LIBS)
$(B)/opencl_%: examples/opencl_%.c kcache.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(CL_LIBS)
$(B)/opencl_demo: examples/opencl_demo_kernel.h

# ---- tests ----
$(B)/test_%: tests/test_%.c kcache.h tests/kt.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS)
$(B)/asan/test_%: tests/test_%.c kcache.h tests/kt.h | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -o $@ $< $(LDLIBS)

# the remote tier: through a backend table of the test's own (test_backend, a plain build), and
# against real redis-server processes the test starts (test_remote)
$(B)/test_backend $(B)/asan/test_backend: tests/kt_remote.h
# the same backend with the core's optional value parts, signing (libcrypto) and zstd: the groups
# that prove the core signs, compresses and checks for any backend, which the plain build skips
BACKEND_OPT := -DKCACHE_HMAC_OPENSSL -DKCACHE_ZSTD
BACKEND_OPT_LIBS := -lzstd -lcrypto $(LDLIBS)
$(B)/test_backend_signed: tests/test_backend.c kcache.h tests/kt.h tests/kt_remote.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(BACKEND_OPT) $(WARN) -I. -o $@ $< $(BACKEND_OPT_LIBS)
$(B)/asan/test_backend_signed: tests/test_backend.c kcache.h tests/kt.h tests/kt_remote.h | $(B)/asan
	$(CC) $(STD) $(SAN) $(BACKEND_OPT) $(WARN) -I. -o $@ $< $(BACKEND_OPT_LIBS)
$(B)/test_remote: tests/test_remote.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
$(B)/asan/test_remote: tests/test_remote.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
# read-only layers (KCACHE_LAYERS) and kcache-inspect --make-layer; with a redis-server for the
# order of layers and remote, and a second user (tests/test_layers.sh, as root) for the owners
$(B)/test_layers: tests/test_layers.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
$(B)/asan/test_layers: tests/test_layers.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
# the ASan run checks --make-layer with an ASan+UBSan kcache-inspect too
$(B)/asan/kcache-inspect: $(TOOL_INSPECT_DEPS) | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -o $@ $(TOOL_INSPECT_SRC) $(LDLIBS)
# a fleet: 1,000 short-lived client processes against a 3-node Redis Cluster (issue 35.12; make bench: 2,000, with rates)
$(B)/test_scale: tests/test_scale.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
REMOTE_TESTS := $(B)/test_remote $(B)/asan/test_remote $(B)/test_layers $(B)/asan/test_layers $(B)/asan/kcache-inspect $(B)/test_scale
REMOTE_TESTS += $(B)/test_backend_signed $(B)/asan/test_backend_signed
# the batch call (kcache_get_or_build_many): processes and threads on one store, and stores of their
# own sharing a redis-server
$(B)/test_many: tests/test_many.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
$(B)/asan/test_many: tests/test_many.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
REMOTE_TESTS += $(B)/test_many $(B)/asan/test_many
# the claims and read-backs against network faults made in a namespace of the test's own (tc on its
# lo: loss by a BPF filter, rate by tbf; root), counted (tests/test_netfaults.c)
$(B)/test_netfaults: tests/test_netfaults.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
REMOTE_TESTS += $(B)/test_netfaults
# the round trips of a cold start through a proxy adding RTT (tests/kt_delay.h), counted
$(B)/test_rtt: tests/test_rtt.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h tests/kt_delay.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
REMOTE_TESTS += $(B)/test_rtt
# Redis Clusters started by the test: failover that heals, a breaker per node, TLS cluster names,
# waiters told through sharded pub/sub (a subscriber per process and node)
$(B)/test_cluster: tests/test_cluster.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
$(B)/asan/test_cluster: tests/test_cluster.c kcache.h kcache_redis.h tests/kt.h tests/kt_remote.h | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
REMOTE_TESTS += $(B)/test_cluster $(B)/asan/test_cluster

# the same tests with open-file-description locks compiled out (KCACHE_TEST_NO_OFD): process-
# associated locks only, as on macOS and the BSDs, where only kcache's lock registry keeps two
# handles of one process from stepping on each other. `make test` runs the store, flight and
# threads tests so (plain and ASan); `make test-noofd` runs every C test so.
NOOFD   := -DKCACHE_TEST_NO_OFD
NOOFD_TESTS := test_store test_flight test_threads
$(B)/noofd/test_%: tests/test_%.c kcache.h tests/kt.h | $(B)/noofd
	$(CC) $(STD) $(CFLAGS) $(NOOFD) $(WARN) -I. -o $@ $< $(LDLIBS)
$(B)/asan-noofd/test_%: tests/test_%.c kcache.h tests/kt.h | $(B)/asan-noofd
	$(CC) $(STD) $(SAN) $(NOOFD) $(WARN) -I. -o $@ $< $(LDLIBS)

# the core alone: every compile-out switch a vendor has (kcache.h's OPTIONS); the core's tests run
# so in `make test`, skipping (a "skip" line) the groups that need a part compiled out
CORE_SW := -DKCACHE_NO_REMOTE -DKCACHE_NO_LAYERS -DKCACHE_NO_PUB -DKCACHE_NO_CPU_NAMES -DKCACHE_NO_EXPLAIN -DKCACHE_NO_ENV -DKCACHE_NO_TIDY
CORE_TESTS := test_key test_lru test_store test_flight test_threads test_index
$(B)/core:
	mkdir -p $@
$(B)/core/test_%: tests/test_%.c kcache.h tests/kt.h | $(B)/core
	$(CC) $(STD) $(CFLAGS) $(CORE_SW) $(WARN) -I. -o $@ $< $(LDLIBS)

# the OpenCL layer's tests (PoCL) link the ICD loader
$(B)/test_opencl: tests/test_opencl.c kcache.h tests/kt.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -Itests -o $@ $< $(CL_LIBS)
$(B)/asan/test_opencl: tests/test_opencl.c kcache.h tests/kt.h | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -Itests -o $@ $< $(CL_LIBS)
CL_TESTS := $(B)/test_opencl $(B)/asan/test_opencl $(B)/opencl_demo
CL_TESTS += $(B)/opencl_many

# the Vulkan part's tests on lavapipe (mesa-vulkan-drivers), and the example run twice
$(B)/test_vulkan: tests/test_vulkan.c examples/vk_compute.h kcache.h kcache_vk.h tests/kt.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(VK_LIBS)
$(B)/asan/test_vulkan: tests/test_vulkan.c examples/vk_compute.h kcache.h kcache_vk.h tests/kt.h | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -o $@ $< $(VK_LIBS)
VK_TESTS := $(B)/test_vulkan $(B)/asan/test_vulkan $(B)/vk_pipeline

# fault injection (every I/O call site of kcache.h failing in turn) runs under ASan+UBSan, whose
# LeakSanitizer also catches what a failure path forgets to free
FAULTS := $(B)/asan/test_faults

# the torture (tests/torture.c, scripts/torture.sh): 16 processes of gets, puts, removes and
# get_or_build on a 2 MiB store, SIGKILLed at random moments, on each filesystem here (disk, a loop
# ext4 when the disk is not ext4 and we are root, tmpfs); `make test` runs it TORTURE_SHORT s per
# filesystem, `make torture TORTURE_TIME=600` as long as asked
TORTURE_TIME  ?= 600
TORTURE_SHORT ?= 18
$(B)/torture: tests/torture.c kcache.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS)
$(B)/asan/torture: tests/torture.c kcache.h | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -o $@ $< $(LDLIBS)
# its remote mode: processes on stores of their own sharing one redis-server (scripts/torture.sh
# runs it after the filesystems when build/torture_remote is there)
$(B)/torture_remote: tests/torture.c tests/kt_remote.h kcache.h kcache_redis.h | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) $(REMOTE_DEFS) -I. -o $@ $< $(REMOTE_LIBS)
torture: $(B)/torture $(B)/torture_remote
	@bash scripts/torture.sh $(TORTURE_TIME) $(B)/torture

# another local user against a store (issue 16): run by tests/test_attack.sh, which makes (useradd)
# and removes the second user when root
ATTACK := $(B)/test_attack $(B)/asan/test_attack
TEST_BINS := $(addprefix $(B)/,$(CTESTS)) $(addprefix $(B)/asan/,$(CTESTS)) $(ATTACK) \
             $(addprefix $(B)/noofd/,$(NOOFD_TESTS)) $(addprefix $(B)/asan-noofd/,$(NOOFD_TESTS)) \
             $(addprefix $(B)/core/,$(CORE_TESTS))

check-deps:
	@bash scripts/deps.sh

# Runs everything; the last line is "N passed, N failed".
test: check-deps
	@$(MAKE) --no-print-directory -j2 $(TEST_BINS) $(CL_TESTS) $(VK_TESTS) $(REMOTE_TESTS) $(TOOLS) $(INSPECT_TESTS) $(FAULTS) $(B)/torture $(B)/torture_remote $(B)/demo_cc $(NVRTC_EX) $(B)/kcache_load $(B)/make_store $(addprefix $(B)/,$(FUZZERS)) $(TEST_BENCHES) $(PRELOAD)
	@# PyPI's numba (build/venv-numba) before the tests that use it (test_host, test_inspect): made once, kept
	@bash scripts/numba-venv.sh >$(B)/numba-venv.log 2>&1 || echo "# build/venv-numba not made ($$(tail -n 1 $(B)/numba-venv.log)): test_inspect says what is skipped"
	@bash tests/run.sh \
	  compile=tests/compile_check.sh \
	  compile-matrix="bash tests/compile_matrix.sh" \
	  readme=tests/test_readme.sh \
	  $(foreach t,$(CTESTS),$(t)=$(B)/$(t)) \
	  $(foreach t,$(CTESTS),asan/$(t)=$(B)/asan/$(t)) \
	  $(foreach t,$(NOOFD_TESTS),noofd/$(t)=$(B)/noofd/$(t)) \
	  $(foreach t,$(NOOFD_TESTS),asan-noofd/$(t)=$(B)/asan-noofd/$(t)) \
	  $(foreach t,$(CORE_TESTS),core/$(t)=$(B)/core/$(t)) \
	  tsan="bash scripts/memcheck.sh tsan" \
	  valgrind="bash scripts/memcheck.sh valgrind" \
	  inspect="tests/test_inspect.sh $(B)/kcache-inspect" \
	  numba="bash tests/test_numba.sh" \
	  inspect-llvm=$(B)/test_inspect_llvm asan/inspect-llvm=$(B)/asan/test_inspect_llvm \
	  inspect-store="tests/test_inspect_store.sh $(B)/kcache-inspect $(B)/make_store" \
	  store-cmds="tests/test_store_cmds.sh $(B)/kcache-inspect $(B)/make_store $(B)/kcache_load" \
	  asan/store-cmds="tests/test_store_cmds.sh $(B)/asan/kcache-inspect $(B)/make_store $(B)/kcache_load" \
	  install=tests/test_install.sh \
	  top="tests/test_top.sh $(B)/kcache-top $(B)/kcache_load" \
	  tools-hostile="bash tests/test_tools_hostile.sh $(B)/kcache-inspect $(B)/make_store $(B)/kcache-top" \
	  top-deps="bash tests/test_top_deps.sh $(B)/kcache-top $(B)/make_store $(B)/kcache-inspect" \
	  fuzz-smoke="tests/fuzz_smoke.sh $(FUZZ_SMOKE) $(FUZZERS)" \
	  compile-more="bash tests/compile_more.sh" \
	  windows="bash scripts/windows.sh" \
	  aarch64="bash scripts/cross.sh aarch64" \
	  s390x="bash scripts/cross.sh s390x" \
	  exchange="bash scripts/exchange.sh $(B)/test_exchange" \
	  portable="bash tests/test_portable.sh $(B)/test_exchange" \
	  demo-cc="tests/test_demo.sh $(B)/demo_cc $(B)/nvrtc_ptx $(B)/kcache-inspect" \
	  opencl=$(B)/test_opencl asan/opencl=$(B)/asan/test_opencl \
	  demo="tests/test_demo_opencl.sh $(B)/opencl_demo $(B)/opencl_many" \
	  preload="bash tests/test_preload.sh $(PRELOAD)" \
	  vulkan=$(B)/test_vulkan asan/vulkan=$(B)/asan/test_vulkan \
	  demo-vulkan="tests/test_demo_vulkan.sh $(B)/vk_pipeline" \
	  faults=$(FAULTS) \
	  remote="$(B)/test_remote $(B)/kcache-top" asan/remote="$(B)/asan/test_remote $(B)/kcache-top" \
	  scale=$(B)/test_scale \
	  mixed-04="bash tests/test_mixed_04.sh" \
	  many=$(B)/test_many asan/many=$(B)/asan/test_many \
	  netfaults=$(B)/test_netfaults \
	  rtt=$(B)/test_rtt \
	  cluster="$(B)/test_cluster $(B)/kcache-top" asan/cluster="$(B)/asan/test_cluster $(B)/kcache-top" \
	  backend-signed=$(B)/test_backend_signed asan/backend-signed=$(B)/asan/test_backend_signed \
	  layers="bash tests/test_layers.sh $(B)/test_layers $(B)/kcache-inspect $(B)/kcache-top" \
	  asan/layers="bash tests/test_layers.sh $(B)/asan/test_layers $(B)/asan/kcache-inspect $(B)/kcache-top" \
	  attack="bash tests/test_attack.sh $(B)/test_attack" \
	  asan/attack="bash tests/test_attack.sh $(B)/asan/test_attack" \
	  torture="bash scripts/torture.sh $(TORTURE_SHORT) $(B)/torture"

# every C test with OFD locks compiled out, plain and under ASan+UBSan
test-noofd: check-deps
	@$(MAKE) --no-print-directory -j2 $(addprefix $(B)/noofd/,$(CTESTS)) $(addprefix $(B)/asan-noofd/,$(CTESTS))
	@bash tests/run.sh $(foreach t,$(CTESTS),noofd/$(t)=$(B)/noofd/$(t)) $(foreach t,$(CTESTS),asan-noofd/$(t)=$(B)/asan-noofd/$(t))

# the core's tests built with every compile-out switch (CORE_SW)
test-core: check-deps
	@$(MAKE) --no-print-directory -j2 $(addprefix $(B)/core/,$(CORE_TESTS))
	@bash tests/run.sh $(foreach t,$(CORE_TESTS),core/$(t)=$(B)/core/$(t))

# ---- make check: the core's tests for a contributor without root or packages: a C compiler, make,
# bash and the basic shell tools (no apt, network, redis-server, OpenCL, Python or tmux; what needs
# one says "skip"). Built at -O0 (5x faster to compile than -O1) into build/check (B), plain only
# (`make test` has the sanitizers); the core's tests also with every compile-out switch (CORE_SW).
# KT_SKIP_MISSING=1 tells the tests that a missing tool is a skip here, a failure in `make test`.
# Each file it runs is run by `make test` too. Over 300 checks in 2-4 minutes on 2 cores. ----
CHECK_DIR    := $(B)/check
CHECK_CTESTS := test_hash test_key test_lru test_store test_flight test_index test_threads test_misuse test_hostile \
                test_backend test_many test_toolapi
CHECK_BINS   := $(addprefix $(CHECK_DIR)/,$(CHECK_CTESTS) $(addprefix core/,$(CORE_TESTS)) kcache-inspect kcache-top make_store kcache_load)
check:
	@$(MAKE) --no-print-directory -j2 B=$(CHECK_DIR) CFLAGS='-O0 -g -DKT_NO_REDIS' REMOTE_LIBS='$(LDLIBS)' $(CHECK_BINS)
	@KT_SKIP_MISSING=1 bash tests/run.sh \
	  $(foreach t,$(CHECK_CTESTS),$(t)=$(CHECK_DIR)/$(t)) \
	  $(foreach t,$(CORE_TESTS),core/$(t)=$(CHECK_DIR)/core/$(t)) \
	  inspect-store="tests/test_inspect_store.sh $(CHECK_DIR)/kcache-inspect $(CHECK_DIR)/make_store" \
	  store-cmds="tests/test_store_cmds.sh $(CHECK_DIR)/kcache-inspect $(CHECK_DIR)/make_store $(CHECK_DIR)/kcache_load" \
	  top="tests/test_top.sh $(CHECK_DIR)/kcache-top $(CHECK_DIR)/kcache_load"

# ---- other platforms: the suite under qemu-user (aarch64, s390x big-endian), and stores written on
# one platform read on the others ----
test-aarch64 test-s390x: check-deps
	@bash tests/run.sh $(@:test-%=%)="bash scripts/cross.sh $(@:test-%=%)"
# the whole C suite under valgrind memcheck / ThreadSanitizer, forked children included
# (scripts/memcheck.sh; KT_QUICK=0 also runs every test_opencl group: ~30 min under valgrind)
test-valgrind test-tsan: check-deps
	@bash tests/run.sh $(@:test-%=%)="bash scripts/memcheck.sh $(@:test-%=%)"

# Windows: the Win32 layer built with mingw-w64, its tests run under wine (scripts/windows.sh)
test-windows: check-deps
	@bash tests/run.sh windows="bash scripts/windows.sh"
test-exchange: check-deps $(B)/test_exchange $(B)/kcache-inspect
	@bash tests/run.sh exchange="bash scripts/exchange.sh $(B)/test_exchange" \
	  portable="bash tests/test_portable.sh $(B)/test_exchange"

# ---- fuzzing (libFuzzer): `make fuzz FUZZ_TIME=600` runs each target that long; `make fuzz-smoke`
# (part of make test) runs each for FUZZ_SMOKE seconds from its seed corpus ----
FUZZERS    := fuzz_pickle fuzz_store fuzz_stats fuzz_env fuzz_cluster
FUZZ_TIME  ?= 600
FUZZ_SMOKE ?= 15
FUZZ_FLAGS := -std=c99 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
# (both include inspect_store.c, the file of the tool that compiles kcache.h's implementation: they
# call its private parsers, and fuzz_json.h its UTF-8 reader)
$(B)/fuzz_pickle: fuzz/fuzz_pickle.c fuzz/fuzz_json.h $(TOOL_INSPECT_DEPS) | $(B)
	clang $(FUZZ_FLAGS) -I. -o $@ $< $(filter-out tools/inspect_store.c,$(TOOL_INSPECT_LIB)) $(LDLIBS)
$(B)/fuzz_store: fuzz/fuzz_store.c fuzz/fuzz_json.h $(TOOL_INSPECT_DEPS) | $(B)
	clang $(FUZZ_FLAGS) -I. -o $@ $< $(filter-out tools/inspect_store.c,$(TOOL_INSPECT_LIB)) $(LDLIBS)
$(B)/fuzz_stats: fuzz/fuzz_stats.c fuzz/fuzz_tmp.h tools/kcache-top.c kcache.h | $(B)
	clang $(FUZZ_FLAGS) -I. -o $@ $< $(LDLIBS)
$(B)/fuzz_env: fuzz/fuzz_env.c fuzz/fuzz_tmp.h kcache.h | $(B)
	clang $(FUZZ_FLAGS) -I. -o $@ $< $(LDLIBS)
$(B)/fuzz_cluster: fuzz/fuzz_cluster.c kcache.h kcache_redis.h | $(B)
	clang $(FUZZ_FLAGS) -I. -o $@ $< -lhiredis $(LDLIBS)
fuzz: $(addprefix $(B)/,$(FUZZERS))
	@for f in $(FUZZERS); do mkdir -p $(B)/fuzz-work/$$f; \
	  echo "== $$f for $(FUZZ_TIME) s"; \
	  $(B)/$$f -max_total_time=$(FUZZ_TIME) -print_final_stats=1 $(B)/fuzz-work/$$f fuzz/corpus/$${f#fuzz_} 2>&1 | \
	    grep -E "stat::number_of_executed_units|stat::peak_rss|ERROR|SUMMARY" ; done
fuzz-smoke: $(addprefix $(B)/,$(FUZZERS))
	@bash tests/fuzz_smoke.sh $(FUZZ_SMOKE) $(FUZZERS)

# ---- benchmarks (ratios against the floor or a peer measured in the same run) ----
BENCH_CFLAGS := -O2 -g
# what ships: a release build (NDEBUG), without the debug build's misuse checks (KCACHE_CHECKS)
BENCH_CFLAGS += -DNDEBUG
$(B)/ref_sse2.o: bench/ref_xxh3.c | $(B)
	$(CC) -O3 -DREF_NAME=ref_sse2 -I. -c -o $@ $<
$(B)/ref_avx2.o: bench/ref_xxh3.c | $(B)
	$(CC) -O3 -mavx2 -DREF_NAME=ref_avx2 -I. -c -o $@ $<
$(B)/ref_avx512.o: bench/ref_xxh3.c | $(B)
	$(CC) -O3 -mavx512f -DREF_NAME=ref_avx512 -I. -c -o $@ $<
$(B)/bench_hash: bench/bench_hash.c $(B)/ref_sse2.o $(B)/ref_avx2.o $(B)/ref_avx512.o kcache.h
	$(CC) $(STD) $(BENCH_CFLAGS) $(WARN) -I. -o $@ $< $(B)/ref_sse2.o $(B)/ref_avx2.o $(B)/ref_avx512.o $(LDLIBS)
$(B)/bench_opencl: bench/bench_opencl.c kcache.h | $(B)
	$(CC) $(STD) $(BENCH_CFLAGS) $(WARN) -I. -o $@ $< $(CL_LIBS) -lm
$(B)/bench_evict: bench/bench_evict.c bench/bench_util.h kcache.h | $(B)
	$(CC) $(STD) $(BENCH_CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS) -lm
$(B)/bench_vulkan: bench/bench_vulkan.c bench/bench_util.h examples/vk_compute.h kcache.h kcache_vk.h | $(B)
	$(CC) $(STD) $(BENCH_CFLAGS) $(WARN) -I. -o $@ $< $(VK_LIBS)
$(B)/bench_remote: bench/bench_remote.c bench/bench_util.h tests/kt_remote.h examples/opencl_demo_kernel.h kcache.h kcache_redis.h | $(B)
	$(CC) $(STD) $(BENCH_CFLAGS) $(WARN) -I. -o $@ $< -lOpenCL $(REMOTE_LIBS)
$(B)/bench_many: bench/bench_many.c bench/bench_util.h tests/kt_remote.h tests/kt_delay.h kcache.h kcache_redis.h | $(B)
	$(CC) $(STD) $(BENCH_CFLAGS) $(WARN) -I. -o $@ $< $(REMOTE_LIBS)
$(B)/bench_%: bench/bench_%.c bench/bench_util.h kcache.h | $(B)
	$(CC) $(STD) $(BENCH_CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS)

# kcache-inspect's CPU names per LLVM (tools/inspect_llvm.c; kcache.h keeps the newest LLVM's),
# from the tool's files but its main, plain and under ASan+UBSan
INSPECT_TESTS := $(B)/test_inspect_llvm $(B)/asan/test_inspect_llvm
$(B)/test_inspect_llvm: tests/test_inspect_llvm.c tests/kt.h $(TOOL_INSPECT_DEPS) | $(B)
	$(CC) $(STD) $(CFLAGS) $(WARN) -I. -o $@ $< $(TOOL_INSPECT_LIB) $(LDLIBS)
$(B)/asan/test_inspect_llvm: tests/test_inspect_llvm.c tests/kt.h $(TOOL_INSPECT_DEPS) | $(B)/asan
	$(CC) $(STD) $(SAN) $(WARN) -I. -o $@ $< $(TOOL_INSPECT_LIB) $(LDLIBS)
# kcache-inspect's files but its main, as the tool builds them (it reads bench/data/numba-200)
$(B)/bench_inspect: bench/bench_inspect.c bench/bench_util.h $(TOOL_INSPECT_DEPS) | $(B)
	$(CC) $(STD) $(BENCH_CFLAGS) $(WARN) -I. -o $@ $< $(TOOL_INSPECT_LIB) $(LDLIBS)
# every build of a tool, or of a program that includes one, prints through tools/ktext.h
$(TOOLS) $(B)/asan/kcache-inspect $(B)/fuzz_pickle $(B)/fuzz_store $(B)/fuzz_stats $(B)/bench_inspect: tools/ktext.h

BENCHES := bench_hash bench_cache bench_evict bench_flight bench_index bench_opencl bench_pub bench_remote bench_inspect bench_stamp bench_vulkan
BENCHES += bench_many
# what scripts/gpu-check.sh runs but a bare GPU machine cannot build (no OpenCL loader or headers, no
# Vulkan headers): built here into dev/bin with the ICD loader beside them, carried there
GPU_BIN_PROGS := opencl_demo opencl_saxpy opencl_many bench_opencl bench_vulkan test_vulkan kcache-inspect
gpu-bin:
	@mkdir -p dev/bin
	$(MAKE) --no-print-directory B=dev/bin $(addprefix dev/bin/,$(GPU_BIN_PROGS))
	cp -L $$(ldconfig -p | awk '/libOpenCL\.so\.1 .*x86-64/ {print $$NF; exit}') dev/bin/libOpenCL.so.1

# `make test` builds every bench (runs none), so that `make bench` cannot stop building unnoticed
TEST_BENCHES := $(addprefix $(B)/,$(BENCHES)) $(B)/icount_probe
# bench/bench_icount.sh builds its probe itself, against two headers; make test builds it once here
$(B)/icount_probe: bench/icount_probe.c kcache.h | $(B)
	$(CC) $(STD) $(BENCH_CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS)

# the instruction counts of a hit and a put against this revision's header (bench/bench_icount.sh)
ICOUNT_REV ?= HEAD~1
bench: check-deps $(addprefix $(B)/,$(BENCHES)) $(B)/kcache-top $(PRELOAD) $(B)/test_scale
	@for b in $(BENCHES); do echo "== $$b"; $(B)/$$b || exit 1; done
	@if [ -d /dev/shm ] && [ -w /dev/shm ]; then echo "== bench_opencl, PoCL's cache on a tmpfs (no fdatasync cost)"; \
	  $(B)/bench_opencl --pocl-empty-only --quick --dir /dev/shm || exit 1; fi
	@echo "== fleet (test_scale --bench)"; $(B)/test_scale --bench
	@echo "== bench_build"; CC=$(CC) bash bench/bench_build.sh
	@echo "== bench_preload"; bash bench/bench_preload.sh $(PRELOAD)
	@echo "== bench_icount"; CC=$(CC) bash bench/bench_icount.sh $(ICOUNT_REV)
	@echo "== numba_herd"; bash bench/numba_herd.sh

# ---- the demo: an OpenCL program (PoCL) run twice on the default cache directory: the first run
# of all compiles and stores it, every later run loads it (opencl_demo --fresh clears it first).
# It installs only what it needs (scripts/deps.sh demo), not the test tools ----
demo-deps:
	@bash scripts/deps.sh demo
demo: demo-deps
	@$(MAKE) --no-print-directory $(B)/opencl_demo
	@$(B)/opencl_demo
	@$(B)/opencl_demo
# the same with a C kernel compiled by cc and loaded with dlopen
demo-cc: $(B)/demo_cc
	@$(B)/demo_cc
	@$(B)/demo_cc

# ---- install ----
# the core and its companions (kcache_redis.h, kcache_vk.h), each with a .pc naming its library
HEADERS := kcache.h kcache_redis.h kcache_vk.h
PCS     := kcache kcache-redis kcache-vk
KC_VERSION := $(shell sed -n 's/^.define KCACHE_VERSION "\(.*\)"/\1/p' kcache.h)
install: tools $(INSTALL_PRELOAD)
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 $(HEADERS) $(DESTDIR)$(PREFIX)/include/
	for p in $(PCS); do sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(KC_VERSION)|' $$p.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/$$p.pc; done
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	$(if $(INSTALL_PRELOAD),install -m 755 $(INSTALL_PRELOAD) $(DESTDIR)$(PREFIX)/lib/)
	install -m 644 kcache-inspect.1 kcache-top.1 $(DESTDIR)$(PREFIX)/share/man/man1/
uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/include/,$(HEADERS)) $(PCS:%=$(DESTDIR)$(PREFIX)/lib/pkgconfig/%.pc)
	rm -f $(DESTDIR)$(PREFIX)/bin/kcache-inspect $(DESTDIR)$(PREFIX)/share/man/man1/kcache-inspect.1
	rm -f $(DESTDIR)$(PREFIX)/bin/kcache-top $(DESTDIR)$(PREFIX)/share/man/man1/kcache-top.1
	rm -f $(DESTDIR)$(PREFIX)/lib/libkcache_cl.so

clean:
	rm -rf $(B)

# issue 36's figures for the numba package (on the venvs tests/test_numba.sh made; skipped without):
# herds of 8 and 16 processes on a cold store of bench/numba10's 10 functions, kcache_numba against
# numba's own cache, and a warm start, as ratios; also run by make bench
.PHONY: bench-numba
bench-numba:
	bash bench/numba_herd.sh
