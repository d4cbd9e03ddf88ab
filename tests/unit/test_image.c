/* SPDX-License-Identifier: MIT */
/*
 * image/: the walk over a function's code that tells stitching whether
 * one place can lead to another (img_code_never_reaches) and whether a
 * call to a function is on a path (img_code_calls_to); what an
 * instruction's bytes say (insn.c).
 */
#include "image/image.h"
#include "image/img_internal.h"
#include "tests/unit/check.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The walk over code at 0x1000 without landing pads. */
static bool never(const uint8_t *b, size_t n, uint64_t from, uint64_t to,
		  bool ret_to, bool (*twice)(void *ctx, uint64_t target))
{
	struct img_code c = {.bytes = b, .n = n, .lo = 0x1000, .twice = twice};

	return img_code_never_reaches(&c, from, to, ret_to);
}

/* A direct call's target at 0x4000 returns twice (a setjmp). */
static bool twice_at_4000(void *ctx, uint64_t target)
{
	(void)ctx;
	return target == 0x4000;
}

/* handle(): call parse; mov %eax,%edi; call respond; ret (at 0x1000) */
static const uint8_t straight[] = {
	0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
	0x89, 0xc7,		      /* 1005 mov */
	0xe8, 0xf4, 0x1f, 0x00, 0x00, /* 1007 call 3000 */
	0xc3,			      /* 100c ret */
};
/* the same in a loop: jne back to the first call */
static const uint8_t loop[] = {
	0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
	0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
	0x75, 0xf4,		      /* 100a jne 1000 */
	0xc3,			      /* 100c ret */
};

/*
 * The walk of a function's code from one call site's return address:
 * whether another call site can be reached in the same activation.
 * Hand-assembled, at 0x1000.
 */
