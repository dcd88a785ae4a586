// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_budget.h"
#include "jvmfacts.h"

static const char *const sym_names[JS_MAX] = {
	[JS_STRUCTS] = "gHotSpotVMStructs",
	[JS_TYPES] = "gHotSpotVMTypes",
	[JS_INTS] = "gHotSpotVMIntConstants",
	[JS_S_STRIDE] = "gHotSpotVMStructEntryArrayStride",
	[JS_S_TYPE] = "gHotSpotVMStructEntryTypeNameOffset",
	[JS_S_FIELD] = "gHotSpotVMStructEntryFieldNameOffset",
	[JS_S_TSTR] = "gHotSpotVMStructEntryTypeStringOffset",
	[JS_S_STATIC] = "gHotSpotVMStructEntryIsStaticOffset",
	[JS_S_OFFSET] = "gHotSpotVMStructEntryOffsetOffset",
	[JS_S_ADDRESS] = "gHotSpotVMStructEntryAddressOffset",
	[JS_T_STRIDE] = "gHotSpotVMTypeEntryArrayStride",
	[JS_T_NAME] = "gHotSpotVMTypeEntryTypeNameOffset",
	[JS_T_SIZE] = "gHotSpotVMTypeEntrySizeOffset",
	[JS_I_STRIDE] = "gHotSpotVMIntConstantEntryArrayStride",
	[JS_I_NAME] = "gHotSpotVMIntConstantEntryNameOffset",
	[JS_I_VALUE] = "gHotSpotVMIntConstantEntryValueOffset",
};

/* Bounds on what the process says of its tables (hotspot.md 1.4). */
#define MAX_STRIDE 256
#define MAX_ENTRIES 65536
#define MAX_STR 256
#define MAX_TYPE_SIZE (64u << 10)

static int take_sym(const char *name, const GElf_Sym *sym, void *ctx)
{
	struct jvm_binary *out = ctx;

	if (!sym->st_value || strncmp(name, "gHotSpotVM", 10))
		return 0;
	for (int k = 0; k < JS_MAX; k++)
		if (!out->sym[k] && !strcmp(name, sym_names[k]))
			out->sym[k] = sym->st_value;
	return 0;
}

int jvm_binary_read(int fd, struct jvm_binary *out)
{
	struct elf_budget b = {};
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;
	int err = 0;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	/* Read, not mapped: the file may be a container's, to truncate under us. */
	elf = elf_budget_begin(&b, fd, false, ELF_BUDGET_SYMS, NULL);
	if (!elf_is_x86_64(elf, &eh) || elf_getphdrnum(elf, &nph)) {
		err = -EINVAL;
		goto cleanup;
	}
	/* .dynsym holds them all (libjvm exports them for the serviceability agent). */
	elf_budget_each_sym(&b, SHT_DYNSYM, take_sym, out);
	for (int k = 0; k < JS_MAX; k++)
		if (!out->sym[k]) {
			err = -ENOENT;
			goto cleanup;
		}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (!out->hi)
			out->load_base = ph.p_vaddr - ph.p_offset, out->lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > out->hi)
			out->hi = ph.p_vaddr + ph.p_memsz;
	}
	if (!out->hi)
		err = -EINVAL;
cleanup:
	elf_budget_end(&b);
	return err;
}

/* Instance fields and type sizes, gathered before they go to struct jvm_offsets. */
struct all {
	struct jvm_offsets o;
	__u32 heap_memory, heap_segmap, heap_log2, vs_low_boundary, vs_high_boundary, vs_low, vs_high;
	__u32 ga_len, ga_data, sq_buffer, sq_limit, sq_begin, sq_end, ic_size, ic_desc;
};

