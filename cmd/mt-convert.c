/* SPDX-License-Identifier: MIT */
/*
 * mt-convert: a capture to a Perfetto trace and a SQLite database.
 * The conversion is convert/'s; this is its command line, its summary,
 * and the signal handlers that take its temporary outputs away with an
 * interrupted run.
 */
#include "convert/convert.h"
#include "perfdata/perfdata.h"
#include "regions/regions.h"
#include "report/report.h"
#include "util/util.h"
#include "util/version.h"
#include "writers/writers.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: mt-convert CAPTURE -o TRACE.pftrace [options]\n"
	"       mt-convert --info CAPTURE\n"
	"       mt-convert --version\n"
	"\n"
	"Turns a capture (perf.data with Intel PT) into a Perfetto trace\n"
	"and a SQLite database of its slices.\n"
	"\n"
	"  -o PATH            the Perfetto trace to write\n"
	"  --sqlite PATH      the SQLite database (default: the trace's path\n"
	"                     with .sqlite instead of .pftrace)\n"
	"  --no-sqlite        do not write the database\n"
	"  --text PATH        also write the slice tree as text ('-': stdout)\n"
	"  --binaries DIR     look for the traced binaries in DIR first\n"
	"                     (repeatable)\n"
	"  --debug-root DIR   build-id tree of binaries (default "
	"/usr/lib/debug)\n"
	"  --jit-dir DIR      where JIT symbol maps (perf-PID.map) are "
	"(default /tmp)\n"
	"  --no-final-stack   do not anchor roots on the stack unwound at\n"
	"                     the snapshot\n"
	"  --no-stitch        do not join call stacks across decode gaps\n"
	"  --no-goroutine-ids ignore the Go goroutine ids the capture holds\n"
	"                     (resumes are picked as a hardware trace's)\n"
	"  --no-inline        no slices for the calls a compiler inlined\n"
	"  --no-compress      write the Perfetto trace without zlib\n"
	"  --tid TID[,TID...] convert only these threads (--info lists "
	"them)\n"
	"  --time FROM..TO    keep only this window, from the trace's first\n"
	"                     slice: ns, or with a unit (2ms..3.5ms, ..500us,\n"
	"                     1s..); slices running past it are clipped\n"
	"  --between START    keep only each thread's calls of START, with\n"
	"                     the stack at their entry\n"
	"  --until STOP       with --between: from a call of START to the\n"
	"                     next return from STOP\n"
	"  --max-memory SIZE  refuse a capture that looks as if it needs more\n"
	"                     memory than SIZE (500M, 8G; default: what is\n"
	"                     available)\n"
	"  --no-memory-check  convert even when the capture looks too big\n"
	"  -j, --jobs N       decode and write on N threads (default: one a\n"
	"                     core; 1: decode in one piece, on this thread)\n"
	"  --piece-size SIZE  the trace a piece of a parallel decode has\n"
	"                     (default 256K)\n"
	"  --piece-events N   the events a piece of a thread's call tree\n"
	"                     has, built at once (default 65536)\n"
	"  --split N          write the Perfetto trace as parts of at most\n"
	"                     N slices each (TRACE.1.pftrace, ...), cut in\n"
	"                     time, each with the stack at its start\n"
	"  --stages           after the summary, one line per stage that\n"
	"                     ran: stage NAME WALL_S CPU_S PEAK_RSS_KIB\n"
	"                     OWN_CPU_S\n"
	"  -q, --quiet        no summary\n";

struct args {
	const char *capture, *out, *sqlite, *text, *debug_root, *jit_dir;
	const char **bins;
	size_t nr_bins;
	uint32_t *tids;
	size_t nr_tids;
	int no_sqlite, no_final_stack, no_compress, no_stitch, no_inline, quiet;
	int no_memory_check, stages, no_goroutine_ids;
	uint64_t max_memory;   /* 0: what the system has */
	unsigned jobs;	       /* 0: one a core */
	uint64_t piece_size;   /* 0: the decoder's default */
	uint64_t piece_events; /* 0: the builder's default */
	bool have_window;
	struct rg_window window;
	const char *time; /* --time as given */
	const char *between, *until;
	uint64_t split; /* --split N: parts of at most N slices; 0: whole */
};

