/* SPDX-License-Identifier: GPL-2.0 */
/* libbpf set-up shared by every command: logging, quiet probing, per-CPU stats. */
#ifndef SP_LIBBPF_SETUP_H
#define SP_LIBBPF_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bpf/libbpf.h>

/* Routes libbpf's messages: warnings with -v, debug with -vv. */
void libbpf_setup_init(void);
/* Silences libbpf while probing features that are expected to fail. */
void libbpf_setup_quiet(bool quiet);
/*
 * bpf_object__load_skeleton, and with -vv each program's verifier figures
 * after it (processed instructions, states, verification ms, xlated size)
 * and the load's wall time: where a recorder's start-up goes.  0 or -errno.
 */
int libbpf_load_skel(struct bpf_object_skeleton *s, const char *what);
/* One sentence for a failed load or attach, with the likely cause. */
const char *libbpf_explain(int err);
/* Entry key of a BPF per-CPU array of u64 counters, summed over the possible CPUs; 0 if unreadable. */
uint64_t bpf_percpu_sum(int map_fd, uint32_t key);
/*
 * Slot of a BPF per-CPU array whose one entry (key 0) is nslots u64 counters
 * (py_stats, hs_stats), summed over the possible CPUs; 0 if unreadable.
 */
uint64_t bpf_percpu_sum_slot(int map_fd, uint32_t slot, uint32_t nslots);
/*
 * The keys (n of them, from an int_list: -p, -t, -C) set present, a u8 1
 * each, in a BPF map keyed by u32: what the programs' filter and CPU maps
 * hold.  Keys from below on are left out (0: none).  0 or -errno.
 */
int bpf_map_mark(int map_fd, const int *keys, int n, uint32_t below);
/* A reader of the BPF ring buffer map_fd, calling fn; 0, or -errno with "cannot read the WHAT: why" in err. */
int bpf_ring_open(struct ring_buffer **out, int map_fd, ring_buffer_sample_fn fn, void *ctx, const char *what,
		  char *err, size_t errlen);

#endif
