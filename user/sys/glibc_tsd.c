// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <asm/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "elf_budget.h"
#include "glibc_tsd.h"

/* struct pthread is a few KiB; its key blocks come in the first 2 KiB in every glibc seen. */
#define SCAN 2048
#define KEYS_1ST 32

/* Our own memory at addr, read so that a page not mapped is an error, not a fault. */
static int read_self(__u64 addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(unsigned long)addr, len };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* Where value v sits in [fs, fs + SCAN), 8-byte aligned: its offset, or -1. */
static long find_word(__u64 fs, __u64 v)
{
	__u64 buf[SCAN / 8];
	size_t got = SCAN;

	/* The struct may end before SCAN does: take what is mapped. */
	while (got >= 256 && read_self(fs, buf, got))
		got /= 2;
	if (got < 256)
		return -1;
	for (size_t i = 0; i < got / 8; i++)
		if (buf[i] == v)
			return i * 8;
	return -1;
}

int glibc_tsd_calibrate(struct glibc_tsd *out)
{
	pthread_key_t keys[KEYS_1ST + 8];
	int nkeys = 0, err = -ENOENT, hi = -1;
	__u64 fs = 0, magic, blk = 0, got = 0;
	long at;

	memset(out, 0, sizeof(*out));
	/* glibc's thread pointer is its struct pthread: pthread_self() and fsbase are one. */
	if (syscall(SYS_arch_prctl, ARCH_GET_FS, &fs) || fs != (__u64)pthread_self())
		return -ENOENT;
	if (pthread_key_create(&keys[nkeys], NULL))
		return -errno;
	nkeys++;
	if (keys[0] >= KEYS_1ST)
		goto cleanup; /* the inline block is full already: nothing to measure with */
	magic = 0x53504b45590000ull ^ (__u64)(unsigned long)&keys; /* a value found nowhere else, by chance */
	pthread_setspecific(keys[0], (void *)(unsigned long)magic);
	at = find_word(fs, magic);
	if (at < 0 || at < 16 * (long)keys[0] + 8)
		goto cleanup;
	out->first = at - 16 * keys[0];
	err = 0;
	/* The second level: keys of 32 and up, in blocks named by the array that follows the inline one. */
	while (nkeys < (int)(sizeof(keys) / sizeof(keys[0])) && hi < 0) {
		if (pthread_key_create(&keys[nkeys], NULL))
			break;
		if (keys[nkeys] >= KEYS_1ST)
			hi = nkeys;
		nkeys++;
	}
	if (hi >= 0) {
		__u32 k = keys[hi], second = out->first - 8 + 16 * KEYS_1ST;

		pthread_setspecific(k, (void *)(unsigned long)(magic + 1));
		if (!read_self(fs + second + 8 * (k / KEYS_1ST), &blk, 8) && blk &&
		    !read_self(blk + 16 * (k % KEYS_1ST) + 8, &got, 8) && got == magic + 1)
			out->second = second;
	}
cleanup:
	for (int i = 0; i < nkeys; i++)
		pthread_key_delete(keys[i]);
	return err;
}

static int take_fn(const char *name, const GElf_Sym *sym, void *ctx)
{
	if (GELF_ST_TYPE(sym->st_info) != STT_FUNC || strcmp(name, "pthread_getspecific"))
		return 0;
	*(__u64 *)ctx = sym->st_value;
	return 1;
}

/*
 * glibc 2.36's pthread_getspecific (and, in the same form, its
 * predecessors'): for key < 32 `add $N,%rax; shl $4,%rax; add %fs:0x10,%rax`
 * then the data at +8, so the value is at fsbase + 16 * (N + key) + 8; for
 * the others `mov %fs:D(,%rax,8),%rax`, the block pointer.  Any other code
 * is not read: the caller falls back to the thread list.
 */
int glibc_tsd_decode(int fd, struct glibc_tsd *out)
{
	static const __u8 shl4[] = { 0x48, 0xc1, 0xe0, 0x04 }, self[] = { 0x64, 0x48, 0x03, 0x04, 0x25, 0x10, 0, 0, 0 },
			  blk[] = { 0x64, 0x48, 0x8b, 0x04, 0xc5 };
	__u8 code[128];
	__u64 fn = 0;
	int err = -ENOENT, add = -1;
	bool have_self = false;
	struct elf_budget b = {};
	Elf *elf;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	elf = elf_budget_begin(&b, fd, false, ELF_BUDGET_SYMS, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		err = -EINVAL;
	else if (elf_budget_each_sym(&b, SHT_DYNSYM, take_fn, &fn) && !elf_pread_vaddr(fd, elf, fn, code, sizeof(code)))
		err = 0;
	elf_budget_end(&b);
	if (err)
		return err;
	for (size_t i = 0; i + sizeof(self) <= sizeof(code); i++) {
		/* add $imm8,%rax right before the shl */
		if (i >= 4 && !memcmp(code + i, shl4, sizeof(shl4)) && code[i - 4] == 0x48 && code[i - 3] == 0x83 &&
		    code[i - 2] == 0xc0 && add < 0)
			add = code[i - 1];
		if (!memcmp(code + i, self, sizeof(self)))
			have_self = true;
		if (!memcmp(code + i, blk, sizeof(blk)) && !out->second) {
			__s32 d;

			memcpy(&d, code + i + sizeof(blk), 4);
			if (d > 0 && d < 8192)
				out->second = d;
		}
	}
	if (add < 0 || !have_self)
		return -ENOENT;
	out->first = 16 * add + 8;
	return 0;
}

int glibc_tsd_offsets(const struct glibc_tsd *t, __u32 key, __u32 *off, __u32 *off2, int *two_level)
{
	if (!t->first)
		return -ERANGE;
	if (key < KEYS_1ST) {
		*off = t->first + 16 * key;
		*off2 = 0;
		*two_level = 0;
		return 0;
	}
	if (!t->second || key >= 1024)
		return -ERANGE;
	*off = t->second + 8 * (key / KEYS_1ST);
	*off2 = 16 * (key % KEYS_1ST) + 8;
	*two_level = 1;
	return 0;
}
