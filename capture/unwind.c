/*
 * The call stack of a ptrace-stopped thread, unwound by libdw.
 *
 * libdw's unwinder (elfutils) reads the thread's registers and memory
 * through ptrace and steps through the frames with the CFI of each
 * module (.eh_frame, or .debug_frame from the binary or its separate
 * debug file), falling back to the frame pointer where a module has none.
 * Unlike a stack kept by watching calls, it knows the callers that were
 * already on the stack before tracing began.
 */
#include "capture/capture.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static const Dwfl_Callbacks proc_cb = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

struct walk {
	uint64_t *ips;
	size_t max, n;
	bool bad_pc;
};

static int on_frame(Dwfl_Frame *f, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(f, &pc, &activation)) {
		w->bad_pc = true;
		return DWARF_CB_ABORT;
	}
	/* Callers' frames hold return addresses, as a stack captured by
	 * the trace's own calls does; the leaf holds the IP. */
	w->ips[w->n++] = pc;
	return w->n < w->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

int unwind_thread(pid_t pid, pid_t tid, uint64_t *ips, size_t max, size_t *n,
		  char *err, size_t errlen)
{
	struct walk w = {.ips = ips, .max = max};
	Dwfl *dwfl;
	int rc;

	*n = 0;
	if (!max) {
		snprintf(err, errlen, "no room for a stack");
		return -EINVAL;
	}
	dwfl = dwfl_begin(&proc_cb);
	if (!dwfl) {
		snprintf(err, errlen, "libdw: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	if ((rc = dwfl_linux_proc_report(dwfl, pid))) {
		snprintf(err, errlen, "reading the modules of %d: %s", (int)pid,
			 rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
		rc = -EIO;
		goto out;
	}
	dwfl_report_end(dwfl, NULL, NULL);
	/* The thread is stopped by our own ptrace: libdw must neither
	 * attach to it nor let it go. */
	if ((rc = dwfl_linux_proc_attach(dwfl, pid, true))) {
		snprintf(err, errlen, "attaching libdw to %d: %s", (int)pid,
			 rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
		rc = -EIO;
		goto out;
	}
	rc = dwfl_getthread_frames(dwfl, tid, on_frame, &w);
	if (rc == 0 || (rc == DWARF_CB_ABORT && !w.bad_pc)) {
		/* The outermost frame reached, or the room filled. */
		*n = w.n;
		rc = w.n ? 0 : -ENODATA;
		if (rc)
			snprintf(err, errlen, "thread %d: no frames", (int)tid);
	} else {
		snprintf(err, errlen,
			 "thread %d: unwinding stopped after %zu "
			 "frame%s: %s",
			 (int)tid, w.n, w.n == 1 ? "" : "s",
			 w.bad_pc ? "no pc" : dwfl_errmsg(-1));
		rc = -EIO;
	}
out:
	dwfl_end(dwfl);
	return rc;
}
