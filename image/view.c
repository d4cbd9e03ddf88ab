/* SPDX-License-Identifier: MIT */
/*
 * A thread's own sections of the code.  libipt locks a section each time
 * it reads an instruction outside its block cache (pt_image_read(): every
 * instruction up to an event that binds to one, such as a disable with
 * no IP at each system call), and takes a reference under the same lock
 * at each switch of section.  Decoders on many threads that share the
 * sections queue on those locks: on 16 cores they spent more time
 * waking each other than decoding.  A view adds every section to a cache
 * of its own, in the order img_build() added them, so the isids it gives
 * are the capture's (img_iscache() reads them), and builds a process's
 * image from it when first asked.
 */
#include "image/img_internal.h"

#include <errno.h>
#include <stdlib.h>

#include <intel-pt.h>

struct img_view {
	struct img *c;
	struct pt_image_section_cache *iscache;
	struct pt_image **images; /* by index in c->procs, NULL until asked */
	size_t nr_images;	  /* the processes when the view was made */
};

void img_view_free(struct img_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; v->images && i < v->nr_images; i++)
		pt_image_free(v->images[i]);
	free(v->images);
	if (v->iscache)
		pt_iscache_free(v->iscache);
	free(v);
}

int img_view_new(struct img *c, struct img_view **out)
{
	struct img_view *v = calloc(1, sizeof(*v));

	*out = NULL;
	if (!v)
		return -ENOMEM;
	v->c = c;
	v->nr_images = c->nr_procs;
	v->images = calloc(c->nr_procs ? c->nr_procs : 1, sizeof(*v->images));
	v->iscache = pt_iscache_alloc(NULL);
	if (!v->images || !v->iscache)
		goto nomem;
	for (size_t i = 0; i < c->nr_secs; i++) {
		const struct img_sec *s = &c->secs[i];
		int isid = pt_iscache_add_file(v->iscache, s->path, s->offset,
					       s->size, s->laddr);

		if (isid == -pte_nomem)
			goto nomem;
		/* The file changed or went since: the shared sections
		 * serve. */
		if (isid != s->isid) {
			img_view_free(v);
			return -ENOENT;
		}
	}
	*out = v;
	return 0;
nomem:
	img_view_free(v);
	return -ENOMEM;
}

struct pt_image *img_view_image(struct img_view *v, uint32_t pid)
{
	long i = img_proc_of(v->c, pid);
	const struct img_proc *p;
	struct pt_image *img;

	/* A process added since the view was made: the shared images
	 * serve. */
	if (i < 0 || (size_t)i >= v->nr_images)
		return NULL;
	if (v->images[i])
		return v->images[i];
	p = &v->c->procs[i];
	img = pt_image_alloc(p->comm);
	if (!img)
		return NULL;
	for (size_t k = 0; k < p->nr_isids; k++)
		if (pt_image_add_cached(img, v->iscache, p->isids[k], NULL) <
		    0) {
			pt_image_free(img);
			return NULL;
		}
	v->images[i] = img;
	return img;
}

size_t img_view_read(struct img_view *v, int isid, uint64_t ip, uint8_t *b,
		     size_t n)
{
	int got;

	if (isid <= 0)
		return 0;
	got = pt_iscache_read(v->iscache, b, n, isid, ip);
	return got > 0 ? (size_t)got : 0;
}
