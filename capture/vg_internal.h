/* SPDX-License-Identifier: MIT */
/*
 * What the parts of the Valgrind backend share: vg_capture.c (the tool's
 * processes and their sockets), vg_hot.c (the records most of the stream
 * is) and vg_record.c (every record, and what the records do).
 */
#ifndef MT_VG_INTERNAL_H
#define MT_VG_INTERNAL_H

#include "capture/emu_internal.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The records of vgtool/mtpt.c. */
enum {
	R_HELLO = 'H',
	R_SWITCH = 'S',
	R_BEGIN = 'B',
	R_TNT = 'N',
	R_COND = 'C',
	R_JMP = 'J',
	R_CALL = 'c',
	R_ICALL = 'i',
	R_IJMP = 'j',
	R_RET = 'r',
	R_SYSCALL = 'y',
	R_ASYNC = 'a',
	R_ENABLE = 'e',
	R_EXIT = 'x',
	R_MMAP = 'm',
	R_HIT = 'h',
	R_PTW = 'w',
	R_END = 'E',
	R_EXEC = 'X',
	R_GO = 'g',
	R_PSB = 'P',
	R_STACK = 'k',
	R_STACKS = 'K',
	R_PACKED = 0x80,
};
#define VG_MAGIC 0x6d747074u

/*
 * The time an exec takes on the virtual clock: about what the kernel
 * takes natively, and more than two MTC periods, so that a decoder, which
 * dates the new program's first branches by the MTC before them, dates
 * them after the exec's COMM.
 */
#define EXEC_NS 50000

/*
 * The shared ring each process's tool writes its records to (the
 * socket carries the hello and the answer, then only a byte that wakes a
 * side that said it sleeps, and its end says the process is gone).  A
 * memfd: a page of positions, then the ring, which the tool fills with
 * its buffer's bytes (64 KiB at most at once: vgtool/mtpt.c has the
 * writer's side), a record cut at the ring's end or anywhere.  Here the
 * ring is mapped twice in a row, so that whatever is unread is one run
 * of bytes.
 */
struct vg_ring_hdr {
	uint64_t wpos;	 /* bytes published: the tool's */
	uint64_t rwake;	 /* we sleep until wpos reaches this */
	uint32_t rsleep; /* we sleep: the tool wakes us */
	uint32_t closed; /* we read no more: the tool stops */
	uint64_t size;	 /* of the ring */
	uint32_t stacks; /* we ask for every thread's stack (we stop) */
	uint8_t pad[28];
	uint64_t rpos;	 /* bytes read: ours */
	uint64_t wwake;	 /* the tool waits for this rpos */
	uint32_t wsleep; /* the tool waits: we wake it */
};
#define VG_RING_HDR  4096u
#define VG_RING_MIN  (128u << 10) /* twice the tool's buffer */
#define VG_RING_SIZE (1u << 20)

struct vg_ring {
	struct vg_ring_hdr *h;
	const uint8_t *data; /* the ring, twice */
	size_t size, maplen;
	uint64_t seen; /* wpos as last read */
};

/* vg_ring.c */
/* A ring of size bytes (a multiple of the page size, VG_RING_MIN at least)
 * and its file, to hand to the tool: 0 or a negative errno. */
int vg_ring_new(size_t size, struct vg_ring **out, int *fd);
/* The closed flag set (the tool stops writing), the ring unmapped. */
void vg_ring_free(struct vg_ring *r);
/* What is unread at *p, *len bytes: 1 when some are new since the last
 * call, 0 when none are, -EPROTO when the positions are not as they can
 * be. */
int vg_ring_unread(struct vg_ring *r, const uint8_t **p, size_t *len);
/* n bytes read: true when the tool waits for them (wake it). */
bool vg_ring_consume(struct vg_ring *r, size_t n);
/* We are to sleep, and are woken when the tool has published want more
 * bytes, or says so: false when there is something new already. */
bool vg_ring_sleep(struct vg_ring *r, size_t want);
/* Awake again: the tool need not wake us. */
void vg_ring_awake(struct vg_ring *r);
/* We read no more: the tool stops. */
void vg_ring_close(struct vg_ring *r);
/* We stop: the tool is to send every thread's stack (R_STACK records,
 * then R_STACKS) after its next branch. */
void vg_ring_ask_stacks(struct vg_ring *r);

/* A record cut short by the end of what was read: read more. */
#define SHORT 1

