// SPDX-License-Identifier: GPL-2.0
/*
 * .eh_frame / .debug_frame to sp_eh_row tables (see ehframe.h).
 *
 * Only what x86-64 code needs is evaluated: the CFA as a register plus an
 * offset, and the rules of rbp, rbx (for the CFA at rbx of ld.so's
 * lazy-binding trampoline, above any frame) and the return address.  Everything else a
 * frame may say (other registers, LSDA, personality) is skipped by length.
 * What a row cannot express becomes SP_EH_CANNOT, so the BPF walk stops
 * there instead of guessing.  The one CFA expression worth a kind of its
 * own is the PLT's, which every dynamically linked program runs through.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "ehframe.h"
#include "elf_budget.h"
#include "fileio.h"
#include "sha256.h"
#include "util.h"

/* x86-64 DWARF register numbers. */
#define REG_RBX 3
#define REG_RDI 5
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

#define STATE_STACK 16 /* DW_CFA_remember_state nesting kept; deeper is garbage */
#define MAX_SEGS 16

enum rule { R_SAME = 0, R_UNDEF, R_OFFSET, R_OTHER, R_RDI /* the return address only: in rdi (vfork) */ };

struct rules {
	int cfa_reg;
	int64_t cfa_off;
	int cfa_expr; /* 0, or the PLT expression's threshold (10 or 11), or -1: another expression */
	enum rule rbp, ra, rbx;
	int64_t rbp_off, ra_off, rbx_off;
};

struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

struct seg {
	uint64_t vaddr, memsz, off;
};

struct parser {
	const uint8_t *sec;
	size_t size;
	uint64_t sec_addr;
	bool eh; /* .eh_frame (CIE id 0, pointers encoded) rather than .debug_frame */
	struct seg segs[MAX_SEGS];
	int nr_segs;
	size_t max_rows;
	struct ehtab *t;
	size_t cap;
	int err;
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool has_z, signal;
	const uint8_t *insns, *insns_end;
	uint8_t addr_size;
};

static uint64_t get_u(struct cursor *c, int n)
{
	uint64_t v = 0;

	if (c->bad || c->end - c->p < n) {
		c->bad = true;
		return 0;
	}
	for (int i = 0; i < n; i++)
		v |= (uint64_t)c->p[i] << (8 * i);
	c->p += n;
	return v;
}

static uint64_t get_uleb(struct cursor *c)
{
	uint64_t v = 0;

	for (int shift = 0; !c->bad; shift += 7) {
		uint8_t b;

		if (c->p >= c->end || shift > 63) {
			c->bad = true;
			break;
		}
		b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	return 0;
}

static int64_t get_sleb(struct cursor *c)
{
	uint64_t v = 0;
	int shift = 0;
	uint8_t b = 0;

	do {
		if (c->bad || c->p >= c->end || shift > 63) {
			c->bad = true;
			return 0;
		}
		b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return (int64_t)v;
}

/* An encoded pointer (DW_EH_PE_*); pcrel is against the field's own address. -1 on what we do not read. */
static int get_ptr(struct parser *ps, struct cursor *c, uint8_t enc, uint64_t *out)
{
	uint64_t field = ps->sec_addr + (uint64_t)(c->p - ps->sec), v;

	if (enc == 0xff) /* DW_EH_PE_omit */
		return -1;
	switch (enc & 0x0f) {
	case 0x00: v = get_u(c, 8); break;			/* absptr */
	case 0x01: v = get_uleb(c); break;
	case 0x02: v = get_u(c, 2); break;
	case 0x03: v = get_u(c, 4); break;
	case 0x04: v = get_u(c, 8); break;
	case 0x09: v = (uint64_t)get_sleb(c); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)get_u(c, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)get_u(c, 4); break;
	case 0x0c: v = get_u(c, 8); break;
	default: c->bad = true; return -1;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += field; break; /* pcrel */
	default: return -1;	      /* textrel, datarel, funcrel: not used for FDE ranges on x86-64 */
	}
	if (enc & 0x80) /* indirect: the address of the pointer, not ours to follow */
		return -1;
	*out = v;
	return c->bad ? -1 : 0;
}

static int parse_cie(struct parser *ps, size_t off, struct cie *cie)
{
	struct cursor c = { .p = ps->sec + off, .end = ps->sec + ps->size };
	uint64_t len = get_u(&c, 4), id;
	const uint8_t *aug;
	uint8_t version;
	int idsz = 4;

	if (len == 0xffffffffull) {
		len = get_u(&c, 8);
		idsz = 8;
	}
	if (c.bad || len > (uint64_t)(c.end - c.p) || len < (uint64_t)idsz)
		return -1;
	c.end = c.p + len;
	id = get_u(&c, ps->eh ? 4 : idsz); /* .eh_frame's CIE pointer is 4 bytes whatever the length's size */
	if (ps->eh ? id != 0 : id != (idsz == 4 ? 0xffffffffull : ~0ull))
		return -1;
	memset(cie, 0, sizeof(*cie));
	cie->fde_enc = ps->eh ? 0x00 : 0xff; /* .debug_frame: target-size absolute addresses */
	cie->addr_size = 8;
	version = get_u(&c, 1);
	if (version != 1 && version != 3 && version != 4)
		return -1;
	aug = c.p;
	while (c.p < c.end && *c.p)
		c.p++;
	if (c.p >= c.end)
		return -1;
	c.p++;
	if (version == 4) {
		cie->addr_size = get_u(&c, 1);
		if (get_u(&c, 1) != 0 || (cie->addr_size != 8 && cie->addr_size != 4)) /* segment size */
			return -1;
	}
	cie->code_align = get_uleb(&c);
	cie->data_align = get_sleb(&c);
	cie->ra_reg = version == 1 ? get_u(&c, 1) : get_uleb(&c);
	if (aug[0] == 'z') {
		uint64_t alen = get_uleb(&c);
		struct cursor a;

		if (c.bad || alen > (uint64_t)(c.end - c.p))
			return -1;
		a = (struct cursor){ .p = c.p, .end = c.p + alen };
		cie->has_z = true;
		for (const uint8_t *k = aug + 1; *k && !a.bad; k++) {
			uint64_t dummy;
			uint8_t enc;

			if (*k == 'L') {
				get_u(&a, 1);
			} else if (*k == 'R') {
				cie->fde_enc = get_u(&a, 1);
			} else if (*k == 'P') {
				enc = get_u(&a, 1);
				/* Only its size matters; indirect personality pointers are the rule. */
				if (get_ptr(ps, &a, enc & 0x7f, &dummy) && a.bad)
					return -1;
			} else if (*k == 'S') {
				cie->signal = true;
			} else if (*k != 'B' && *k != 'G') {
				break; /* unknown: the rest of the data is skipped by its length */
			}
		}
		c.p += alen;
	} else if (aug[0]) {
		return -1; /* "eh" and other pre-'z' augmentations: data of unknown size follows */
	}
	if (c.bad || cie->code_align == 0 || cie->code_align > 64)
		return -1;
	cie->insns = c.p;
	cie->insns_end = c.end;
	return 0;
}

static bool vaddr_to_off(const struct parser *ps, uint64_t vaddr, uint32_t *off)
{
	for (int i = 0; i < ps->nr_segs; i++) {
		const struct seg *s = &ps->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->memsz) {
			uint64_t o = vaddr - s->vaddr + s->off;

			if (o > UINT32_MAX)
				return false;
			*off = o;
			return true;
		}
	}
	return false;
}