static void test_never_reaches(struct check_state *cs)
{
	/* after the second call, a jump through a register */
	static const uint8_t indirect[] = {
		0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
		0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
		0xff, 0xe0,		      /* 100a jmp *%rax */
	};
	/* after the second call, a jump out of the function (a tail call,
	 * a cold part) and a conditional one: either way, the slice of this
	 * activation ends there, as segments/ builds them */
	static const uint8_t out[] = {
		0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
		0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
		0x74, 0x01,		      /* 100a je 100d */
		0xc3,			      /* 100c ret */
		0xe9, 0xee, 0x4f, 0x00, 0x00, /* 100d jmp 6000 */
	};
	/* a setjmp before both calls: a longjmp comes back after it */
	static const uint8_t sj[] = {
		0xe8, 0xfb, 0x2f, 0x00, 0x00, /* 1000 call 4000 */
		0xe8, 0xf6, 0x0f, 0x00, 0x00, /* 1005 call 2000 */
		0xe8, 0xf1, 0x1f, 0x00, 0x00, /* 100a call 3000 */
		0xc3,			      /* 100f ret */
	};
	/* the same, the setjmp called through a GOT slot (-fno-plt) */
	static const uint8_t sj_got[] = {
		0xff, 0x15, 0x00, 0x10, 0x00,
		0x00,			      /* 1000 call *0x1000(%rip) */
		0xe8, 0xf5, 0x0f, 0x00, 0x00, /* 1006 call 2000 */
		0xe8, 0xf0, 0x1f, 0x00, 0x00, /* 100b call 3000 */
		0xc3,			      /* 1010 ret */
	};
	/* a conditional branch over the second call, both ways followed */
	static const uint8_t cond[] = {
		0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
		0x74, 0x05,		      /* 1005 je 100c */
		0xe8, 0xf4, 0x1f, 0x00, 0x00, /* 1007 call 3000 */
		0xc3,			      /* 100c ret */
	};

	CHECK(cs,
	      never(straight, sizeof(straight), 0x100c, 0x1005, true, NULL));
	CHECK(cs,
	      !never(straight, sizeof(straight), 0x1005, 0x100c, true, NULL));
	CHECK(cs, !never(loop, sizeof(loop), 0x100a, 0x1005, true, NULL));
	CHECK(cs,
	      !never(indirect, sizeof(indirect), 0x100a, 0x1005, true, NULL));
	CHECK(cs, never(out, sizeof(out), 0x100a, 0x1005, true, NULL));
	CHECK(cs, !never(out, sizeof(out), 0x1005, 0x100a, true, NULL));
	CHECK(cs, never(sj, sizeof(sj), 0x100f, 0x100a, true, NULL));
	CHECK(cs, !never(sj, sizeof(sj), 0x100f, 0x100a, true, twice_at_4000));
	CHECK(cs, !never(sj_got, sizeof(sj_got), 0x1010, 0x100b, true,
			 twice_at_4000));
	CHECK(cs, never(sj_got, sizeof(sj_got), 0x1010, 0x100b, true, NULL));
	CHECK(cs, !never(cond, sizeof(cond), 0x1005, 0x100c, true, NULL));
	CHECK(cs, never(cond, sizeof(cond), 0x100c, 0x1005, true, NULL));
	/* A's leaf, back from parse() where B's parse() returned to: it
	 * goes on to respond() and returns, and never calls parse() */
	CHECK(cs,
	      never(straight, sizeof(straight), 0x1005, 0x1005, true, NULL));
	/* where control arrives, not a call's return */
	CHECK(cs,
	      never(straight, sizeof(straight), 0x100c, 0x1005, false, NULL));
	CHECK(cs,
	      !never(straight, sizeof(straight), 0x1005, 0x1007, false, NULL));
	CHECK(cs, !never(loop, sizeof(loop), 0x100a, 0x1000, false, NULL));
	/* no call ends at 1007: a return landing there was a jump */
	CHECK(cs,
	      !never(straight, sizeof(straight), 0x100c, 0x1007, true, NULL));
	/* The last instruction a call: one that never returns (abort) */
	{
		static const uint8_t noret[] = {
			0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
			0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
			0xe8, 0xf1, 0x2f, 0x00, 0x00, /* 100a call 4000 */
		};

		CHECK(cs,
		      never(noret, sizeof(noret), 0x100a, 0x1005, true, NULL));
	}
	/* An exception out of respond() lands at 100b, which calls parse()
	 * again: only the landing pad leads there. */
	{
		static const uint8_t eh[] = {
			0xe8, 0xfb, 0x0f, 0x00, 0x00, /* 1000 call 2000 */
			0xe8, 0xf6, 0x1f, 0x00, 0x00, /* 1005 call 3000 */
			0xc3,			      /* 100a ret */
			0xe8, 0xf0, 0x0f, 0x00, 0x00, /* 100b call 2000 */
			0xc3,			      /* 1010 ret */
		};
		static const struct img_lp pad = {0x1005, 0x100a, 0x100b};
		struct img_code c = {
			.bytes = eh, .n = sizeof(eh), .lo = 0x1000};

		CHECK(cs, img_code_never_reaches(&c, 0x100a, 0x1010, true));
		c.lps = &pad;
		c.nr_lps = 1;
		CHECK(cs, !img_code_never_reaches(&c, 0x100a, 0x1010, true));
		CHECK(cs, img_code_never_reaches(&c, 0x100a, 0x1005, true));
		/* a pad out of the code: a cold part, not followed */
		c.lps = &(const struct img_lp){0x1005, 0x100a, 0x5000};
		CHECK(cs, !img_code_never_reaches(&c, 0x100a, 0x1005, true));
	}
	/* from outside the code, or bytes that are no instruction */
	CHECK(cs,
	      !never(straight, sizeof(straight), 0x2000, 0x1005, true, NULL));
	CHECK(cs, !never(straight, 3, 0x1000, 0x1005, true, NULL));
}

/* A direct call's target is another function than callee, by name. */
static bool named_other(void *ctx, uint64_t target, uint64_t callee)
{
	(void)ctx;
	return target != callee;
}

/*
 * The walk for a call to a function: sure where a direct call to it is on
 * a path, never where every call on every path is to another by name,
 * maybe where a call or a jump could go anywhere.  At 0x1000.
 */