/*
 * One process's stream: each connects on its own (the first, a fork of a
 * traced one, the program an exec starts).  The one being read is swapped
 * into struct vg's fields of the same names, which the records use.
 */
struct vgs {
	int sock;	      /* -1 once it closed */
	struct vg_ring *ring; /* once it is answered (traced) */
	uint8_t *buf;
	size_t len, cap;
	uint64_t now;
	size_t cur;
	pid_t pid;
	bool hello, ended, exec_pending, later, need_comm;
	bool stacked;
	uint64_t exec_at;
};

struct vg {
	struct emu e;
	int sock;
	struct vg_ring *ring;
	pid_t child;
	/* What is read: the socket's bytes before the ring, else the
	 * ring's; vg_parse() says how many it used. */
	uint8_t *buf;
	size_t len, cap, used;
	size_t ring_size; /* of each process's ring */
	uint64_t now;	  /* the stream's clock: the last record's time */
	bool hello, ended, hit;
	/* The stacks asked for came (R_STACKS): the stream is read no
	 * further, as they are the threads' where it is cut. */
	bool stacked;
	char exec[256]; /* what the program last tried to exec, or "" */
	size_t cur;	/* the thread the records are of, or SIZE_MAX */
	/* The stream's process; its last record an exec's; it is not the
	 * first process as it began (its tasks are dated records); it
	 * exec'd and its command name is still to come. */
	pid_t spid;
	bool exec_pending, later, need_comm;
	/* The time of the stream's exec (0: none): the mappings of the new
	 * program made before it runs an instruction are dated there, as
	 * the kernel's come with the exec, not after it. */
	uint64_t exec_at;
	/* Where each process's tool connects (abstract), and the streams. */
	int lsock;
	char lname[64];
	struct vgs *strm;
	size_t nr_strm, cap_strm;
	uint64_t newest; /* the newest time of any stream */
	bool main_ended; /* the first process's stream ended as it should */
	bool reaped;	 /* Valgrind's process waited for: status */
	int status;
	uint64_t *sys_next; /* per thread: where its system call returns */
	/* Where tracing begins: --start-at, else main (main.main in Go). */
	const char *start;
	/* A program without a "main" symbol: main's file and offset. */
	char start_file[PATH_MAX];
	uint64_t start_off;
	/* A trigger that is no function: addr:, or FILE:LINE as offsets
	 * ("%llx,...") of the executable trig_file. */
	uint64_t trig_addr;
	char trig_file[PATH_MAX];
	char *trig_offs;
};

/* A cursor over one record. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

/* The count of a pack of branches (a record's u64, not 0): where its
 * leading 1 is, the branches below it. */
static inline unsigned vg_pack_n(uint64_t word)
{
	return 63 - (unsigned)__builtin_clzll(word);
}

/* vg_hot.c */
/* Every whole record read so far (v->used bytes); what is cut short
 * waits for more. */
int vg_parse(struct vg *v);

/* vg_capture.c */
/* The answer to the hello of the stream read ('N', 'S' or 'T'), with the
 * ring its records go to when it is traced: 0, 1 when the process is
 * gone (its stream ends), or a negative code. */
int vg_answer(struct vg *v, char say);

/* vg_record.c */
/* One record at r: 0, 1 when the capture ends with it, SHORT (r->bad)
 * when it is not all there yet, or a negative code. */
int vg_record(struct vg *v, struct rd *r);
/* --snapshot-size: the ring of t keeps the newest bytes. */
void vg_trim(struct vg *v, struct thr *t);

/* After a transfer to ip at now: the thread's last IP, and a PSB where
 * the encoder wants one, the ring trimmed to it.  Returns 0 or
 * mt_fail()'s code. */
static inline int vg_psb_at(struct vg *v, struct thr *t, uint64_t now,
			    uint64_t ip)
{
	int sync;

	t->last_ip = ip;
	sync = ptenc_maybe_psb(t->enc, now, ip);
	if (sync < 0)
		return mt_fail(&v->e, -ENOMEM, "out of memory encoding trace");
	if (sync)
		vg_trim(v, t);
	return 0;
}

/* A pack's returns go above the stack of calls: a failure, said. */
int vg_ret_above(struct emu *e);

/* --drop-every: are the packets of this record's n branches lost? 1
 * (lost, tracing resuming at ip), 0 or -ENOMEM. */
int vg_drop(struct vg *v, struct thr *t, unsigned n, uint64_t ip);

#endif
