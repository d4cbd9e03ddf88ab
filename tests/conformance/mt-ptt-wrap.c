/* SPDX-License-Identifier: MIT */
/*
 * mt-ptt-wrap CASE OUTDIR [--cpu F/M[/S]] [--pt FILE]
 *
 * Turns one decoder test case into a capture mt-convert (and perf) read:
 * OUTDIR/NAME.elf, the code as an executable with a symbol per label, and
 * OUTDIR/NAME.data, a perf.data file with one intel_pt attr, COMM, an
 * MMAP2 of the executable, AUXTRACE_INFO, TIME_CONV and one AUXTRACE
 * record holding the packets.
 *
 * A case is one of:
 *   CASE.pt + CASE.bin + CASE.lst (+ CASE.ptt): a case of libipt's test
 *     corpus as its pttc left it.  The code (.bin) is loaded at the org
 *     address the .ptt (or the listing) names; every label of the nasm
 *     listing becomes a function symbol reaching to the next label.  The
 *     .ptt also names the CPUs an erratum case is for (the first is used)
 *     and the options its ptxed run had (--cpu, --mtc-freq, --nom-freq,
 *     --cpuid-0x15.eax/ebx).
 *   CASE.S + CASE.pkt: one of our own.  The assembly is assembled with
 *     `as` and linked with `ld -Ttext=ORG`; the packets, one per line in
 *     the spelling of the @pt directives, are encoded with libipt's
 *     encoder, labels resolved through the linked executable's symbols.
 *     See tests/conformance/README.md for the packet list.
 *
 * --cpu: the CPU (family/model/stepping) the capture says it ran on,
 * instead of the one the case names.  --pt FILE: also write the packets
 * (for own cases: what the encoder made of CASE.pkt).
 */
#include "capture/capture.h"
#include "perfdata/perfdata.h"
#include "tests/conformance/ptt_files.h"
#include "util/util.h"

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <intel-pt.h>
#include <libelf.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define WRAP_PID	   4242
#define WRAP_PMU_TYPE	   8
#define WRAP_TIME_SHIFT	   31
#define WRAP_TIME_MULT	   894784853u /* 2^31 / 2.4: a 2.4 GHz TSC */
#define WRAP_SIDEBAND_TIME 1000000000ull
#define DEFAULT_ORG	   0x100000ull
#define MAX_LABELS	   4096

struct label {
	char name[64];
	uint64_t addr;
};

struct wcase {
	const char *path; /* CASE, without extension */
	const char *name; /* its last component */
	uint64_t org;
	uint8_t *code; /* flat code at org (libipt cases) */
	size_t code_len;
	struct label labels[MAX_LABELS];
	size_t nr_labels;
	uint8_t *pt;
	size_t pt_len;
	/* CPU and timing parameters: the .ptt's (none for our own cases),
	 * then --cpu's */
	struct ptt_run run;
	/* the executable mapped: file range and address */
	uint64_t load_vaddr, load_off, load_size;
};

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("mt-ptt-wrap: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory");
	return p;
}

static char *path_of(const struct wcase *c, const char *ext)
{
	size_t n = strlen(c->path) + strlen(ext) + 1;
	char *p = xmalloc(n);

	snprintf(p, n, "%s%s", c->path, ext);
	return p;
}

static bool exists(const char *path)
{
	return access(path, R_OK) == 0;
}

static void add_label(struct wcase *c, const char *name, size_t len,
		      uint64_t addr)
{
	struct label *l;

	if (c->nr_labels == MAX_LABELS)
		die("%s: more than %d labels", c->path, MAX_LABELS);
	if (len >= sizeof(l->name))
		die("%s: label %.*s too long", c->path, (int)len, name);
	l = &c->labels[c->nr_labels++];
	memcpy(l->name, name, len);
	l->name[len] = 0;
	l->addr = addr;
}

static const struct label *find_label(const struct wcase *c, const char *name,
				      size_t len)
{
	for (size_t i = 0; i < c->nr_labels; i++)
		if (strlen(c->labels[i].name) == len &&
		    !memcmp(c->labels[i].name, name, len))
			return &c->labels[i];
	return NULL;
}

/* ------------------------------------------------------------------ */
/* libipt's cases: .ptt, .lst, .bin, .pt                               */

