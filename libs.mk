# SPDX-License-Identifier: MIT
# The libraries every binary links with, shared by the Makefile and
# tests/fuzz/fuzz.mk so that a new dependency reaches both.
LIBS := -lipt -ldw -lelf -liberty -llzma -lcapstone -lsqlite3 -ldeflate -lz \
        -lm -lpthread