/* Where the frame saved rbx, as the kind byte's high four bits (SP_EH_RBX_SLOT). */
static uint8_t rbx_slot(const struct rules *r)
{
	if (r->rbx == R_SAME || r->rbx == R_UNDEF)
		return 0;
	if (r->rbx == R_OFFSET && r->rbx_off < 0 && r->rbx_off % 8 == 0 && -r->rbx_off / 8 < SP_EH_RBX_LOST)
		return (uint8_t)(-r->rbx_off / 8);
	return SP_EH_RBX_LOST;
}

static struct sp_eh_row row_of(const struct rules *r, const struct cie *cie)
{
	struct sp_eh_row row = { .kind = SP_EH_CANNOT };

	if (r->ra == R_UNDEF) {
		row.kind = SP_EH_END;
		return row;
	}
	if (cie->signal) {
		row.kind = SP_EH_SIGNAL;
		return row;
	}
	/* vfork popped its return address into rdi around the syscall, where the child runs first. */
	if (r->ra == R_RDI && r->cfa_expr == 0 && r->cfa_reg == REG_RSP && r->cfa_off >= 0 &&
	    r->cfa_off <= UINT16_MAX) {
		row.kind = SP_EH_RA_RDI;
		row.cfa_off = r->cfa_off;
	} else if (r->ra != R_OFFSET || r->ra_off != -8) {
		return row;
	} else if (r->cfa_expr > 0) {
		row.kind = SP_EH_PLT;
		row.cfa_off = r->cfa_expr;
	} else if (r->cfa_expr == 0 && (r->cfa_reg == REG_RSP || r->cfa_reg == REG_RBP || r->cfa_reg == REG_RBX) &&
		   r->cfa_off >= 8 && r->cfa_off <= UINT16_MAX) {
		row.kind = r->cfa_reg == REG_RSP ? SP_EH_RSP : r->cfa_reg == REG_RBP ? SP_EH_RBP : SP_EH_RBX;
		row.cfa_off = r->cfa_off;
	} else {
		return row;
	}
	row.kind |= rbx_slot(r) << 4;
	if (r->rbp == R_SAME || r->rbp == R_UNDEF)
		row.rbp = 0;
	else if (r->rbp == R_OFFSET && r->rbp_off % 8 == 0 && r->rbp_off / 8 > SP_EH_RBP_LOST && r->rbp_off < 0)
		row.rbp = r->rbp_off / 8;
	else
		row.rbp = SP_EH_RBP_LOST;
	return row;
}