static const struct field {
	const char *type, *field;
	size_t off;
	bool need; /* a JVM without it is not read */
} fields[] = {
#define F(t, f, m, n) { t, f, offsetof(struct all, m), n }
	F("CodeBlob", "_name", o.cb_name, true),
	F("CodeBlob", "_size", o.cb_size, true),
	F("CodeBlob", "_frame_complete_offset", o.cb_frame_complete, true),
	F("CodeBlob", "_frame_size", o.cb_frame_size, true),
	F("CodeBlob", "_code_begin", o.cb_code_begin, false),
	F("CodeBlob", "_code_end", o.cb_code_end, false),
	F("CodeBlob", "_code_offset", o.cb_code_offset, false),
	F("CodeBlob", "_data_offset", o.cb_data_offset, false),
	F("CodeBlob", "_kind", o.cb_kind, false),
	F("CodeBlob", "_mutable_data", o.cb_mutable_data, false),
	F("CodeBlob", "_relocation_size", o.cb_relocation_size, false),
	F("CodeBlob", "_mutable_data_size", o.cb_mutable_data_size, false),
	F("CompiledMethod", "_method", o.nm_method, false),
	F("nmethod", "_method", o.nm_method, false),
	F("nmethod", "_compile_id", o.nm_compile_id, true),
	F("nmethod", "_comp_level", o.nm_comp_level, false),
	F("nmethod", "_entry_bci", o.nm_entry_bci, false),
	F("nmethod", "_orig_pc_offset", o.nm_orig_pc_offset, false),
	F("CompiledMethod", "_deopt_handler_begin", o.nm_deopt_handler_ptr, false),
	F("nmethod", "_deopt_handler_offset", o.nm_deopt_handler_off, false),
	F("nmethod", "_deopt_handler_entry_offset", o.nm_deopt_handler_off, false),
	F("nmethod", "_verified_entry_point", o.nm_verified_entry_ptr, false),
	F("nmethod", "_verified_entry_offset", o.nm_verified_entry_off, false),
	F("CompiledMethod", "_scopes_data_begin", o.nm_scopes_data_ptr, false),
	F("nmethod", "_scopes_data_offset", o.nm_scopes_data_off, false),
	F("nmethod", "_scopes_pcs_offset", o.nm_scopes_pcs_off, true),
	F("nmethod", "_dependencies_offset", o.nm_dependencies_off, false),
	F("nmethod", "_metadata_offset", o.nm_metadata_off, false),
	F("nmethod", "_immutable_data", o.nm_immutable_data, false),
	F("nmethod", "_immutable_data_size", o.nm_immutable_data_size, false),
	F("PcDesc", "_pc_offset", o.pcdesc_pc, true),
	F("PcDesc", "_scope_decode_offset", o.pcdesc_scope, true),
	F("Method", "_constMethod", o.method_constmethod, true),
	F("Method", "_access_flags", o.method_access_flags, false),
	F("ConstMethod", "_constants", o.cmethod_constants, true),
	F("ConstMethod", "_code_size", o.cmethod_code_size, true),
	F("ConstMethod", "_constMethod_size", o.cmethod_cm_size, false),
	F("ConstMethod", "_flags", o.cmethod_flags, false),
	F("ConstMethod", "_flags._flags", o.cmethod_flags, false),
	F("ConstMethod", "_name_index", o.cmethod_name_index, true),
	F("ConstMethod", "_signature_index", o.cmethod_signature_index, true),
	F("ConstantPool", "_pool_holder", o.cpool_holder, true),
	F("ConstantPool", "_length", o.cpool_length, true),
	F("ConstantPool", "_source_file_name_index", o.cpool_source_file_index, false),
	F("Klass", "_name", o.klass_name, true),
	F("Symbol", "_length", o.symbol_length, false),
	F("Symbol", "_length_and_refcount", o.symbol_length, false),
	F("Symbol", "_body", o.symbol_body, true),
	F("CodeHeap", "_memory", heap_memory, true),
	F("CodeHeap", "_segmap", heap_segmap, true),
	F("CodeHeap", "_log2_segment_size", heap_log2, true),
	F("VirtualSpace", "_low_boundary", vs_low_boundary, true),
	F("VirtualSpace", "_high_boundary", vs_high_boundary, true),
	F("VirtualSpace", "_low", vs_low, true),
	F("VirtualSpace", "_high", vs_high, true),
	F("GrowableArrayBase", "_len", ga_len, false),
	F("GenericGrowableArray", "_len", ga_len, false),
	F("GrowableArray<int>", "_data", ga_data, true),
	F("StubQueue", "_stub_buffer", sq_buffer, true),
	F("StubQueue", "_buffer_limit", sq_limit, true),
	F("StubQueue", "_queue_begin", sq_begin, false),
	F("StubQueue", "_queue_end", sq_end, false),
	F("InterpreterCodelet", "_size", ic_size, false),
	F("InterpreterCodelet", "_description", ic_desc, false),
#undef F
};
#define NR_FIELDS (sizeof(fields) / sizeof(fields[0]))

enum { ST_HEAPS, ST_LOW, ST_HIGH, ST_CALL_STUB, ST_INTERP, ST_MAJOR, ST_MINOR, ST_SECURITY, ST_BUILD, ST_RELEASE, ST_MAX };
static const char *const statics[ST_MAX][2] = {
	[ST_HEAPS] = { "CodeCache", "_heaps" },
	[ST_LOW] = { "CodeCache", "_low_bound" },
	[ST_HIGH] = { "CodeCache", "_high_bound" },
	[ST_CALL_STUB] = { "StubRoutines", "_call_stub_return_address" },
	[ST_INTERP] = { "AbstractInterpreter", "_code" },
	[ST_MAJOR] = { "Abstract_VM_Version", "_vm_major_version" },
	[ST_MINOR] = { "Abstract_VM_Version", "_vm_minor_version" },
	[ST_SECURITY] = { "Abstract_VM_Version", "_vm_security_version" },
	[ST_BUILD] = { "Abstract_VM_Version", "_vm_build_number" },
	[ST_RELEASE] = { "Abstract_VM_Version", "_s_vm_release" },
};

