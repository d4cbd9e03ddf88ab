/* SPDX-License-Identifier: MIT */
/*
 * mt-synth: generate an Intel PT capture whose truth is known.
 *
 *   mt-synth --seed S --branches N [--threads T] [--timing tsc|mtc|cyc]
 *            [--noretcomp] [--gap-every N] [--gap-at KINDS]
 *            [--start-depth D]
 *            [--final-stack] [--psb-period P] [--mtc-period M] [--no-deep]
 *            [--per-cpu [--cpus N [--task-switches]]]
 *            [--kernel [--no-kernel-code]]
 *            -o DIR
 */
#include "synth/synth.h"
#include "util/util.h"
#include "util/version.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: mt-synth --seed S --branches N [--threads T]\n"
		"                [--timing tsc|mtc|cyc] [--noretcomp]\n"
		"                [--gap-every N] [--gap-at KINDS] "
		"[--start-depth D]\n"
		"                [--final-stack]\n"
		"                [--psb-period P] [--mtc-period M] "
		"[--no-deep]\n"
		"                [--per-cpu [--cpus N [--task-switches]]]\n"
		"                [--kernel [--no-kernel-code]]\n"
		"                [--cc COMPILER] -o DIR\n"
		"Writes DIR/raw.bin (perf.data with Intel PT), DIR/prog (the "
		"traced ELF)\nand DIR/truth.tsv (every call live in the "
		"window).\n");
}

/* A count as a person types it: digits (0x for hex), then k for
 * thousands or M for millions if they like, at most max. */
static int parse_u64(const char *s, const char *what, uint64_t max,
		     uint64_t *out)
{
	const char *end = s;
	uint64_t v = 0, mul = 1;
	int rc = mt_scan_u64(&end, 0, UINT64_MAX, &v);

	if (*end == 'k' || *end == 'K')
		mul = 1000, end++;
	else if (*end == 'M')
		mul = 1000000, end++;
	if (rc == -EINVAL || *end) {
		fprintf(stderr, "mt-synth: %s: '%s' is not a number\n", what,
			s);
		return -1;
	}
	if (rc || v > max / mul) {
		fprintf(stderr, "mt-synth: %s: '%s' is more than %llu\n", what,
			s, (unsigned long long)max);
		return -1;
	}
	*out = v * mul;
	return 0;
}

