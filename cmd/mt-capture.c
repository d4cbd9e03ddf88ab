/*
 * mt-capture: records a program's control flow.
 *
 *   mt-capture --emulate [-o FILE] [--start-at SYMBOL] [--noretcomp]
 *              -- PROG ARGS...
 *
 * With Intel PT hardware the capture would come from the CPU; that
 * backend is not built yet.  --emulate runs the program under ptrace and
 * writes the packets the hardware would have, about a thousand times
 * slower.
 */
#include "capture/capture.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PT_SYSFS "/sys/bus/event_source/devices/intel_pt"

static const char usage[] =
	"usage: mt-capture --emulate [-o FILE] [--start-at SYMBOL] "
	"[--noretcomp]\n"
	"                  [-p [PID]] (attach; no PID: choose from a list)\n"
	"                  [--snapshot-size N] [--trigger SYMBOL|FILE:LINE] -- "
	"PROG "
	"[ARGS...]\n"
	"\n"
	"Records PROG's control flow as an Intel PT capture (perf.data) that\n"
	"mt-convert turns into a timeline.\n"
	"\n"
	"  --emulate          trace by single-stepping under ptrace: works on "
	"any\n"
	"                     x86-64 Linux, about 1000x slower than hardware\n"
	"  -o FILE            the capture (default raw.bin)\n"
	"  --start-at SYMBOL  begin tracing when SYMBOL is reached (default "
	"main;\n"
	"                     '' traces from exec)\n"
	"  --noretcomp        no compressed returns (a TIP for every ret)\n"
	"  --snapshot-size N  keep only the newest N bytes of trace per "
	"thread,\n"
	"                     as the hardware's ring does (4M, 64K, ...)\n"
	"  --duration-thresh T  snapshot only when the hit comes T (5ms, "
	"200us)\n"
	"                     or more after the program's mt_mark_start()\n"
	"  --truth FILE       also write every call seen, as a truth.tsv\n"
	"  --drop-every N     lose the packets of 1..48 branches about every "
	"N\n"
	"                     branches, then OVF, as an overflowing CPU does\n"
	"  --gaps FILE        list those losses (gaps.tsv form)\n"
	"  --trigger SYMBOL   take the snapshot when SYMBOL is reached (also\n"
	"                     addr:0x..., or FILE:LINE such as demo.c:42, "
	"from\n"
	"                     the DWARF line tables); default: "
	"mt_snapshot_point,\n"
	"                     the stub of include/magic_trace.h, when present\n"
	"\n"
	"Ctrl-C stops tracing, lets PROG run on untraced and writes the "
	"capture.\n"
	"\n"
	"  --check [--timing low|normal|high]\n"
	"                     show this machine's intel_pt PMU and the config "
	"a\n"
	"                     hardware capture would use\n"
	"  -p PID             attach to a running process (all its threads) "
	"instead;\n"
	"                     -p alone on a terminal offers a list to choose "
	"from\n";

/* "64K", "4M", "1048576": bytes. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);

	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	if (*end || !v || *s == '-') {
		fprintf(stderr,
			"mt-capture: --snapshot-size wants a size such as 4M, "
			"not "
			"'%s'\n",
			s);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * No pid given on a terminal: let the user choose, with fzf when it is
 * installed, else from a numbered list.  Returns the pid, or 0.
 */
static int pick_process(void)
{
	char line[512];
	int pids[4096], n = 0, choice = 0;
	FILE *ps, *fz = NULL;

	if (!system("command -v fzf >/dev/null 2>&1"))
		fz = popen("ps -eo pid=,user=,args= | fzf --prompt='trace> ' "
			   "--height=20 --reverse",
			   "r");
	if (fz) {
		if (fgets(line, sizeof(line), fz))
			choice = atoi(line);
		pclose(fz);
		return choice;
	}
	ps = popen("ps -eo pid=,user=,args=", "r");
	if (!ps)
		return 0;
	while (n < 4096 && fgets(line, sizeof(line), ps)) {
		pids[n] = atoi(line);
		fprintf(stderr, "%4d  %s", n + 1, line);
		n++;
	}
	pclose(ps);
	fprintf(stderr, "trace which (1-%d)? ", n);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	choice = atoi(line);
	return choice >= 1 && choice <= n ? pids[choice - 1] : 0;
}

/* Set by Ctrl-C; read by the emulator between steps. */
static volatile int stop_requested;

static void on_sigint(int sig)
{
	(void)sig;
	stop_requested = 1;
}

