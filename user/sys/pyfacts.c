// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "elf_budget.h"
#include "log.h"
#include "pyfacts.h"
#include "util.h"

int py_read_pid(void *ctx, __u64 addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(unsigned long)addr, len };
	ssize_t n;

	if (!len)
		return 0;
	if (addr < 4096 || addr >= (1ull << 47) || len > (1ull << 47) - addr)
		return -EFAULT;
	n = process_vm_readv((pid_t)(long)ctx, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

void py_version_str(__u32 v, char *buf, size_t n)
{
	snprintf(buf, n, "%u.%u.%u", v >> 24, (v >> 16) & 0xff, (v >> 8) & 0xff);
}

/*
 * The per-version tables: what neither the binary's symbols nor its own
 * tables give (x86-64, default build).  Each figure was read from the
 * DWARF of pyenv's build of that version (3.8.18, 3.9.18, 3.10.13, 3.11.7,
 * 3.12.1, 3.13.0), and Debian's stripped 3.11.2 was checked to lay out the
 * same (its headers, and its own PyGILState_GetThisThreadState).  3.13's
 * _Py_DebugOffsets overrides the fields it carries.
 */
struct py_table {
	__u32 minor;
	__u32 rt_interp_head, rt_autotss; /* _PyRuntime: interpreters.head, gilstate.autoTSSkey (Py_tss_t) */
	__u32 is_next, is_threads_head, is_modules;
	__u32 ts_next, ts_interp, ts_frame, cf_frame, ts_thread_id, ts_native_tid, ts_chunk;
	__u32 f_size, f_prev, f_code, f_instr, f_owner, f_entry, owner_max, owner_cstack;
	__u32 uni_ascii, uni_compact;
	__u32 fn_code, fn_qualname, tp_flags, tp_dict, d_keys, d_values;
	__u32 style, instr;
};

#define N SP_PY_NONE
static const struct py_table tables[] = {
	{ .minor = 8, .rt_interp_head = 32, .rt_autotss = 1392, .is_next = 0, .is_threads_head = 8, .is_modules = 0x38,
	  .ts_next = 8, .ts_interp = 16, .ts_frame = 24, .cf_frame = N, .ts_thread_id = 176, .ts_native_tid = N,
	  .ts_chunk = N, .f_size = 108, .f_prev = 24, .f_code = 32, .f_instr = 104, .f_owner = N, .f_entry = N,
	  .owner_max = 0, .owner_cstack = N, .uni_ascii = 48, .uni_compact = 72, .fn_code = 0x10, .fn_qualname = 0x68,
	  .tp_flags = 0xa8, .tp_dict = 0x108, .d_keys = 0x20, .d_values = 0x28, .style = SP_PY_FRAMEOBJ,
	  .instr = SP_PY_LASTI_BYTES },
	{ .minor = 9, .rt_interp_head = 32, .rt_autotss = 584, .is_next = 0, .is_threads_head = 8, .is_modules = 0x358,
	  .ts_next = 8, .ts_interp = 16, .ts_frame = 24, .cf_frame = N, .ts_thread_id = 176, .ts_native_tid = N,
	  .ts_chunk = N, .f_size = 108, .f_prev = 24, .f_code = 32, .f_instr = 104, .f_owner = N, .f_entry = N,
	  .owner_max = 0, .owner_cstack = N, .uni_ascii = 48, .uni_compact = 72, .fn_code = 0x10, .fn_qualname = 0x68,
	  .tp_flags = 0xa8, .tp_dict = 0x108, .d_keys = 0x20, .d_values = 0x28, .style = SP_PY_FRAMEOBJ,
	  .instr = SP_PY_LASTI_BYTES },
	{ .minor = 10, .rt_interp_head = 32, .rt_autotss = 584, .is_next = 0, .is_threads_head = 8, .is_modules = 0x358,
	  .ts_next = 8, .ts_interp = 16, .ts_frame = 24, .cf_frame = N, .ts_thread_id = 176, .ts_native_tid = N,
	  .ts_chunk = N, .f_size = 100, .f_prev = 24, .f_code = 32, .f_instr = 96, .f_owner = N, .f_entry = N,
	  .owner_max = 0, .owner_cstack = N, .uni_ascii = 48, .uni_compact = 72, .fn_code = 0x30, .fn_qualname = 0x28,
	  .tp_flags = 0xa8, .tp_dict = 0x108, .d_keys = 0x20, .d_values = 0x28, .style = SP_PY_FRAMEOBJ,
	  .instr = SP_PY_LASTI_UNITS },
	/* 3.11: tstate->cframe->current_frame; is_entry marks a C call's first frame. */
	{ .minor = 11, .rt_interp_head = 40, .rt_autotss = 592, .is_next = 0, .is_threads_head = 16, .is_modules = N,
	  .ts_next = 8, .ts_interp = 16, .ts_frame = 56, .cf_frame = 8, .ts_thread_id = 152, .ts_native_tid = 160,
	  .ts_chunk = 296, .f_size = 72, .f_prev = 48, .f_code = 32, .f_instr = 56, .f_owner = 69, .f_entry = 68,
	  .owner_max = 2, .owner_cstack = N, .uni_ascii = 48, .uni_compact = 72, .fn_code = N, .fn_qualname = N,
	  .tp_flags = N, .tp_dict = N, .d_keys = N, .d_values = N, .style = SP_PY_IFRAME_ENTRY,
	  .instr = SP_PY_INSTR_PTR },
	/* 3.12: a shim frame (owner FRAME_OWNED_BY_CSTACK, 3) below each C call's frames. */
	{ .minor = 12, .rt_interp_head = 40, .rt_autotss = 1544, .is_next = 0, .is_threads_head = 72, .is_modules = N,
	  .ts_next = 8, .ts_interp = 16, .ts_frame = 56, .cf_frame = 0, .ts_thread_id = 136, .ts_native_tid = 144,
	  .ts_chunk = 232, .f_size = 72, .f_prev = 8, .f_code = 0, .f_instr = 56, .f_owner = 70, .f_entry = N,
	  .owner_max = 3, .owner_cstack = 3, .uni_ascii = 40, .uni_compact = 56, .fn_code = N, .fn_qualname = N,
	  .tp_flags = N, .tp_dict = N, .d_keys = N, .d_values = N, .style = SP_PY_IFRAME_SHIM,
	  .instr = SP_PY_INSTR_PTR },
	/* 3.13: most of it from _Py_DebugOffsets; these are 3.13.0's, and what the debug offsets lack. */
	{ .minor = 13, .rt_interp_head = 632, .rt_autotss = 2160, .is_next = 7264, .is_threads_head = 7344,
	  .is_modules = N, .ts_next = 8, .ts_interp = 16, .ts_frame = 72, .cf_frame = N, .ts_thread_id = 152,
	  .ts_native_tid = 160, .ts_chunk = 232, .f_size = 72, .f_prev = 8, .f_code = 0, .f_instr = 56, .f_owner = 70,
	  .f_entry = N, .owner_max = 3, .owner_cstack = 3, .uni_ascii = 40, .uni_compact = 56, .fn_code = N,
	  .fn_qualname = N, .tp_flags = N, .tp_dict = N, .d_keys = N, .d_values = N, .style = SP_PY_IFRAME_SHIM,
	  .instr = SP_PY_INSTR_PTR },
};
#undef N

/* The names py_binary_read looks for, and where each goes. */
enum { S_RUNTIME, S_VERSION, S_CODE_TYPE, S_GETVERSION, S_EVAL, S_TRAMP, S_TRAMP_END, S_FUNC, S_SMETH, S_CMETH,
       S_PROP, S_DICT, S_MAX };
static const char *const sym_names[S_MAX] = {
	[S_RUNTIME] = "_PyRuntime", [S_VERSION] = "Py_Version", [S_CODE_TYPE] = "PyCode_Type",
	[S_GETVERSION] = "Py_GetVersion", [S_EVAL] = "_PyEval_EvalFrameDefault",
	[S_TRAMP] = "_Py_trampoline_func_start", [S_TRAMP_END] = "_Py_trampoline_func_end",
	[S_FUNC] = "PyFunction_Type", [S_SMETH] = "PyStaticMethod_Type", [S_CMETH] = "PyClassMethod_Type",
	[S_PROP] = "PyProperty_Type", [S_DICT] = "PyDict_Type",
};

struct found {
	GElf_Sym s[S_MAX];
	bool have[S_MAX];
	__u64 cold[SP_PY_EVAL_RANGES][2];
	int nr_cold;
};

static int take_sym(const char *name, const GElf_Sym *sym, void *ctx)
{
	static const char cold[] = "_PyEval_EvalFrameDefault.cold";
	struct found *f = ctx;

	if (name[0] != '_' && name[0] != 'P')
		return 0;
	for (int k = 0; k < S_MAX; k++)
		if (!f->have[k] && !strcmp(name, sym_names[k])) {
			f->s[k] = *sym;
			f->have[k] = true;
		}
	/* GCC's hot/cold split: a part of the same function, elsewhere in .text. */
	if (!strncmp(name, cold, sizeof(cold) - 1) && sym->st_size && f->nr_cold < SP_PY_EVAL_RANGES - 1) {
		bool dup = false;

		for (int k = 0; k < f->nr_cold; k++)
			dup |= f->cold[k][0] == sym->st_value;
		if (!dup) {
			f->cold[f->nr_cold][0] = sym->st_value;
			f->cold[f->nr_cold++][1] = sym->st_value + sym->st_size;
		}
	}
	return 0;
}

/*
 * Before 3.11 no Py_Version: Py_GetVersion formats PY_VERSION with
 * "%.80s (%.80s) %.80s", and the first `lea disp32(%rip),%rcx` of its body
 * (the fourth argument) points at the version string.
 */
static __u32 version_from_getversion(int fd, Elf *elf, __u64 fn)
{
	__u8 code[96];
	char str[16];

	if (elf_pread_vaddr(fd, elf, fn, code, sizeof(code)))
		return 0;
	for (size_t i = 0; i + 7 <= sizeof(code); i++) {
		unsigned maj, min, mic;
		__s32 disp;

		if (code[i] != 0x48 || code[i + 1] != 0x8d || code[i + 2] != 0x0d)
			continue;
		memcpy(&disp, code + i + 3, 4);
		if (elf_pread_vaddr(fd, elf, fn + i + 7 + disp, str, sizeof(str) - 1))
			return 0;
		str[sizeof(str) - 1] = 0;
		if (sscanf(str, "%u.%u.%u", &maj, &min, &mic) == 3 && maj < 256 && min < 256 && mic < 256)
			return maj << 24 | min << 16 | mic << 8;
		return 0;
	}
	return 0;
}

int py_binary_read(int fd, struct py_binary *out)
{
	struct found f = {};
	struct elf_budget b = {};
	GElf_Ehdr eh;
	size_t nph;
	Elf *elf;
	int err = 0;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	/* Read, not mapped: the binary may be another user's, or a container's, to truncate under us. */
	elf = elf_budget_begin(&b, fd, false, ELF_BUDGET_SYMS, NULL);
	if (!elf_is_x86_64(elf, &eh)) {
		err = -EINVAL;
		goto cleanup;
	}
	out->e_type = eh.e_type;
	/* .symtab first where there is one: it names the .cold parts and everything .dynsym does. */
	elf_budget_each_sym(&b, SHT_SYMTAB, take_sym, &f);
	if (!f.have[S_RUNTIME] || !f.have[S_CODE_TYPE] || !f.have[S_EVAL] || !f.s[S_EVAL].st_size) {
		err = -ENOENT;
		goto cleanup;
	}
	if (elf_getphdrnum(elf, &nph)) {
		err = -EINVAL;
		goto cleanup;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, i, &ph) && ph.p_type == PT_LOAD) {
			out->load_base = ph.p_vaddr - ph.p_offset;
			break;
		}
	}
	out->runtime = f.s[S_RUNTIME].st_value;
	out->code_type = f.s[S_CODE_TYPE].st_value;
	out->py_version = f.have[S_VERSION] ? f.s[S_VERSION].st_value : 0;
	out->get_version = f.have[S_GETVERSION] ? f.s[S_GETVERSION].st_value : 0;
	out->function_type = f.have[S_FUNC] ? f.s[S_FUNC].st_value : 0;
	out->staticmethod_type = f.have[S_SMETH] ? f.s[S_SMETH].st_value : 0;
	out->classmethod_type = f.have[S_CMETH] ? f.s[S_CMETH].st_value : 0;
	out->property_type = f.have[S_PROP] ? f.s[S_PROP].st_value : 0;
	out->dict_type = f.have[S_DICT] ? f.s[S_DICT].st_value : 0;
	out->eval[0][0] = f.s[S_EVAL].st_value;
	out->eval[0][1] = f.s[S_EVAL].st_value + f.s[S_EVAL].st_size;
	out->nr_eval = 1;
	for (int k = 0; k < f.nr_cold; k++) {
		out->eval[out->nr_eval][0] = f.cold[k][0];
		out->eval[out->nr_eval++][1] = f.cold[k][1];
	}
	/* Py_Version is const: the file holds its value, as the process does. */
	if (out->py_version && elf_pread_vaddr(fd, elf, out->py_version, &out->version, 4))
		out->version = 0;
	if (!out->version && out->get_version)
		out->version = version_from_getversion(fd, elf, out->get_version);
	/* -X perf (3.12+) copies these bytes for each trampoline. */
	if (f.have[S_TRAMP] && f.have[S_TRAMP_END] && f.s[S_TRAMP_END].st_value > f.s[S_TRAMP].st_value &&
	    f.s[S_TRAMP_END].st_value - f.s[S_TRAMP].st_value <= SP_PY_TRAMP_MAX) {
		__u32 len = f.s[S_TRAMP_END].st_value - f.s[S_TRAMP].st_value;

		if (!elf_pread_vaddr(fd, elf, f.s[S_TRAMP].st_value, out->tramp, len))
			out->tramp_len = len;
	}