static void test_calls_to(struct check_state *cs)
{
	/* a call through a register, then a direct one, or a jump through
	 * one */
	static const uint8_t ptr[] = {
		0xff, 0xd0,		      /* 1000 call *%rax */
		0x74, 0x05,		      /* 1002 je 1009 */
		0xe8, 0xf7, 0x1f, 0x00, 0x00, /* 1004 call 3000 */
		0xff, 0xe0,		      /* 1009 jmp *%rax */
	};
	struct img_code c = {.bytes = straight,
			     .n = sizeof(straight),
			     .lo = 0x1000,
			     .other_fn = named_other};

	CHECK(cs, img_code_calls_to(&c, 0x1005, 0x3000) == IMG_CALLS_SURE);
	CHECK(cs, img_code_calls_to(&c, 0x1005, 0x2000) == IMG_CALLS_NEVER);
	CHECK(cs, img_code_calls_to(&c, 0x100c, 0x3000) == IMG_CALLS_NEVER);
	c.other_fn = NULL; /* no names: any call could be to it */
	CHECK(cs, img_code_calls_to(&c, 0x1005, 0x2000) == IMG_CALLS_MAYBE);
	c.other_fn = named_other;
	c.bytes = loop;
	c.n = sizeof(loop);
	CHECK(cs, img_code_calls_to(&c, 0x100a, 0x2000) == IMG_CALLS_SURE);
	c.bytes = ptr;
	c.n = sizeof(ptr);
	/* past the pointer, a direct call to 3000 on one way: sure */
	CHECK(cs, img_code_calls_to(&c, 0x1002, 0x3000) == IMG_CALLS_SURE);
	/* to another: the pointer and the jump could be to it */
	CHECK(cs, img_code_calls_to(&c, 0x1000, 0x4000) == IMG_CALLS_MAYBE);
	CHECK(cs, img_code_calls_to(&c, 0x1002, 0x4000) == IMG_CALLS_MAYBE);
}

static void test_call_len(struct check_state *st)
{
	static const struct {
		uint8_t b[15];
		size_t n;
		unsigned len;
	} c[] = {
		{{0xe8, 1, 2, 3, 4}, 5, 5},		/* call rel32 */
		{{0xff, 0xd0}, 2, 2},			/* call *%rax */
		{{0x41, 0xff, 0xd0}, 3, 3},		/* call *%r8 */
		{{0xff, 0x15, 1, 2, 3, 4}, 6, 6},	/* call *x(%rip) */
		{{0xff, 0x14, 0x25, 1, 2, 3, 4}, 7, 7}, /* call *abs32 */
		{{0xff, 0x50, 0x08}, 3, 3},		/* call *8(%rax) */
		{{0xff, 0x54, 0x24, 0x08}, 4, 4},	/* call *8(%rsp) */
		{{0xff, 0x90, 1, 2, 3, 4}, 6, 6},	/* disp32(%rax) */
		{{0x3e, 0xff, 0xd0}, 3, 3},		/* notrack */
		{{0xf2, 0xe8, 1, 2, 3, 4}, 6, 6},	/* bnd call */
		{{0x64, 0xff, 0x14, 0x25, 1, 2, 3, 4}, 8, 8},
		{{0xff, 0x18}, 2, 2},		  /* lcall *(%rax) */
		{{0xff, 0x5c, 0x24, 0x08}, 4, 4}, /* lcall *8(%rsp) */
		{{0x9a, 1, 2, 3, 4, 5, 6}, 7, 7}, /* lcall $6,$4 (32) */
		{{0x0f, 0x05}, 2, 2},		  /* syscall */
		{{0x0f, 0x34}, 2, 2},		  /* sysenter */
		{{0xcd, 0x80}, 2, 2},		  /* int $0x80 */
		{{0xcc}, 1, 1},			  /* int3 */
		{{0xff, 0x20}, 2, 0},		  /* jmp *(%rax) */
		{{0x0f, 0x07}, 2, 0},		  /* sysret */
		{{0x90}, 1, 0},
		{{0xe8, 1, 2}, 3, 0}, /* cut short */
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++)
		CHECKF(st, img_call_len(c[i].b, c[i].n) == c[i].len,
		       "case %zu: %u", i, img_call_len(c[i].b, c[i].n));
}