static int add_row(struct parser *ps, uint64_t vaddr, struct sp_eh_row row)
{
	struct ehtab *t = ps->t;

	if (!vaddr_to_off(ps, vaddr, &row.pc))
		return 0; /* code outside the executable segments is never a sampled pc */
	if (t->nr == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 1024;
		void *p;

		if (t->nr >= ps->max_rows)
			return -E2BIG;
		if (cap > ps->max_rows)
			cap = ps->max_rows;
		p = realloc(t->rows, cap * sizeof(*t->rows));
		if (!p)
			return -ENOMEM;
		t->rows = p;
		ps->cap = cap;
	}
	t->rows[t->nr++] = row;
	return 0;
}

/*
 * The PLT's CFA expression, as binutils writes it for .plt and .plt.sec:
 * DW_OP_breg7 (rsp) 8; DW_OP_breg16 (rip) 0; DW_OP_lit15; DW_OP_and;
 * DW_OP_litN; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus.  N is 11 for
 * lazy PLT entries, 10 for some others: past that byte of the 16-byte
 * entry, the entry pushed its index and rsp is 8 lower.
 */
static int plt_expr(const uint8_t *e, uint64_t n)
{
	static const uint8_t head[] = { 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a };
	static const uint8_t tail[] = { 0x2a, 0x33, 0x24, 0x22 };

	if (n != sizeof(head) + 1 + sizeof(tail) || memcmp(e, head, sizeof(head)) ||
	    memcmp(e + sizeof(head) + 1, tail, sizeof(tail)))
		return -1;
	if (e[sizeof(head)] < 0x30 || e[sizeof(head)] > 0x3f) /* DW_OP_lit0..lit15 */
		return -1;
	return e[sizeof(head)] - 0x30;
}

static void set_rule(struct rules *r, uint64_t reg, enum rule kind, int64_t off)
{
	if (reg == REG_RBX) {
		r->rbx = kind;
		r->rbx_off = off;
	}
	if (reg == REG_RBP) {
		r->rbp = kind;
		r->rbp_off = off;
	}
	if (reg == REG_RA) {
		r->ra = kind;
		r->ra_off = off;
	}
}

/*
 * Runs CFA instructions from *loc, emitting a row before each advance
 * (unless emit is false: the CIE's initial instructions).  init is the
 * state after the CIE's instructions, for DW_CFA_restore.  -1 on garbage.
 */
static int run_insns(struct parser *ps, const struct cie *cie, const uint8_t *p, const uint8_t *end,
		     struct rules *r, const struct rules *init, uint64_t *loc, uint64_t loc_end, bool emit)
{
	struct cursor c = { .p = p, .end = end };
	struct rules stack[STATE_STACK];
	int depth = 0, e;