/* The types whose sizes are used, or bound their fields' offsets. */
static const char *const sized[] = {
	"CodeBlob", "CompiledMethod", "nmethod", "PcDesc", "Method", "ConstMethod", "ConstantPool", "Klass",
	"Symbol", "CodeHeap", "VirtualSpace", "GrowableArrayBase", "GenericGrowableArray", "GrowableArray<int>",
	"StubQueue", "HeapBlock",
};
#define NR_SIZED (sizeof(sized) / sizeof(sized[0]))

struct rd {
	jvm_read_fn read;
	void *ctx;
	char *why;
	size_t n;
};

static int fail(struct rd *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (r->why && r->n)
		vsnprintf(r->why, r->n, fmt, ap);
	va_end(ap);
	return err;
}

static int rd_u64(struct rd *r, __u64 addr, __u64 *v)
{
	return r->read(r->ctx, addr, v, 8);
}

/* A NUL-terminated string of at most MAX_STR - 1 bytes, read a page's part at a time. */
static int rd_str(struct rd *r, __u64 addr, char *buf)
{
	size_t got = 0;

	while (got < MAX_STR) {
		size_t len = 4096 - ((addr + got) & 4095);
		void *nul;

		if (len > MAX_STR - got)
			len = MAX_STR - got;
		if (r->read(r->ctx, addr + got, buf + got, len))
			return -EFAULT;
		if ((nul = memchr(buf + got, 0, len)))
			return 0;
		got += len;
	}
	return -EBADMSG;
}

static int layout(struct rd *r, const __u64 *g, int stride_k, const int *offs, int nr)
{
	if (g[stride_k] < 16 || g[stride_k] > MAX_STRIDE)
		return fail(r, -EBADMSG, "a table stride of %llu", (unsigned long long)g[stride_k]);
	for (int i = 0; i < nr; i++)
		if (g[offs[i]] + 8 > g[stride_k])
			return fail(r, -EBADMSG, "an entry offset %llu past its stride %llu", (unsigned long long)g[offs[i]],
				    (unsigned long long)g[stride_k]);
	return 0;
}

static __u64 u64_at(const __u8 *e, __u64 off)
{
	__u64 v;

	memcpy(&v, e + off, 8);
	return v;
}

static __s32 s32_at(const __u8 *e, __u64 off)
{
	__s32 v;

	memcpy(&v, e + off, 4);
	return v;
}

/*
 * The entry i of a table at base: 1 read, 0 at its end (a NULL name),
 * -errno past MAX_ENTRIES or where unreadable.
 */
static int entry(struct rd *r, __u64 base, __u64 stride, __u64 name_off, int i, __u8 *e)
{
	if (i >= MAX_ENTRIES)
		return fail(r, -EBADMSG, "a table without its end in %d entries", MAX_ENTRIES);
	if (r->read(r->ctx, base + (__u64)i * stride, e, stride))
		return fail(r, -EBADMSG, "a table entry at %#llx not readable", (unsigned long long)(base + i * stride));
	return u64_at(e, name_off) ? 1 : 0;
}

static int read_types(struct rd *r, const __u64 *g, __u64 *sizes, __u32 *count)
{
	__u8 e[MAX_STRIDE];
	char name[MAX_STR];
	int i, err;

	for (i = 0; (err = entry(r, g[JS_TYPES], g[JS_T_STRIDE], g[JS_T_NAME], i, e)) > 0; i++) {
		__u64 size = u64_at(e, g[JS_T_SIZE]);

		if (rd_str(r, u64_at(e, g[JS_T_NAME]), name))
			return fail(r, -EBADMSG, "a type's name not readable");
		for (size_t k = 0; k < NR_SIZED; k++)
			if (!strcmp(name, sized[k])) {
				if (size > MAX_TYPE_SIZE)
					return fail(r, -EBADMSG, "type %s of %llu bytes", name, (unsigned long long)size);
				sizes[k] = size;
			}
	}
	*count = i;
	return err;
}

static long sized_index(const char *type)
{
	for (size_t k = 0; k < NR_SIZED; k++)
		if (!strcmp(type, sized[k]))
			return k;
	return -1;
}

static bool type_wanted(const char *type)
{
	for (size_t k = 0; k < NR_FIELDS; k++)
		if (!strcmp(type, fields[k].type))
			return true;
	for (int k = 0; k < ST_MAX; k++)
		if (!strcmp(type, statics[k][0]))
			return true;
	return false;
}

