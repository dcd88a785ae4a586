/* SPDX-License-Identifier: GPL-2.0 */
/* Facts about this host: what perf writes into the header features. */
#ifndef SP_HOST_H
#define SP_HOST_H

#include <stddef.h>
#include <linux/types.h>

#include "parse.h"
#include "perf_data.h"

/* Hostname, release, arch, CPUs, CPU description and id, memory. */
int host_fill_meta(struct pd_meta *m);
/* The kernel text range from /proc/kallsyms (_text, _etext). */
int host_kernel_text(__u64 *start, __u64 *end);
/* The CPUs that are online now. */
int host_online_cpus(struct int_list *cpus);

/*
 * The size of this process's own vdso, which starts at base
 * (getauxval(AT_SYSINFO_EHDR)), from /proc/self/maps; 0 when not found.
 */
size_t host_own_vdso_size(unsigned long base);

/* True for root or CAP_BPF+CAP_PERFMON (or CAP_SYS_ADMIN on older kernels). */
bool have_bpf_privileges(void);

#endif