	while (c.p < c.end && !c.bad) {
		uint8_t op = get_u(&c, 1), low = op & 0x3f;
		uint64_t reg, adv = 0, off, n;
		bool advance = false;

		switch (op >> 6) {
		case 1: /* DW_CFA_advance_loc */
			adv = low * cie->code_align;
			advance = true;
			break;
		case 2: /* DW_CFA_offset */
			set_rule(r, low, R_OFFSET, (int64_t)get_uleb(&c) * cie->data_align);
			break;
		case 3: /* DW_CFA_restore */
			if (!init)
				return -1;
			if (low == REG_RBX)
				r->rbx = init->rbx, r->rbx_off = init->rbx_off;
			if (low == REG_RBP)
				r->rbp = init->rbp, r->rbp_off = init->rbp_off;
			if (low == REG_RA)
				r->ra = init->ra, r->ra_off = init->ra_off;
			break;
		default:
			switch (op) {
			case 0x00: /* nop */
				break;
			case 0x01: /* set_loc */
				if (get_ptr(ps, &c, cie->fde_enc, &off) || off < *loc)
					return -1;
				adv = off - *loc;
				advance = true;
				break;
			case 0x02: adv = get_u(&c, 1) * cie->code_align; advance = true; break;
			case 0x03: adv = get_u(&c, 2) * cie->code_align; advance = true; break;
			case 0x04: adv = get_u(&c, 4) * cie->code_align; advance = true; break;
			case 0x05: /* offset_extended */
				reg = get_uleb(&c);
				set_rule(r, reg, R_OFFSET, (int64_t)get_uleb(&c) * cie->data_align);
				break;
			case 0x06: /* restore_extended */
				reg = get_uleb(&c);
				if (!init)
					return -1;
				if (reg == REG_RBX)
					r->rbx = init->rbx, r->rbx_off = init->rbx_off;
				if (reg == REG_RBP)
					r->rbp = init->rbp, r->rbp_off = init->rbp_off;
				if (reg == REG_RA)
					r->ra = init->ra, r->ra_off = init->ra_off;
				break;
			case 0x07: set_rule(r, get_uleb(&c), R_UNDEF, 0); break;
			case 0x08: set_rule(r, get_uleb(&c), R_SAME, 0); break;
			case 0x09: /* register */
				reg = get_uleb(&c);
				off = get_uleb(&c);
				set_rule(r, reg, reg == REG_RA && off == REG_RDI ? R_RDI : R_OTHER, 0);
				break;
			case 0x0a: /* remember_state */
				if (depth == STATE_STACK)
					return -1;
				stack[depth++] = *r;
				break;
			case 0x0b: /* restore_state: the CFA is restored too (DWARF 5 says so, and gcc relies on it) */
				if (!depth)
					return -1;
				*r = stack[--depth];
				break;
			case 0x0c: /* def_cfa */
				r->cfa_reg = get_uleb(&c);
				r->cfa_off = get_uleb(&c);
				r->cfa_expr = 0;
				break;
			case 0x0d: /* def_cfa_register */
				r->cfa_reg = get_uleb(&c);
				r->cfa_expr = 0;
				break;
			case 0x0e: r->cfa_off = get_uleb(&c); break; /* def_cfa_offset */
			case 0x0f: /* def_cfa_expression */
				n = get_uleb(&c);
				if (c.bad || n > (uint64_t)(c.end - c.p))
					return -1;
				r->cfa_expr = plt_expr(c.p, n);
				c.p += n;
				break;
			case 0x10: /* expression */
			case 0x16: /* val_expression */
				reg = get_uleb(&c);
				n = get_uleb(&c);
				if (c.bad || n > (uint64_t)(c.end - c.p))
					return -1;
				c.p += n;
				set_rule(r, reg, R_OTHER, 0);
				break;
			case 0x11: /* offset_extended_sf */
				reg = get_uleb(&c);
				set_rule(r, reg, R_OFFSET, get_sleb(&c) * cie->data_align);
				break;
			case 0x12: /* def_cfa_sf */
				r->cfa_reg = get_uleb(&c);
				r->cfa_off = get_sleb(&c) * cie->data_align;
				r->cfa_expr = 0;
				break;
			case 0x13: r->cfa_off = get_sleb(&c) * cie->data_align; break; /* def_cfa_offset_sf */
			case 0x14: /* val_offset */
			case 0x15: /* val_offset_sf */
				reg = get_uleb(&c);
				if (op == 0x14)
					get_uleb(&c);
				else
					get_sleb(&c);
				set_rule(r, reg, R_OTHER, 0);
				break;
			case 0x2e: get_uleb(&c); break; /* GNU_args_size */
			case 0x2f: /* GNU_negative_offset_extended */
				reg = get_uleb(&c);
				set_rule(r, reg, R_OFFSET, -(int64_t)get_uleb(&c) * cie->data_align);
				break;
			default:
				return -1;
			}
		}
		if (c.bad)
			return -1;
		if (advance && emit) {
			if (adv > loc_end - *loc)
				adv = loc_end - *loc; /* past the FDE's end: the rest is not its code */
			if (adv) {
				e = add_row(ps, *loc, row_of(r, cie));
				if (e)
					return e;
				*loc += adv;
			}
		}
	}
	return c.bad ? -1 : 0;
}

/* One FDE at off (whose length field says len bytes follow the id at idp); -1 skips it. */
static int parse_fde(struct parser *ps, const uint8_t *idp, uint64_t cie_off, const uint8_t *end)
{
	struct cursor c = { .p = idp, .end = end };
	struct rules init = { .cfa_reg = -1 }, r;
	uint64_t pc, range, loc;
	struct cie cie;
	int e;

	if (cie_off >= ps->size || parse_cie(ps, cie_off, &cie))
		return -1;
	if (cie.fde_enc == 0xff) { /* .debug_frame */
		pc = get_u(&c, cie.addr_size);
		range = get_u(&c, cie.addr_size);
	} else {
		if (get_ptr(ps, &c, cie.fde_enc, &pc))
			return -1;
		if (get_ptr(ps, &c, cie.fde_enc & 0x0f, &range))
			return -1;
	}
	if (cie.has_z) {
		uint64_t n = get_uleb(&c);

		if (c.bad || n > (uint64_t)(c.end - c.p))
			return -1;
		c.p += n;
	}
	if (c.bad || range == 0 || pc + range < pc || range > UINT32_MAX)
		return -1;
	loc = pc;
	/* The CIE's instructions set the initial rules; they may not advance. */
	if (run_insns(ps, &cie, cie.insns, cie.insns_end, &init, NULL, &loc, pc, false))
		return -1;
	r = init;
	ps->t->fdes++;
	e = run_insns(ps, &cie, c.p, c.end, &r, &init, &loc, pc + range, true);
	if (e == -E2BIG || e == -ENOMEM)
		return e;
	if (loc < pc + range) {
		/* After garbage, the rows before it stand; from where it began, no guess. */
		e = add_row(ps, loc, e ? (struct sp_eh_row){ .kind = SP_EH_CANNOT } : row_of(&r, &cie));
		if (e)
			return e;
	}
	/* Where the FDE ends, no CFI until another begins. */
	return add_row(ps, pc + range, (struct sp_eh_row){ .kind = SP_EH_GAP });
}

