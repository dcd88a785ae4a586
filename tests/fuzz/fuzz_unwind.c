// SPDX-License-Identifier: GPL-2.0
/*
 * The DWARF unwinder on any registers, stack copy and ELF file: truncated
 * stacks, registers of the wrong ABI, corrupt or missing .eh_frame.
 *
 * Input: a header { u64 abi; u64 map_start; u64 stack_size; u32 elf_size;
 * u32 pad }, 20 registers in perf's x86-64 DWARF order (AX BX CX DX SI DI
 * BP SP IP FLAGS CS SS R8..R15), elf_size bytes of ELF file mapped at
 * map_start (file offset 0, 16 MiB long), then the stack copy.
 */
#include <errno.h>
#include <linux/perf_event.h>

#include "fuzz_common.h"
#include "perf_sample.h"
#include "unwind.h"

struct hdr {
	__u64 abi, map_start, stack_size;
	__u32 elf_size, pad;
};

#define NR_REGS 20

struct fuzz_map {
	__u64 start;
	const char *path;
};

static int one_map(void *ctx, __u64 ip, struct sym_map *out)
{
	const struct fuzz_map *m = ctx;

	if (ip < m->start || ip - m->start >= (16 << 20))
		return -ENOENT;
	*out = (struct sym_map){ m->start, m->start + (16 << 20), 0, m->path, "fuzz", "", 0 };
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	__u64 regs[NR_REGS], ips[UNWIND_MAX_FRAMES];
	struct unwinder *u;
	struct unwind_sample s;
	struct fuzz_map m;
	struct hdr h;
	char path[64];
	int fd;

	if (size < sizeof(h) + sizeof(regs))
		return 0;
	memcpy(&h, data, sizeof(h));
	memcpy(regs, data + sizeof(h), sizeof(regs));
	data += sizeof(h) + sizeof(regs);
	size -= sizeof(h) + sizeof(regs);
	if (h.elf_size > size)
		return 0;
	fd = fuzz_file(data, h.elf_size, path, sizeof(path));
	if (fd < 0)
		return 0;
	u = unwinder__new("");
	if (u) {
		m = (struct fuzz_map){ h.map_start, path };
		s = (struct unwind_sample){
			.pid = 1,
			.abi = h.abi % 4,
			.regs_mask = PD_X86_64_DWARF_REGS,
			.regs = regs,
			.stack = data + h.elf_size,
			/* Claimed sizes beyond the copy are what a corrupt file says. */
			.stack_size = h.stack_size < size - h.elf_size ? h.stack_size : size - h.elf_size,
		};
		/* Twice: the second unwind runs on the cached process and module. */
		unwinder__unwind(u, &s, one_map, &m, ips, UNWIND_MAX_FRAMES);
		unwinder__unwind(u, &s, one_map, &m, ips, 4);
		unwinder__free(u);
	}
	close(fd);
	return 0;
}
