/* SPDX-License-Identifier: MIT */
/*
 * The synthetic trace decodes, with libipt's instruction decoder, to
 * exactly the control flow the walker took: every call in the truth is a
 * decoded call to the same function, in the same order; returns and
 * syscalls match in number; the only decoder events out of the ordinary
 * are the overflows we injected.
 */
#include "synth/walk.h"
#include "tests/unit/check.h"

#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct flow {
	uint64_t *call_targets;
	size_t nr_calls, cap;
	uint64_t returns, far_calls, overflows, errors;
	uint64_t first_time, last_time;
	bool have_time;
};

static int add_call(struct flow *fl, uint64_t target)
{
	if (fl->nr_calls == fl->cap) {
		size_t cap = fl->cap ? fl->cap * 2 : 1024;
		uint64_t *v = realloc(fl->call_targets, cap * sizeof(*v));
		if (!v)
			return -1;
		fl->call_targets = v;
		fl->cap = cap;
	}
	fl->call_targets[fl->nr_calls++] = target;
	return 0;
}

static int drain(struct pt_insn_decoder *d, int st, struct flow *fl)
{
	while (st >= 0 && (st & pts_event_pending)) {
		struct pt_event ev;
		st = pt_insn_event(d, &ev, sizeof(ev));
		if (st >= 0 && ev.type == ptev_overflow)
			fl->overflows++;
	}
	return st;
}

static void decode(const struct program *p, const struct walk_thread *t,
		   struct flow *fl)
{
	struct pt_config cfg;
	struct pt_insn_decoder *d;
	bool pending_call = false;
	int st;

	pt_config_init(&cfg);
	cfg.begin = t->aux;
	cfg.end = t->aux + t->aux_len;
	cfg.cpuid_0x15_eax = 2;
	cfg.cpuid_0x15_ebx = 200;
	cfg.nom_freq = 24;
	cfg.mtc_freq = 3;
	d = pt_insn_alloc_decoder(&cfg);
	if (!d) {
		fl->errors++;
		return;
	}
	if (pt_image_add_file(pt_insn_get_image(d), p->path, p->text_offset,
			      p->text_size, NULL, p->text_vaddr) < 0) {
		fl->errors++;
		goto out;
	}
	for (;;) {
		st = pt_insn_sync_forward(d);
		if (st == -pte_eos)
			break;
		if (st < 0) {
			fl->errors++;
			break;
		}
		for (;;) {
			struct pt_insn in;
			st = drain(d, st, fl);
			if (st < 0)
				break;
			st = pt_insn_next(d, &in, sizeof(in));
			if (st < 0)
				break;
			if (pending_call && add_call(fl, in.ip))
				return;
			pending_call = in.iclass == ptic_call;
			if (in.iclass == ptic_return)
				fl->returns++;
			if (in.iclass == ptic_far_call)
				fl->far_calls++;
		}
		if (st != -pte_eos) {
			fprintf(stderr, "  decode error %s at offset ?\n",
				pt_errstr(pt_errcode(st)));
			fl->errors++;
		}
		break;
	}
out:
	pt_insn_free_decoder(d);
}

static bool near(uint64_t decoded, uint64_t truth)
{
	return decoded + 1 >= truth && decoded <= truth + 2;
}

struct cfgcase {
	const char *name;
	uint64_t seed, branches;
	enum ptenc_timing timing;
	bool noretcomp;
	unsigned start_depth;
	uint64_t gap_every;
	unsigned tnt_max;
};