static int parse_section(struct parser *ps)
{
	size_t off = 0;

	while (ps->size - off >= 4) {
		struct cursor c = { .p = ps->sec + off, .end = ps->sec + ps->size };
		uint64_t len = get_u(&c, 4), id, cie_off;
		const uint8_t *idp, *end;
		int idsz = 4, e;

		if (len == 0)
			break; /* .eh_frame's terminator */
		if (len == 0xffffffffull) {
			len = get_u(&c, 8);
			idsz = 8;
		}
		if (c.bad || len > (uint64_t)(c.end - c.p) || len < (uint64_t)idsz)
			return ps->t->nr ? 0 : -EINVAL; /* truncated: keep what came before */
		end = c.p + len;
		idp = c.p;
		id = get_u(&c, ps->eh ? 4 : idsz);
		if (ps->eh) {
			bool cie = id == 0;

			cie_off = (uint64_t)(idp - ps->sec) - id; /* relative to the id field */
			if (!cie && id <= (uint64_t)(idp - ps->sec)) {
				e = parse_fde(ps, c.p, cie_off, end);
				if (e == -E2BIG || e == -ENOMEM)
					return e;
			}
		} else if (id != (idsz == 4 ? 0xffffffffull : ~0ull)) {
			e = parse_fde(ps, c.p, id, end);
			if (e == -E2BIG || e == -ENOMEM)
				return e;
		}
		off = end - ps->sec;
	}
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct sp_eh_row *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	/* A gap ends one FDE where the next may begin: the FDE's row wins. */
	return (x->kind != SP_EH_GAP) - (y->kind != SP_EH_GAP);
}

/* cmp_row's order, inline: x strictly before y. */
static inline bool row_before(const struct sp_eh_row *x, const struct sp_eh_row *y)
{
	if (x->pc != y->pc)
		return x->pc < y->pc;
	return x->kind == SP_EH_GAP && y->kind != SP_EH_GAP;
}

/*
 * The rows in cmp_row's order by merging the ascending runs they come in:
 * each FDE's rows ascend and linkers lay FDEs out mostly by address, so a
 * file has few runs for its rows, and qsort's comparisons through a
 * pointer were a quarter of the recorder's CPU at -g.  Stable: of rows
 * alike at a pc, the later stays later.  -ENOMEM: not sorted.
 */
static int merge_runs(struct sp_eh_row *rows, size_t n)
{
	struct sp_eh_row *tmp = malloc(n * sizeof(*tmp)), *src = rows, *dst = tmp, *x;
	uint32_t *starts = malloc((n + 1) * sizeof(*starts));
	size_t k = 0, m;

	if (!tmp || !starts) {
		free(tmp);
		free(starts);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (!i || row_before(&rows[i], &rows[i - 1]))
			starts[k++] = i;
	starts[k] = n;
	while (k > 1) {
		m = 0;
		for (size_t r = 0; r < k; r += 2) {
			size_t a = starts[r], mid = r + 1 < k ? starts[r + 1] : starts[k], end = r + 2 < k ? starts[r + 2] : starts[k];
			size_t i = a, j = mid, o = a;

			while (i < mid && j < end)
				dst[o++] = row_before(&src[j], &src[i]) ? src[j++] : src[i++];
			memcpy(&dst[o], &src[i], (mid - i) * sizeof(*dst));
			o += mid - i;
			memcpy(&dst[o], &src[j], (end - j) * sizeof(*dst));
			starts[m++] = a;
		}
		starts[m] = n;
		k = m;
		x = src;
		src = dst;
		dst = x;
	}
	if (src != rows)
		memcpy(rows, src, n * sizeof(*rows));
	free(tmp);
	free(starts);
	return 0;
}

/* Sorted, one row per pc, no row equal to the one before it. */
static void finish_rows(struct ehtab *t)
{
	size_t n = 0;

	if (t->nr > 1 && merge_runs(t->rows, t->nr))
		qsort(t->rows, t->nr, sizeof(*t->rows), cmp_row);
	for (size_t i = 0; i < t->nr; i++) {
		struct sp_eh_row *r = &t->rows[i];

		if (i + 1 < t->nr && t->rows[i + 1].pc == r->pc)
			continue; /* the last row at a pc is the FDE's own (see cmp_row) */
		if (n && t->rows[n - 1].kind == r->kind && t->rows[n - 1].rbp == r->rbp &&
		    t->rows[n - 1].cfa_off == r->cfa_off)
			continue;
		t->rows[n++] = *r;
	}
	t->nr = n;
	for (size_t i = 0; i < n; i++) {
		t->cannot += SP_EH_KIND(t->rows[i].kind) == SP_EH_CANNOT;
		t->plt += SP_EH_KIND(t->rows[i].kind) == SP_EH_PLT;
		t->signal += SP_EH_KIND(t->rows[i].kind) == SP_EH_SIGNAL;
	}
}

static int pread_all(int fd, void *buf, size_t n, uint64_t off)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t k = pread(fd, p, n, off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EINVAL; /* shorter than its headers say */
		p += k;
		n -= k;
		off += k;
	}
	return 0;
}

