/* SPDX-License-Identifier: MIT */
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
#include "capture/breakpoint_internal.h"
#include "capture/unwind_internal.h"
#include "symbols/symbols.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* (the thread waits stopped while its stack is read: its modules' debug
 * files come from this machine, never from a server) */
static const Dwfl_Callbacks proc_cb = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = sym_find_debuginfo,
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

/*
 * A sample: the registers and the stack copy stand for the thread, which
 * has run on since.  libdw asks for the thread, its first registers and
 * the words it needs; the words are read from the copy only (the live
 * stack has changed), the code from the modules' files.
 */
struct sample {
	pid_t tid;
	const uint64_t *regs;
	const uint8_t *stack;
	size_t len;
};

static pid_t sample_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
	struct sample *s = arg;

	(void)dwfl;
	if (*thread_arg)
		return 0; /* one thread only */
	*thread_arg = s;
	return s->tid;
}

static bool sample_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *out, void *arg)
{
	const struct sample *s = arg;
	uint64_t sp = s->regs[7];

	(void)dwfl;
	if (addr < sp || addr - sp > s->len || s->len - (addr - sp) < 8)
		return false;
	memcpy(out, s->stack + (addr - sp), 8);
	return true;
}

static bool sample_regs(Dwfl_Thread *thread, void *arg)
{
	const struct sample *s = arg;
	Dwarf_Word w[BP_NR_REGS];

	for (size_t i = 0; i < BP_NR_REGS; i++)
		w[i] = s->regs[i];
	return dwfl_thread_state_registers(thread, 0, BP_NR_REGS, w);
}

static const Dwfl_Thread_Callbacks sample_cb = {
	.next_thread = sample_thread,
	.memory_read = sample_read,
	.set_initial_registers = sample_regs,
};

int unwind_sample(pid_t pid, pid_t tid, const char *maps, const uint64_t *regs,
		  const uint8_t *stack, size_t stack_len, uint64_t *ips,
		  size_t max, size_t *n, char *err, size_t errlen)
{
	FILE *f;
	struct sample s = {
		.tid = tid, .regs = regs, .stack = stack, .len = stack_len};
	struct walk w = {.ips = ips, .max = max};
	Dwfl *dwfl;
	int rc;

	*n = 0;
	if (!max || !stack_len) {
		snprintf(err, errlen, "thread %d: no stack sampled", (int)tid);
		return -EINVAL;
	}
	dwfl = dwfl_begin(&proc_cb);
	if (!dwfl) {
		snprintf(err, errlen, "libdw: %s", dwfl_errmsg(-1));
		return -ENOMEM;
	}
	f = fmemopen((void *)maps, strlen(maps), "r");
	if (!f) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	rc = dwfl_linux_proc_maps_report(dwfl, f);
	fclose(f);
	if (rc) {
		snprintf(err, errlen, "the modules of %d: %s", (int)pid,
			 rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
		rc = -EIO;
		goto out;
	}
	dwfl_report_end(dwfl, NULL, NULL);
	if (!dwfl_attach_state(dwfl, NULL, pid, &sample_cb, &s)) {
		snprintf(err, errlen, "libdw on a sample of %d: %s", (int)tid,
			 dwfl_errmsg(-1));
		rc = -EIO;
		goto out;
	}
	rc = dwfl_getthread_frames(dwfl, tid, on_frame, &w);
	/* The copy ends somewhere up the stack: frames until then count. */
	if (w.n && !w.bad_pc) {
		*n = w.n;
		rc = 0;
	} else {
		snprintf(err, errlen,
			 "thread %d: no frames from the sample: %s", (int)tid,
			 w.bad_pc ? "no pc" : dwfl_errmsg(-1));
		rc = -EIO;
	}
out:
	dwfl_end(dwfl);
	return rc;
}
