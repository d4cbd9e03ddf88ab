/* SPDX-License-Identifier: MIT */
/*
 * Where functions begin in code without symbols, from .eh_frame_hdr.
 *
 * A stripped library keeps its unwind tables: .eh_frame has one FDE per
 * function, and .eh_frame_hdr a table of their start addresses, sorted,
 * for the unwinder's binary search.  That table is all that is read
 * here, with each FDE's pc_range: the functions split the code between
 * two symbols, so that a function without a name gets one name wherever
 * the trace enters it (its start), not one per address it was first seen
 * at.
 *
 * The header (LSB's "Exception Frame Header"): version 1, the encodings
 * of eh_frame_ptr, fde_count and the table, then eh_frame_ptr, fde_count
 * and fde_count pairs (initial location, FDE address).  Linkers write the
 * table as signed 4-byte values relative to the section's start
 * (DW_EH_PE_datarel | DW_EH_PE_sdata4); another encoding is not read.
 * An FDE's pc_range follows its pc_begin, both in the encoding its CIE's
 * 'R' augmentation gives; an FDE whose CIE says otherwise is left out.
 * Its augmentation data holds the LSDA pointer when the CIE has an 'L':
 * the function has landing pads, where control arrives from an
 * exception rather than from any instruction of the function.
 */
#include "symbols/sym_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DW_EH_PE_omit	 0xff
#define DW_EH_PE_udata4	 0x03
#define DW_EH_PE_sdata4	 0x0b
#define DW_EH_PE_udata8	 0x04
#define DW_EH_PE_sdata8	 0x0c
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_pcrel	 0x10
#define EH_PE_FORMAT	 0x0f
#define EH_PE_APPLIED	 0x70
/* an LSDA pointer in an encoding not read here */
#define LSDA_UNREAD UINT64_MAX

/* The size of a value in encoding enc; 0 for one not read here. */
static size_t enc_size(uint8_t enc)
{
	switch (enc & EH_PE_FORMAT) {
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		return 4;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		return 8;
	default:
		return 0;
	}
}

static uint64_t read_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* v, n bytes wide, sign-extended. */
static uint64_t sext(uint64_t v, size_t n)
{
	if (n < 8 && (v >> (8 * n - 1) & 1))
		v |= ~UINT64_C(0) << (8 * n);
	return v;
}

static bool sorted_fdes(const struct sym_fde *v, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (v[i - 1].r.lo > v[i].r.lo)
			return false;
	return true;
}

struct fde_lsda {
	struct sym_fde f;
	uint64_t lsda;
};

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_lsda *x = a, *y = b;

	return x->f.r.lo < y->f.r.lo ? -1 : x->f.r.lo > y->f.r.lo;
}

static int sort_fdes(struct sym_fde *v, uint64_t *lsda, size_t n)
{
	struct fde_lsda *t = malloc((n ? n : 1) * sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		t[i] = (struct fde_lsda){v[i], lsda[i]};
	qsort(t, n, sizeof(*t), cmp_fde);
	for (size_t i = 0; i < n; i++) {
		v[i] = t[i].f;
		lsda[i] = t[i].lsda;
	}
	free(t);
	return 0;
}

/* An unsigned LEB128 at p[*at], p holding len bytes; false past the end. */
static bool uleb(const uint8_t *p, size_t len, size_t *at, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; *at < len && shift < 64; shift += 7) {
		uint8_t b = p[(*at)++];

		*v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
	}
	return false;
}

/* What a CIE says of its FDEs: how their pointers are encoded (its 'R'
 * augmentation), and the LSDA pointer's encoding (its 'L'), each
 * DW_EH_PE_omit when absent or not readable here. */
struct cie_info {
	uint8_t fde_enc, lsda_enc;
};

/*
 * The CIE at p[at]; false when it cannot be read here.
 */
static bool cie_read(const uint8_t *p, size_t len, size_t at,
		     struct cie_info *ci)
{
	const char *aug;
	uint64_t v, auglen;
	size_t end;

	ci->fde_enc = ci->lsda_enc = DW_EH_PE_omit;
	if (at + 9 > len || read_le(p + at, 4) == 0xffffffffu ||
	    read_le(p + at + 4, 4) != 0)
		return false; /* a 64-bit one, or no CIE */
	end = at + 4 + read_le(p + at, 4);
	if (end > len)
		return false;
	at += 9; /* length, id, version */
	aug = (const char *)p + at;
	while (at < end && p[at])
		at++;
	if (at++ >= end || aug[0] != 'z')
		return false; /* without 'z', the default: absptr */
	/* code and data alignment, return address register */
	for (int i = 0; i < 3; i++)
		if (!uleb(p, end, &at, &v))
			return false;
	if (!uleb(p, end, &at, &auglen) || auglen > end - at)
		return false;
	for (const char *c = aug + 1; *c; c++) {
		if (*c != 'S' && *c != 'B' && at >= end)
			return false;
		if (*c == 'R') {
			ci->fde_enc = p[at++];
		} else if (*c == 'L') {
			ci->lsda_enc = p[at++];
		} else if (*c == 'P') {
			size_t n = enc_size(p[at]);

			if (!n)
				return false;
			at += 1 + n;
		} else if (*c != 'S' && *c != 'B') {
			return false;
		}
	}
	return ci->fde_enc != DW_EH_PE_omit;
}

