/* SPDX-License-Identifier: MIT */
/*
 * The files of a libipt test case as its pttc left them, read the one way
 * both conformance tools need: mt-ptt-wrap (the capture made of a case)
 * and mt-ptt-check (what the case expects).
 *
 *   NAME.lst   nasm's listing: where each instruction is, its bytes, the
 *              labels
 *   NAME.ptt   the case's source: the org, the CPUs an erratum case is
 *              for, the options its ptxed run had
 *   NAME.bin, NAME.pt   the code and the packets, read whole
 */
#ifndef MT_PTT_FILES_H
#define MT_PTT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A line of code in the listing. */
struct lst_line {
	uint64_t off;	   /* from the org */
	uint64_t addr;	   /* the org known by then, plus off */
	const char *bytes; /* the bytes column: hex pairs, then "<rept>"
			      for a repeated line */
	const char *label; /* the label the line defines, NULL if none */
	size_t label_len;  /* not NUL-terminated: label_len chars */
};

/* Returns 0 to go on; anything else stops the reading and is returned. */
typedef int (*lst_line_fn)(void *ctx, const struct lst_line *l);

/*
 * The listing: "LINE OFFSET BYTES[<rept>]  [label:] insn" for code,
 * "LINE  [org 0x1000]" for directives.  fn sees every line of code, in
 * order.  *org is the org known already (0: none), which the listing's
 * first org directive sets when it is 0.  Returns 0, -1 with errno set
 * when path cannot be read, or what fn stopped with.
 */
int ptt_read_lst(const char *path, uint64_t *org, lst_line_fn fn, void *ctx);

/* What a case's .ptt says of how ptxed ran it; 0 where it says nothing. */
struct ptt_run {
	bool have_org;
	uint64_t org;
	/* "; cpu F/M": the first CPU an erratum case is for, unless ptxed's
	 * --cpu names one */
	bool have_cpu;
	unsigned family, model, stepping;
	bool have_mtc_freq;
	unsigned mtc_freq, nom_freq, ctc_eax, ctc_ebx;
	/* ptxed's address filter 0 (--filter:addr0_cfg 1): [a, b] */
	bool have_filter;
	unsigned long long filter_a, filter_b;
};

/* Fills r (zeroed first).  Returns 0, or -1 with errno set when path
 * cannot be read. */
int ptt_read_run(const char *path, struct ptt_run *r);

/* "F/M" or "F/M/S": family, model, stepping (0 when not given). */
bool ptt_parse_cpu(const char *s, unsigned *f, unsigned *m, unsigned *st);

/* The whole of path, NUL-terminated (not counted in *len), to free();
 * NULL with errno set when it cannot be read. */
uint8_t *ptt_slurp(const char *path, size_t *len);

#endif
