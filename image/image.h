/* SPDX-License-Identifier: MIT */
/*
 * image: the traced program's code, per process.
 *
 * What the capture's sideband says of the code (its mappings, the
 * processes that fork from each other, the [vdso] and kernel code it
 * carries) becomes, once img_build() has found the binaries the mappings
 * name, one libipt image per process over a shared section cache.  The
 * same code then answers every question about it: what function an
 * address is in and what it is called (img_symbolize()), whether a
 * function can get from one place to another or call another function
 * (img_never_reaches(), img_calls_to(): reach.c), what an instruction's
 * bytes are (insn.c), and how a trace that went into a kernel with no
 * code is read without it (img_kernel_strip()).
 *
 * Layering: image/ comes after perfdata/ and symbols/ and before decode/,
 * and knows nothing of the decoder.  decode/ builds an image from the
 * capture's sideband and decodes over it; segments/ names addresses with
 * it and stitch/ asks it what the code can reach (struct img_reach), each
 * taking it explicitly.  It lives as long as the decode session that
 * built it (dec_image()): the capture's bytes it points into stay that
 * session's.
 *
 * What came from decode/ (its dec_ names): the image build, kernel code
 * and kernel stripping, the address filter, symbolising (struct dec_sym,
 * now struct img_sym), reachability (dec_never_reaches, dec_calls_to and
 * their walk), the instruction classifiers, and libipt's errors as ours.
 *
 * Threads: a decoding thread and one that names addresses may use an
 * image at once (the notes of missing binaries, the DWARF and the JIT
 * maps are behind locks), and so may the threads that ask
 * img_never_reaches() and img_calls_to() (their answers are too).
 */
#ifndef MT_IMAGE_H
#define MT_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct img;
struct pd_file;
struct pd_pt_info;
struct pt_image;
struct pt_image_section_cache;
struct pt_conf_addr_filter;
struct sym_inline;
struct sym_inline_range;

struct img_opts {
	const char *const *binary_dirs; /* searched before recorded paths */
	size_t nr_binary_dirs;
	const char *debug_root; /* build-id tree; NULL: /usr/lib/debug */
	const char *jit_dir;	/* where perf-PID.map files are; NULL: /tmp */
	/* Called with one line (no newline) per missing binary or JIT map
	 * not used; may be NULL. */
	void (*warn)(void *ctx, const char *line);
	void *warn_ctx;
	bool no_inline; /* no inlined calls (img_range, img_sym.inl) */
};

/*
 * Building.  img_new() copies path (the capture, for messages) and o;
 * the sideband's facts go in with the img_add_ and img_set_ calls, in
 * file order; img_build() then finds the binaries and makes the images
 * (pd: the capture, for its kernel code and build ids; it must outlive
 * the image).  Each returns 0 or a negative errno value (-ENOMEM but for
 * img_build(), which says what went wrong in one line in err).
 */
int img_new(struct img **out, const char *path, const struct img_opts *o);
void img_free(struct img *im);
/* An executable mapping of pid (build_id_len 0: none recorded). */
int img_add_map(struct img *im, uint32_t pid, uint64_t start, uint64_t len,
		uint64_t pgoff, const char *file, const uint8_t *build_id,
		size_t build_id_len);
/*
 * Processes whose code changes: each exec starts an address space of its
 * own, with the new program's mappings only (the kernel records them all
 * anew), and so does code mapped where other code was (img_map_at()).
 * img_add_exec() dates an exec (in any order, before the first
 * img_space()); img_space() then says which space pid runs at perf time
 * t, as a key that every call of this header taking a pid takes: pid
 * itself before its first exec.
 */
int img_add_exec(struct img *im, uint32_t pid, uint64_t time);
uint32_t img_space(const struct img *im, uint32_t pid, uint64_t time);
/* The same, and when pid's next space begins (UINT64_MAX: none). */
uint32_t img_space_until(const struct img *im, uint32_t pid, uint64_t time,
			 uint64_t *until);
/*
 * An executable mapping of pid at perf time (untimed: into pid's first
 * space), for the sideband's records in time order once every exec is
 * added: into the space of that time, unless it is there already.  Code
 * mapped where other code was (a library loaded where another was
 * unloaded) begins another space, with the rest of this one's mappings;
 * a forked child's first mapping of its own keeps its parent's too.
 */
int img_map_at(struct img *im, uint32_t pid, bool timed, uint64_t time,
	       uint64_t start, uint64_t len, uint64_t pgoff, const char *file,
	       const uint8_t *build_id, size_t build_id_len);