/*
 * The FDE at vaddr fde, from the .eh_frame section (its bytes p, len, at
 * vaddr base): the length of its code (its pc_range) into *range, and
 * whether it points to an LSDA (the function has landing pads: code that
 * only an exception enters).  False when it cannot be read.
 */
static bool fde_read(const uint8_t *p, size_t len, uint64_t base, uint64_t fde,
		     uint64_t *range, uint64_t *lsda)
{
	struct cie_info ci;
	size_t at, n, ln;
	uint64_t cie, auglen, v;

	if (fde < base || fde - base > len || len - (fde - base) < 8)
		return false;
	at = (size_t)(fde - base);
	if (read_le(p + at, 4) == 0xffffffffu)
		return false;
	cie = read_le(p + at + 4, 4);
	if (!cie || cie > at + 4 ||
	    !cie_read(p, len, at + 4 - (size_t)cie, &ci))
		return false;
	n = enc_size(ci.fde_enc);
	if (!n || at + 8 + 2 * n > len)
		return false;
	*range = read_le(p + at + 8 + n, n);
	*lsda = 0;
	if (ci.lsda_enc == DW_EH_PE_omit)
		return *range != 0;
	/* a pointer to the LSDA after the augmentation length: absolute or
	 * relative to where it is; another encoding is not read here (the
	 * LSDA is there, where it is not known) */
	at += 8 + 2 * n;
	ln = enc_size(ci.lsda_enc);
	if (!uleb(p, len, &at, &auglen) || !ln || at + ln > len)
		*lsda = LSDA_UNREAD;
	else if (!(v = read_le(p + at, ln)))
		*lsda = 0;
	else if ((ci.lsda_enc & EH_PE_APPLIED) == DW_EH_PE_pcrel)
		*lsda = base + at + sext(v, ln);
	else if (!(ci.lsda_enc & EH_PE_APPLIED))
		*lsda = v;
	else
		*lsda = LSDA_UNREAD;
	return *range != 0;
}

/* A value of n bytes at p[*at] in encoding enc (its format), moved past;
 * false when it cannot be read here. */
static bool read_enc(const uint8_t *p, size_t len, size_t *at, uint8_t enc,
		     uint64_t *v)
{
	size_t n;

	if ((enc & EH_PE_FORMAT) == DW_EH_PE_uleb128)
		return uleb(p, len, at, v);
	n = enc_size(enc);
	if (!n || *at + n > len)
		return false;
	*v = read_le(p + *at, n);
	if (enc & 0x08) /* a signed format */
		*v = sext(*v, n);
	*at += n;
	return true;
}

/*
 * The call sites of the LSDA at vaddr lsda (in the section p, len at
 * vaddr base) of the function that starts at fn, with a landing pad, onto
 * *v (GCC's unwind-c.c parse_lsda_header() and the call-site table after
 * it).  1 when it cannot be read here, 0 when read, -ENOMEM.
 */
static int lsda_read(const uint8_t *p, size_t len, uint64_t base, uint64_t lsda,
		     uint64_t fn, struct sym_lp **v, size_t *nr, size_t *cap)
{
	uint64_t lpstart = fn, x, cs_len;
	size_t at, end;
	uint8_t cs_enc;

	if (lsda < base || lsda - base >= len)
		return 1;
	at = (size_t)(lsda - base);
	if (p[at++] != DW_EH_PE_omit)
		return 1; /* an LPStart of its own: rare, not read */
	if (at >= len)
		return 1;
	if (p[at++] != DW_EH_PE_omit && !uleb(p, len, &at, &x))
		return 1; /* the type table's offset */
	if (at >= len)
		return 1;
	cs_enc = p[at++];
	if (!uleb(p, len, &at, &cs_len) || cs_len > len - at)
		return 1;
	end = at + (size_t)cs_len;
	while (at < end) {
		uint64_t start, n, pad, action;

		if (!read_enc(p, end, &at, cs_enc, &start) ||
		    !read_enc(p, end, &at, cs_enc, &n) ||
		    !read_enc(p, end, &at, cs_enc, &pad) ||
		    !uleb(p, end, &at, &action))
			return 1;
		if (!pad || !n)
			continue; /* no landing pad, or covers nothing */
		if (mt_grow((void **)v, cap, *nr + 1, sizeof(**v)))
			return -ENOMEM;
		(*v)[(*nr)++] = (struct sym_lp){.lo = fn + start,
						.hi = fn + start + n,
						.pad = lpstart + pad};
	}
	return 0;
}