/* "12,345": *tids grows by each. */
static int parse_tids(const char *v, struct args *a)
{
	const char *p = v;

	for (;;) {
		uint64_t n;
		uint32_t *nt;

		if (mt_scan_u64(&p, 10, UINT32_MAX - 1, &n) ||
		    (*p && *p != ',')) {
			fprintf(stderr,
				"mt-convert: --tid %s: not a thread id or a "
				"list of them (TID,TID,...)\n",
				v);
			return -1;
		}
		nt = realloc(a->tids, (a->nr_tids + 1) * sizeof(*nt));
		if (!nt)
			return -1;
		a->tids = nt;
		a->tids[a->nr_tids++] = (uint32_t)n;
		if (!*p)
			return 0;
		p++;
	}
}

struct progress {
	uint64_t start; /* mt_clock_ns(CLOCK_MONOTONIC) */
	int tty, shown;
};

static int show_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	double t = mt_since_s(CLOCK_MONOTONIC, p->start);

	/* Only when someone watches and the wait is noticeable. */
	if (!p->tty || t < 0.5 || !total)
		return 0;
	fprintf(stderr, "\rdecoding %5.1f%%  %6.1f MB  %.1fs",
		100.0 * (double)done / (double)total, (double)done / 1e6, t);
	p->shown = 1;
	return 0;
}

/*
 * The temporary files a fatal signal must take away with the process.
 * A signal handler can reach nothing else, so this is the one mutable
 * global: the conversion tells of its outputs as it begins them, and
 * empties the lists before they are renamed or freed (on_outputs).
 */
static const struct mt_outfile *sig_outs;
static volatile sig_atomic_t sig_nr_outs;
/* The same for the parts of --split, begun once their number is known. */
static const struct mt_outfile *sig_parts;
static volatile sig_atomic_t sig_nr_parts;

static void remove_outputs(void)
{
	for (sig_atomic_t i = 0; i < sig_nr_outs; i++)
		if (sig_outs[i].tmp)
			unlink(sig_outs[i].tmp);
	for (sig_atomic_t i = 0; i < sig_nr_parts; i++)
		if (sig_parts[i].tmp)
			unlink(sig_parts[i].tmp);
}

static void on_fatal_signal(int sig)
{
	remove_outputs();
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * The capture as it was when it was opened, for a SIGBUS: the decoder
 * reads it mapped, and a capture truncated meanwhile by another process
 * faults there.  Set before the handler is installed, never changed.
 */
static const char *sig_capture;
static struct stat sig_capture_st;
static char sig_capture_msg[PATH_MAX + 128];

/* Decode threads reading the mapped capture fault together: the first
 * one says so, the others wait for its _exit(). */
static atomic_flag sig_bus_taken = ATOMIC_FLAG_INIT;

static void set_capture_changed_msg(const char *capture)
{
	snprintf(sig_capture_msg, sizeof(sig_capture_msg),
		 "mt-convert: %s: the capture changed (shrank) while it was "
		 "being read; no output was written\n",
		 capture);
}

/* A fault reading a capture that changed is the capture's doing, said
 * in one line; any other stays a crash. */
static void on_bus_error(int sig)
{
	struct stat now;

	if (sig_capture &&
	    (stat(sig_capture, &now) || now.st_size != sig_capture_st.st_size ||
	     now.st_mtim.tv_sec != sig_capture_st.st_mtim.tv_sec ||
	     now.st_mtim.tv_nsec != sig_capture_st.st_mtim.tv_nsec)) {
		ssize_t n;

		if (atomic_flag_test_and_set(&sig_bus_taken))
			for (;;)
				pause();
		remove_outputs();
		/* One write, so that the line is never torn. */
		n = write(STDERR_FILENO, sig_capture_msg,
			  strlen(sig_capture_msg));
		(void)n;
		_exit(1);
	}
	on_fatal_signal(sig);
}

/* Set when a write went past the file size limit (ulimit -f): it fails
 * with EFBIG then, which the writer reports, instead of killing the
 * process with its temporary files left; the message says why. */
static volatile sig_atomic_t over_file_limit;

static void on_file_limit(int sig)
{
	(void)sig;
	over_file_limit = 1;
}

/* SIGPIPE: a reader of standard output (--text -, -o /dev/stdout) that
 * went away, as head does; the conversion ends quietly, as a pipeline's
 * tools do. */
static const int fatal_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

static void fatal_signal_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		sigaddset(set, fatal_sigs[i]);
}

