/* SPDX-License-Identifier: MIT */
/*
 * The intel_pt PMU as sysfs describes it, and the perf_event_attr.config
 * a recording asks of it.
 *
 * Nothing here is hard-coded: the event type comes from type, every
 * config bit from the format/ files ("config:10", "config:14-17"), what
 * the CPU can do from caps/ (bits and bitmaps), and the nominal frequency
 * from max_nonturbo_ratio.  A request the caps cannot honour is refused
 * with one line saying which cap says no.
 *
 * The AUX ring copy lives here too: in overwrite (snapshot) mode the
 * kernel's aux_head is a position that only grows, not a byte count, so
 * the newest data ends at head % size and, once the ring has wrapped,
 * begins there too.
 */
#include "capture/pmu_internal.h"
#include "util/err.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The first line of dir/name, or a negative errno value (the caller
 * says what is missing, or takes it as a cap the CPU lacks). */
static int read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -ENODATA;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* A cap: what cannot be read or is no number the CPU does not have. */
static int read_hex(const char *dir, const char *name, uint64_t *v)
{
	char buf[64];

	int rc = read_line(dir, name, buf, sizeof(buf));

	return rc ? rc : mt_parse_u64(buf, 16, UINT64_MAX, v);
}

int pmu_probe(const char *dir, struct pt_pmu *p, char *err, size_t errlen)
{
	char buf[256], fdir[4096];
	struct dirent *d;
	DIR *dd;
	uint64_t v;

	memset(p, 0, sizeof(*p));
	if (read_line(dir, "type", buf, sizeof(buf)))
		return mt_err(err, errlen, -ENOENT,
			      "no intel_pt PMU (%s/type is missing): a virtual "
			      "machine, an AMD CPU or a CPU older than "
			      "Broadwell?; use --emulate",
			      dir);
	if (mt_parse_u64(buf, 10, UINT32_MAX, &v))
		return mt_err(err, errlen, -EINVAL,
			      "%s/type: '%s' is not a PMU type", dir, buf);
	p->type = (uint32_t)v;
	snprintf(fdir, sizeof(fdir), "%s/format", dir);
	dd = opendir(fdir);
	if (!dd)
		return mt_err(err, errlen, -ENOENT, "%s: missing", fdir);
	while ((d = readdir(dd)) && p->nr_fields < PMU_MAX_FIELDS) {
		unsigned lo, hi;
		struct pt_field *f;

		if (d->d_name[0] == '.' ||
		    read_line(fdir, d->d_name, buf, sizeof(buf)))
			continue;
		if (sscanf(buf, "config:%u-%u", &lo, &hi) != 2) {
			if (sscanf(buf, "config:%u", &lo) != 1)
				continue; /* config1/config2 fields: not ours */
			hi = lo;
		}
		if (lo > hi || hi > 63)
			continue;
		f = &p->fields[p->nr_fields++];
		snprintf(f->name, sizeof(f->name), "%s", d->d_name);
		f->lo = (uint8_t)lo;
		f->hi = (uint8_t)hi;
	}
	closedir(dd);
	snprintf(fdir, sizeof(fdir), "%s/caps", dir);
	p->psb_cyc = !read_hex(fdir, "psb_cyc", &v) && v;
	p->mtc = !read_hex(fdir, "mtc", &v) && v;
	p->ptwrite = !read_hex(fdir, "ptwrite", &v) && v;
	p->ip_filtering = !read_hex(fdir, "ip_filtering", &v) && v;
	if (!read_hex(fdir, "mtc_periods", &v))
		p->mtc_periods = (uint32_t)v;
	if (!read_hex(fdir, "cycle_thresholds", &v))
		p->cycle_thresholds = (uint32_t)v;
	if (!read_hex(fdir, "psb_periods", &v))
		p->psb_periods = (uint32_t)v;
	if (!read_hex(fdir, "num_address_ranges", &v))
		p->num_address_ranges = (uint32_t)v;
	if (!read_line(dir, "max_nonturbo_ratio", buf, sizeof(buf))) {
		if (mt_parse_u64(buf, 10, UINT32_MAX, &v))
			return mt_err(err, errlen, -EINVAL,
				      "%s/max_nonturbo_ratio: '%s' is not a "
				      "ratio",
				      dir, buf);
		p->max_nonturbo_ratio = (uint32_t)v;
	}
	return 0;
}