static void test_branch_bytes(struct check_state *st)
{
	static const struct {
		uint8_t b[15];
		size_t n;
		bool ok;
		uint64_t to;
	} c[] = {
		{{0xe8, 0xfb, 0xff, 0xff, 0xff}, 5, true, 0x1000}, /* call . */
		{{0xe9, 0x10, 0, 0, 0}, 5, true, 0x1015},	   /* jmp */
		{{0xeb, 0xfe}, 2, true, 0x1000},		   /* jmp . */
		{{0xeb, 0x80}, 2, true, 0x1000 + 2 - 128},
		{{0xf2, 0xe9, 0, 1, 0, 0}, 6, true, 0x1106}, /* bnd jmp */
		{{0x3e, 0xe8, 0, 0, 0, 0}, 6, true, 0x1006}, /* hinted */
		{{0xf2, 0xeb, 0x02}, 3, true, 0x1005},	     /* bnd jmp8 */
		{{0xe9, 1, 2}, 3, false, 0},		     /* cut short */
		{{0xff, 0xe0}, 2, false, 0},		     /* jmp *%rax */
		{{0xc3}, 1, false, 0},
		{{0}, 0, false, 0},
	};
	static const uint8_t ind[][4] = {
		{0xff, 0xe0},
		{0x3e, 0xff, 0xe0},
		{0x41, 0xff, 0xe0},
		{0xf2, 0xff, 0x20},
	};
	static const uint8_t not_ind[][2] = {{0xff, 0xd0}, {0xe9, 0}, {0xc3}};
	static const uint8_t sys[][2] = {
		{0x0f, 0x05}, {0x0f, 0x34}, {0xcd, 0x80}};

	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++) {
		uint64_t to = 0;
		bool ok = img_direct_target(c[i].b, c[i].n, 0x1000, &to);

		CHECKF(st, ok == c[i].ok && (!ok || to == c[i].to),
		       "case %zu: %d %#" PRIx64, i, ok, to);
	}
	for (size_t i = 0; i < sizeof(ind) / sizeof(*ind); i++)
		CHECKF(st, img_is_indirect_jump(ind[i], 4), "indirect %zu", i);
	for (size_t i = 0; i < sizeof(not_ind) / sizeof(*not_ind); i++)
		CHECKF(st, !img_is_indirect_jump(not_ind[i], 2),
		       "not indirect %zu", i);
	for (size_t i = 0; i < sizeof(sys) / sizeof(*sys); i++)
		CHECKF(st, img_is_syscall(sys[i], 2), "syscall %zu", i);
	CHECK(st, !img_is_syscall((const uint8_t[]){0xcd, 0x03}, 2));
	CHECK(st,
	      img_soft_interrupt_len((const uint8_t[]){0xcd, 0x03}, 2) == 2);
	CHECK(st, img_soft_interrupt_len((const uint8_t[]){0xcc}, 1) == 1);
	CHECK(st, !img_soft_interrupt_len((const uint8_t[]){0xe8, 0}, 2));
}

/* Each exec starts a space of its own, whatever order the sideband
 * dated them in; a process that never exec'd is its own space. */
static void test_spaces(struct check_state *st)
{
	struct img *im = NULL;
	uint32_t a, b, c;

	CHECK(st, !img_new(&im, "test", &(struct img_opts){0}));
	if (!im)
		return;
	CHECK(st, !img_add_exec(im, 100, 50));
	CHECK(st, !img_add_exec(im, 7, 30));
	CHECK(st, !img_add_exec(im, 100, 20));
	CHECK(st, img_space(im, 100, 19) == 100);
	a = img_space(im, 100, 20);
	b = img_space(im, 100, 50);
	c = img_space(im, 7, 30);
	CHECK(st, a != 100 && b != 100 && a != b && c != 7 && c != a);
	CHECK(st, img_space(im, 100, 49) == a);
	CHECK(st, img_space(im, 100, UINT64_MAX) == b);
	CHECK(st, img_space(im, 7, 29) == 7);
	CHECK(st, img_space_pid(a) == 100 && img_space_pid(b) == 100 &&
			  img_space_pid(c) == 7 && img_space_pid(100) == 100);
	CHECK(st, img_space(im, 5, 40) == 5);
	CHECK(st, img_space(im, (uint32_t)-1, 40) == (uint32_t)-1);
	CHECK(st, img_space_pid((uint32_t)-1) == (uint32_t)-1);
	/* Far more execs than keys: the last ones share one, never
	 * (uint32_t)-1, which says "no pid". */
	for (uint64_t t = 100; t < 1200; t++)
		CHECK(st, !img_add_exec(im, 4194303, t));
	CHECK(st, img_space(im, 4194303, 2000) != (uint32_t)-1 &&
			  img_space(im, 4194303, 2000) ==
				  img_space(im, 4194303, 1199));
	img_free(im);
}

/* The files space key maps, in the order mapped, as "a,c". */
static const char *files_of(const struct img *im, uint32_t key, char *buf,
			    size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (size_t i = 0; i < im->nr_maps; i++)
		if (im->maps[i].pid == key && at + 3 < len)
			at += (size_t)snprintf(
				buf + at, len - at, "%s%s", at ? "," : "",
				im->dsos[im->maps[i].dso].path + 1);
	return buf;
}

/* Code mapped where other code was begins a space with the rest of the
 * mappings; the same mapping again changes nothing; a forked child's
 * first mapping of its own keeps its parent's. */
