/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's ORC rules as both BPF walks of kernel stacks read them
 * (kstack.bpf.h, a kernel-mode sample's chain; offkstack.bpf.h, a blocking
 * thread's): the constants of arch/x86/include/asm/orc_types.h and one
 * table entry's decode, in either layout, through CO-RE.  The tables'
 * addresses come from user space (user/sys/orctables.c).
 *
 * 6.4 changed the entry: the type grew to three bits with new values
 * (undefined 0, end of stack 1, call 2, regs 3, partial regs 4) and a
 * signal bit; before it (Debian's 6.1) the type had two (call 0, regs 1,
 * partial regs 2) and an end bit.  The decode gives 6.4's type numbers for
 * both, 6.1's end of the stack (end bit, sp_reg undefined) as 6.4's type,
 * and 6.1's end bit as it is (offkstack.bpf.h keeps no call frame with it).
 */
#ifndef SP_ORC_BPF_H
#define SP_ORC_BPF_H

#define ORC_REG_UNDEFINED 0
#define ORC_REG_PREV_SP 1
#define ORC_REG_BP 4
#define ORC_REG_SP 5
#define ORC_TYPE_UNDEFINED 0
#define ORC_TYPE_END_OF_STACK 1
#define ORC_TYPE_CALL 2
#define ORC_TYPE_REGS 3
#define ORC_TYPE_REGS_PARTIAL 4
/* ORC's lookup table covers [_stext, _etext) in blocks of this many bytes (LOOKUP_BLOCK_SIZE). */
#define ORC_LOOKUP_BLOCK 256

/* struct orc_entry before 6.4: two bits of type (call 0, regs 1, partial regs 2) and an end bit. */
struct orc_entry___v61 {
	s16 sp_offset;
	s16 bp_offset;
	unsigned int sp_reg : 4;
	unsigned int bp_reg : 4;
	unsigned int type : 2;
	unsigned int end : 1;
} __attribute__((packed, preserve_access_index));

/*
 * A table entry as read: one object of either layout (read as another type
 * through a cast, the compiler may take the bytes for the zeros they were
 * before the read: 6.1's rules all came out 0).  8 bytes: the bitfields'
 * loads are 4 bytes at 4.
 */
union orc_raw {
	struct orc_entry e;
	struct orc_entry___v61 v61;
	__u64 raw;
};

/* One entry's rule; type in 6.4's numbers. */
struct orc_rule {
	__s16 sp_off, bp_off;
	__u8 sp_reg, bp_reg, type;
	__u8 signal; /* 6.4+: the next rule is looked up at the pc, not pc - 1 (6.1: 0) */
	__u8 end;    /* 6.1: the end bit (6.4+: 0; its end is ORC_TYPE_END_OF_STACK) */
};

/* The rule of one table entry, in the running kernel's layout; false for a layout neither. */
static __always_inline bool orc_decode(union orc_raw *u, struct orc_rule *r)
{
	__u32 t;

	if (bpf_core_field_exists(struct orc_entry, signal)) {
		struct orc_entry *o = &u->e;

		r->sp_off = o->sp_offset;
		r->bp_off = o->bp_offset;
		r->sp_reg = BPF_CORE_READ_BITFIELD(o, sp_reg);
		r->bp_reg = BPF_CORE_READ_BITFIELD(o, bp_reg);
		r->type = BPF_CORE_READ_BITFIELD(o, type);
		r->signal = BPF_CORE_READ_BITFIELD(o, signal);
		r->end = 0;
		return true;
	}
	if (bpf_core_field_exists(struct orc_entry___v61, end)) {
		struct orc_entry___v61 *o = &u->v61;

		r->sp_off = o->sp_offset;
		r->bp_off = o->bp_offset;
		r->sp_reg = BPF_CORE_READ_BITFIELD(o, sp_reg);
		r->bp_reg = BPF_CORE_READ_BITFIELD(o, bp_reg);
		t = BPF_CORE_READ_BITFIELD(o, type);
		r->type = t == 0 ? ORC_TYPE_CALL : t == 1 ? ORC_TYPE_REGS : t == 2 ? ORC_TYPE_REGS_PARTIAL : ORC_TYPE_UNDEFINED;
		r->signal = 0;
		r->end = BPF_CORE_READ_BITFIELD(o, end);
		/* 6.1's unwind_next_frame: an undefined sp_reg ends the stack with the end bit, else is an error. */
		if (r->end && r->sp_reg == ORC_REG_UNDEFINED)
			r->type = ORC_TYPE_END_OF_STACK;
		return true;
	}
	return false;
}

#endif
