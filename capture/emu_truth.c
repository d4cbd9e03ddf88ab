/* SPDX-License-Identifier: MIT */
/*
 * The emulator's own call log (--truth): every call, return, tail call,
 * unwinding jump, syscall and signal delivery it single-stepped through,
 * in mt-synth's truth.tsv form.  It shares nothing with the decoder: the
 * emulated capture's converted tree is held to it.  And the trace it
 * dropped on purpose (--drop-every), in mt-synth's gaps.tsv form (--gaps).
 */
#include "capture/emu_internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The function at ip: its name and range (a made-up range of one byte
 * when no symbol covers it). */
static const char *fn_at(struct emu *e, uint64_t ip, uint64_t *lo, uint64_t *hi)
{
	*lo = ip;
	*hi = ip + 1;
	for (size_t i = 0; i < e->nr_edsos; i++) {
		struct edso *d = &e->edsos[i];
		const struct sym *s;
		uint64_t vaddr, bias;
		char err[256];

		if (ip < d->lo || ip >= d->hi)
			continue;
		if (!d->tried) {
			d->tried = true;
			if (!strcmp(d->path, "[vdso]") && e->vdso)
				sym_file_open_mem(e->vdso, e->vdso_len,
						  "[vdso]", NULL, &d->sf, err,
						  sizeof(err));
			else if (d->path[0] == '/')
				sym_file_open(d->path, NULL, &d->sf, err,
					      sizeof(err));
		}
		if (!d->sf || sym_file_off_to_vaddr(d->sf, d->pgoff, &vaddr))
			return "[unknown]";
		bias = d->lo - vaddr;
		s = sym_file_lookup(d->sf, ip - bias);
		if (!s) {
			/* No symbol: the code between its neighbours is one
			 * function, as the decoder sees it too. */
			size_t n;
			const struct sym *all = sym_file_syms(d->sf, &n);

			*lo = d->lo;
			*hi = d->hi;
			for (size_t k = 0; k < n; k++) {
				uint64_t a = all[k].addr + bias;
				uint64_t z = a + all[k].size;

				if (z <= ip && z > *lo)
					*lo = z;
				if (a > ip && a < *hi)
					*hi = a;
			}
			return "[unknown]";
		}
		*lo = s->addr + bias;
		*hi = *lo + s->size;
		if (!s->size) {
			/* A label without a size runs to the next symbol. */
			size_t n;
			const struct sym *all = sym_file_syms(d->sf, &n);

			*hi = d->hi;
			for (size_t k = (size_t)(s - all) + 1; k < n; k++)
				if (all[k].addr > s->addr) {
					*hi = all[k].addr + bias;
					break;
				}
		}
		return s->name;
	}
	return "[unknown]";
}

int emu_edsos_from_maps(struct emu *e)
{
	char path[4096];

	for (size_t i = 0; i < e->nr_maps; i++) {
		unsigned long long lo, hi, off;

		path[0] = 0;
		if (sscanf(e->maps[i], "%llx-%llx %*s %llx %*s %*s %4095s", &lo,
			   &hi, &off, path) < 3 ||
		    !path[0])
			continue;
		if (emu_edso_add(e, lo, hi, off, path))
			return -ENOMEM;
	}
	return 0;
}

int emu_truth_row_add(struct thr *t, uint64_t start, const char *name,
		      uint32_t parent, uint8_t flags)
{
	if (mt_grow((void **)&t->rows, &t->cap_rows, t->nr_rows + 1,
		    sizeof(*t->rows)))
		return -ENOMEM;
	t->rows[t->nr_rows++] = (struct trow){.start = start,
					      .name = name,
					      .parent = parent,
					      .flags = flags,
					      .goid = t->goid};
	return 0;
}

/* A new frame on top (parent: the current top). */
int emu_truth_push(struct emu *e, struct thr *t, uint64_t when, uint64_t ip,
		   uint64_t ret, uint8_t flags)
{
	struct tframe f = {.ret = ret};
	const char *name = fn_at(e, ip, &f.lo, &f.hi);
	uint32_t parent = t->tdepth ? t->tstack[t->tdepth - 1].row : UINT32_MAX;

	if (emu_truth_row_add(t, when, name, parent, flags) ||
	    mt_grow((void **)&t->tstack, &t->cap_tstack, t->tdepth + 1,
		    sizeof(*t->tstack)))
		return -ENOMEM;
	/* Frames found already running were entered nowhere we saw. */
	if (!(flags & TR_CLIP_START))
		t->rows[t->nr_rows - 1].target = ip;
	f.row = (uint32_t)(t->nr_rows - 1);
	t->tstack[t->tdepth++] = f;
	return 0;
}

void emu_truth_pop_to(struct thr *t, size_t n, uint64_t when)
{
	while (t->tdepth > n)
		t->rows[t->tstack[--t->tdepth].row].end = when;
}