static int lst_label(void *ctx, const struct lst_line *l)
{
	if (l->label)
		add_label(ctx, l->label, l->label_len, l->addr);
	return 0;
}

/* The .ptt's org, if it has one, comes first: the listing's is used
 * only without it.  Labels become symbols. */
static void read_ptt_lst(struct wcase *c)
{
	char *ptt = path_of(c, ".ptt"), *lst = path_of(c, ".lst");

	if (!ptt_read_run(ptt, &c->run) && c->run.have_org)
		c->org = c->run.org;
	if (ptt_read_lst(lst, &c->org, lst_label, c))
		die("%s: %s", lst, strerror(errno));
	free(ptt);
	free(lst);
}

static void read_libipt_case(struct wcase *c)
{
	char *bin = path_of(c, ".bin"), *pt = path_of(c, ".pt");

	read_ptt_lst(c);
	c->code = ptt_slurp(bin, &c->code_len);
	if (!c->code)
		die("%s: %s", bin, strerror(errno));
	c->pt = ptt_slurp(pt, &c->pt_len);
	if (!c->pt)
		die("%s: %s", pt, strerror(errno));
	free(bin);
	free(pt);
}

/* ------------------------------------------------------------------ */
/* The executable for a libipt case                                     */

struct outbuf {
	uint8_t *d;
	size_t len, cap;
};

static size_t put(struct outbuf *b, const void *p, size_t n)
{
	size_t at = b->len;

	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;

		while (cap < b->len + n)
			cap *= 2;
		b->d = realloc(b->d, cap);
		if (!b->d)
			die("out of memory");
		b->cap = cap;
	}
	if (p)
		memcpy(b->d + b->len, p, n);
	else
		memset(b->d + b->len, 0, n);
	b->len += n;
	return at;
}

static void pad_to(struct outbuf *b, size_t off)
{
	if (b->len < off)
		put(b, NULL, off - b->len);
}

