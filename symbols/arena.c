/* SPDX-License-Identifier: MIT */
/*
 * The name arena: strings of one sym_file or sym_map, freed together.
 * Blocks never move, so handed-out pointers stay valid until the owner is
 * freed.
 */
#include "symbols/sym_internal.h"

#include <stdlib.h>

#define SYM_ARENA_BLOCK (64 * 1024)

struct sym_arena_block {
	struct sym_arena_block *next;
	size_t used, cap;
	char data[];
};

char *sym_arena_alloc(struct sym_arena *a, size_t n)
{
	struct sym_arena_block *b = a->head;
	size_t cap;
	char *p;

	if (b && b->cap - b->used >= n) {
		p = b->data + b->used;
		b->used += n;
		return p;
	}
	if (n > SIZE_MAX - sizeof(*b) - SYM_ARENA_BLOCK)
		return NULL;
	/* A name larger than a block gets a block of its own. */
	cap = n > SYM_ARENA_BLOCK ? n : SYM_ARENA_BLOCK;
	b = malloc(sizeof(*b) + cap);
	if (!b)
		return NULL;
	b->cap = cap;
	b->used = n;
	if (a->head && n == cap) {
		/* Keep filling the current block: this one is full already. */
		b->next = a->head->next;
		a->head->next = b;
	} else {
		b->next = a->head;
		a->head = b;
	}
	return b->data;
}

void sym_arena_free(struct sym_arena *a)
{
	struct sym_arena_block *b = a->head, *n;

	for (; b; b = n) {
		n = b->next;
		free(b);
	}
	a->head = NULL;
}