/* The same, for frames that no ret of their own left. */
static void tleave(struct thr *t, size_t n, uint64_t when, uint8_t how)
{
	for (size_t i = n; i < t->tdepth; i++)
		t->rows[t->tstack[i].row].flags |= how;
	emu_truth_pop_to(t, n, when);
}

/* A return or jump climbed above every frame seen: the function at ip
 * was there all along. */
static int treveal(struct emu *e, struct thr *t, uint64_t ip)
{
	struct tframe f = {0};
	const char *name = fn_at(e, ip, &f.lo, &f.hi);
	uint32_t row = (uint32_t)t->nr_rows;

	if (emu_truth_row_add(t, t->t0, name, UINT32_MAX, TR_CLIP_START))
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_rows - 1; i++)
		if (t->rows[i].parent == UINT32_MAX && i != row)
			t->rows[i].parent = row;
	if (mt_grow((void **)&t->tstack, &t->cap_tstack, 1, sizeof(*t->tstack)))
		return -ENOMEM;
	f.row = row;
	t->tstack[0] = f;
	t->tdepth = 1;
	return 0;
}

/*
 * A jump out of the top frame that leaves no frame, though it land in a
 * function active below: to a function's entry (a tail call), or a direct
 * one back into the function whose frame the top took by a jump (a cold
 * part coming back), as mt-convert's segments take them.
 */
static bool tjump_stays(struct emu *e, const struct tframe *top, uint64_t to,
			int cls)
{
	uint64_t lo, hi;
	const char *name = fn_at(e, to, &lo, &hi);

	if (to == lo && strcmp(name, "[unknown]"))
		return true;
	return (cls == IC_JMP || cls == IC_COND) &&
	       top->took_lo < top->took_hi && to >= top->took_lo &&
	       to < top->took_hi;
}

int emu_truth_transfer(struct emu *e, struct thr *t, uint64_t to, uint64_t next,
		       uint64_t back)
{
	const struct insn *in = &t->step;
	uint64_t when = t->step_tsc;
	struct tframe *top = t->tdepth ? &t->tstack[t->tdepth - 1] : NULL;

	switch (in->cls) {
	case IC_CALL:
	case IC_ICALL:
		return emu_truth_push(e, t, when, to, next, 0);
	case IC_RET:
		for (size_t i = t->tdepth; i-- > 0;)
			if (t->tstack[i].ret == to) {
				/* Frames above the one returned from were
				 * left without a ret of their own. */
				emu_truth_pop_to(t, t->tdepth - 1, when);
				tleave(t, i, when, TR_UNWOUND);
				return 0;
			}
		/* A handler returns into the kernel's trampoline, which takes
		 * its place until sigreturn. */
		if (top && top->async) {
			emu_truth_pop_to(t, t->tdepth - 1, when);
			if (emu_truth_push(e, t, when, to, 0, TR_TAIL))
				return -ENOMEM;
			t->tstack[t->tdepth - 1].async = true;
			return 0;
		}
		/* Into the middle of a function below: a runtime's raise
		 * (OCaml's caml_raise_exn) returning into the handler its trap
		 * frame holds, leaving the frames between. */
		for (size_t i = t->tdepth; i-- > 1;)
			if (to >= t->tstack[i - 1].lo &&
			    to < t->tstack[i - 1].hi) {
				emu_truth_pop_to(t, t->tdepth - 1, when);
				tleave(t, i, when, TR_UNWOUND);
				return 0;
			}
		emu_truth_pop_to(t, 0, when);
		return treveal(e, t, to);
	case IC_SYSCALL:
		if (emu_truth_row_add(t, when, "[syscall]",
				      top ? top->row : UINT32_MAX, TR_SYSCALL))
			return -ENOMEM;
		t->rows[t->nr_rows - 1].end = back;
		/* sigreturn: back to the interrupted frame, below. */
		if (to != next && top && !(to >= top->lo && to < top->hi))
			for (size_t i = t->tdepth - 1; i-- > 0;)
				if (to >= t->tstack[i].lo &&
				    to < t->tstack[i].hi) {
					tleave(t, i + 1, back, TR_UNWOUND);
					break;
				}
		return 0;
	case IC_COND:
	case IC_JMP:
	case IC_IJMP:
	case IC_FAR:
		if (!top || (to >= top->lo && to < top->hi))
			return 0;
		/* Into a frame below: a longjmp unwinding to it. */
		for (size_t i = tjump_stays(e, top, to, in->cls)
					? 0
					: t->tdepth - 1;
		     i-- > 0;)
			if (to >= t->tstack[i].lo && to < t->tstack[i].hi) {
				/* its own cold part, which another activation
				 * of it runs below */
				if ((in->cls == IC_JMP || in->cls == IC_COND) &&
				    t->tstack[i].took_lo == top->lo &&
				    t->tstack[i].took_hi == top->hi)
					break;
				tleave(t, i + 1, when, TR_UNWOUND);
				return 0;
			}
		/* A tail call: the new function takes the frame's place. */
		{
			uint64_t ret = top->ret, lo = top->lo, hi = top->hi;

			tleave(t, t->tdepth - 1, when, TR_TAIL_OUT);
			if (emu_truth_push(e, t, when, to, ret, TR_TAIL))
				return -ENOMEM;
			t->tstack[t->tdepth - 1].took_lo = lo;
			t->tstack[t->tdepth - 1].took_hi = hi;
		}
		return 0;
	default:
		return 0;
	}
}

