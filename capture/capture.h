/*
 * capture: recording Intel PT, natively or by emulation.
 */
#ifndef MT_CAPTURE_H
#define MT_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---------------------------------------------------------------- */
/* The emulation backend                                              */

/* What both backends are asked: where the capture goes, what to trace,
 * when to stop and when to snapshot. */
struct capture_opts {
	const char *output; /* the capture file to write */
	/* Attach to this running process (all its threads) instead of
	 * starting argv; 0: start argv. */
	int pid;
	const volatile int *stop; /* becomes non-zero to stop (Ctrl-C) */
	/* --snapshot-size: keep only the newest bytes of trace per thread
	 * (per CPU with per_cpu), as the hardware's ring does; 0: the
	 * backend's default (everything when emulating; see
	 * hw_aux_size()). */
	uint64_t snapshot_size;
	/* Snapshot when a thread reaches this symbol of the executable
	 * ("addr:0x..." for an address, or FILE:LINE); NULL:
	 * mt_snapshot_point when the program has it
	 * (include/magic_trace.h), else none. */
	const char *trigger;
	/* Only a hit at least this long (ns) after the program's
	 * mt_mark_start() snapshots (0: every hit). */
	uint64_t duration_thresh;
	/* Every hit appends a snapshot and tracing goes on (else the first
	 * hit ends the capture). */
	bool multi_snapshot;
};

struct emu_opts {
	struct capture_opts cap;
	const char *start_at; /* symbol to start at; "" = at exec;
				 NULL = "main" */
	bool noretcomp;
	/* Also write every call the emulator saw, in mt-synth's truth.tsv
	 * format, here (NULL: no). */
	const char *truth;
	/* Emulate trace overflows: about every drop_every branches the
	 * packets of 1..48 branches are lost, then OVF and FUP (0: none);
	 * drop_seed seeds the choice.  gaps: where to list them, in
	 * mt-synth's gaps.tsv form (NULL: nowhere). */
	uint64_t drop_every, drop_seed;
	const char *gaps;
};

struct emu_stats {
	uint64_t insns, branches, threads, aux_bytes;
	double seconds;
	int killed_by;	   /* the signal the program died of, or 0 */
	char warning[256]; /* something the user should know, or "" */
};

/*
 * Run argv[0] with argv (or attach to o->cap.pid) under the emulator, tracing
 * every thread from
 * start_at until every thread has exited or *stop is set, then detach and
 * write the capture (also after an error, with what was traced).
 * Returns 0, or a negative code with one line in err.
 */
int emu_run(char *const argv[], const struct emu_opts *o, struct emu_stats *st,
	    char *err, size_t errlen);

/* ---------------------------------------------------------------- */
/* Triggers and stacks, for every backend                             */

/*
 * Is spec a FILE:LINE trigger ("demo.c:42")?  If so, its parts go to
 * file (filelen bytes; NULL: only *line) and *line.  "addr:0x..." and symbols
 * are not.
 */
bool line_trigger_spec(const char *spec, char *file, size_t filelen,
		       unsigned *line);
/*
 * The runtime addresses in process pid where FILE:LINE spec begins (see
 * sym_line_addrs), from the DWARF line tables of its executable exe, or,
 * when those know no such file, of the one shared library mapped now that
 * does.  Returns 0 with *n > 0 addresses in *addrs (malloc'd, the caller
 * frees), or a negative code with one line in err that lists the
 * candidates (the nearest lines with code, or the files the name fits).
 */
int line_trigger_resolve(pid_t pid, const char *exe, const char *spec,
			 uint64_t **addrs, size_t *n, char *err, size_t errlen);

/*
 * The call stack of thread tid of process pid, which the caller holds
 * stopped under ptrace, unwound with the modules' CFI (libdw): leaf first,
 * the IP then return addresses, at most max of them in ips, the count in
 * *n.  Returns 0, or a negative code with one line in err (nothing usable
 * in ips then).
 */
int unwind_thread(pid_t pid, pid_t tid, uint64_t *ips, size_t max, size_t *n,
		  char *err, size_t errlen);
/*
 * The same from a sample instead of a stopped thread: the registers
 * (BP_NR_REGS, DWARF numbering) and a copy of the stack from rsp on, of
 * thread tid of process pid, whose modules maps names (the text of
 * /proc/PID/maps, or lines like it): the process may be gone by now.
 */
int unwind_sample(pid_t pid, pid_t tid, const char *maps, const uint64_t *regs,
		  const uint8_t *stack, size_t stack_len, uint64_t *ips,
		  size_t max, size_t *n, char *err, size_t errlen);

