/*
 * The program `make demo` traces: a little key-value server.  The main
 * thread queues requests; four worker threads take them off the queue
 * and serve them: PUT and GET against a chained hash table, SCAN (every
 * key with a prefix, sorted with qsort), and COMPRESS (a value run
 * through a small LZ77 compressor, then a CRC-32 of the result).
 * Request 300 is the slow one, a COMPRESS of a much larger value; the
 * worker that serves it asks for a snapshot through the stub API when it
 * is done, the way you would catch a tail-latency spike.
 */
#include "include/magic_trace.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS	 4
#define REQUESTS 400
#define SLOW	 300
#define BUCKETS	 1024

enum op { PUT, GET, SCAN, COMPRESS };

struct request {
	int id;
	enum op op;
	char key[24];
	unsigned size; /* COMPRESS: bytes of value to compress */
};

struct entry {
	struct entry *next;
	char *key;
	uint64_t value;
};

struct server {
	pthread_mutex_t lock; /* the queue and the table */
	pthread_cond_t ready;
	struct request queue[REQUESTS];
	int head, tail, done;
	struct entry *table[BUCKETS];
	size_t entries;
};

struct worker {
	struct server *s;
	int no;
	unsigned served, found;
	uint32_t crc;
};

__attribute__((noinline)) static uint32_t hash(const char *key)
{
	uint32_t h = 2166136261u;

	for (; *key; key++)
		h = (h ^ (uint8_t)*key) * 16777619u;
	return h;
}

/* Called with the lock held. */
__attribute__((noinline)) static struct entry *
lookup(struct server *s, const char *key, int create)
{
	uint32_t b = hash(key) % BUCKETS;
	struct entry *e;

	for (e = s->table[b]; e; e = e->next)
		if (!strcmp(e->key, key))
			return e;
	if (!create)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->key = strdup(key);
	e->next = s->table[b];
	s->table[b] = e;
	s->entries++;
	return e;
}

static int cmp_key(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a;
	const struct entry *y = *(struct entry *const *)b;

	return strcmp(x->key, y->key);
}

/* Every key that starts with prefix, sorted; how many. */
__attribute__((noinline)) static unsigned scan(struct server *s,
					       const char *prefix)
{
	struct entry *found[256];
	size_t n = 0, len = strlen(prefix);

	pthread_mutex_lock(&s->lock);
	for (int b = 0; b < BUCKETS; b++)
		for (struct entry *e = s->table[b]; e && n < 256; e = e->next)
			if (!strncmp(e->key, prefix, len))
				found[n++] = e;
	pthread_mutex_unlock(&s->lock);
	qsort(found, n, sizeof(*found), cmp_key);
	return (unsigned)n;
}

/* The longest earlier match of in[i..] in a window of 256 bytes. */
__attribute__((noinline)) static unsigned
longest_match(const uint8_t *in, size_t i, size_t n, unsigned *dist)
{
	unsigned best = 0;

	for (size_t j = i > 256 ? i - 256 : 0; j < i; j++) {
		unsigned k = 0;

		while (i + k < n && k < 255 && in[j + k] == in[i + k])
			k++;
		if (k > best) {
			best = k;
			*dist = (unsigned)(i - j);
		}
	}
	return best;
}

/* LZ77 of in: a literal byte, or (0xff, distance, length). */
__attribute__((noinline)) static size_t compress(const uint8_t *in, size_t n,
						 uint8_t *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		unsigned dist = 0, len = longest_match(in, i, n, &dist);

		if (len >= 4) {
			out[o++] = 0xff;
			out[o++] = (uint8_t)dist;
			out[o++] = (uint8_t)len;
			i += len;
		} else {
			out[o++] = in[i++];
		}
	}
	return o;
}

__attribute__((noinline)) static uint32_t crc32(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}

