/*
 * The Intel PT hardware backend: the CPU records, we keep the newest.
 *
 * One intel_pt event per online CPU follows the target and the threads it
 * creates (inherit); each has a data ring for sideband and an AUX area
 * mapped read-only, which puts the kernel in overwrite mode: the AUX area
 * is a ring that always holds the newest trace.  The snapshot disables
 * the events, copies every AUX ring unwrapped from aux_head (a position,
 * not a count, in this mode) and the sideband records as they are, and
 * writes them as the same perf.data file the emulator writes.
 *
 * Nothing in here can run without the PMU; pmu_probe() says why first.
 */
#include "capture/cap_internal.h"

#include <cpuid.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define DATA_PAGES SB_DATA_PAGES

struct cpu_ring {
	int fd;
	uint64_t id;
	struct perf_event_mmap_page *page;
	size_t page_len;
	uint8_t *aux;
	size_t aux_len;
};

static long pe_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, 0);
}

/* perf stores the config bits of a field as a mask. */
static uint64_t field_mask(const struct pt_pmu *p, const char *name)
{
	const struct pt_field *f = pmu_field(p, name);
	unsigned w;

	if (!f)
		return 0;
	w = (unsigned)(f->hi - f->lo + 1);
	return (w == 64 ? ~0ull : (1ull << w) - 1) << f->lo;
}

static void pt_info_of(const struct pt_pmu *p, const struct cpu_ring *r,
		       struct pd_pt_info *pt)
{
	unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;

	memset(pt, 0, sizeof(*pt));
	pt->pmu_type = p->type;
	pt->time_shift = r->page->time_shift;
	pt->time_mult = r->page->time_mult;
	pt->time_zero = r->page->time_zero;
	pt->cap_user_time_zero = r->page->cap_user_time_zero;
	pt->tsc_bit = field_mask(p, "tsc");
	pt->noretcomp_bit = field_mask(p, "noretcomp");
	pt->have_sched_switch = 1;
	pt->snapshot_mode = true;
	pt->per_cpu_mmaps = true;
	pt->have_mtc_group = true;
	pt->mtc_bit = field_mask(p, "mtc");
	pt->mtc_freq_bits = field_mask(p, "mtc_period");
	/* CPUID.15H: TSC / core crystal clock ratio, for MTC. */
	if (__get_cpuid_count(0x15, 0, &eax, &ebx, &ecx, &edx)) {
		pt->tsc_ctc_d = eax;
		pt->tsc_ctc_n = ebx;
	}
	pt->cyc_bit = field_mask(p, "cyc");
	pt->have_max_nonturbo = true;
	pt->max_nonturbo_ratio = p->max_nonturbo_ratio;
}

/* "GenuineIntel,6,85,4", as perf writes the CPUID feature. */
static void cpuid_string(char *buf, size_t len)
{
	unsigned a, b, c, d, fam, model;
	char vendor[13];

	__cpuid(0, a, b, c, d);
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	__cpuid(1, a, b, c, d);
	fam = (a >> 8) & 0xf;
	model = (a >> 4) & 0xf;
	if (fam == 6 || fam == 15)
		model += ((a >> 16) & 0xf) << 4;
	if (fam == 15)
		fam += (a >> 20) & 0xff;
	snprintf(buf, len, "%s,%u,%u,%u", vendor, fam, model, a & 0xf);
}

static void close_rings(struct cpu_ring *r, int n)
{
	for (int i = 0; i < n; i++) {
		if (r[i].aux)
			munmap(r[i].aux, r[i].aux_len);
		if (r[i].page)
			munmap(r[i].page, r[i].page_len);
		if (r[i].fd >= 0)
			close(r[i].fd);
	}
}

static int open_ring(struct cpu_ring *r, struct perf_event_attr *a, pid_t pid,
		     int cpu, size_t aux_len, char *err, size_t errlen)
{
	long page = sysconf(_SC_PAGESIZE);

	r->fd = (int)pe_open(a, pid, cpu);
	if (r->fd < 0) {
		int e = errno;

		snprintf(
			err, errlen, "perf_event_open(intel_pt, cpu %d): %s%s",
			cpu, strerror(e),
			e == EACCES || e == EPERM
				? " (see /proc/sys/kernel/perf_event_paranoid, "
				  "or CAP_PERFMON)"
				: "");
		return -e;
	}
	ioctl(r->fd, PERF_EVENT_IOC_ID, &r->id);
	r->page_len = (size_t)page * (1 + DATA_PAGES);
	r->page = mmap(NULL, r->page_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, 0);
	if (r->page == MAP_FAILED) {
		r->page = NULL;
		snprintf(err, errlen, "mmap of the sideband ring: %s",
			 strerror(errno));
		return -errno;
	}
	r->page->aux_offset = r->page_len;
	r->page->aux_size = aux_len;
	/* Read-only: the kernel overwrites the oldest trace (snapshot). */
	r->aux = mmap(NULL, aux_len, PROT_READ, MAP_SHARED, r->fd,
		      (off_t)r->page_len);
	if (r->aux == MAP_FAILED) {
		r->aux = NULL;
		snprintf(err, errlen, "mmap of the AUX area (%zu bytes): %s",
			 aux_len, strerror(errno));
		return -errno;
	}
	r->aux_len = aux_len;
	return 0;
}

