// SPDX-License-Identifier: GPL-2.0
/* The ELF symbol and build-id readers, on any bytes. */
#include "buildid.h"
#include "fuzz_common.h"
#include "elf_syms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	__u8 id[BUILD_ID_MAX], len;
	__u64 off;
	int fd = fuzz_file(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	elf_syms_count(path);
	elf_find_function(path, "main", &off, NULL, 0);
	buildid_from_file(path, id, &len);
	buildid_from_notes(data, size, id, &len);
	close(fd);
	return 0;
}