/* The process a key is a space of. */
uint32_t img_space_pid(uint32_t key);
/* The process's command (pid's main thread was named comm). */
int img_set_comm(struct img *im, uint32_t pid, const char *comm);
/* pid forked from ppid: with no mappings of its own, it runs ppid's. */
int img_set_parent(struct img *im, uint32_t pid, uint32_t ppid);
/* A [vdso] image the capture carries (bytes stay the capture's). */
int img_add_vdso(struct img *im, uint32_t pid, uint64_t start, uint64_t len,
		 const uint8_t *bytes);
int img_build(struct img *im, struct pd_file *pd, const struct pd_pt_info *pt,
	      char *err, size_t errlen);

/* The process's command as the capture named it, NULL if it did not. */
const char *img_process_name(const struct img *im, uint32_t pid);

/* Binaries that could not be found or did not match, among those the
 * trace ran into, one line each. */
size_t img_nr_missing(const struct img *im);
const char *img_missing_at(const struct img *im, size_t i);

/*
 * For the decoder.
 */
struct pt_image_section_cache *img_iscache(const struct img *im);
/* pid's libipt image; NULL when the capture has none for it. */
struct pt_image *img_image_of(struct img *im, uint32_t pid);
/*
 * A thread's own copy of the sections (view.c says why), for one thread
 * at a time, freed before im.  img_view_new(): 0, -ENOMEM, or -ENOENT
 * when a binary can no longer be read as it was (the shared images
 * serve).  img_view_image() is img_image_of() from the view's sections
 * (the same isids), owned by the view; NULL when there is none or out
 * of memory.
 */
struct img_view;
int img_view_new(struct img *im, struct img_view **out);
struct pt_image *img_view_image(struct img_view *v, uint32_t pid);
/* Up to n bytes of the code at ip in section isid, from the view's own
 * sections: how many, 0 when there are none. */
size_t img_view_read(struct img_view *v, int isid, uint64_t ip, uint8_t *b,
		     size_t n);
void img_view_free(struct img_view *v);
/*
 * The inlined calls in a function's code: the ranges of its unit, the
 * indexes [from, to) of those that fall in the function, and the bias
 * (runtime = ELF vaddr + bias); tab NULL when there are none (or
 * no_inline).
 */
struct img_inl_span {
	const struct sym_inline_range *tab; /* the unit's ranges */
	size_t from, to;
	uint64_t bias;
};
/* The function range around ip (runtime), for telling jumps inside a
 * function from jumps out of it, and the calls inlined in it.  Returns
 * false when ip is unmapped. */
bool img_range(struct img *im, uint32_t pid, uint64_t ip, uint64_t *lo,
	       uint64_t *hi, struct img_inl_span *inl);
/* After the DWARF has been read and the code walked: 0, or -ENOMEM with
 * one line in err when some of a binary's source lines or inlined calls,
 * or a walk's answer, were missing for want of memory (a conversion would
 * be silently short of them, or stitched otherwise). */
int img_short_of_memory(const struct img *im, char *err, size_t errlen);
/* Code at ip is being used: report its binary if that is missing. */
void img_note_use(struct img *im, uint32_t pid, uint64_t ip);
/* The capture's address filter for pid's mappings (all ranges off when
 * there is none). */
void img_addr_filter(const struct img *im, uint32_t pid,
		     struct pt_conf_addr_filter *f);
/* Capstone 4.0's first use of a table races between threads: start true
 * takes the turn, false gives it back. */
void img_capstone_serialized(struct img *im, bool start);

/* A kernel address (the upper half of the address space). */
bool img_is_kernel_ip(uint64_t ip);
/* The kernel was traced and the capture has no code for it. */
bool img_kernel_needs_strip(const struct img *im);
/*
 * When img_kernel_needs_strip(), *buf (len bytes of trace) replaced by a
 * copy (*owned, for the caller to free) with the kernel's stretches taken
 * out, as user-only tracing would have written it.  Returns 0 or -ENOMEM.
 */
int img_kernel_strip(const struct img *im, const uint8_t **buf, size_t len,
		     uint8_t **owned);

/*
 * libipt's errors as ours (pterr.c): a libipt status (a negative
 * pt_error_code) as our errno value, returned, with "PATH: libipt WHAT:
 * libipt's words" in err (which may be NULL); and libipt's words for a
 * code, a status or its negation.
 */
int img_pt_error(int status, char *err, size_t errlen, const char *path,
		 const char *what);
const char *img_pt_errstr(int code);

/*
 * Naming addresses.
 */
struct img_sym {
	const char *name;    /* the function, or "[unknown @ 0x.. (dso)]" */
	const char *dso;     /* path of the binary, "" if none */
	uint64_t start, end; /* runtime range of the function: [start, end) */
	bool known;	     /* a symbol, not a made-up name */
	/* start is a function's entry: a symbol's, or the unwind tables'
	 * for a stripped binary's unnamed function */
	bool entry_known;
	char buf[160]; /* storage for made-up names */
	/* Where the source has the function's entry and the address itself
	 * (the binary's DWARF line table; file NULL when it has none). */
	const char *fn_file, *ip_file;
	unsigned fn_line, ip_line;
	/* The innermost inlined call at the address, NULL: none; and
	 * whether the function has inlined calls anywhere. */
	const struct sym_inline *inl;
	bool fn_inl;
};

