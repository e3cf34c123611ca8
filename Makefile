# ferry: build, run, test and lint. GNU make on Debian 12 (Linux only).
#
#   make            release build -> ./ferry
#   make run        build, then run ferry with built-in defaults (127.0.0.1:1080)
#   make test       unit tests + end-to-end tests (ASan+UBSan), fuzz smoke run
#   make lint       clang-format check, cppcheck, banned-function grep
#   make bench      the standard `ferry bench` suite on ferry alone
#   make bench-compare   ferry against peer proxies from Debian (docs/benchmarks.md)
#
# Missing Debian packages are installed with apt-get when run as root;
# otherwise make stops and prints the command to run.

CC        ?= cc
CLANG     ?= clang
PYTHON    ?= /usr/bin/python3
WERROR    ?= 1
BUILD     ?= build
FUZZ_SECONDS ?= 5

BUILD_PKGS := gcc make pkg-config libsodium-dev libc-ares-dev libinih-dev
TEST_PKGS  := libcmocka-dev python3-pytest python3-socks curl
LINT_PKGS  := clang-format cppcheck

PKGS_LIBS  := libsodium libcares inih

WARN := -Wall -Wextra -Wpedantic -Wshadow -Wformat=2 -Wstrict-prototypes \
        -Wmissing-prototypes -Wcast-qual -Wwrite-strings -Wvla -Wundef \
        -Wimplicit-fallthrough
WARN_GCC := -Wduplicated-cond -Wlogical-op
ifeq ($(WERROR),1)
WARN += -Werror
endif

is_gcc = $(shell $(1) --version 2>/dev/null | grep -q 'Free Software Foundation' && echo yes)

BASE_CFLAGS = -std=c17 -D_GNU_SOURCE -Isrc $(WARN) -pthread -MMD -MP \
              $(shell pkg-config --cflags $(PKGS_LIBS) 2>/dev/null)
LIBS        = $(shell pkg-config --libs $(PKGS_LIBS) 2>/dev/null) -pthread

REL_CFLAGS = $(BASE_CFLAGS) $(if $(call is_gcc,$(CC)),$(WARN_GCC)) -O2 -g -flto=auto \
             -fno-plt $(CFLAGS)
SAN        = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS = $(BASE_CFLAGS) $(if $(call is_gcc,$(CC)),$(WARN_GCC)) -O1 -g $(SAN) $(CFLAGS)
CLANG_CFLAGS = $(BASE_CFLAGS) -O2 -g