cleanup:
	elf_budget_end(&b);
	return err;
}

static const struct py_table *table_of(__u32 version)
{
	if (version >> 24 != 3)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(tables); i++)
		if (tables[i].minor == ((version >> 16) & 0xff))
			return &tables[i];
	return NULL;
}

/*
 * 3.13's _Py_DebugOffsets at _PyRuntime + 0: the cookie "xdebugpy", the
 * version, free_threaded, then blocks of u64 offsets.  The indexes below
 * are of 3.13's layout (read from its DWARF), which 3.14 changes: only a
 * 3.13 runtime is read this way.
 */
enum {
	DO_COOKIE, DO_VERSION, DO_FREE_THREADED, DO_RT_SIZE, DO_RT_FINALIZING, DO_RT_INTERP_HEAD,
	DO_IS_SIZE, DO_IS_ID, DO_IS_NEXT, DO_IS_THREADS_HEAD,
	DO_TS_SIZE = 19, DO_TS_PREV, DO_TS_NEXT, DO_TS_INTERP, DO_TS_CURRENT_FRAME, DO_TS_THREAD_ID,
	DO_TS_NATIVE_TID, DO_TS_CHUNK,
	DO_IF_SIZE = 28, DO_IF_PREVIOUS, DO_IF_EXECUTABLE, DO_IF_INSTR_PTR, DO_IF_LOCALSPLUS, DO_IF_OWNER,
	DO_CO_SIZE, DO_CO_FILENAME, DO_CO_NAME, DO_CO_QUALNAME, DO_CO_LINETABLE, DO_CO_FIRSTLINENO,
	DO_CO_ARGCOUNT, DO_CO_LOCALSPLUSNAMES, DO_CO_LOCALSPLUSKINDS, DO_CO_CODE_ADAPTIVE,
	DO_UNI_ASCII_SIZE = 70,
	DO_NR = 73,
};