static int cmp_trow(const void *a, const void *b)
{
	const struct trow *x = *(const struct trow *const *)a;
	const struct trow *y = *(const struct trow *const *)b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

int emu_truth_write(struct emu *e, uint64_t end)
{
	struct mt_outfile out;
	FILE *f = mt_outfile_fopen(&out, e->o->truth, e->err, e->errlen);
	int rc = 0;

	if (!f)
		return -EIO;
	fprintf(f, "tid\tdepth\tname\tstart_ns\tend_ns\tflags\ttarget\tgoid\n");
	for (size_t i = 0; i < e->nr_thr && !rc; i++) {
		struct thr *t = &e->thr[i];
		const struct trow **order;

		/* Still open at the end: cut by the window, as a decoder
		 * sees them. */
		for (size_t k = 0; k < t->tdepth; k++)
			t->rows[t->tstack[k].row].flags |= TR_CLIP_END;
		emu_truth_pop_to(t, 0, end);
		for (size_t k = 0; k < t->nr_rows; k++)
			if (!t->rows[k].end) {
				t->rows[k].end = end;
				t->rows[k].flags |= TR_CLIP_END;
			}
		/* Depths, once every root is known (parents come first in
		 * time, revealed ones last in the array: iterate). */
		for (size_t k = 0; k < t->nr_rows; k++) {
			uint32_t d = 0;

			for (uint32_t p = t->rows[k].parent; p != UINT32_MAX;
			     p = t->rows[p].parent)
				d++;
			t->rows[k].depth = d;
		}
		order = malloc((t->nr_rows ? t->nr_rows : 1) * sizeof(*order));
		if (!order) {
			rc = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < t->nr_rows; k++)
			order[k] = &t->rows[k];
		if (mt_stable_sort(order, t->nr_rows, sizeof(*order),
				   cmp_trow)) {
			free(order);
			rc = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < t->nr_rows; k++) {
			const struct trow *r = order[k];
			static const char *const names[] = {
				"clipped_start", "clipped_end", "tail",
				"syscall",	 "tail_out",	"unwound",
				"signal",	 "exec"};
			bool any = false;

			fprintf(f, "%d\t%u\t%s\t%llu\t%llu\t", t->tid, r->depth,
				r->name, (unsigned long long)r->start,
				(unsigned long long)r->end);
			for (int b = 0; b < 8; b++)
				if (r->flags & (1 << b)) {
					fprintf(f, "%s%s", any ? "," : "",
						names[b]);
					any = true;
				}
			fprintf(f, "%s\t%#llx\t%llu\n", any ? "" : "-",
				(unsigned long long)r->target,
				(unsigned long long)r->goid);
		}
		free(order);
	}
	if (rc) {
		mt_outfile_abort(&out);
		return mt_fail(e, rc, "out of memory writing the truth");
	}
	return mt_outfile_commit(&out, e->err, e->errlen);
}

/* Where the step of t's instruction went: the packets for it. */

/* A gap made on purpose: the trace of t dropped until resume. */
int emu_add_gap(struct emu *e, struct thr *t, uint64_t resume,
		uint64_t resume_ip)
{
	if (mt_grow((void **)&e->gaps, &e->cap_gaps, e->nr_gaps + 1,
		    sizeof(*e->gaps)))
		return -ENOMEM;
	e->gaps[e->nr_gaps++] = (struct egap){t->tid, t->gap_after, t->gap_end,
					      resume, t->gap_stop,  resume_ip};
	return 0;
}

/* The gaps in gaps.tsv form (mt-synth's), for the accuracy figures. */
int emu_write_gaps(struct emu *e)
{
	struct mt_outfile out;
	FILE *f = mt_outfile_fopen(&out, e->o->gaps, e->err, e->errlen);

	if (!f)
		return -EIO;
	fprintf(f, "tid\tfirst_branch\tlast_branch\tafter_ns\tend_ns\t"
		   "resume_ns\tstop_ip\tresume_ip\n");
	for (size_t i = 0; i < e->nr_gaps; i++) {
		const struct egap *g = &e->gaps[i];

		fprintf(f, "%d\t0\t0\t%llu\t%llu\t%llu\t%#llx\t%#llx\n", g->tid,
			(unsigned long long)g->after,
			(unsigned long long)g->end,
			(unsigned long long)g->resume,
			(unsigned long long)g->stop_ip,
			(unsigned long long)g->resume_ip);
	}
	return mt_outfile_commit(&out, e->err, e->errlen);
}
