/* SPDX-License-Identifier: MIT */
/*
 * perfdata: perf's own verdict on the captures we write, in both file
 * modes (skipped where perf is not installed).
 */
#include "perfdata/perfdata.h"
#include "tests/unit/check.h"
#include "tests/unit/pd_sample.h"
#include "tests/unit/testfs.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static bool have_perf(void)
{
	return system("perf version >/dev/null 2>&1") == 0;
}

/* Runs CMD, keeps the start of its output in OUT; returns the status. */
static int run_cmd(const char *cmd, char *out, size_t n)
{
	FILE *p = popen(cmd, "r");
	char sink[4096];
	size_t len = 0, k;
	int status;

	out[0] = 0;
	if (!p)
		return -1;
	while (len + 1 < n && (k = fread(out + len, 1, n - 1 - len, p)) > 0)
		len += k;
	out[len] = 0;
	/* read the rest so that perf does not die of SIGPIPE */
	while (fread(sink, 1, sizeof(sink), p) > 0)
		;
	status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static unsigned perf_stat(const char *out, const char *name)
{
	char key[64];
	const char *p;
	unsigned v = 0;

	snprintf(key, sizeof(key), " %s events:", name);
	p = strstr(out, "Aggregated stats");
	if (p)
		p = strstr(p, key);
	if (p)
		sscanf(p + strlen(key), "%u", &v);
	return v;
}

static void perf_accepts(struct check_state *st, enum pd_write_mode mode)
{
	char dir[64], path[128], cmd[512], in[200];
	char err[512] = "";
	size_t n = 1 << 20;
	char *out = malloc(n);
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/perf.data", dir);
	rc = write_sample(path, mode, V_PERF, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (rc || !out)
		goto out;
	/*
	 * perf 6.1 reads a piped file correctly only from a real pipe: from
	 * a file (even as stdin) it seeks to offsets that leave out the
	 * 16-byte header and loses its place after the first AUXTRACE.
	 */
	if (mode == PD_WRITE_PIPED)
		snprintf(in, sizeof(in), "cat %s | perf", path);
	else
		snprintf(in, sizeof(in), "perf");
	snprintf(cmd, sizeof(cmd), "%s report --stats -i %s 2>&1", in,
		 mode == PD_WRITE_PIPED ? "-" : path);
	rc = run_cmd(cmd, out, n);
	CHECKF(st, rc == 0 && !strstr(out, "Error:"), "%s: exit %d:\n%.2000s",
	       cmd, rc, out);
	CHECKF(st,
	       perf_stat(out, "COMM") == 2 && perf_stat(out, "MMAP") == 1 &&
		       perf_stat(out, "MMAP2") == 2 &&
		       perf_stat(out, "FORK") == 1 &&
		       perf_stat(out, "EXIT") == 1 &&
		       perf_stat(out, "AUX") == 1 &&
		       perf_stat(out, "ITRACE_START") == 1 &&
		       perf_stat(out, "SWITCH") == 1 &&
		       perf_stat(out, "SWITCH_CPU_WIDE") == 1 &&
		       perf_stat(out, "LOST") == 1 &&
		       perf_stat(out, "SAMPLE") == 1 &&
		       perf_stat(out, "AUXTRACE_INFO") == 1 &&
		       perf_stat(out, "AUXTRACE") == 2 &&
		       perf_stat(out, "TIME_CONV") == 2 &&
		       perf_stat(out, "FINISHED_ROUND") == 1,
	       "%s: unexpected counts:\n%.3000s", cmd,
	       strstr(out, "Aggregated") ? strstr(out, "Aggregated") : out);
	if (mode == PD_WRITE_PIPED)
		CHECKF(st,
		       perf_stat(out, "ATTR") == 2 &&
			       perf_stat(out, "FEATURE") == 2 &&
			       perf_stat(out, "BUILD_ID") == 2,
		       "%s: unexpected counts:\n%.3000s", cmd, out);
	snprintf(cmd, sizeof(cmd), "%s report -D -i %s 2>&1", in,
		 mode == PD_WRITE_PIPED ? "-" : path);
	rc = run_cmd(cmd, out, n);
	CHECKF(st, rc == 0 && !strstr(out, "Error:"), "%s: exit %d:\n%.2000s",
	       cmd, rc, out);
	CHECKF(st,
	       strstr(out, "PERF_RECORD_MMAP2 100/101: [0x401000(0x3000) "
			   "@ 0x1000 <deadbeef0102030405060708090a0b0c0d0e"
			   "0f10>]: r-xp /bin/prog"),
	       "%s: no build-id MMAP2 in the dump", cmd);
	CHECKF(st, strstr(out, "PSBEND") != NULL,
	       "%s: perf decoded no PT packets", cmd);
	CHECKF(st,
	       strstr(out, "Filter string       filter 0x10/0x20@/bin/prog"),
	       "%s: AUXTRACE_INFO not as written", cmd);
	snprintf(cmd, sizeof(cmd), "%s script -i %s --itrace=cre 2>&1", in,
		 mode == PD_WRITE_PIPED ? "-" : path);
	rc = run_cmd(cmd, out, n);
	CHECKF(st, rc == 0 && !strstr(out, "Error:"), "%s: exit %d:\n%.2000s",
	       cmd, rc, out);
	if (mode == PD_WRITE_FILE) {
		snprintf(cmd, sizeof(cmd),
			 "perf report --header-only -i %s 2>&1", path);
		rc = run_cmd(cmd, out, n);
		CHECKF(st,
		       rc == 0 && strstr(out, "hostname : testhost") &&
			       strstr(out, "cpuid : GenuineIntel,6,85,4"),
		       "%s: exit %d:\n%.2000s", cmd, rc, out);
		snprintf(cmd, sizeof(cmd), "perf buildid-list -i %s 2>&1",
			 path);
		rc = run_cmd(cmd, out, n);
		CHECKF(st,
		       rc == 0 && strstr(out, "deadbeef0102030405060708090"
					      "a0b0c0d0e0f10 /bin/prog"),
		       "%s: exit %d:\n%.2000s", cmd, rc, out);
	}
out:
	free(out);
	tmpdir_remove(dir);
}

static void test_perf_accepts_file(struct check_state *st)
{
	perf_accepts(st, PD_WRITE_FILE);
}

static void test_perf_accepts_piped(struct check_state *st)
{
	perf_accepts(st, PD_WRITE_PIPED);
}

int main(void)
{
	struct check_state st = {0};

	if (have_perf()) {
		RUN(&st, test_perf_accepts_file);
		RUN(&st, test_perf_accepts_piped);
	} else {
		printf("SKIP test_perf_accepts_file (perf not installed)\n");
		printf("SKIP test_perf_accepts_piped (perf not installed)\n");
	}
	return CHECK_DONE(&st);
}