static int cmp_label(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The size of a label's function: up to the next label, or the end. */
static uint64_t label_size(const struct wcase *c, size_t i)
{
	uint64_t end = c->org + c->code_len;

	for (size_t j = i + 1; j < c->nr_labels; j++)
		if (c->labels[j].addr > c->labels[i].addr) {
			end = c->labels[j].addr;
			break;
		}
	return end > c->labels[i].addr ? end - c->labels[i].addr : 0;
}

static void write_file(const char *path, const void *d, size_t n)
{
	struct mt_outfile out;
	char err[PATH_MAX + 64];
	FILE *f = mt_outfile_fopen(&out, path, err, sizeof(err));

	if (!f)
		die("%s", err);
	if (fwrite(d, 1, n, f) != n) {
		mt_outfile_abort(&out);
		die("%s: cannot write: %s", path, strerror(errno));
	}
	if (mt_outfile_commit(&out, err, sizeof(err)))
		die("%s", err);
}

/*
 * ELF64 ET_EXEC: one PT_LOAD (R+X) holding the code at the org, .text,
 * .symtab (a global function per label), .strtab and .shstrtab.  The
 * code's file offset is congruent to the org modulo the page size, as a
 * loader wants it.
 */
static void write_elf(struct wcase *c, const char *path)
{
	static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab";
	struct outbuf b = {0}, strtab = {0}, symtab = {0};
	Elf64_Ehdr eh = {0};
	Elf64_Phdr ph = {0};
	Elf64_Shdr sh[5];
	Elf64_Sym sym = {0};
	size_t code_off, sym_off, str_off, shstr_off, sh_off;

	qsort(c->labels, c->nr_labels, sizeof(*c->labels), cmp_label);
	put(&strtab, "", 1);
	put(&symtab, &sym, sizeof(sym));
	for (size_t i = 0; i < c->nr_labels; i++) {
		sym.st_name = (Elf64_Word)put(&strtab, c->labels[i].name,
					      strlen(c->labels[i].name) + 1);
		sym.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		sym.st_shndx = 1;
		sym.st_value = c->labels[i].addr;
		sym.st_size = label_size(c, i);
		put(&symtab, &sym, sizeof(sym));
	}

	code_off = 0x1000 + (c->org & 0xfff);
	put(&b, NULL, sizeof(eh) + sizeof(ph));
	pad_to(&b, code_off);
	put(&b, c->code, c->code_len);
	pad_to(&b, (b.len + 7) & ~(size_t)7);
	sym_off = put(&b, symtab.d, symtab.len);
	str_off = put(&b, strtab.d, strtab.len);
	shstr_off = put(&b, shstr, sizeof(shstr));
	pad_to(&b, (b.len + 7) & ~(size_t)7);
	sh_off = b.len;

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_NONE;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_entry = c->org;
	eh.e_phoff = sizeof(eh);
	eh.e_shoff = sh_off;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 5;
	eh.e_shstrndx = 4;

	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_offset = code_off;
	ph.p_vaddr = c->org;
	ph.p_paddr = c->org;
	ph.p_filesz = c->code_len;
	ph.p_memsz = c->code_len;
	ph.p_align = 0x1000;

	memset(sh, 0, sizeof(sh));
	sh[1] = (Elf64_Shdr){.sh_name = 1,
			     .sh_type = SHT_PROGBITS,
			     .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			     .sh_addr = c->org,
			     .sh_offset = code_off,
			     .sh_size = c->code_len,
			     .sh_addralign = 1};
	sh[2] = (Elf64_Shdr){.sh_name = 7,
			     .sh_type = SHT_SYMTAB,
			     .sh_offset = sym_off,
			     .sh_size = symtab.len,
			     .sh_link = 3,
			     .sh_info = 1, /* every symbol is global */
			     .sh_addralign = 8,
			     .sh_entsize = sizeof(Elf64_Sym)};
	sh[3] = (Elf64_Shdr){.sh_name = 15,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = str_off,
			     .sh_size = strtab.len,
			     .sh_addralign = 1};
	sh[4] = (Elf64_Shdr){.sh_name = 23,
			     .sh_type = SHT_STRTAB,
			     .sh_offset = shstr_off,
			     .sh_size = sizeof(shstr),
			     .sh_addralign = 1};
	put(&b, sh, sizeof(sh));
	memcpy(b.d, &eh, sizeof(eh));
	memcpy(b.d + sizeof(eh), &ph, sizeof(ph));
	write_file(path, b.d, b.len);
	c->load_vaddr = c->org;
	c->load_off = code_off;
	c->load_size = c->code_len;
	free(b.d);
	free(strtab.d);
	free(symtab.d);
}

/* ------------------------------------------------------------------ */
/* Our own cases: .S assembled and linked, .pkt encoded                 */

static void run_tool(char *const argv[])
{
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ))
		die("cannot run %s: %s", argv[0], strerror(errno));
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		die("%s failed", argv[0]);
}

/* The org: an "org ADDR" line of the .pkt, else DEFAULT_ORG. */
static uint64_t pkt_org(const char *pkt)
{
	const char *p = pkt;
	unsigned long long org;

	while (p && *p) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (sscanf(p, "org %lli", &org) == 1)
			return org;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return DEFAULT_ORG;
}

/* Labels and the executable segment of the linked executable. */
static void read_linked(struct wcase *c, const char *path)
{
	Elf *e;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t nph;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		die("libelf: %s", elf_errmsg(-1));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		die("%s: %s", path, strerror(errno));
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || !gelf_getehdr(e, &eh) || elf_getphdrnum(e, &nph))
		die("%s: %s", path, elf_errmsg(-1));
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    (ph.p_flags & PF_X)) {
			c->load_vaddr = ph.p_vaddr;
			c->load_off = ph.p_offset;
			c->load_size = ph.p_filesz;
			break;
		}
	}
	if (!c->load_size)
		die("%s: no executable segment", path);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 1; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;
			int t;

			if (!gelf_getsym(d, (int)i, &s))
				continue;
			t = GELF_ST_TYPE(s.st_info);
			name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name || !*name || s.st_shndx == SHN_UNDEF ||
			    (t != STT_NOTYPE && t != STT_FUNC))
				continue;
			add_label(c, name, strlen(name), s.st_value);
		}
	}
	elf_end(e);
	close(fd);
}

