/* SPDX-License-Identifier: MIT */
/*
 * mt-convert: a capture to a Perfetto trace and a SQLite database.
 *
 *   decode (pass 1) -> segments -> writers
 *
 * Every output is written under a temporary name and renamed into place
 * with the others only when all are complete, so an interrupted or failed
 * run leaves the previous outputs as they were and nothing half-written.
 */
#include "decode/decode.h"
#include "model/model.h"
#include "perfdata/perfdata.h"
#include "regions/regions.h"
#include "report/report.h"
#include "segments/segments.h"
#include "stitch/stitch.h"
#include "util/version.h"
#include "writers/writers.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
	"  --split N          write the Perfetto trace as parts of at most\n"
	"                     N slices each (TRACE.1.pftrace, ...), cut in\n"
	"                     time, each with the stack at its start\n"
	"  -q, --quiet        no summary\n";

struct args {
	const char *capture, *out, *sqlite, *text, *debug_root, *jit_dir;
	const char **bins;
	size_t nr_bins;
	uint32_t *tids;
	size_t nr_tids;
	int no_sqlite, no_final_stack, no_compress, no_stitch, no_inline, quiet;
	int no_memory_check;
	uint64_t max_memory; /* 0: what the system has */
	unsigned jobs;	     /* 0: one a core */
	uint64_t piece_size; /* 0: the decoder's default */
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

/*
 * Every --tid names a thread of the capture: one that is not there would
 * make an empty trace of a typo.  The line names those it has.
 */
static int check_tids(struct dec_capture *dc, const struct args *a, char *err,
		      size_t errlen)
{
	size_t n = dec_nr_threads(dc), nr = 0, at;
	uint32_t *have = malloc((n ? n : 1) * sizeof(*have));

	if (!have) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* A thread may be there twice: seen by its trace before its
	 * process was known. */
	for (size_t k = 0; k < n; k++)
		if (dec_thread_at(dc, k)->tid != (uint32_t)-1)
			have[nr++] = dec_thread_at(dc, k)->tid;
	qsort(have, nr, sizeof(*have), mt_cmp_u32);
	for (size_t i = 0; i < a->nr_tids; i++) {
		if (nr &&
		    bsearch(&a->tids[i], have, nr, sizeof(*have), mt_cmp_u32))
			continue;
		at = (size_t)snprintf(err, errlen,
				      "%s: --tid %u: no such thread in the "
				      "capture; its threads:",
				      a->capture, a->tids[i]);
		for (size_t k = 0, shown = 0; k < nr && at < errlen; k++) {
			if (k && have[k] == have[k - 1])
				continue;
			if (shown++ == 20) {
				snprintf(err + at, errlen - at, " ...");
				break;
			}
			at += (size_t)snprintf(err + at, errlen - at, " %u",
					       have[k]);
		}
		if (!nr && at < errlen)
			snprintf(err + at, errlen - at, " none");
		free(have);
		return -ENOENT;
	}
	free(have);
	return 0;
}

/* The trace has a slice of a thread --tid chose. */
static bool any_slice(const struct mt_trace *t)
{
	for (size_t i = 0; i < t->nr_threads; i++)
		if (t->threads[i].nr_slices)
			return true;
	return false;
}

/*
 * Peak memory per AUX byte, measured on dense synthetic captures (39
 * bytes; real ones with longer blocks need less: 15 on the benchmark):
 * decoding keeps every slice, about 110 bytes each, until the writers
 * are done.
 */
#define PEAK_BYTES_PER_AUX_BYTE 40
#define PEAK_FIXED_BYTES	(64ull << 20)

/* What this process may still use: MemAvailable, or less under a
 * ulimit -v or -d.  0 when unknown. */
static uint64_t memory_available(void)
{
	uint64_t avail = 0;
	struct rlimit rl;
	char line[256];
	FILE *f = fopen("/proc/meminfo", "r");

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long kb;

			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
				avail = (uint64_t)kb * 1024;
				break;
			}
		}
		fclose(f);
	}
	if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (!avail || rl.rlim_cur < avail))
		avail = rl.rlim_cur;
	if (!getrlimit(RLIMIT_DATA, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (!avail || rl.rlim_cur < avail))
		avail = rl.rlim_cur;
	return avail;
}