SRC      := $(sort $(shell find src -name '*.c'))
LIB_SRC  := $(filter-out src/main.c,$(SRC))
UNIT_SRC := $(sort $(shell find tests/unit -name '*_test.c' 2>/dev/null))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/*_fuzz.c))
# Pure code a fuzz harness may link: parsers and their utilities.
FUZZ_LIB := $(sort $(wildcard src/proto/*.c)) src/util/addr.c src/util/parse.c

REL_OBJ   := $(SRC:%.c=$(BUILD)/release/%.o)
SAN_OBJ   := $(SRC:%.c=$(BUILD)/san/%.o)
SAN_LIB   := $(BUILD)/san/libferry.a
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/san/unit/%)
CLANG_OBJ := $(SRC:%.c=$(BUILD)/clang/%.o)
REPLAY_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/san/replay/%)
FUZZ_BIN  := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)

.PHONY: all run test unit e2e fuzz-smoke fuzz replay clang-check lint format clean \
        deps-build deps-test deps-lint bench bench-compare
.DEFAULT_GOAL := all

all: ferry

# ---- Debian packages ---------------------------------------------------------
define need_pkgs
	@missing=""; for p in $(1); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "make: installing Debian packages:$$missing"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y --no-install-recommends $$missing >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y --no-install-recommends $$missing; } || exit 1; \
	  else \
	    echo "make: missing Debian packages:$$missing"; \
	    echo "make: install them with: sudo apt-get install -y$$missing"; \
	    exit 1; \
	  fi; \
	fi
endef

deps-build:
	$(call need_pkgs,$(BUILD_PKGS))
deps-test: deps-build
	$(call need_pkgs,$(TEST_PKGS))
deps-lint:
	$(call need_pkgs,$(LINT_PKGS))

# ---- release -----------------------------------------------------------------
ferry: $(REL_OBJ)
	$(CC) $(REL_CFLAGS) $(LDFLAGS) -o $@ $(REL_OBJ) $(LIBS)

$(BUILD)/release/%.o: %.c | deps-build
	@mkdir -p $(@D)
	$(CC) $(REL_CFLAGS) -c $< -o $@

run: ferry
	./ferry serve

# ---- sanitizer build (tests) -------------------------------------------------
$(BUILD)/san/ferry: $(SAN_OBJ)
	$(CC) $(SAN_CFLAGS) $(LDFLAGS) -o $@ $(SAN_OBJ) $(LIBS)

$(BUILD)/san/%.o: %.c | deps-build
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -c $< -o $@

$(SAN_LIB): $(LIB_SRC:%.c=$(BUILD)/san/%.o)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/san/unit/%: tests/unit/%.c tests/unit/harness.h $(SAN_LIB) | deps-test
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -Itests/unit -o $@ $< $(SAN_LIB) $(LIBS) -lcmocka

$(BUILD)/san/replay/%: tests/fuzz/%.c tests/fuzz/replay.c $(SAN_LIB)
	@mkdir -p $(@D)
	$(CC) $(SAN_CFLAGS) -o $@ $< tests/fuzz/replay.c $(SAN_LIB) $(LIBS)

# ---- clang build: proves the tree is clang -Werror clean ---------------------
$(BUILD)/clang/%.o: %.c | deps-build
	@mkdir -p $(@D)
	$(CLANG) $(CLANG_CFLAGS) -c $< -o $@

clang-check:
	@if command -v $(CLANG) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory $(CLANG_OBJ) && \
	  $(CLANG) $(CLANG_CFLAGS) -o $(BUILD)/clang/ferry $(CLANG_OBJ) $(LIBS) && \
	  echo "clang-check: ok"; \
	else echo "clang-check: clang not installed, skipped"; fi

# ---- fuzzing (libFuzzer, clang only) -----------------------------------------
$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB)
	@mkdir -p $(@D)
	$(CLANG) $(BASE_CFLAGS) -O1 -g -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=all -o $@ $< $(FUZZ_LIB)

replay: $(REPLAY_BIN)
	@for b in $(REPLAY_BIN); do \
	  name=$$(basename $$b); dir=tests/fuzz/corpus/$${name%_fuzz}; \
	  $$b $$dir || exit 1; \
	done

fuzz-smoke:
	@if command -v $(CLANG) >/dev/null 2>&1 && \
	   echo 'int LLVMFuzzerTestOneInput(const char*d,unsigned long n){(void)d;(void)n;return 0;}' | \
	   $(CLANG) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then \
	  $(MAKE) --no-print-directory $(FUZZ_BIN) || exit 1; \
	  for b in $(FUZZ_BIN); do \
	    name=$$(basename $$b); seed=tests/fuzz/corpus/$${name%_fuzz}; \
	    work=$(BUILD)/fuzz/corpus-$$name; mkdir -p $$work; \
	    echo "fuzz: $$name for $(FUZZ_SECONDS)s"; \
	    $$b -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 $$work $$seed \
	      >$(BUILD)/fuzz/$$name.log 2>&1 || { tail -n 40 $(BUILD)/fuzz/$$name.log; exit 1; }; \
	  done; \
	else echo "fuzz-smoke: clang with libFuzzer not available, skipped"; fi

fuzz: FUZZ_SECONDS = 300
fuzz: fuzz-smoke

# ---- tests -------------------------------------------------------------------
unit: $(UNIT_BIN) | deps-test
	@fail=0; for t in $(UNIT_BIN); do \
	  $$t >$$t.log 2>&1 && echo "unit: $$(basename $$t): ok" || \
	  { echo "unit: $$(basename $$t): FAILED"; cat $$t.log; fail=1; }; \
	done; exit $$fail

e2e: $(BUILD)/san/ferry ferry | deps-test
	FERRY_BIN=$(abspath $(BUILD)/san/ferry) $(PYTHON) -m pytest -q -p no:cacheprovider tests/e2e

test: deps-test
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory replay
	$(MAKE) --no-print-directory e2e
	$(MAKE) --no-print-directory clang-check
	$(MAKE) --no-print-directory fuzz-smoke

# ---- benchmarks (never part of `make test`: speed is measured, not asserted) --
BENCH_ARGS ?=

bench: ferry
	./ferry bench throughput --connections 1 $(BENCH_ARGS)
	./ferry bench throughput --connections 8 $(BENCH_ARGS)
	./ferry bench handshakes $(BENCH_ARGS)
	./ferry bench requests $(BENCH_ARGS)
	./ferry bench connections $(BENCH_ARGS)

bench-compare: ferry
	bench/compare.sh $(BENCH_ARGS)

# ---- lint --------------------------------------------------------------------
BANNED := strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol|atoll|alloca|rand|signal|select

lint: deps-lint
	@echo "lint: clang-format"; clang-format --dry-run --Werror $(SRC) $(UNIT_SRC) $(FUZZ_SRC) tests/fuzz/replay.c
	@echo "lint: cppcheck"; cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability \
	  --inline-suppr --suppress=missingIncludeSystem -Isrc -D__GNUC__ $(SRC)
	@echo "lint: banned functions"; \
	if grep -nE '\b($(BANNED))[[:space:]]*\(' $(SRC) $(UNIT_SRC); then \
	  echo "lint: banned function used (see STYLE: use snprintf, strtoul via util/parse, sigaction...)"; exit 1; fi
	@echo "lint: ok"

format:
	clang-format -i $(SRC) $(UNIT_SRC) $(FUZZ_SRC) tests/fuzz/replay.c

clean:
	rm -rf $(BUILD) ferry

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