/* ---------------------------------------------------------------- */
/* Where triggers and filters land (symaddr.c), for both backends     */

/*
 * The runtime address of function sym of exe as process pid maps it
 * ("addr:0x..." is an address already).  Returns 0, -ENOENT when there is
 * no such symbol (err lists the near names), -EINVAL when several
 * functions share the name (err lists their addresses), or another
 * negative code.
 */
int symaddr_resolve(pid_t pid, const char *exe, const char *sym, uint64_t *out,
		    char *err, size_t errlen);
/* The runtime address of data object name of exe in pid, or 0. */
uint64_t symaddr_object(pid_t pid, const char *exe, const char *name);
/*
 * --filter: "START-STOP@FILE[,...]" (START and STOP each a function of
 * FILE or a hex address as nm shows it; FUNC@FILE alone is that
 * function) as the kernel's address-filter string, file offsets and
 * absolute paths ("filter 0x1130/0x40@/path,...").  *nranges: how many.
 */
int symaddr_filters(const char *spec, char *out, size_t outlen,
		    unsigned *nranges, char *err, size_t errlen);
/* The file runtime address addr of pid comes from, and its offset there. */
int symaddr_file_offset(pid_t pid, uint64_t addr, char *path, size_t pathlen,
			uint64_t *off, char *err, size_t errlen);
/* --stop-at-trigger: a TraceStop range on runtime address addr of pid
 * ("stop 0x1139/1@/path"). */
int symaddr_stop_filter(pid_t pid, uint64_t addr, char *out, size_t outlen,
			char *err, size_t errlen);

/* ---------------------------------------------------------------- */
/* The intel_pt PMU (sysfs) and the config a recording asks of it     */

#define PMU_MAX_FIELDS 48

struct pt_field {
	char name[32];
	uint8_t lo, hi; /* bits of perf_event_attr.config */
};

struct pt_pmu {
	uint32_t type;
	struct pt_field fields[PMU_MAX_FIELDS];
	size_t nr_fields;
	bool psb_cyc, mtc, ptwrite, ip_filtering;
	uint32_t mtc_periods, cycle_thresholds, psb_periods; /* bitmaps */
	uint32_t num_address_ranges;
	uint32_t max_nonturbo_ratio;
};

enum pt_timing {
	PT_TIMING_LOW,	  /* TSC only */
	PT_TIMING_NORMAL, /* + MTC and CYC */
	PT_TIMING_HIGH,	  /* + no compressed returns */
};

struct pt_request {
	enum pt_timing timing;
	bool custom; /* use the fields below as they are */
	bool tsc, mtc, cyc, noretcomp;
	unsigned mtc_period, cyc_thresh, psb_period;
};

/* Read the PMU at dir (/sys/bus/event_source/devices/intel_pt).
 * Returns 0, or a negative code with one line in err. */
int pmu_probe(const char *dir, struct pt_pmu *p, char *err, size_t errlen);
const struct pt_field *pmu_field(const struct pt_pmu *p, const char *name);
/*
 * --timing-custom "tsc=1,mtc=1,mtc_period=3,cyc=1,cyc_thresh=2": the raw
 * fields into r (custom set; fields not named are 0).  Only the syntax
 * is checked here; pmu_config() checks the values against the caps.
 */
int pmu_parse_custom(const char *spec, struct pt_request *r, char *err,
		     size_t errlen);
/* The config for a request, checked against the caps. */
int pmu_config(const struct pt_pmu *p, const struct pt_request *r,
	       uint64_t *config, char *err, size_t errlen);
/* nranges address ranges (--filter, --stop-at-trigger): what the caps
 * allow? */
int pmu_check_filters(const struct pt_pmu *p, unsigned nranges, char *err,
		      size_t errlen);
/*
 * --include-kernel: may this process trace the kernel?  paranoid is
 * the path of perf_event_paranoid, cap_eff the effective capability set
 * (pmu_effective_caps()).  Returns 0, or -EACCES with what is missing.
 */
int pmu_check_kernel(const char *paranoid, uint64_t cap_eff, char *err,
		     size_t errlen);
uint64_t pmu_effective_caps(void);
/* Copy an AUX ring of size bytes whose aux_head is head (a position, in
 * overwrite mode) into out, oldest byte first; returns the bytes copied. */
size_t pmu_ring_copy(const uint8_t *ring, size_t size, uint64_t head,
		     uint8_t *out);