static int read_structs(struct rd *r, const __u64 *g, const __u64 *sizes, struct all *a, bool *have, __u64 *st,
			struct jvm_facts *out)
{
	__u8 e[MAX_STRIDE];
	char type[MAX_STR], field[MAX_STR], tstr[MAX_STR];
	int i, err;

	for (i = 0; (err = entry(r, g[JS_STRUCTS], g[JS_S_STRIDE], g[JS_S_TYPE], i, e)) > 0; i++) {
		__u64 off = u64_at(e, g[JS_S_OFFSET]), addr = u64_at(e, g[JS_S_ADDRESS]);
		bool is_static = s32_at(e, g[JS_S_STATIC]) != 0;

		if (rd_str(r, u64_at(e, g[JS_S_TYPE]), type))
			return fail(r, -EBADMSG, "a struct entry's type name not readable");
		if (!type_wanted(type) || !u64_at(e, g[JS_S_FIELD]))
			continue;
		if (rd_str(r, u64_at(e, g[JS_S_FIELD]), field))
			return fail(r, -EBADMSG, "a field name of %s not readable", type);
		if (is_static) {
			for (int k = 0; k < ST_MAX; k++)
				if (!strcmp(type, statics[k][0]) && !strcmp(field, statics[k][1]))
					st[k] = addr;
			continue;
		}
		for (size_t k = 0; k < NR_FIELDS; k++) {
			long s = sized_index(type);

			if (strcmp(type, fields[k].type) || strcmp(field, fields[k].field))
				continue;
			/* An offset past its type's size is a lie (OTel's check, too). */
			if (off >= MAX_TYPE_SIZE || (s >= 0 && sizes[s] != JVM_NONE && off >= sizes[s]))
				return fail(r, -EBADMSG, "%s::%s at %llu, past the type's size", type, field,
					    (unsigned long long)off);
			*(__u32 *)((char *)a + fields[k].off) = off;
			have[k] = true;
			if (!strcmp(type, "CodeBlob") && !strcmp(field, "_frame_complete_offset") && g[JS_S_TSTR] &&
			    u64_at(e, g[JS_S_TSTR]) && !rd_str(r, u64_at(e, g[JS_S_TSTR]), tstr))
				a->o.frame_complete_i16 = !strcmp(tstr, "int16_t");
			if (!strcmp(type, "ConstMethod") && !strcmp(field, "_flags._flags"))
				a->o.cmethod_flags_u32 = true;
			if (!strcmp(type, "Symbol") && !strcmp(field, "_length_and_refcount")) {
				a->o.symbol_length = off + 2;
				a->o.symbol_length_high = true;
			}
		}
	}
	out->nr_structs = i;
	return err;
}

static int read_ints(struct rd *r, const __u64 *g, struct jvm_facts *out)
{
	__u8 e[MAX_STRIDE];
	char name[MAX_STR];
	int i, err;

	out->kind_nmethod = -1;
	out->lnt_flag = 1;
	for (i = 0; (err = entry(r, g[JS_INTS], g[JS_I_STRIDE], g[JS_I_NAME], i, e)) > 0; i++) {
		if (rd_str(r, u64_at(e, g[JS_I_NAME]), name))
			return fail(r, -EBADMSG, "a constant's name not readable");
		if (!strcmp(name, "CodeBlobKind::Nmethod"))
			out->kind_nmethod = s32_at(e, g[JS_I_VALUE]);
		/* 1 in every JDK so far; read where exported, for the one that moves it. */
		if (!strcmp(name, "ConstMethod::_has_linenumber_table") ||
		    !strcmp(name, "ConstMethodFlags::_misc_has_linenumber_table"))
			out->lnt_flag = s32_at(e, g[JS_I_VALUE]);
	}
	out->nr_ints = i;
	return err;
}

static bool in_heaps(const struct jvm_facts *f, __u64 a)
{
	for (__u32 i = 0; i < f->nr_heaps; i++)
		if (a >= f->heap[i].low_boundary && a < f->heap[i].high_boundary)
			return true;
	return false;
}

bool jvm_in_code_cache(const struct jvm_facts *f, __u64 pc)
{
	for (__u32 i = 0; i < f->nr_heaps; i++)
		if (pc >= f->heap[i].low && pc < f->heap[i].high)
			return true;
	return false;
}

