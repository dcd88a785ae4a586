// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/uio.h>

#include "otel_process.h"
#include "sideband.h"

#define TRIES 5
#define RETRY_US 200

/* The OTEP's names: a memfd (any kernel), or anonymous memory named by prctl (5.17+). */
static bool ctx_mapping(const char *path)
{
	return !strncmp(path, "/memfd:OTEL_CTX", 15) || !strcmp(path, "[anon_shmem:OTEL_CTX]") ||
	       !strcmp(path, "[anon:OTEL_CTX]");
}

static int find_mapping(int pid, __u64 *addr)
{
	char path[64], *line = NULL;
	struct procmap m;
	size_t cap = 0;
	FILE *f;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (procmaps_next(f, &line, &cap, &m, NULL)) {
		if (!ctx_mapping(m.path) || m.end - m.start < OTEL_PCTX_HEADER)
			continue;
		*addr = m.start;
		err = 0;
		break;
	}
	free(line);
	fclose(f);
	return err;
}

static int peek(int pid, __u64 addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

int otel_process_read(int pid, __u64 *addrp, __u64 *published, struct otel_pctx *out,
		      struct otel_process_stats *st)
{
	__u8 hdr[OTEL_PCTX_HEADER], again[OTEL_PCTX_HEADER];
	struct otel_pctx_header h;
	__u8 *payload = NULL;
	__u64 addr = *addrp;
	int err;

	memset(out, 0, sizeof(*out));
	/* The cached mapping, if it still holds a header; else where maps says it is now. */
	if (addr && (peek(pid, addr, hdr, sizeof(hdr)) || memcmp(hdr, OTEL_PCTX_SIGNATURE, 8)))
		addr = 0;
	if (!addr && (err = find_mapping(pid, &addr))) {
		*addrp = 0;
		return err;
	}
	*addrp = addr;
	for (int i = 0; i < TRIES; i++) {
		if (i)
			usleep(RETRY_US);
		err = peek(pid, addr, hdr, sizeof(hdr));
		if (err)
			goto unreadable;
		err = otel_pctx_header_parse(hdr, sizeof(hdr), &h);
		if (err == -EAGAIN)
			continue; /* an update under way: the OTEP says read again */
		if (!err && *published && h.published_at == *published) {
			free(payload);
			return -EALREADY;
		}
		if (err == -EINVAL || err == -EPROTONOSUPPORT) {
			st->bad_header++;
			return err;
		}
		if (err) {
			st->bad_size++;
			return err;
		}
		free(payload);
		payload = malloc(h.payload_size);
		if (!payload)
			return -ENOMEM;
		err = peek(pid, h.payload, payload, h.payload_size);
		if (err)
			goto unreadable;
		/* The same header after the payload: no update ran while it was copied. */
		err = peek(pid, addr, again, sizeof(again));
		if (err)
			goto unreadable;
		if (memcmp(hdr, again, sizeof(hdr))) {
			err = -EAGAIN;
			continue;
		}
		err = otel_pctx_decode(payload, h.payload_size, out);
		free(payload);
		if (err == -EINVAL)
			st->malformed++;
		if (err)
			return err;
		*published = h.published_at;
		st->read++;
		return 0;
	}
	free(payload);
	st->unstable++;
	return -EAGAIN;
unreadable:
	free(payload);
	if (err == -ESRCH)
		return err; /* gone meanwhile: nothing wrong with it */
	st->unreadable++;
	return err;
}