static int cmp_lp(const void *a, const void *b)
{
	const struct sym_lp *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The landing pads of every FDE that has an LSDA, from the section that
 * holds them; an LSDA that cannot be read marks its FDE SYM_EH_UNREAD. */
static int collect_pads(Elf *e, struct sym_eh *out, const uint64_t *lsda)
{
	GElf_Shdr sh;
	Elf_Scn *scn = sym_elf_section(e, ".gcc_except_table", &sh);
	Elf_Data *d =
		scn && sh.sh_type != SHT_NOBITS ? elf_getdata(scn, NULL) : NULL;
	size_t cap = 0;

	for (size_t i = 0; i < out->nr_fdes; i++) {
		struct sym_fde *f = &out->fdes[i];
		int rc = 1;

		if (!lsda[i])
			continue;
		if (d && d->d_buf && lsda[i] != LSDA_UNREAD)
			rc = lsda_read(d->d_buf, d->d_size, sh.sh_addr, lsda[i],
				       f->r.lo, &out->lps, &out->nr_lps, &cap);
		if (rc < 0)
			return rc;
		f->eh = rc ? SYM_EH_UNREAD : SYM_EH_PADS;
	}
	if (out->nr_lps)
		qsort(out->lps, out->nr_lps, sizeof(*out->lps), cmp_lp);
	return 0;
}

int sym_fde_collect(Elf *e, struct sym_eh *out)
{
	GElf_Shdr sh, fsh;
	Elf_Scn *scn = sym_elf_section(e, ".eh_frame_hdr", &sh);
	Elf_Scn *fscn = sym_elf_section(e, ".eh_frame", &fsh);
	Elf_Data *d, *fd;
	const uint8_t *p;
	size_t len, at = 4, sz, n = 0;
	uint64_t count, *lsda;
	struct sym_fde *v;
	int rc;

	memset(out, 0, sizeof(*out));
	out->have = fscn != NULL;
	if (!scn || !fscn || sh.sh_type == SHT_NOBITS ||
	    fsh.sh_type == SHT_NOBITS)
		return 0;
	d = elf_getdata(scn, NULL);
	fd = elf_getdata(fscn, NULL);
	if (!d || !d->d_buf || d->d_size < 4 || !fd || !fd->d_buf)
		return 0;
	p = d->d_buf;
	len = d->d_size;
	/* version, and a table that can be read */
	if (p[0] != 1 || p[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		return 0;
	sz = enc_size(p[1]);
	if (p[1] != DW_EH_PE_omit && (!sz || at + sz > len))
		return 0;
	at += p[1] == DW_EH_PE_omit ? 0 : sz;
	sz = enc_size(p[2]);
	if (p[2] == DW_EH_PE_omit || !sz || at + sz > len ||
	    (p[2] & EH_PE_APPLIED))
		return 0;
	count = read_le(p + at, sz);
	at += sz;
	/* a count the section cannot hold is a damaged header */
	if (count > (len - at) / 8)
		return 0;
	v = malloc((count ? count : 1) * sizeof(*v));
	lsda = malloc((count ? count : 1) * sizeof(*lsda));
	if (!v || !lsda) {
		free(v);
		free(lsda);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < count; i++, at += 8) {
		int32_t lo = (int32_t)(uint32_t)read_le(p + at, 4);
		int32_t fde = (int32_t)(uint32_t)read_le(p + at + 4, 4);
		uint64_t range;

		if (!fde_read(fd->d_buf, fd->d_size, fsh.sh_addr,
			      sh.sh_addr + (uint64_t)(int64_t)fde, &range,
			      &lsda[n]))
			continue;
		v[n].r.lo = sh.sh_addr + (uint64_t)(int64_t)lo;
		v[n].r.hi = v[n].r.lo + range;
		v[n].eh = SYM_EH_NONE;
		n++;
	}
	/* The table is sorted already (the unwinder searches it); should it
	 * not be, each FDE takes its LSDA along (the two arrays are sorted
	 * by one order of indexes). */
	if (!sorted_fdes(v, n)) {
		rc = sort_fdes(v, lsda, n);
		if (rc) {
			free(v);
			free(lsda);
			return rc;
		}
	}
	out->fdes = v;
	out->nr_fdes = n;
	rc = collect_pads(e, out, lsda);
	free(lsda);
	return rc;
}
