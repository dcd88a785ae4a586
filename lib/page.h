/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading a perf event from its mmap page, with no system call: the
 * self-monitoring protocol of include/uapi/linux/perf_event.h.  The kernel
 * rewrites the page under a sequence count (`lock`) whenever the event moves
 * on or off the PMU; a reader retries until it saw one version whole.
 *
 * Header only so that the unit test can drive it with a page it wrote
 * itself and a fake TSC and PMC: no machine here has cap_user_rdpmc or
 * cap_user_time, so the arithmetic is proven on pages built to the ABI.
 */
#ifndef SP_PAGE_H
#define SP_PAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/perf_event.h>

struct page_snap {
	uint64_t count;	  /* offset + the live PMC where the event is on the PMU */
	uint64_t enabled; /* time_enabled, brought up to now by the TSC */
	uint64_t running;
	uint32_t index;	  /* 0: not on the PMU right now */
};

#define SP_PAGE_BARRIER() __asm__ __volatile__("" ::: "memory")

/* ((cyc * mult) >> shift) without overflowing 64 bits, as the kernel's mul_u64_u32_shr. */
static inline uint64_t page_cyc_to_ns(uint64_t cyc, uint32_t mult, uint16_t shift)
{
	uint64_t quot = cyc >> shift, rem = cyc & (((uint64_t)1 << shift) - 1);

	return quot * mult + ((rem * mult) >> shift);
}

/*
 * One consistent snapshot.  tsc() and pmc(idx) are called inside the
 * sequence: a preemption between them and the page read makes the kernel
 * bump `lock`, and the loop goes round again.  want_pmc: read the counter
 * (hardware events); software clocks only need the time.
 */
static inline void page_read(const volatile struct perf_event_mmap_page *pc, bool want_pmc,
			     uint64_t (*tsc)(void), uint64_t (*pmc)(uint32_t), struct page_snap *s)
{
	uint64_t cyc = 0, time_offset = 0, time_cycles = 0, time_mask = 0, enabled, running, count, val = 0;
	uint32_t seq, idx, time_mult = 0, width = 0;
	uint16_t time_shift = 0;
	bool user_time, user_short;

	do {
		seq = pc->lock;
		SP_PAGE_BARRIER();
		enabled = pc->time_enabled;
		running = pc->time_running;
		user_time = pc->cap_user_time;
		user_short = pc->cap_user_time_short;
		if (user_time) {
			cyc = tsc();
			time_offset = pc->time_offset;
			time_mult = pc->time_mult;
			time_shift = pc->time_shift;
			if (user_short) {
				time_cycles = pc->time_cycles;
				time_mask = pc->time_mask;
			}
		}
		idx = pc->index;
		count = pc->offset;
		if (want_pmc && pc->cap_user_rdpmc && idx) {
			width = pc->pmc_width;
			val = pmc(idx - 1);
		}
		SP_PAGE_BARRIER();
	} while (pc->lock != seq);

	if (want_pmc && width) {
		/* The PMC is `width` bits wide: sign-extend it, as the kernel does. */
		val <<= 64 - width;
		count += (uint64_t)((int64_t)val >> (64 - width));
	}
	if (user_time) {
		uint64_t delta;

		/* Short counters (arm64) wrap: the page says from where. */
		if (user_short)
			cyc = time_cycles + ((cyc - time_cycles) & time_mask);
		delta = time_offset + page_cyc_to_ns(cyc, time_mult, time_shift);
		enabled += delta;
		/* Time runs only while the event is on the PMU (index != 0). */
		if (idx)
			running += delta;
	}
	s->count = count;
	s->enabled = enabled;
	s->running = running;
	s->index = want_pmc && width ? idx : 0;
}

#endif