static void catch_fatal_signals(void)
{
	const int *sigs = fatal_sigs;
	struct sigaction sa = {.sa_handler = on_fatal_signal};

	fatal_signal_set(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]);
	     i++) {
		struct sigaction old;

		/* A signal ignored when we started (nohup, a background
		 * job's SIGINT) stays ignored. */
		if (!sigaction(sigs[i], NULL, &old) &&
		    old.sa_handler == SIG_IGN)
			continue;
		sigaction(sigs[i], &sa, NULL);
	}
	sa.sa_handler = on_bus_error;
	sigaction(SIGBUS, &sa, NULL);
	sa.sa_handler = on_file_limit;
	sigaction(SIGXFSZ, &sa, NULL);
}

/*
 * Two names for one file among the capture and the outputs: writing
 * would destroy the capture, or one output would overwrite the other.
 * names[0] is the capture; a NULL entry is an output not written.
 */
static int refuse_same_files(const char *const *names, const char *const *what,
			     size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++) {
			if (!names[i] || !names[j] ||
			    !mt_same_file(names[i], names[j]))
				continue;
			if (i == 0)
				fprintf(stderr,
					"mt-convert: %s %s is the capture "
					"itself; refusing to overwrite it\n",
					what[j], names[j]);
			else
				fprintf(stderr,
					"mt-convert: %s and %s name the same "
					"file (%s); give each output its own\n",
					what[i], what[j], names[j]);
			return -1;
		}
	return 0;
}

