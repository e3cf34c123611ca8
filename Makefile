# SPDX-License-Identifier: BSD-2-Clause
# ferry: build, run, test and lint. GNU make on Debian 12 (Linux only).
#
#   make            release build -> ./ferry
#   make run        build, then run ferry with built-in defaults (127.0.0.1:1080)
#   make test       unit tests + end-to-end tests (ASan+UBSan), fuzz smoke run
#   make lint       clang-format check, cppcheck, banned-function grep, check-layers,
#                   check-functions
#   make check-layers   every #include in src/ points down the room order of
#                   docs/architecture.md
#   make check-functions   no function in src/ over 100 lines (named exceptions)
#   make bench      the standard `ferry bench` suite on ferry alone
#   make bench-compare   ferry against peer proxies from Debian (build/bench/benchmarks.md)
#   make micro-bench   ns per parse of the edge sniffers (proto/mcsniff, proto/tlshello),
#                      per signed-host sign/verify and per-source check at accept
#   make deb        a Debian package dist/ferry_VERSION_amd64.deb (debhelper), built
#                   from a copy of the tree in a temporary directory, checked
#                   with lintian (errors fail)
#   make install    install ferry, its man pages, the sample config and the
#                   systemd units under $(DESTDIR)$(PREFIX) (default /usr/local);
#                   the configuration goes to /etc/ferry/ferry.conf whatever
#                   PREFIX is (SYSCONFDIR=/etc)
#
# Missing Debian packages are installed with apt-get when run as root;
# otherwise make stops and prints the command to run.

CC        ?= cc
CLANG     ?= clang
PYTHON    ?= /usr/bin/python3
WERROR    ?= 1
BUILD     ?= build
FUZZ_SECONDS ?= 5
# How many builds, unit-test binaries and fuzz harnesses `make test` runs at once.
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

BUILD_PKGS := gcc make pkg-config libsodium-dev libc-ares-dev libinih-dev libssl-dev libnghttp2-dev \
              libpam0g-dev
TEST_PKGS  := libcmocka-dev python3-pytest python3-socks openssh-server python3-h11 python3-h2 curl haproxy iproute2 \
              dante-server tinyproxy squid-openssl \
              universal-ctags stunnel4 openssl nghttp2-proxy chromium python3-yaml nginx-light
LINT_PKGS  := clang-format cppcheck groff-base universal-ctags
DEB_PKGS   := debhelper dpkg-dev fakeroot lintian
# The edge peers of `bench/compare.sh --only edge` (`make deps-bench`): Debian's
# nginx-light builds the stream module (ssl_preread) as a dynamic module,
# packaged apart as libnginx-mod-stream.
BENCH_PKGS := haproxy nginx-light libnginx-mod-stream

PKGS_LIBS  := libsodium libcares inih libssl libcrypto libnghttp2 pam

WARN := -Wall -Wextra -Wpedantic -Wshadow -Wformat=2 -Wstrict-prototypes \
        -Wmissing-prototypes -Wcast-qual -Wwrite-strings -Wvla -Wundef \
        -Wimplicit-fallthrough
WARN_GCC := -Wduplicated-cond -Wlogical-op
ifeq ($(WERROR),1)
WARN += -Werror
endif

is_gcc = $(shell $(1) --version 2>/dev/null | grep -q 'Free Software Foundation' && echo yes)

BASE_CFLAGS = -std=c17 -D_GNU_SOURCE -Isrc -I$(BUILD)/gen $(WARN) -pthread -MMD -MP \
              $(shell pkg-config --cflags $(PKGS_LIBS) 2>/dev/null)
LIBS        = $(shell pkg-config --libs $(PKGS_LIBS) 2>/dev/null) -pthread

REL_CFLAGS = $(BASE_CFLAGS) $(if $(call is_gcc,$(CC)),$(WARN_GCC)) -O2 -g -flto=auto \
             -fno-plt $(CFLAGS)
SAN        = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
SAN_CFLAGS = $(BASE_CFLAGS) $(if $(call is_gcc,$(CC)),$(WARN_GCC)) -O1 -g $(SAN) $(CFLAGS)
# clang-check proves clang -Werror clean: clang warns from its front end, the
# same at any -O, so it does not optimise (a third of the compile time).
CLANG_CFLAGS = $(BASE_CFLAGS) -O0