/* Skip blanks. */
static const char *ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A number, a label, or label+N / label-N: the value, or die. */
static uint64_t pkt_value(const struct wcase *c, const char **pp, int line)
{
	const char *p = ws(*pp), *q = p;
	uint64_t v;
	char *end;

	if (isdigit((unsigned char)*p)) {
		v = strtoull(p, &end, 0);
		*pp = end;
		return v;
	}
	while (isalnum((unsigned char)*q) || *q == '_' || *q == '.' ||
	       *q == '%')
		q++;
	{
		const char *n = *p == '%' ? p + 1 : p;
		const struct label *l = find_label(c, n, (size_t)(q - n));

		if (q == p || !l)
			die("%s.pkt:%d: unknown label %.*s", c->path, line,
			    (int)(q - p), p);
		v = l->addr;
	}
	q = ws(q);
	if (*q == '+' || *q == '-') {
		long long off = strtoll(q + 1, &end, 0);

		v += *q == '+' ? (uint64_t)off : -(uint64_t)off;
		q = end;
	}
	*pp = q;
	return v;
}

/* "3: l1", "0", "0: l1", "6: 0x1234": compression and address. */
static void pkt_ip(const struct wcase *c, const char *p, int line,
		   struct pt_packet_ip *ip)
{
	static const enum pt_ip_compression ipcs[] = {
		pt_ipc_suppressed, pt_ipc_update_16, pt_ipc_update_32,
		pt_ipc_sext_48,	   pt_ipc_update_48, pt_ipc_suppressed,
		pt_ipc_full};
	char *end;
	unsigned long n = strtoul(ws(p), &end, 0);

	if (end == ws(p) || n >= sizeof(ipcs) / sizeof(*ipcs) || n == 5)
		die("%s.pkt:%d: bad ip compression", c->path, line);
	ip->ipc = ipcs[n];
	ip->ip = 0;
	p = ws(end);
	if (*p == ':')
		ip->ip = pkt_value(c, (const char *[]){p + 1}, line);
	else if (n)
		die("%s.pkt:%d: ip compression %lu needs an address", c->path,
		    line, n);
}

/* One packet line (without comment) into pkt; false for a blank line. */
static bool pkt_parse(const struct wcase *c, const char *s, int line,
		      struct pt_packet *pkt)
{
	char op[32];
	int n = 0;
	const char *a;

