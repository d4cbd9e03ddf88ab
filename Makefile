# SPDX-License-Identifier: MIT
# mt: an Intel PT control-flow tracer.  `make` builds release binaries into
# build/bin, `make test` builds everything with ASan+UBSan into build/asan
# and runs every test.  The Debian packages are checked (and installed, as
# root) by `make deps`, `make demo` and `make test`, not by a plain `make`.

CC      ?= cc
MODE    ?= release
WARN    := -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers \
           -Wno-format-truncation
CSTD    := -std=c11 -D_GNU_SOURCE
include libs.mk

ifeq ($(MODE),asan)
BUILD   ?= build/asan
OPT     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
           -fno-sanitize-recover=all
LDOPT   := -fsanitize=address,undefined
else
BUILD   ?= build
OPT     := -O2 -g
LDOPT   :=
endif

CFLAGS  := $(CSTD) $(WARN) $(OPT) -I. $(EXTRA_CFLAGS)

# Library modules, in data-flow order.
LIB_DIRS := util perfdata model ptenc capture image decode symbols report segments stitch regions stats writers convert
LIB_SRCS := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
SYNTH_SRCS := $(filter-out synth/mt-synth.c,$(wildcard synth/*.c))
CMD_SRCS := $(wildcard cmd/*.c)
TEST_SRCS := $(wildcard tests/unit/test_*.c)
# What several unit tests share (every file of tests/unit/ but the tests).
UNIT_SRCS := $(filter-out $(TEST_SRCS),$(wildcard tests/unit/*.c))

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
SYNTH_OBJS := $(SYNTH_SRCS:%.c=$(BUILD)/obj/%.o)
UNIT_OBJS := $(UNIT_SRCS:%.c=$(BUILD)/obj/%.o)
BINS := $(BUILD)/bin/mt-capture $(BUILD)/bin/mt-convert $(BUILD)/bin/mt-synth \
        $(BUILD)/bin/mt-report
TESTS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TOOLS := $(BUILD)/bin/mt-synth-check $(BUILD)/bin/mt-tree-check \
         $(BUILD)/bin/mt-accuracy $(BUILD)/bin/mt-ptt-wrap \
         $(BUILD)/bin/mt-ptt-check

# The Valgrind tool of --emulate=valgrind (vgtool/, GPL-2.0-or-later): a
# program of its own that mt-capture runs, linked with Valgrind's libraries
# as Valgrind links its tools (static, text at 0x58000000), beside links
# to Valgrind's own files (VALGRIND_LIB).  Built where Debian's valgrind
# package put the headers; elsewhere --emulate=valgrind says it is missing.
VG_INC  := /usr/include/valgrind
VG_LIBS := /usr/lib/x86_64-linux-gnu/valgrind
VG_EXEC := /usr/libexec/valgrind
ifneq ($(wildcard $(VG_INC)/pub_tool_basics.h),)
VGTOOL  := $(BUILD)/lib/valgrind/mtpt-amd64-linux
endif
VGTOOL_CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter \
           -DVGA_amd64=1 -DVGO_linux=1 -DVGP_amd64_linux=1 \
           -DVGPV_amd64_linux_vanilla=1 -I$(VG_INC) -fno-stack-protector \
           -fno-builtin -fno-strict-aliasing -fno-pie

# Keep intermediate objects (the mains are built through a pattern rule).
.SECONDARY:

.PHONY: all deps test unit check-format format clean demo bench bench-scale bench-capture bench-report accuracy timing golden-update fuzz \
        mutate progs real-progs

all: $(BINS) $(VGTOOL)

deps:
	@sh tools/deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

# Every file of vgtool/ is the tool's, built with its flags (the pattern
# is more specific than the library's, so it wins).
VGTOOL_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard vgtool/*.c))

$(BUILD)/obj/vgtool/%.o: vgtool/%.c
	@mkdir -p $(dir $@)
	$(CC) $(VGTOOL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/lib/valgrind/mtpt-amd64-linux: $(VGTOOL_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ -static -nodefaultlibs -nostartfiles -u _start \
		-Wl,--build-id=none -Wl,-Ttext-segment=0x58000000 \
		$(VG_LIBS)/libcoregrind-amd64-linux.a \
		$(VG_LIBS)/libvex-amd64-linux.a \
		$(VG_LIBS)/libgcc-sup-amd64-linux.a -lgcc
	@for f in $(VG_EXEC)/*; do \
		[ -e "$(dir $@)$${f##*/}" ] || ln -s "$$f" "$(dir $@)"; done

$(BUILD)/libmt.a: $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libsynth.a: $(SYNTH_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libunit.a: $(UNIT_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/mt-%: $(BUILD)/obj/cmd/mt-%.o $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $< $(BUILD)/libmt.a $(LIBS) -o $@

$(BUILD)/bin/mt-synth: $(BUILD)/obj/synth/mt-synth.o $(BUILD)/libsynth.a $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ $(LIBS) -o $@

$(BUILD)/bin/mt-synth-check: $(BUILD)/obj/tools/mt-synth-check.o $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ -o $@

$(BUILD)/bin/mt-bench: $(BUILD)/obj/tools/mt-bench.o $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ $(LIBS) -o $@

$(BUILD)/bin/mt-accuracy: $(BUILD)/obj/tools/mt-accuracy.o $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ -o $@

$(BUILD)/bin/mt-tree-check: $(BUILD)/obj/tools/mt-tree-check.o $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ -o $@

# The conformance tools share the reading of a libipt case's files.
$(BUILD)/bin/mt-ptt-wrap: $(BUILD)/obj/tests/conformance/mt-ptt-wrap.o \
		$(BUILD)/obj/tests/conformance/ptt_files.o $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ $(LIBS) -o $@

$(BUILD)/bin/mt-ptt-check: $(BUILD)/obj/tests/conformance/mt-ptt-check.o \
		$(BUILD)/obj/tests/conformance/ptt_files.o
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ -o $@

$(BUILD)/tests/test_synth%: $(BUILD)/obj/tests/unit/test_synth%.o $(BUILD)/libsynth.a $(BUILD)/libunit.a $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ $(LIBS) -o $@

# test_convert runs the fuzz target's entry, without libFuzzer, beside
# mt-convert.
$(BUILD)/tests/test_convert: $(BUILD)/obj/tests/unit/test_convert.o \
		$(BUILD)/obj/tests/fuzz/fuzz_convert.o \
		$(BUILD)/obj/tests/fuzz/fuzz_env.o $(BUILD)/libunit.a $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ $(LIBS) -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(BUILD)/libunit.a $(BUILD)/libmt.a
	@mkdir -p $(dir $@)
	$(CC) $(LDOPT) $^ $(LIBS) -o $@

# The test suite: sanitizer build, then every unit and end-to-end test.
test:
	@sh tools/deps.sh --test
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory MODE=asan asan-build
	@sh tests/run build/asan

asan-build: $(BINS) $(TESTS) $(TOOLS) $(VGTOOL)

# The programs the end-to-end tests run (what tools/mutate.sh rebuilds
# for them).
progs: $(BINS) $(TOOLS)

unit: $(BINS) $(TESTS) $(TOOLS)

FORMAT_SRCS := $(LIB_SRCS) $(CMD_SRCS) $(wildcard synth/*.c tools/*.c vgtool/*.c */*.h \
               tests/*/*.[ch] tests/programs/*.cc examples/*.c)

format:
	clang-format -i $(FORMAT_SRCS)

check-format:
	@clang-format --dry-run --Werror $(FORMAT_SRCS)

# Benchmarks (not tests): mt-convert against a bare libipt loop and perf.
bench: all $(BUILD)/bin/mt-bench
	@MT_BUILD=$(BUILD) bash tools/bench.sh $(BENCH_MB)

# mt-convert with -j 1, 2, 4, ... up to the cores: one stream, 16 streams
# and a 4 MiB snapshot; time, CPU and peak RSS for each.
bench-scale: all $(BUILD)/bin/mt-bench
	@MT_BUILD=$(BUILD) bash tools/bench-scale.sh $(BENCH_MB)

# Real programs under --emulate=valgrind (and ptrace) against native.
bench-capture: all $(BUILD)/bin/mt-bench
	@MT_BUILD=$(BUILD) bash tools/bench-capture.sh

# mt-report on the bench capture's database (about 24M slices).
bench-report: all $(BUILD)/bin/mt-bench
	@MT_BUILD=$(BUILD) bash tools/bench-report.sh $(BENCH_MB)

# Accuracy against truth with injected gaps, stitching on and off.
accuracy: all $(BUILD)/bin/mt-accuracy
	@MT_BUILD=$(BUILD) bash tools/accuracy.sh

# Time error per timing mode, ours beside perf's on the same captures.
timing: all $(BUILD)/bin/mt-tree-check $(BUILD)/bin/mt-synth-check
	@MT_BUILD=$(BUILD) bash tools/timing.sh

# Real programs (Debian's, a Go program) under the Valgrind backend: the
# calls perf decodes equal the tool's log, and mt-convert's equal perf's,
# by address; a table of each with its instructions and calls.
real-progs: all
	@sh tools/deps.sh --test
	@MT_BUILD=$(BUILD) bash tools/realprogs.sh $(PROGS)

# The whole pipeline on a bundled program: capture it under Valgrind
# (--emulate: no Intel PT needed), convert it, say where the results are
# and what they show.
DEMO_SQL = sqlite3 -column -header $(BUILD)/demo/trace.sqlite
# The functions under the slow request's serve(), on the hit's thread.
DEMO_SLOW = SELECT c.name, count(*) AS calls, sum(c.dur) AS total_ns FROM slice c, \
	(SELECT s.track_id AS tr, s.ts AS ts, s.dur AS dur FROM slice s \
	JOIN thread_track t ON s.track_id = t.id JOIN hit h ON t.utid = h.utid \
	WHERE s.name = 'serve' AND s.ts < h.ts ORDER BY s.ts DESC LIMIT 1) r \
	WHERE c.track_id = r.tr AND c.ts >= r.ts AND c.ts < r.ts + r.dur \
	GROUP BY c.name ORDER BY 3 DESC LIMIT 6
# The demo builds what it runs, on every core: a fresh machine's first
# command should not wait on a serial build.
demo:
	@sh tools/deps.sh
	@$(MAKE) --no-print-directory -j$$(nproc) $(BUILD)/bin/mt-capture \
		$(BUILD)/bin/mt-convert $(VGTOOL)
	@mkdir -p $(BUILD)/demo
	@$(CC) -O1 -g -I. -pthread -o $(BUILD)/demo/kvserver examples/kvserver.c
	@$(BUILD)/bin/mt-capture --emulate -o $(BUILD)/demo/raw.bin -- $(BUILD)/demo/kvserver
	@$(BUILD)/bin/mt-convert $(BUILD)/demo/raw.bin -o $(BUILD)/demo/trace.pftrace
	@echo
	@echo "examples/kvserver.c: four worker threads serve 400 requests (a hash"
	@echo "table, qsort, an LZ77 compressor); request 300 is slow, and asks for"
	@echo "the snapshot when it is done."
	@echo "Open $(BUILD)/demo/trace.pftrace in https://ui.perfetto.dev, or ask SQL:"
	@echo "  sqlite3 $(BUILD)/demo/trace.sqlite 'SELECT name, count(*), sum(dur) FROM slice GROUP BY name ORDER BY 3 DESC LIMIT 8'"
	@echo
	@echo "The snapshot the program asked for:"
	@$(DEMO_SQL) 'SELECT name AS trigger, arg AS request, tid FROM hit' 2>/dev/null || true
	@echo
	@echo "Where the slow request's time went (its serve() and what it called):"
	@$(DEMO_SQL) "$(DEMO_SLOW)" 2>/dev/null || true

# Rewrite the expected slice trees of the golden captures from the current
# mt-convert (review the diff like code); RECAPTURE=1 makes the captures
# anew with mt-synth first.
golden-update: all
	@MT_BUILD=$(BUILD) bash tests/golden/update.sh $(if $(RECAPTURE),--recapture)

# Coverage-guided fuzzing with clang's libFuzzer (tests/fuzz/): builds
# the targets into build/fuzz, then runs each of the two (convert, info)
# for FUZZ_SECONDS seconds (default 60; so the run takes twice that).
# New inputs go to build/fuzz/corpus, crashes to build/fuzz/artifacts;
# any crash, sanitizer report, leak or hang fails it.  Ends with each
# target's edge coverage.
fuzz:
	@$(MAKE) --no-print-directory -f tests/fuzz/fuzz.mk
	@bash tests/fuzz/run.sh $(or $(FUZZ_SECONDS),60)

# The mutation run (slow, not part of make test): each bug of
# tests/mutants.txt planted in turn in a scratch copy of the tree, built
# with ASan, and the tests it names run; ends with the score line
# "mutation score: K of N caught (P%)" and fails below 90%.  MUTANTS=
# "ID ..." runs only those; tools/mutate.sh says more.
mutate:
	@bash tools/mutate.sh $(MUTANTS)

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# ---------------------------------------------------------------------
# Version, install, manual pages, the Debian package, the static
# mt-capture.

.PHONY: FORCE install uninstall man deb static
FORCE:

# The commit the binaries are built from (util/version.c): the header is
# rewritten only when it changes, so that a build stays incremental.
$(BUILD)/gen/mt_build.h: FORCE
	@mkdir -p $(dir $@)
	@sh tools/version.sh >$@.tmp && \
		if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/obj/util/version.o: $(BUILD)/gen/mt_build.h
$(BUILD)/obj/util/version.o: CFLAGS += -I$(BUILD)/gen

# The manual pages, made from the README's sections of the commands
# (tools/man.sh): the options are written once.
MT_CMDS := mt-capture mt-convert mt-report
MANS    := $(MT_CMDS:%=$(BUILD)/man/%.1)

man: $(MANS)

$(BUILD)/man/%.1: README.md tools/man.sh util/version.h
	@mkdir -p $(dir $@)
	@sh tools/man.sh $* >$@.tmp && mv $@.tmp $@

# make install [PREFIX=/usr/local] [DESTDIR=]: the commands, the stub
# header, the pages, the docs, and the Valgrind tool in lib/mt/valgrind,
# which mt-capture finds beside its own bin/ (the tree can be moved),
# with links to Valgrind's files as in the build tree.  make uninstall
# takes away what install put there, and its own folders.
PREFIX  ?= /usr/local
MT_BIN  := $(DESTDIR)$(PREFIX)/bin
MT_INC  := $(DESTDIR)$(PREFIX)/include
MT_MAN  := $(DESTDIR)$(PREFIX)/share/man/man1
MT_DOC  := $(DESTDIR)$(PREFIX)/share/doc/mt
MT_LIB  := $(DESTDIR)$(PREFIX)/lib/mt
MT_DOCS := $(wildcard docs/*.md)

# Of Valgrind's files, what a tool of its own needs beside it.
VG_RUNTIME := vgpreload_core-amd64-linux.so default.supp

install: $(MT_CMDS:%=$(BUILD)/bin/%) $(VGTOOL) $(MANS)
	install -d $(MT_BIN) $(MT_INC) $(MT_MAN) $(MT_DOC)/docs
	install -m 755 $(MT_CMDS:%=$(BUILD)/bin/%) $(MT_BIN)/
	install -m 644 include/magic_trace.h $(MT_INC)/
	install -m 644 $(MANS) $(MT_MAN)/
	install -m 644 README.md LICENSE $(MT_DOC)/
	install -m 644 $(MT_DOCS) $(MT_DOC)/docs/
ifneq ($(VGTOOL),)
	install -d $(MT_LIB)/valgrind
	install -m 755 $(VGTOOL) $(MT_LIB)/valgrind/
	install -m 644 vgtool/COPYING $(MT_LIB)/valgrind/
	for f in $(VG_RUNTIME); do ln -sfn $(VG_EXEC)/$$f $(MT_LIB)/valgrind/; done
endif

uninstall:
	rm -f $(MT_CMDS:%=$(MT_BIN)/%) $(MT_INC)/magic_trace.h \
		$(MT_CMDS:%=$(MT_MAN)/%.1)
	rm -rf $(MT_DOC) $(MT_LIB)

# make deb: the Debian package (debian/), built by dpkg-buildpackage
# from a copy of the tree in $(BUILD)/deb, where the .deb appears.
deb:
	@sh tools/deps.sh --deb
	@sh tools/deb.sh $(BUILD)/deb

# make static: a mt-capture with no shared-library dependencies, for any
# x86-64 Linux (4.x kernels on): Intel PT where the CPU has it, the
# ptrace emulator elsewhere; --version says in one line what it cannot
# do without the parts a static binary cannot carry (util/version.c).
# Debian ships no libipt.a: LIBIPT_SRC=DIR names a libipt source tree
# (https://github.com/intel/libipt, v2.0.x), built here with cmake.
STATIC  := $(BUILD)/static
LIBIPT_A ?= $(wildcard /usr/lib/x86_64-linux-gnu/libipt.a)
ifeq ($(LIBIPT_A),)
ifneq ($(LIBIPT_SRC),)
LIBIPT_A := $(STATIC)/libipt/lib/libipt.a
endif
endif
STATIC_LIBS := $(LIBIPT_A) -ldw -lelf -lbz2 -lzstd -llzma -lz -lcapstone \
               -lsqlite3 -ldeflate -liberty -lm -lpthread -ldl

static: $(STATIC)/mt-capture
	@ls -l $< | awk '{print $$5, $$9}'

$(STATIC)/libipt/lib/libipt.a:
	@sh tools/deps.sh --static
	@mkdir -p $(STATIC)/libipt
	cmake -S $(LIBIPT_SRC) -B $(STATIC)/libipt -DBUILD_SHARED_LIBS=OFF \
		-DCMAKE_BUILD_TYPE=Release >$(STATIC)/libipt/cmake.log
	$(MAKE) --no-print-directory -C $(STATIC)/libipt libipt >/dev/null

$(STATIC)/version.o: util/version.c $(BUILD)/gen/mt_build.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(BUILD)/gen -DMT_STATIC -c $< -o $@

$(STATIC)/mt-capture: $(BUILD)/obj/cmd/mt-capture.o $(STATIC)/version.o \
		$(BUILD)/libmt.a $(LIBIPT_A)
	@[ -n "$(LIBIPT_A)" ] || { echo "make static: no libipt.a (Debian" \
		"ships none): make static LIBIPT_SRC=DIR, DIR a libipt" \
		"v2.0 source tree" >&2; exit 1; }
	@sh tools/deps.sh --static
	$(CC) -static -s -o $@ $(BUILD)/obj/cmd/mt-capture.o $(STATIC)/version.o \
		$(BUILD)/libmt.a $(STATIC_LIBS) 2>$@.log || \
		{ cat $@.log >&2; exit 1; }