/* A value that compresses somewhat: words from a small vocabulary. */
__attribute__((noinline)) static void make_value(uint8_t *v, unsigned size,
						 int seed)
{
	static const char *const words[] = {"alpha ", "beta ",	"gamma ",
					    "delta ", "kappa ", "omega "};
	unsigned x = (unsigned)seed * 2654435761u, i = 0;

	while (i < size) {
		const char *w = words[(x >> 16) % 6];

		x = x * 1103515245u + 12345u;
		for (; *w && i < size; w++)
			v[i++] = (uint8_t)*w;
	}
}

__attribute__((noinline)) static void serve(struct worker *w,
					    const struct request *r)
{
	struct entry *e;

	switch (r->op) {
	case PUT:
		pthread_mutex_lock(&w->s->lock);
		e = lookup(w->s, r->key, 1);
		if (e)
			e->value = (uint64_t)r->id * 7919u;
		pthread_mutex_unlock(&w->s->lock);
		break;
	case GET:
		pthread_mutex_lock(&w->s->lock);
		w->found += lookup(w->s, r->key, 0) != NULL;
		pthread_mutex_unlock(&w->s->lock);
		break;
	case SCAN:
		w->found += scan(w->s, r->key);
		break;
	case COMPRESS: {
		uint8_t *v = malloc(r->size), *p = malloc(3 * r->size);

		if (v && p) {
			make_value(v, r->size, r->id);
			w->crc ^= crc32(p, compress(v, r->size, p));
		}
		free(v);
		free(p);
	} break;
	}
	w->served++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct server *s = w->s;

	for (;;) {
		struct request r;

		pthread_mutex_lock(&s->lock);
		while (s->head == s->tail && !s->done)
			pthread_cond_wait(&s->ready, &s->lock);
		if (s->head == s->tail) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		r = s->queue[s->head++];
		pthread_mutex_unlock(&s->lock);
		if (r.id == SLOW)
			mt_mark_start();
		serve(w, &r);
		if (r.id == SLOW) /* slow: look at what it did */
			mt_take_snapshot_with_arg(r.id);
	}
}

static void make_request(struct request *r, int id)
{
	static const enum op ops[] = {PUT,  PUT, GET, GET,	GET,
				      SCAN, PUT, GET, COMPRESS, GET};

	r->id = id;
	r->op = id == SLOW ? COMPRESS : ops[id % 10];
	r->size = id == SLOW ? 12000 : 600;
	if (r->op == SCAN)
		snprintf(r->key, sizeof(r->key), "user:%d", id % 7);
	else
		snprintf(r->key, sizeof(r->key), "user:%d:%d", id % 7,
			 (id * 37) % 101);
}

int main(void)
{
	static struct server s = {.lock = PTHREAD_MUTEX_INITIALIZER,
				  .ready = PTHREAD_COND_INITIALIZER};
	struct worker w[WORKERS];
	pthread_t t[WORKERS];
	unsigned found = 0;
	uint32_t crc = 0;

	for (int i = 0; i < WORKERS; i++) {
		w[i] = (struct worker){.s = &s, .no = i};
		if (pthread_create(&t[i], NULL, worker_main, &w[i]))
			return 1;
	}
	for (int id = 0; id < REQUESTS; id++) {
		pthread_mutex_lock(&s.lock);
		make_request(&s.queue[s.tail++], id);
		pthread_cond_signal(&s.ready);
		pthread_mutex_unlock(&s.lock);
	}
	pthread_mutex_lock(&s.lock);
	s.done = 1;
	pthread_cond_broadcast(&s.ready);
	pthread_mutex_unlock(&s.lock);
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(t[i], NULL);
		printf("worker %d: %u requests\n", i, w[i].served);
		found += w[i].found;
		crc ^= w[i].crc;
	}
	printf("%zu keys, %u found, crc %08x\n", s.entries, found, crc);
	for (int b = 0; b < BUCKETS; b++)
		while (s.table[b]) {
			struct entry *e = s.table[b];

			s.table[b] = e->next;
			free(e->key);
			free(e);
		}
	return 0;
}