	memset(pkt, 0, sizeof(*pkt));
	s = ws(s);
	if (!*s || *s == '\n')
		return false;
	if (sscanf(s, "%31[a-z0-9.]%n", op, &n) != 1)
		die("%s.pkt:%d: cannot read: %s", c->path, line, s);
	a = ws(s + n);
	if (*a == '(') /* the @pt spelling: tip(3: l1) */
		a = ws(a + 1);
	if (!strcmp(op, "org"))
		return false;
	if (!strcmp(op, "psb")) {
		pkt->type = ppt_psb;
	} else if (!strcmp(op, "psbend")) {
		pkt->type = ppt_psbend;
	} else if (!strcmp(op, "pad")) {
		pkt->type = ppt_pad;
	} else if (!strcmp(op, "ovf")) {
		pkt->type = ppt_ovf;
	} else if (!strcmp(op, "stop")) {
		pkt->type = ppt_stop;
	} else if (!strcmp(op, "fup") || !strcmp(op, "tip") ||
		   !strcmp(op, "tip.pge") || !strcmp(op, "tip.pgd")) {
		pkt->type = !strcmp(op, "fup")	     ? ppt_fup
			    : !strcmp(op, "tip")     ? ppt_tip
			    : !strcmp(op, "tip.pge") ? ppt_tip_pge
						     : ppt_tip_pgd;
		pkt_ip(c, a, line, &pkt->payload.ip);
	} else if (!strcmp(op, "tnt") || !strcmp(op, "tnt64")) {
		uint64_t bits = 0;
		unsigned nb = 0;

		for (; *a && *a != ')' && *a != '\n'; a++) {
			if (*a == ' ' || *a == '\t')
				continue;
			if (nb == 47)
				die("%s.pkt:%d: more than 47 branches", c->path,
				    line);
			if (*a == '1' || *a == 't' || *a == '!')
				bits = bits << 1 | 1;
			else if (*a == '0' || *a == 'n' || *a == '.')
				bits <<= 1;
			else
				die("%s.pkt:%d: bad branch '%c'", c->path, line,
				    *a);
			nb++;
		}
		if (!nb)
			die("%s.pkt:%d: tnt without branches", c->path, line);
		pkt->type =
			nb <= 6 && strcmp(op, "tnt64") ? ppt_tnt_8 : ppt_tnt_64;
		pkt->payload.tnt.bit_size = (uint8_t)nb;
		pkt->payload.tnt.payload = bits;
	} else if (!strcmp(op, "mode.exec")) {
		enum pt_exec_mode m = ptem_64bit;

		if (strstr(a, "32") || strstr(a, "cs.d"))
			m = ptem_32bit;
		else if (strstr(a, "16"))
			m = ptem_16bit;
		pkt->type = ppt_mode;
		pkt->payload.mode.leaf = pt_mol_exec;
		pkt->payload.mode.bits.exec = pt_set_exec_mode(m);
	} else if (!strcmp(op, "mode.tsx")) {
		pkt->type = ppt_mode;
		pkt->payload.mode.leaf = pt_mol_tsx;
		if (strstr(a, "begin"))
			pkt->payload.mode.bits.tsx.intx = 1;
		else if (strstr(a, "abort"))
			pkt->payload.mode.bits.tsx.abrt = 1;
	} else if (!strcmp(op, "tsc")) {
		pkt->type = ppt_tsc;
		pkt->payload.tsc.tsc = pkt_value(c, &a, line);
	} else if (!strcmp(op, "cbr")) {
		pkt->type = ppt_cbr;
		pkt->payload.cbr.ratio = (uint8_t)pkt_value(c, &a, line);
	} else if (!strcmp(op, "mtc")) {
		pkt->type = ppt_mtc;
		pkt->payload.mtc.ctc = (uint8_t)pkt_value(c, &a, line);
	} else if (!strcmp(op, "cyc")) {
		pkt->type = ppt_cyc;
		pkt->payload.cyc.value = pkt_value(c, &a, line);
	} else if (!strcmp(op, "tma")) {
		pkt->type = ppt_tma;
		pkt->payload.tma.ctc = (uint16_t)pkt_value(c, &a, line);
		a = ws(a);
		if (*a == ',')
			a++;
		pkt->payload.tma.fc = (uint16_t)pkt_value(c, &a, line);
	} else if (!strcmp(op, "pip")) {
		pkt->type = ppt_pip;
		pkt->payload.pip.cr3 = pkt_value(c, &a, line);
	} else if (!strcmp(op, "ptw")) {
		/* ptw 8: 0x1234 [ip]: payload of 4 or 8 bytes */
		unsigned long sz = strtoul(a, (char **)&a, 0);

		a = ws(a);
		if (*a == ':')
			a++;
		pkt->type = ppt_ptw;
		pkt->payload.ptw.plc = sz == 8 ? 1 : 0;
		pkt->payload.ptw.payload = pkt_value(c, &a, line);
		pkt->payload.ptw.ip = strstr(a, "ip") ? 1 : 0;
	} else {
		die("%s.pkt:%d: unknown packet %s", c->path, line, op);
	}
	return true;
}

static void encode_pkt(struct wcase *c, const char *text)
{
	size_t cap = 1 << 16;
	uint8_t *buf = xmalloc(cap);
	struct pt_config cfg;
	struct pt_encoder *enc;
	const char *p = text;
	int line = 0;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + cap;
	enc = pt_alloc_encoder(&cfg);
	if (!enc)
		die("cannot make a libipt encoder");
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char s[512];
		struct pt_packet pkt;
		int rc;

		line++;
		if (n >= sizeof(s))
			die("%s.pkt:%d: line too long", c->path, line);
		memcpy(s, p, n);
		s[n] = 0;
		p += n + (nl ? 1 : 0);
		if (strchr(s, '#'))
			*strchr(s, '#') = 0;
		if (strchr(s, ';'))
			*strchr(s, ';') = 0;
		if (!pkt_parse(c, s, line, &pkt))
			continue;
		rc = pt_enc_next(enc, &pkt);
		if (rc < 0)
			die("%s.pkt:%d: libipt's encoder: %s", c->path, line,
			    pt_errstr(pt_errcode(rc)));
	}
	{
		uint64_t off = 0;

		pt_enc_get_offset(enc, &off);
		c->pt_len = off;
	}
	pt_free_encoder(enc);
	c->pt = buf;
}