/* A field offset the debug offsets give: small, or the table's stays. */
static void take(__u32 *dst, __u64 v, __u64 max)
{
	if (v < max)
		*dst = v;
}

static int debug_offsets(py_read_fn read, void *ctx, __u64 runtime, __u32 version, struct py_facts *o,
			 char *why, size_t n)
{
	__u64 d[DO_NR];
	int e = read(ctx, runtime, d, sizeof(d));

	if (e)
		return set_errorf(why, n, e, "_Py_DebugOffsets unreadable: %s", strerror(-e));
	if (memcmp(&d[DO_COOKIE], "xdebugpy", 8))
		return 0; /* the table's figures stand */
	if (PY_VER_MINOR(d[DO_VERSION]) != PY_VER_MINOR(version))
		return set_errorf(why, n, -EBADMSG, "_Py_DebugOffsets says version %#llx, Py_Version %#x",
				  (unsigned long long)d[DO_VERSION], version);
	if (d[DO_FREE_THREADED])
		return set_errorf(why, n, -EPROTONOSUPPORT, "a free-threaded build (not covered)");
	take(&o->l.rt_interp_head, d[DO_RT_INTERP_HEAD], 1u << 16);
	take(&o->bpf.rt_interp_head, d[DO_RT_INTERP_HEAD], 1u << 16);
	take(&o->bpf.is_threads_head, d[DO_IS_THREADS_HEAD], 1u << 16);
	take(&o->bpf.ts_next, d[DO_TS_NEXT], 1u << 12);
	take(&o->l.ts_interp, d[DO_TS_INTERP], 1u << 12);
	take(&o->bpf.ts_frame, d[DO_TS_CURRENT_FRAME], 1u << 12);
	take(&o->bpf.ts_chunk, d[DO_TS_CHUNK], 1u << 12);
	take(&o->bpf.ts_match, d[DO_TS_NATIVE_TID], 1u << 12);
	/* Frame fields within the bytes read per frame. */
	take(&o->bpf.f_prev, d[DO_IF_PREVIOUS], 64);
	take(&o->bpf.f_code, d[DO_IF_EXECUTABLE], 64);
	take(&o->bpf.f_instr, d[DO_IF_INSTR_PTR], 64);
	take(&o->bpf.f_owner, d[DO_IF_OWNER], 72);
	if (d[DO_IF_LOCALSPLUS] <= 128 && d[DO_IF_LOCALSPLUS] > o->bpf.f_owner)
		o->bpf.f_size = d[DO_IF_LOCALSPLUS];
	take(&o->l.co_filename, d[DO_CO_FILENAME], 1u << 12);
	take(&o->l.co_name, d[DO_CO_NAME], 1u << 12);
	take(&o->l.co_qualname, d[DO_CO_QUALNAME], 1u << 12);
	take(&o->l.co_linetable, d[DO_CO_LINETABLE], 1u << 12);
	take(&o->l.co_firstlineno, d[DO_CO_FIRSTLINENO], 1u << 12);
	take(&o->l.uni_ascii, d[DO_UNI_ASCII_SIZE], 256);
	if (d[DO_CO_CODE_ADAPTIVE] < (1u << 12))
		o->bpf.code_units = o->l.code_units = d[DO_CO_CODE_ADAPTIVE];
	o->debug_offsets = true;
	return 0;
}