const struct pt_field *pmu_field(const struct pt_pmu *p, const char *name)
{
	for (size_t i = 0; i < p->nr_fields; i++)
		if (!strcmp(p->fields[i].name, name))
			return &p->fields[i];
	return NULL;
}

/* Put v into the named field of *config. */
static int set_field(const struct pt_pmu *p, const char *name, uint64_t v,
		     uint64_t *config, char *err, size_t errlen)
{
	const struct pt_field *f = pmu_field(p, name);
	unsigned width;
	uint64_t mask;

	if (!f)
		return mt_err(
			err, errlen, -EINVAL,
			"the intel_pt PMU has no '%s' field (format/%s is "
			"missing)",
			name, name);
	width = (unsigned)(f->hi - f->lo + 1);
	mask = width == 64 ? ~0ull : (1ull << width) - 1;
	if (v > mask)
		return mt_err(err, errlen, -EINVAL,
			      "%s=%llu does not fit its %u bits", name,
			      (unsigned long long)v, width);
	*config = (*config & ~(mask << f->lo)) | (v << f->lo);
	return 0;
}

/* The fields --timing-custom knows, and the largest value of each (the
 * width of its format field; the caps say which values the CPU has). */
static const struct {
	const char *name;
	unsigned max;
} custom_fields[] = {
	{"tsc", 1},	    {"mtc", 1},		{"cyc", 1},
	{"noretcomp", 1},   {"mtc_period", 15}, {"cyc_thresh", 15},
	{"psb_period", 15},
};

int pmu_parse_custom(const char *spec, struct pt_request *r, char *err,
		     size_t errlen)
{
	const char *at = spec;

	memset(r, 0, sizeof(*r));
	r->custom = true;
	while (*at) {
		size_t len = strcspn(at, ","), nl = strcspn(at, "=,");
		const char *end = at + nl + 1;
		uint64_t v;
		size_t k, nf = sizeof(custom_fields) / sizeof(*custom_fields);

		for (k = 0; k < nf; k++)
			if (strlen(custom_fields[k].name) == nl &&
			    !strncmp(at, custom_fields[k].name, nl))
				break;
		if (k == nf)
			return mt_err(err, errlen, -EINVAL,
				      "--timing-custom: unknown field '%.*s' "
				      "(tsc, mtc, cyc, noretcomp, mtc_period, "
				      "cyc_thresh, psb_period)",
				      (int)nl, at);
		if (nl == len || at[nl + 1] < '0' || at[nl + 1] > '9')
			return mt_err(err, errlen, -EINVAL,
				      "--timing-custom: %.*s wants a value "
				      "(%s=N)",
				      (int)nl, at, custom_fields[k].name);
		if (mt_scan_u64(&end, 0, custom_fields[k].max, &v) ||
		    end != at + len)
			return mt_err(err, errlen, -EINVAL,
				      "--timing-custom: %.*s is not a value of "
				      "%s (0 to %u)",
				      (int)len, at, custom_fields[k].name,
				      custom_fields[k].max);
		switch (k) {
		case 0:
			r->tsc = v;
			break;
		case 1:
			r->mtc = v;
			break;
		case 2:
			r->cyc = v;
			break;
		case 3:
			r->noretcomp = v;
			break;
		case 4:
			r->mtc_period = (unsigned)v;
			break;
		case 5:
			r->cyc_thresh = (unsigned)v;
			break;
		default:
			r->psb_period = (unsigned)v;
			break;
		}
		at += len;
		if (*at == ',' && !*++at)
			return mt_err(err, errlen, -EINVAL,
				      "--timing-custom: '%s' ends in a comma",
				      spec);
	}
	/* A period or threshold means its packets are wanted. */
	if (!r->tsc && !r->mtc && !r->cyc)
		return mt_err(err, errlen, -EINVAL,
			      "--timing-custom: '%s' has no timing at all (set "
			      "tsc=1, mtc=1 or cyc=1)",
			      spec);
	return 0;
}