/* The ELF header of fd, checked to be an x86-64 ELF file's. */
static int read_ehdr(int fd, Elf64_Ehdr *ehdr, struct stat *st)
{
	int e;

	if (fstat(fd, st))
		return -errno;
	e = pread_all(fd, ehdr, sizeof(*ehdr), 0);
	if (e)
		return e;
	if (memcmp(ehdr->e_ident, ELFMAG, SELFMAG) || ehdr->e_ident[EI_CLASS] != ELFCLASS64 ||
	    ehdr->e_ident[EI_DATA] != ELFDATA2LSB || ehdr->e_machine != EM_X86_64 ||
	    ehdr->e_shentsize != sizeof(Elf64_Shdr) || ehdr->e_phentsize != sizeof(Elf64_Phdr) || !ehdr->e_shnum ||
	    ehdr->e_shstrndx >= ehdr->e_shnum || ehdr->e_phnum > 4096)
		return -EINVAL;
	if (ehdr->e_shoff > (uint64_t)st->st_size || ehdr->e_phoff > (uint64_t)st->st_size)
		return -EINVAL;
	return 0;
}

/* The executable PT_LOADs of fd: where each vaddr lies in the file. */
static int read_segs(int fd, struct parser *ps)
{
	Elf64_Ehdr ehdr;
	Elf64_Phdr *ph;
	struct stat st;
	int e = read_ehdr(fd, &ehdr, &st);

	if (e)
		return e;
	ph = malloc((ehdr.e_phnum + 1) * sizeof(*ph));
	if (!ph)
		return -ENOMEM;
	e = pread_all(fd, ph, ehdr.e_phnum * sizeof(*ph), ehdr.e_phoff);
	ps->nr_segs = 0;
	for (int i = 0; !e && i < ehdr.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X) && ps->nr_segs < MAX_SEGS)
			ps->segs[ps->nr_segs++] = (struct seg){ ph[i].p_vaddr, ph[i].p_memsz, ph[i].p_offset };
	free(ph);
	return e;
}

/*
 * fd's section headers and their names, what parse_fd and ehtab_digest both
 * look at first.  Hostile input: the names' string table is checked against
 * the file's size and charged to b, the sections' total for one file.
 */
struct shdrs {
	Elf64_Ehdr ehdr;
	struct stat st;
	Elf64_Shdr *sh;	    /* ehdr.e_shnum of them */
	char *names;	    /* the section names, 0-terminated past the table */
	uint64_t names_size; /* the table's own size */
};

static void shdrs_free(struct shdrs *s)
{
	free(s->names);
	free(s->sh);
	s->names = NULL;
	s->sh = NULL;
}

/* The name of section i, "" where its offset lies past the table. */
static const char *shdrs_name(const struct shdrs *s, int i)
{
	return s->sh[i].sh_name < s->names_size ? s->names + s->sh[i].sh_name : "";
}

/* s from fd, its budget b set up for limit bytes; on error nothing is held. */
static int shdrs_read(int fd, struct elf_budget *b, uint64_t limit, struct shdrs *s)
{
	const Elf64_Shdr *ns;
	int e;

	memset(s, 0, sizeof(*s));
	e = read_ehdr(fd, &s->ehdr, &s->st);
	if (e)
		return e;
	/* What the sections read cost in all, not each (elf_budget.h); over it, the file is not CFI. */
	elf_budget_init(b, fd, s->st.st_size, limit, NULL);
	s->sh = malloc(s->ehdr.e_shnum * sizeof(*s->sh));
	if (!s->sh)
		return -ENOMEM;
	e = pread_all(fd, s->sh, s->ehdr.e_shnum * sizeof(*s->sh), s->ehdr.e_shoff);
	if (e)
		goto cleanup;
	ns = &s->sh[s->ehdr.e_shstrndx];
	if (ns->sh_type != SHT_STRTAB || ns->sh_size == 0 || ns->sh_offset > (uint64_t)s->st.st_size ||
	    ns->sh_size > (uint64_t)s->st.st_size - ns->sh_offset ||
	    elf_budget_take(b, s->ehdr.e_shstrndx, ns->sh_size)) {
		e = -EINVAL;
		goto cleanup;
	}
	s->names = malloc(ns->sh_size + 1);
	if (!s->names) {
		e = -ENOMEM;
		goto cleanup;
	}
	e = pread_all(fd, s->names, ns->sh_size, ns->sh_offset);
	if (e)
		goto cleanup;
	s->names[ns->sh_size] = 0;
	s->names_size = ns->sh_size;
cleanup:
	if (e)
		shdrs_free(s);
	return e;
}

/*
 * The rows of fd's .eh_frame, else its .debug_frame (only the latter if
 * debug_only), added to ps->t, with the segments ps holds.  -ENOENT: no
 * such section.
 */
/*
 * glibc's _init (crti.o's prologue, crtn.o's epilogue) has no FDE, and
 * ld.so calls each object's _init on its first moments, often as the
 * first instruction fetched from its code's first page, so a page fault
 * there is sampled with a chain cut at _init.  Its bytes are known
 * exactly: "sub $8,%rsp; mov __gmon_start__@GOTPCREL(%rip),%rax; test
 * %rax,%rax; je 1f; call *%rax; 1: add $8,%rsp; ret", an endbr64 before
 * under CET.  Only an .init of those bytes and no CFI of its own gets
 * rows: the CFA at rsp + 8, + 16 between the sub and the add.
 */