static void read_own_case(struct wcase *c, const char *outdir, const char *elf)
{
	char *src = path_of(c, ".S"), *pktp = path_of(c, ".pkt");
	char obj[PATH_MAX], ttext[64], entry[64];
	size_t len;
	char *pkt = (char *)ptt_slurp(pktp, &len);

	if (!pkt)
		die("%s: %s", pktp, strerror(errno));
	c->org = pkt_org(pkt);
	snprintf(obj, sizeof(obj), "%s/%s.o", outdir, c->name);
	snprintf(ttext, sizeof(ttext), "-Ttext=%#llx",
		 (unsigned long long)c->org);
	snprintf(entry, sizeof(entry), "%#llx", (unsigned long long)c->org);
	run_tool((char *[]){"as", "--64", "--noexecstack", "-o", obj, src,
			    NULL});
	run_tool((char *[]){"ld", "-static", "--build-id=none", "-z",
			    "noexecstack", ttext, "-e", entry, "-o",
			    (char *)elf, obj, NULL});
	unlink(obj);
	read_linked(c, elf);
	encode_pkt(c, pkt);
	free(pkt);
	free(src);
	free(pktp);
}

/* ------------------------------------------------------------------ */
/* The capture                                                          */

static void write_capture(const struct wcase *c, const char *path,
			  const char *elf_abs)
{
	struct pd_writer *w;
	char pe[512] = "";
	struct perf_event_attr attr;
	uint64_t id = 1;
	struct pd_pt_info pt;
	struct pd_sample_id sid =
		capfile_sample_id(WRAP_PID, WRAP_PID, WRAP_SIDEBAND_TIME, 1);
	unsigned mtc_freq = c->run.have_mtc_freq ? c->run.mtc_freq : 3;
	uint64_t page = 0x1000;

	if (pd_writer_open(&w, path, PD_WRITE_FILE, pe, sizeof(pe)))
		die("%s", pe);

	/*
	 * pt, cyc, mtc, branch; MTC period; PSB period 0.  Not tsc: perf
	 * then decodes by time and drops a stream until its first TSC
	 * packet, which most cases have none of.
	 */
	capfile_pt_attr(&attr, WRAP_PMU_TYPE,
			1 | (1ull << 1) | (1ull << 9) | (1ull << 13) |
				((uint64_t)(mtc_freq & 0xf) << 14));
	attr.disabled = attr.enable_on_exec = attr.exclude_guest = 1;
	if (pd_writer_add_attr(w, &attr, &id, 1))
		goto werr;

	memset(&pt, 0, sizeof(pt));
	pt.pmu_type = WRAP_PMU_TYPE;
	pt.time_shift = WRAP_TIME_SHIFT;
	pt.time_mult = WRAP_TIME_MULT;
	pt.time_zero = 0;
	pt.cap_user_time_zero = true;
	capfile_pt_format(&pt);
	pt.tsc_ctc_n = c->run.ctc_ebx ? c->run.ctc_ebx : 2;
	pt.tsc_ctc_d = c->run.ctc_eax ? c->run.ctc_eax : 1;
	pt.have_max_nonturbo = true;
	pt.max_nonturbo_ratio = c->run.nom_freq ? c->run.nom_freq : 24;
	/* The address filter as perf record --filter writes it: with a
	 * file, the address is an offset in it (the kernel's rule). */
	if (c->run.have_filter)
		snprintf(pt.filter, sizeof(pt.filter), "filter %#llx/%#llx@%s",
			 (unsigned long long)(c->run.filter_a - c->load_vaddr +
					      c->load_off),
			 c->run.filter_b - c->run.filter_a + 1, elf_abs);
	{
		struct pd_time_conv tc = {.time_shift = WRAP_TIME_SHIFT,
					  .time_mult = WRAP_TIME_MULT,
					  .time_zero = 0,
					  .have_ext = true,
					  .cap_user_time_zero = true};

		if (pd_write_time_conv(w, &tc) ||
		    pd_write_auxtrace_info(w, &pt, PD_PT_NR_FIXED, true))
			goto werr;
	}
	{
		struct pd_comm cm = {.pid = WRAP_PID,
				     .tid = WRAP_PID,
				     .exec = true,
				     .comm = c->name};
		struct pd_mmap m = {0};
		char comm[16];

		snprintf(comm, sizeof(comm), "%s", c->name);
		cm.comm = comm;
		if (pd_write_comm(w, &cm, &sid))
			goto werr;
		m.pid = WRAP_PID;
		m.tid = WRAP_PID;
		m.start = c->load_vaddr & ~(page - 1);
		m.len = ((c->load_vaddr + c->load_size + page - 1) &
			 ~(page - 1)) -
			m.start;
		m.pgoff = c->load_off & ~(page - 1);
		m.is_mmap2 = true;
		m.prot = 5;  /* PROT_READ | PROT_EXEC */
		m.flags = 2; /* MAP_PRIVATE */
		m.filename = elf_abs;
		sid.time += 1000;
		if (pd_write_mmap2(w, &m, &sid))
			goto werr;
	}
	if (pd_write_finished_round(w))
		goto werr;
	{
		/* perf 6.1 crashes on a reference of 0 */
		struct pd_auxtrace a = {.size = c->pt_len,
					.offset = 0,
					.reference = 0x1000000,
					.idx = 0,
					.tid = WRAP_PID,
					.cpu = UINT32_MAX};

		if (pd_write_auxtrace(w, &a, c->pt))
			goto werr;
	}
	if (pd_write_finished_round(w))
		goto werr;
	if (c->run.have_cpu) {
		char cpuid[64];

		snprintf(cpuid, sizeof(cpuid), "GenuineIntel,%u,%u,%u",
			 c->run.family, c->run.model, c->run.stepping);
		if (pd_writer_set_feature_string(w, PD_FEAT_CPUID, cpuid))
			goto werr;
	}
	if (pd_writer_set_feature_string(w, PD_FEAT_HOSTNAME, "mt-ptt-wrap"))
		goto werr;
	if (pd_writer_finish(w, pe, sizeof(pe)))
		die("%s", pe);
	return;
werr:
	pd_writer_error(w, pe, sizeof(pe));
	pd_writer_abort(w);
	die("%s", pe);
}