int pmu_config(const struct pt_pmu *p, const struct pt_request *r,
	       uint64_t *config, char *err, size_t errlen)
{
	struct pt_request q = *r;
	int rc;

	/* The presets, as magic-trace users know them. */
	if (!q.custom) {
		q.tsc = true;
		q.mtc = q.timing != PT_TIMING_LOW;
		q.cyc = q.timing != PT_TIMING_LOW;
		q.noretcomp = q.timing == PT_TIMING_HIGH;
		q.mtc_period = q.mtc ? 3 : 0;
		q.cyc_thresh = q.cyc ? 1 : 0;
		q.psb_period = 0;
	}
	if (q.cyc && !p->psb_cyc)
		return mt_err(err, errlen, -ENOTSUP,
			      "this CPU's Intel PT cannot count cycles "
			      "(caps/psb_cyc is 0): use --timing low");
	if (q.mtc && !p->mtc)
		return mt_err(err, errlen, -ENOTSUP,
			      "this CPU's Intel PT has no MTC timing packets "
			      "(caps/mtc is 0): use --timing low");
	if (q.mtc && !(p->mtc_periods >> q.mtc_period & 1))
		return mt_err(err, errlen, -ENOTSUP,
			      "mtc_period=%u is not one this CPU offers "
			      "(caps/mtc_periods is %x)",
			      q.mtc_period, p->mtc_periods);
	if (q.cyc && q.cyc_thresh && !(p->cycle_thresholds >> q.cyc_thresh & 1))
		return mt_err(err, errlen, -ENOTSUP,
			      "cyc_thresh=%u is not one this CPU offers "
			      "(caps/cycle_thresholds is %x)",
			      q.cyc_thresh, p->cycle_thresholds);
	if (q.mtc_period && !q.mtc)
		return mt_err(err, errlen, -EINVAL,
			      "mtc_period=%u without mtc=1 has no effect",
			      q.mtc_period);
	if (q.cyc_thresh && !q.cyc)
		return mt_err(err, errlen, -EINVAL,
			      "cyc_thresh=%u without cyc=1 has no effect",
			      q.cyc_thresh);
	if (q.psb_period && !p->psb_cyc)
		return mt_err(err, errlen, -ENOTSUP,
			      "psb_period=%u: this CPU's PSB period is fixed "
			      "(caps/psb_cyc is 0)",
			      q.psb_period);
	if (q.ptwrite && !p->ptwrite)
		return mt_err(
			err, errlen, -ENOTSUP,
			"this CPU's Intel PT has no PTWRITE (caps/ptwrite "
			"is 0): mt_ptwrite() values are not recorded "
			"here");
	if (q.psb_period && !(p->psb_periods >> q.psb_period & 1))
		return mt_err(err, errlen, -ENOTSUP,
			      "psb_period=%u is not one this CPU offers "
			      "(caps/psb_periods is %x)",
			      q.psb_period, p->psb_periods);
	*config = 0;
	if ((rc = set_field(p, "pt", 1, config, err, errlen)) ||
	    (rc = set_field(p, "branch", 1, config, err, errlen)) ||
	    (q.tsc && (rc = set_field(p, "tsc", 1, config, err, errlen))) ||
	    (q.noretcomp &&
	     (rc = set_field(p, "noretcomp", 1, config, err, errlen))) ||
	    (q.mtc && ((rc = set_field(p, "mtc", 1, config, err, errlen)) ||
		       (rc = set_field(p, "mtc_period", q.mtc_period, config,
				       err, errlen)))) ||
	    (q.cyc && ((rc = set_field(p, "cyc", 1, config, err, errlen)) ||
		       (rc = set_field(p, "cyc_thresh", q.cyc_thresh, config,
				       err, errlen)))) ||
	    (q.psb_period && (rc = set_field(p, "psb_period", q.psb_period,
					     config, err, errlen))) ||
	    (q.ptwrite &&
	     ((rc = set_field(p, "ptw", 1, config, err, errlen)) ||
	      (rc = set_field(p, "fup_on_ptw", 1, config, err, errlen)))))
		return rc;
	return 0;
}