int main(int argc, char **argv)
{
	struct emu_opts o = {.output = "raw.bin", .stop = &stop_requested};
	struct emu_stats st;
	char err[1024];
	struct pt_request req = {.timing = PT_TIMING_NORMAL};
	const char *timing_name = "normal";
	int emulate = 0, check = 0, i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(a, "--emulate")) {
			emulate = 1;
		} else if (!strcmp(a, "--check")) {
			check = 1;
		} else if (!strcmp(a, "--timing") && i + 1 < argc) {
			timing_name = argv[++i];
			if (!strcmp(timing_name, "low"))
				req.timing = PT_TIMING_LOW;
			else if (!strcmp(timing_name, "normal"))
				req.timing = PT_TIMING_NORMAL;
			else if (!strcmp(timing_name, "high"))
				req.timing = PT_TIMING_HIGH;
			else {
				fprintf(stderr,
					"mt-capture: --timing is low, normal "
					"or "
					"high, not '%s'\n",
					timing_name);
				return 2;
			}
		} else if (!strcmp(a, "--noretcomp")) {
			o.noretcomp = true;
		} else if (!strcmp(a, "--multi-snapshot")) {
			o.multi_snapshot = true;
		} else if (!strcmp(a, "-p")) {
			if (i + 1 < argc && argv[i + 1][0] >= '0' &&
			    argv[i + 1][0] <= '9') {
				o.pid = atoi(argv[++i]);
			} else if (isatty(0) && isatty(2)) {
				o.pid = pick_process();
				if (o.pid <= 0) {
					fputs("mt-capture: no process chosen\n",
					      stderr);
					return 2;
				}
			} else {
				fputs("mt-capture: -p needs a pid\n", stderr);
				return 2;
			}
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--start-at") ||
			    !strcmp(a, "--trigger") || !strcmp(a, "--truth") ||
			    !strcmp(a, "--drop-every") ||
			    !strcmp(a, "--gaps") ||
			    !strcmp(a, "--duration-thresh") ||
			    !strcmp(a, "--snapshot-size")) &&
			   i + 1 < argc) {
			const char *v = argv[++i];

			if (!strcmp(a, "-o"))
				o.output = v;
			else if (!strcmp(a, "--start-at"))
				o.start_at = v;
			else if (!strcmp(a, "--trigger"))
				o.trigger = v;
			else if (!strcmp(a, "--truth"))
				o.truth = v;
			else if (!strcmp(a, "--gaps"))
				o.gaps = v;
			else if (!strcmp(a, "--duration-thresh")) {
				char *end;
				double d = strtod(v, &end);

				if (!strcmp(end, "ms"))
					d *= 1e6;
				else if (!strcmp(end, "us"))
					d *= 1e3;
				else if (!strcmp(end, "s"))
					d *= 1e9;
				else if (*end) {
					fprintf(stderr,
						"mt-capture: --duration-thresh "
						"wants 5ms, 200us or 1s\n");
					return 2;
				}
				o.duration_thresh = (uint64_t)d;
			} else if (!strcmp(a, "--drop-every"))
				o.drop_every = strtoull(v, NULL, 0);
			else if (parse_size(v, &o.snapshot_size))
				return 2;
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (a[0] == '-') {
			fprintf(stderr,
				"mt-capture: unknown option %s (see mt-capture "
				"--help)\n",
				a);
			return 2;
		} else {
			break;
		}
	}
	if (!emulate) {
		/* The hardware path: the PMU as sysfs describes it
		 * (MT_INTEL_PT_SYSFS points elsewhere, for tests). */
		const char *dir = getenv("MT_INTEL_PT_SYSFS");
		struct pt_pmu pmu;
		uint64_t config;

		if (pmu_probe(dir ? dir : PT_SYSFS, &pmu, err, sizeof(err))) {
			fprintf(stderr, "mt-capture: %s\n", err);
			return 1;
		}
		if (pmu_config(&pmu, &req, &config, err, sizeof(err))) {
			fprintf(stderr, "mt-capture: %s\n", err);
			return 1;
		}
		if (check) {
			printf("intel_pt PMU type %u, max non-turbo ratio %u\n"
			       "caps: cyc %s, mtc %s (periods %x), "
			       "cycle thresholds %x, psb periods %x\n"
			       "config for --timing %s: %#llx\n",
			       pmu.type, pmu.max_nonturbo_ratio,
			       pmu.psb_cyc ? "yes" : "no",
			       pmu.mtc ? "yes" : "no", pmu.mtc_periods,
			       pmu.cycle_thresholds, pmu.psb_periods,
			       timing_name, (unsigned long long)config);
			return 0;
		}
		if (i >= argc) {
			fputs("mt-capture: no program to run (mt-capture -- "
			      "PROG ARGS...)\n",
			      stderr);
			return 2;
		}
		{
			/* The AUX area must be a power of two of pages. */
			struct hw_opts h = {.output = o.output,
					    .sysfs = dir ? dir : PT_SYSFS,
					    .req = req,
					    .aux_size = 4096,
					    .stop = &stop_requested};
			uint64_t want =
				o.snapshot_size ? o.snapshot_size : 4u << 20;

			while (h.aux_size < want)
				h.aux_size <<= 1;
			if (h.aux_size != want && o.snapshot_size)
				fprintf(stderr,
					"mt-capture: --snapshot-size rounded "
					"up "
					"to %llu bytes (a power of two of "
					"pages)\n",
					(unsigned long long)h.aux_size);
			signal(SIGINT, on_sigint);
			if (hw_run(argv + i, &h, err, sizeof(err))) {
				fprintf(stderr, "mt-capture: %s\n", err);
				return 1;
			}
			fprintf(stderr, "mt-capture: %s written\n", o.output);
			return 0;
		}
	}
	if (i >= argc && !o.pid) {
		fputs("mt-capture: no program to run (mt-capture --emulate -- "
		      "PROG ARGS..., or -p PID)\n",
		      stderr);
		return 2;
	}
	signal(SIGINT, on_sigint);
	fputs("mt-capture: emulating Intel PT by single-stepping: about 1000x "
	      "slower than hardware\n",
	      stderr);
	if (emu_run(argv + i, &o, &st, err, sizeof(err))) {
		fprintf(stderr, "mt-capture: %s\n", err);
		return 1;
	}
	if (st.warning[0])
		fprintf(stderr, "mt-capture: %s\n", st.warning);
	fprintf(stderr,
		"mt-capture: %s: %llu instructions, %llu branches, %llu "
		"thread%s, %.1f KiB of trace in %.2fs\n",
		o.output, (unsigned long long)st.insns,
		(unsigned long long)st.branches, (unsigned long long)st.threads,
		st.threads == 1 ? "" : "s", (double)st.aux_bytes / 1024,
		st.seconds);
	return 0;
}
