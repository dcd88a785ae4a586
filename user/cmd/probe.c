// SPDX-License-Identifier: GPL-2.0
/* spanperf probe: what the kernel offers and which fallback each need takes. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "host.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"

int cmd_probe(int argc, char **argv)
{
	struct sp_features f;

	sp_prog = "spanperf probe";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("Usage: spanperf probe [-v]\n\n"
			       "Probes the kernel (BTF, PMU, kprobes, fentry, tp_btf, ring buffer,\n"
			       "tracefs...) by loading and attaching tiny programs, then prints the\n"
			       "choice taken for each need.  Mounts tracefs if root and it is missing.\n\n"
			       "Example:\n  sudo spanperf probe\n");
			return 0;
		}
		if (!strcmp(argv[i], "-v")) {
			sp_verbose++;
			continue;
		}
		pr_err("unknown option '%s'; see --help", argv[i]);
		return 1;
	}
	if (!have_bpf_privileges())
		pr_warn("not root: BPF probes will fail for lack of privileges (root, or CAP_BPF and CAP_PERFMON)");
	libbpf_setup_init();
	features_probe(&f);
	features_print(&f, stdout);
	return 0;
}