/* --gap-at syscall,longjmp,returns,recursion,back2back (or all) */
static int parse_gap_at(const char *s, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} kinds[] = {
		{"syscall", SYNTH_GAP_SYSCALL},
		{"longjmp", SYNTH_GAP_LONGJMP},
		{"returns", SYNTH_GAP_RETURNS},
		{"recursion", SYNTH_GAP_RECURSION},
		{"back2back", SYNTH_GAP_BACK2BACK},
	};
	const char *p = s;

	*out = 0;
	while (*p) {
		size_t len = strcspn(p, ","), i;

		for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (strlen(kinds[i].name) == len &&
			    !strncmp(p, kinds[i].name, len))
				break;
		if (i < sizeof(kinds) / sizeof(kinds[0]))
			*out |= kinds[i].bit;
		else if (len == 3 && !strncmp(p, "all", 3))
			*out |= SYNTH_GAP_SYSCALL | SYNTH_GAP_LONGJMP |
				SYNTH_GAP_RETURNS | SYNTH_GAP_RECURSION |
				SYNTH_GAP_BACK2BACK;
		else {
			fprintf(stderr,
				"mt-synth: --gap-at: '%.*s' is not one of "
				"syscall, longjmp, returns, recursion, "
				"back2back, all\n",
				(int)len, p);
			return -1;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"seed", required_argument, NULL, 's'},
		{"branches", required_argument, NULL, 'n'},
		{"threads", required_argument, NULL, 't'},
		{"timing", required_argument, NULL, 'T'},
		{"noretcomp", no_argument, NULL, 'R'},
		{"gap-every", required_argument, NULL, 'g'},
		{"gap-at", required_argument, NULL, 'A'},
		{"start-depth", required_argument, NULL, 'd'},
		{"final-stack", no_argument, NULL, 'F'},
		{"psb-period", required_argument, NULL, 'P'},
		{"mtc-period", required_argument, NULL, 'M'},
		{"no-deep", no_argument, NULL, 'D'},
		{"per-cpu", no_argument, NULL, 'C'},
		{"cpus", required_argument, NULL, 'U'},
		{"task-switches", no_argument, NULL, 'W'},
		{"kernel", no_argument, NULL, 'K'},
		{"no-kernel-code", no_argument, NULL, 'N'},
		{"cc", required_argument, NULL, 'c'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	struct synth_opts o;
	struct synth_stats st;
	char err[1024];
	/* In enum ptenc_timing's order. */
	static const char *const timings[] = {"tsc", "mtc", "cyc"};
	uint64_t v;
	int c, k;

	synth_opts_init(&o);
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_u64(optarg, "--seed", UINT64_MAX, &o.seed))
				return 2;
			break;
		case 'n':
			if (parse_u64(optarg, "--branches", UINT64_MAX,
				      &o.branches))
				return 2;
			break;
		case 't':
			if (parse_u64(optarg, "--threads", UINT_MAX, &v))
				return 2;
			o.threads = (unsigned)v;
			break;
		case 'T':
			k = mt_parse_word("--timing", optarg, timings, 3, err,
					  sizeof(err));
			if (k < 0) {
				fprintf(stderr, "mt-synth: %s\n", err);
				return 2;
			}
			o.timing = (enum ptenc_timing)k;
			break;
		case 'R':
			o.noretcomp = true;
			break;
		case 'g':
			if (parse_u64(optarg, "--gap-every", UINT64_MAX,
				      &o.gap_every))
				return 2;
			break;
		case 'A':
			if (parse_gap_at(optarg, &o.gap_at))
				return 2;
			break;
		case 'd':
			if (parse_u64(optarg, "--start-depth", 1000, &v))
				return 2;
			o.start_depth = (unsigned)v;
			break;
		case 'F':
			o.final_stack = true;
			break;
		case 'P':
			if (parse_u64(optarg, "--psb-period", UINT_MAX, &v))
				return 2;
			o.psb_period = (unsigned)v;
			break;
		case 'M':
			if (parse_u64(optarg, "--mtc-period", UINT_MAX, &v))
				return 2;
			o.mtc_period = (unsigned)v;
			break;
		case 'C':
			o.per_cpu = true;
			break;
		case 'W':
			o.task_switches = true;
			break;
		case 'U':
			if (parse_u64(optarg, "--cpus", 64, &v))
				return 2;
			o.cpus = (unsigned)v;
			break;
		case 'K':
			o.kernel = true;
			break;
		case 'N':
			o.no_kernel_code = true;
			break;
		case 'D':
			o.deep = false;
			break;
		case 'c':
			o.cc = optarg;
			break;
		case 'o':
			o.outdir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			mt_version_print(stdout, "mt-synth");
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!o.outdir || optind != argc || !o.branches) {
		usage(stderr);
		return 2;
	}
	if (synth_generate(&o, &st, err, sizeof(err))) {
		fprintf(stderr, "mt-synth: %s\n", err);
		return 1;
	}
	printf("%s/raw.bin: %" PRIu64 " branches, %" PRIu64 " calls, %" PRIu64
	       " returns, %" PRIu64 " syscalls, %" PRIu64
	       " gaps, max depth %u, %" PRIu64 " bytes of trace, %zu truth "
	       "rows",
	       o.outdir, st.branches, st.calls, st.returns, st.syscalls,
	       st.gaps, st.max_depth, st.packets_bytes, st.truth_rows);
	if (o.cpus)
		printf(", %" PRIu64 " switches (%" PRIu64 " lost in overflows)",
		       st.switches, st.lost_switches);
	putchar('\n');
	return 0;
}