static int parse(int argc, char **argv, struct args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

#define NEED_ARG                                                               \
	do {                                                                   \
		if (!v) {                                                      \
			fprintf(stderr,                                        \
				"mt-convert: %s needs a value (see "           \
				"mt-convert --help)\n",                        \
				s);                                            \
			return -1;                                             \
		}                                                              \
		i++;                                                           \
	} while (0)
		if (!strcmp(s, "-o")) {
			NEED_ARG;
			a->out = v;
		} else if (!strcmp(s, "--sqlite")) {
			NEED_ARG;
			a->sqlite = v;
		} else if (!strcmp(s, "--text")) {
			NEED_ARG;
			a->text = v;
		} else if (!strcmp(s, "--binaries")) {
			NEED_ARG;
			a->bins[a->nr_bins++] = v;
		} else if (!strcmp(s, "--debug-root")) {
			NEED_ARG;
			a->debug_root = v;
		} else if (!strcmp(s, "--jit-dir")) {
			NEED_ARG;
			a->jit_dir = v;
		} else if (!strcmp(s, "--no-sqlite")) {
			a->no_sqlite = 1;
		} else if (!strcmp(s, "--no-final-stack")) {
			a->no_final_stack = 1;
		} else if (!strcmp(s, "--no-goroutine-ids")) {
			a->no_goroutine_ids = 1;
		} else if (!strcmp(s, "--no-stitch")) {
			a->no_stitch = 1;
		} else if (!strcmp(s, "--no-inline")) {
			a->no_inline = 1;
		} else if (!strcmp(s, "--no-compress")) {
			a->no_compress = 1;
		} else if (!strcmp(s, "--tid")) {
			NEED_ARG;
			if (parse_tids(v, a))
				return -1;
		} else if (!strcmp(s, "--time")) {
			char msg[256];

			NEED_ARG;
			if (rg_parse_window(v, &a->window, msg, sizeof(msg))) {
				fprintf(stderr, "mt-convert: %s\n", msg);
				return -1;
			}
			a->have_window = true;
			a->time = v;
		} else if (!strcmp(s, "--split")) {
			NEED_ARG;
			if (mt_parse_u64(v, 10, UINT32_MAX, &a->split) ||
			    !a->split) {
				fprintf(stderr,
					"mt-convert: --split %s: not a number "
					"of slices (1 to %u)\n",
					v, UINT32_MAX);
				return -1;
			}
		} else if (!strcmp(s, "--between")) {
			NEED_ARG;
			a->between = v;
		} else if (!strcmp(s, "--until")) {
			NEED_ARG;
			a->until = v;
		} else if (!strcmp(s, "--no-memory-check")) {
			a->no_memory_check = 1;
		} else if (!strcmp(s, "--max-memory")) {
			NEED_ARG;
			if (mt_parse_size(v, &a->max_memory) ||
			    !a->max_memory) {
				fprintf(stderr,
					"mt-convert: --max-memory %s: not a "
					"size (500M, 8G, ...)\n",
					v);
				return -1;
			}
		} else if (!strcmp(s, "-j") || !strcmp(s, "--jobs")) {
			uint64_t n;

			NEED_ARG;
			if (mt_parse_u64(v, 10, 1024, &n) || !n) {
				fprintf(stderr,
					"mt-convert: %s %s: not a number of "
					"threads (1 to 1024)\n",
					s, v);
				return -1;
			}
			a->jobs = (unsigned)n;
		} else if (!strcmp(s, "--piece-size")) {
			NEED_ARG;
			if (mt_parse_size(v, &a->piece_size) ||
			    a->piece_size < 4096) {
				fprintf(stderr,
					"mt-convert: --piece-size %s: not a "
					"size of at least 4K\n",
					v);
				return -1;
			}
		} else if (!strcmp(s, "--piece-events")) {
			char why[160];

			NEED_ARG;
			if (mt_parse_arg("--piece-events", v, 10, 1u << 30,
					 &a->piece_events, why, sizeof(why)) ||
			    !a->piece_events) {
				fprintf(stderr, "mt-convert: %s\n",
					a->piece_events ? why
							: "--piece-events 0: "
							  "a piece has events");
				return -1;
			}
		} else if (!strcmp(s, "--stages")) {
			a->stages = 1;
		} else if (!strcmp(s, "-q") || !strcmp(s, "--quiet")) {
			a->quiet = 1;
		} else if (s[0] == '-' && s[1]) {
			fprintf(stderr,
				"mt-convert: unknown option %s (see mt-convert "
				"--help)\n",
				s);
			return -1;
		} else if (!a->capture) {
			a->capture = s;
		} else {
			fprintf(stderr,
				"mt-convert: more than one capture (%s) (see "
				"mt-convert --help)\n",
				s);
			return -1;
		}
#undef NEED_ARG
	}
	if (!a->capture) {
		fprintf(stderr, "mt-convert: no capture given (see mt-convert "
				"--help)\n");
		return -1;
	}
	if (a->until && !a->between) {
		fprintf(stderr, "mt-convert: --until needs --between (see "
				"mt-convert --help)\n");
		return -1;
	}
	if (a->between && a->have_window) {
		fprintf(stderr, "mt-convert: --time and --between cut the "
				"trace two ways: give one\n");
		return -1;
	}
	if (!a->out && !a->text) {
		fprintf(stderr, "mt-convert: no output: give -o TRACE.pftrace "
				"(see mt-convert --help)\n");
		return -1;
	}
	if (a->split && !a->out) {
		fprintf(stderr, "mt-convert: --split needs -o TRACE.pftrace "
				"(see mt-convert --help)\n");
		return -1;
	}
	if (a->sqlite && a->no_sqlite) {
		fprintf(stderr, "mt-convert: --sqlite and --no-sqlite (see "
				"mt-convert --help)\n");
		return -1;
	}
	return 0;
}

/* trace.pftrace -> trace.sqlite; other names get .sqlite appended. */
static char *sqlite_path(const char *out)
{
	size_t n = strlen(out);
	char *p = malloc(n + 8);

	if (!p)
		return NULL;
	memcpy(p, out, n + 1);
	if (n > 8 && !strcmp(out + n - 8, ".pftrace"))
		p[n - 8] = 0;
	strcat(p, ".sqlite");
	return p;
}

