// SPDX-License-Identifier: GPL-2.0
/*
 * otel_thread_ctx_v1's place in a process (x86-64, TLS variant II: the
 * static TLS blocks sit below the thread pointer, fsbase).
 *
 * - The executable is module 1: its block ends at the thread pointer, so the
 *   variable is at tp - roundup(PT_TLS memsz, align) + st_value whatever
 *   model its code uses (the linker relaxes all of them to local-exec).
 * - A shared object reaches the variable through its GOT, and the
 *   relocation type there is its model:
 *     TPOFF64  (initial-exec): the slot holds the tp offset;
 *     TLSDESC  (gnu2, the OTEP's choice): the descriptor's second word holds
 *              the tp offset when the module is in static TLS, else a
 *              pointer to {module id, offset} (glibc's tlsdesc_dynamic_arg);
 *     DTPMOD64 + DTPOFF64 (general-dynamic): module id and offset, followed
 *              through the thread's dtv.
 *   Only the process's GOT holds what the dynamic linker chose, so it is
 *   read from /proc/PID/mem.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_budget.h"
#include "fileio.h"
#include "otel_tls.h"
#include "proc_file.h"
#include "sideband.h"
#include "util.h"

const char *otel_tls_why(int err)
{
	switch (err) {
	case -ENOEXEC:
		return "it is not a thread-local (STT_TLS) variable";
	case -EPROTO:
		return "no relocation reaches it by a TLS model a reader can follow";
	default:
		return strerror(-err);
	}
}

const char *otel_tls_model_name(enum otel_tls_model m)
{
	switch (m) {
	case OTEL_TLS_EXEC: return "local-exec";
	case OTEL_TLS_IE: return "initial-exec";
	case OTEL_TLS_DESC: return "tlsdesc";
	case OTEL_TLS_GD: return "general-dynamic";
	}
	return "unknown";
}

/*
 * The defined STT_TLS symbol in the table of section scn; its index, or -1
 * (with *not_tls set if the name is defined there as something else).
 * The table and its names are libelf's, charged to the file's budget.
 */
static long find_sym(struct elf_budget *b, Elf_Scn *scn, GElf_Sym *out, bool *not_tls)
{
	GElf_Shdr sh;
	Elf_Data *data;
	size_t n;

	/* Entries of the ELF's own size, counted from the data read, not the header's claim. */
	if (!gelf_getshdr(scn, &sh) || sh.sh_entsize != gelf_fsize(b->elf, ELF_T_SYM, 1, EV_CURRENT) ||
	    !(data = elf_budget_data(b, scn)))
		return -1;
	n = data->d_size / sh.sh_entsize;
	for (size_t i = 1; i < n; i++) {
		const char *name;

		if (!gelf_getsym(data, i, out))
			break; /* a read failure ends the scan: it would fail the same way for every entry */
		if (out->st_shndx == SHN_UNDEF)
			continue;
		name = elf_budget_str(b, sh.sh_link, out->st_name);
		if (!name || strcmp(name, OTEL_TLS_SYMBOL))
			continue;
		if (GELF_ST_TYPE(out->st_info) == STT_TLS)
			return i;
		*not_tls = true;
	}
	return -1;
}

/* Relocations read at a time: each table is read through, never kept. */
#define RELA_CHUNK 2048

/*
 * The relocations that reach the symbol (index symidx in the dynamic
 * symbol table, or a local reference with no symbol and its value as
 * addend), best model first: a tp offset the program reads in one step.
 * -EPROTO if none does; the budget's error if the tables cost more than
 * a real file's (their sum, not each one, is what is bounded).
 */
static int find_reloc(struct elf_budget *b, size_t dynsym_ndx, long symidx, __u64 value, struct otel_tls_elf *out)
{
	int best = 0; /* rank: IE 3, TLSDESC 2, GD 1 */
	Elf_Scn *scn = NULL;
	Elf64_Rela *chunk = malloc(RELA_CHUNK * sizeof(*chunk));
	int err = 0;

	if (!chunk)
		return -ENOMEM;
	while (!err && (scn = elf_nextscn(b->elf, scn))) {
		GElf_Shdr sh;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_link != dynsym_ndx ||
		    sh.sh_entsize != sizeof(Elf64_Rela))
			continue;
		n = sh.sh_size / sizeof(Elf64_Rela);
		for (size_t at = 0; at < n && !err; at += RELA_CHUNK) {
			size_t k = SP_MIN((size_t)RELA_CHUNK, n - at);

			err = elf_budget_read(b, scn, ELF_T_RELA, at * sizeof(Elf64_Rela), chunk, k * sizeof(*chunk));
			if (err == -EINVAL) {
				err = 0; /* past the file's end: a table that is not one, as libelf would refuse it */
				break;
			}
			for (size_t i = 0; i < k && !err; i++) {
				const Elf64_Rela *r = &chunk[i];
				long sym = ELF64_R_SYM(r->r_info);
				int type = ELF64_R_TYPE(r->r_info), rank = 0;
				bool ours = sym == symidx || (sym == 0 && (__u64)r->r_addend == value);

				if (!ours)
					continue;
				if (type == R_X86_64_TPOFF64)
					rank = 3;
				else if (type == R_X86_64_TLSDESC)
					rank = 2;
				/* A local GD pair has no symbol on its DTPMOD64: only a named one is ours for sure. */
				else if (type == R_X86_64_DTPMOD64 && sym == symidx)
					rank = 1;
				if (rank > best) {
					best = rank;
					out->got = r->r_offset;
					out->model = rank == 3 ? OTEL_TLS_IE : rank == 2 ? OTEL_TLS_DESC : OTEL_TLS_GD;
				}
			}
		}
	}
	free(chunk);
	if (err)
		return err;
	return best ? 0 : -EPROTO;
}