static void usage(void)
{
	fputs("usage: mt-ptt-wrap CASE OUTDIR [--cpu F/M[/S]] [--pt FILE]\n"
	      "  CASE: path without extension of CASE.pt/.bin/.lst (libipt's\n"
	      "  test corpus) or of CASE.S/.pkt (our own); writes\n"
	      "  OUTDIR/NAME.elf and OUTDIR/NAME.data\n",
	      stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	static struct wcase c;
	const char *args[2] = {NULL, NULL}, *pt_out = NULL;
	char elf[PATH_MAX], data[PATH_MAX], elf_abs[PATH_MAX];
	unsigned cpu[3];
	bool forced_cpu = false;
	const char *slash;
	int nargs = 0;
	char *s_path;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--cpu") && i + 1 < argc) {
			if (!ptt_parse_cpu(argv[++i], &cpu[0], &cpu[1],
					   &cpu[2]))
				usage();
			forced_cpu = true;
		} else if (!strcmp(argv[i], "--pt") && i + 1 < argc) {
			pt_out = argv[++i];
		} else if (argv[i][0] == '-' || nargs == 2) {
			usage();
		} else {
			args[nargs++] = argv[i];
		}
	}
	if (nargs != 2)
		usage();
	c.path = args[0];
	slash = strrchr(c.path, '/');
	c.name = slash ? slash + 1 : c.path;
	snprintf(elf, sizeof(elf), "%s/%s.elf", args[1], c.name);
	snprintf(data, sizeof(data), "%s/%s.data", args[1], c.name);
	s_path = path_of(&c, ".S");
	if (exists(s_path))
		read_own_case(&c, args[1], elf);
	else
		read_libipt_case(&c);
	free(s_path);
	if (forced_cpu) {
		c.run.have_cpu = true;
		c.run.family = cpu[0];
		c.run.model = cpu[1];
		c.run.stepping = cpu[2];
	}
	if (c.code)
		write_elf(&c, elf);
	if (!realpath(elf, elf_abs))
		die("%s: %s", elf, strerror(errno));
	if (pt_out)
		write_file(pt_out, c.pt, c.pt_len);
	write_capture(&c, data, elf_abs);
	free(c.code);
	free(c.pt);
	return 0;
}