static void summary(const struct mt_convert_result *r, const struct args *a,
		    const char *sqlite, double secs)
{
	const struct mt_trace *t = &r->trace;
	const struct rg_stats *rg = &r->rg;
	const struct mt_slice *top[5] = {0};
	const struct mt_thread *top_th[5] = {0};
	uint64_t slices = 0, gaps = 0;

	for (size_t i = 0; i < t->nr_threads; i++) {
		const struct mt_thread *th = &t->threads[i];

		for (size_t k = 0; k < th->nr_slices; k++) {
			const struct mt_slice *s = &th->slices[k];

			slices++;
			if (s->flags & MT_SLICE_GAP) {
				gaps++;
				continue;
			}
			/* keep the five longest, longest first (most slices
			 * are shorter than the fifth: one compare) */
			if ((s->flags &
			     (MT_SLICE_SYSCALL | MT_SLICE_UNTRACED)) ||
			    (top[4] && top[4]->dur >= s->dur))
				continue;
			for (size_t j = 0; j < 5; j++) {
				if (top[j] && top[j]->dur >= s->dur)
					continue;
				memmove(top + j + 1, top + j,
					(4 - j) * sizeof(*top));
				memmove(top_th + j + 1, top_th + j,
					(4 - j) * sizeof(*top_th));
				top[j] = s;
				top_th[j] = th;
				break;
			}
		}
	}
	fprintf(stderr,
		"%zu thread%s, %" PRIu64 " slices, %" PRIu64
		" decode gap%s, %.3f ms traced; %.1f MB of trace in %.2fs\n",
		t->nr_threads, t->nr_threads == 1 ? "" : "s", slices, gaps,
		gaps == 1 ? "" : "s", (double)(r->last - r->first) / 1e6,
		(double)r->aux_bytes / 1e6, secs);
	if (r->pieces && r->waits)
		fprintf(stderr,
			"  decoded in %" PRIu64
			" pieces on %u threads, %" PRIu64
			" of them joined to the piece before (runs ahead"
			" waited %" PRIu64 " times for the hand-over)\n",
			r->pieces, r->dec_threads, r->joined, r->waits);
	else if (r->pieces)
		fprintf(stderr,
			"  decoded in %" PRIu64
			" pieces on %u threads, %" PRIu64
			" of them joined to the piece before\n",
			r->pieces, r->dec_threads, r->joined);
	if (r->build_threads && r->build_pieces)
		fprintf(stderr,
			"  call trees built on %u thread%s, in %" PRIu64
			" piece%s (%" PRIu64 " events decided as they were "
			"joined, %" PRIu64 " built again)\n",
			r->build_threads, r->build_threads == 1 ? "" : "s",
			r->build_pieces, r->build_pieces == 1 ? "" : "s",
			r->build_joined_events, r->build_rebuilt);
	else if (r->build_threads)
		fprintf(stderr, "  call trees built on %u thread%s\n",
			r->build_threads, r->build_threads == 1 ? "" : "s");
	if (a->between)
		fprintf(stderr,
			"  --between: kept %" PRIu64 " of %" PRIu64
			" slices in %" PRIu64 " region%s, %.3f ms in all\n",
			rg->slices_after, rg->slices_before, rg->regions,
			rg->regions == 1 ? "" : "s", (double)rg->kept_ns / 1e6);
	if (a->have_window)
		fprintf(stderr,
			"  --time: kept %" PRIu64 " of %" PRIu64
			" slices, %.3f ms from %.3f ms after the first\n",
			rg->slices_after, rg->slices_before,
			(double)(rg->end - rg->start) / 1e6,
			(double)(rg->start - rg->first) / 1e6);
	if (a->out && !a->split)
		fprintf(stderr, "  perfetto: %s  (open in ui.perfetto.dev)\n",
			a->out);
	if (sqlite)
		fprintf(stderr,
			"  sqlite:   %s  (sqlite3 %s 'SELECT * FROM slices "
			"ORDER BY dur DESC LIMIT 10')\n",
			sqlite, sqlite);
	if (r->nr_missing)
		fprintf(stderr, "  %zu binar%s missing (see above)\n",
			r->nr_missing, r->nr_missing == 1 ? "y" : "ies");
	if (top[0])
		fprintf(stderr, "  slowest:\n");
	for (size_t j = 0; j < 5 && top[j]; j++)
		fprintf(stderr, "    %10.3f us  %s  (tid %u)\n",
			(double)top[j]->dur / 1e3, mt_slice_str(t, top[j]),
			top_th[j]->tid);
}

