// SPDX-License-Identifier: GPL-2.0
/*
 * The .eh_frame / .debug_frame -> unwind rows converter, on any bytes.
 *
 * The first byte picks the form: odd, the rest is a whole file; even, the
 * rest is the contents of .eh_frame (byte 1 bit 1: .debug_frame) in a
 * well-formed x86-64 ELF built around it, so that the fuzzer spends its
 * time in the CFI parser rather than in finding an ELF header.  Byte 1
 * bit 2: the file is read as its own separate debug file too (the rows of
 * both in one table, as ehtab_from_fds makes them).  Every row that comes
 * out must be sorted and of a known kind.
 */
#include <elf.h>
#include <stdbool.h>
#include <stdint.h>

#include "ehframe.h"
#include "fuzz_common.h"

#define TEXT_VADDR 0
#define TEXT_SIZE 0x1000000

static uint8_t *wrap(const uint8_t *cfi, size_t n, bool debug, size_t *out)
{
	static const char names[] = "\0.shstrtab\0.eh_frame\0.debug_frame";
	size_t shoff = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), sec = shoff + 3 * sizeof(Elf64_Shdr);
	size_t total = sec + sizeof(names) + n;
	uint8_t *p = calloc(1, total);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)p;
	Elf64_Phdr *ph;
	Elf64_Shdr *sh;

	if (!p)
		return NULL;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_shoff = shoff;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 1;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_shnum = 3;
	eh->e_shstrndx = 1;
	ph = (Elf64_Phdr *)(p + eh->e_phoff);
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_X;
	ph->p_vaddr = TEXT_VADDR;
	ph->p_offset = TEXT_VADDR;
	ph->p_filesz = ph->p_memsz = TEXT_SIZE;
	sh = (Elf64_Shdr *)(p + shoff);
	sh[1].sh_type = SHT_STRTAB;
	sh[1].sh_name = 1;
	sh[1].sh_offset = sec;
	sh[1].sh_size = sizeof(names);
	memcpy(p + sec, names, sizeof(names));
	sh[2].sh_type = SHT_PROGBITS;
	sh[2].sh_name = debug ? 21 : 11;
	sh[2].sh_offset = sec + sizeof(names);
	sh[2].sh_addr = 0x2000; /* where small programs have it: their seeds keep their rows */
	sh[2].sh_size = n;
	memcpy(p + sec + sizeof(names), cfi, n);
	*out = total;
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *elf = NULL;
	struct ehtab t;
	char path[64];
	int fd;

	if (size < 2)
		return 0;
	if (data[0] & 1) {
		fd = fuzz_file(data + 1, size - 1, path, sizeof(path));
	} else {
		size_t n;

		elf = wrap(data + 2, size - 2, data[1] & 2, &n);
		if (!elf)
			return 0;
		fd = fuzz_file(elf, n, path, sizeof(path));
	}
	if (fd >= 0 && !(data[1] & 4 ? ehtab_from_fds(fd, fd, 1 << 16, &t) : ehtab_from_fd(fd, 1 << 16, &t))) {
		for (size_t i = 0; i < t.nr; i++) {
			/* A kind the parser makes (SP_EH_TRAMP is BPF's alone); the high bits are rbx's slot, any. */
			if (SP_EH_KIND(t.rows[i].kind) > SP_EH_RA_RDI || SP_EH_KIND(t.rows[i].kind) == SP_EH_TRAMP ||
			    (i && t.rows[i].pc <= t.rows[i - 1].pc))
				__builtin_trap();
			if (ehtab_find(&t, t.rows[i].pc) != &t.rows[i])
				__builtin_trap();
		}
		ehtab_free(&t);
	}
	if (fd >= 0)
		close(fd);
	free(elf);
	return 0;
}
