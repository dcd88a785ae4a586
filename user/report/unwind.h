/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User call chains from --call-graph dwarf samples: the registers and the
 * copy of the user stack a sample carries, unwound with the files' CFI
 * (.eh_frame, else .debug_frame from the build-id or debuglink debug file)
 * by elfutils' libdw, the unwinder family perf uses.
 *
 * One Dwfl per address space (pid and epoch), its modules reported once,
 * the first time an unwind steps into them: a file's unwind tables are read
 * once per process, not once per sample.  Memory reads are served from the
 * stack copy only, so nothing is ever read from the live system.
 *
 * Where a frame cannot be unwound (no CFI, a file changed since the
 * recording, a stack copy too short, registers of another ABI), the chain
 * ends at the last frame found and the dso it stopped in is counted.
 */
#ifndef SP_UNWIND_H
#define SP_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "perf_data.h"
#include "symbols.h"

/* perf's default sysctl_perf_event_max_stack. */
#define UNWIND_MAX_FRAMES 127

struct unwinder;

/* The map under ip in the sample's address space, as symbolizer__map; -ENOENT if none. */
typedef int (*unwind_map_fn)(void *ctx, __u64 ip, struct sym_map *out);

struct unwind_sample {
	__u32 pid;
	__u64 epoch;	     /* when pid's address space began (symbolizer__epoch) */
	__u64 abi;	     /* PERF_SAMPLE_REGS_ABI_* */
	__u64 regs_mask;     /* the attr's sample_regs_user */
	const __u64 *regs;   /* in mask bit order */
	const void *stack;   /* the copy, from the sampled SP up */
	__u64 stack_size;    /* bytes of it that hold data (the dynamic size) */
};

/* Why a chain ended short, per dso. */
struct unwind_cut {
	const char *dso;    /* "[unknown]" when the pc was in no file */
	const char *reason; /* "no CFI", "the stack copy ends", ... */
	__u64 count;
};

struct unwind_stats {
	__u64 samples;	 /* samples with registers and a stack */
	__u64 complete;	 /* reached the outermost frame */
	__u64 cut;	 /* stopped early */
	__u64 frames;	 /* user frames produced */
	__u64 ns;	 /* time spent unwinding */
	/* Of complete chains: how far above SP the unwind read, by 64-byte steps (the copy a chain needs). */
	__u64 need_p50, need_p99, need_max;
	const struct unwind_cut *cuts; /* by dso, most first */
	size_t nr_cuts;
};

/* root: where recorded paths are found ("" or NULL for /). NULL on ENOMEM. */
struct unwinder *unwinder__new(const char *root);
void unwinder__free(struct unwinder *u);

/*
 * The user frames of one sample, innermost first, into ips (at most max):
 * the sampled IP, then return addresses less one (the call, as perf gives
 * them).  Returns their count (0 when nothing could be unwound, not even
 * the IP), never an error: a bad input ends the chain.
 */
int unwinder__unwind(struct unwinder *u, const struct unwind_sample *s, unwind_map_fn map, void *ctx,
		     __u64 *ips, int max);

/*
 * For a report: an unwinder when a sampling attr of the file carries user
 * registers and stack without user frames in its chain (perf's and our
 * --call-graph dwarf), else NULL.  0, or -ENOMEM.
 */
int unwinder__for_file(const struct pd_reader *rd, const char *root, struct unwinder **out);

/* unwinder__unwind for one decoded sample, its maps from the symbolizer; 0 frames if it has no stack. */
int unwinder__sample(struct unwinder *u, struct symbolizer *sym, const struct pd_event *ev, __u64 *ips, int max);

/* report -v: how many chains were unwound, how many were cut short and where, by dso. */
void unwinder__print_stats(struct unwinder *u, FILE *out);

/* Counts so far; the cuts array is sorted on each call and lives until the next. */
void unwinder__stats(struct unwinder *u, struct unwind_stats *out);

#endif
