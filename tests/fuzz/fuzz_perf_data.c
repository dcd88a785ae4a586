// SPDX-License-Identifier: GPL-2.0
/* The perf.data reader and everything report builds on it, on any bytes. */
#include "fuzz_common.h"
#include "perf_data.h"
#include "profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_reader *r = NULL;
	struct profile *p = NULL;
	struct pd_iter it = {};
	struct pd_event ev;
	char path[64], err[512];
	int fd = fuzz_file(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (!pd_reader__open(&r, path, err, sizeof(err))) {
		while (pd_reader__next(r, &it, &ev) > 0)
			;
		pd_reader__free(r);
	}
	/*
	 * Symbol files come from a fixture root (a small kallsyms, no ELF), so
	 * the host's files neither slow the fuzzer down nor change its paths.
	 */
	if (!profile__load(&p, path, FUZZ_ROOT, err, sizeof(err)))
		profile__free(p);
	close(fd);
	return 0;
}
