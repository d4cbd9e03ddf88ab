/* SPDX-License-Identifier: MIT */
/*
 * perfdata: captures truncated at every byte in both file modes, fields
 * corrupted one by one, and a file whose data.size was never written.
 */
#include "perfdata/perfdata.h"
#include "tests/unit/check.h"
#include "tests/unit/pd_sample.h"
#include "tests/unit/testfs.h"

#include <stdlib.h>
#include <string.h>

static void truncate_all(struct check_state *st, enum pd_write_mode mode)
{
	char dir[64], path[128], cut[128];
	char err[512] = "";
	uint8_t *d;
	size_t len, nrec, full_nrec = 0;
	uint64_t *starts = NULL;
	size_t nstarts = 0;
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/small.data", dir);
	snprintf(cut, sizeof(cut), "%s/cut.data", dir);
	rc = write_sample(path, mode, V_SMALL, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	d = slurp(path, &len);
	CHECK(st, d && len > 200);
	if (rc || !d)
		goto out;
	CHECK(st, walk_all(path, err, sizeof(err), &full_nrec) == 0);

	/* Record boundaries: a piped file cut exactly there just ends. */
	{
		struct pd_file *f;
		struct pd_event ev;
		uint64_t c = 0;

		starts = calloc(full_nrec + 2, sizeof(*starts));
		if (starts && !pd_open(&f, path, err, sizeof(err))) {
			starts[nstarts++] = 16;
			while (pd_next(f, &c, &ev, err, sizeof(err)) == 1)
				starts[nstarts++] = c;
			pd_close(f);
		}
	}
	for (size_t l = 0; l < len; l++) {
		bool boundary = false;

		if (spit(cut, d, l)) {
			CHECK(st, !"cannot write the cut file");
			break;
		}
		err[0] = '\0';
		rc = walk_all(cut, err, sizeof(err), &nrec);
		for (size_t k = 0; k < nstarts; k++)
			if (starts[k] == l)
				boundary = true;
		if (rc) {
			CHECKF(st, err[0] && strstr(err, cut),
			       "length %zu: rc %d msg '%s'", l, rc, err);
			CHECKF(st, rc == -EOVERFLOW || rc == -EBADMSG,
			       "length %zu: rc %d: %s", l, rc, err);
		}
		if (mode == PD_WRITE_FILE)
			CHECKF(st, rc != 0,
			       "regular file cut at %zu/%zu read "
			       "cleanly",
			       l, len);
		else if (!boundary)
			CHECKF(st, rc != 0,
			       "piped file cut inside a record at "
			       "%zu/%zu read cleanly",
			       l, len);
		else
			CHECKF(st, rc == 0 && nrec < full_nrec,
			       "piped file cut at record boundary %zu: rc %d "
			       "%s",
			       l, rc, err);
	}
out:
	free(starts);
	free(d);
	tmpdir_remove(dir);
}

static void test_truncate_file(struct check_state *st)
{
	truncate_all(st, PD_WRITE_FILE);
}

static void test_truncate_piped(struct check_state *st)
{
	truncate_all(st, PD_WRITE_PIPED);
}

struct corruption {
	const char *what;
	size_t off; /* where to write; SIZE_MAX: see below */
	int width;  /* 2, 4 or 8 */
	uint64_t value;
	int code;     /* expected errno value, or 0 for "either" */
	bool at_open; /* the error comes from pd_open */
};

/* Offset of the first record of TYPE with all of MISC set. */
static size_t rec_off(const char *path, uint32_t type, uint16_t misc)
{
	struct pd_file *f;
	char err[512];
	struct pd_event ev;
	uint64_t c = 0;
	size_t off = 0;

	if (pd_open(&f, path, err, sizeof(err)))
		return 0;
	while (pd_next(f, &c, &ev, err, sizeof(err)) == 1)
		if (ev.type == type && (ev.misc & misc) == misc) {
			off = ev.file_offset;
			break;
		}
	pd_close(f);
	return off;
}

static void test_corrupt(struct check_state *st)
{
	char dir[64], path[128], bad[128];
	char err[512] = "";
	uint8_t *d = NULL, *c;
	size_t len, nrec;
	size_t comm, mmap2, info, aux, attr_off, ids_off, feat_tbl;
	int rc;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/all.data", dir);
	snprintf(bad, sizeof(bad), "%s/bad.data", dir);
	rc = write_sample(path, PD_WRITE_FILE, V_PERF, err, sizeof(err));
	CHECKF(st, rc == 0, "%s", err);
	if (!rc)
		d = slurp(path, &len);
	if (!d)
		goto out;
	comm = rec_off(path, PERF_RECORD_COMM, 0);
	mmap2 = rec_off(path, PERF_RECORD_MMAP2,
			PERF_RECORD_MISC_MMAP_BUILD_ID);
	info = rec_off(path, PD_RECORD_AUXTRACE_INFO, 0);
	aux = rec_off(path, PD_RECORD_AUXTRACE, 0);
	attr_off = get64(d + 24);
	ids_off = get64(d + attr_off + 128);
	feat_tbl = get64(d + 40) + get64(d + 48);
	CHECK(st, comm && mmap2 && info && aux && ids_off);
	{
		const struct corruption cs[] = {
			{"magic", 0, 8, 0x4c4946524550ull, -EBADMSG, true},
			{"old magic", 0, 8, 0x454c494646524550ull, -EBADMSG,
			 true},
			{"swapped magic", 0, 8, 0x50455246494c4532ull, -EBADMSG,
			 true},
			{"header size", 8, 8, 105, -EBADMSG, true},
			{"attr_size 0", 16, 8, 0, -EBADMSG, true},
			{"attr_size huge", 16, 8, 1ull << 40, -EBADMSG, true},
			{"attr_size odd", 16, 8, 143, -EBADMSG, true},
			{"attrs offset", 24, 8, 1ull << 62, -EOVERFLOW, true},
			{"attrs size", 32, 8, ~0ull, -EOVERFLOW, true},
			{"attrs size partial", 32, 8, 144 + 7, -EBADMSG, true},
			{"attr.size", attr_off + 4, 4, 120, -EBADMSG, true},
			{"ids offset", attr_off + 128, 8, ~0ull - 3, -EOVERFLOW,
			 true},
			{"ids size", attr_off + 136, 8, 12, -EBADMSG, true},
			{"ids size huge", attr_off + 136, 8, 1ull << 50,
			 -EOVERFLOW, true},
			{"data offset", 40, 8, 50, -EBADMSG, true},
			{"data offset huge", 40, 8, ~0ull, -EOVERFLOW, true},
			{"data size huge", 48, 8, len, -EOVERFLOW, true},
			{"feature bits", 72 + 31, 1, 0xff, -EOVERFLOW, true},
			{"feature offset", feat_tbl, 8, len - 2, -EOVERFLOW,
			 true},
			{"feature size", feat_tbl + 8, 8, 1ull << 63,
			 -EOVERFLOW, true},
			{"record size 0", comm + 6, 2, 0, -EBADMSG, false},
			{"record size 4", comm + 6, 2, 4, -EBADMSG, false},
			{"record size huge", comm + 6, 2, 65535, -EBADMSG,
			 false},
			{"record size short", comm + 6, 2, 16, -EBADMSG, false},
			{"comm not terminated", comm + 16, 8,
			 0x4141414141414141ull, -EBADMSG, false},
			{"mmap2 build id size", mmap2 + 40, 1, 21, -EBADMSG,
			 false},
			{"info too short", info + 6, 2, 16 + 72, -EBADMSG,
			 false},
			{"info filter length", info + 16 + 8 * 16, 8, 1000,
			 -EBADMSG, false},
			{"auxtrace size", aux + 8, 8, 1ull << 40, -EBADMSG,
			 false},
			{"auxtrace header size", aux + 6, 2, 40, -EBADMSG,
			 false},
		};

		for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
			struct pd_file *f;

			c = malloc(len);
			if (!c)
				break;
			memcpy(c, d, len);
			if (cs[i].width == 1)
				c[cs[i].off] = (uint8_t)cs[i].value;
			else if (cs[i].width == 2)
				put16(c + cs[i].off, (uint16_t)cs[i].value);
			else if (cs[i].width == 4)
				put32(c + cs[i].off, (uint32_t)cs[i].value);
			else
				put64(c + cs[i].off, cs[i].value);
			CHECK(st, !spit(bad, c, len));
			free(c);
			err[0] = '\0';
			rc = pd_open(&f, bad, err, sizeof(err));
			if (!rc)
				pd_close(f);
			CHECKF(st, (rc != 0) == cs[i].at_open,
			       "%s: open rc %d: %s", cs[i].what, rc, err);
			rc = walk_all(bad, err, sizeof(err), &nrec);
			CHECKF(st, rc == cs[i].code && err[0], "%s: rc %d: %s",
			       cs[i].what, rc, err);
			CHECKF(st,
			       strstr(err, bad) && strchr(err, ':') &&
				       !strchr(err, '\n'),
			       "%s: message '%s'", cs[i].what, err);
		}
	}
	/* Random damage: any outcome but a crash or a sanitizer report. */
	{
		uint64_t seed = 12345;

		for (int round = 0; round < 300; round++) {
			c = malloc(len);
			if (!c)
				break;
			memcpy(c, d, len);
			for (int k = 0; k < 1 + round % 4; k++) {
				seed = seed * 6364136223846793005ull +
				       1442695040888963407ull;
				c[(seed >> 33) % len] ^= (uint8_t)(seed >> 20);
			}
			CHECK(st, !spit(bad, c, len));
			free(c);
			err[0] = '\0';
			rc = walk_all(bad, err, sizeof(err), &nrec);
			CHECK(st, rc == 0 || err[0]);
		}
	}
	/* Not a file we can map, an empty file, a missing file. */
	CHECK(st, walk_all(dir, err, sizeof(err), &nrec) == -EIO &&
			  strstr(err, "not a regular file"));
	CHECK(st, !spit(bad, "", 0));
	CHECK(st, walk_all(bad, err, sizeof(err), &nrec) == -EOVERFLOW);
	CHECK(st, !spit(bad, "PERFILE2", 8));
	CHECK(st, walk_all(bad, err, sizeof(err), &nrec) == -EOVERFLOW);
	CHECK(st, !spit(bad, "hello, world, this is text", 26));
	CHECK(st, walk_all(bad, err, sizeof(err), &nrec) == -EBADMSG &&
			  strstr(err, "not a perf.data file"));
	snprintf(bad, sizeof(bad), "%s/missing.data", dir);
	CHECK(st, walk_all(bad, err, sizeof(err), &nrec) == -EIO &&
			  strstr(err, "No such file"));
out:
	free(d);
	tmpdir_remove(dir);
}