int hw_run(char *const argv[], const struct hw_opts *o, char *err,
	   size_t errlen)
{
	struct pt_pmu pmu;
	struct perf_event_attr a;
	struct cpu_ring *rings = NULL;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN), go[2];
	uint64_t config;
	pid_t child;
	int rc, status;

	rc = pmu_probe(o->sysfs, &pmu, err, errlen);
	if (!rc)
		rc = pmu_config(&pmu, &o->req, &config, err, errlen);
	if (rc)
		return rc;
	if (pipe(go))
		return -errno;
	child = fork();
	if (child < 0)
		return -errno;
	if (!child) {
		char c;

		/* Held until the events follow us, then traced from exec. */
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		execvp(argv[0], argv);
		fprintf(stderr, "mt-capture: %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(go[0]);
	memset(&a, 0, sizeof(a));
	a.type = pmu.type;
	a.size = sizeof(a);
	a.config = config;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	a.disabled = 1;
	a.enable_on_exec = 1;
	a.inherit = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.mmap = a.mmap2 = a.comm = a.comm_exec = a.task = 1;
	a.context_switch = 1;
	a.sample_id_all = 1;
	rings = calloc((size_t)ncpu, sizeof(*rings));
	if (!rings) {
		rc = -ENOMEM;
		goto out;
	}
	for (int c = 0; c < ncpu; c++)
		rings[c].fd = -1;
	for (int c = 0; c < ncpu; c++) {
		rc = open_ring(&rings[c], &a, child, c, o->aux_size, err,
			       errlen);
		if (rc)
			goto out;
	}
	if (write(go[1], "g", 1) != 1) {
		rc = -errno;
		goto out;
	}
	/* Until the program ends or Ctrl-C. */
	while (!*o->stop) {
		pid_t p = waitpid(child, &status, WNOHANG);

		if (p == child)
			break;
		usleep(10000);
	}
	for (int c = 0; c < ncpu; c++)
		ioctl(rings[c].fd, PERF_EVENT_IOC_DISABLE, 0);
	{
		struct pd_writer *w;
		struct pd_err pe;
		struct pd_pt_info pt;
		uint64_t *ids = calloc((size_t)ncpu, sizeof(*ids));
		uint8_t *copy = malloc(o->aux_size);
		char cpuid[64];
		unsigned lo, hi;

		if (!ids || !copy) {
			free(ids);
			free(copy);
			rc = -ENOMEM;
			goto out;
		}
		for (int c = 0; c < ncpu; c++)
			ids[c] = rings[c].id;
		pt_info_of(&pmu, &rings[0], &pt);
		cpuid_string(cpuid, sizeof(cpuid));
		if (pd_writer_open(&w, o->output, PD_WRITE_FILE, &pe)) {
			snprintf(err, errlen, "%s", pe.msg);
			free(ids);
			free(copy);
			rc = -EIO;
			goto out;
		}
		rc = pd_writer_add_attr(w, &a, ids, (size_t)ncpu);
		if (!rc) {
			struct pd_time_conv tc = {
				.time_shift = pt.time_shift,
				.time_mult = pt.time_mult,
				.time_zero = pt.time_zero,
				.cap_user_time_zero = pt.cap_user_time_zero};

			rc = pd_write_time_conv(w, &tc) ||
			     pd_write_auxtrace_info(w, &pt, PD_PT_NR_FIXED,
						    true);
		}
		for (int c = 0; c < ncpu && !rc; c++)
			rc = sb_copy(w, rings[c].page, DATA_PAGES);
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		for (int c = 0; c < ncpu && !rc; c++) {
			uint64_t head = __atomic_load_n(
				&rings[c].page->aux_head, __ATOMIC_ACQUIRE);
			size_t n = pmu_ring_copy(rings[c].aux, rings[c].aux_len,
						 head, copy);
			struct pd_auxtrace at = {
				.size = n,
				.offset = head - n,
				.reference = ((uint64_t)hi << 32) | lo,
				.idx = (uint32_t)c,
				.tid = UINT32_MAX,
				.cpu = (uint32_t)c};

			if (n)
				rc = pd_write_auxtrace(w, &at, copy);
		}
		if (!rc)
			rc = pd_writer_set_feature_string(w, PD_FEAT_CPUID,
							  cpuid);
		if (rc) {
			snprintf(err, errlen, "%s", pd_writer_error(w)->msg);
			pd_writer_abort(w);
			rc = -EIO;
		} else if (pd_writer_finish(w, &pe)) {
			snprintf(err, errlen, "%s", pe.msg);
			rc = -EIO;
		}
		free(ids);
		free(copy);
	}
out:
	close(go[1]);
	if (rings)
		close_rings(rings, ncpu);
	free(rings);
	if (rc && child > 0)
		kill(child, SIGKILL);
	waitpid(child, &status, rc ? 0 : WNOHANG);
	return rc;
}