static int init_rows(int fd, struct parser *ps, const Elf64_Shdr *sh, size_t ndx, struct elf_budget *budget,
		     const struct stat *st)
{
	static const uint8_t body[] = { 0x48, 0x83, 0xec, 0x08, 0x48, 0x8b, 0x05, 0, 0, 0, 0, 0x48, 0x85, 0xc0,
					0x74, 0x02, 0xff, 0xd0, 0x48, 0x83, 0xc4, 0x08, 0xc3 };
	static const uint8_t endbr[] = { 0xf3, 0x0f, 0x1e, 0xfa };
	uint8_t b[sizeof(endbr) + sizeof(body)];
	uint64_t pre, a = sh->sh_addr;
	uint32_t lo, hi;
	int e;

	if (sh->sh_size != sizeof(body) && sh->sh_size != sizeof(b))
		return 0;
	if (sh->sh_offset > (uint64_t)st->st_size || sh->sh_size > (uint64_t)st->st_size - sh->sh_offset ||
	    elf_budget_take(budget, ndx, sh->sh_size) || pread_all(fd, b, sh->sh_size, sh->sh_offset))
		return 0;
	pre = sh->sh_size - sizeof(body);
	/* Bytes 7 to 10 are the GOT slot's displacement, the file's own. */
	if ((pre && memcmp(b, endbr, pre)) || memcmp(b + pre, body, 7) ||
	    memcmp(b + pre + 11, body + 11, sizeof(body) - 11))
		return 0;
	if (!vaddr_to_off(ps, a, &lo) || !vaddr_to_off(ps, a + sh->sh_size, &hi))
		return 0;
	/* CFI of the file's own for any of it wins: no second opinion. */
	for (size_t i = 0; i < ps->t->nr; i++)
		if (ps->t->rows[i].pc >= lo && ps->t->rows[i].pc < hi && ps->t->rows[i].kind != SP_EH_GAP)
			return 0;
	if ((e = add_row(ps, a, (struct sp_eh_row){ .kind = SP_EH_RSP, .cfa_off = 8 })) ||
	    (e = add_row(ps, a + pre + 4, (struct sp_eh_row){ .kind = SP_EH_RSP, .cfa_off = 16 })) ||
	    (e = add_row(ps, a + pre + 22, (struct sp_eh_row){ .kind = SP_EH_RSP, .cfa_off = 8 })))
		return e;
	return add_row(ps, a + sh->sh_size, (struct sp_eh_row){ .kind = SP_EH_GAP });
}

static int parse_fd(int fd, struct parser *ps, bool debug_only)
{
	const Elf64_Shdr *eh = NULL, *dbg = NULL, *init = NULL, *sh;
	struct ehtab *t = ps->t;
	struct elf_budget b;
	uint8_t *sec = NULL;
	struct shdrs s;
	int e = shdrs_read(fd, &b, ELF_BUDGET_CFI, &s);

	if (e)
		return e;
	sh = s.sh;
	for (int i = 0; i < s.ehdr.e_shnum; i++) {
		const char *name = shdrs_name(&s, i);

		if (sh[i].sh_type != SHT_PROGBITS && sh[i].sh_type != SHT_X86_64_UNWIND)
			continue;
		if (!strcmp(name, ".eh_frame") && !debug_only)
			eh = &sh[i];
		else if (!strcmp(name, ".debug_frame") && !(sh[i].sh_flags & SHF_COMPRESSED))
			dbg = &sh[i];
		else if (!strcmp(name, ".init") && (sh[i].sh_flags & SHF_EXECINSTR))
			init = &sh[i];
	}
	if (!ps->nr_segs || (!eh && !dbg)) {
		e = -ENOENT;
		goto cleanup;
	}
	for (int pass = 0; pass < 2; pass++) {
		const Elf64_Shdr *sec_sh = pass == 0 ? eh : dbg;
		size_t before = t->nr;

		if (!sec_sh || !sec_sh->sh_size)
			continue;
		if (sec_sh->sh_offset > (uint64_t)s.st.st_size ||
		    sec_sh->sh_size > (uint64_t)s.st.st_size - sec_sh->sh_offset ||
		    elf_budget_take(&b, sec_sh - sh, sec_sh->sh_size)) {
			e = -EINVAL;
			goto cleanup;
		}
		sec = malloc(sec_sh->sh_size);
		if (!sec) {
			e = -ENOMEM;
			goto cleanup;
		}
		e = pread_all(fd, sec, sec_sh->sh_size, sec_sh->sh_offset);
		if (e)
			goto cleanup;
		ps->sec = sec;
		ps->size = sec_sh->sh_size;
		ps->sec_addr = sec_sh->sh_addr;
		ps->eh = pass == 0;
		e = parse_section(ps);
		free(sec);
		sec = NULL;
		if (e)
			goto cleanup;
		if (t->nr > before) {
			t->from_debug_frame |= pass == 1;
			break;
		}
	}
	if (init && t->nr)
		e = init_rows(fd, ps, init, init - sh, &b, &s.st);
cleanup:
	free(sec);
	shdrs_free(&s);
	return e;
}