/* PyMemberDef { const char *name; int type; Py_ssize_t offset; int flags; const char *doc; } */
#define MEMBER_SIZE 40
#define MAX_MEMBERS 64

/*
 * The code object's fields as the binary's own PyCode_Type.tp_members
 * says (tp_basicsize at +32, tp_members at +240 in every version covered).
 */
static int code_members(py_read_fn read, void *ctx, __u64 code_type, struct py_facts *o, char *why, size_t n)
{
	static const struct {
		const char *name;
		size_t off;
	} want[] = {
		{ "co_name", offsetof(struct py_layout, co_name) },
		{ "co_qualname", offsetof(struct py_layout, co_qualname) },
		{ "co_filename", offsetof(struct py_layout, co_filename) },
		{ "co_firstlineno", offsetof(struct py_layout, co_firstlineno) },
		{ "co_linetable", offsetof(struct py_layout, co_linetable) },
		{ "co_lnotab", offsetof(struct py_layout, co_lnotab) },
		{ "co_code", offsetof(struct py_layout, co_code) },
		{ "co_consts", offsetof(struct py_layout, co_consts) },
		{ "co_flags", offsetof(struct py_layout, co_flags) },
	};
	__u64 basicsize, members;
	__u8 m[MEMBER_SIZE];
	int e;

	if ((e = read(ctx, code_type + 32, &basicsize, 8)) || (e = read(ctx, code_type + 240, &members, 8)))
		return set_errorf(why, n, e, "PyCode_Type unreadable: %s", strerror(-e));
	for (int i = 0; i < MAX_MEMBERS; i++) {
		char name[24] = "";
		__u64 name_p, off;

		if (read(ctx, members + i * MEMBER_SIZE, m, sizeof(m)))
			break;
		memcpy(&name_p, m, 8);
		memcpy(&off, m + 16, 8);
		if (!name_p)
			break;
		if (read(ctx, name_p, name, sizeof(name) - 1) && read(ctx, name_p, name, 16))
			continue;
		name[sizeof(name) - 1] = 0;
		for (size_t k = 0; k < ARRAY_SIZE(want); k++) {
			__u32 *dst = (__u32 *)((char *)&o->l + want[k].off);

			/* A field the debug offsets gave is theirs; a member table that disagrees is said by the test. */
			if (!strcmp(name, want[k].name) && off < basicsize && off < (1u << 12) && *dst == SP_PY_NONE)
				*dst = off;
		}
	}
	if (o->l.co_name == SP_PY_NONE || o->l.co_filename == SP_PY_NONE || o->l.co_firstlineno == SP_PY_NONE)
		return set_errorf(why, n, -EBADMSG, "PyCode_Type's members name no co_name, co_filename or co_firstlineno");
	/* 3.11+: the code units follow the fixed part of the object. */
	if (o->l.version >= PY_VER(3, 11) && o->l.code_units == SP_PY_NONE) {
		if (basicsize < 64 || basicsize > 1024)
			return set_errorf(why, n, -EBADMSG, "PyCode_Type's tp_basicsize %llu", (unsigned long long)basicsize);
		o->l.code_units = o->bpf.code_units = basicsize;
	}
	return 0;
}

