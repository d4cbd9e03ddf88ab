/* SPDX-License-Identifier: MIT */
/*
 * mt-report: which functions took the time, how their durations are
 * spread, and what differs between two parts of a trace, from the
 * SQLite database mt-convert wrote.
 */
#include "stats/stats.h"
#include "util/util.h"
#include "util/version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: mt-report [options] TRACE.sqlite\n"
	"       mt-report --compare [options] A.sqlite B.sqlite\n"
	"       mt-report --compare REGION REGION [options] TRACE.sqlite\n"
	"       mt-report --version\n"
	"\n"
	"What the functions of a trace cost, from the database mt-convert\n"
	"wrote: by default the top functions by self time and by total\n"
	"time, with their calls and duration percentiles.\n"
	"\n"
	"  --function NAME    NAME's duration histogram, callers and callees\n"
	"  --slowest N        the N slowest calls (of --function NAME), each\n"
	"                     with its stack\n"
	"  --compare          per function, B less A: calls, self and total\n"
	"                     time, p99; what explains the difference most\n"
	"                     first\n"
	"  --folded           folded stacks weighted by self time in ns\n"
	"                     ('main;work;fib 1234': flamegraph.pl, inferno,\n"
	"                     speedscope)\n"
	"  --csv              comma-separated values, times in ns\n"
	"  -n N               rows per table (default 20)\n"
	"Regions (one, or two with --compare):\n"
	"  --between NAME[#N] each outermost call of NAME with what it\n"
	"                     called, or only the N-th (1 the first, -1 the\n"
	"                     last)\n"
	"  --time FROM..TO    a window from the trace's first slice "
	"(2ms..3ms;\n"
	"                     slices running past it are cut and inferred)\n";

static int fail_usage(const char *fmt, const char *arg)
{
	fputs("mt-report: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs(" (see mt-report --help)\n", stderr);
	return 2;
}

int main(int argc, char **argv)
{
	struct st_opts o = {.mode = ST_TOP, .limit = 20};
	char err[1024] = "";
	int nr_db = 0, nr_r = 0, modes = 0;
	bool compare = false, limit_set = false;

	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t n;

		if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			fputs(usage, stdout);
			return 0;
		}
		if (!strcmp(s, "--version")) {
			mt_version_print(stdout, "mt-report");
			return 0;
		}
		if ((!strcmp(s, "--function") || !strcmp(s, "--slowest") ||
		     !strcmp(s, "-n") || !strcmp(s, "--between") ||
		     !strcmp(s, "--time")) &&
		    !v)
			return fail_usage("%s needs a value", s);
		if (!strcmp(s, "--function")) {
			o.function = argv[++i];
		} else if (!strcmp(s, "--slowest") || !strcmp(s, "-n")) {
			if (mt_parse_u64(v, 10, 1000000, &n) || !n)
				return fail_usage("%s: not a count (1 to "
						  "1000000)",
						  v);
			if (s[1] == '-') {
				o.mode = ST_SLOWEST;
				modes++;
			}
			if (s[1] == '-' && !limit_set)
				o.limit = (uint32_t)n;
			else if (s[1] == 'n') {
				o.limit = (uint32_t)n;
				limit_set = true;
			}
			i++;
		} else if (!strcmp(s, "--compare")) {
			compare = true;
			o.mode = ST_COMPARE;
			modes++;
		} else if (!strcmp(s, "--folded")) {
			o.mode = ST_FOLDED;
			modes++;
		} else if (!strcmp(s, "--csv")) {
			o.csv = true;
		} else if (!strcmp(s, "--between") || !strcmp(s, "--time")) {
			int rc;

			if (nr_r == 2)
				return fail_usage("%s: at most two regions", s);
			rc = s[2] == 'b' ? st_parse_call(v, &o.r[nr_r], err,
							 sizeof(err))
					 : st_parse_time(v, &o.r[nr_r], err,
							 sizeof(err));
			if (rc) {
				fprintf(stderr, "mt-report: %s\n", err);
				return 2;
			}
			nr_r++;
			i++;
		} else if (s[0] == '-' && s[1]) {
			return fail_usage("unknown option %s", s);
		} else if (nr_db < 2) {
			o.db[nr_db++] = s;
		} else {
			return fail_usage("%s: one database, or two with "
					  "--compare",
					  s);
		}
	}
	if (o.function && o.mode == ST_TOP)
		o.mode = ST_FUNC;
	if (modes > 1)
		return fail_usage("%s", "--slowest, --compare and --folded "
					"are one at a time");
	if (!nr_db)
		return fail_usage("%s", "no database given");
	if (nr_db == 2 && !compare)
		return fail_usage("%s: two databases need --compare", o.db[1]);
	if (nr_r == 2 && !compare)
		return fail_usage("%s", "two regions need --compare");
	if (compare && nr_db == 1 && nr_r != 2)
		return fail_usage("%s", "--compare needs two databases, or "
					"two regions of one");
	if (st_report(&o, stdout, err, sizeof(err))) {
		fflush(stdout);
		fprintf(stderr, "mt-report: %s\n", err);
		return 1;
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "mt-report: writing the report failed\n");
		return 1;
	}
	return 0;
}
