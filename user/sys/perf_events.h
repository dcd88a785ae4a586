/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU perf events with a BPF program on each, and the rings they write.
 *
 * Events open disabled and are enabled only after their program is
 * attached; CPUs that are offline (ESRCH, ENODEV) are skipped; on any
 * failure everything opened so far is closed before returning.
 */
#ifndef SP_PERF_EVENTS_H
#define SP_PERF_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/perf_event.h>

#include "parse.h"
#include "perf_open.h"

struct bpf_program;
struct bpf_link;

struct pe_cpu {
	int cpu;
	int fd;
	__u64 id;
	struct bpf_link *link;
};

struct pe_set {
	struct perf_event_attr attr;
	struct pe_cpu *ev;
	int nr;
};

/* Opens attr (forced disabled) on each CPU of cpus; -ENODEV if none is online. */
int pe_set__open(struct pe_set **out, const struct perf_event_attr *attr, const struct int_list *cpus);
int pe_set__attach(struct pe_set *s, struct bpf_program *prog);
int pe_set__enable(struct pe_set *s);
int pe_set__disable(struct pe_set *s);
/* The kernel ids, for the attr's id array in perf.data. */
int pe_set__ids(const struct pe_set *s, __u64 **ids);
/* Closes links, then fds; accepts NULL. */
void pe_set__free(struct pe_set *s);


/* A perf mmap ring: one per CPU; other events on that CPU redirect into it. */
struct pe_ring {
	int cpu;
	int fd;
	void *base;	  /* metadata page, then data */
	size_t data_size; /* power of two */
	char *bounce;	  /* a record that wraps around the end, made contiguous */
};

int pe_ring__map(struct pe_ring *r, int fd, int cpu, size_t pages);
/* PERF_EVENT_IOC_SET_OUTPUT: fd writes into ring's buffer. */
int pe_ring__redirect(const struct pe_ring *r, int fd);
void pe_ring__unmap(struct pe_ring *r);

/* Called for each record, contiguous; a negative return aborts the drain. */
typedef int (*pe_record_fn)(void *ctx, const struct perf_event_header *rec);
/* Called with the raw bytes of the records seen, in one or two pieces. */
typedef int (*pe_chunk_fn)(void *ctx, const void *p, size_t n);
/* Returns bytes consumed, or a negative errno from a callback. */
long pe_ring__drain(struct pe_ring *r, pe_record_fn on_rec, pe_chunk_fn on_chunk, void *ctx);

#endif
