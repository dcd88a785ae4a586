// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <bpf/libbpf.h>

#include "perf_events.h"
#include "util.h"

int pe_set__open(struct pe_set **out, const struct perf_event_attr *attr, const struct int_list *cpus)
{
	struct pe_set *s;
	int err = 0;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->attr = *attr;
	s->attr.disabled = 1; /* enabled only once the program is attached */
	s->ev = calloc(cpus->n ? cpus->n : 1, sizeof(*s->ev));
	if (!s->ev) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (int i = 0; i < cpus->n; i++) {
		int fd = sys_perf_event_open(&s->attr, -1, cpus->v[i], -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			err = -errno;
			/* An offline CPU is not an error: it may come back, or not. */
			if (err == -ESRCH || err == -ENODEV) {
				err = 0;
				continue;
			}
			goto cleanup;
		}
		s->ev[s->nr].cpu = cpus->v[i];
		s->ev[s->nr].fd = fd;
		s->nr++;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &s->ev[s->nr - 1].id)) {
			err = -errno;
			goto cleanup;
		}
	}
	if (!s->nr) {
		err = -ENODEV;
		goto cleanup;
	}
	*out = s;
	return 0;
cleanup:
	pe_set__free(s);
	return err;
}

int pe_set__attach(struct pe_set *s, struct bpf_program *prog)
{
	for (int i = 0; i < s->nr; i++) {
		s->ev[i].link = bpf_program__attach_perf_event(prog, s->ev[i].fd);
		if (!s->ev[i].link)
			return -errno;
	}
	return 0;
}

static int ioctl_all(struct pe_set *s, unsigned long req)
{
	for (int i = 0; i < s->nr; i++)
		if (ioctl(s->ev[i].fd, req, 0))
			return -errno;
	return 0;
}

int pe_set__enable(struct pe_set *s)
{
	return ioctl_all(s, PERF_EVENT_IOC_ENABLE);
}

int pe_set__disable(struct pe_set *s)
{
	return ioctl_all(s, PERF_EVENT_IOC_DISABLE);
}

int pe_set__ids(const struct pe_set *s, __u64 **ids)
{
	*ids = malloc(s->nr * sizeof(__u64));
	if (!*ids)
		return -ENOMEM;
	for (int i = 0; i < s->nr; i++)
		(*ids)[i] = s->ev[i].id;
	return 0;
}

void pe_set__free(struct pe_set *s)
{
	if (!s)
		return;
	/* Links first: a program must not outlive the event it hangs on. */
	for (int i = 0; i < s->nr; i++)
		bpf_link__destroy(s->ev[i].link);
	for (int i = 0; i < s->nr; i++)
		close(s->ev[i].fd);
	free(s->ev);
	free(s);
}

int pe_ring__map(struct pe_ring *r, int fd, int cpu, size_t pages)
{
	long psize = sysconf(_SC_PAGESIZE);

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (!pages || (pages & (pages - 1)))
		return -EINVAL;
	r->data_size = pages * psize;
	r->base = mmap(NULL, r->data_size + psize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED) {
		r->base = NULL;
		return -errno;
	}
	r->bounce = malloc(1 << 16); /* records are at most 64 KiB */
	if (!r->bounce) {
		pe_ring__unmap(r);
		return -ENOMEM;
	}
	r->fd = fd;
	r->cpu = cpu;
	return 0;
}

int pe_ring__redirect(const struct pe_ring *r, int fd)
{
	return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd) ? -errno : 0;
}

void pe_ring__unmap(struct pe_ring *r)
{
	if (!r)
		return;
	if (r->base)
		munmap(r->base, r->data_size + sysconf(_SC_PAGESIZE));
	free(r->bounce);
	r->base = NULL;
	r->bounce = NULL;
}

long pe_ring__drain(struct pe_ring *r, pe_record_fn on_rec, pe_chunk_fn on_chunk, void *ctx)
{
	struct perf_event_mmap_page *meta = r->base;
	char *data = (char *)r->base + sysconf(_SC_PAGESIZE);
	size_t mask = r->data_size - 1;
	__u64 head, tail, pos;
	int err = 0;

	if (!meta)
		return 0;
	/* Pairs with the kernel's store of data_head after writing records. */
	head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	tail = meta->data_tail;
	if (head == tail)
		return 0;
	for (pos = tail; pos < head;) {
		struct perf_event_header *h = (void *)(data + (pos & mask));
		size_t off = pos & mask;

		/* The header itself may wrap; so may the body. */
		if (off + sizeof(*h) > r->data_size || off + h->size > r->data_size) {
			size_t first = r->data_size - off;
			struct perf_event_header tmp;

			memcpy(&tmp, data + off, SP_MIN(first, sizeof(tmp)));
			if (first < sizeof(tmp))
				memcpy((char *)&tmp + first, data, sizeof(tmp) - first);
			if (tmp.size < sizeof(tmp))
				return -EIO; /* the kernel never writes this */
			memcpy(r->bounce, data + off, SP_MIN(first, tmp.size));
			if (first < tmp.size)
				memcpy(r->bounce + first, data, tmp.size - first);
			h = (void *)r->bounce;
		}
		if (h->size < sizeof(*h))
			return -EIO;
		if (on_rec) {
			err = on_rec(ctx, h);
			if (err)
				return err;
		}
		pos += h->size;
	}
	if (on_chunk) {
		size_t off = tail & mask, n = head - tail;

		if (off + n <= r->data_size) {
			err = on_chunk(ctx, data + off, n);
		} else {
			err = on_chunk(ctx, data + off, r->data_size - off);
			if (!err)
				err = on_chunk(ctx, data, n - (r->data_size - off));
		}
		if (err)
			return err;
	}
	/* Releases the space only after we are done reading it. */
	__atomic_store_n(&meta->data_tail, head, __ATOMIC_RELEASE);
	return head - tail;
}