int pmu_check_filters(const struct pt_pmu *p, unsigned nranges, char *err,
		      size_t errlen)
{
	if (nranges && !p->ip_filtering)
		return mt_err(err, errlen, -ENOTSUP,
			      "this CPU's Intel PT cannot filter by address "
			      "(caps/ip_filtering is 0)");
	if (nranges > p->num_address_ranges)
		return mt_err(
			err, errlen, -ENOTSUP,
			"%u address range%s asked for, this CPU's Intel PT "
			"has %u (caps/num_address_ranges)",
			nranges, nranges == 1 ? "" : "s",
			p->num_address_ranges);
	return 0;
}

uint64_t pmu_effective_caps(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d))
		return 0;
	return (uint64_t)d[1].effective << 32 | d[0].effective;
}

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif

int pmu_check_kernel(const char *paranoid, uint64_t cap_eff, char *err,
		     size_t errlen)
{
	char buf[32];
	char *slash = strrchr(paranoid, '/');
	char dir[4096];
	int64_t level;

	/* CAP_PERFMON (or CAP_SYS_ADMIN before Linux 5.8) overrides
	 * perf_event_paranoid. */
	if (cap_eff >> CAP_PERFMON & 1 || cap_eff >> CAP_SYS_ADMIN & 1)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - paranoid) : 1,
		 slash ? paranoid : ".");
	if (read_line(dir, slash ? slash + 1 : paranoid, buf, sizeof(buf)))
		return mt_err(err, errlen, -EACCES,
			      "--include-kernel: cannot read %s, and this "
			      "process lacks CAP_PERFMON: run as root",
			      paranoid);
	if (mt_parse_i64(buf, 10, INT32_MIN, INT32_MAX, &level))
		return mt_err(err, errlen, -EINVAL,
			      "--include-kernel: %s: '%s' is not a level",
			      paranoid, buf);
	if (level <= 1)
		return 0;
	return mt_err(err, errlen, -EACCES,
		      "--include-kernel: %s is %lld (kernel tracing needs 1 or "
		      "less) and this process lacks CAP_PERFMON: run as root, "
		      "or lower it",
		      paranoid, (long long)level);
}

size_t pmu_ring_copy_since(const uint8_t *ring, size_t size, uint64_t head,
			   uint64_t since, uint8_t *out)
{
	uint64_t from = since, n;
	size_t at, first;

	if (!size || head <= since)
		return 0;
	if (head - from > size)
		from = head - size;
	n = head - from;
	at = (size_t)(from % size);
	first = size - at < n ? size - at : (size_t)n;
	memcpy(out, ring + at, first);
	memcpy(out + first, ring, (size_t)n - first);
	return (size_t)n;
}

size_t pmu_ring_copy(const uint8_t *ring, size_t size, uint64_t head,
		     uint8_t *out)
{
	size_t at;

	if (!size)
		return 0;
	if (head < size) {
		/* Never wrapped: the data is the ring's start. */
		memcpy(out, ring, (size_t)head);
		return (size_t)head;
	}
	at = (size_t)(head % size);
	memcpy(out, ring + at, size - at);
	memcpy(out + (size - at), ring, at);
	return size;
}