/*
 * The slices Perfetto's UI loads on a typical machine: its trace
 * processor runs in the browser in about 2 GB, and on our traces it
 * takes 157 bytes a slice besides 43 MB (trace_processor_shell's peak
 * RSS on captures of 0.43M and 1.7M slices); 10M slices leave room for
 * the UI itself.
 */
#define UI_MAX_SLICES 10000000ull

/* The conversion's warnings: a line each on stderr. */
static void warn_line(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "%s\n", line);
}

/* Where the time went: the wall and CPU seconds of each stage that ran
 * (convert.h says which overlap and how each is counted), the peak RSS
 * in KiB at its end, the CPU seconds of the thread that ran it, and the
 * seconds its ordered writes waited on the disk. */
static void print_stages(const struct mt_convert_result *r)
{
	for (int s = 0; s < MT_STAGE_NR; s++)
		if (r->stages[s].ran)
			fprintf(stderr, "stage %s %.6f %.6f %ld %.6f %.6f\n",
				mt_convert_stage_name((enum mt_convert_stage)s),
				r->stages[s].wall_s, r->stages[s].cpu_s,
				r->stages[s].peak_kb, r->stages[s].own_cpu_s,
				r->stages[s].write_s);
}

/* What this program keeps while the conversion runs. */
struct run {
	struct progress prog;
	sigset_t held; /* the signal mask the commit found */
};

static int on_progress(void *ctx, uint64_t done, uint64_t total)
{
	return show_progress(&((struct run *)ctx)->prog, done, total);
}

static void on_stage(void *ctx, enum mt_convert_stage s)
{
	struct run *r = ctx;

	/* The progress line ends with the decode. */
	if (s == MT_STAGE_DECODE && r->prog.shown) {
		fputc('\n', stderr);
		r->prog.shown = 0;
	}
}

/* The handlers' view of the outputs: the count is 0 while the pointer
 * changes. */
static void on_outputs(void *ctx, const struct mt_outfile *f, size_t n,
		       bool parts)
{
	(void)ctx;
	if (parts) {
		sig_nr_parts = 0;
		sig_parts = f;
		sig_nr_parts = (sig_atomic_t)n;
	} else {
		sig_nr_outs = 0;
		sig_outs = f;
		sig_nr_outs = (sig_atomic_t)n;
	}
}

/* A fatal signal as the outputs are renamed waits until all are in
 * place (or all gone). */
static void on_commit(void *ctx, bool start)
{
	struct run *r = ctx;
	sigset_t fatal;

	if (start) {
		fatal_signal_set(&fatal);
		sigprocmask(SIG_BLOCK, &fatal, &r->held);
	} else {
		sigprocmask(SIG_SETMASK, &r->held, NULL);
	}
}

/* MT_UI_SLICES: another limit, for a machine that loads more (or for a
 * test). */
static uint64_t ui_max_slices(void)
{
	const char *env = getenv("MT_UI_SLICES");
	uint64_t most = UI_MAX_SLICES;

	if (env && mt_parse_u64(env, 10, UINT64_MAX - 1, &most))
		most = UI_MAX_SLICES;
	return most;
}