/* The same for the bytes written since position since only (at most
 * the ring's size): --multi-snapshot takes only what is new. */
size_t pmu_ring_copy_since(const uint8_t *ring, size_t size, uint64_t head,
			   uint64_t since, uint8_t *out);

/* ---------------------------------------------------------------- */
/* The trigger: a hardware breakpoint on every thread (breakpoint.c)  */

/* The user registers a hit samples, in DWARF's x86-64 numbering (rax,
 * rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8..r15, rip): what an unwinder
 * starts from. */
#define BP_NR_REGS 17

/* One hit, as the kernel sampled it. */
struct bp_hit {
	pid_t pid, tid;
	uint64_t time; /* perf time (ns) */
	uint64_t ip;
	uint64_t di, si; /* the stub's arguments: arg and mark_start_ns */
	uint64_t regs[BP_NR_REGS];
	uint8_t *stack; /* the top of the user stack from rsp, owned */
	size_t stack_len;
};

/* Free what a hit owns (its stack copy). */
void bp_hit_release(struct bp_hit *h);

struct bp_set;

enum bp_kind {
	BP_HARDWARE, /* a debug register: no cost until it fires */
	BP_UPROBE,   /* the kernel's int3 and single-step: works where the
			debug registers do not fire, costs a trap per hit */
};

/*
 * A trigger at runtime address addr of process pid: a hardware execute
 * breakpoint (PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X) or a uprobe, each
 * sampling IP, TID, TIME and the user registers DI and SI, on the
 * threads tids[0..n).  per_cpu: one event per CPU and thread, inherited
 * by the threads they create, sharing one ring per CPU; else (and for
 * uprobes, which cannot be inherited) one event per thread.  Returns 0,
 * or a negative code with one line in err.
 */
int bp_open(struct bp_set **out, enum bp_kind kind, pid_t pid, uint64_t addr,
	    const pid_t *tids, size_t n, bool per_cpu, char *err,
	    size_t errlen);
/* Does an execute breakpoint fire here?  Some virtual machines accept
 * the event and never fire it.  0, or -ENOTSUP (or the open's code)
 * with why in err. */
int bp_probe(char *err, size_t errlen);
/* Add a thread (once; again is a no-op).  Needed for every new thread
 * unless bp_inherits(). */
int bp_add_thread(struct bp_set *b, pid_t tid, char *err, size_t errlen);
/* Do new threads get the trigger by themselves?  Per CPU, except for
 * uprobes, which are always per thread (bp_open). */
bool bp_inherits(const struct bp_set *b);
/* The fds to poll for hits; *n of them. */
const int *bp_fds(const struct bp_set *b, size_t *n);
/* Move the hits sampled so far into hits[0..max); returns how many. */
size_t bp_read(struct bp_set *b, struct bp_hit *hits, size_t max);
void bp_free(struct bp_set *b);

/* ---------------------------------------------------------------- */
/* The hardware backend                                               */

struct hw_opts {
	struct capture_opts cap;
	const char *sysfs; /* the intel_pt PMU's sysfs directory */
	struct pt_request req;
	bool per_cpu; /* one ring per CPU (else one per thread) */
	bool full;    /* record everything (else keep the newest) */
	bool include_kernel;
	const char *paranoid; /* perf_event_paranoid's path */
	const char *filter;   /* --filter spec, or NULL */
	bool stop_at_trigger;
	/* No AUX area: for tests where a software event, described by a
	 * fake sysfs tree, stands in for intel_pt (everything but the
	 * trace itself then runs on a machine without Intel PT). */
	bool sideband_only;
};

/* The AUX area hw_run() maps per thread or CPU for snapshot_size: a
 * power of two of pages, at least snapshot_size (4 MiB for 0). */
uint64_t hw_aux_size(uint64_t snapshot_size);

struct hw_stats {
	uint64_t threads, aux_bytes, hits, snapshots;
	uint64_t truncated; /* AUX records with data lost (--full) */
	int killed_by;	    /* the signal a program we started died of, or 0 */
	char warning[256];  /* something the user should know, or "" */
};

/*
 * Run argv (or attach to o->cap.pid) under Intel PT, and at its end, on *stop
 * or at the trigger write the trace (the newest, or all of it with
 * o->full) with its sideband and the trigger's hits.  Returns 0, or a
 * negative code with one line in err.
 */
int hw_run(char *const argv[], const struct hw_opts *o, struct hw_stats *st,
	   char *err, size_t errlen);

#endif