/* Bytes [off, off + n) of fd into the digest, read in pieces. */
static int digest_range(int fd, struct sha256 *h, uint64_t off, uint64_t n)
{
	uint8_t buf[65536];

	while (n) {
		size_t k = SP_MIN(n, sizeof(buf));
		int e = pread_all(fd, buf, k, off);

		if (e)
			return e;
		sha256_update(h, buf, k);
		off += k;
		n -= k;
	}
	return 0;
}

int ehtab_digest(int fd, uint8_t out[SHA256_SIZE])
{
	static const char version[] = "spanperf ehtab inputs 1";
	struct elf_budget b;
	struct sha256 h;
	struct shdrs s;
	uint64_t sum = 0;
	int e = shdrs_read(fd, &b, ELF_BUDGET_CFI, &s);

	if (e)
		return e;
	sha256_init(&h);
	sha256_update(&h, version, sizeof(version));
	sha256_update(&h, &s.st.st_size, sizeof(s.st.st_size));
	sha256_update(&h, &s.ehdr, sizeof(s.ehdr));
	e = digest_range(fd, &h, s.ehdr.e_phoff, (uint64_t)s.ehdr.e_phnum * sizeof(Elf64_Phdr));
	if (e)
		goto cleanup;
	sha256_update(&h, s.sh, s.ehdr.e_shnum * sizeof(*s.sh));
	sha256_update(&h, s.names, s.names_size);
	/* The sections parse_fd reads, chosen by the names just hashed: so the choice is in the digest too. */
	for (int i = 0; i < s.ehdr.e_shnum; i++) {
		const char *name = shdrs_name(&s, i);
		const Elf64_Shdr *sh = &s.sh[i];

		if (sh->sh_type != SHT_PROGBITS && sh->sh_type != SHT_X86_64_UNWIND)
			continue;
		if (strcmp(name, ".eh_frame") && strcmp(name, ".debug_frame"))
			continue;
		if (sh->sh_offset > (uint64_t)s.st.st_size || sh->sh_size > (uint64_t)s.st.st_size - sh->sh_offset) {
			e = -EINVAL;
			goto cleanup;
		}
		/*
		 * Every such section, not only the two parse_fd picks: a sum of
		 * its own, apart from b's (its count of sections would refuse a
		 * file the parser takes).
		 */
		sum += sh->sh_size;
		if (sum > 2 * ELF_BUDGET_CFI) {
			e = -EFBIG;
			goto cleanup;
		}
		sha256_update(&h, &i, sizeof(i));
		e = digest_range(fd, &h, sh->sh_offset, sh->sh_size);
		if (e)
			goto cleanup;
	}
	sha256_final(&h, out);
cleanup:
	shdrs_free(&s);
	return e;
}

int ehtab_from_fd(int fd, size_t max_rows, struct ehtab *t)
{
	struct parser ps = { .max_rows = max_rows, .t = t };
	int e;

	memset(t, 0, sizeof(*t));
	e = read_segs(fd, &ps) ?: parse_fd(fd, &ps, false);
	if (!e) {
		finish_rows(t);
		e = t->nr ? 0 : -ENOENT;
	}
	if (e)
		ehtab_free(t);
	return e;
}

int ehtab_from_fds(int fd, int debug_fd, size_t max_rows, struct ehtab *t)
{
	struct parser ps = { .max_rows = max_rows, .t = t };
	int e, d;

	memset(t, 0, sizeof(*t));
	/*
	 * The segments are fd's: a debug file's program headers say where the
	 * code was, with no file offsets (its sections are NOBITS).
	 */
	e = read_segs(fd, &ps);
	if (e)
		goto cleanup;
	e = parse_fd(fd, &ps, false);
	if (e && e != -ENOENT)
		goto cleanup;
	/*
	 * Both sets in one: the same build's CFI, so where both cover a function
	 * their rows are the same, and an FDE's end (a gap) falls where the
	 * function ends in both.
	 */
	d = parse_fd(debug_fd, &ps, true);
	if (d && d != -ENOENT) {
		e = d;
		goto cleanup;
	}
	finish_rows(t);
	e = t->nr ? 0 : -ENOENT;
cleanup:
	if (e)
		ehtab_free(t);
	return e;
}

int ehtab_from_path(const char *path, size_t max_rows, struct ehtab *t)
{
	/* Only a regular file, looked at before it is opened: a device's open must not run. */
	int fd = open_regular(path), e;

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return fd;
	e = ehtab_from_fd(fd, max_rows, t);
	close(fd);
	return e;
}

const struct sp_eh_row *ehtab_find(const struct ehtab *t, __u64 off)
{
	size_t lo = SP_PARTITION(t->nr, i, t->rows[i].pc <= off);

	return lo ? &t->rows[lo - 1] : NULL;
}

void ehtab_free(struct ehtab *t)
{
	if (!t)
		return;
	free(t->rows);
	memset(t, 0, sizeof(*t));
}
