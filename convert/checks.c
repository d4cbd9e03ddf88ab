/* SPDX-License-Identifier: MIT */
/*
 * The conversions refused with a line that says why and what to do
 * instead: a --tid of no thread, or of threads with no trace, and a
 * capture too big for the memory at hand.
 */
#include "convert/convert_internal.h"

#include "decode/decode.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int cv_step_failed(int rc, const char *capture, const char *step, char *err,
		   size_t errlen)
{
	if (rc == -ENOMEM)
		return mt_err(err, errlen, rc, "%s: out of memory %s", capture,
			      step);
	return mt_err(err, errlen, rc < 0 ? rc : -EIO, "%s: %s: %s", capture,
		      step, strerror(rc < 0 ? -rc : EIO));
}

/*
 * Every --tid names a thread of the capture: one that is not there would
 * make an empty trace of a typo.  The line names those it has.
 */
int cv_check_tids(struct dec_capture *dc, const struct mt_convert_opts *o,
		  char *err, size_t errlen)
{
	size_t n = dec_nr_threads(dc), nr = 0, at;
	uint32_t *have = malloc((n ? n : 1) * sizeof(*have));

	if (!have)
		return cv_step_failed(-ENOMEM, o->capture, "checking --tid",
				      err, errlen);
	/* A thread may be there twice: seen by its trace before its
	 * process was known. */
	for (size_t k = 0; k < n; k++)
		if (dec_thread_at(dc, k)->tid != (uint32_t)-1)
			have[nr++] = dec_thread_at(dc, k)->tid;
	qsort(have, nr, sizeof(*have), mt_cmp_u32);
	for (size_t i = 0; i < o->nr_tids; i++) {
		if (nr &&
		    bsearch(&o->tids[i], have, nr, sizeof(*have), mt_cmp_u32))
			continue;
		at = (size_t)snprintf(err, errlen,
				      "%s: --tid %u: no such thread in the "
				      "capture; its threads:",
				      o->capture, o->tids[i]);
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
int cv_check_memory(struct dec_capture *dc, const struct mt_convert_opts *o,
		    char *err, size_t errlen)
{
	uint64_t aux = dec_aux_bytes(dc);
	uint64_t need = aux * PEAK_BYTES_PER_AUX_BYTE + PEAK_FIXED_BYTES;
	uint64_t avail = memory_available();

	if (o->max_memory && (!avail || o->max_memory < avail))
		avail = o->max_memory;

	if (o->no_memory_check || !avail || need <= avail)
		return 0;
	snprintf(err, errlen,
		 "%s: %.1f MB of trace%s needs about %.1f GB of memory to "
		 "convert and %.1f GB is available; convert some threads "
		 "with --tid TID,... (mt-convert --info lists them), or try "
		 "anyway with --no-memory-check",
		 o->capture, (double)aux / 1e6,
		 o->nr_tids ? " of those threads" : "", (double)need / 1e9,
		 (double)avail / 1e9);
	return -ENOMEM;
}

/* A filter that leaves nothing says why, rather than replace the
 * outputs with an empty trace. */
int cv_check_tid_trace(const struct mt_trace *t,
		       const struct mt_convert_opts *o, char *err,
		       size_t errlen)
{
	int at;

	if (!o->nr_tids)
		return 0;
	for (size_t i = 0; i < t->nr_threads; i++)
		if (t->threads[i].nr_slices)
			return 0;
	at = snprintf(err, errlen, "%s: --tid", o->capture);
	for (size_t i = 0; i < o->nr_tids && at < (int)errlen; i++)
		at += snprintf(err + at, errlen - (size_t)at, "%s%u",
			       i ? "," : " ", o->tids[i]);
	if (at < (int)errlen)
		snprintf(err + at, errlen - (size_t)at,
			 ": the capture has no trace of th%s",
			 o->nr_tids == 1 ? "at thread" : "ose threads");
	return -ENOENT;
}