SRC      := $(sort $(shell find src -name '*.c'))
HDR      := $(sort $(shell find src -name '*.h'))
LIB_SRC  := $(filter-out src/main.c,$(SRC))
UNIT_SRC := $(sort $(shell find tests/unit -name '*_test.c' 2>/dev/null))
UNIT_HDR := $(sort $(shell find tests/unit -name '*.h' 2>/dev/null))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/*_fuzz.c))
# Pure code a fuzz harness may link: parsers and their utilities.
FUZZ_LIB := $(sort $(wildcard src/proto/*.c)) src/util/addr.c src/util/parse.c src/acct/statefile.c \
            src/bench/wangso.c

# The status page's files, built into the binary (src/admin/assets.c).
ADMIN_ASSETS := $(sort $(wildcard src/admin/assets/*))
ADMIN_GEN    := $(BUILD)/gen/admin_assets.h

REL_OBJ   := $(SRC:%.c=$(BUILD)/release/%.o)
SAN_OBJ   := $(SRC:%.c=$(BUILD)/san/%.o)
SAN_LIB   := $(BUILD)/san/libferry.a
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/san/unit/%)
CLANG_OBJ := $(SRC:%.c=$(BUILD)/clang/%.o)
REPLAY_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/san/replay/%)
FUZZ_BIN  := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
FUZZ_OBJ  := $(FUZZ_LIB:%.c=$(BUILD)/fuzz/obj/%.o)

.PHONY: all run test unit e2e fuzz-smoke fuzz replay clang-check lint format clean \
        deps-build deps-test deps-lint deps-deb deps-bench deb bench bench-compare micro-bench install uninstall FORCE
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
deps-deb: deps-build
	$(call need_pkgs,$(DEB_PKGS))
deps-bench:
	$(call need_pkgs,$(BENCH_PKGS))

# ---- generated ---------------------------------------------------------------
$(ADMIN_GEN): $(ADMIN_ASSETS) tools/embed.sh
	@mkdir -p $(@D)
	sh tools/embed.sh $@ $(ADMIN_ASSETS)
$(BUILD)/release/src/admin/assets.o $(BUILD)/san/src/admin/assets.o \
  $(BUILD)/clang/src/admin/assets.o: $(ADMIN_GEN)

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
# The parsers are compiled once (fuzzer-no-link: the same coverage
# instrumentation) and linked into every harness.
FUZZ_CFLAGS = $(BASE_CFLAGS) -O1 -g -fno-sanitize-recover=all
$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@

# (kept: they are the intermediate files of a pattern rule)
.SECONDARY: $(FUZZ_OBJ)
$(BUILD)/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJ)
	@mkdir -p $(@D)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< $(FUZZ_OBJ)

replay: $(REPLAY_BIN)
	@for b in $(REPLAY_BIN); do \
	  name=$$(basename $$b); dir=tests/fuzz/corpus/$${name%_fuzz}; \
	  $$b $$dir || exit 1; \
	done

# Harnesses run side by side, one per core: each still fuzzes FUZZ_SECONDS.
fuzz-smoke:
	@if command -v $(CLANG) >/dev/null 2>&1 && \
	   echo 'int LLVMFuzzerTestOneInput(const char*d,unsigned long n){(void)d;(void)n;return 0;}' | \
	   $(CLANG) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then \
	  $(MAKE) --no-print-directory $(FUZZ_BIN) || exit 1; \
	  printf '%s\n' $(FUZZ_BIN) | xargs -P $(TEST_JOBS) -I{} sh -c ' \
	    b={}; name=$$(basename $$b); seed=tests/fuzz/corpus/$${name%_fuzz}; \
	    work=$(BUILD)/fuzz/corpus-$$name; mkdir -p $$work; \
	    echo "fuzz: $$name for $(FUZZ_SECONDS)s"; \
	    $$b -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 \
	      -artifact_prefix=$(BUILD)/fuzz/$$name- $$work $$seed \
	      >$(BUILD)/fuzz/$$name.log 2>&1 || { tail -n 40 $(BUILD)/fuzz/$$name.log; exit 1; }' || exit 1; \
	else echo "fuzz-smoke: clang with libFuzzer not available, skipped"; fi

fuzz: FUZZ_SECONDS = 300
fuzz: fuzz-smoke

# ---- tests -------------------------------------------------------------------
# The binaries run side by side, one per core (each its own process).
unit: $(UNIT_BIN) | deps-test
	@printf '%s\n' $(UNIT_BIN) | xargs -P $(TEST_JOBS) -I{} sh -c ' \
	  t={}; $$t >$$t.log 2>&1 && echo "unit: $$(basename $$t): ok" || \
	  { echo "unit: $$(basename $$t): FAILED"; cat $$t.log; exit 1; }'

# promtool (from Debian's prometheus package) checks the metrics endpoint's
# output. It is unpacked into the build tree rather than installed: the
# package would also start a Prometheus server. Best effort: without it the
# metrics tests use their own exposition-format checker only.
PROMTOOL := $(BUILD)/tools/usr/bin/promtool
$(PROMTOOL):
	@mkdir -p $(BUILD)/tools/deb
	@cd $(BUILD)/tools/deb && rm -f prometheus_*.deb && \
	  { apt-get download prometheus >/dev/null 2>&1 || \
	    echo "make: could not download Debian's prometheus package; metrics tests run without promtool"; }
	@deb=$$(ls $(BUILD)/tools/deb/prometheus_*.deb 2>/dev/null | head -n 1); \
	  if [ -n "$$deb" ]; then dpkg-deb -x $$deb $(BUILD)/tools && rm -f $$deb; fi

e2e: $(BUILD)/san/ferry ferry | deps-test
	@$(MAKE) --no-print-directory $(PROMTOOL) || true
	FERRY_BIN=$(abspath $(BUILD)/san/ferry) PROMTOOL=$(abspath $(PROMTOOL)) \
	  $(PYTHON) -m pytest -q -p no:cacheprovider tests/e2e

# CI runs a plain `make test` (no -j): what the tests run is built first,
# $(TEST_JOBS) compilers at a time, unless make was started with -j itself.
TEST_J = $(if $(findstring --jobserver,$(MAKEFLAGS)),,-j$(TEST_JOBS))

.PHONY: test-build
test-build: $(UNIT_BIN) $(REPLAY_BIN) $(BUILD)/san/ferry ferry

test: deps-test
	$(MAKE) --no-print-directory $(TEST_J) test-build
	$(MAKE) --no-print-directory unit
	$(MAKE) --no-print-directory replay
	$(MAKE) --no-print-directory e2e
	$(MAKE) --no-print-directory $(TEST_J) clang-check
	$(MAKE) --no-print-directory $(TEST_J) fuzz-smoke

# ---- benchmarks (never part of `make test`: speed is measured, not asserted) --
BENCH_ARGS ?=

# 9000 held connections: each costs the bench two descriptors and the proxy two,
# and a 20000 open-files limit (common, and this project's CI) holds no more.
bench: ferry
	./ferry bench throughput --connections 1 $(BENCH_ARGS)
	./ferry bench throughput --connections 8 $(BENCH_ARGS)
	./ferry bench handshakes $(BENCH_ARGS)
	./ferry bench requests $(BENCH_ARGS)
	./ferry bench connections --connections 9000 $(BENCH_ARGS)

bench-compare: ferry
	bench/compare.sh $(BENCH_ARGS)

# Parse cost of the edge sniffers in ns/parse (EDGE.md's reference: 160/180 ns
# for a vanilla/Forge handshake); prints, never asserts.
MICRO_SRC := src/proto/mcsniff.c src/proto/tlshello.c src/proto/hostname.c
$(BUILD)/micro/sniff_micro: bench/micro/sniff_micro.c $(MICRO_SRC) | deps-build
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< $(MICRO_SRC)

# An LD_PRELOAD allocation counter (bench/alloc_per_datagram.py uses it).
$(BUILD)/micro/alloccount.so: bench/micro/alloccount.c | deps-build
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -O2 -fPIC -shared -Wno-missing-prototypes -o $@ $<

# Signed host names (sign, verify: EDGE.md's 820/840 ns) and the per-source
# check at accept (220 ns).
MICRO_EDGE_SRC := src/edge/signkey.c src/proto/signhost.c src/crypto/fcrypto.c src/acl/limits.c \
                  src/util/file.c src/util/addr.c
$(BUILD)/micro/edge_micro: bench/micro/edge_micro.c $(MICRO_EDGE_SRC) | deps-build
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) -O2 $(CFLAGS) -o $@ $< $(MICRO_EDGE_SRC) $(LIBS)

micro-bench: $(BUILD)/micro/sniff_micro $(BUILD)/micro/edge_micro
	$(BUILD)/micro/sniff_micro
	$(BUILD)/micro/edge_micro

# ---- lint --------------------------------------------------------------------
BANNED := strcpy|strcat|sprintf|vsprintf|gets|strtok|atoi|atol|atoll|alloca|rand|signal|select

lint: deps-lint
	@echo "lint: clang-format"; clang-format --dry-run --Werror $(SRC) $(HDR) $(UNIT_SRC) \
	  $(UNIT_HDR) $(FUZZ_SRC) tests/fuzz/replay.c
	@echo "lint: cppcheck"; $(MAKE) --no-print-directory $(ADMIN_GEN); cppcheck --quiet --error-exitcode=1 --std=c11 --enable=warning,portability \
	  --inline-suppr --suppress=missingIncludeSystem -Isrc -I$(BUILD)/gen -D__GNUC__ $(SRC)
	@echo "lint: banned functions"; \
	if grep -nE '\b($(BANNED))[[:space:]]*\(' $(SRC) $(HDR) $(UNIT_SRC) $(UNIT_HDR) $(FUZZ_SRC); then \
	  echo "lint: banned function used (see STYLE: use snprintf, strtoul via util/parse, sigaction...)"; exit 1; fi
	@echo "lint: man pages"; for m in docs/man/*.[0-9]; do \
	  out=$$(LC_ALL=C.UTF-8 groff -mandoc -ww -z -K utf8 $$m 2>&1); \
	  if [ -n "$$out" ]; then echo "$$m: $$out"; exit 1; fi; done
	@echo "lint: layers"; $(PYTHON) tools/check-layers.py
	@echo "lint: function length"; $(PYTHON) tools/check-functions.py
	@echo "lint: ok"

# The room order lives in docs/architecture.md (its ```layers block); the
# script reads it from there.
.PHONY: check-layers check-functions
check-functions:
	$(PYTHON) tools/check-functions.py
check-layers:
	$(PYTHON) tools/check-layers.py

# ---- install -----------------------------------------------------------------
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/ferry
# /etc even for PREFIX=/usr/local, as packages that ship systemd units do:
# the units read $(SYSCONFDIR)/ferry/ferry.conf and every document names
# /etc/ferry/ferry.conf (tests/e2e/test_install.py holds them together).
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system

# Rendered on every use: the paths in it depend on PREFIX/BINDIR/SYSCONFDIR
# of this invocation, which make cannot see in a timestamp.
$(BUILD)/ferry.service: contrib/systemd/ferry.service.in FORCE
	@mkdir -p $(@D)
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' $< >$@

FORCE:

install: ferry $(BUILD)/ferry.service
	install -D -m 0755 ferry $(DESTDIR)$(BINDIR)/ferry
	install -D -m 0644 docs/man/ferry.1 $(DESTDIR)$(MANDIR)/man1/ferry.1
	install -D -m 0644 docs/man/ferry.conf.5 $(DESTDIR)$(MANDIR)/man5/ferry.conf.5
	install -D -m 0644 ferry.conf.example $(DESTDIR)$(DOCDIR)/ferry.conf.example
	install -D -m 0644 $(BUILD)/ferry.service $(DESTDIR)$(UNITDIR)/ferry.service
	sed -e '/^ExecStart=/s/$$/ --upgrade/' $(BUILD)/ferry.service | \
	  install -D -m 0644 /dev/stdin $(DESTDIR)$(UNITDIR)/ferry@.service
	@if [ ! -e $(DESTDIR)$(SYSCONFDIR)/ferry/ferry.conf ]; then \
	  install -D -m 0644 ferry.conf.example $(DESTDIR)$(SYSCONFDIR)/ferry/ferry.conf; \
	  echo "installed $(DESTDIR)$(SYSCONFDIR)/ferry/ferry.conf"; \
	else echo "kept the existing $(DESTDIR)$(SYSCONFDIR)/ferry/ferry.conf"; fi
	@echo "next: edit $(SYSCONFDIR)/ferry/ferry.conf, then: systemctl daemon-reload;" \
	  "systemctl enable --now ferry@blue (run it as ferry@blue from the start:" \
	  "an upgrade without downtime starts ferry@green next to it; see docs/operations.md)"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/ferry $(DESTDIR)$(MANDIR)/man1/ferry.1 \
	  $(DESTDIR)$(MANDIR)/man5/ferry.conf.5 $(DESTDIR)$(DOCDIR)/ferry.conf.example \
	  $(DESTDIR)$(UNITDIR)/ferry.service $(DESTDIR)$(UNITDIR)/ferry@.service
	@echo "left $(DESTDIR)$(SYSCONFDIR)/ferry in place (your configuration)"

# ---- Debian package ----------------------------------------------------------
# The version is FERRY_VERSION in src/version.h, the one source of it; the
# package is native (debian/ lives here), so the file is
# $(DEB_OUT)/ferry_VERSION_ARCH.deb. dpkg-buildpackage runs on a copy of the
# tree (the files git tracks or would track; without git, all but build
# output) in a temporary directory: build/ and ./ferry are never touched.
# debian/changelog is written there from the version and the last commit's
# date. lintian then checks the package: an error fails `make deb`.
VERSION  := $(shell sed -n 's/^\#define FERRY_VERSION "\(.*\)"$$/\1/p' src/version.h)
DEB_OUT  ?= dist
DEB_ARCH  = $(shell dpkg --print-architecture)
DEB_FILE  = $(DEB_OUT)/ferry_$(VERSION)_$(DEB_ARCH).deb

deb: deps-deb
	@set -e; out=$$(realpath -m $(DEB_OUT)); \
	work=$$(mktemp -d "$${TMPDIR:-/tmp}/ferry-deb.XXXXXX"); trap 'rm -rf "$$work"' EXIT; \
	src=$$work/ferry-$(VERSION); mkdir -p $$src; \
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then \
	  git ls-files -z --cached --others --exclude-standard | \
	    xargs -0 -r sh -c 'for f; do [ -f "$$f" ] && printf "%s\0" "$$f"; done' sh | \
	    tar --null -T - -cf - | tar -xf - -C $$src; \
	  when=$$(git log -1 --format=%ct 2>/dev/null || date +%s); \
	else \
	  tar --exclude=./$(BUILD) --exclude=./ferry --exclude=./$(DEB_OUT) -cf - . | tar -xf - -C $$src; \
	  when=$$(date +%s); \
	fi; \
	{ echo "ferry ($(VERSION)) unstable; urgency=medium"; echo; \
	  echo "  * ferry $(VERSION); its changes are in /usr/share/doc/ferry/changelog.gz."; echo; \
	  echo " -- $$(sed -n 's/^Maintainer: //p' debian/control)  $$(LC_ALL=C date -R -u -d @$$when)"; \
	} >$$src/debian/changelog; \
	echo "deb: dpkg-buildpackage -b in $$src (its log is shown if it fails)"; \
	( cd $$src && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL DEB_BUILD_OPTIONS="parallel=2 $${DEB_BUILD_OPTIONS:-}" \
	  dpkg-buildpackage -b -us -uc >$$work/build.log 2>&1 ) || { tail -n 80 $$work/build.log; exit 1; }; \
	mkdir -p $$out; cp $$work/ferry_$(VERSION)_*.deb $$out/; \
	echo "deb: $(DEB_FILE)"; \
	echo "deb: lintian"; lintian --fail-on error --display-info $$out/ferry_$(VERSION)_$(DEB_ARCH).deb

format:
	clang-format -i $(SRC) $(HDR) $(UNIT_SRC) $(UNIT_HDR) $(FUZZ_SRC) tests/fuzz/replay.c

clean:
	rm -rf $(BUILD) ferry

-include $(shell find $(BUILD) -path $(BUILD)/tools -prune -o -type f -name '*.d' -print 2>/dev/null)