static void test_spaces_remap(struct check_state *st)
{
	struct img *im = NULL;
	uint32_t k1, k2;
	uint64_t until;
	char buf[64];

	CHECK(st, !img_new(&im, "test", &(struct img_opts){0}));
	if (!im)
		return;
	CHECK(st, !img_add_exec(im, 100, 10));
	CHECK(st,
	      !img_map_at(im, 100, true, 20, 0x1000, 0x1000, 0, "/a", NULL, 0));
	CHECK(st,
	      !img_map_at(im, 100, true, 25, 0x5000, 0x1000, 0, "/c", NULL, 0));
	CHECK(st,
	      !img_map_at(im, 100, true, 30, 0x1000, 0x1000, 0, "/a", NULL, 0));
	k1 = img_space(im, 100, 30);
	CHECK(st, k1 != 100 && img_space(im, 100, 20) == k1);
	CHECK(st, !strcmp(files_of(im, k1, buf, sizeof(buf)), "a,c"));
	CHECK(st,
	      !img_map_at(im, 100, true, 40, 0x1800, 0x1000, 0, "/b", NULL, 0));
	k2 = img_space(im, 100, 40);
	CHECK(st, k2 != k1 && img_space(im, 100, 39) == k1);
	/* (what of /a /b leaves uncovered stays: [0x1000, 0x1800)) */
	CHECK(st, !strcmp(files_of(im, k2, buf, sizeof(buf)), "a,c,b"));
	CHECK(st, !strcmp(files_of(im, k1, buf, sizeof(buf)), "a,c"));
	/* New code where there was none goes into the earlier space too,
	 * for a thread that has not switched yet; a part of a file mapped
	 * inside its whole mapping is no change; code without a file begins
	 * no space. */
	CHECK(st,
	      !img_map_at(im, 100, true, 45, 0x8000, 0x1000, 0, "/z", NULL, 0));
	CHECK(st, !strcmp(files_of(im, k1, buf, sizeof(buf)), "a,c,z"));
	CHECK(st, !img_map_at(im, 100, true, 46, 0x8400, 0x400, 0x400, "/z",
			      NULL, 0));
	CHECK(st, !img_map_at(im, 100, true, 47, 0x8000, 0x1000, 0, "//anon",
			      NULL, 0));
	CHECK(st, img_space(im, 100, 47) == k2);
	CHECK(st, img_space_until(im, 100, 20, &until) == k1 && until == 40);
	CHECK(st, img_space_until(im, 100, 40, &until) == k2 &&
			  until == UINT64_MAX);
	CHECK(st, img_space_pid(k2) == 100);
	/* A child forked between: its parent's space then, and its own
	 * mapping beside. */
	CHECK(st, !img_set_parent(im, 200, img_space(im, 100, 35)));
	CHECK(st,
	      !img_map_at(im, 200, true, 50, 0x9000, 0x1000, 0, "/d", NULL, 0));
	CHECK(st, img_space(im, 200, 50) == 200);
	CHECK(st, !strcmp(files_of(im, 200, buf, sizeof(buf)), "a,c,z,d"));
	img_free(im);
}

/* A capture's address filter names a file: found in the space the
 * program mapped it in, for a stream that begins in the process's
 * first space (before the exec that enables the trace). */
static void test_spaces_filter(struct check_state *st)
{
	struct img *im = NULL;
	struct pt_conf_addr_filter f;

	CHECK(st, !img_new(&im, "test", &(struct img_opts){0}));
	if (!im)
		return;
	snprintf(im->pt.filter, sizeof(im->pt.filter),
		 "filter 0x10/0x20@/bin/prog");
	CHECK(st, !img_add_exec(im, 100, 10));
	CHECK(st, !img_map_at(im, 100, true, 20, 0x400000, 0x1000, 0,
			      "/bin/prog", NULL, 0));
	img_addr_filter(im, 100, &f);
	CHECK(st, f.config.ctl.addr0_cfg == 1 && f.addr0_a == 0x400010 &&
			  f.addr0_b == 0x40002f);
	/* A trace dated before the exec (a little early, or on another
	 * clock) reads the code of the next space that has some. */
	CHECK(st, img_map_owner(im, 100) == img_space(im, 100, 20));
	img_free(im);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_never_reaches);
	RUN(&st, test_calls_to);
	RUN(&st, test_call_len);
	RUN(&st, test_branch_bytes);
	RUN(&st, test_spaces);
	RUN(&st, test_spaces_remap);
	RUN(&st, test_spaces_filter);
	return CHECK_DONE(&st);
}
