// SPDX-License-Identifier: GPL-2.0
/* spanperf probe: what the kernel offers and which fallback each need takes. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd_opts.h"
#include "commands.h"
#include "host.h"
#include "kernel_features.h"
#include "libbpf_setup.h"
#include "log.h"

void probe_usage(FILE *out)
{
	fprintf(out, "Usage: spanperf probe [-v]\n\n"
		     "Probes the kernel (BTF, PMU, kprobes, fentry, tp_btf, ring buffer,\n"
		     "tracefs...) by loading and attaching tiny programs, then prints the\n"
		     "choice taken for each need.  Mounts tracefs if root and it is missing.\n\n"
		     "Example:\n  sudo spanperf probe\n");
}

static const struct opt_def probe_defs[] = {
	{ .letter = 'v', .type = OPT_T_VERBOSE, .off = offsetof(struct probe_args, verbose) },
	{ .name = "help", .letter = 'h', .type = OPT_T_HELP },
	{}
};

int probe_parse_args(int argc, char **argv, struct probe_args *a, char *err, size_t errlen)
{
	uint64_t seen;

	memset(a, 0, sizeof(*a));
	return opts_parse(probe_defs, OPTS_NO_ARGS, argc, argv, a, &seen, probe_usage, err, errlen);
}

int cmd_probe(int argc, char **argv)
{
	struct sp_features f;
	struct probe_args a;
	char err[256];
	int e;

	sp_prog = "spanperf probe";
	e = probe_parse_args(argc, argv, &a, err, sizeof(err));
	if (e)
		return cmd_parse_failed(e, err);
	sp_verbose += a.verbose;
	if (!have_bpf_privileges())
		pr_warn("not root: BPF probes will fail for lack of privileges (root, or CAP_BPF and CAP_PERFMON)");
	libbpf_setup_init();
	features_probe(&f);
	features_print(&f, stdout);
	return 0;
}