static int read_heaps(struct rd *r, const struct all *a, const __u64 *st, struct jvm_facts *out)
{
	__u64 ga, data;
	__s32 len;

	if (rd_u64(r, st[ST_LOW], &out->cc_low) || rd_u64(r, st[ST_HIGH], &out->cc_high) ||
	    rd_u64(r, st[ST_HEAPS], &ga))
		return fail(r, -EBADMSG, "CodeCache's statics not readable");
	if (!ga || !out->cc_low)
		return fail(r, -EAGAIN, "the code cache is not set up yet");
	if (out->cc_high <= out->cc_low || out->cc_high - out->cc_low > (1ull << 32) || (out->cc_low & 4095))
		return fail(r, -EBADMSG, "a code cache of [%#llx, %#llx)", (unsigned long long)out->cc_low,
			    (unsigned long long)out->cc_high);
	if (r->read(r->ctx, ga + a->ga_len, &len, 4) || rd_u64(r, ga + a->ga_data, &data))
		return fail(r, -EBADMSG, "CodeCache::_heaps not readable");
	if (len == 0)
		return fail(r, -EAGAIN, "no code heaps yet");
	if (len < 0 || len > JVM_MAX_HEAPS)
		return fail(r, -EBADMSG, "%d code heaps", len);
	for (int i = 0; i < len; i++) {
		struct jvm_heap *h = &out->heap[i];
		__u64 hp, mem, seg;
		__s32 log2;

		if (rd_u64(r, data + 8 * i, &hp))
			return fail(r, -EBADMSG, "code heap %d not readable", i);
		mem = hp + a->heap_memory;
		seg = hp + a->heap_segmap;
		if (rd_u64(r, mem + a->vs_low, &h->low) || rd_u64(r, mem + a->vs_high, &h->high) ||
		    rd_u64(r, mem + a->vs_low_boundary, &h->low_boundary) ||
		    rd_u64(r, mem + a->vs_high_boundary, &h->high_boundary) || rd_u64(r, seg + a->vs_low, &h->segmap) ||
		    r->read(r->ctx, hp + a->heap_log2, &log2, 4))
			return fail(r, -EBADMSG, "code heap %d not readable", i);
		if (log2 < 5 || log2 > 12)
			return fail(r, -EBADMSG, "code heap %d of %d-bit segments", i, log2);
		h->log2_seg = log2;
		/*
		 * A JVM setting its code cache up is read while it writes: a
		 * heap that does not lie in the bounds read before it (a JVM
		 * 17 started mid-recording, once in ~10 runs on a busy host)
		 * is read again later; a process that keeps saying so is
		 * given up after the reader's bounded tries (pyprocs.c).
		 */
		if ((h->low_boundary & 4095) || h->low_boundary > h->low || h->low > h->high ||
		    h->high > h->high_boundary || h->low_boundary < out->cc_low || h->high_boundary > out->cc_high ||
		    !h->segmap)
			return fail(r, -EAGAIN, "code heap %d at [%#llx, %#llx) outside the code cache", i,
				    (unsigned long long)h->low_boundary, (unsigned long long)h->high_boundary);
	}
	out->nr_heaps = len;
	return 0;
}

#define MAX_CODELETS 4096

/*
 * The interpreter's "return entry points" codelet, where a callee's frame
 * is gone and its caller's bcp not yet reloaded (what the walk's top frame
 * needs to know there); left 0 where it cannot be told.
 */
static void ret_entries(struct rd *r, const struct all *a, __u64 sq, struct jvm_facts *out)
{
	__s32 beg, end, size;
	__u64 desc;
	char d[MAX_STR];

	if (a->sq_begin == JVM_NONE || a->sq_end == JVM_NONE || a->ic_size == JVM_NONE || a->ic_desc == JVM_NONE ||
	    r->read(r->ctx, sq + a->sq_begin, &beg, 4) || r->read(r->ctx, sq + a->sq_end, &end, 4) || beg < 0 ||
	    end > (__s64)(out->interp_hi - out->interp_lo))
		return;
	for (int n = 0; beg < end && n < MAX_CODELETS; n++, beg += size) {
		__u64 c = out->interp_lo + beg;

		if (r->read(r->ctx, c + a->ic_size, &size, 4) || size <= 0 || size > end - beg ||
		    rd_u64(r, c + a->ic_desc, &desc) || desc < out->lib_lo || desc >= out->lib_hi || rd_str(r, desc, d))
			return;
		if (!strcmp(d, "return entry points")) {
			out->ret_entry_lo = c;
			out->ret_entry_hi = c + size;
			return;
		}
	}
}

