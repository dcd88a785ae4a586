/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A HotSpot JVM (JDK 11-30, x86-64) in another process: where its libjvm's
 * self-description lives (gHotSpotVMStructs, gHotSpotVMTypes and the
 * constant tables, found by libjvm's ELF symbols), and what a stack walk and
 * the naming of Java frames need of it, read from that process's memory.
 *
 * The layout globals (strides, offsets in an entry) sit in libjvm's .bss and
 * are set by its static initialisers, so every one is read from the process,
 * never from the file.  Everything read is the process's to lie about:
 * strides, counts, strings, offsets and the code heaps are bounded and
 * checked (a lying table yields -EBADMSG, never a larger read).
 */
#ifndef SP_JVMFACTS_H
#define SP_JVMFACTS_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/* Reads len bytes at addr of a process: 0, or -errno (py_read_pid fits). */
typedef int (*jvm_read_fn)(void *ctx, __u64 addr, void *buf, size_t len);

/* The gHotSpot* symbols a JVM is read by (link addresses; 0: absent). */
enum {
	JS_STRUCTS, JS_TYPES, JS_INTS,
	JS_S_STRIDE, JS_S_TYPE, JS_S_FIELD, JS_S_TSTR, JS_S_STATIC, JS_S_OFFSET, JS_S_ADDRESS,
	JS_T_STRIDE, JS_T_NAME, JS_T_SIZE,
	JS_I_STRIDE, JS_I_NAME, JS_I_VALUE,
	JS_MAX
};

struct jvm_binary {
	__u64 load_base; /* p_vaddr - p_offset of the first PT_LOAD */
	__u64 lo, hi;	 /* the PT_LOADs' span (link addresses, .bss included: the statics live there) */
	__u64 sym[JS_MAX];
};

/* The ELF file fd's symbols: 0, -ENOENT when it is no libjvm, -EINVAL when no ELF file. */
int jvm_binary_read(int fd, struct jvm_binary *out);

#define JVM_NONE 0xffffffffu	/* an offset or size the JVM does not export */
#define JVM_MAX_HEAPS 8

/* Byte offsets in HotSpot's structures (JVM_NONE where this JDK has no such field). */
struct jvm_offsets {
	/* CodeBlob: JDK <= 22 code begin/end are pointers, 23+ int offsets from the blob */
	__u32 cb_name, cb_size, cb_frame_complete, cb_frame_size;
	__u32 cb_code_begin, cb_code_end, cb_code_offset, cb_data_offset, cb_kind;
	/* nmethod (CompiledMethod's fields up to JDK 22) */
	__u32 nm_method, nm_compile_id, nm_comp_level, nm_entry_bci, nm_orig_pc_offset;
	__u32 nm_deopt_handler_ptr, nm_deopt_handler_off, nm_verified_entry_ptr, nm_verified_entry_off;
	__u32 nm_scopes_data_ptr, nm_scopes_data_off, nm_scopes_pcs_off, nm_dependencies_off;
	__u32 nm_metadata_off, nm_immutable_data, nm_immutable_data_size;
	__u32 cb_mutable_data, cb_relocation_size, cb_mutable_data_size;
	__u32 pcdesc_pc, pcdesc_scope;
	/* Method, ConstMethod, ConstantPool, Klass, Symbol */
	__u32 method_constmethod, method_access_flags;
	__u32 cmethod_constants, cmethod_cm_size, cmethod_code_size, cmethod_flags, cmethod_name_index, cmethod_signature_index;
	__u32 cpool_holder, cpool_length, cpool_source_file_index;
	__u32 klass_name, symbol_length, symbol_body;
	/* sizes */
	__u32 heapblock_size, cmethod_size, cpool_size, pcdesc_size;
	bool frame_complete_i16; /* CodeBlob::_frame_complete_offset is int16_t (JDK 23+) */
	bool cmethod_flags_u32;	 /* ConstMethod::_flags._flags (JDK 21+) */
	bool symbol_length_high; /* JDK 11: _length_and_refcount, the length its high half */
};

/*
 * Where an nmethod keeps what names its inlined frames (nmethod.hpp of each
 * JDK; the fields from the exported tables, the arithmetic per layout):
 * JVM_SCOPES_HEADER (JDK 11-22): metadata at the blob + _metadata_offset up
 * to the scopes data, which starts at CompiledMethod::_scopes_data_begin
 * and ends where the PcDescs start, at the blob + _scopes_pcs_offset, up to
 * the blob + _dependencies_offset; JVM_SCOPES_IMMUTABLE (JDK 25+): PcDescs
 * at _immutable_data + _scopes_pcs_offset up to + _scopes_data_offset, the
 * scopes data from there within the immutable data, metadata after the
 * relocations in CodeBlob::_mutable_data.  JDK 23-24's mix of the two is
 * not one this was checked against: none (frames stay uninlined there).
 */
enum { JVM_SCOPES_NONE, JVM_SCOPES_HEADER, JVM_SCOPES_IMMUTABLE };

struct jvm_heap {
	__u64 low, high;		   /* committed: a blob lies in [low, high) */
	__u64 low_boundary, high_boundary; /* reserved */
	__u64 segmap;			   /* one byte per segment from low */
	__u32 log2_seg;
};

struct jvm_facts {
	__u32 major, minor, security, build;
	char release[64];
	__u64 cc_low, cc_high; /* CodeCache's whole reservation: every heap lies in it */
	struct jvm_heap heap[JVM_MAX_HEAPS];
	__u32 nr_heaps;
	__u64 call_stub_ret;	   /* StubRoutines::_call_stub_return_address */
	__u64 interp_lo, interp_hi; /* the template interpreter's code (AbstractInterpreter::_code) */
	__u64 ret_entry_lo, ret_entry_hi; /* its "return entry points" codelet (0: not found) */
	int kind_nmethod;	   /* CodeBlobKind::Nmethod (JDK 23+), else -1 */
	__u32 lnt_flag;		   /* ConstMethod's has-a-line-number-table flag bit */
	__u8 u5_excess;		   /* UNSIGNED5's excluded low bytes: 1 from JDK 20.0.0+15 on, before 0 */
	__u8 scopes;		   /* JVM_SCOPES_* */
	__u64 lib_lo, lib_hi;	   /* libjvm's span in the process: a blob's name points there */
	__u32 nr_structs, nr_types, nr_ints; /* entries read */
	struct jvm_offsets o;
};

/*
 * The JVM of libjvm e mapped at load bias `bias` in the process read()
 * reads (every symbol and static must lie in e's span there): 0, or -errno with why
 * (-EAGAIN: its tables or code cache are not set up yet, a new JVM's first
 * few hundred ms; -EBADMSG: a table or value that cannot be a JVM's;
 * -EPROTONOSUPPORT: a version outside 11..30).
 */
int jvm_facts_read(const struct jvm_binary *e, __u64 bias, jvm_read_fn read, void *ctx, struct jvm_facts *out,
		   char *why, size_t n);

/* Whether pc lies in one of the code heaps' committed parts. */
bool jvm_in_code_cache(const struct jvm_facts *f, __u64 pc);

#define JVM_MAX_HOPS 16 /* segment map hops: 4 is the most a blob a thread runs in needed here */

/* What a walk needs of the CodeBlob that holds a pc (the BPF walk's reference). */
struct jvm_blob {
	__u64 addr, code_begin, code_end;
	__s32 size, frame_size; /* bytes; words */
	bool nmethod;		/* a compiled Java method (or a native method's wrapper) */
	__s32 compile_id;	/* an nmethod's: with addr, the identity no reuse repeats */
	__u64 method;		/* an nmethod's Method* */
	/* An nmethod's debug information (JVM_SCOPES_*): each [lo, hi) checked to lie in its memory; 0 where none. */
	__u64 pcs_lo, pcs_hi;	/* PcDescs, by pc offset from code_begin */
	__u64 data_lo, data_hi; /* the scopes' stream */
	__u64 meta_lo, meta_hi; /* Metadata*, index 1 the first */
	__u32 hops;
	char name[64];		/* the blob's own name ("nmethod", "Interpreter", "StubRoutines (1)", ...) */
};

/*
 * The blob holding pc, through its heap's segment map: 0, -ENOENT (pc in
 * no heap, or in a free segment), -ELOOP (past JVM_MAX_HOPS), -EBADMSG (a
 * header that cannot be a blob's: a name outside libjvm, pc outside it).
 */
int jvm_blob_at(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 pc, struct jvm_blob *out);

/*
 * One UNSIGNED5 number of HotSpot's CompressedReadStream at *pos in
 * [buf, buf + len): 0 with *pos past it, -EBADMSG at the end or on an
 * excluded byte.  (Bytes of 192 and up say more follow, at most 5 in all;
 * each adds (byte - excess) << 6i.)
 */
static inline int jvm_u5(const __u8 *buf, size_t len, size_t *pos, __u8 excess, __u32 *out)
{
	__u32 sum = 0;

	for (int i = 0, shift = 0; i < 5; i++, shift += 6) {
		__u8 b;

		if (*pos >= len)
			return -EBADMSG;
		b = buf[(*pos)++];
		if (b < excess)
			return -EBADMSG;
		sum += (__u32)(b - excess) << shift;
		if (b < 192)
			break;
	}
	*out = sum;
	return 0;
}

#endif
