/* SPDX-License-Identifier: MIT */
/*
 * perfdata: read and write perf.data files as they carry Intel PT.
 *
 * This header is the whole interface of the folder.  The reader maps a
 * capture (regular or piped format), validates every size and offset
 * against the file, and hands out records one at a time, parsed into
 * struct pd_event.  The writer produces a file that perf itself reads
 * (`perf script --itrace=cr`), written under a temporary name and renamed
 * into place by pd_writer_finish().
 *
 * All integers in the file are little-endian; we only run on x86-64.
 * Errors follow util/err.h: a function that can fail returns a negative
 * errno value and writes one line for the user into the caller's err
 * (errlen bytes), naming the file, the offset and what was expected.
 * The codes: -EIO when open, read, write or rename failed (errno's text
 * in the line), -EBADMSG when the file is not what it says it is,
 * -EOVERFLOW when something points past its end, -ENOMEM, and -EINVAL
 * for a bad argument from the caller.
 */
#ifndef MT_PERFDATA_H
#define MT_PERFDATA_H

#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Writes "PATH: offset N: MSG" into err (offset left out when off is
 * UINT64_MAX) and returns code, a negative errno value.  err may be NULL.
 * Public so that the readers of a capture above this folder report
 * errors the same way.
 */
int pd_fail(char *err, size_t errlen, int code, const char *path, uint64_t off,
	    const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* User record types synthesised by perf (not in the kernel uapi). */
enum {
	PD_RECORD_HEADER_ATTR = 64,
	PD_RECORD_HEADER_EVENT_TYPE = 65,
	PD_RECORD_HEADER_TRACING_DATA = 66,
	PD_RECORD_HEADER_BUILD_ID = 67,
	PD_RECORD_FINISHED_ROUND = 68,
	PD_RECORD_ID_INDEX = 69,
	PD_RECORD_AUXTRACE_INFO = 70,
	PD_RECORD_AUXTRACE = 71,
	PD_RECORD_AUXTRACE_ERROR = 72,
	PD_RECORD_THREAD_MAP = 73,
	PD_RECORD_CPU_MAP = 74,
	PD_RECORD_STAT_CONFIG = 75,
	PD_RECORD_STAT = 76,
	PD_RECORD_STAT_ROUND = 77,
	PD_RECORD_EVENT_UPDATE = 78,
	PD_RECORD_TIME_CONV = 79,
	PD_RECORD_HEADER_FEATURE = 80,
	PD_RECORD_COMPRESSED = 81,
	PD_RECORD_FINISHED_INIT = 82,
	PD_RECORD_MAX = 96,
};

/* Feature bits of the header's adds_features bitmap. */
enum {
	PD_FEAT_TRACING_DATA = 1,
	PD_FEAT_BUILD_ID = 2,
	PD_FEAT_HOSTNAME = 3,
	PD_FEAT_OSRELEASE = 4,
	PD_FEAT_VERSION = 5,
	PD_FEAT_ARCH = 6,
	PD_FEAT_NRCPUS = 7,
	PD_FEAT_CPUDESC = 8,
	PD_FEAT_CPUID = 9,
	PD_FEAT_TOTAL_MEM = 10,
	PD_FEAT_CMDLINE = 11,
	PD_FEAT_EVENT_DESC = 12,
	PD_FEAT_AUXTRACE = 18,
	PD_FEAT_MAX = 256,
};

/* PERF_AUXTRACE_* types of AUXTRACE_INFO. */
#define PD_AUXTRACE_INTEL_PT 1

/* Indexes of the Intel PT private array of AUXTRACE_INFO. */
enum {
	PD_PT_PMU_TYPE,
	PD_PT_TIME_SHIFT,
	PD_PT_TIME_MULT,
	PD_PT_TIME_ZERO,
	PD_PT_CAP_USER_TIME_ZERO,
	PD_PT_TSC_BIT,
	PD_PT_NORETCOMP_BIT,
	PD_PT_HAVE_SCHED_SWITCH,
	PD_PT_SNAPSHOT_MODE,
	PD_PT_PER_CPU_MMAPS,
	PD_PT_MTC_BIT,
	PD_PT_MTC_FREQ_BITS,
	PD_PT_TSC_CTC_N,
	PD_PT_TSC_CTC_D,
	PD_PT_CYC_BIT,
	PD_PT_MAX_NONTURBO_RATIO,
	PD_PT_FILTER_STR_LEN,
	PD_PT_NR_FIXED, /* 17 fixed u64 fields */
};

/*
 * Intel PT recording parameters, decoded from (or encoded into)
 * AUXTRACE_INFO.  Older perf versions wrote fewer fields: the have_*
 * flags say which groups were present.
 */
struct pd_pt_info {
	uint32_t pmu_type;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	bool cap_user_time_zero;
	uint64_t tsc_bit; /* config masks, as perf stores them */
	uint64_t noretcomp_bit;
	uint32_t have_sched_switch;
	bool snapshot_mode;
	bool per_cpu_mmaps;
	bool have_mtc_group; /* mtc_bit .. cyc_bit present */
	uint64_t mtc_bit;
	uint64_t mtc_freq_bits;
	uint32_t tsc_ctc_n; /* CPUID.15H:EBX */
	uint32_t tsc_ctc_d; /* CPUID.15H:EAX */
	uint64_t cyc_bit;
	bool have_max_nonturbo;
	uint32_t max_nonturbo_ratio;
	char filter[256]; /* address-filter string, "" if none */
	bool have_cap_event_trace;
	uint64_t cap_event_trace;
};

/* The sample_id_all trailer (or the same fields of a sample). */
struct pd_sample_id {
	uint32_t pid, tid; /* (u32)-1 when absent */
	uint64_t time;	   /* 0 when absent */
	uint64_t id;
	uint64_t stream_id;
	uint32_t cpu; /* (u32)-1 when absent */
	bool have_tid, have_time, have_id, have_cpu;
};

/* MMAP and MMAP2, unified. */
struct pd_mmap {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	bool is_mmap2;
	bool has_build_id; /* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID */
	uint8_t build_id_size;
	uint8_t build_id[20];
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	const char *filename; /* points into the file, NUL-terminated */
};

struct pd_comm {
	uint32_t pid, tid;
	bool exec;	  /* PERF_RECORD_MISC_COMM_EXEC */
	const char *comm; /* points into the file, NUL-terminated */
};

struct pd_task { /* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct pd_itrace_start {
	uint32_t pid, tid;
};

struct pd_aux {
	uint64_t aux_offset, aux_size, flags; /* PERF_AUX_FLAG_* */
};

struct pd_switch {
	bool out;      /* switch-out (else switch-in) */
	bool preempt;  /* out because preempted */
	bool cpu_wide; /* SWITCH_CPU_WIDE: next_prev_* valid */
	uint32_t next_prev_pid, next_prev_tid;
};

struct pd_auxtrace {
	uint64_t size;	    /* bytes of trace data that follow */
	uint64_t offset;    /* position in the AUX ring */
	uint64_t reference; /* TSC when read */
	uint32_t idx, tid, cpu;
	const uint8_t *data; /* points into the file (reader only) */
};

struct pd_time_conv {
	uint64_t time_shift, time_mult, time_zero;
	uint64_t time_cycles, time_mask;
	bool have_ext; /* time_cycles .. cap_user_time_short present */
	bool cap_user_time_zero, cap_user_time_short;
};

struct pd_lost {
	uint64_t id, lost;
};

struct pd_sample {
	uint64_t ip;
	uint64_t addr;
	uint64_t period;
};

/* One record, as the reader returns it. */
struct pd_event {
	uint32_t type; /* PERF_RECORD_* or PD_RECORD_* */
	uint16_t misc;
	uint16_t size;		    /* header.size */
	uint64_t file_offset;	    /* where the record starts */
	const uint8_t *raw;	    /* the whole record, header included */
	const struct pd_attr *attr; /* the attr it belongs to, if known */
	struct pd_sample_id sid;
	union {
		struct pd_mmap mmap;
		struct pd_comm comm;
		struct pd_task task;
		struct pd_itrace_start itrace_start;
		struct pd_aux aux;
		struct pd_switch sw;
		struct pd_auxtrace auxtrace;
		struct pd_pt_info pt_info; /* AUXTRACE_INFO of type Intel PT */
		struct pd_time_conv time_conv;
		struct pd_lost lost;
		struct pd_sample sample;
	} u;
	uint32_t auxtrace_info_type; /* for AUXTRACE_INFO */
};

/* An attr as stored in the file, zero-extended to our struct size. */
struct pd_attr {
	struct perf_event_attr attr;
	uint32_t file_attr_size; /* attr.size as found in the file */
	uint64_t *ids;
	size_t nr_ids;
};

struct pd_buildid {
	uint32_t pid;
	uint16_t misc;
	uint8_t size; /* significant bytes of id (20 for sha1) */
	uint8_t id[20];
	const char *filename;
};

struct pd_auxtrace_index {
	uint64_t offset, size;
};

struct pd_file;

/*
 * Open and validate PATH.  On success *out owns the mapping; release with
 * pd_close().  Header, attrs, ids and feature table are validated here;
 * records are validated as pd_next() reaches them.  Returns 0, or a
 * negative errno value with one line in err (*out is then untouched).
 */
int pd_open(struct pd_file **out, const char *path, char *err, size_t errlen);
void pd_close(struct pd_file *f);
/*
 * The caller is done with bytes p..p+len of the file (a chunk of trace
 * decoded): the whole pages among them leave memory, and come back from
 * the file if read again.
 */
void pd_forget(struct pd_file *f, const void *p, size_t len);

const char *pd_path(const struct pd_file *f);
bool pd_is_piped(const struct pd_file *f);
size_t pd_nr_attrs(const struct pd_file *f);
const struct pd_attr *pd_get_attr(const struct pd_file *f, size_t i);
/* The attr whose id list contains ID, or NULL. */
const struct pd_attr *pd_attr_by_id(const struct pd_file *f, uint64_t id);
bool pd_has_feature(const struct pd_file *f, unsigned bit);
/* Raw bytes of a feature section (NULL/0 if absent). */
const uint8_t *pd_feature(const struct pd_file *f, unsigned bit, size_t *len);

/*
 * Iterate the data section.  *cursor starts at 0.  Returns 1 with *ev
 * filled, 0 at the end, or a negative errno value with one line in err.
 * Pointers in *ev stay valid until pd_close().
 */
int pd_next(struct pd_file *f, uint64_t *cursor, struct pd_event *ev, char *err,
	    size_t errlen);

/*
 * Build ids: from the BUILD_ID feature (or HEADER_BUILD_ID records in a
 * piped file).  The array is owned by f.  Returns 0, or a negative errno
 * value with one line in err.
 */
int pd_buildids(struct pd_file *f, const struct pd_buildid **out, size_t *n,
		char *err, size_t errlen);
/* Entries of the AUXTRACE feature (index of AUXTRACE records).  Returns 0,
 * or a negative errno value with one line in err. */
int pd_auxtrace_index(struct pd_file *f, const struct pd_auxtrace_index **out,
		      size_t *n, char *err, size_t errlen);
/* A length-prefixed string feature (hostname, cpuid, ...), or NULL. */
const char *pd_feature_string(struct pd_file *f, unsigned bit);

/* Time conversion between TSC and perf time (ns), as the kernel does it. */
uint64_t pd_tsc_to_perf_time(uint64_t tsc, const struct pd_pt_info *pt);
uint64_t pd_perf_time_to_tsc(uint64_t ns, const struct pd_pt_info *pt);

/* Names for printing. */
const char *pd_record_name(uint32_t type);

/* ------------------------------------------------------------------ */
/* Writer                                                              */

struct pd_writer;

enum pd_write_mode {
	PD_WRITE_FILE,	/* PERFILE2 with attr and feature sections */
	PD_WRITE_PIPED, /* perf record -o - layout: header records inline */
};

/*
 * Create a temporary file beside PATH (util's mt_outfile); nothing
 * appears at PATH until pd_writer_finish() succeeds.  pd_writer_abort() removes
 * the temporary file.  Exactly one of finish/abort must be called.  Returns
 * 0, or a negative errno value with one line in err (no writer then).
 *
 * The calls below that take a writer return 0, or a negative errno value
 * whose line pd_writer_error() gives: -EINVAL for a bad argument (the
 * writer stays usable), -ENOMEM, or -EIO when writing failed (every later
 * call then fails the same way).
 */
int pd_writer_open(struct pd_writer **out, const char *path,
		   enum pd_write_mode mode, char *err, size_t errlen);
/*
 * Attrs must all be added before the first record.  attr->size is set to
 * sizeof(struct perf_event_attr) if 0.  The first attr's sample_type and
 * sample_id_all decide the trailer the helpers below append.
 */
int pd_writer_add_attr(struct pd_writer *w, const struct perf_event_attr *attr,
		       const uint64_t *ids, size_t nr_ids);
/* Append a fully formed record (header included, size in header). */
int pd_writer_raw(struct pd_writer *w, const void *rec, size_t size);

/* Record helpers: body built from the struct, trailer from sid. */
int pd_write_comm(struct pd_writer *w, const struct pd_comm *c,
		  const struct pd_sample_id *sid);
int pd_write_mmap2(struct pd_writer *w, const struct pd_mmap *m,
		   const struct pd_sample_id *sid); /* MMAP if !m->is_mmap2 */
int pd_write_task(struct pd_writer *w, uint32_t type /* FORK or EXIT */,
		  const struct pd_task *t, const struct pd_sample_id *sid);
int pd_write_itrace_start(struct pd_writer *w, const struct pd_itrace_start *s,
			  const struct pd_sample_id *sid);
int pd_write_aux(struct pd_writer *w, const struct pd_aux *a,
		 const struct pd_sample_id *sid);
int pd_write_switch(struct pd_writer *w, const struct pd_switch *s,
		    const struct pd_sample_id *sid);
int pd_write_auxtrace_info(struct pd_writer *w, const struct pd_pt_info *pt,
			   unsigned nr_fields /* 10, 15, 16 or 17(+filter) */,
			   bool with_cap_event_trace);
/* AUXTRACE header + data, zero-padded to 8; indexed for the feature. */
int pd_write_auxtrace(struct pd_writer *w, const struct pd_auxtrace *a,
		      const uint8_t *data);
int pd_write_time_conv(struct pd_writer *w, const struct pd_time_conv *tc);
int pd_write_finished_round(struct pd_writer *w);

/* Feature sections (written at finish).  Replaces earlier content. */
int pd_writer_set_feature(struct pd_writer *w, unsigned bit, const void *data,
			  size_t len);
int pd_writer_add_buildid(struct pd_writer *w, const struct pd_buildid *b);
/* Length-prefixed, NUL-padded string feature (CPUID, HOSTNAME, ...). */
int pd_writer_set_feature_string(struct pd_writer *w, unsigned bit,
				 const char *s);

/*
 * Write AUXTRACE index and BUILD_ID features, the feature table, the
 * header; fsync-free rename onto the final path.  Frees w.  Returns 0, or
 * a negative errno value with one line in err (nothing is then at the
 * path).
 */
int pd_writer_finish(struct pd_writer *w, char *err, size_t errlen);
void pd_writer_abort(struct pd_writer *w);
/*
 * The last failed writer call (valid until finish/abort): returns its
 * code, 0 when none failed, and copies its line into err.
 */
int pd_writer_error(const struct pd_writer *w, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Our extension section                                               */

/*
 * What perf.data has no record for (the stack unwound at a trigger, the
 * vDSO bytes, trigger hits) goes into one feature section with a bit far
 * above perf's own: perf skips feature bits it does not know, and unknown
 * record types in the data section would stop it.  The section is a
 * sequence of items { u32 type; u32 size; payload[size] }, size a multiple
 * of 8.
 */
#define PD_FEAT_MT_EXT 200

enum pd_ext_type {
	PD_EXT_STACK = 1, /* u32 pid, u32 tid, u64 time, u64 nr, u64 ip[nr] */
	PD_EXT_HIT = 2,	  /* u32 pid, u32 tid, u64 time, u64 ip, i64 arg,
			     u64 mark_start, char name[] (NUL, padded) */
	PD_EXT_VDSO = 3,  /* u32 pid, u32 0, u64 start, u64 len,
			     u8 bytes[len] (padded): the [vdso] image */
	/* What perf record --kcore keeps, for decoding kernel code: */
	PD_EXT_KALLSYMS = 4,  /* u64 len, char text[len] (padded): the text
				 of /proc/kallsyms as read */
	PD_EXT_MODULES = 5,   /* the same for /proc/modules */
	PD_EXT_KCODE = 6,     /* u64 start, u64 len, u8 bytes[len] (padded):
				 kernel text from /proc/kcore at start */
	PD_EXT_GOROUTINE = 7, /* u32 pid, u32 tid, u64 time, u64 ip, u64 g,
				 u64 goid: a Go thread switched goroutines */
};

struct pd_ext_stack {
	uint32_t pid, tid;
	uint64_t time; /* perf time (ns) */
	uint64_t nr;
	const uint64_t *ips; /* leaf first: current IP, then return addresses */
	const uint8_t *raw_ips; /* reader: the same, maybe unaligned */
};

static inline uint64_t pd_ext_stack_ip(const struct pd_ext_stack *s, uint64_t i)
{
	uint64_t v;
	__builtin_memcpy(&v, s->raw_ips + 8 * i, 8);
	return v;
}

/*
 * Build a section: append items to a growable buffer owned by the caller.
 * pd_ext_add_*() return 0, -EINVAL for an item too big for its size field,
 * or -ENOMEM; pd_ext_parse_*() 0, or -EBADMSG when the payload is not such
 * an item.  Neither writes a line: the caller knows the file.
 */
struct pd_ext_buf {
	uint8_t *data;
	size_t len, cap;
};
int pd_ext_add_stack(struct pd_ext_buf *b, const struct pd_ext_stack *s);
void pd_ext_buf_free(struct pd_ext_buf *b);
/*
 * Iterate the section of f: returns 1 with *type and the payload, 0 at the
 * end, or a negative errno value with one line in err on a malformed
 * section.  *cursor starts at 0.
 */
int pd_ext_next(struct pd_file *f, size_t *cursor, uint32_t *type,
		const uint8_t **payload, uint32_t *size, char *err,
		size_t errlen);
/* A snapshot trigger hit. */
struct pd_ext_hit {
	uint32_t pid, tid;
	uint64_t time; /* perf time (ns) */
	uint64_t ip;
	int64_t arg;	     /* the stub's argument */
	uint64_t mark_start; /* perf time of mt_mark_start, 0 if none */
	const char *name;    /* the trigger; reader: points into the file */
};
int pd_ext_add_hit(struct pd_ext_buf *b, const struct pd_ext_hit *h);
int pd_ext_parse_hit(const uint8_t *payload, uint32_t size,
		     struct pd_ext_hit *h);

/* The [vdso] image of a process, as read from its memory. */
struct pd_ext_vdso {
	uint32_t pid;
	uint64_t start, len;
	const uint8_t *bytes; /* reader: points into the file */
};
int pd_ext_add_vdso(struct pd_ext_buf *b, const struct pd_ext_vdso *v);
int pd_ext_parse_vdso(const uint8_t *payload, uint32_t size,
		      struct pd_ext_vdso *v);

/*
 * A text of /proc (PD_EXT_KALLSYMS, PD_EXT_MODULES) as an item of type
 * type; the reader's text points into the file and is not NUL-ended.
 */
int pd_ext_add_text(struct pd_ext_buf *b, uint32_t type, const char *text,
		    uint64_t len);
int pd_ext_parse_text(const uint8_t *payload, uint32_t size, const char **text,
		      uint64_t *len);

/* Kernel code as /proc/kcore shows it at start (PD_EXT_KCODE). */
struct pd_ext_kcode {
	uint64_t start, len;
	const uint8_t *bytes; /* reader: points into the file */
};
int pd_ext_add_kcode(struct pd_ext_buf *b, const struct pd_ext_kcode *k);
int pd_ext_parse_kcode(const uint8_t *payload, uint32_t size,
		       struct pd_ext_kcode *k);

/*
 * A Go scheduler switch, as an emulator saw it: from the instruction at ip
 * (the first the thread runs after the switch, at perf time time) thread
 * tid runs the goroutine whose runtime.g is at g and whose id is goid (0:
 * the thread's system stack, g0, or a g whose id could not be read).  The
 * items of a thread come in time order.
 */
struct pd_ext_goroutine {
	uint32_t pid, tid;
	uint64_t time; /* perf time (ns) */
	uint64_t ip;
	uint64_t g;
	uint64_t goid;
};
int pd_ext_add_goroutine(struct pd_ext_buf *b,
			 const struct pd_ext_goroutine *g);
int pd_ext_parse_goroutine(const uint8_t *payload, uint32_t size,
			   struct pd_ext_goroutine *g);

/* Decode a PD_EXT_STACK payload (ips point into the file). */
int pd_ext_parse_stack(const uint8_t *payload, uint32_t size,
		       struct pd_ext_stack *s);

#endif
