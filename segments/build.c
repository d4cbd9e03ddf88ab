/*
 * Every thread of a decoded capture through its own segment builder.
 */
#include "segments/segments.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

struct pid_ctx {
	struct dec_capture *c;
	uint32_t pid;
};

static void symbolize_pid(void *ctx, uint64_t ip, struct dec_sym *out)
{
	const struct pid_ctx *p = ctx;

	dec_symbolize(p->c, p->pid, ip, out);
}

int seg_build_all(struct dec_capture *c, struct mt_trace *t,
		  const struct seg_opts *o, char *err, size_t errlen)
{
	size_t n = dec_nr_threads(c), first = t->nr_threads;

	/* Threads and processes first: builders hold thread indexes. */
	for (size_t i = 0; i < n; i++) {
		struct dec_thread *d = dec_thread_at(c, i);
		bool have_proc = false;

		if (!d->nr)
			continue;
		for (size_t p = 0; p < t->nr_procs; p++)
			have_proc |= t->procs[p].pid == d->pid;
		if ((!have_proc &&
		     !mt_trace_add_process(t, d->pid,
					   dec_process_name(c, d->pid))) ||
		    !mt_trace_add_thread(t, d->pid, d->tid, d->comm))
			goto oom;
	}
	for (size_t i = 0, ti = first; i < n; i++) {
		struct dec_thread *d = dec_thread_at(c, i);
		struct seg_builder *b;
		struct pid_ctx ctx = {c, d->pid};
		int rc = 0;

		if (!d->nr)
			continue;
		if (seg_builder_new(&b, t, ti++, symbolize_pid, &ctx))
			goto oom;
		for (size_t k = 0; k < d->nr && !rc; k++)
			rc = seg_feed(b, dec_event_time(&d->ev[k], d->base),
				      dec_event_kind(&d->ev[k]), d->ev[k].ip,
				      d->ev[k].aux);
		if (!rc)
			rc = seg_finish(b, o && o->no_final_stack ? NULL
								   : &d->final);
		seg_builder_free(b);
		if (rc)
			goto oom;
		free(d->ev);
		d->ev = NULL;
		d->nr = d->cap = 0;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory while building the call tree");
	return -ENOMEM;
}
