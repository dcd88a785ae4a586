/* SPDX-License-Identifier: GPL-2.0 */
/* Helpers for the libFuzzer targets: inputs as files (memfd) or C strings. */
#ifndef SP_FUZZ_COMMON_H
#define SP_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "fileio.h"

/* The input as a file the real code opens by path: /proc/self/fd/N of a memfd. */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (size && write_all(fd, data, size)) {
		close(fd);
		return -1;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

/* The input as a NUL-terminated string (inputs with a NUL inside are cut there). */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (s) {
		memcpy(s, data, size);
		s[size] = 0;
	}
	return s;
}

#endif
