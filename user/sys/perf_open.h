/* SPDX-License-Identifier: GPL-2.0 */
/*
 * perf_event_open(2) and nothing else: no libbpf, so that libspanperf
 * (lib/) builds this file into an application's process as it is.
 */
#ifndef SP_PERF_OPEN_H
#define SP_PERF_OPEN_H

#include <linux/perf_event.h>

int sys_perf_event_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd,
			unsigned long flags);

/*
 * Whether attr can be opened on one CPU, without keeping it:
 * 0 or the negative errno of perf_event_open.
 */
int pe_try_open(const struct perf_event_attr *attr, int cpu);

#endif
