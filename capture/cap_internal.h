/*
 * Internal to capture/: the sideband ring both backends read.
 */
#ifndef MT_CAP_INTERNAL_H
#define MT_CAP_INTERNAL_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/capture.h"
#include "perfdata/perfdata.h"

#define SB_DATA_PAGES 64 /* 256 KiB of sideband */

struct sb_ring {
	int fd;
	uint64_t id;
	struct perf_event_attr attr;
	struct perf_event_mmap_page *page;
	size_t len;
};

/* A dummy event on pid and the threads it makes, on one CPU: its
 * sideband only. */
int sb_open_dummy(struct sb_ring *r, pid_t pid, int cpu, char *err,
		  size_t errlen);
void sb_close(struct sb_ring *r);
/* The ring's records, as the kernel wrote them, into the capture. */
int sb_copy(struct pd_writer *w, const struct perf_event_mmap_page *pg,
	    size_t data_pages);

/*
 * One line of /proc/PID/maps as the MMAP2 record the kernel would have
 * written for pid; the file name goes to path (pathlen bytes), "//anon"
 * for none.  Returns 0, or -1 when the line is no mapping.
 */
int sb_maps_line(const char *line, uint32_t pid, struct pd_mmap *m, char *path,
		 size_t pathlen);

/*
 * The build ids of the binaries a capture maps, once each, so that
 * mt-convert refuses a binary rebuilt since the capture instead of
 * decoding the wrong code.  seen holds the paths already done.
 */
struct sb_buildids {
	char **paths;
	size_t n, cap;
};

/* path's build id, if it has one and is new.  Returns 0 or -1. */
int sb_buildid_add(struct pd_writer *w, struct sb_buildids *seen, uint32_t pid,
		   const char *path);
/* The same for the files of the executable MMAP2 records among len
 * bytes of records as the kernel wrote them. */
int sb_buildids_of_records(struct pd_writer *w, struct sb_buildids *seen,
			   const uint8_t *rec, size_t len);
void sb_buildids_free(struct sb_buildids *seen);

#endif
