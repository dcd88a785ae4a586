/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Maps that several BPF programs share, declared once, and nothing else.
 * User space passes one program's maps to the next by fd
 * (bpf_map__reuse_fd), which needs the definitions to match exactly; here
 * they cannot drift apart.  A program defines the SP_WANT_* it uses before
 * it includes this or a header that does (helpers.bpf.h).
 */
#ifndef SP_MAPS_BPF_H
#define SP_MAPS_BPF_H

#include "spanperf_abi.h"

#ifdef SP_WANT_THREADS_MAP
/* Per-thread sample totals of sample.bpf.c; sized with --max-threads. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_thread);
} threads SEC(".maps");
#endif

#ifdef SP_WANT_COUNTER_MAPS
/* The counting events, at index event * nr_cpus + cpu; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} counters SEC(".maps");

/* Per CPU: the counters when the running thread came in. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sp_snap);
} snap SEC(".maps");

/* Per-thread counter totals; sized with --max-threads. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct sp_counts);
} counts SEC(".maps");
#endif

#ifdef SP_WANT_FILTER_MAP
/* -p or -t: the pids or tids to keep; sized from user space. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u8);
} filter SEC(".maps");
#endif

/* Every program's own: events user space reports (enum sp_stat, summed by bpf_percpu_sum). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SP_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

#endif