/* Which of the layouts jvmfacts.h names this JVM's nmethods have, from the fields it exports. */
static __u8 scopes_layout(const struct jvm_offsets *o)
{
	if (o->nm_immutable_data != JVM_NONE) {
		if (o->nm_immutable_data_size != JVM_NONE && o->nm_scopes_data_off != JVM_NONE &&
		    o->cb_mutable_data != JVM_NONE && o->cb_mutable_data_size != JVM_NONE &&
		    o->cb_relocation_size != JVM_NONE && o->nm_metadata_off == JVM_NONE)
			return JVM_SCOPES_IMMUTABLE;
		return JVM_SCOPES_NONE;
	}
	if (o->nm_metadata_off != JVM_NONE && o->nm_dependencies_off != JVM_NONE && o->nm_scopes_data_ptr != JVM_NONE)
		return JVM_SCOPES_HEADER;
	return JVM_SCOPES_NONE;
}

int jvm_facts_read(const struct jvm_binary *e, __u64 bias, jvm_read_fn read, void *ctx, struct jvm_facts *out,
		   char *why, size_t n)
{
	__u64 lib_lo = e->lo + bias, lib_hi = e->hi + bias;
	static const int s_offs[] = { JS_S_TYPE, JS_S_FIELD, JS_S_TSTR, JS_S_STATIC, JS_S_OFFSET, JS_S_ADDRESS };
	static const int t_offs[] = { JS_T_NAME, JS_T_SIZE };
	static const int i_offs[] = { JS_I_NAME, JS_I_VALUE };
	struct rd r = { read, ctx, why, n };
	bool have[NR_FIELDS] = {};
	__u64 g[JS_MAX], sizes[NR_SIZED], st[ST_MAX] = {}, sq;
	struct all a;
	__s32 limit, ver[4];
	int err;

	memset(out, 0, sizeof(*out));
	memset(&a, 0xff, sizeof(a));
	a.o.frame_complete_i16 = a.o.cmethod_flags_u32 = a.o.symbol_length_high = false;
	for (size_t k = 0; k < NR_SIZED; k++)
		sizes[k] = JVM_NONE;
	if (why && n)
		why[0] = 0;
	for (int k = 0; k < JS_MAX; k++) {
		__u64 at = e->sym[k] + bias;

		if (at < lib_lo || at + 8 > lib_hi)
			return fail(&r, -EBADMSG, "%s outside libjvm's mappings", sym_names[k]);
		if (rd_u64(&r, at, &g[k]))
			return fail(&r, -EBADMSG, "%s not readable", sym_names[k]);
	}
	if (!g[JS_STRUCTS] || !g[JS_TYPES] || !g[JS_INTS] || !g[JS_S_STRIDE])
		return fail(&r, -EAGAIN, "libjvm's tables are not set up yet");
	if ((err = layout(&r, g, JS_S_STRIDE, s_offs, 6)) || (err = layout(&r, g, JS_T_STRIDE, t_offs, 2)) ||
	    (err = layout(&r, g, JS_I_STRIDE, i_offs, 2)))
		return err;
	if ((err = read_types(&r, g, sizes, &out->nr_types)) || (err = read_structs(&r, g, sizes, &a, have, st, out)) ||
	    (err = read_ints(&r, g, out)))
		return err;
	for (size_t k = 0; k < NR_FIELDS; k++)
		if (fields[k].need && *(__u32 *)((char *)&a + fields[k].off) == JVM_NONE)
			return fail(&r, -EBADMSG, "no %s::%s", fields[k].type, fields[k].field);
	if (a.ga_len == JVM_NONE || a.o.nm_method == JVM_NONE || a.o.symbol_length == JVM_NONE ||
	    (a.o.cb_code_begin == JVM_NONE && a.o.cb_code_offset == JVM_NONE))
		return fail(&r, -EBADMSG, "a field the walk needs is missing");
	for (int k = 0; k < ST_MAX; k++)
		if (!st[k] || st[k] < lib_lo || st[k] + 8 > lib_hi)
			return fail(&r, -EBADMSG, "%s::%s outside libjvm", statics[k][0], statics[k][1]);
	a.o.heapblock_size = sizes[sized_index("HeapBlock")];
	a.o.cmethod_size = sizes[sized_index("ConstMethod")];
	a.o.cpool_size = sizes[sized_index("ConstantPool")];
	a.o.pcdesc_size = sizes[sized_index("PcDesc")];
	if (a.o.heapblock_size == JVM_NONE || a.o.heapblock_size > 64 || a.o.cmethod_size == JVM_NONE ||
	    a.o.cpool_size == JVM_NONE || a.o.pcdesc_size == JVM_NONE || a.o.pcdesc_size > 64)
		return fail(&r, -EBADMSG, "a type the walk needs is missing");
	out->o = a.o;
	for (int k = 0; k < 4; k++)
		if (read(ctx, st[ST_MAJOR + k], &ver[k], 4))
			return fail(&r, -EBADMSG, "the version not readable");
	out->major = ver[0], out->minor = ver[1], out->security = ver[2], out->build = ver[3];
	if (ver[0] < 11 || ver[0] > 30)
		return fail(&r, -EPROTONOSUPPORT, "JDK %d", ver[0]);
	{
		__u64 rel;

		if (!rd_u64(&r, st[ST_RELEASE], &rel) && rel) {
			char s[MAX_STR];

			if (!rd_str(&r, rel, s)) {
				s[sizeof(out->release) - 1] = 0;
				memcpy(out->release, s, sizeof(out->release));
			}
		}
	}
	out->lib_lo = lib_lo, out->lib_hi = lib_hi;
	/* JDK 20.0.0+15 made the streams' bytes exclude 0 (openjdk/jdk20u 8d3399b). */
	out->u5_excess = ver[0] > 20 || (ver[0] == 20 && (ver[1] || ver[2] || ver[3] >= 15));
	out->scopes = scopes_layout(&out->o);
	if ((err = read_heaps(&r, &a, st, out)))
		return err;
	if (rd_u64(&r, st[ST_CALL_STUB], &out->call_stub_ret) || rd_u64(&r, st[ST_INTERP], &sq))
		return fail(&r, -EBADMSG, "StubRoutines or the interpreter not readable");
	if (!out->call_stub_ret || !sq)
		return fail(&r, -EAGAIN, "the interpreter is not generated yet");
	if (!in_heaps(out, out->call_stub_ret))
		return fail(&r, -EBADMSG, "the call stub's return address outside the code heaps");
	if (rd_u64(&r, sq + a.sq_buffer, &out->interp_lo) || read(ctx, sq + a.sq_limit, &limit, 4))
		return fail(&r, -EBADMSG, "the interpreter's code not readable");
	out->interp_hi = out->interp_lo + (limit > 0 ? (__u64)limit : 0);
	if (limit <= 0 || limit > (16 << 20) || !in_heaps(out, out->interp_lo) || !in_heaps(out, out->interp_hi - 1))
		return fail(&r, -EBADMSG, "the interpreter's code outside the code heaps");
	ret_entries(&r, &a, sq, out);
	return 0;
}