int main(int argc, char **argv)
{
	struct args a = {0};
	struct run run = {0};
	struct mt_convert_opts co = {0};
	struct mt_convert_result res;
	char err[1024] = "", *sqlite = NULL;
	int rc = 1, crc;

	/* Arrays of a MiB and more (a thread's slices, the pieces' events)
	 * straight from mmap rather than from the threads' arenas, whatever
	 * glibc's sliding threshold says: grown by mremap instead of copied
	 * into another chunk, and given back when freed instead of kept by
	 * the arena of the thread that freed them.  At -j 16 on the bench's
	 * 16 streams: 51.3 to 47.8 bytes a slice at peak. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
	wr_sqlite_setup();
	if (argc == 2 &&
	    (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		mt_version_print(stdout, "mt-convert");
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "--info")) {
		if (argc != 3 || argv[2][0] == '-') {
			fputs(usage, stderr);
			return 2;
		}
		if (report_print(stdout, argv[2], err, sizeof(err))) {
			fprintf(stderr, "mt-convert: %s\n", err);
			return 1;
		}
		return 0;
	}
	a.bins = calloc((size_t)argc, sizeof(*a.bins));
	if (!a.bins) {
		fputs("mt-convert: out of memory\n", stderr);
		return 1;
	}
	if (parse(argc, argv, &a)) {
		free(a.bins);
		free(a.tids);
		return 2;
	}
	if (mt_convert_result_init(&res)) {
		snprintf(err, sizeof(err), "%s: out of memory", a.capture);
		goto fail;
	}
	if (a.out && !a.no_sqlite) {
		sqlite = a.sqlite ? strdup(a.sqlite) : sqlite_path(a.out);
		if (!sqlite) {
			snprintf(err, sizeof(err), "%s: out of memory",
				 a.capture);
			goto fail;
		}
	}
	{
		/* With --split the parts are written instead, named after
		 * it. */
		const char *names[] = {
			a.capture, a.split ? NULL : a.out, sqlite,
			a.text && strcmp(a.text, "-") ? a.text : NULL};
		const char *what[] = {"the capture", "-o", "--sqlite",
				      "--text"};

		if (refuse_same_files(names, what, 4)) {
			rc = 2;
			goto out;
		}
	}
	{
		struct stat sb;

		/* A database named after a pipe or a device would land
		 * beside it (/dev/stdout.sqlite): asked for instead. */
		if (a.out && !a.sqlite && !a.no_sqlite && !stat(a.out, &sb) &&
		    !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
			fprintf(stderr,
				"mt-convert: -o %s is not a regular file: name "
				"the database with --sqlite PATH, or give "
				"--no-sqlite\n",
				a.out);
			rc = 2;
			goto out;
		}
	}
	if (!stat(a.capture, &sig_capture_st) &&
	    S_ISREG(sig_capture_st.st_mode)) {
		set_capture_changed_msg(a.capture);
		sig_capture = a.capture;
	}
	catch_fatal_signals();
	run.prog.start = mt_clock_ns(CLOCK_MONOTONIC);
	run.prog.tty = isatty(2);
	co = (struct mt_convert_opts){
		.capture = a.capture,
		.perfetto = a.out,
		.sqlite = sqlite,
		.text = a.text,
		.split = a.split,
		.no_compress = a.no_compress,
		.binary_dirs = a.bins,
		.nr_binary_dirs = a.nr_bins,
		.debug_root = a.debug_root,
		.jit_dir = a.jit_dir,
		.no_inline = a.no_inline,
		.jobs = a.jobs,
		.piece_size = (size_t)a.piece_size,
		.piece_events = (size_t)a.piece_events,
		.tids = a.tids,
		.nr_tids = a.nr_tids,
		.no_memory_check = a.no_memory_check,
		.max_memory = a.max_memory,
		.no_final_stack = a.no_final_stack,
		.no_goroutine_ids = a.no_goroutine_ids,
		.no_stitch = a.no_stitch,
		.window = a.have_window ? &a.window : NULL,
		.time = a.time,
		.between = a.between,
		.until = a.until,
		.ui_max_slices = ui_max_slices(),
		.warn = warn_line,
		.progress = on_progress,
		.on_stage = on_stage,
		.on_outputs = on_outputs,
		.on_commit = on_commit,
		.ctx = &run,
	};
	crc = mt_convert(&co, &res, err, sizeof(err));
	if (crc) {
		/* An output that cannot be written as it must be is a
		 * wrong argument, found before any work. */
		if (crc == -ESPIPE && res.failed == MT_STAGE_OUTPUTS)
			rc = 2;
		goto fail;
	}
	if (!a.quiet)
		summary(&res, &a, sqlite,
			mt_since_s(CLOCK_MONOTONIC, run.prog.start));
	if (!a.quiet && a.split)
		fprintf(stderr,
			"  perfetto: %s in parts of at most %" PRIu64
			" slices  (open each in ui.perfetto.dev)\n",
			a.out, a.split);
	if (a.stages)
		print_stages(&res);
	rc = 0;
	goto out;
fail:
	if (run.prog.shown)
		fputc('\n', stderr);
	fprintf(stderr, "mt-convert: %s%s\n", err,
		over_file_limit ? " (over the file size limit, ulimit -f)"
				: "");
out:
	mt_convert_result_free(&res);
	free(sqlite);
	free(a.bins);
	free(a.tids);
	return rc;
}