static void run_case(struct check_state *cs, const struct cfgcase *k)
{
	char dir[] = "/tmp/mt-synth-flow.XXXXXX";
	struct program p;
	struct rng r;
	struct walk_thread t = {0};
	struct flow fl = {0};
	char err[512];
	struct walk_cfg c = {.seed = k->seed,
			     .branches = k->branches,
			     .root = 0,
			     .start_depth = k->start_depth,
			     .gap_every = k->gap_every,
			     .start_tsc = 0x123400000000ull,
			     .pt = {.timing = k->timing,
				    .noretcomp = k->noretcomp,
				    .psb_period = 0,
				    .mtc_period = 3,
				    .tsc_ctc_ratio = 100,
				    .cbr = 24,
				    .tnt_max = k->tnt_max,
				    .pad_chance = 8}};
	size_t ci = 0;
	uint64_t expect_calls = 0;

	CHECK(cs, mkdtemp(dir) != NULL);
	rng_seed(&r, k->seed);
	CHECK(cs, program_generate(&p, &r, 1, true, err, sizeof(err)) == 0);
	if (program_build(&p, dir, "cc", err, sizeof(err))) {
		CHECKF(cs, 0, "%s", err);
		goto out;
	}
	if (walk_thread_run(&p, &c, &t, err, sizeof(err))) {
		CHECKF(cs, 0, "%s", err);
		goto out;
	}
	decode(&p, &t, &fl);
	CHECKF(cs, fl.errors == 0, "%s: %llu decode errors", k->name,
	       (unsigned long long)fl.errors);
	CHECKF(cs, fl.overflows == t.gaps, "%s: %llu overflows, %llu gaps",
	       k->name, (unsigned long long)fl.overflows,
	       (unsigned long long)t.gaps);
	if (!k->gap_every) {
		/* Calls in the truth, in order, are the decoded calls. */
		for (size_t i = 0; i < t.nr_rows; i++) {
			const struct truth_row *row = &t.rows[i];
			if (row->flags &
			    (TRUTH_TAIL | TRUTH_CLIP_START | TRUTH_SYSCALL))
				continue;
			if (row->depth == 0)
				continue; /* the root, entered by TIP.PGE */
			expect_calls++;
			if (ci < fl.nr_calls &&
			    fl.call_targets[ci] != p.funcs[row->func].addr) {
				CHECKF(cs, 0,
				       "%s: call %zu goes to %#llx, truth says "
				       "%s",
				       k->name, ci,
				       (unsigned long long)fl.call_targets[ci],
				       p.funcs[row->func].name);
				break;
			}
			ci++;
		}
		/*
		 * The end of the trace may cut the last call short, and the
		 * decoder runs on through direct calls that need no packet.
		 */
		CHECKF(cs, near(fl.nr_calls, expect_calls),
		       "%s: decoded %zu calls, truth has %llu", k->name,
		       fl.nr_calls, (unsigned long long)expect_calls);
		CHECKF(cs, near(fl.returns, t.returns),
		       "%s: decoded %llu returns, walker made %llu", k->name,
		       (unsigned long long)fl.returns,
		       (unsigned long long)t.returns);
		CHECKF(cs, near(fl.far_calls, t.syscalls),
		       "%s: decoded %llu syscalls, walker made %llu", k->name,
		       (unsigned long long)fl.far_calls,
		       (unsigned long long)t.syscalls);
	}
out:
	free(fl.call_targets);
	walk_thread_free(&t);
	{
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "  could not remove %s\n", dir);
	}
	program_free(&p);
}

static const struct cfgcase cases[] = {
	{"mtc", 1, 20000, PTENC_MTC, false, 0, 0, 6},
	{"tsc", 2, 20000, PTENC_TSC, false, 0, 0, 6},
	{"cyc", 3, 20000, PTENC_CYC, false, 0, 0, 47},
	{"noretcomp", 4, 20000, PTENC_MTC, true, 0, 0, 6},
	{"start_depth", 5, 20000, PTENC_MTC, false, 7, 0, 6},
	{"tnt64", 6, 20000, PTENC_CYC, true, 3, 0, 47},
	{"gaps", 7, 50000, PTENC_MTC, false, 2, 2000, 6},
	{"deep", 8, 60000, PTENC_MTC, false, 0, 0, 6},
};

static void test_flow_matches_truth(struct check_state *cs)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(cs, &cases[i]);
}

int main(void)
{
	struct check_state cs = {0};
	RUN(&cs, test_flow_matches_truth);
	return CHECK_DONE(&cs);
}