/* Bytes of an nmethod's immutable or mutable data believed (a C-heap block of its debug information). */
#define MAX_NM_DATA (16u << 20)

/* Whether [lo, hi) is a run of whole n-byte items inside [in_lo, in_hi). */
static bool within(__u64 lo, __u64 hi, __u64 in_lo, __u64 in_hi, __u32 n)
{
	return lo <= hi && lo >= in_lo && hi <= in_hi && (hi - lo) % n == 0;
}

/*
 * An nmethod's PcDescs, scopes and metadata, from its header (jvmfacts.h's
 * layouts); left 0 where they are not where they must be.
 */
static void debug_info(const struct jvm_facts *f, const __u8 *hdr, struct jvm_blob *b)
{
	const struct jvm_offsets *o = &f->o;
	__u64 blob_end = b->addr + (__u64)b->size;
	__u64 pcs_lo, pcs_hi, data_lo, data_hi, meta_lo, meta_hi;

	if (f->scopes == JVM_SCOPES_HEADER) {
		pcs_lo = b->addr + (__u32)s32_at(hdr, o->nm_scopes_pcs_off);
		pcs_hi = b->addr + (__u32)s32_at(hdr, o->nm_dependencies_off);
		data_lo = u64_at(hdr, o->nm_scopes_data_ptr);
		data_hi = pcs_lo;
		meta_lo = b->addr + (__u32)s32_at(hdr, o->nm_metadata_off);
		meta_hi = data_lo;
		if (!within(meta_lo, meta_hi, b->addr, blob_end, 8) || !within(data_lo, data_hi, b->addr, blob_end, 1) ||
		    !within(pcs_lo, pcs_hi, b->addr, blob_end, o->pcdesc_size))
			return;
	} else if (f->scopes == JVM_SCOPES_IMMUTABLE) {
		__u64 imm = u64_at(hdr, o->nm_immutable_data), mut = u64_at(hdr, o->cb_mutable_data);
		__s32 imm_size = s32_at(hdr, o->nm_immutable_data_size), mut_size = s32_at(hdr, o->cb_mutable_data_size);
		__s32 reloc = s32_at(hdr, o->cb_relocation_size);
		__s32 pcs = s32_at(hdr, o->nm_scopes_pcs_off), data = s32_at(hdr, o->nm_scopes_data_off);

		if (imm_size <= 0 || (__u32)imm_size > MAX_NM_DATA || mut_size < 0 || (__u32)mut_size > MAX_NM_DATA ||
		    reloc < 0 || reloc > mut_size || pcs < 0 || data < pcs || data > imm_size || imm < 4096 ||
		    imm >= (1ull << 47) - MAX_NM_DATA || mut < 4096 || mut >= (1ull << 47) - MAX_NM_DATA)
			return;
		pcs_lo = imm + pcs, pcs_hi = imm + data;
		data_lo = pcs_hi, data_hi = imm + imm_size;
		/* With JVMCI the metadata ends before its data (an unexported size): a bound, not the end. */
		meta_lo = mut + reloc, meta_hi = mut + mut_size;
		if (!within(pcs_lo, pcs_hi, imm, data_hi, o->pcdesc_size) || (meta_lo & 7))
			return;
		meta_hi -= (meta_hi - meta_lo) % 8;
	} else {
		return;
	}
	b->pcs_lo = pcs_lo, b->pcs_hi = pcs_hi;
	b->data_lo = data_lo, b->data_hi = data_hi;
	b->meta_lo = meta_lo, b->meta_hi = meta_hi;
}

