// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memread.h"
#include "pyfacts.h"
#include "util.h"

#define PAGE 4096ull
/*
 * Direct-mapped by page number: a JVM's tables and the names they point
 * at lie in a few hundred KB of libjvm's data, a Python runtime's state in
 * a few pages; 256 KB of pages held for one reading.
 */
#define SLOTS 64
/* Reads this long go straight to the process: a page each would copy more than asked. */
#define DIRECT_LEN (2 * PAGE)

struct mem_pages {
	__u32 pid;
	__u64 tag[SLOTS]; /* the page's address + 1; 0: empty */
	__u8 (*page)[PAGE];
};

struct mem_pages *mem_pages__new(__u32 pid)
{
	struct mem_pages *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->pid = pid;
	m->page = malloc(SLOTS * PAGE);
	if (!m->page) {
		free(m);
		return NULL;
	}
	return m;
}

void mem_pages__free(struct mem_pages *m)
{
	if (!m)
		return;
	free(m->page);
	free(m);
}

int mem_pages__read(void *ctx, __u64 addr, void *buf, size_t len)
{
	struct mem_pages *m = ctx;
	void *pid = (void *)(long)m->pid;
	__u8 *out = buf;
	size_t done = 0;

	/* py_read_pid's own bounds first, so that no page outside them is asked for. */
	if (!len || addr < PAGE || addr >= (1ull << 47) || len > (1ull << 47) - addr || len >= DIRECT_LEN)
		return py_read_pid(pid, addr, buf, len);
	while (done < len) {
		__u64 a = addr + done, pg = a & ~(PAGE - 1);
		size_t slot = (pg / PAGE) % SLOTS, n = SP_MIN((__u64)(len - done), pg + PAGE - a);

		if (m->tag[slot] != pg + 1) {
			m->tag[slot] = 0;
			/* Unreadable whole (the range's end may still be mapped past it): as asked. */
			if (py_read_pid(pid, pg, m->page[slot], PAGE))
				return py_read_pid(pid, addr, buf, len);
			m->tag[slot] = pg + 1;
		}
		memcpy(out + done, m->page[slot] + (a - pg), n);
		done += n;
	}
	return 0;
}