/* A perf that died never wrote data.size: the records run to EOF. */
static void test_data_size_zero(struct check_state *st)
{
	char dir[64], path[128];
	char err[512] = "";
	uint8_t *d = NULL;
	size_t len, n_full = 0, n_cut = 0;
	uint64_t data_end;

	tmpdir_make(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/died.data", dir);
	CHECK(st, !write_sample(path, PD_WRITE_FILE, V_ALL, err, sizeof(err)));
	CHECK(st, !walk_all(path, err, sizeof(err), &n_full));
	d = slurp(path, &len);
	if (!d)
		goto out;
	data_end = get64(d + 40) + get64(d + 48);
	put64(d + 48, 0);
	memset(d + 72, 0, 32);
	CHECK(st, !spit(path, d, data_end));
	CHECKF(st, !walk_all(path, err, sizeof(err), &n_cut), "%s", err);
	CHECK(st, n_cut == n_full && n_full > 10);
	/* and a record cut by the crash is reported as truncation */
	CHECK(st, !spit(path, d, data_end - 5));
	CHECK(st, walk_all(path, err, sizeof(err), &n_cut) == -EOVERFLOW);
out:
	free(d);
	tmpdir_remove(dir);
}

int main(void)
{
	struct check_state st = {0};

	RUN(&st, test_truncate_file);
	RUN(&st, test_truncate_piped);
	RUN(&st, test_corrupt);
	RUN(&st, test_data_size_zero);
	return CHECK_DONE(&st);
}