int jvm_blob_at(const struct jvm_facts *f, jvm_read_fn read, void *ctx, __u64 pc, struct jvm_blob *out)
{
	const struct jvm_offsets *o = &f->o;
	const struct jvm_heap *h = NULL;
	__u8 hdr[512], tag;
	__u64 seg, name;
	__u32 len = 0;
	char buf[MAX_STR];
	struct rd r = { read, ctx, NULL, 0 };

	memset(out, 0, sizeof(*out));
	for (__u32 i = 0; i < f->nr_heaps && !h; i++)
		if (pc >= f->heap[i].low && pc < f->heap[i].high)
			h = &f->heap[i];
	if (!h)
		return -ENOENT;
	seg = (pc - h->low) >> h->log2_seg;
	/* Each tag is the distance back to the block's first segment, or closer (heap.cpp's find_start). */
	for (;;) {
		if (read(ctx, h->segmap + seg, &tag, 1))
			return -EBADMSG;
		if (tag == 0xff)
			return -ENOENT;
		if (!tag)
			break;
		if (out->hops == JVM_MAX_HOPS || tag > seg)
			return -ELOOP;
		seg -= tag;
		out->hops++;
	}
	out->addr = h->low + (seg << h->log2_seg) + o->heapblock_size;
	/* One read of the header, up to the furthest field used. */
	{
		const __u32 used[] = { o->cb_name, o->cb_size, o->cb_frame_size, o->cb_code_begin, o->cb_code_end,
				       o->cb_code_offset, o->cb_data_offset, o->cb_kind, o->nm_method, o->nm_compile_id,
				       o->nm_scopes_pcs_off, o->nm_dependencies_off, o->nm_metadata_off,
				       o->nm_scopes_data_ptr, o->nm_scopes_data_off, o->nm_immutable_data,
				       o->nm_immutable_data_size, o->cb_mutable_data, o->cb_mutable_data_size,
				       o->cb_relocation_size };

		for (size_t i = 0; i < sizeof(used) / sizeof(used[0]); i++)
			if (used[i] != JVM_NONE && used[i] + 8 > len)
				len = used[i] + 8;
	}
	if (len > sizeof(hdr) || read(ctx, out->addr, hdr, len))
		return -EBADMSG;
	name = u64_at(hdr, o->cb_name);
	if (name < f->lib_lo || name >= f->lib_hi || rd_str(&r, name, buf))
		return -EBADMSG;
	memcpy(out->name, buf, sizeof(out->name) - 1);
	out->size = s32_at(hdr, o->cb_size);
	out->frame_size = s32_at(hdr, o->cb_frame_size);
	if (o->cb_code_offset != JVM_NONE && o->cb_data_offset != JVM_NONE) {
		out->code_begin = out->addr + (__u32)s32_at(hdr, o->cb_code_offset);
		out->code_end = out->addr + (__u32)s32_at(hdr, o->cb_data_offset);
	} else {
		out->code_begin = u64_at(hdr, o->cb_code_begin);
		out->code_end = u64_at(hdr, o->cb_code_end);
	}
	if (out->size <= 0 || pc >= out->addr + (__u64)out->size || pc < out->addr || out->frame_size < 0 ||
	    out->frame_size > 65536)
		return -EBADMSG;
	/* 23+ say the kind; before, an nmethod's name says it (a native wrapper is one too). */
	if (o->cb_kind != JVM_NONE && f->kind_nmethod >= 0)
		out->nmethod = hdr[o->cb_kind] == f->kind_nmethod;
	else
		out->nmethod = !strcmp(out->name, "nmethod") || !strcmp(out->name, "native nmethod");
	if (out->nmethod) {
		out->method = u64_at(hdr, o->nm_method);
		out->compile_id = s32_at(hdr, o->nm_compile_id);
		debug_info(f, hdr, out);
	}
	return 0;
}
