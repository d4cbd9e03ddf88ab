/* SPDX-License-Identifier: MIT */
/*
 * The capture's address filter, in libipt's terms.
 *
 * The hardware stops tracing on its own where the filter says (a TIP.PGD
 * leaving a filter range, TraceStop), and libipt must know the ranges to
 * follow it: without them its SKL014 workaround (a TIP.PGD without an
 * IP after a direct branch out of the range) cannot tell where tracing
 * stopped, and the decoder runs on past the stop.  perf keeps the filter
 * as the kernel took it: a list of "ACTION ADDR[/SIZE][@FILE]", where an
 * ADDR with a FILE is an offset in that file, mapped where the process
 * mapped the file.
 */
#include "image/img_internal.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NR_RANGES = 4 };

/* Runtime address of file offset off in path for pid's mappings (any
 * space of pid's process when pid's own has none: the filter is set
 * once for a stream, which may begin before the program's exec);
 * false when no mapping of that file covers it. */
static bool file_address(const struct img *c, uint32_t pid, const char *path,
			 uint64_t off, uint64_t *out)
{
	uint32_t owner = img_map_owner(c, pid);

	for (int any = 0; any < 2; any++)
		for (size_t i = c->nr_maps; i-- > 0;) {
			const struct img_map *m = &c->maps[i];

			if ((any ? img_space_pid(m->pid) != img_space_pid(pid)
				 : m->pid != owner) ||
			    strcmp(c->dsos[m->dso].path, path))
				continue;
			if (off >= m->pgoff &&
			    off - m->pgoff < m->end - m->start) {
				*out = m->start + (off - m->pgoff);
				return true;
			}
		}
	return false;
}

static void set_filter_range(struct pt_conf_addr_filter *f, unsigned n,
			     uint32_t cfg, uint64_t a, uint64_t b)
{
	uint64_t *ab = &f->addr0_a + 2 * n;

	switch (n) {
	case 0:
		f->config.ctl.addr0_cfg = cfg;
		break;
	case 1:
		f->config.ctl.addr1_cfg = cfg;
		break;
	case 2:
		f->config.ctl.addr2_cfg = cfg;
		break;
	default:
		f->config.ctl.addr3_cfg = cfg;
		break;
	}
	ab[0] = a;
	ab[1] = b;
}

/* One "ADDR[/SIZE][@FILE]" as range n; a range no mapping covers stays
 * off (it still takes its place: the kernel numbers them in order). */
static void parse_range(const struct img *c, uint32_t pid, const char *spec,
			uint32_t cfg, unsigned n, struct pt_conf_addr_filter *f)
{
	const char *file = strchr(spec, '@'), *end = spec;
	uint64_t addr, size = 0;

	if (mt_scan_u64(&end, 0, UINT64_MAX, &addr))
		return;
	if (*end == '/') {
		end++;
		if (mt_scan_u64(&end, 0, UINT64_MAX, &size))
			return;
	}
	if (file ? end != file : *end)
		return;
	if (file && !file_address(c, pid, file + 1, addr, &addr))
		return;
	set_filter_range(f, n, cfg, addr, addr + (size ? size - 1 : 0));
}

void img_addr_filter(const struct img *c, uint32_t pid,
		     struct pt_conf_addr_filter *f)
{
	char buf[sizeof(c->pt.filter)], *save = NULL, *tok;
	uint32_t cfg = 0;
	unsigned n = 0;
	bool want_spec = false;

	memset(f, 0, sizeof(*f));
	snprintf(buf, sizeof(buf), "%s", c->pt.filter);
	for (tok = strtok_r(buf, " ,\n", &save); tok && n < NR_RANGES;
	     tok = strtok_r(NULL, " ,\n", &save)) {
		if (!want_spec) {
			if (!strcmp(tok, "filter"))
				cfg = 1; /* IP filter: trace inside */
			else if (!strcmp(tok, "stop") ||
				 !strcmp(tok, "tracestop"))
				cfg = 2; /* TraceStop */
			else
				cfg = 0; /* start: no Intel PT meaning */
			want_spec = true;
			continue;
		}
		if (cfg)
			parse_range(c, pid, tok, cfg, n, f);
		n++;
		want_spec = false;
	}
}