/* Said before decoding, rather than found by the kernel's OOM killer
 * after minutes of it. */
static int check_memory(struct dec_capture *dc, const struct args *a, char *err,
			size_t errlen)
{
	uint64_t aux = dec_aux_bytes(dc);
	uint64_t need = aux * PEAK_BYTES_PER_AUX_BYTE + PEAK_FIXED_BYTES;
	uint64_t avail = memory_available();

	if (a->max_memory && (!avail || a->max_memory < avail))
		avail = a->max_memory;

	if (a->no_memory_check || !avail || need <= avail)
		return 0;
	snprintf(err, errlen,
		 "%s: %.1f MB of trace%s needs about %.1f GB of memory to "
		 "convert and %.1f GB is available; convert some threads "
		 "with --tid TID,... (mt-convert --info lists them), or try "
		 "anyway with --no-memory-check",
		 a->capture, (double)aux / 1e6,
		 a->nr_tids ? " of those threads" : "", (double)need / 1e9,
		 (double)avail / 1e9);
	return -ENOMEM;
}

struct progress {
	struct timespec start;
	int tty, shown;
};

static double elapsed(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) +
	       (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

static int show_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	double t = elapsed(&p->start);

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
 * global: set up before the handler is installed, emptied before the
 * files are renamed or freed.
 */
static struct mt_outfile *sig_outs;
static volatile sig_atomic_t sig_nr_outs;
/* The same for the parts of --split, begun once their number is known. */
static struct mt_outfile *sig_parts;
static volatile sig_atomic_t sig_nr_parts;

static void on_fatal_signal(int sig)
{
	for (sig_atomic_t i = 0; i < sig_nr_outs; i++)
		if (sig_outs[i].tmp)
			unlink(sig_outs[i].tmp);
	for (sig_atomic_t i = 0; i < sig_nr_parts; i++)
		if (sig_parts[i].tmp)
			unlink(sig_parts[i].tmp);
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
		for (sig_atomic_t i = 0; i < sig_nr_outs; i++)
			if (sig_outs[i].tmp)
				unlink(sig_outs[i].tmp);
		for (sig_atomic_t i = 0; i < sig_nr_parts; i++)
			if (sig_parts[i].tmp)
				unlink(sig_parts[i].tmp);
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

/* The SQLite database is written on a second thread while the Perfetto
 * trace is written on the first: both only read the model. */
struct sqlite_job {
	const struct mt_trace *t;
	struct mt_outfile *f;
	struct wr_sqlite_opts o;
	int rc;
	char err[512];
};

static void *write_sqlite(void *arg)
{
	struct sqlite_job *j = arg;

	j->rc = wr_sqlite_to_opts(j->t, j->f, &j->o, NULL, j->err,
				  sizeof(j->err));
	if (!j->rc)
		j->rc = mt_outfile_sync(j->f, j->err, sizeof(j->err));
	return NULL;
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

static void summary(const struct mt_trace *t, struct dec_capture *dc,
		    const struct args *a, const struct rg_stats *rg,
		    const char *sqlite, double secs)
{
	const struct dec_stats *ds = dec_stats(dc);
	const struct mt_slice *top[5] = {0};
	const struct mt_thread *top_th[5] = {0};
	uint64_t slices = 0, gaps = 0, first, last;

	for (size_t i = 0; i < t->nr_threads; i++) {
		const struct mt_thread *th = &t->threads[i];

		for (size_t k = 0; k < th->nr_slices; k++) {
			const struct mt_slice *s = &th->slices[k];

			slices++;
			if (s->flags & MT_SLICE_GAP) {
				gaps++;
				continue;
			}
			if (s->flags & (MT_SLICE_SYSCALL | MT_SLICE_UNTRACED))
				continue;
			/* keep the five longest, longest first */
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
	dec_span(dc, &first, &last);
	fprintf(stderr,
		"%zu thread%s, %" PRIu64 " slices, %" PRIu64
		" decode gap%s, %.3f ms traced; %.1f MB of trace in %.2fs\n",
		t->nr_threads, t->nr_threads == 1 ? "" : "s", slices, gaps,
		gaps == 1 ? "" : "s", (double)(last - first) / 1e6,
		(double)ds->aux_bytes / 1e6, secs);
	if (ds->pieces)
		fprintf(stderr,
			"  decoded in %" PRIu64
			" pieces on %u threads, %" PRIu64
			" of them joined to the piece before\n",
			ds->pieces, ds->threads, ds->joined);
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
	if (dec_nr_missing(dc))
		fprintf(stderr, "  %zu binar%s missing (see above)\n",
			dec_nr_missing(dc),
			dec_nr_missing(dc) == 1 ? "y" : "ies");
	if (top[0])
		fprintf(stderr, "  slowest:\n");
	for (size_t j = 0; j < 5 && top[j]; j++)
		fprintf(stderr, "    %10.3f us  %s  (tid %u)\n",
			(double)top[j]->dur / 1e3, mt_slice_str(t, top[j]),
			top_th[j]->tid);
}

enum { OUT_PERFETTO, OUT_SQLITE, OUT_TEXT, NR_OUTS };

/*
 * The slices Perfetto's UI loads on a typical machine: its trace
 * processor runs in the browser in about 2 GB, and on our traces it
 * takes 157 bytes a slice besides 43 MB (trace_processor_shell's peak
 * RSS on captures of 0.43M and 1.7M slices); 10M slices leave room for
 * the UI itself.
 */
#define UI_MAX_SLICES 10000000ull

/* trace.pftrace -> trace.K.pftrace; other names get .K appended. */
static char *part_path(const char *out, size_t k)
{
	size_t n = strlen(out);
	char *p;

	if (n > 8 && !strcmp(out + n - 8, ".pftrace"))
		return asprintf(&p, "%.*s.%zu.pftrace", (int)(n - 8), out, k) <
				       0
			       ? NULL
			       : p;
	return asprintf(&p, "%s.%zu", out, k) < 0 ? NULL : p;
}

/*
 * --split: the trace cut into parts (regions/), each begun as an output
 * of its own and written and synced in turn; committed with the other
 * outputs by the caller, which aborts them on failure.
 */
static int write_parts(const struct mt_trace *t, const struct args *a,
		       const struct wr_perfetto_opts *po,
		       struct mt_outfile **parts, size_t *nr_parts, char *err,
		       size_t errlen)
{
	uint64_t *cuts = NULL;
	size_t n = 0;
	int rc = rg_split_plan(t, a->split, &cuts, &n, err, errlen);

	if (rc == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (!rc && !(*parts = calloc(n + 1, sizeof(**parts)))) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
	if (!rc)
		sig_parts = *parts;
	for (size_t k = 0; !rc && k < n; k++) {
		struct mt_trace view;
		char *path = part_path(a->out, k + 1);

		if (!path) {
			snprintf(err, errlen, "out of memory");
			rc = -ENOMEM;
			break;
		}
		rc = mt_outfile_begin(&(*parts)[k], path, err, errlen);
		free(path);
		if (rc)
			break;
		*nr_parts = k + 1;
		sig_nr_parts = (sig_atomic_t)*nr_parts;
		rc = rg_part(t, cuts[k], cuts[k + 1], &view);
		if (rc) {
			snprintf(err, errlen, "out of memory");
			break;
		}
		rc = wr_perfetto_to(&view, &(*parts)[k], po, NULL, err, errlen);
		rg_part_free(&view);
		if (!rc)
			rc = mt_outfile_sync(&(*parts)[k], err, errlen);
	}
	free(cuts);
	return rc;
}

/* One line when the trace is more than the UI loads, with the ways
 * through. */
static void warn_big(const struct mt_trace *t, const struct args *a)
{
	const char *env = getenv("MT_UI_SLICES");
	uint64_t n = 0, most = UI_MAX_SLICES;

	/* MT_UI_SLICES: another limit, for a machine that loads more (or
	 * for a test). */
	if (env && mt_parse_u64(env, 10, UINT64_MAX - 1, &most))
		most = UI_MAX_SLICES;
	for (size_t i = 0; i < t->nr_threads; i++)
		n += t->threads[i].nr_slices;
	if (n > most)
		fprintf(stderr,
			"mt-convert: %s: %" PRIu64 " slices, more than the "
			"Perfetto UI loads on a typical machine (about "
			"%" PRIu64 "): open it through trace_processor "
			"--httpd, or write it in parts with --split %" PRIu64
			"\n",
			a->out, n, most, most);
}

/* Stitching asks the decoder's code whether a frame can be seen again,
 * and whether it can make a call. */
static bool never_reaches(void *capture, uint32_t pid, uint64_t from,
			  uint64_t to, bool ret_to)
{
	return dec_never_reaches(capture, pid, from, to, ret_to);
}

static enum stitch_calls calls_to(void *capture, uint32_t pid, uint64_t from,
				  uint64_t callee)
{
	switch (dec_calls_to(capture, pid, from, callee)) {
	case DEC_CALLS_NEVER:
		return STITCH_CALLS_NEVER;
	case DEC_CALLS_SURE:
		return STITCH_CALLS_SURE;
	default:
		return STITCH_CALLS_MAYBE;
	}
}

/* Joins that do not make a tree are our fault, not the capture's: the
 * thread is shown unstitched rather than the conversion failed. */
static void warn_unstitched(void *capture, uint32_t tid, const char *why)
{
	fprintf(stderr,
		"mt-convert: %s: stitching made an inconsistent tree (%s: a "
		"bug worth reporting); thread %u left unstitched\n",
		(const char *)capture, why, tid);
}

int main(int argc, char **argv)
{
	struct args a = {0};
	struct dec_opts dopts = {0};
	struct seg_opts sopts = {0};
	struct progress prog = {0};
	struct dec_capture *dc = NULL;
	struct seg_all *segs = NULL;
	struct seg_pipe *sp = NULL;
	struct seg_ends_table ends = {0};
	struct rg_stats rg = {0};
	struct mt_trace t;
	struct pd_err perr = {0};
	struct mt_outfile outs[NR_OUTS] = {0};
	const char *out_names[NR_OUTS] = {0};
	size_t nr_outs = 0;
	char err[1024] = "", *sqlite = NULL;
	struct mt_outfile *parts = NULL;
	size_t nr_parts = 0;
	int rc = 1;

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
		if (report_print(stdout, argv[2], &perr)) {
			fprintf(stderr, "mt-convert: %s\n", perr.msg);
			return 1;
		}
		return 0;
	}
	a.bins = calloc((size_t)argc, sizeof(*a.bins));
	if (!a.bins)
		return 1;
	if (parse(argc, argv, &a)) {
		free(a.bins);
		free(a.tids);
		return 2;
	}
	mt_trace_init(&t);
	if (a.out && !a.no_sqlite) {
		sqlite = a.sqlite ? strdup(a.sqlite) : sqlite_path(a.out);
		if (!sqlite)
			goto oom;
	}
	/* With --split the parts are written instead, named after it. */
	out_names[OUT_PERFETTO] = a.split ? NULL : a.out;
	out_names[OUT_SQLITE] = sqlite;
	out_names[OUT_TEXT] = a.text && strcmp(a.text, "-") ? a.text : NULL;
	{
		const char *names[] = {a.capture, out_names[OUT_PERFETTO],
				       out_names[OUT_SQLITE],
				       out_names[OUT_TEXT]};
		const char *what[] = {"the capture", "-o", "--sqlite",
				      "--text"};

		if (refuse_same_files(names, what, NR_OUTS + 1)) {
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
	/* Every output is created (empty, under its temporary name) before
	 * the conversion, so that one that cannot be written is found now,
	 * and a signal from here on takes them away. */
	sig_outs = outs;
	if (!stat(a.capture, &sig_capture_st) &&
	    S_ISREG(sig_capture_st.st_mode)) {
		set_capture_changed_msg(a.capture);
		sig_capture = a.capture;
	}
	catch_fatal_signals();
	for (size_t i = 0; i < NR_OUTS; i++) {
		int brc;

		if (!out_names[i])
			continue;
		/* The database is written with seeks; the trace and the
		 * text go out in order, into a pipe or a device too. */
		brc = i == OUT_SQLITE
			      ? mt_outfile_begin(&outs[i], out_names[i], err,
						 sizeof(err))
			      : mt_outfile_begin_stream(&outs[i], out_names[i],
							err, sizeof(err));
		if (brc) {
			rc = brc == -ESPIPE ? 2 : 1;
			goto fail;
		}
		nr_outs = i + 1;
		sig_nr_outs = (sig_atomic_t)nr_outs;
	}
	clock_gettime(CLOCK_MONOTONIC, &prog.start);
	prog.tty = isatty(2);
	dopts.binary_dirs = a.bins;
	dopts.nr_binary_dirs = a.nr_bins;
	dopts.debug_root = a.debug_root;
	dopts.jit_dir = a.jit_dir;
	dopts.progress = show_progress;
	dopts.progress_ctx = &prog;
	dopts.warn = stderr;
	dopts.tids = a.tids;
	dopts.nr_tids = a.nr_tids;
	dopts.jobs = a.jobs;
	dopts.piece_size = (size_t)a.piece_size;
	dopts.no_inline = a.no_inline;
	sopts.no_final_stack = a.no_final_stack;

	if (dec_open(&dc, a.capture, &dopts, err, sizeof(err)))
		goto fail;
	snprintf(t.recorded_by, sizeof(t.recorded_by), "%s",
		 dec_recorded_by(dc));
	if (check_tids(dc, &a, err, sizeof(err)))
		goto fail;
	if (check_memory(dc, &a, err, sizeof(err)))
		goto fail;
	/* The segments' ends are kept for stitching only. */
	if (seg_all_new(&segs, dc, &t, a.no_stitch ? NULL : &ends, &sopts))
		goto oom;
	/* Building on a core of its own while this thread decodes, or on
	 * this one when no thread can be had.  Where the decode runs on
	 * threads of its own, this thread only hands their events over and
	 * builds from them itself: a third thread would only copy each
	 * event once more (on the bench capture, 8% more time and 7% more
	 * CPU with it). */
	if (dec_runs_aside(dc) || seg_pipe_start(&sp, segs))
		dec_set_sink(dc, seg_all_sink, segs);
	else
		dec_set_sink(dc, seg_pipe_sink, sp);
	{
		int drc = dec_run(dc, err, sizeof(err)), prc = seg_pipe_end(sp);

		sp = NULL;
		if (drc)
			goto fail;
		if (prc)
			goto oom;
	}
	if (prog.shown)
		fputc('\n', stderr);
	if (seg_all_finish(segs, err, sizeof(err)))
		goto fail;
	seg_all_free(segs);
	segs = NULL;
	if (!a.no_stitch) {
		struct stitch_opts so = {.unstitched = warn_unstitched,
					 .ctx = (void *)a.capture,
					 .never_reaches = never_reaches,
					 .calls_to = calls_to,
					 .code_ctx = dc};

		if (stitch_trace(&t, &ends, &so, err, sizeof(err)))
			goto fail;
		seg_ends_free(&ends);
	}
	if (seg_add_hits(dc, &t))
		goto oom;
	/* A filter that leaves nothing says why, rather than replace the
	 * outputs with an empty trace. */
	if (a.nr_tids && !any_slice(&t)) {
		int at = snprintf(err, sizeof(err), "%s: --tid", a.capture);

		for (size_t i = 0; i < a.nr_tids && at < (int)sizeof(err); i++)
			at += snprintf(err + at, sizeof(err) - (size_t)at,
				       "%s%u", i ? "," : " ", a.tids[i]);
		if (at < (int)sizeof(err))
			snprintf(err + at, sizeof(err) - (size_t)at,
				 ": the capture has no trace of th%s",
				 a.nr_tids == 1 ? "at thread" : "ose threads");
		goto fail;
	}
	if (a.have_window) {
		if (rg_keep_time(&t, &a.window, &rg))
			goto oom;
		if (!rg.regions && rg.slices_before) {
			snprintf(err, sizeof(err),
				 "%s: --time %s: the window starts after the "
				 "trace ends (it lasts %.3f ms)",
				 a.capture, a.time,
				 (double)(rg.end - rg.first) / 1e6);
			goto fail;
		}
		if (!rg.regions) {
			snprintf(err, sizeof(err),
				 "%s: --time %s: the trace has no slices",
				 a.capture, a.time);
			goto fail;
		}
	}
	if (a.between) {
		/* The name the trace lacks, START or STOP. */
		bool stop = false;

		if (rg_keep_between(&t, a.between, a.until, &rg))
			goto oom;
		stop = rg.start_calls && !rg.stop_calls;
		if (!rg.regions) {
			snprintf(err, sizeof(err),
				 "%s: %s %s: no call of %s in the trace%s",
				 a.capture, stop ? "--until" : "--between",
				 stop ? a.until : a.between,
				 stop ? a.until : a.between,
				 a.nr_tids ? " of the threads chosen" : "");
			goto fail;
		}
	}
	if (a.text) {
		int trc = out_names[OUT_TEXT]
				  ? wr_text_to(&t, &outs[OUT_TEXT], NULL, err,
					       sizeof(err))
				  : wr_text(&t, "-", NULL, err, sizeof(err));

		if (trc)
			goto fail;
	}
	if (a.out && !a.split)
		warn_big(&t, &a);
	{
		struct wr_perfetto_opts po = {.no_compress = a.no_compress,
					      .jobs = mt_nr_cores(a.jobs)};
		struct sqlite_job job = {.t = &t,
					 .f = &outs[OUT_SQLITE],
					 .o.jobs = mt_nr_cores(a.jobs)};
		pthread_t th;
		bool threaded = false;
		int prc = 0;

		if (sqlite) {
			threaded =
				!pthread_create(&th, NULL, write_sqlite, &job);
			if (!threaded)
				write_sqlite(&job);
		}
		/* Each output is synced as soon as it is written, while the
		 * other is still being written, rather than both after. */
		if (a.out && !a.split)
			prc = wr_perfetto_to(&t, &outs[OUT_PERFETTO], &po, NULL,
					     err, sizeof(err));
		else if (a.split)
			prc = write_parts(&t, &a, &po, &parts, &nr_parts, err,
					  sizeof(err));
		if (a.out && !a.split && !prc)
			prc = mt_outfile_sync(&outs[OUT_PERFETTO], err,
					      sizeof(err));
		if (threaded)
			pthread_join(th, NULL);
		/* The outputs belong together: one that failed keeps the
		 * others from replacing what was there before. */
		if (prc)
			goto fail;
		if (sqlite && job.rc) {
			snprintf(err, sizeof(err), "%s", job.err);
			goto fail;
		}
	}
	{
		/* Only the outputs written, in order, without gaps. */
		struct mt_outfile *done =
			calloc(NR_OUTS + nr_parts, sizeof(*done));
		size_t n = 0;

		sigset_t fatal, old;
		int crc;

		if (!done)
			goto oom;
		for (size_t i = 0; i < nr_outs; i++)
			if (outs[i].path)
				done[n++] = outs[i];
		for (size_t i = 0; i < nr_parts; i++)
			done[n++] = parts[i];
		/* A signal now would find some outputs renamed and others
		 * not: it waits until all are in place (or all gone). */
		fatal_signal_set(&fatal);
		sigprocmask(SIG_BLOCK, &fatal, &old);
		sig_nr_outs = 0;
		sig_nr_parts = 0;
		memset(outs, 0, sizeof(outs));
		nr_outs = 0;
		free(parts);
		parts = NULL;
		nr_parts = 0;
		crc = mt_outfile_commit_all(done, n, err, sizeof(err));
		sigprocmask(SIG_SETMASK, &old, NULL);
		free(done);
		if (crc)
			goto fail;
	}
	if (!a.quiet)
		summary(&t, dc, &a, &rg, sqlite, elapsed(&prog.start));
	if (!a.quiet && a.split)
		fprintf(stderr,
			"  perfetto: %s in parts of at most %" PRIu64
			" slices  (open each in ui.perfetto.dev)\n",
			a.out, a.split);
	rc = 0;
	goto out;
oom:
	snprintf(err, sizeof(err), "out of memory");
fail:
	if (prog.shown)
		fputc('\n', stderr);
	fprintf(stderr, "mt-convert: %s%s\n", err,
		over_file_limit ? " (over the file size limit, ulimit -f)"
				: "");
out:
	sig_nr_outs = 0;
	for (size_t i = 0; i < nr_outs; i++)
		mt_outfile_abort(&outs[i]);
	sig_nr_parts = 0;
	for (size_t i = 0; i < nr_parts; i++)
		mt_outfile_abort(&parts[i]);
	free(parts);
	seg_all_free(segs);
	seg_ends_free(&ends);
	dec_free(dc);
	mt_trace_free(&t);
	free(sqlite);
	free(a.bins);
	free(a.tids);
	return rc;
}
