// SPDX-License-Identifier: GPL-2.0
/*
 * Where the kernel's ORC tables are, asked of the kernel itself
 * (user/sys/orctables.c runs this once, BPF_PROG_TEST_RUN): its
 * kallsyms_lookup_name answers whatever kptr_restrict hides in
 * /proc/kallsyms, and without 5 MB of text formatted and parsed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

/* Filled in the order of user/sys/orctables.c's enum orc_sym; 0 where the kernel has no such symbol. */
__u64 orc_syms[8];

#define ORC_FIND(i, name) bpf_kallsyms_lookup_name(name, sizeof(name), 0, &orc_syms[i])

SEC("syscall")
int orc_find(void *ctx)
{
	ORC_FIND(0, "__start_orc_unwind_ip");
	ORC_FIND(1, "__stop_orc_unwind_ip");
	ORC_FIND(2, "__start_orc_unwind");
	ORC_FIND(3, "__stop_orc_unwind");
	ORC_FIND(4, "_stext");
	ORC_FIND(5, "_etext");
	/* The trampolines the kernel's unwinder rewrites (kstack.bpf.h); absent from some kernels. */
	ORC_FIND(6, "return_to_handler");
	ORC_FIND(7, "arch_rethook_trampoline");
	return 0;
}
