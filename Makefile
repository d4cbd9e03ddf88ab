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
LIB_DIRS := util perfdata model ptenc capture decode symbols report segments stitch regions stats writers
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

.PHONY: all deps test unit check-format format clean demo bench bench-report accuracy timing golden-update fuzz \
        mutate progs

all: $(BINS) $(VGTOOL)

deps:
	@sh tools/deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/obj/vgtool/mtpt.o: vgtool/mtpt.c
	@mkdir -p $(dir $@)
	$(CC) $(VGTOOL_CFLAGS) -c $< -o $@

$(BUILD)/lib/valgrind/mtpt-amd64-linux: $(BUILD)/obj/vgtool/mtpt.o
	@mkdir -p $(dir $@)
	$(CC) -o $@ $< -static -nodefaultlibs -nostartfiles -u _start \
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

FORMAT_SRCS := $(LIB_SRCS) $(CMD_SRCS) $(wildcard synth/*.c tools/*.c */*.h \
               tests/*/*.[ch] tests/programs/*.cc examples/*.c)

format:
	clang-format -i $(FORMAT_SRCS)

check-format:
	@clang-format --dry-run --Werror $(FORMAT_SRCS)

# Benchmarks (not tests): mt-convert against a bare libipt loop and perf.
bench: all $(BUILD)/bin/mt-bench
	@MT_BUILD=$(BUILD) bash tools/bench.sh $(BENCH_MB)

# mt-report on the bench capture's database (about 24M slices).
bench-report: all $(BUILD)/bin/mt-bench
	@MT_BUILD=$(BUILD) bash tools/bench-report.sh $(BENCH_MB)

# Accuracy against truth with injected gaps, stitching on and off.
accuracy: all $(BUILD)/bin/mt-accuracy
	@MT_BUILD=$(BUILD) bash tools/accuracy.sh

# Time error per timing mode, ours beside perf's on the same captures.
timing: all $(BUILD)/bin/mt-tree-check $(BUILD)/bin/mt-synth-check
	@MT_BUILD=$(BUILD) bash tools/timing.sh

# The whole pipeline on a bundled program: capture it by emulation,
# convert it, say where the results are.
demo:
	@sh tools/deps.sh
	@$(MAKE) --no-print-directory all
	@mkdir -p $(BUILD)/demo
	@$(CC) -O1 -g -I. -o $(BUILD)/demo/demo examples/demo.c
	@$(BUILD)/bin/mt-capture --emulate -o $(BUILD)/demo/raw.bin -- $(BUILD)/demo/demo
	@$(BUILD)/bin/mt-convert $(BUILD)/demo/raw.bin -o $(BUILD)/demo/trace.pftrace
	@echo
	@echo "Open $(BUILD)/demo/trace.pftrace in https://ui.perfetto.dev, or ask SQL:"
	@echo "  sqlite3 $(BUILD)/demo/trace.sqlite 'SELECT name, count(*), sum(dur) FROM slice GROUP BY name ORDER BY 3 DESC LIMIT 8'"
	@sqlite3 -column -header $(BUILD)/demo/trace.sqlite \
		'SELECT name, count(*) AS calls, sum(dur) AS total_ns FROM slice GROUP BY name ORDER BY 3 DESC LIMIT 8' 2>/dev/null || true
	@echo
	@echo "The snapshot the program asked for (after its slow request 7):"
	@sqlite3 -column -header $(BUILD)/demo/trace.sqlite \
		'SELECT name AS trigger, arg AS request, (ts - mark_start) / 1000000.0 AS ms_since_mark FROM hit' 2>/dev/null || true

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
