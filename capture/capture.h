/* SPDX-License-Identifier: MIT */
/*
 * capture: recording Intel PT, natively (hw_run) or by emulation
 * (emu_run, vg_run), into a capture file mt-convert reads.  The only
 * header of capture/ for the rest of the tree; what the backends share
 * (target_internal.h, capfile_internal.h, pmu_internal.h, ...) is for
 * capture/ and its unit tests.
 */
#ifndef MT_CAPTURE_H
#define MT_CAPTURE_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "perfdata/perfdata.h"

/* The intel_pt PMU as sysfs describes it, and the config a recording
 * asks of it (pmu.c). */

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
	/* --ptwrite: PTW packets with the FUP that gives their IP (any
	 * timing, custom or not) */
	bool ptwrite;
};

/* Read the PMU at dir (/sys/bus/event_source/devices/intel_pt).
 * Returns 0, or a negative code with one line in err. */
int pmu_probe(const char *dir, struct pt_pmu *p, char *err, size_t errlen);
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
/*
 * --include-kernel: may this process trace the kernel?  paranoid is
 * the path of perf_event_paranoid, cap_eff the effective capability set
 * (pmu_effective_caps()).  Returns 0, or -EACCES with what is missing.
 */
int pmu_check_kernel(const char *paranoid, uint64_t cap_eff, char *err,
		     size_t errlen);
uint64_t pmu_effective_caps(void);
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

/* The emulation backend (emulate.c). */
struct emu_opts {
	struct capture_opts cap;
	const char *start_at; /* symbol to start at; "" = at exec;
				 NULL = "main" */
	bool noretcomp;
	/* --ptwrite: a call of the program's mt_ptwrite() (magic_trace.h)
	 * writes its value into the trace, as PTWRITE does on hardware. */
	bool ptwrite;
	/* Also write every call the emulator saw, in mt-synth's truth.tsv
	 * format, here (NULL: no). */
	const char *truth;
	/* Emulate trace overflows: about every drop_every branches the
	 * packets of 1..48 branches are lost, then OVF and FUP (0: none);
	 * drop_seed seeds the choice.  gaps: where to list them, in
	 * mt-synth's gaps.tsv form (NULL: nowhere). */
	uint64_t drop_every, drop_seed;
	const char *gaps;
	/* The processes the program forks are traced too, each thread in
	 * the capture as perf's inherit has it (the Valgrind backend). */
	bool follow_children;
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

/*
 * The same, the program (argv, not -p) run under Valgrind with the tool
 * of vgtool/ (vg_capture.c): every option of emu_opts.  The "TSC" is virtual:
 * one instruction a nanosecond, plus the wall time of system calls.
 */
int vg_run(char *const argv[], const struct emu_opts *o, struct emu_stats *st,
	   char *err, size_t errlen);

/* The hardware backend (hwpt.c). */
struct hw_opts {
	struct capture_opts cap;
	const char *sysfs; /* the intel_pt PMU's sysfs directory */
	struct pt_request req;
	bool per_cpu; /* one ring per CPU (else one per thread) */
	bool full;    /* record everything (else keep the newest) */
	bool include_kernel;
	const char *proc_root; /* where kallsyms, modules, kcore are */
	const char *paranoid;  /* perf_event_paranoid's path */
	const char *filter;    /* --filter spec, or NULL */
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
	/* With include_kernel, what kernel code lacks to decode, or "". */
	char kernel_note[320];
};

/*
 * Run argv (or attach to o->cap.pid) under Intel PT, and at its end, on *stop
 * or at the trigger write the trace (the newest, or all of it with
 * o->full) with its sideband and the trigger's hits.  Returns 0, or a
 * negative code with one line in err.
 */
int hw_run(char *const argv[], const struct hw_opts *o, struct hw_stats *st,
	   char *err, size_t errlen);

/* Where execvp() finds prog: as it is when the name has a slash, else the
 * first executable regular file of that name along PATH.  false when
 * there is none: the launch says why. */
bool capture_find_program(const char *prog, char *path, size_t len);
/* /proc/PID/exe into exe, and the command name the kernel gives an exec
 * of it (the file's name, cut to the 15 bytes of a comm) into comm
 * where not NULL.  0 or a negative errno value. */
int capture_exe(pid_t pid, char *exe, size_t len, char *comm, size_t clen);

/* Choosing on a terminal what the command line left open (pick.c). */

/* A process from ps: its pid, 0 when none was chosen, -1 when the answer
 * was no number of the list (said on stderr). */
int pick_process(void);

/* "?", "symbol:?" or "line:?": a trigger left for the picker. */
bool pick_trigger_spec(const char *spec);

/*
 * --trigger ?: a function of the executable exe or a source file of its
 * line tables and then a line of it; symbol:? functions only, line:? a
 * file then a line.  The trigger as --trigger takes it ("name", or
 * "/path/file.c:42") goes to out.  Returns 0, 1 when nothing was chosen,
 * or a negative code with one line in err.
 */
int pick_trigger(const char *spec, const char *exe, FILE *in, FILE *out,
		 char *trigger, size_t len, char *err, size_t errlen);

/* For tools that write a capture of their own (mt-synth): the records
 * and event as the backends write them (capfile.c). */

/* The sample_id a synthesized record carries: thread tid of pid, at
 * time, of event id, on CPU 0. */
struct pd_sample_id capfile_sample_id(uint32_t pid, uint32_t tid, uint64_t time,
				      uint64_t id);
/* The intel_pt event (type, config) as perf record opens it for user
 * space: sampling IP, TID, TIME, CPU and IDENTIFIER, with the sideband
 * (mmap, comm, task) and sample_id_all. */
void capfile_pt_attr(struct perf_event_attr *attr, uint32_t type,
		     uint64_t config);
/* The config bits (tsc, noretcomp, mtc, mtc_period, cyc) of the
 * intel_pt PMU's format, as every Intel CPU's sysfs gives them. */
void capfile_pt_format(struct pd_pt_info *pt);

#endif
