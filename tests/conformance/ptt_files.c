/* SPDX-License-Identifier: MIT */
/*
 * Reading a libipt test case's files: see ptt_files.h.
 */
#include "tests/conformance/ptt_files.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ptt_read_lst(const char *path, uint64_t *org, lst_line_fn fn, void *ctx)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int rc = 0;

	if (!f)
		return -1;
	while (!rc && fgets(line, sizeof(line), f)) {
		unsigned long line_no;
		unsigned long long v;
		char bytes[256];
		int n = 0;
		const char *p, *q;
		struct lst_line l;

		if (sscanf(line, " %lu [org %lli]", &line_no, &v) == 2) {
			if (!*org)
				*org = v;
			continue;
		}
		if (sscanf(line, " %lu %llx %255s %n", &line_no, &v, bytes,
			   &n) != 3 ||
		    !n || !isxdigit((unsigned char)bytes[0]))
			continue;
		l.off = v;
		l.addr = *org + v;
		l.bytes = bytes;
		p = line + n;
		q = p;
		while (isalnum((unsigned char)*q) || *q == '_' || *q == '.')
			q++;
		l.label = q > p && *q == ':' ? p : NULL;
		l.label_len = l.label ? (size_t)(q - p) : 0;
		rc = fn(ctx, &l);
	}
	fclose(f);
	return rc;
}

bool ptt_parse_cpu(const char *s, unsigned *f, unsigned *m, unsigned *st)
{
	*st = 0;
	return sscanf(s, "%u/%u/%u", f, m, st) >= 2;
}

/* The value after option opt in an opt: line, if there. */
static bool opt_value(const char *line, const char *opt, unsigned *v)
{
	const char *p = strstr(line, opt);
	size_t n = strlen(opt);

	if (!p || (p[n] != ' ' && p[n] != '='))
		return false;
	return sscanf(p + n + 1, "%i", (int *)v) == 1;
}

/* One "; opt:ptxed ..." (or ptdump) line, past the "; ". */
static void read_opts(const char *p, struct ptt_run *r)
{
	const char *q = strstr(p, "--cpu ");
	const char *a = strstr(p, "--filter:addr0_a "),
		   *b = strstr(p, "--filter:addr0_b ");

	if (q && !strncmp(p, "opt:ptxed", 9))
		r->have_cpu = ptt_parse_cpu(q + 6, &r->family, &r->model,
					    &r->stepping);
	if (opt_value(p, "--mtc-freq", &r->mtc_freq))
		r->have_mtc_freq = true;
	opt_value(p, "--nom-freq", &r->nom_freq);
	if (strstr(p, "--filter:addr0_cfg 1") && a && b &&
	    sscanf(a + 17, "%lli", &r->filter_a) == 1 &&
	    sscanf(b + 17, "%lli", &r->filter_b) == 1 &&
	    r->filter_b >= r->filter_a)
		r->have_filter = true;
	opt_value(p, "--cpuid-0x15.eax", &r->ctc_eax);
	opt_value(p, "--cpuid-0x15.ebx", &r->ctc_ebx);
}

int ptt_read_run(const char *path, struct ptt_run *r)
{
	FILE *f = fopen(path, "r");
	char line[1024];

	memset(r, 0, sizeof(*r));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		const char *p = line;
		unsigned long long org;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!r->have_org && sscanf(p, "org %lli", &org) == 1) {
			r->org = org;
			r->have_org = true;
			continue;
		}
		if (*p != ';')
			continue;
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		/* "; cpu F/M": a CPU the erratum case is for. */
		if (!strncmp(p, "cpu ", 4) && !r->have_cpu) {
			r->have_cpu = ptt_parse_cpu(p + 4, &r->family,
						    &r->model, &r->stepping);
			continue;
		}
		if (!strncmp(p, "opt:ptxed", 9) ||
		    !strncmp(p, "opt:ptdump", 10))
			read_opts(p, r);
	}
	fclose(f);
	return 0;
}

uint8_t *ptt_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0, got;

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap + 1);
			if (!nb)
				goto fail;
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	if (ferror(f)) {
		errno = EIO;
		goto fail;
	}
	fclose(f);
	buf[n] = 0;
	*len = n;
	return buf;
fail:
	n = (size_t)errno;
	fclose(f);
	free(buf);
	errno = (int)n;
	return NULL;
}
