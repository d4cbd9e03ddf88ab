/* SPDX-License-Identifier: MIT */
/*
 * A minimal test harness: each test program calls its test functions
 * through RUN(); every CHECK that fails prints where and why.  The program
 * prints one "PASS name", "FAIL name" or "SKIP name (reason)" line per test
 * and exits non-zero if any failed; tests/run counts the lines.  A test
 * that cannot run here (data or a tool missing) calls SKIP and returns; a
 * check that failed before that still makes it FAIL.
 */
#ifndef MT_CHECK_H
#define MT_CHECK_H

#include <stdio.h>

struct check_state {
	int failed_checks;
	int passed, failed, skipped;
	const char *skip_reason; /* set by SKIP, for the running test */
};

#define SKIP(st, reason) ((st)->skip_reason = (reason))

#define CHECK(st, cond)                                                        \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "  %s:%d: check failed: %s\n",         \
				__FILE__, __LINE__, #cond);                    \
			(st)->failed_checks++;                                 \
		}                                                              \
	} while (0)

#define CHECKF(st, cond, ...)                                                  \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr,                                        \
				"  %s:%d: check failed: %s: ", __FILE__,       \
				__LINE__, #cond);                              \
			fprintf(stderr, __VA_ARGS__);                          \
			fputc('\n', stderr);                                   \
			(st)->failed_checks++;                                 \
		}                                                              \
	} while (0)

#define RUN(st, fn)                                                            \
	do {                                                                   \
		int before_ = (st)->failed_checks;                             \
		(st)->skip_reason = NULL;                                      \
		fn(st);                                                        \
		if ((st)->failed_checks == before_ && (st)->skip_reason) {     \
			printf("SKIP %s (%s)\n", #fn, (st)->skip_reason);      \
			(st)->skipped++;                                       \
		} else if ((st)->failed_checks == before_) {                   \
			printf("PASS %s\n", #fn);                              \
			(st)->passed++;                                        \
		} else {                                                       \
			printf("FAIL %s\n", #fn);                              \
			(st)->failed++;                                        \
		}                                                              \
		fflush(stdout);                                                \
	} while (0)

#define CHECK_DONE(st) ((st)->failed ? 1 : 0)

#endif