int otel_tls_elf_find(const char *path, bool main_exe, struct otel_tls_elf *out)
{
	int fd = open_regular(path), err;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return fd;
	err = otel_tls_elf_find_fd(fd, main_exe, out);
	close(fd);
	return err;
}

int otel_tls_elf_find_fd(int fd, bool main_exe, struct otel_tls_elf *out)
{
	struct elf_budget b;
	Elf *elf;
	Elf_Scn *scn = NULL, *dynsym = NULL, *symtab = NULL;
	GElf_Phdr tls = { 0 };
	GElf_Sym sym;
	bool have_tls = false, have_load = false, not_tls = false;
	size_t nph;
	long idx = -1;
	int err = -EINVAL;

	memset(out, 0, sizeof(*out));
	/* Read, not mapped: another process's file, truncated meanwhile, must not SIGBUS us. */
	elf = elf_budget_begin(&b, fd, false, ELF_BUDGET_TLS, NULL);
	if (b.err == -E2BIG) {
		err = b.err;
		goto cleanup;
	}
	if (!elf || elf_kind(elf) != ELF_K_ELF || gelf_getclass(elf) != ELFCLASS64 || elf_getphdrnum(elf, &nph))
		goto cleanup;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, i, &ph))
			goto cleanup;
		if (ph.p_type == PT_TLS) {
			tls = ph;
			have_tls = true;
		} else if (ph.p_type == PT_LOAD && !have_load) {
			out->first_vaddr = ph.p_vaddr & ~0xfffull;
			have_load = true;
		}
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			goto cleanup;
		if (sh.sh_type == SHT_DYNSYM)
			dynsym = scn;
		else if (sh.sh_type == SHT_SYMTAB)
			symtab = scn;
	}
	err = -ENOENT;
	/* The OTEP exports it in .dynsym; a static executable may have it only in .symtab. */
	if (dynsym)
		idx = find_sym(&b, dynsym, &sym, &not_tls);
	if (idx < 0 && main_exe && symtab && !b.err && find_sym(&b, symtab, &sym, &not_tls) >= 0)
		idx = 0;
	if (idx < 0 && b.err) {
		err = b.err; /* the tables cost more than a real file's: what they hold is not known */
		goto cleanup;
	}
	if (idx < 0 && not_tls)
		err = -ENOEXEC; /* a plain global: one per process, not per thread; nothing to follow */
	if (idx < 0 || !have_tls)
		goto cleanup;
	out->sym_value = sym.st_value;
	err = -EPROTO;
	if (sym.st_value + 8 > tls.p_memsz)
		goto cleanup;
	if (main_exe) {
		__u64 align = tls.p_align ? tls.p_align : 1;
		__u64 first = -tls.p_vaddr & (align - 1);
		__u64 block = (tls.p_memsz - first + align - 1) / align * align + first;

		out->model = OTEL_TLS_EXEC;
		out->exec_tpoff = (__s64)sym.st_value - (__s64)block;
		err = 0;
		goto cleanup;
	}
	if (!dynsym)
		goto cleanup;
	err = find_reloc(&b, elf_ndxscn(dynsym), idx, sym.st_value, out);
cleanup:
	elf_budget_end(&b);
	return err;
}

static int read_mem(int fd, __u64 addr, void *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len, (off_t)addr);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* Beyond this, a "tp offset" is a pointer: the module is in dynamic TLS. */
#define STATIC_TLS_MAX (1ll << 32)