int py_facts_read(const struct py_binary *e, __u64 bias, py_read_fn read, void *ctx, struct py_facts *o, char *why,
		  size_t n)
{
	const struct py_table *t = table_of(e->version);
	struct sp_py_proc *b = &o->bpf;
	struct py_layout *l = &o->l;
	__u64 rt = e->runtime + bias, interp = 0, ts = 0, ts_interp = 0;
	__s32 tss[2];
	char v[32];
	int err;

	memset(o, 0, sizeof(*o));
	py_version_str(e->version, v, sizeof(v));
	if (!e->version)
		return set_errorf(why, n, -EPROTONOSUPPORT, "no Py_Version and no version string in the binary");
	if (!t)
		return set_errorf(why, n, -EPROTONOSUPPORT, "CPython %s is not covered (3.8 to 3.13)", v);
	*b = (struct sp_py_proc){
		.runtime = rt, .style = t->style, .instr = t->instr,
		.rt_interp_head = t->rt_interp_head, .is_threads_head = t->is_threads_head, .ts_next = t->ts_next,
		.ts_match = t->ts_native_tid != SP_PY_NONE ? t->ts_native_tid : t->ts_thread_id,
		.ts_match_tid = t->ts_native_tid != SP_PY_NONE,
		.ts_frame = t->ts_frame, .cf_frame = t->cf_frame, .ts_chunk = t->ts_chunk,
		.f_size = t->f_size, .f_prev = t->f_prev, .f_code = t->f_code, .f_instr = t->f_instr,
		.f_owner = t->f_owner, .f_entry = t->f_entry, .owner_max = t->owner_max, .owner_cstack = t->owner_cstack,
		.code_units = SP_PY_NONE,
	};
	for (int i = 0; i < e->nr_eval; i++) {
		b->eval[i][0] = e->eval[i][0] + bias;
		b->eval[i][1] = e->eval[i][1] + bias;
	}
	memcpy(b->tramp, e->tramp, sizeof(b->tramp));
	b->tramp_len = e->tramp_len;
	*l = (struct py_layout){
		.version = e->version, .code_type = e->code_type + bias, .runtime = rt,
		.co_name = SP_PY_NONE, .co_qualname = SP_PY_NONE, .co_filename = SP_PY_NONE,
		.co_firstlineno = SP_PY_NONE, .co_linetable = SP_PY_NONE, .co_lnotab = SP_PY_NONE,
		.co_code = SP_PY_NONE, .co_consts = SP_PY_NONE, .co_flags = SP_PY_NONE, .code_units = SP_PY_NONE,
		.lasti_bytes = t->instr == SP_PY_LASTI_BYTES,
		.uni_ascii = t->uni_ascii, .uni_compact = t->uni_compact,
		.function_type = e->function_type ? e->function_type + bias : 0,
		.staticmethod_type = e->staticmethod_type ? e->staticmethod_type + bias : 0,
		.classmethod_type = e->classmethod_type ? e->classmethod_type + bias : 0,
		.property_type = e->property_type ? e->property_type + bias : 0,
		.dict_type = e->dict_type ? e->dict_type + bias : 0,
		.is_modules = t->is_modules, .fn_code = t->fn_code, .fn_qualname = t->fn_qualname,
		.tp_flags = t->tp_flags, .tp_dict = t->tp_dict, .d_keys = t->d_keys, .d_values = t->d_values,
		.rt_interp_head = t->rt_interp_head, .ts_interp = t->ts_interp,
	};
	if (t->minor == 13 && (err = debug_offsets(read, ctx, rt, e->version, o, why, n)))
		return err;
	if ((err = code_members(read, ctx, l->code_type, o, why, n))) {
		/* Which runtime said so. */
		size_t k = strlen(why);

		snprintf(why + k, n - k, " (CPython %s)", v);
		return err;
	}
	/* The key: Py_tss_t { int _is_initialized; pthread_key_t _key; }. */
	if ((err = read(ctx, rt + t->rt_autotss, tss, sizeof(tss))))
		return set_errorf(why, n, err, "_PyRuntime unreadable: %s", strerror(-err));
	if (tss[0] != 1)
		return set_errorf(why, n, -EAGAIN, "CPython %s: the runtime's thread key is not set up (yet)", v);
	if ((__u32)tss[1] >= 1024)
		return set_errorf(why, n, -EBADMSG, "CPython %s: thread key %u is out of range", v, (__u32)tss[1]);
	o->tss_key = tss[1];
	/*
	 * A wrong version would give offsets into other fields: the head
	 * interpreter's first thread state must point back at it.
	 */
	if (read(ctx, rt + l->rt_interp_head, &interp, 8) || !interp ||
	    read(ctx, interp + b->is_threads_head, &ts, 8))
		return set_errorf(why, n, -EAGAIN, "CPython %s: no interpreter yet", v);
	if (ts && (read(ctx, ts + l->ts_interp, &ts_interp, 8) || ts_interp != interp))
		return set_errorf(why, n, -EBADMSG, "CPython %s: the first thread state does not belong to the interpreter",
				  v);
	return 0;
}
