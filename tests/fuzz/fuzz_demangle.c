// SPDX-License-Identifier: GPL-2.0
/* Symbol names from any ELF on the host go through the demangler and its trimming. */
#include "demangle.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_str(data, size);

	if (!s)
		return 0;
	free(demangle(s));
	free(s);
	return 0;
}
