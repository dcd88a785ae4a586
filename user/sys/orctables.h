/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where the core kernel's ORC tables are, for the BPF walks of kernel
 * stacks by ORC's rules (bpf/orc.bpf.h: kstack.bpf.h's sampled chains,
 * offkstack.bpf.h's blocking threads'), asked of the kernel once.
 */
#ifndef SP_ORCTABLES_H
#define SP_ORCTABLES_H

#include <linux/types.h>

struct orc_tables {
	__u64 ip, ip_end; /* __start/__stop_orc_unwind_ip: an int per rule, the pc relative to itself */
	__u64 rules;	  /* __start_orc_unwind: 6 bytes per rule, as many */
	__u32 n;	  /* rules */
	__u64 stext, etext;
	__u64 tramp[2]; /* return_to_handler, arch_rethook_trampoline; 0 where absent */
};

/*
 * The tables: 0, or -errno with *t zeroed where there are none to use (no
 * ORC, no kallsyms_lookup_name helper, sizes that do not agree): every
 * kernel chain is then the kernel's walk.  Asked once, then remembered.
 */
int orc_tables_find(struct orc_tables *t);

#endif