static int recipe_from_got(int memfd, const struct otel_tls_elf *e, __u64 bias, struct sp_otel_recipe *r)
{
	__u64 w[2];
	int err;

	switch (e->model) {
	case OTEL_TLS_IE:
		if ((err = read_mem(memfd, bias + e->got, w, 8)))
			return err;
		/* Static TLS is below the thread pointer: 0 or above is a slot not yet relocated. */
		if ((__s64)w[0] >= 0)
			return -EAGAIN;
		*r = (struct sp_otel_recipe){ .kind = SP_OTEL_TP, .off = w[0] };
		return 0;
	case OTEL_TLS_DESC:
		if ((err = read_mem(memfd, bias + e->got, w, 16)))
			return err;
		if (!w[0]) /* no resolver function yet: the dynamic linker has not been here */
			return -EAGAIN;
		if ((__s64)w[1] < 0 && (__s64)w[1] > -STATIC_TLS_MAX) {
			*r = (struct sp_otel_recipe){ .kind = SP_OTEL_TP, .off = w[1] };
			return 0;
		}
		/* glibc's struct tlsdesc_dynamic_arg: { size_t module, offset; ... } */
		if ((err = read_mem(memfd, w[1], w, 16)))
			return err;
		*r = (struct sp_otel_recipe){ .kind = SP_OTEL_DTV, .modid = w[0], .off = w[1] };
		return 0;
	case OTEL_TLS_GD:
		if ((err = read_mem(memfd, bias + e->got, w, 16)))
			return err;
		if (!w[0]) /* module ids count from 1 */
			return -EAGAIN;
		*r = (struct sp_otel_recipe){ .kind = SP_OTEL_DTV, .modid = w[0], .off = w[1] };
		return 0;
	case OTEL_TLS_EXEC:
		break;
	}
	return -EINVAL;
}

/* The target of /proc/PID/exe, as maps names it. */
static int exe_path(int pid, char *buf, size_t size)
{
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", pid);
	n = readlink(link, buf, size - 1);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

int otel_tls_recipe(int pid, struct sp_otel_recipe *out, enum otel_tls_model *model)
{
	char path[64], exe[PATH_MAX], last[PATH_MAX] = "", *line = NULL;
	struct procmap m;
	size_t cap = 0;
	FILE *maps = NULL;
	int memfd = -1, err, found = -ENOENT;
	bool exe_done = false;

	*model = 0;
	if ((err = exe_path(pid, exe, sizeof(exe))))
		return err;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	maps = fopen(path, "re");
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	memfd = open(path, O_RDONLY | O_CLOEXEC);
	if (!maps || memfd < 0) {
		err = -errno;
		goto cleanup;
	}
	/*
	 * Two passes: the executable first (its definition interposes every
	 * other), then each file once, at its lowest mapping (the load bias).
	 */
	for (int pass = 0; pass < 2 && found == -ENOENT; pass++) {
		rewind(maps);
		last[0] = 0;
		while (procmaps_next(maps, &line, &cap, &m, NULL)) {
			struct otel_tls_elf e;
			bool is_exe;
			int fd;

			if (m.path[0] != '/' || !strcmp(m.path, last))
				continue;
			snprintf(last, sizeof(last), "%s", m.path);
			is_exe = !strcmp(m.path, exe);
			if (is_exe != (pass == 0) || (is_exe && exe_done))
				continue;
			exe_done |= is_exe;
			/* The mapped inode itself, never the name on the host (proc_file.h). */
			fd = proc_open_mapped(pid, m.start, m.end, m.path);
			if (fd < 0)
				continue;
			err = otel_tls_elf_find_fd(fd, is_exe, &e);
			close(fd);
			/* Not ELF, or one that costs more to read than a real file: not this process's definition. */
			if (err == -ENOENT || err == -EINVAL || err == -EFBIG || err == -E2BIG)
				continue;
			*model = e.model;
			if (err) {
				found = err;
				break;
			}
			if (e.model == OTEL_TLS_EXEC) {
				*out = (struct sp_otel_recipe){ .kind = SP_OTEL_TP, .off = (__u64)e.exec_tpoff };
				found = 0;
			} else {
				found = recipe_from_got(memfd, &e, m.start - m.pgoff - e.first_vaddr, out);
			}
			break;
		}
	}
	err = found;
cleanup:
	free(line);
	if (maps)
		fclose(maps);
	if (memfd >= 0)
		close(memfd);
	return err;
}

int otel_tls_var_addr(int pid, __u64 fsbase, const struct sp_otel_recipe *r, __u64 *addr)
{
	char path[64];
	__u64 dtv, block;
	int fd, err;

	if (r->kind == SP_OTEL_TP) {
		*addr = fsbase + r->off;
		return 0;
	}
	if (r->kind != SP_OTEL_DTV)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* glibc's tcbhead_t { tcb, dtv, ... }; dtv entries are { val, to_free }. */
	err = read_mem(fd, fsbase + 8, &dtv, 8);
	if (!err)
		err = read_mem(fd, dtv + r->modid * 16, &block, 8);
	/* TLS_DTV_UNALLOCATED: this thread never touched the module's TLS. */
	if (!err && block == ~0ull)
		err = -ENODATA;
	if (!err)
		*addr = block + r->off;
	close(fd);
	return err;
}