/* Whether a binary that pid's code comes from (its parents' too) has a
 * symbol that pred accepts. */
bool img_pid_has_symbol(const struct img *im, uint32_t pid,
			bool (*pred)(const char *name));
/* Also reports, once, the missing binary of an address it cannot name. */
void img_symbolize(struct img *im, uint32_t pid, uint64_t ip,
		   struct img_sym *out);

/*
 * What the code can reach (reach.c).
 */
/*
 * Whether the code proves that the function around from (pid's), with
 * control at from, can never get to to in the same activation: every
 * path from from that stays in it was followed, and none arrives at to
 * (ret_to: none makes a call that returns to to, a return address).
 * False whenever that is not proven (reach.c says where a walk stops
 * proving).
 */
bool img_never_reaches(struct img *im, uint32_t pid, uint64_t from, uint64_t to,
		       bool ret_to);
/*
 * Whether the function around from, with control at from, can call the
 * function at callee in the same activation.  SURE: a path from from
 * makes a direct call to it.  NEVER: every path from from that stays in
 * the function was followed, and every call on them goes to another
 * function by name.  MAYBE otherwise: a call through a register or
 * memory or a PLT stub could be to callee, or a path went where the walk
 * cannot follow (reach.c).
 */
enum img_calls { IMG_CALLS_NEVER, IMG_CALLS_MAYBE, IMG_CALLS_SURE };

enum img_calls img_calls_to(struct img *im, uint32_t pid, uint64_t from,
			    uint64_t callee);

/*
 * The two questions as stitching asks them: a read-only view that a test
 * can stand in for (either function NULL: nothing proven, MAYBE).
 * img_reach_of() gives an image's own answers.
 */
struct img_reach {
	bool (*never_reaches)(void *ctx, uint32_t pid, uint64_t from,
			      uint64_t to, bool ret_to);
	enum img_calls (*calls_to)(void *ctx, uint32_t pid, uint64_t from,
				   uint64_t callee);
	/* The pid the two take for pid's code at perf time t, after its
	 * execs (img_space()); NULL: pid. */
	uint32_t (*space)(void *ctx, uint32_t pid, uint64_t t);
	void *ctx;
};
struct img_reach img_reach_of(struct img *im);

/*
 * The walk itself, on code in memory (for its unit test).
 */
/* Where an exception out of the code [lo, hi) lands (runtime). */
struct img_lp {
	uint64_t lo, hi, pad;
};

/* A function's code as img_never_reaches() walks it: n bytes at runtime
 * address lo, its landing pads (sorted, disjoint), twice(ctx, target)
 * (may be NULL): whether a direct call's target returns twice (setjmp),
 * and other_fn(ctx, target, callee) (may be NULL: never): whether a
 * direct call's target is surely not callee (another function by name,
 * no PLT stub). */
struct img_code {
	const uint8_t *bytes;
	size_t n;
	uint64_t lo;
	const struct img_lp *lps;
	size_t nr_lps;
	bool (*twice)(void *ctx, uint64_t target);
	bool (*other_fn)(void *ctx, uint64_t target, uint64_t callee);
	void *ctx;
};

/* True when no path from from that stays in the code arrives at to, or
 * with ret_to, makes a call that returns to to. */
bool img_code_never_reaches(const struct img_code *c, uint64_t from,
			    uint64_t to, bool ret_to);
/* The same walk, to the calls to callee (img_calls_to()). */
enum img_calls img_code_calls_to(const struct img_code *c, uint64_t from,
				 uint64_t callee);

/*
 * What an instruction's bytes say (insn.c); b holds n bytes of code at
 * ip.
 */
/* Length of a near or far call, a software interrupt or a system call;
 * 0 for any other instruction. */
unsigned img_call_len(const uint8_t *b, size_t n);
/* Where the direct call or jump (rel32 or rel8) at ip goes. */
bool img_direct_target(const uint8_t *b, size_t n, uint64_t ip, uint64_t *out);
/* A jump through a register or memory (FF /4). */
bool img_is_indirect_jump(const uint8_t *b, size_t n);
/* SYSCALL, SYSENTER or INT 0x80. */
bool img_is_syscall(const uint8_t *b, size_t n);
/* IRET, far RET, SYSRET or SYSEXIT: back from the kernel (or a far call). */
bool img_is_far_return(const uint8_t *b, size_t n);
/* INT3, INT n or INTO: its length (what IRET comes back past), else 0. */
unsigned img_soft_interrupt_len(const uint8_t *b, size_t n);

#endif
