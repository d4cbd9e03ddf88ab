# SPDX-License-Identifier: MIT
# The libFuzzer targets, built with clang into build/fuzz.  Run from the
# source root: make -f tests/fuzz/fuzz.mk (the top Makefile's `fuzz`
# target does, then runs them).
#
# Only the library code on mt-convert's path is instrumented for
# coverage (-fsanitize=fuzzer-no-link); the targets' own files are not.
# UBSan's checks add a block each (the call to its handler) that the
# coverage pass counts as an edge and that no input should ever reach;
# they nearly double the counter total.  So the coverage figure comes
# from a second build, cov-*, the same code with ASan only: its counter
# total ("N inline 8-bit counters") is the number of edges of the convert
# path's code linked into a target, and "cov:" over it, on the corpus,
# is the edge coverage.

FUZZ_CC    ?= clang
FUZZ_BUILD ?= build/fuzz
WARN   := -Wall -Wextra -Werror -Wshadow -Wno-missing-field-initializers
BASE   := -std=c11 -D_GNU_SOURCE $(WARN) -O1 -g -fno-omit-frame-pointer -I.
CFLAGS := $(BASE) -fsanitize=address,undefined -fno-sanitize-recover=all
COV_CFLAGS := $(BASE) -fsanitize=address
COV    := -fsanitize=fuzzer-no-link
include libs.mk

LIB_DIRS := util perfdata model image decode symbols report segments stitch regions stats writers convert
LIB_SRCS := $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/obj/%.o)
COV_OBJS := $(LIB_SRCS:%.c=$(FUZZ_BUILD)/cov/%.o)
ENV_OBJ  := $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_env.o
TARGETS  := $(FUZZ_BUILD)/fuzz-convert $(FUZZ_BUILD)/fuzz-info \
            $(FUZZ_BUILD)/cov-convert $(FUZZ_BUILD)/cov-info

all: $(TARGETS)

# Dependency files end in .dep, not .d: the top Makefile includes every
# *.d under build/.
$(FUZZ_BUILD)/obj/tests/fuzz/%.o: tests/fuzz/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CFLAGS) -MMD -MP -MF $@.dep -c $< -o $@

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CFLAGS) $(COV) -MMD -MP -MF $@.dep -c $< -o $@

$(FUZZ_BUILD)/cov/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(COV_CFLAGS) $(COV) -MMD -MP -MF $@.dep -c $< -o $@

$(FUZZ_BUILD)/libmt-fuzz.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/libmt-cov.a: $(COV_OBJS)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz-%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o $(ENV_OBJ) \
		$(FUZZ_BUILD)/libmt-fuzz.a
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined $^ $(LIBS) -o $@

$(FUZZ_BUILD)/cov-%: $(FUZZ_BUILD)/obj/tests/fuzz/fuzz_%.o $(ENV_OBJ) \
		$(FUZZ_BUILD)/libmt-cov.a
	$(FUZZ_CC) -fsanitize=fuzzer,address,undefined $^ $(LIBS) -o $@

.PHONY: all
.SECONDARY:

-include $(shell find $(FUZZ_BUILD) -name '*.dep' 2>/dev/null)
